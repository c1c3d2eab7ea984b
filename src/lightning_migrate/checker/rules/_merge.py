"""The merge rewrite: an old epoch-end method beside the hook that replaces it, made one hook.

A module that defines ``training_epoch_end(self, outputs)`` -- a body that never reads ``outputs`` -- and
``on_train_epoch_end(self)`` cannot be renamed: the class already has the new name. Lightning 1.x ran both, the
old method first: the ``training-epoch-end-outputs-lifetime`` observation of ``data/compat/1.9.5.json`` lists the
hooks that ran after ``training_epoch_end`` in their order, ``Callback.on_train_epoch_end`` and then
``LightningModule.on_train_epoch_end``. The rewrite removes the old method and puts its body at the head of the
existing hook, before that hook's own code::

    def on_train_epoch_end(self):
        self.epoch_mean = torch.stack(self.losses).mean()  # what training_epoch_end did, first
        self.log("train_loss_epoch_mean", self.epoch_mean)  # then the hook's own code

It is made only where the two bodies joined run as the two calls did: the old body has no ``return``, ``yield`` or
``await`` of its own (the existing code would be skipped), the two bodies share no local name, both name the module
alike, and nothing else decides which one runs (a subclass defining either, a decorator, ``async``). Its shape,
``training-epoch-end/merged``, is proven by the row of the scenario matrix that runs ``data/rewrites``'s file of
that shape (:mod:`..proven`): run in the other order, that file logs the epoch before's value. 1.9.5 skipped
``training_epoch_end`` in an epoch that completed no batch (its loop calls it only when the epoch's outputs list is
not empty; the equivalence runs' ``epoch_without_batches``), so the moved code goes inside an ``if`` on the count of
the epoch's batches that the counted rename keeps (:func:`._rename.add_count`); where that count cannot be added,
the merge is **unsafe**.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence

import libcst as cst

from lightning_migrate import registry
from lightning_migrate.checker import proven
from lightning_migrate.checker.base import (
    PROVEN,
    UNSAFE,
    ClassContext,
    Fix,
    Statement,
    is_docstring,
    plain_signature,
    positional,
)
from lightning_migrate.checker.rules._caching import _indented, callback_reading
from lightning_migrate.checker.rules._rename import COUNTER, add_count, count_refusal, this

#: The old methods whose order beside their replacement a 1.x release recorded (``training-epoch-end-outputs-
#: lifetime``): registry pattern -> the suffix of the shape the merge writes.
MERGED = {"training-epoch-end": "merged"}
#: Statements that leave a function early or make it something else than a plain call.
_LEAVES = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def shape_of(pattern_id: str) -> str:
    return f"{pattern_id}/{MERGED[pattern_id]}"


def merge_fix(ctx: ClassContext, func: cst.FunctionDef, pattern_id: str, new_hook: str) -> Fix | str:
    """The rewrite that moves the body of ``func`` (an old method whose body never reads its old parameters) to the
    head of the class's ``new_hook``; or why it is not made (a phrase for the marker)."""
    if pattern_id not in MERGED:
        return "1.x's order of the two hooks is not recorded for this stage"
    existing = ctx.methods.get(new_hook)
    if existing is None or new_hook in ctx.bindings:
        return f"the class binds `{new_hook}` other than with one `def`"
    for method in (func, existing):
        if method.decorators or method.asynchronous is not None or not plain_signature(method):
            return f"`{method.name.value}` is decorated, `async` or takes `*args`, `**kwargs` or keyword-only ones"
    if len(positional(existing)) != 1:
        return f"`{new_hook}` takes other parameters than Lightning passes"
    if positional(func)[0].name.value != positional(existing)[0].name.value:
        return "the two methods name the module differently"
    old, new = _tree(func), _tree(existing)
    if any(isinstance(node, _LEAVES) for node in _own_nodes(old)):
        return f"`{func.name.value}` returns, yields or awaits: the code of `{new_hook}` after it could be skipped"
    if any(isinstance(n, ast.Attribute) and n.attr == func.name.value for n in ast.walk(old)):
        return f"`{func.name.value}` calls itself or its base's: merge by hand"
    if {"locals", "vars", "eval", "exec"} & (_names(old) | _names(new)):
        return "a body reads its locals as a whole (`locals()`, `vars()`, `eval`, `exec`)"
    shared = (_bound(old, params=False) & _names(new)) | (_bound(new) & _names(old))
    if shared:
        return f"both methods use the local name `{sorted(shared)[0]}`"
    file = ctx.file
    if file.path is not None and file.path in file.project.name_of:
        for hook in (func.name.value, new_hook):
            if file.project.subclasses_defining(file.info, ctx.name, hook):
                return f"a subclass defines `{hook}`, which decides which of the two runs"
    stage = registry.get(pattern_id).stage
    reader = callback_reading(func, file, new_hook, stage)
    shape = shape_of(pattern_id)
    old_name = func.name.value
    risk = (
        f"the body of `{old_name}` runs at the head of `{new_hook}`: 1.x ran it before every callback's "
        f"`{new_hook}`, 2.x runs the module's hook after the callbacks'"
    )
    refusal = count_refusal(ctx, new_hook)
    if refusal is not None:
        why = f"merge into `{new_hook}` without the count of the epoch's batches that guards the moved code: {refusal}"
        return Fix(UNSAFE, _merge(old_name, new_hook, False), on_class=True, description=f"merge into {new_hook}, "
                   "before its own code", risk=why, removes=True, shape=shape, withheld=why)  # fmt: skip
    return Fix(
        PROVEN if shape in proven.shapes() and reader is None else UNSAFE,
        _merge(old_name, new_hook, True),
        on_class=True,
        description=f"merge into {new_hook}, before its own code",
        risk=risk,
        removes=True,
        shape=shape,
        withheld=(
            f"merge into `{new_hook}`: the project's callback `{reader[1]}` ({reader[0]}) defines `{new_hook}`, which "
            "ran after "
            f"`{old_name}` and runs before the merged hook"
            if reader is not None
            else f"merge into `{new_hook}`, a shape no row of the scenario matrix proves"
        ),
    )


