"""LM003: the training batch hooks (``on_train_batch_start`` / ``_end``) that take ``dataloader_idx``."""

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
    drop_params,
    expected_count,
    is_static,
    manual_fix,
    on_def,
    positional,
)
from lightning_migrate.checker.rules._common import by_hook, default_zero, literal_list, new_params, removed

PATTERNS = by_hook(
    (
        "module-on-train-batch-start-dataloader-idx",
        "callback-on-train-batch-start-dataloader-idx",
        "module-on-train-batch-end-dataloader-idx",
        "callback-on-train-batch-end-dataloader-idx",
    )
)
#: hook -> positional parameters of the module hook, ``self`` included: the registry's new module signature
COUNTS = {hook: len(new_params(pid)) for (hook, owner), pid in PATTERNS.items() if owner == MODULE}


class TrainBatchDataloaderIdx(Rule):
    code = "LM003"
    name = "train-batch-dataloader-idx"
    title = "training batch hooks with a dataloader_idx parameter"
    hooks = frozenset(COUNTS)
    patterns = tuple(PATTERNS.values())
    summary = (
        f"{literal_list(p.old_signature for p in map(registry.get, PATTERNS.values()) if p.owner == MODULE)} "
        "(module or callback, where a callback also takes ``trainer, pl_module``): any positional parameter after "
        "``batch_idx``, whatever its name, that has no default value. One with a default (``unused=0``) is not a "
        "finding: :claim:`train-batch-hooks-called-without-dataloader-idx`, so the default stands in."
    )
    fix_text = (
        "**safe** when the body never reads the extra parameters: they are dropped. **safe** too when the body "
        "reads the one extra parameter: the fix gives it the default ``0``. **manual** otherwise."
    )
    example = """\
import lightning as L


class Timer(L.Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx):
        pl_module.log("batch_idx", float(batch_idx))
"""

    def check(self, ctx: ClassContext, func: cst.FunctionDef):
        expected = expected_count(ctx.kind, COUNTS[func.name.value])
        # Lightning calls the hook without the extra arguments: one with a default value works as it is.
        extra = [param.name.value for param in positional(func)[expected:] if param.default is None]
        if not extra:
            return
        pattern_id = PATTERNS[(func.name.value, ctx.kind)]
        params = positional(func)
        if any(ctx.reads(func, name) for name in extra):
            if len(extra) == 1 and params[-1].name.value == extra[0] and not is_static(func):
                index = len(params) - 1
                fix = Fix(
                    SAFE,
                    on_def(lambda node: default_zero(node, index)),
                    description=f"{extra[0]}=0",
                    changes_callers=False,
                )
            else:
                fix = manual_fix(self.code, "the body reads " + ", ".join(extra))
        else:
            names = tuple(extra)
            fix = Fix(
                SAFE,
                on_def(lambda node: drop_params(node, set(names))),
                description="drop " + ", ".join(extra),
                dropped=tuple(extra),
            )
        yield Finding(self.code, removed(pattern_id, func), (pattern_id,), fix=fix)
