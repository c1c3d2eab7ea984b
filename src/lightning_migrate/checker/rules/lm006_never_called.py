"""LM006: the stage-less epoch and batch hooks (``on_epoch_end`` and its kin): names Lightning no longer calls."""

from __future__ import annotations

import libcst as cst

from lightning_migrate import hook_names, registry
from lightning_migrate.checker import proven
from lightning_migrate.checker.base import (
    CALLBACK,
    MODULE,
    PROVEN,
    UNSAFE,
    ClassContext,
    Finding,
    Fix,
    Rule,
    expected_count,
    is_docstring,
    manual_fix,
    names_in,
    on_def,
    plain_signature,
    positional,
)
from lightning_migrate.checker.rules._caching import callback_may_read_module, callback_reading, module_defining
from lightning_migrate.checker.rules._common import (
    EPOCH_END_METHOD_PATTERNS,
    by_hook,
    literal_list,
    new_hook,
    new_params,
    removed,
    subclass_defines,
)

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


#: The epoch hooks LM006 rewrites to the stage hooks that reproduce their calls (:func:`stage_hooks_fix`).
EPOCH_HOOKS = HOOKS - set(RENAMES)
#: LM001's methods, whose rewrites write the same stage hooks (and their ``start`` hooks, which clear a cache)
EPOCH_END_METHODS = frozenset(registry.get(pid).hook for pid in EPOCH_END_METHOD_PATTERNS)
#: Every stage's epoch hooks: one the class defines with another signature is rewritten by another rule (LM002)
OTHER_STAGE_HOOKS = tuple(
    f"on_{stage}_epoch_{edge}" for stage in ("train", "validation", "test", "predict") for edge in ("start", "end")
)
#: What Lightning passes a stage's epoch hook, and so what the old hook was passed: ``(parameters, arguments)``.
EPOCH_CALL = {MODULE: ("self", ""), CALLBACK: ("self, trainer, pl_module", "trainer, pl_module")}