def _merge(old_name: str, new_hook: str, counted: bool):
    """The merge's ``apply``; ``counted``: the moved code runs only when the epoch trained a batch, counted by
    :func:`._rename.add_count`."""

    def apply(node: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock)
        body = list(node.body.body)
        old_def = next(s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == old_name)
        new_def = next(s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == new_hook)
        old, new = _indented(old_def), _indented(new_def)  # a one-line body (`def f(self): x = 1`) as a block
        assert isinstance(old.body, cst.IndentedBlock) and isinstance(new.body, cst.IndentedBlock)
        moved = [s for s in old.body.body if not is_docstring(s) and not _is_pass(s)]
        # what the old method said of itself goes with its code, as comments: the lines above it, its docstring
        # (each line a comment), and the comments below its last statement (its block's footer)
        notes = [line for line in old.leading_lines if line.comment is not None]
        notes += [_comment_line(text) for text in _docstring_lines(old.body.body)]
        footer = [line for line in old.body.footer if line.comment is not None]
        if moved and isinstance(moved[0], Statement):
            moved[0] = moved[0].with_changes(leading_lines=[*notes, *moved[0].leading_lines])
        if counted and moved:
            above = moved[0].leading_lines if isinstance(moved[0], Statement) else ()
            if isinstance(moved[0], Statement):
                moved[0] = moved[0].with_changes(leading_lines=[])
            comment = cst.Comment("# a batch was trained this epoch")
            block = cst.IndentedBlock(
                body=moved,
                header=cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "), comment=comment),
                footer=footer,
            )
            test = cst.parse_expression(f"{this(new)}.{COUNTER}")
            moved, footer = [cst.If(test=test, body=block, leading_lines=above)], []
        own = list(new.body.body)
        head = own[:1] if own and is_docstring(own[0]) else []
        rest = [s for s in own[len(head) :] if not (moved and _is_pass(s))]
        if moved and footer and rest and isinstance(rest[0], Statement):  # below the moved code, above the hook's
            rest[0] = rest[0].with_changes(leading_lines=[*footer, *rest[0].leading_lines])
        merged = new.with_changes(body=new.body.with_changes(body=[*head, *moved, *rest]))
        kept = [merged if s is new_def else s for s in body if s is not old_def]
        if body[0] is old_def and kept and isinstance(kept[0], Statement):  # now the body's first: no blank line above
            lines = [line for line in kept[0].leading_lines if line.comment is not None]
            kept[0] = kept[0].with_changes(leading_lines=lines)
        if counted and moved:  # an empty old body leaves nothing to skip
            kept = add_count(kept, new_hook)
        return node.with_changes(body=node.body.with_changes(body=kept))

    return apply


def _docstring_lines(body: Sequence[cst.BaseStatement]) -> list[str]:
    """The lines of the docstring opening ``body`` (none without one), stripped."""
    if not body or not is_docstring(body[0]):
        return []
    statement = body[0]
    assert isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Expr)
    value = statement.body[0].value
    text = value.evaluated_value if isinstance(value, cst.SimpleString) else None
    if not isinstance(text, str):
        return []  # a concatenated or byte docstring: left out
    return [line.strip() for line in textwrap.dedent(text).strip().splitlines()]


def _comment_line(text: str) -> cst.EmptyLine:
    return cst.EmptyLine(comment=cst.Comment(f"# {text}".rstrip()))


def _is_pass(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and (
            isinstance(statement.body[0], cst.Pass)
            or (isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, cst.Ellipsis))
        )
    )


def _tree(func: cst.FunctionDef) -> ast.FunctionDef:
    text = cst.Module(body=[]).code_for_node(func.with_changes(decorators=(), leading_lines=()))
    tree = ast.parse(textwrap.dedent(text)).body[0]
    assert isinstance(tree, ast.FunctionDef)
    return tree


def _own_nodes(func: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of the body outside the functions, lambdas and classes it defines."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _bound(func: ast.FunctionDef, params: bool = True) -> set[str]:
    """The names the body binds (an assignment, a loop, an import, a ``def``...), with ``params`` its parameters
    but the first (the old method's go with it): joined with the other body, they would be one function's
    locals."""
    names = {a.arg for a in (*func.args.posonlyargs, *func.args.args)[1:]} if params else set()
    for node in _own_nodes(func):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
    return names


def _names(func: ast.FunctionDef) -> set[str]:
    """Every name the body mentions (its parameters included)."""
    return {n.id for n in ast.walk(func) if isinstance(n, ast.Name)} | _bound(func)
