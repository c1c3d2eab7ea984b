"""LM005: the step-end methods Lightning 2.0 removed (``training_step_end`` and its kin) on a LightningModule."""

from __future__ import annotations

import libcst as cst

from lightning_migrate.checker.base import (
    MODULE,
    SAFE,
    ClassContext,
    Finding,
    Fix,
    Rule,
    manual_fix,
    positional,
)
from lightning_migrate.checker.rules._common import assigned_finding, by_hook, literal_list, removed

PATTERNS = {
    hook: pid for (hook, _owner), pid in by_hook(("training-step-end", "validation-step-end", "test-step-end")).items()
}


class StepEnd(Rule):
    code = "LM005"
    name = "step-end-methods"
    title = f"{literal_list(PATTERNS).replace('``', '')} on a {MODULE}"
    hooks = frozenset(PATTERNS)
    owners = frozenset({MODULE})
    patterns = tuple(PATTERNS.values())
    summary = f"A ``{MODULE}`` that defines (or binds in its class body) {literal_list(PATTERNS)}."
    fix_text = (
        "**safe** when the method only returns what it received (``return step_output``, a docstring allowed): "
        "it is removed. **manual** otherwise: move its work to the end of the step or to the batch-end hook."
    )
    example = '''\
import lightning.pytorch as pl


class LitModel(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return self(batch).sum()

    def training_step_end(self, step_output):
        """Kept from the DataParallel days."""
        return step_output
'''

    def check(self, ctx: ClassContext, func: cst.FunctionDef):
        pattern_id = PATTERNS[func.name.value]
        if _returns_its_input(func) and len(ctx.node.body.body) > 1 and _footer_comments(func):
            fix = manual_fix(self.code, "comments follow its body: remove it by hand, keeping what they say")
        elif _returns_its_input(func) and len(ctx.node.body.body) > 1:
            fix = Fix(SAFE, lambda node: cst.RemovalSentinel.REMOVE, description="remove the method")
        else:
            fix = manual_fix(self.code, "move this work into the step or the batch-end hook")
        yield Finding(self.code, removed(pattern_id, func), (pattern_id,), fix=fix)

    def check_assigned(self, ctx: ClassContext, name: str, value: str | None = None):
        yield assigned_finding(self.code, PATTERNS[name], name, "move its work into the step")


def _footer_comments(func: cst.FunctionDef) -> bool:
    """Whether comment lines indented as its body follow the method (libcst keeps them with it: removing the
    method would remove them)."""
    footer = getattr(func.body, "footer", ())
    return any(line.comment is not None for line in footer)


def _returns_its_input(func: cst.FunctionDef) -> bool:
    params = positional(func)
    if len(params) != 2 or not isinstance(func.body, cst.IndentedBlock) or func.decorators:
        return False
    body = list(func.body.body)
    if body and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Expr):
        if isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            body = body[1:]
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
        return False
    statement = body[0].body[0]
    return (
        isinstance(statement, cst.Return)
        and isinstance(statement.value, cst.Name)
        and statement.value.value == params[1].name.value
    )
