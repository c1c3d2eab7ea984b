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
        "**safe** when the method only returns what it received (``return step_output``, a docstring allowed), "
        f"or only calls the base class's method with it (``return super().{next(iter(PATTERNS))}(step_output)``, "
        "or ``(*args, **kwargs)``, where no class of your project between yours and ``LightningModule`` defines "
        "the method): the method is removed. "
        "**manual** otherwise: move its work to the end of the step or to the batch-end hook."
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
        passes_on = _returns_its_input(func) or _hands_on_to_lightning(ctx, func)
        if passes_on and len(ctx.node.body.body) > 1 and _footer_comments(func):
            fix = manual_fix(self.code, "comments follow its body: remove it by hand, keeping what they say")
        elif passes_on and len(ctx.node.body.body) > 1:
            fix = Fix(SAFE, lambda node: cst.RemovalSentinel.REMOVE, description="remove the method", removes=True)
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


def _returned(func: cst.FunctionDef) -> cst.BaseExpression | None:
    """What the method returns when its body is one ``return <value>`` (a docstring allowed) and it is not
    decorated; ``None`` otherwise."""
    if not isinstance(func.body, cst.IndentedBlock) or func.decorators:
        return None
    body = list(func.body.body)
    if body and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Expr):
        if isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            body = body[1:]
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
        return None
    statement = body[0].body[0]
    return statement.value if isinstance(statement, cst.Return) else None


def _returns_its_input(func: cst.FunctionDef) -> bool:
    params = positional(func)
    value = _returned(func)
    return len(params) == 2 and isinstance(value, cst.Name) and value.value == params[1].name.value


def _hands_on_to_lightning(ctx: ClassContext, func: cst.FunctionDef) -> bool:
    """Whether the method only returns what Lightning's own hook of that name returns for its arguments, handed on
    as received (``return super().training_step_end(step_output)``, or ``(*args, **kwargs)`` from a method that
    takes them), in a class whose bases of the project define no such hook: Lightning 1.x's hook returns ``None``,
    and the loop then kept the step's output (recorded on 1.4.9 and 1.9.5)."""
    value = _returned(func)
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    receiver = value.func.value
    if not (
        value.func.attr.value == func.name.value
        and isinstance(receiver, cst.Call)
        and isinstance(receiver.func, cst.Name)
        and receiver.func.value == "super"
        and not receiver.args
    ):
        return False
    params = func.params
    if params.star_arg is cst.MaybeSentinel.DEFAULT:
        star = None
    else:
        star = params.star_arg.name.value if isinstance(params.star_arg, cst.Param) else ""
    kwargs = params.star_kwarg.name.value if params.star_kwarg is not None else None
    named = positional(func)
    if params.kwonly_params or params.posonly_params or any(p.default is not None for p in named):
        return False
    if [p.name.value for p in named[:1]] != ["self"] or star == "":
        return False
    expected: list[tuple[str | None, str]] = [(None, p.name.value) for p in named[1:]]
    expected += [("*", star)] if star else []
    expected += [("**", kwargs)] if kwargs else []
    given = [(a.star or None, a.value.value if isinstance(a.value, cst.Name) else None) for a in value.args]
    if any(a.keyword is not None for a in value.args) or given != expected or len(expected) == 0:
        return False
    if ctx.via not in (None, MODULE):
        return False
    file = ctx.file
    return not any(
        func.name.value in base_info.methods.get(base, set())
        for base_info, base in file.project.ancestors(file.info, file.info.classes.get(ctx.name, []))
    )
