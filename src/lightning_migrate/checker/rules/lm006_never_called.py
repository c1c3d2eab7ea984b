"""LM006: the stage-less epoch and batch hooks (``on_epoch_end`` and its kin): names Lightning no longer calls."""

from __future__ import annotations

import libcst as cst

from lightning_migrate import registry
from lightning_migrate.checker.base import (
    CALLBACK,
    MODULE,
    UNSAFE,
    ClassContext,
    Finding,
    Fix,
    Rule,
    manual_fix,
    names_in,
    on_def,
    positional,
)
from lightning_migrate.checker.rules._common import by_hook, literal_list, new_hook, new_params, removed

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
    if pid in ("callback-on-batch-start", "callback-on-batch-end")
}
HOOKS = frozenset(hook for hook, _owner in PATTERNS)


class NeverCalled(Rule):
    code = "LM006"
    name = "never-called-hooks"
    title = f"{literal_list(sorted(HOOKS)).replace('``', '')}: the removed stage-less hooks"
    hooks = HOOKS
    patterns = tuple(PATTERNS.values())
    summary = (
        f"{literal_list(sorted(HOOKS))} on a ``{MODULE}`` or a ``{CALLBACK}``. :claim:`stageless-hooks-removed`; "
        ":claim:`stageless-hooks-refused-on-1-9`; and :claim:`stageless-hooks-ignored`: the code in them silently "
        "stops running."
    )
    fix_text = (
        f"**unsafe** (opt-in, ``--unsafe-fixes``) for a callback's {literal_list(RENAMES)}: renamed to "
        f"{literal_list(new for new, _ in RENAMES.values())} with the parameters those take "
        "(:claim:`batch-hooks-ran-for-training-batches`), unless the class already defines the new hook or the "
        "body uses one of the new parameter names. It is not safe: :claim:`stageless-hooks-ignored`, so a project "
        "that runs on a release without it has been running without this code, and the rename makes it "
        "run again (a callback that validates the best checkpoint can stop a run that completed before). Without "
        "the option, ``--fix`` leaves a marker that says so. **manual** for the epoch hooks: "
        ":claim:`epoch-hooks-ran-for-every-loop`, so pick the stage hooks you meant."
    )
    example_unsafe = True
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
        message = removed(pattern_id, func) if pattern_id else f"`{hook}` is not a {ctx.kind} hook: it is never called"
        fix = manual_fix(self.code, "never called: use the stage hooks")
        if ctx.kind == CALLBACK and hook in RENAMES and pattern_id is not None:
            new_hook, added = RENAMES[hook]
            params = positional(func)
            simple = (
                len(params) == 3
                and not func.params.kwonly_params
                and func.params.star_arg is cst.MaybeSentinel.DEFAULT
                and func.params.star_kwarg is None
            )
            if simple and new_hook not in ctx.methods and not (names_in(func.body) & set(added)):
                removed_in = registry.get(pattern_id).removed_in
                fix = Fix(
                    UNSAFE,
                    on_def(lambda node: _rename(node, new_hook, added)),
                    description=f"rename to {new_hook}",
                    risk=(
                        f"Lightning has not called it since {removed_in}: renamed to `{new_hook}`, this code runs "
                        "again where it has not run"
                    ),
                    new_name=new_hook,
                )
        yield Finding(self.code, message, (pattern_id,) if pattern_id else (), fix=fix)

    def check_assigned(self, ctx: ClassContext, name: str, value: str | None = None):
        pattern_id = PATTERNS.get((name, ctx.kind))
        message = f"`{name}` (assigned in the class body) is never called" + (
            f": it {removed(pattern_id, bare=True)}" if pattern_id else ""
        )
        fix = manual_fix(self.code, "assigned in the class body: never called, bind a stage hook")
        yield Finding(self.code, message, (pattern_id,) if pattern_id else (), fix=fix)


def _rename(func: cst.FunctionDef, new_hook: str, added: tuple[str, ...]) -> cst.FunctionDef:
    params = list(func.params.params)
    last = params[-1]
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    new = [*params[:-1], last.with_changes(comma=comma)]
    for i, name in enumerate(added):
        new.append(cst.Param(cst.Name(name), comma=comma if i < len(added) - 1 else last.comma))
    return func.with_changes(name=cst.Name(new_hook), params=func.params.with_changes(params=new))