class NeverCalled(Rule):
    code = "LM006"
    name = "never-called-hooks"
    title = f"{literal_list(sorted(HOOKS)).replace('``', '')}: the stage-less hooks"
    hooks = HOOKS
    patterns = tuple(PATTERNS.values())
    summary = (
        f"{literal_list(sorted(HOOKS))} on a ``{MODULE}`` or a ``{CALLBACK}``. :claim:`stageless-hooks-removed`; "
        ":claim:`stageless-hooks-refused-on-1-9`; and :claim:`stageless-hooks-ignored`: the code in them silently "
        "stops running."
    )
    fix_text = (
        f"For a callback's {literal_list(RENAMES)}: the fix renames them to "
        f"{literal_list(new for new, _ in RENAMES.values())} with the parameters those take "
        "(:claim:`batch-hooks-ran-for-training-batches`; a signature whose ``*args`` takes them, the body reading "
        "neither it nor ``**kwargs``, is kept), unless the class already defines the new hook or the "
        "body uses one of the new parameter names. It is not safe: :claim:`stageless-hooks-ignored`, so a project "
        "that runs on a release without it has been running without this code, and the rename makes it "
        "run again (a callback that validates the best checkpoint can stop a run that completed before). "
        "**proven** (applied by ``--fix``) where the rename's shape is proven on :doc:`Where each recipe works "
        "</reference/scenarios>` (its runs call the renamed hook where the old one ran on the old release), "
        "**unsafe** (opt-in, ``--unsafe-fixes``) otherwise: without the option, ``--fix`` leaves a marker that "
        "says so. For the epoch hooks "
        "(:claim:`epoch-hooks-ran-for-every-loop`): the body stays as ``_on_epoch_start`` or ``_on_epoch_end``, "
        "and the fix calls it from each stage hook the recorded calls of the old release name (after that stage "
        "hook's own code for an end hook, before it for a start hook): in the stage hook the class defines, or in "
        "one the fix adds, which calls a base class's own first. **proven** (applied by ``--fix``) where the shape is "
        "proven on :doc:`Where each recipe works </reference/scenarios>`, **unsafe** otherwise, for the same reason as "
        "the rename. Both are **unsafe** too for a callback's end hook that may read the module while a module of "
        "the checked files (or one they do not define) may define its stage hooks, and for a module's start hook "
        "that a callback's stage hook may read; the marker names the class. **manual** "
        "where the class's stage hook returns early, is ``async`` or decorated, a subclass defines one, or "
        f"{literal_list(sorted(EPOCH_END_METHODS))} are rewritten to the same hooks: pick the stage hooks you meant."
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
        message = removed(pattern_id, func) if pattern_id else f"`{hook}` is not a {ctx.kind} hook: it is never called"
        fix = manual_fix(self.code, "never called: use the stage hooks")
        if hook in EPOCH_HOOKS and pattern_id is not None:
            made = stage_hooks_fix(ctx, func, pattern_id)
            fix = (
                made if isinstance(made, Fix) else manual_fix(self.code, f"never called: use the stage hooks ({made})")
            )
        elif ctx.kind == CALLBACK and hook in RENAMES and pattern_id is not None:
            new_hook, added = RENAMES[hook]
            params = positional(func)
            simple = (
                len(params) == 3
                and not func.params.kwonly_params
                and func.params.star_arg is cst.MaybeSentinel.DEFAULT
                and func.params.star_kwarg is None
            )
            star = func.params.star_arg
            # `def on_batch_start(self, trainer, *args, **kwargs)` whose body reads neither: the star takes the
            # arguments the new hook adds, the name alone changes
            absorbed = (
                not simple
                and 2 <= len(params) <= 3
                and not func.params.kwonly_params
                and isinstance(star, cst.Param)
                and not (
                    names_in(func.body)
                    & {star.name.value, *([func.params.star_kwarg.name.value] if func.params.star_kwarg else [])}
                )
            )
            if (simple or absorbed) and new_hook not in ctx.methods and not (names_in(func.body) & set(added)):
                removed_in = registry.get(pattern_id).removed_in
                shape = rename_shape(pattern_id)
                entry = proven.stageless().get("hooks", {}).get(CALLBACK, {}).get(hook, {})
                moved = order_changes(ctx, func, [new_hook], entry.get("position") == "after")
                fix = Fix(
                    PROVEN
                    if shape in proven.shapes() and renames_where_recorded(hook, new_hook) and moved is None
                    else UNSAFE,
                    on_def(
                        lambda node: (
                            _rename(node, new_hook, added) if simple else node.with_changes(name=cst.Name(new_hook))
                        )
                    ),
                    description=f"rename to {new_hook}",
                    risk=(
                        f"Lightning has not called it since {removed_in}: renamed to `{new_hook}`, this code runs "
                        "again where it has not run (the order among different objects' hooks is 2.x's)"
                    ),
                    new_name=new_hook,
                    shape=shape,
                    withheld=moved or f"renamed to `{new_hook}`, a shape no row of the scenario matrix proves",
                )
        yield Finding(self.code, message, (pattern_id,) if pattern_id else (), fix=fix)

    def check_assigned(self, ctx: ClassContext, name: str, value: str | None = None):
        pattern_id = PATTERNS.get((name, ctx.kind))
        message = f"`{name}` (assigned in the class body) is never called" + (
            f": it {removed(pattern_id, bare=True)}" if pattern_id else ""
        )
        fix = manual_fix(self.code, "assigned in the class body: never called, bind a stage hook")
        yield Finding(self.code, message, (pattern_id,) if pattern_id else (), fix=fix)


def module_counterparts(stage_hooks: list[str]) -> frozenset[str]:
    """The module's methods that run, after a full migration, as the module's ``stage_hooks``: those hooks and the
    old module hooks the registry replaces by one of them (``training_epoch_end`` for ``on_train_epoch_end``)."""
    found = set(stage_hooks)
    for pattern in registry.PATTERNS:
        if pattern.owner == registry.OWNERS[0] and pattern.new_signature is not None:
            if new_hook(pattern.id) in stage_hooks:
                found.add(pattern.hook)
    return frozenset(found)


def order_changes(ctx: ClassContext, func: cst.FunctionDef, stage_hooks: list[str], after: bool) -> str | None:
    """Why moving the body of ``func`` (a stage-less hook, run ``after`` or before the stage hooks' round, every
    object's) into the class's own ``stage_hooks`` may change what it, or a callback, reads: 2.x runs one round,
    the callbacks' before the module's (the ``*-outputs-lifetime`` hook orders of ``data/compat/1.9.5.json``).

    * a callback's ``after`` hook moves before the module's stage hooks: it may read the module, and a module of
      the checked files defines one of them (or the checked files define no module) -- :func:`module_defining`;
    * a module's ``before`` hook moves after the callbacks' stage hooks: a callback of the checked files defines
      one and may read what the body does (:func:`._caching.callback_reading`).

    ``None`` where neither holds; a phrase for the marker otherwise."""
    hook = func.name.value
    if ctx.kind == CALLBACK and after and callback_may_read_module(ctx, hook):
        module = module_defining(ctx.file, module_counterparts(stage_hooks))
        if module is not None:
            where, name = module
            whose = f"`{name}` ({where})" if name else "the module, defined in no checked file,"
            hooks = ", ".join(f"`{h}`" for h in stage_hooks)
            return (
                f"`{hook}` may read the module, and {whose} may define {hooks}: 1.x ran `{hook}` after the module's "
                "stage hooks, the moved body runs before them"
            )
    if ctx.kind == MODULE and not after:
        for stage_hook in stage_hooks:
            reader = callback_reading(func, ctx.file, stage_hook, stage_hook.split("_")[1])
            if reader is not None:
                where, name = reader
                return (
                    f"the project's callback `{name}` ({where}) defines `{stage_hook}` and may read what `{hook}` "
                    f"does, which ran before it in 1.x and runs after it once moved"
                )
    return None


def helper_name(hook: str) -> str:
    """The name the old hook's body keeps once the stage hooks call it (``on_epoch_end`` -> ``_on_epoch_end``)."""
    return f"_{hook}"


def rename_shape(pattern_id: str) -> str:
    """The shape a batch hook's rename writes: the registry pattern, ``/rename``."""
    return f"{pattern_id}/rename"


def renames_where_recorded(hook: str, new_hook: str) -> bool:
    """Whether the newest 1.x release that ran a callback's ``hook`` ran it beside ``new_hook`` alone
    (:func:`.proven.stageless`), so that the renamed hook runs where the old one did: the calls a matrix row compares
    with."""
    entry = proven.stageless().get("hooks", {}).get(CALLBACK, {}).get(hook)
    return entry is not None and entry["hooks"] == [new_hook]


def shape_of(pattern_id: str) -> str:
    """The shape the rewrite writes: the registry pattern, ``/stage-hooks``."""
    return f"{pattern_id}/stage-hooks"


def stage_hooks_fix(ctx: ClassContext, func: cst.FunctionDef, pattern_id: str) -> Fix | str:
    """The rewrite of a stage-less epoch hook (``on_epoch_end``): its body stays, as ``_on_epoch_end``, and each
    stage hook that the newest 1.x release that ran it called it beside (:func:`.proven.stageless`: on 1.4.9,
    ``on_train_epoch_end``, ``on_validation_epoch_end`` -- the sanity check included -- and ``on_test_epoch_end``)
    calls it with what that release passed it, after that stage hook's own code for an ``end`` hook, before it for a
    ``start`` hook, as the release ordered them: in a stage hook the class defines (a plain ``def``; an ``end``
    hook's only when it has no ``return``), or in an added one that calls a base class's own first (``super()``,
    a ``ModelCheckpoint`` subclass's ``on_train_epoch_end``). ``proven`` when a matrix row proves the shape,
    ``unsafe`` otherwise; the reason (a phrase for the marker) when the rewrite cannot be made.
    """
    recorded = proven.stageless()
    hook = func.name.value
    entry = recorded.get("hooks", {}).get(ctx.kind, {}).get(hook)
    if entry is None:
        return "no stage hooks beside it in the records of 1.x"
    stages: list[str] = entry["hooks"]
    after = entry["position"] == "after"
    helper = helper_name(hook)
    count = expected_count(ctx.kind, 1)
    for stage_hook in stages:
        if stage_hook in ctx.bindings:
            return f"{ctx.binds(stage_hook)}: call `{helper}` from it by hand"
        existing = ctx.methods.get(stage_hook)
        if existing is None:
            continue
        if existing.asynchronous is not None or existing.decorators:
            return f"the class defines `{stage_hook}` with `async` or a decorator: call `{helper}` from it by hand"
        if not plain_signature(existing) or len(positional(existing)) != count:
            return f"the class's `{stage_hook}` takes other parameters than the hook's own: merge by hand"
        if after and _returns(existing):
            return f"the class's `{stage_hook}` has a `return` before its end: call `{helper}` from it by hand"
    for name in sorted(EPOCH_END_METHODS & set(ctx.methods)):
        return (
            f"the class's `{name}` is rewritten into the same stage hooks (its stage's start and end): fix it "
            "first, then run `--fix` again"
        )
    for name in OTHER_STAGE_HOOKS:
        method = ctx.methods.get(name)
        if method is not None and (not plain_signature(method) or len(positional(method)) != count):
            return f"the class's `{name}` takes other parameters than the hook's own: fix it first"
    inherited: set[str] = set()
    file = ctx.file
    for base_info, base in file.project.ancestors(file.info, file.info.classes.get(ctx.name, [])):
        inherited |= set(stages) & base_info.methods.get(base, set())
    if ctx.via not in (None, CALLBACK, MODULE):
        classes = hook_names.load()["classes"]
        if ctx.via not in classes:
            return f"Lightning's `{ctx.via}` is not among the recorded classes; it may define the stage hooks"
        inherited |= set(stages) & set(classes[ctx.via])
    for stage_hook in stages:
        if stage_hook not in ctx.methods and subclass_defines(ctx, stage_hook):
            return f"a subclass defines `{stage_hook}` of its own, over the added one"
    params, arguments = EPOCH_CALL[ctx.kind]
    shape = shape_of(pattern_id)
    where = ", ".join(f"`{name}`" for name in stages)
    release = recorded["release"]
    edit = _Edit(hook, helper, stages, after, params, arguments, frozenset(inherited))
    moved = order_changes(ctx, func, stages, after)
    return Fix(
        PROVEN if shape in proven.shapes() and moved is None else UNSAFE,
        edit.apply,
        on_class=True,
        description=f"call it from {', '.join(stages)}",
        risk=(
            f"Lightning has not called it since {registry.get(pattern_id).removed_in}: called from {where}, where "
            f"{release} called it, this code runs again where it has not run (the order among different objects' "
            "hooks is 2.x's)"
        ),
        new_name=helper,
        shape=shape,
        withheld=moved or f"calls from {where}, a shape no row of the scenario matrix proves",
    )


def _returns(func: cst.FunctionDef) -> bool:
    """Whether ``func``'s own body (not a function or class inside it) has a ``return`` or a ``yield``."""

    class Finder(cst.CSTVisitor):
        found = False

        def visit_Return(self, node: cst.Return) -> None:
            self.found = True

        def visit_Yield(self, node: cst.Yield) -> None:
            self.found = True

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is func

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    finder = Finder()
    func.visit(finder)
    return finder.found


def _is_pass(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Pass)
        and not statement.leading_lines
        and statement.trailing_whitespace.comment is None
    )


