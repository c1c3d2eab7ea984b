"""LM005: the step-end methods Lightning 2.0 removed (``training_step_end`` and its kin) on a LightningModule."""

from __future__ import annotations

import libcst as cst

from lightning_migrate.checker import proven
from lightning_migrate.checker.base import (
    MODULE,
    PROVEN,
    SAFE,
    UNSAFE,
    ClassContext,
    Finding,
    Fix,
    Rule,
    manual_fix,
    names_in,
    positional,
)
from lightning_migrate.checker.rules._common import (
    assigned_finding,
    by_hook,
    literal_list,
    removed,
    subclass_defines,
)

PATTERNS = {
    hook: pid for (hook, _owner), pid in by_hook(("training-step-end", "validation-step-end", "test-step-end")).items()
}
#: The step whose output each step-end hook received.
STEPS = {hook: hook.removesuffix("_end") for hook in PATTERNS}
#: The epoch-end method that received what each step-end hook returned (LM001 rewrites it to caching once the hook
#: is gone: the two are fixed together, by hand).
EPOCH_ENDS = {hook: hook.replace("_step_end", "_epoch_end") for hook in PATTERNS}
#: The hook the docs name for the three.
_HOOK = next(iter(PATTERNS))


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
        f"or only calls the base class's method with it (``return super().{_HOOK}(step_output)``, "
        f"or ``(*args, **kwargs)``, where no class of your project between yours and ``{MODULE}`` defines "
        "the method): the method is removed. "
        "Otherwise its work moves into the step: the method keeps its body under a name of its own "
        f"(``_{_HOOK}``), and each ``return X`` of the class's own step becomes ``step_output = X``, "
        f"``ended = self._{_HOOK}(step_output)``, ``return step_output if ended is None else ended``. "
        "The rewrite is **proven** (applied by ``--fix``) when its shape is proven (its runs give the old code's "
        "values in every Trainer configuration it declares), **unsafe** otherwise. The moved code is now part of "
        "your step: it runs wherever your step's code runs. Not rewritten (**manual**): the class does not define "
        "the step itself, a subclass defines the step or the method, code calls the step or the method (or names "
        "it in a string), a ``return`` of the step is inside a ``try`` or a ``with`` or shares its line, the step "
        "can end without a ``return`` (or yields), the step or the method is decorated or ``async``, the method "
        "does not take the one output as its argument, or the class or a subclass defines the stage's epoch-end "
        f"method (``{EPOCH_ENDS[_HOOK]}``, which LM001 rewrites: the two are fixed together, by hand)."
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
            made = into_step_fix(ctx, func, pattern_id)
            fix = (
                made
                if isinstance(made, Fix)
                else manual_fix(self.code, f"move this work into the step or the batch-end hook ({made})")
            )
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


def into_step_shape(pattern_id: str) -> str:
    """The shape :func:`into_step_fix` writes: the registry pattern, ``/into-step``."""
    return f"{pattern_id}/into-step"


def into_step_fix(ctx: ClassContext, func: cst.FunctionDef, pattern_id: str) -> Fix | str:
    """The step-end hook's work moved into the class's own step, as 1.x ran it (see :attr:`StepEnd.fix_text`):
    the fix, or why it cannot be made (a phrase for the marker)."""
    hook = func.name.value
    step = STEPS[hook]
    helper = f"_{hook}"
    if step in ctx.bindings:
        return f"{ctx.binds(step)}"
    own = ctx.methods.get(step)
    if own is None:
        return f"the class does not define `{step}` itself"
    for method in (own, func):
        if method.asynchronous is not None or method.decorators:
            return f"`{method.name.value}` is decorated or `async`"
    params = positional(func)
    takes_one = (len(params) >= 2 and all(p.default is not None for p in params[2:])) or (
        len(params) == 1 and isinstance(func.params.star_arg, cst.Param)
    )
    if not takes_one or any(p.default is None for p in func.params.kwonly_params):
        return f"`{hook}` does not take the step's output as its one argument"
    for name in (step, hook):
        if subclass_defines(ctx, name):
            return f"a subclass defines `{name}`"
    epoch_end = EPOCH_ENDS[hook]
    if epoch_end in ctx.methods or epoch_end in ctx.bindings or subclass_defines(ctx, epoch_end):
        return f"`{epoch_end}` reads what it returns: fix the two together"
    caller = ctx.file.caller(step, of=ctx, removed=True)
    if caller is not None:
        return f"`{step}` is called: {caller}"
    why = _returns_refused(own)
    if why is not None:
        return why
    taken = names_in(own)
    output, ended = _free("step_output", taken), _free("ended", taken)
    shape = into_step_shape(pattern_id)
    return Fix(
        PROVEN if shape in proven.shapes() else UNSAFE,
        _IntoStep(hook, step, helper, output, ended).apply,
        on_class=True,
        description=f"run it from {step} as {helper}",
        risk=(
            f"`{hook}`'s code moves to the end of `{step}`, as `{helper}`: it runs wherever `{step}`'s code runs, "
            "not as a method of its own"
        ),
        new_name=helper,
        shape=shape,
        withheld=f"moved into `{step}`, a shape no row of the scenario matrix proves",
    )


