"""LM001: ``training_epoch_end`` / ``validation_epoch_end`` / ``test_epoch_end`` on a LightningModule."""

from __future__ import annotations

import libcst as cst

from lightning_migrate.checker.core import (
    MODULE,
    REWRITE,
    SAFE,
    ClassContext,
    Finding,
    Fix,
    Rule,
    body_uses,
    identifiers_in,
    manual_fix,
    named_params,
    positional,
    register,
    with_name,
)
from lightning_migrate.checker.rules._common import by_hook, new_hook, removed

#: registry pattern of each old hook; the hook, its replacement and its removal come from the registry entry
PATTERN_IDS = ("training-epoch-end", "validation-epoch-end", "test-epoch-end")
#: old hook -> (step method, cache attribute of the caching rewrite): the checker's own choices, not Lightning facts
CACHING = {
    "training_epoch_end": ("training_step", None),
    "validation_epoch_end": ("validation_step", "validation_step_outputs"),
    "test_epoch_end": ("test_step", "test_step_outputs"),
}
#: old hook -> (new hook, step method, cache attribute, registry pattern)
HOOKS = {
    hook: (new_hook(pattern_id), *CACHING[hook], pattern_id)
    for (hook, _owner), pattern_id in by_hook(PATTERN_IDS).items()
}


@register
class EpochEndMethods(Rule):
    code = "LM001"
    name = "epoch-end-methods"
    title = "training_epoch_end, validation_epoch_end and test_epoch_end on a LightningModule"
    hooks = frozenset(HOOKS)
    owners = frozenset({MODULE})
    patterns = PATTERN_IDS
    summary = (
        "A ``LightningModule`` (or a subclass of one, in any file checked) that defines ``training_epoch_end``, "
        "``validation_epoch_end`` or ``test_epoch_end``."
    )
    fix_text = (
        "**safe** when the body never reads ``outputs``: the method is renamed to ``on_train_epoch_end`` "
        "(``on_validation_epoch_end``, ``on_test_epoch_end``) and loses the parameter -- unless the class already "
        "defines that hook. **manual** when the body reads ``outputs``: a marker comment links here; move to "
        "module-side caching. **rewrite** (opt-in, ``--rewrite-caching``) for ``validation_epoch_end`` and "
        "``test_epoch_end`` when it provably keeps the behaviour: the step has one ``return`` (its last "
        "statement) and no ``dataloader_idx``, ``__init__`` calls ``super().__init__()``, and the cache name is "
        "free. The step then appends its output to ``self.validation_step_outputs``, skipping ``None`` "
        "(:claim:`validation-outputs-skipped-none`), and the hook takes a copy and clears the cache. "
        "``training_epoch_end`` is never rewritten: :claim:`training-outputs-wrapped-and-detached`, which a plain "
        "cache does not reproduce."
    )
    example = """\
import lightning.pytorch as pl


class LitModel(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        loss = self(batch).sum()
        return loss

    def training_epoch_end(self, outputs):
        # log once per epoch
        self.log("epoch", float(self.current_epoch))
"""

    def check(self, ctx: ClassContext, func: cst.FunctionDef):
        new_hook, step, cache, pattern_id = HOOKS[func.name.value]
        message = removed(pattern_id, func)
        params = [param.name.value for param in named_params(func)[1:]]
        used = [name for name in params if body_uses(func, name)]
        if new_hook in ctx.methods:
            fix = manual_fix(self.code, f"merge into the existing {new_hook}")
            message += f" (the class already defines `{new_hook}`: merge by hand)"
        elif not used and func.params.star_arg is cst.MaybeSentinel.DEFAULT and func.params.star_kwarg is None:
            fix = Fix(
                SAFE,
                with_name(new_hook, set(params)),
                description=f"rename to {new_hook}(self)",
                dropped=tuple(params),
                new_name=new_hook,
            )
        else:
            fix = None
            if ctx.rewrite_caching and cache is not None:
                fix = _caching_fix(ctx, func, new_hook, step, cache)
            if fix is None:
                fix = manual_fix(self.code, "the body reads outputs: move to module-side caching")
        yield Finding(self.code, message, (pattern_id,), fix=fix)


