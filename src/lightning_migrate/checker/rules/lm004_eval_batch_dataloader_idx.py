"""LM004: validation/test/predict batch hooks whose ``dataloader_idx`` has no default."""

from __future__ import annotations

import libcst as cst

from lightning_migrate import registry
from lightning_migrate.checker.base import (
    MODULE,
    SAFE,
    ClassContext,
    Finding,
    Fix,
    Rule,
    expected_count,
    is_static,
    manual_fix,
    on_def,
    positional,
)
from lightning_migrate.checker.rules._common import by_hook, default_zero, literal_list, new_params, removed

#: (``_end`` hook, owner) -> registry pattern (the registry records the ``_end`` hooks; the rule covers both)
PATTERNS = by_hook(tuple(p.id for p in registry.PATTERNS if p.id.endswith("-batch-end-dataloader-idx-required")))
#: hook -> position of ``dataloader_idx`` in the module hook (``self`` is 0): from the registry's new module
#: signature of each ``_end`` hook; a ``_start`` hook has no ``outputs``, so it comes one earlier
_END = {hook: new_params(pid).index("dataloader_idx") for (hook, owner), pid in PATTERNS.items() if owner == MODULE}
POSITION = {**_END, **{hook.replace("_end", "_start"): index - 1 for hook, index in _END.items()}}


def _pattern(hook: str, kind: str) -> str:
    return PATTERNS[(hook.replace("_start", "_end"), kind)]


class EvalBatchDataloaderIdx(Rule):
    code = "LM004"
    name = "eval-batch-dataloader-idx-required"
    title = "validation, test and predict batch hooks with a required dataloader_idx"
    hooks = frozenset(POSITION)
    patterns = tuple(PATTERNS.values())
    summary = (
        f"{literal_list(sorted(POSITION))} (module or callback) whose ``dataloader_idx`` parameter has no "
        "default value."
    )
    fix_text = (
        "**safe** when ``dataloader_idx`` is the last positional parameter: the fix gives it the default ``0``. "
        "**manual** otherwise."
    )
    example = """\
import pytorch_lightning as pl


class LitModel(pl.LightningModule):
    def validation_step(self, batch, batch_idx):
        return self(batch).sum()

    def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx):
        self.log(f"val_out_{dataloader_idx}", outputs)
"""

    def check(self, ctx: ClassContext, func: cst.FunctionDef):
        index = expected_count(ctx.kind, POSITION[func.name.value])
        params = positional(func)
        if len(params) <= index or params[index].default is not None:
            return
        pattern_id = _pattern(func.name.value, ctx.kind)
        name = params[index].name.value
        if len(params) == index + 1 and not is_static(func):
            fix = Fix(
                SAFE, on_def(lambda node: default_zero(node, index)), description=f"{name}=0", changes_callers=False
            )
        else:
            fix = manual_fix(self.code, f"give {name} a default")
        # one message for both hooks: the registry records the `_end` hook's change, and the rule covers the `_start`
        # hook of the same stage the same way (the user's own signature is shown)
        yield Finding(self.code, removed(pattern_id, func), (pattern_id,), fix=fix)