def _free(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name


def _own_statements(block: cst.BaseSuite) -> list[cst.BaseStatement]:
    return list(block.body) if isinstance(block, cst.IndentedBlock) else []


class _ReturnsOf(cst.CSTVisitor):
    """Why a ``return`` of a function's own body (nested functions, classes and lambdas left out) cannot carry the
    hook's call (:attr:`why`, ``None`` when each can)."""

    def __init__(self, func: cst.FunctionDef) -> None:
        self.func = func
        self.why: str | None = None
        self.depth = 0  # inside a `try` or a `with`

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.func

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Try(self, node: cst.Try) -> None:
        self.depth += 1

    def leave_Try(self, original_node: cst.Try) -> None:
        self.depth -= 1

    def visit_TryStar(self, node: cst.TryStar) -> None:
        self.depth += 1

    def leave_TryStar(self, original_node: cst.TryStar) -> None:
        self.depth -= 1

    def visit_With(self, node: cst.With) -> None:
        self.depth += 1

    def leave_With(self, original_node: cst.With) -> None:
        self.depth -= 1

    def visit_Yield(self, node: cst.Yield) -> None:
        self.why = self.why or f"`{self.func.name.value}` yields"

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        if any(isinstance(small, cst.Return) for small in node.body):
            self.why = self.why or "a `return` of the step shares its line with its `if` (or `for`, ...)"

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if any(isinstance(small, cst.Return) for small in node.body):
            if len(node.body) != 1:
                self.why = self.why or "a `return` of the step shares its line with another statement"
            elif self.depth:
                self.why = self.why or "a `return` of the step is inside a `try` or a `with`"


def _ends(statements: list[cst.BaseStatement]) -> bool:
    """Whether running ``statements`` always ends in a ``return`` or a ``raise`` (as far as their shape shows)."""
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], cst.Return | cst.Raise)
    if isinstance(last, cst.If):
        otherwise = last.orelse
        if otherwise is None:
            return False
        rest: list[cst.BaseStatement] = (
            [otherwise] if isinstance(otherwise, cst.If) else _own_statements(otherwise.body)
        )
        return _ends(_own_statements(last.body)) and _ends(rest)
    return False


def _returns_refused(step: cst.FunctionDef) -> str | None:
    """Why the step's returns cannot each call the hook (:class:`_ReturnsOf`, or the step can end without one)."""
    found = _ReturnsOf(step)
    step.visit(found)
    if found.why is not None:
        return found.why
    if not _ends(_own_statements(step.body)):
        return f"`{step.name.value}` can end without a `return`"
    return None


class _IntoStep:
    """The class edit of :func:`into_step_fix`: the hook renamed, each ``return`` of the step calling it."""

    def __init__(self, hook: str, step: str, helper: str, output: str, ended: str) -> None:
        self.hook, self.step, self.helper, self.output, self.ended = hook, step, helper, output, ended

    def _step(self, func: cst.FunctionDef) -> cst.FunctionDef:
        receiver = positional(func)[0].name.value
        edit = self

        class Returns(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is func

            def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                return False

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                return False

            def leave_SimpleStatementLine(
                self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
            ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
                [small] = updated_node.body if len(updated_node.body) == 1 else [None]
                if not isinstance(small, cst.Return):
                    return updated_node
                value = small.value if small.value is not None else cst.Name("None")
                first = cst.SimpleStatementLine(
                    body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(edit.output))], value=value)],
                    leading_lines=updated_node.leading_lines,
                )
                call = cst.parse_statement(f"{edit.ended} = {receiver}.{edit.helper}({edit.output})\n")
                last = cst.parse_statement(
                    f"return {edit.output} if {edit.ended} is None else {edit.ended}\n"
                ).with_changes(trailing_whitespace=updated_node.trailing_whitespace)
                return cst.FlattenSentinel([first, call, last])

        result = func.visit(Returns())
        assert isinstance(result, cst.FunctionDef)
        return result

    def apply(self, class_node: cst.CSTNode) -> cst.CSTNode:
        if not isinstance(class_node, cst.ClassDef) or not isinstance(class_node.body, cst.IndentedBlock):
            return class_node  # pragma: no cover - the rule found the hook in this class's block
        body = []
        for statement in class_node.body.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == self.hook:
                statement = statement.with_changes(name=cst.Name(self.helper))
            elif isinstance(statement, cst.FunctionDef) and statement.name.value == self.step:
                statement = self._step(statement)
            body.append(statement)
        return class_node.with_changes(body=class_node.body.with_changes(body=body))