class _Edit:
    """The class edit of :func:`stage_hooks_fix` (see there)."""

    def __init__(self, hook, helper, stages, after, params, arguments, inherited):
        self.hook, self.helper, self.stages, self.after = hook, helper, stages, after
        self.params, self.arguments, self.inherited = params, arguments, inherited

    def _call(self, arguments: str) -> cst.BaseStatement:
        return cst.parse_statement(f"self.{self.helper}({arguments})\n")

    def _added(self, stage_hook: str) -> cst.BaseStatement:
        lines = [f"self.{self.helper}({self.arguments})\n"]
        if stage_hook in self.inherited:  # the base class's own code runs too, in the release's order
            own = f"super().{stage_hook}({self.arguments})\n"
            lines = [own, *lines] if self.after else [*lines, own]
        text = f"def {stage_hook}({self.params}):\n" + "".join(f"    {line}" for line in lines)
        return cst.parse_statement(text).with_changes(leading_lines=[cst.EmptyLine(indent=False)])

    def _merged(self, func: cst.FunctionDef) -> cst.FunctionDef:
        names = [param.name.value for param in positional(func)[1:]]
        call = self._call(", ".join(names))
        block = func.body if isinstance(func.body, cst.IndentedBlock) else None
        if block is None:  # a one-line body: `def on_train_epoch_end(self): pass`
            assert isinstance(func.body, cst.SimpleStatementSuite)
            block = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=func.body.body)])
        body = list(block.body)
        if len(body) == 1 and _is_pass(body[0]):  # `def on_train_epoch_end(self): pass`: the call stands alone
            body = []
        if self.after:
            body.append(call)
        else:
            start = 1 if body and is_docstring(body[0]) else 0
            body[start:start] = [call]
        return func.with_changes(body=block.with_changes(body=body))

    def apply(self, class_node: cst.CSTNode) -> cst.CSTNode:
        if not isinstance(class_node, cst.ClassDef) or not isinstance(class_node.body, cst.IndentedBlock):
            return class_node  # pragma: no cover - the rule found the hook in this class's block
        body = list(class_node.body.body)

        def at(name: str) -> int | None:
            return next(
                (i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == name), None
            )

        added = []
        for stage_hook in self.stages:
            index = at(stage_hook)
            if index is None:
                added.append(self._added(stage_hook))
            else:
                existing = body[index]
                assert isinstance(existing, cst.FunctionDef)
                body[index] = self._merged(existing)
        index = at(self.hook)
        if index is None:  # pragma: no cover - the rule found the hook in this class
            return class_node
        old = body[index]
        assert isinstance(old, cst.FunctionDef)
        body[index : index + 1] = [old.with_changes(name=cst.Name(self.helper)), *added]
        after = index + 1 + len(added)
        following = body[after] if added and after < len(body) else None
        if isinstance(following, cst.FunctionDef | cst.ClassDef) and not following.leading_lines:
            # the next method had no blank line above it (none in the class, or the old hook's block ended in a
            # line of spaces alone): one between it and the added hooks
            body[after] = following.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        return class_node.with_changes(body=class_node.body.with_changes(body=body))


def _rename(func: cst.FunctionDef, new_hook: str, added: tuple[str, ...]) -> cst.FunctionDef:
    params = list(func.params.params)
    last = params[-1]
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    new = [*params[:-1], last.with_changes(comma=comma)]
    for i, name in enumerate(added):
        new.append(cst.Param(cst.Name(name), comma=comma if i < len(added) - 1 else last.comma))
    return func.with_changes(name=cst.Name(new_hook), params=func.params.with_changes(params=new))
