"""LM006: ``on_epoch_start/end`` and ``on_batch_start/end``: hook names Lightning no longer calls."""

from __future__ import annotations

import libcst as cst

from lightning_migrate.checker.core import (
    CALLBACK,
    SAFE,
    ClassContext,
    Finding,
    Fix,
    Rule,
    manual_fix,
    names_in,
    positional,
    register,
)
from lightning_migrate.checker.rules._common import by_hook, new_hook, new_params, removed

PATTERNS = by_hook(
    (
        "module-on-epoch-start",
        "module-on-epoch-end",
        "callback-on-epoch-start",
        "callback-on-epoch-end",
        "callback-on-batch-start",
        "callback-on-batch-end",
    )
)
#: callback hook -> (its training-only successor, the parameters the successor adds): the registry's signatures
RENAMES = {
    hook: (new_hook(pid), tuple(new_params(pid)[3:]))
    for (hook, owner), pid in PATTERNS.items()
    if owner == CALLBACK and hook in ("on_batch_start", "on_batch_end")
}


@register
class NeverCalled(Rule):
    code = "LM006"
    name = "never-called-hooks"
    title = "on_epoch_start, on_epoch_end, on_batch_start and on_batch_end: the removed stage-less hooks"
    hooks = frozenset({"on_epoch_start", "on_epoch_end", "on_batch_start", "on_batch_end"})
    patterns = tuple(PATTERNS.values())
    summary = (
        "``on_epoch_start``, ``on_epoch_end``, ``on_batch_start`` or ``on_batch_end`` on a ``LightningModule`` "
        "or a ``Callback``. :claim:`stageless-hooks-removed`; :claim:`stageless-hooks-refused-on-1-9`; and "
        ":claim:`stageless-hooks-ignored`: the code in them silently stops running."
    )
    fix_text = (
        "**safe** for a callback's ``on_batch_start(self, trainer, pl_module)`` / ``on_batch_end``: renamed to "
        "``on_train_batch_start`` / ``on_train_batch_end`` with the parameters those take "
        "(:claim:`batch-hooks-ran-for-training-batches`), unless the class already defines the new hook or the "
        "body uses one of the new parameter names. **manual** for ``on_epoch_start`` / ``on_epoch_end``: "
        ":claim:`epoch-hooks-ran-for-every-loop`, so pick the stage hooks you meant."
    )
    example = """\
from lightning.pytorch.callbacks import Callback


class CountBatches(Callback):
    def __init__(self):
        self.count = 0

    def on_batch_end(self, trainer, pl_module):
        self.count += 1
"""

    def check(self, ctx: ClassContext, func: cst.FunctionDef):
        hook = func.name.value
        pattern_id = PATTERNS.get((hook, ctx.kind))
        message = (
            removed(pattern_id, func) if pattern_id else f"`{hook}` is not a LightningModule hook: it is never called"
        )
        fix = manual_fix(self.code, "never called: use the stage hooks")
        if ctx.kind == CALLBACK and hook in RENAMES:
            new_hook, added = RENAMES[hook]
            params = positional(func)
            simple = (
                len(params) == 3
                and not func.params.kwonly_params
                and func.params.star_arg is cst.MaybeSentinel.DEFAULT
                and func.params.star_kwarg is None
            )
            if simple and new_hook not in ctx.methods and not (names_in(func.body) & set(added)):
                fix = Fix(
                    SAFE,
                    lambda node: _rename(node, new_hook, added),
                    description=f"rename to {new_hook}",
                    new_name=new_hook,
                )
        yield Finding(self.code, message, (pattern_id,) if pattern_id else (), fix=fix)


def _rename(func: cst.FunctionDef, new_hook: str, added: tuple[str, ...]) -> cst.FunctionDef:
    params = list(func.params.params)
    last = params[-1]
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    new = [*params[:-1], last.with_changes(comma=comma)]
    for i, name in enumerate(added):
        new.append(cst.Param(cst.Name(name), comma=comma if i < len(added) - 1 else last.comma))
    return func.with_changes(name=cst.Name(new_hook), params=func.params.with_changes(params=new))