class _Returns(cst.CSTVisitor):
    """Counts ``return`` and ``yield`` in a function body, not in nested functions, lambdas or classes."""

    def __init__(self) -> None:
        self.returns = 0
        self.yields = 0

    def visit_Return(self, node: cst.Return) -> None:
        self.returns += 1

    def visit_Yield(self, node: cst.Yield) -> None:
        self.yields += 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def _is_super_init(statement: cst.BaseStatement) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    expr = statement.body[0]
    if not isinstance(expr, cst.Expr) or not isinstance(expr.value, cst.Call):
        return False
    func = expr.value.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "__init__"
        and isinstance(func.value, cst.Call)
        and isinstance(func.value.func, cst.Name)
        and func.value.func.value == "super"
    )


def _final_return(step: cst.FunctionDef) -> cst.Return | None:
    """The step's ``return <value>`` when it is its only return and its last statement."""
    if not isinstance(step.body, cst.IndentedBlock) or not step.body.body:
        return None
    counter = _Returns()
    step.body.visit(counter)
    last = step.body.body[-1]
    if counter.returns != 1 or counter.yields:
        return None
    if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 and isinstance(last.body[0], cst.Return):
        if last.body[0].value is not None:
            return last.body[0]
    return None


def _caching_fix(ctx: ClassContext, func: cst.FunctionDef, new_hook: str, step_name: str, cache: str) -> Fix | None:
    """The opt-in module-side caching rewrite, or ``None`` when it is not provably equivalent."""
    step, init = ctx.methods.get(step_name), ctx.methods.get("__init__")
    hook_params = positional(func)
    if step is None or init is None or len(hook_params) != 2 or func.params.kwonly_params:
        return None
    if func.params.star_arg is not cst.MaybeSentinel.DEFAULT or func.params.star_kwarg is not None:
        return None
    if not isinstance(func.body, cst.IndentedBlock) or not isinstance(init.body, cst.IndentedBlock):
        return None
    step_params = positional(step)
    if len(step_params) > 3 or step.params.star_arg is not cst.MaybeSentinel.DEFAULT or step.params.star_kwarg:
        return None  # a dataloader_idx: Lightning 1.x passed one list per dataloader
    if _final_return(step) is None or not any(_is_super_init(s) for s in init.body.body):
        return None
    if cache in identifiers_in(ctx.node):
        return None
    outputs_name = hook_params[1].name.value
    variable = "step_output"
    while variable in identifiers_in(step):
        variable += "_"
    literal = isinstance(_final_return(step).value, (cst.Dict, cst.List, cst.Tuple))

    def rewrite_step(node: cst.FunctionDef) -> cst.FunctionDef:
        body = list(node.body.body)
        last = body[-1]
        value = last.body[0].value
        assign = cst.SimpleStatementLine(
            [cst.Assign([cst.AssignTarget(cst.Name(variable))], value)], leading_lines=last.leading_lines
        )
        append = (
            cst.parse_statement(f"self.{cache}.append({variable})")
            if literal
            else cst.parse_statement(f"if {variable} is not None:\n    self.{cache}.append({variable})\n")
        )
        ret = last.with_changes(body=[cst.Return(cst.Name(variable))], leading_lines=[])
        return node.with_changes(body=node.body.with_changes(body=[*body[:-1], assign, append, ret]))

    def rewrite_hook(node: cst.FunctionDef) -> cst.FunctionDef:
        node = with_name(new_hook, {outputs_name})(node)
        body = list(node.body.body)
        start = 1 if body and _is_docstring(body[0]) else 0
        take = [
            cst.parse_statement(f"{outputs_name} = list(self.{cache})"),
            cst.parse_statement(f"self.{cache}.clear()"),
        ]
        return node.with_changes(body=node.body.with_changes(body=[*body[:start], *take, *body[start:]]))

    def rewrite_init(node: cst.FunctionDef) -> cst.FunctionDef:
        body = list(node.body.body)
        index = next(i for i, s in enumerate(body) if _is_super_init(s))
        body.insert(index + 1, cst.parse_statement(f"self.{cache} = []"))
        return node.with_changes(body=node.body.with_changes(body=body))

    targets = {"__init__": rewrite_init, step_name: rewrite_step, func.name.value: rewrite_hook}

    def apply(class_node: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(class_node, cst.ClassDef)
        body = [
            targets[s.name.value](s) if isinstance(s, cst.FunctionDef) and s.name.value in targets else s
            for s in class_node.body.body
        ]
        return class_node.with_changes(body=class_node.body.with_changes(body=body))

    return Fix(REWRITE, apply, on_class=True, description=f"module-side caching in self.{cache}")


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
