"""The caching rewrites: an old hook that read ``outputs`` at epoch end, made to collect the same values itself.

The rewritten class keeps a cache (a list; one list per dataloader where there may be several), appends to it in
the stage's batch-end hook -- the hook Lightning 2.x hands each batch's ``outputs`` -- and, at epoch end, takes
the cache as the old hook's ``outputs`` and clears it before the old body runs::

    def __init__(self):
        super().__init__()
        self.validation_step_outputs = []

    def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        if outputs is not None:  # as in the old outputs: no None
            self.validation_step_outputs.append(outputs)

    def on_validation_epoch_end(self):
        outputs = list(self.validation_step_outputs)
        self.validation_step_outputs.clear()
        ...  # the old body, unchanged

A module's training rewrite caches in ``training_step`` instead, as the module-side recipe of the site does: before
each ``return`` of a value the step appends what Lightning 1.x kept of it -- a dict (a bare loss became ``{"loss":
loss}``), detached, nothing for ``None`` -- and the epoch-end hook leaves out empty outputs (a manual step's ``{}``)
and divides the loss by ``accumulate_grad_batches`` under automatic optimization, as 1.5-1.9 did (where the trainer
is attached: a test calling the step alone still runs). A class without a step of its own gets one that calls the
inherited step. What the step returns and computes is unchanged; the rewrite is withheld where code could not be
added that way (a ``return`` in a ``try``, a decorated step, other code calling the step, an optimizer that calls
its closure several times a step). An evaluation module whose class defines its step (``batch, batch_idx`` and at
most ``dataloader_idx``) caches there too, what each ``return`` hands on except ``None``, in its dataloader's list.
Callbacks, predictions, and an evaluation module that inherits its step (or whose step could not take the lines)
cache in the batch-end hook: it receives exactly what 1.x collected for the old hook, whatever the step looks like.
Training outputs are detached with Lightning's ``recursive_detach`` (1.x kept the graph of every other key alive
until epoch end); evaluation runs without autograd, so its outputs are cached as they come.

Every fact about hooks (names, signatures, stages, the step of each stage) comes from
:mod:`lightning_migrate.registry`; the shapes are proven by running them: the equivalence test runs each shape of
``data/rewrites`` before the rewrite on the last 1.x release that ran it and after the rewrite on the installed
Lightning, over the same data and weights.
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import libcst as cst

from lightning_migrate import hook_names, registry
from lightning_migrate.checker import proven
from lightning_migrate.checker.base import (
    CALLBACK,
    MODULE,
    PROVEN,
    UNSAFE,
    ClassContext,
    FileContext,
    Fix,
    Statement,
    drop_params,
    expected_count,
    identifiers_in,
    is_docstring,
    names_in,
    nodes_of,
    plain_signature,
    positional,
    shown_path,
)
from lightning_migrate.checker.resolve import ModuleInfo, Project, class_body_names, dotted
from lightning_migrate.checker.rules._common import new_params

#: The registry pattern of each stage's batch-end hook, whose new signature the rewrite writes: (owner, stage) -> id.
BATCH_END = {
    (registry.get(pid).owner, registry.get(pid).stage): registry.get(pid)
    for pid in (
        "module-on-train-batch-end-dataloader-idx",
        "callback-on-train-batch-end-dataloader-idx",
        "module-on-validation-batch-end-dataloader-idx-required",
        "module-on-test-batch-end-dataloader-idx-required",
        "module-on-predict-batch-end-dataloader-idx-required",
        "callback-on-predict-batch-end-dataloader-idx-required",
    )
}
#: The step-end hook of each stage (Lightning 1.x passed the old hook what it returned): stage -> hook.
STEP_END = {
    registry.get(pid).stage: registry.get(pid).hook
    for pid in ("training-step-end", "validation-step-end", "test-step-end")
}
#: The ``Trainer`` property that lists a stage's dataloaders' batch counts (its length: the number of dataloaders);
#: the equivalence test runs the code that reads it.
NUM_BATCHES = {"validation": "num_val_batches", "test": "num_test_batches", "predict": "num_predict_batches"}
#: The releases that removed an old training hook whose last releases passed the loss whole (1.3-1.4; from 1.5 on,
#: Lightning passed the loss divided by ``accumulate_grad_batches``, as 2.x hands it on): recorded by the
#: equivalence runs of ``data/rewrites`` on 1.4.9 and 1.9.5 (``data/compat``).
WHOLE_LOSS_RELEASES = ("1.5",)
#: Where Lightning keeps ``recursive_detach``, under its package root.
DETACH_MODULE = {
    "pytorch_lightning": "pytorch_lightning.utilities.memory",
    "lightning": "lightning.pytorch.utilities.memory",
}


def _imports_package(node: ast.AST, package: str) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == package for alias in node.names)
    return isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == package


def _imported_only_conditionally(tree: ast.Module, package: str) -> bool:
    """Whether the file imports ``package`` only inside a compound statement (``try: import lightning ... except
    ImportError: import pytorch_lightning``): a new top-level import from it could fail where the file does not."""
    if any(_imports_package(statement, package) for statement in tree.body):
        return False
    return any(_imports_package(node, package) for node in nodes_of(tree))


def epoch_start(new_hook: str, kind: str) -> str:
    """The epoch-start hook of the stage whose epoch-end hook is ``new_hook`` (checked against the hooks recorded
    from Lightning). Raises ``ValueError`` when Lightning has no such hook."""
    hook = new_hook.removesuffix("_end") + "_start"
    if hook not in hook_names.load()[kind]["hooks"]:
        raise ValueError(f"Lightning has no {kind} hook {hook}")
    return hook


def cache_name(stage: str) -> str:
    """``validation_step_outputs``: the name Lightning's own 2.0 migration notes give the cache of a stage."""
    return f"{registry.STEP_METHODS[stage]}_outputs"


def caching_fix(ctx: ClassContext, func: cst.FunctionDef, pattern_id: str, outputs_index: int) -> Fix | str:
    """The opt-in rewrite of the old hook ``func`` (registry pattern ``pattern_id``) whose parameter at
    ``outputs_index`` (``self`` is 0) is what Lightning 1.x passed at epoch end; or why it cannot be made.

    Returns:
        a :class:`~lightning_migrate.checker.base.Fix` on the class -- ``proven`` when the matrix proves its shape
        (:mod:`..proven`), ``unsafe`` otherwise -- or the reason (a phrase for the marker) when the rewrite would
        not provably keep the values.
    """
    pattern = registry.get(pattern_id)
    stage, kind = pattern.stage, ctx.kind
    batch_end = BATCH_END.get((kind, stage))
    if batch_end is None:
        return f"the rewrite has no batch hook of a {kind} to cache from in this stage"
    params = positional(func)
    if len(params) != outputs_index + 1 or not plain_signature(func):
        return "the hook takes other parameters than the old signature's"
    if pattern.new_signature is None or batch_end.new_signature is None:
        return "the registry names no 2.x hook in its place"
    outputs = params[outputs_index].name.value
    old_hook = func.name.value
    new_hook = pattern.new_signature.partition("(")[0]
    batch_hook = batch_end.new_signature.partition("(")[0]
    start_hook = epoch_start(new_hook, kind)
    cache = cache_name(stage)
    # a module caches in its step, as the module-side recipe does; a callback in its batch-end hook, and so does an
    # evaluation module whose step is not its own code (inherited) or could not take the added lines
    step_name = registry.STEP_METHODS[stage]
    in_step = kind == MODULE and (stage == "train" or _evaluation_step_refusal(ctx, stage) is None)
    collector = step_name if in_step else batch_hook
    if new_hook != old_hook and ctx.binds(new_hook) is not None:
        return f"{ctx.binds(new_hook)}: merge by hand"
    for name in (collector, start_hook, "__init__"):
        if name in ctx.bindings:  # the rewrite edits a `def`; another binding would replace it, or be replaced
            return f"the class binds `{name}` at line {ctx.bindings[name]} other than with a `def`: merge by hand"
    if ctx.uses_attribute(cache):
        return f"the class already uses `self.{cache}`"
    file = ctx.file
    for base_info, base in file.project.ancestors(file.info, file.info.classes.get(ctx.name, [])):
        defined = base_info.methods.get(base, set())
        for hook in (start_hook,) if in_step else (batch_hook, start_hook):
            if hook in defined:
                return f"base class `{base}` defines `{hook}`"
        path = file.project.by_name.get(base_info.name)
        if path is not None and re.search(rb"\.\s*" + cache.encode() + rb"\b", file.project.read(path)):
            return f"base class `{base}`'s file uses `.{cache}`"
    for hook in (start_hook,) if in_step else (batch_hook, start_hook):
        if ctx.via is not None and hook in hook_names.load()["classes"].get(ctx.via, ()):
            return f"Lightning's `{ctx.via}` defines `{hook}`"
    if kind == MODULE and stage == "train":
        step = ctx.methods.get(registry.STEP_METHODS[stage])
        if step is not None and (len(positional(step)) > 3 or not plain_signature(step)):
            extra = ", ".join(p.name.value for p in positional(step)[3:]) or "more arguments"
            return (
                f"`{step.name.value}` takes {extra} beyond `batch, batch_idx` (several optimizers, or truncated "
                "back-propagation): the rewrite is made for a step of those two"
            )
        if ctx.uses_attribute("truncated_bptt_steps"):
            return (
                "the class uses truncated back-propagation (`truncated_bptt_steps`), which the rewrite is not made for"
            )
    step_end = STEP_END.get(stage)
    if kind == MODULE and step_end is not None:
        why = _step_end_changes_outputs(ctx, step_end)
        if why:
            return why
    if in_step and stage == "train":
        why = _step_refusal(ctx, step_name)
        if why:
            return why
    for hook in {collector, new_hook}:
        if _subclass_defines(ctx, hook):
            return f"a subclass defines `{hook}` of its own, over the rewritten class's"
    # one list per dataloader in every evaluation stage, a step without ``dataloader_idx`` included (Lightning then
    # refuses a second dataloader, and the one list is handed on alone): that is the shape the matrix proves
    per_dataloader = stage != "train"
    root = ctx.root or "lightning"
    imports = []
    if stage == "train":
        if _imported_only_conditionally(file.tree, root):
            return f"`{root}` is imported only in a `try` or an `if` here: import `recursive_detach` the same way"
        imports.append((DETACH_MODULE[root], "recursive_detach"))
    if per_dataloader:
        imports.append(("collections", "defaultdict"))
    for module, name in imports:
        bound = file.info.imports.get(name)
        if (bound is not None and bound != f"{module}.{name}") or (bound is None and name in file.info.top_level):
            return f"`{name}` is another name in this file"
    started = ctx.methods.get(start_hook)
    if started is not None and started.asynchronous is not None:
        return f"`{start_hook}` is `async def`"
    existing = None if in_step else ctx.methods.get(batch_hook)
    if existing is not None:
        if not plain_signature(existing) or len(positional(existing)) < expected_count(kind, 4):
            return f"`{batch_hook}` takes other parameters than the hook's own"
        if existing.asynchronous is not None:
            return f"`{batch_hook}` is `async def`"
    how = "callback-side caching" if kind == CALLBACK else "module-side caching"
    risks = [f"a subclass outside the checked files that overrides `{collector}` without `super()` would cache nothing"]
    if in_step:
        closure = ", and an optimizer that calls its closure several times a step would cache each call"
        risks.append(
            f"code outside the checked files that calls `{step_name}` (or calls it by a name built at run time) "
            "would add to the cache" + (closure if stage == "train" else "")
        )
    if stage == "train":
        risks.append("the cached tensors are detached (1.x kept the graph of every key but the loss)")
    no_predictions = None
    if stage == "predict":
        risks.append("with `return_predictions=False` 1.x passed empty lists, the rewrite the predictions")
        no_predictions = _predictions_may_be_off(file)
    # 1.x ran the module's old epoch-end hook before every callback's hook of the same epoch end; the renamed hook
    # runs after the callbacks' (measured on 1.9.5 and 2.6.6): a callback of the project that reads what the old
    # hook set would read the epoch before's value,
    # hook, which no row of the matrix shows -- unless the old hook does nothing another object could read
    reader = None if kind != MODULE or new_hook == old_hook else callback_reading(func, file, new_hook, stage)
    if reader is not None:
        where, name = reader
        risks.append(
            f"the project's callback `{name}` ({where}) defines `{new_hook}`: `{old_hook}` ran before it in 1.x, "
            f"the renamed hook runs after it, so what it reads of this hook's work is one epoch older"
        )
    removed_in = registry.get(pattern_id).removed_in
    whole_loss = removed_in if stage == "train" and removed_in in WHOLE_LOSS_RELEASES else None
    spec = _Spec(kind, stage, outputs, old_hook, new_hook, batch_end, cache, per_dataloader, whole_loss, start_hook)
    spec.step = step_name if in_step else None
    if in_step and stage != "train":
        spec.loader = _loader_name(ctx.methods[step_name])
    shape = shape_of(pattern_id, per_dataloader, whole_loss is not None, in_step and stage != "train")
    return Fix(
        PROVEN if shape in proven.shapes() and reader is None and no_predictions is None else UNSAFE,
        spec.apply,
        on_class=True,
        description=f"{how} in self.{cache}",
        risk=f"{how}: `{collector}` collects what 1.x passed `{outputs}` ({'; '.join(risks)})",
        dropped=(outputs,),
        new_name=new_hook if new_hook != old_hook else None,
        imports=tuple(imports),
        shape=shape,
        withheld=(
            f"{how} in `{cache}`: the project's callback `{reader[1]}` ({reader[0]}) defines `{new_hook}`, which "
            f"ran after `{old_hook}` and runs before the renamed hook"
            if reader is not None
            else f"{how} in `{cache}`: `{no_predictions}` may predict with `return_predictions=False` (or a spawning "
            "strategy), where 1.x passed empty lists and the rewrite passes the predictions"
            if no_predictions is not None
            else f"{how} in `{cache}`, a shape no row of the scenario matrix proves"
        ),
    )


#: The calls an old epoch-end body may make and still change nothing another object can read (what
#: :func:`_changes_nothing_outside` allows): builtins and ``torch`` functions that build a new value from their
#: arguments, and methods that read their object without changing it (a tensor's, a dict's).
PURE_BUILTINS = frozenset(
    {"abs", "bool", "dict", "enumerate", "float", "int", "isinstance", "len", "list", "max", "min", "range", "round"}
    | {"sorted", "sum", "tuple", "zip"}
)
PURE_TORCH = frozenset({"as_tensor", "cat", "exp", "isfinite", "log", "max", "mean", "min", "sqrt", "stack", "std"})
PURE_TORCH |= frozenset({"sum", "tensor"})
PURE_METHODS = frozenset(
    {"argmax", "cpu", "detach", "flatten", "float", "get", "item", "items", "keys", "long", "max", "mean", "min"}
    | {"numel", "reshape", "size", "squeeze", "std", "sum", "tolist", "values", "view"}
)
#: Statements and expressions that may change what outlives the call (or run code the check cannot read).
NOT_LOCAL = (
    *(ast.Global, ast.Nonlocal, ast.Delete, ast.With, ast.AsyncWith, ast.Try, ast.Lambda, ast.FunctionDef),
    *(ast.AsyncFunctionDef, ast.ClassDef, ast.Yield, ast.YieldFrom, ast.Await, ast.Import, ast.ImportFrom),
)


def _changes_nothing_outside(func: cst.FunctionDef, file: FileContext) -> bool:
    """Whether the old hook's body changes nothing that outlives its call: it never names its ``self`` (no
    ``self.log``, no attribute set, no method of the module), binds local names only (no attribute or item
    assignment, no ``global``), and calls only :data:`PURE_BUILTINS`, the ``torch`` functions of
    :data:`PURE_TORCH` (``torch`` imported as itself) and the methods of :data:`PURE_METHODS` -- a body that
    computes a value and returns it, which Lightning 1.x dropped (``return {"val_loss": ..., "log": ...}``). A
    callback's epoch-end hook then has nothing of it to read, whichever of the two runs first."""
    text = cst.Module(body=[]).code_for_node(func.with_changes(decorators=()))
    tree = ast.parse(textwrap.dedent(text)).body[0]
    assert isinstance(tree, ast.FunctionDef | ast.AsyncFunctionDef)
    arguments = [a.arg for a in (*tree.args.posonlyargs, *tree.args.args)]
    if not arguments or tree.decorator_list:
        return False
    this = arguments[0]
    body = [node for statement in tree.body for node in ast.walk(statement)]
    bound = {n.id for n in body if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)} | set(arguments)
    for node in body:
        if isinstance(node, NOT_LOCAL) or (isinstance(node, ast.Name) and node.id == this):
            return False
        if isinstance(node, ast.Attribute | ast.Subscript) and not isinstance(node.ctx, ast.Load):
            return False  # `outputs[0]["x"] = ...`, `obj.count += 1`
        if isinstance(node, ast.Call):
            callee = node.func
            if isinstance(callee, ast.Name):
                pure = callee.id in PURE_BUILTINS and callee.id not in bound
            elif (
                isinstance(callee, ast.Attribute)
                and isinstance(callee.value, ast.Name)
                and callee.value.id not in bound
            ):
                module = file.info.imports.get(callee.value.id)
                pure = callee.attr in (PURE_TORCH if module == "torch" else PURE_METHODS if module is None else ())
            else:
                pure = isinstance(callee, ast.Attribute) and callee.attr in PURE_METHODS
            if not pure:
                return False
    return True


#: A strategy under which 1.9.5 turned ``return_predictions=None`` (the default) into ``False``: its spawning DDP
#: strategies (``DDPSpawnStrategy``, ``ddp_fork`` and ``ddp_notebook`` among them; 1.9.5's ``prediction_loop.py``).
SPAWNING = re.compile(rb"spawn|ddp_fork|ddp_notebook|DDPSpawn", re.IGNORECASE)


def _predictions_may_be_off(file: FileContext) -> str | None:
    """The name of a checked file (this one included) that may run ``Trainer.predict`` with
    ``return_predictions=False``, under which 1.x passed empty lists: a ``return_predictions`` keyword that is not
    the literal ``True``, a ``.predict(...)`` call with four positional arguments (the fourth is it), a spawning
    strategy (:data:`SPAWNING`), or ``return_predictions`` in a file that does not parse; ``None`` otherwise. Asked
    once per file (:attr:`FileContext.memo`)."""
    if ("predictions",) not in file.memo:
        file.memo[("predictions",)] = _find_predictions_off(file)
    return file.memo[("predictions",)]


def _find_predictions_off(file: FileContext) -> str | None:
    project = file.project
    sources: list[tuple[str, bytes, ast.Module | None]] = [
        (file.path.name if file.path else "<source>", file.source, file.tree)
    ]
    for path in project.name_of:
        if path != file.path:
            data = project.read(path)
            if b"predict" in data or SPAWNING.search(data):
                try:
                    tree: ast.Module | None = ast.parse(data)
                except (SyntaxError, ValueError, RecursionError):
                    tree = None
                sources.append((path.name, data, tree))
    for where, data, tree in sources:
        if SPAWNING.search(data):
            return where
        if tree is None:
            if b"return_predictions" in data:
                return where
            continue
        for node in nodes_of(tree):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and node.func.attr == "predict" and len(node.args) >= 4:
                return where
            for keyword in node.keywords:
                if keyword.arg == "return_predictions" and not (
                    isinstance(keyword.value, ast.Constant) and keyword.value.value is True
                ):
                    return where
    return None


#: Calls that reach what a name is bound to without naming it.
INDIRECT = frozenset({"getattr", "vars", "eval", "exec", "globals", "locals"})


def callback_reading(func: cst.FunctionDef, file: FileContext, new_hook: str, stage: str) -> tuple[str, str] | None:
    """The first callback of the checked files whose ``new_hook`` may read what the body of ``func`` (a module's
    old epoch-end method) does at that epoch end, as ``(file name, class name)``: ``None`` when the body changes
    nothing another object could read (:func:`_changes_nothing_outside`) or no callback may read it
    (:func:`_readers`)."""
    if _changes_nothing_outside(func, file):
        return None
    return next(iter(_readers(file, new_hook, stage)), None)


def callback_may_read_module(ctx: ClassContext, hook: str) -> bool:
    """Whether the callback ``ctx``'s own method ``hook`` may read the module or the trainer (:func:`_reads_nothing`
    says no); ``True`` when its definition cannot be found in the file's tree."""
    for node in nodes_of(ctx.file.tree):
        if isinstance(node, ast.ClassDef) and node.name == ctx.name:
            own = [i for i in node.body if isinstance(i, ast.FunctionDef | ast.AsyncFunctionDef) and i.name == hook]
            if own:
                return not _reads_nothing(own[-1], node, _shared_globals(ctx.file.tree, ctx.file.project.by_name))
    return True


def module_defining(file: FileContext, hooks: frozenset[str]) -> tuple[str, str] | None:
    """A class of the checked files that is or may be a ``LightningModule`` (its base unresolved) and defines one
    of ``hooks`` (its own, or a project base's), as ``(file name, class name)``; ``("", "")`` when the checked
    files define no module at all (it is elsewhere, and may define them); ``None`` when every module of the checked
    files is known not to define them. Read from each file's resolved names (:class:`ModuleInfo`), no file parsed
    again; asked once per file and set of hooks (:attr:`FileContext.memo`)."""
    key = ("module defining", hooks)
    if key in file.memo:
        return file.memo[key]
    project = file.project
    infos: list[tuple[str, ModuleInfo | None]] = [(file.path.name if file.path else "<source>", file.info)]
    infos += [(path.name, project.info(path)) for path in project.name_of if path != file.path]
    found: tuple[str, str] | None = None
    modules = 0
    for where, info in infos:
        if info is None:
            continue
        for name, bases in info.classes.items():
            kind = project.classify(info, bases)
            if kind.kind != MODULE and not (kind.kind is None and kind.unknown):
                continue
            modules += kind.kind == MODULE
            own = set(info.methods.get(name, set()))
            for base_info, base in project.ancestors(info, bases):
                own |= base_info.methods.get(base, set())
            if found is None and own & hooks:
                found = (where, name)
    file.memo[key] = found if found is not None or modules else ("", "")
    return file.memo[key]


def _readers(file: FileContext, hook: str, stage: str) -> list[tuple[str, str]]:
    """The callbacks of the checked files (this file included, a notebook's cells too) whose ``hook``
    (``on_validation_epoch_end``) may read what the module did at that epoch end, as ``(file name, class name)``.

    Every callback that defines the hook is one, unless its ``def`` provably reads nothing of the module
    (:func:`_reads_nothing`): a callback reducing its own cache, as the callback-side recipe does. A hook bound by
    assignment or inherited from a class of the project, a ``LambdaCallback(<hook>=...)``, and a file that does not
    parse but names the hook count as readers. At a training epoch's end a checkpoint or early-stopping subclass
    (:data:`lightning_migrate.registry.MONITORING_CALLBACKS`) does not. Asked once per file
    (:attr:`FileContext.memo`)."""
    key = ("readers", hook, stage)
    if key not in file.memo:
        file.memo[key] = _find_readers(file, hook, stage)
    return file.memo[key]


def _find_readers(file: FileContext, hook: str, stage: str) -> list[tuple[str, str]]:
    project = file.project
    sources: list[tuple[str, ast.Module | None, ModuleInfo | None]] = [
        (file.path.name if file.path else "<source>", file.tree, file.info)
    ]
    needle = re.compile(rb"\b" + re.escape(hook.encode()) + rb"\b")
    for path in project.name_of:
        if path == file.path or not needle.search(project.read(path)):
            continue
        info = project.info(path)
        try:
            tree = ast.parse(project.read(path)) if info is not None else None
        except (SyntaxError, ValueError, RecursionError):
            tree = None
        sources.append((path.name, tree, info))
    found: list[tuple[str, str]] = []
    for where, tree, info in sources:
        if tree is None or info is None:
            found.append((where, "<a class of a file that does not parse>"))
            continue
        shared = _shared_globals(tree, project.by_name)
        listed = _listed_callbacks(tree)
        for node in nodes_of(tree):
            if isinstance(node, ast.Call) and any(k.arg == hook for k in node.keywords):
                found.append((where, dotted(node.func) or "<a callback made by a call>"))
            if (listed[0] or listed[1]) and isinstance(node, ast.Call | ast.Assign):
                found += [(where, name) for name in _other_packages_callbacks(node, project, info, listed)]
            if isinstance(node, ast.Call) and (name := dotted(node.func)):
                # Lightning's own callback, made here (ModelPruning(...)); a progress bar only prints
                made = project.classify(info, [name])
                if (
                    made.kind == CALLBACK
                    and made.via is not None
                    and hook in hook_names.load()["classes"].get(made.via, ())
                    and not (stage == "train" and made.via in registry.MONITORING_CALLBACKS)
                    and made.via not in registry.DISPLAY_CALLBACKS
                ):
                    found.append((where, name))
            if not isinstance(node, ast.ClassDef):
                continue
            kind = project.classify(info, [dotted(base) for base in node.bases])
            own = next(
                (i for i in node.body if isinstance(i, ast.FunctionDef | ast.AsyncFunctionDef) and i.name == hook), None
            )
            if kind.kind is None and kind.unknown and own is not None and len(own.args.args) >= 3:
                # a base the check cannot resolve (another package's) may be a Callback: a hook of the callback's
                # signature (self, trainer, module) counts
                if not _reads_nothing(own, node, shared):
                    found.append((where, node.name))
                continue
            if kind.kind != CALLBACK or (stage == "train" and kind.via in registry.MONITORING_CALLBACKS):
                continue
            inherited = any(
                hook in a.methods.get(c, set()) for a, c in project.ancestors(info, info.classes.get(node.name, []))
            )
            if own is None and (hook in class_body_names(node) or inherited):
                found.append((where, node.name))  # bound by assignment, or a project base's hook
            elif own is not None and not _reads_nothing(own, node, shared):
                found.append((where, node.name))
    return list(dict.fromkeys(found))


def _listed_callbacks(tree: ast.Module) -> tuple[set[int], set[str]]:
    """What a ``callbacks=[...]`` (or ``(...)``) argument of a call lists in ``tree``: the ids of the calls made in
    it, and the names it lists."""
    calls, names = set(), set()
    for node in nodes_of(tree):
        if not isinstance(node, ast.Call):
            continue
        for value in (k.value for k in node.keywords if k.arg == "callbacks"):
            for item in value.elts if isinstance(value, ast.List | ast.Tuple) else []:
                if isinstance(item, ast.Call):
                    calls.add(id(item))
                elif isinstance(item, ast.Name):
                    names.add(item.id)
    return calls, names


def _other_packages_callbacks(
    node: ast.AST, project: Project, info: ModuleInfo, listed: tuple[set[int], set[str]]
) -> list[str]:
    """The class ``node`` makes, when it is a callback of another package than Lightning and the project (a class
    whose base the check cannot resolve) made in a ``callbacks=`` list, or assigned to a name that one lists: its
    hooks are in no checked file, so it may read the module."""
    calls, names = listed
    made = None
    if isinstance(node, ast.Call) and id(node) in calls:
        made = node
    elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
        if any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
            made = node.value
    name = dotted(made.func) if made is not None else None
    if name is None:
        return []
    kind = project.classify(info, [name])
    return [name] if kind.kind is None and kind.unknown else []


def _shared_globals(tree: ast.Module, project_modules: Mapping[str, Path]) -> set[str]:
    """The module-level names of ``tree`` that may hold state another object writes: a name bound by an assignment
    whose value is not an immutable literal (``STATE = {}``, ``MODEL = None`` rebound under ``global``), a name of
    a ``global`` statement, and a name imported from a module of the project (``project_modules``: its dotted
    names; a relative import too) -- what a module's hook may write and a callback's read, with neither naming the
    other."""
    shared = {name for node in nodes_of(tree) if isinstance(node, ast.Global) for name in node.names}
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if not _immutable_literal(statement.value):
                shared |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(statement, ast.ImportFrom):
            if statement.level or (statement.module or "") in project_modules:
                shared |= {alias.asname or alias.name for alias in statement.names}
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.name in project_modules:
                    shared.add(alias.asname or alias.name.partition(".")[0])
    return shared - {"*"}


def _immutable_literal(value: ast.expr) -> bool:
    """A number, string, bytes, bool or tuple of them (a sign before a number too): a value no code can change in
    place."""
    if isinstance(value, ast.Constant):
        return value.value is not None
    if isinstance(value, ast.UnaryOp):
        return _immutable_literal(value.operand)
    return isinstance(value, ast.Tuple) and all(_immutable_literal(item) for item in value.elts)


def _reads_nothing(hook: ast.FunctionDef | ast.AsyncFunctionDef, owner: ast.ClassDef, shared: set[str]) -> bool:
    """Whether a callback's epoch-end ``hook`` cannot read the module: it never uses its ``trainer`` or module
    parameter (nor ``*args`` / ``**kwargs``), a name of ``shared`` (:func:`_shared_globals`), calls no method of
    ``self`` (which could) and nothing in :data:`INDIRECT`; no hook of its class keeps its trainer or module in an
    attribute of ``self``, and it reads into no attribute of ``self`` that a method of its class set from one of
    its parameters (``self.model.best``, the module handed to ``__init__``)."""
    params = [a.arg for a in (*hook.args.posonlyargs, *hook.args.args)]
    if hook.args.vararg is not None or hook.args.kwarg is not None:
        return False
    names = {n.id for n in ast.walk(hook) if isinstance(n, ast.Name)}
    if names & {*params[1:3], *INDIRECT, *shared}:
        return False
    if params and _reads_into(hook, params[0]) & _from_parameters(owner, hook):
        return False
    for call in ast.walk(hook):
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
        ):
            if params and call.func.value.id == params[0]:
                return False  # self.report(...): a method of the callback, which may read the module
    for item in owner.body:
        if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) or item is hook:
            continue
        kept = {a.arg for a in (*item.args.posonlyargs, *item.args.args)[1:3]}
        for node in ast.walk(item):
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                to_self = any(isinstance(t, ast.Attribute | ast.Subscript) for t in targets)
                if to_self and kept & {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}:
                    return False  # self.module = pl_module, self.refs["model"] = pl_module: read later through self
            if isinstance(node, ast.Call):
                handed = [*node.args, *(k.value for k in node.keywords)]
                if any(isinstance(a, ast.Name) and a.id in kept for a in handed):
                    return False  # self.modules.append(pl_module): kept by a call, read later
    return True


def _reads_into(hook: ast.FunctionDef | ast.AsyncFunctionDef, this: str) -> set[str]:
    """The attributes of ``this`` (``self``) that ``hook`` reads into: ``self.model.best``, ``self.model[0]``."""
    found = set()
    for node in ast.walk(hook):
        inner = node.value if isinstance(node, ast.Attribute | ast.Subscript) else None
        if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == this:
            found.add(inner.attr)
    return found


def _from_parameters(owner: ast.ClassDef, hook: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The attributes of ``self`` that a method of ``owner`` other than ``hook`` sets from one of its parameters,
    any kind (``def __init__(self, *, model): self.model = model``)."""
    found = set()
    for item in owner.body:
        if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) or item is hook:
            continue
        arguments = item.args
        given = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs][1:]
        given += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        names = {a.arg for a in given}
        for node in ast.walk(item):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if names & {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}:
                    found |= {t.attr for t in targets if isinstance(t, ast.Attribute)}
    return found


def shape_of(pattern_id: str, per_dataloader: bool, whole_loss: bool, evaluation_step: bool = False) -> str:
    """The shape a caching rewrite writes: the registry pattern it rewrites, ``/per-dataloader`` when it keeps one
    list per dataloader, ``/whole-loss`` when it multiplies the loss back, ``/step`` when an evaluation module caches
    in its own step instead of its batch-end hook (:mod:`..proven` says which are proven)."""
    return (
        pattern_id
        + ("/per-dataloader" if per_dataloader else "")
        + ("/whole-loss" if whole_loss else "")
        + ("/step" if evaluation_step else "")
    )


def _step_end_changes_outputs(ctx: ClassContext, step_end: str) -> str | None:
    """Why the outputs 1.x collected may differ from what the step returns: a step-end hook of the class (or of a
    base of the project) that does more than hand its input on. ``None`` when there is none, or it returns its
    input unchanged (after logging, say)."""
    func = ctx.methods.get(step_end)
    if func is None:
        file = ctx.file
        for base_info, base in file.project.ancestors(file.info, file.info.classes.get(ctx.name, [])):
            if step_end in base_info.methods.get(base, set()):
                return f"base class `{base}` defines `{step_end}`, and the rewrite is made for a module without one"
        return None
    params = positional(func)
    if len(params) != 2 or not plain_signature(func):
        return f"`{step_end}` reshapes each step's output, and the rewrite caches what the step returns"
    name = params[1].name.value
    returns = _Returns()
    func.body.visit(returns)
    if returns.values and all(isinstance(v, cst.Name) and v.value == name for v in returns.values):
        if name not in _bound_names(func) and _only_read(func, name, len(returns.values)):
            return None
    return f"`{step_end}` reshapes each step's output, and the rewrite caches what the step returns"


#: Calls that read their arguments and change none: a step-end hook may hand them its input (``self.log("loss",
#: out["loss"])``) and still hand the input on unchanged.
_READING_CALLS = frozenset({"self.log", "self.log_dict", "print"})


class _Mentions(cst.CSTVisitor):
    """How often a function's body names ``name``, and how often as an argument of a reading call
    (:data:`_READING_CALLS`), itself or one item of it (``out`` or ``out["loss"]``)."""

    def __init__(self, name: str) -> None:
        self.name, self.all, self.read = name, 0, 0

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.all += 1

    def visit_Call(self, node: cst.Call) -> None:
        callee = cst.Module([]).code_for_node(node.func)
        if callee not in _READING_CALLS:
            return
        for arg in node.args:
            value = arg.value
            if isinstance(value, cst.Subscript) and not any(self.name in names_in(item) for item in value.slice):
                value = value.value
            if isinstance(value, cst.Name) and value.value == self.name:
                self.read += 1


def _only_read(func: cst.FunctionDef, name: str, returns: int) -> bool:
    """Whether the body of ``func`` names ``name`` only to return it (``returns`` times) and to hand it, or one item
    of it, to a reading call: anything else (``out["seen"] = True``, ``out.update(...)``, ``f(out)``) may change
    the output the step returned, which 1.x collected changed."""
    mentions = _Mentions(name)
    func.body.visit(mentions)
    return mentions.all == returns + mentions.read


class _Returns(cst.CSTVisitor):
    """The values of a function's ``return`` statements (nested scopes left out)."""

    def __init__(self) -> None:
        self.values: list[cst.BaseExpression | None] = []

    def visit_Return(self, node: cst.Return) -> None:
        self.values.append(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def _names(node: cst.CSTNode) -> list[cst.Name]:
    if isinstance(node, cst.Name):
        return [node]
    if isinstance(node, cst.Tuple | cst.List):
        return [n for element in node.elements for n in _names(element.value)]
    return []


class _Spec:
    """One rewrite: what to write, and :meth:`apply` to write it into the class node."""

    def __init__(self, kind, stage, outputs, old_hook, new_hook, batch_end, cache, per_dataloader, whole_loss, start):
        self.kind, self.stage, self.outputs, self.old_hook, self.new_hook = kind, stage, outputs, old_hook, new_hook
        self.batch_end, self.cache, self.per_dataloader, self.whole_loss = batch_end, cache, per_dataloader, whole_loss
        self.start_hook = start
        self.batch_hook = (batch_end.new_signature or "").partition("(")[0]
        #: the step a module's rewrite caches in (``training_step``); ``None``: the batch-end hook does
        self.step: str | None = None
        #: an evaluation step's dataloader index, as the step names it (its ``dataloader_idx`` parameter), or ``0``
        self.loader = "0"

    def init_line(self) -> str:
        if self.per_dataloader:
            return f"self.{self.cache} = defaultdict(list)  # dataloader_idx -> what its batches returned\n"
        each = "step" if self.step is not None else "batch"
        return f"self.{self.cache} = []  # what each {each} returned, until the epoch ends\n"

    def append_lines(self, existing: cst.FunctionDef | None) -> str:
        """The ``if``/append statement of the batch-end hook (with the parameter names of the class's own
        batch-end hook when it has one)."""
        params = new_params(self.batch_end.id)
        if existing is not None:
            params = [p.name.value for p in positional(existing)]
        at = expected_count(self.kind, 1)
        outputs, loader = params[at], (params[at + 3] if len(params) > at + 3 else "0")
        target = f"self.{self.cache}[{loader}]" if self.per_dataloader else f"self.{self.cache}"
        if self.stage == "train" and self.whole_loss:
            trainer = params[1] if self.kind == CALLBACK else "self.trainer"
            taken = set(params) | (names_in(existing) if existing is not None else set())
            kept = _free_name(("cached", "cached_output"), taken)
            return (
                f"if {outputs}:  # as in the old outputs: no None\n"
                f"    {kept} = recursive_detach({outputs})\n"
                f'    if "loss" in {kept}:  # the loss whole, as in the old outputs\n'
                f'        {kept}["loss"] = {kept}["loss"] * {trainer}.accumulate_grad_batches\n'
                f"    {target}.append({kept})\n"
            )
        if self.stage == "train":
            test = f"if {outputs}:  # as in the old outputs: no None\n"
            return test + f"    {target}.append(recursive_detach({outputs}))\n"
        if self.stage == "predict":
            return f"{target}.append({outputs})  # as in the old outputs: None included\n"
        test = f"if {outputs} is not None:  # as in the old outputs: no None\n"
        return test + f"    {target}.append({outputs})\n"

    def step_lines(self, value: str, known_dict: bool, entry: str = "entry") -> str:
        """The statements before ``return <value>`` in the step: put what Lightning 1.x kept of the step's output
        in the step's entry (:meth:`placeholder_line`) -- a dict (a bare loss became ``{"loss": loss}``), detached,
        nothing for ``None``. ``known_dict``:
        ``value`` holds a dict display, never ``None``; ``entry``: a name the step does not use. The loss is divided
        at epoch end (:meth:`take_lines`), where the trainer is attached."""
        cache = f"self.{self.cache}"
        if self.stage != "train":  # what the evaluation step returns, as it returns it (1.x left out None)
            append = f"{cache}[{self.loader}].append({value})\n"
            return append if known_dict else f"if {value} is not None:  # as in the old outputs: no None\n    {append}"
        if known_dict:
            return f"{cache}[-1] = recursive_detach({value})\n"
        return (
            f"if {value} is not None:  # as in the old outputs: no None\n"
            f'    {entry} = {value} if isinstance({value}, dict) else {{"loss": {value}}}'
            "  # as in the old outputs: a dict\n"
            f"    {cache}[-1] = recursive_detach({entry})\n"
        )

    def placeholder_line(self) -> str:
        """The step's first line: an entry for this step, ``None`` until it returns a value (:meth:`step_lines`), so
        the epoch-end hook tells an epoch in which no step ran."""
        return f"self.{self.cache}.append(None)  # this step's entry, None until it returns a value\n"

    def step_wrapper(self) -> str:
        """A step of the class's own that calls the inherited one and caches its output (the class had none)."""
        return (
            f"def {self.step}(self, *args, **kwargs):\n"
            f"    {self.placeholder_line()}"
            f"    output = super().{self.step}(*args, **kwargs)\n"
            + "".join("    " + line for line in self.step_lines("output", False).splitlines(keepends=True))
            + "    return output\n"
        )

    def take_lines(self, every_output_a_dict: bool = False) -> list[str]:
        """The statements that open the epoch-end hook: the old ``outputs``, taken from the cache, which is
        cleared. With a step that caches (:attr:`step`): the empty outputs left out (unless ``every_output_a_dict``:
        every ``return`` of the step returns a dict display) and the loss divided by ``accumulate_grad_batches``
        under automatic optimization, as Lightning 1.5-1.9 did (whole before, :attr:`whole_loss`)."""
        outputs, cache = self.outputs, f"self.{self.cache}"
        if self.step is not None and self.stage == "train":
            whole = "  # the loss whole, as in the old list" if self.whole_loss else ""
            # the old hook of 1.5 and later (training_epoch_end) was skipped in an epoch in which no step ran; the 1.4
            # hook with outputs (whole_loss) got an empty list: the equivalence runs' epoch_without_batches
            skip = f"if not {cache}:  # no step ran this epoch\n    return\n"
            lines = [] if self.whole_loss else [skip]
            if every_output_a_dict:
                lines.append(f"{outputs} = [out for out in {cache} if out is not None]{whole}\n")
            else:
                lines.append(f"{outputs} = [out for out in {cache} if out]  # as in the old outputs: no empty ones\n")
            if not self.whole_loss:
                lines.append(
                    "if self.automatic_optimization:  # the loss divided by accumulate_grad_batches, "
                    "as in the old outputs\n"
                    f'    {outputs} = [{{**out, "loss": out["loss"] / self.trainer.accumulate_grad_batches}} '
                    f"for out in {outputs}]\n"
                )
            return [*lines, f"{cache}.clear()\n"]
        if not self.per_dataloader:
            return [f"{outputs} = list({cache})\n", f"{cache}.clear()\n"]
        trainer = "trainer" if self.kind == CALLBACK else "self.trainer"
        count = f"len({trainer}.{NUM_BATCHES[self.stage]})"
        lines = [
            "# one list per dataloader, as in the old outputs\n",
            f"{outputs} = [{cache}[idx] for idx in range({count})]\n",
        ]
        if self.stage != "predict":  # 1.x passed a single dataloader's list on its own
            lines.append(f"if len({outputs}) == 1:\n    {outputs} = {outputs}[0]\n")
        return [*lines, f"{cache}.clear()\n"]

    def apply(self, class_node: cst.CSTNode) -> cst.CSTNode:
        if not isinstance(class_node, cst.ClassDef) or not isinstance(class_node.body, cst.IndentedBlock):
            return class_node  # pragma: no cover - the rule found the hook in this class's block
        body: list[cst.BaseStatement] = list(class_node.body.body)

        def method(name: str) -> tuple[int, cst.FunctionDef] | None:
            """The class's ``def name``: the last one, which the class keeps (as :attr:`ClassContext.methods` does)."""
            found = [(i, s) for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == name]
            return found[-1] if found else None

        old = method(self.old_hook)
        if old is None:  # pragma: no cover - the rule found the hook in this class
            return class_node
        init_line = _statement(self.init_line())
        init = method("__init__")
        if init is not None:
            body[init[0]] = _insert_in_init(init[1], init_line)
        else:
            body = _with_new_init(body, init_line)
        every_output_a_dict = False
        step = method(self.step) if self.step is not None else None
        if step is not None:
            cached, every_output_a_dict = _cache_before_returns(step[1], self)
            if self.stage == "train":  # an entry per step, to tell an epoch in which no step ran
                cached = _prepend(cached, _statements([self.placeholder_line()]))
            body[step[0]] = cached
        old = method(self.old_hook)
        assert old is not None  # the edits above add and change other methods only
        hook = drop_params(old[1], {self.outputs}).with_changes(name=cst.Name(self.new_hook))
        body[old[0]] = _prepend(hook, _statements(self.take_lines(every_output_a_dict)))
        clear = f"self.{self.cache}.clear()  # nothing left over from a run that stopped half-way\n"
        params = "self, trainer, pl_module" if self.kind == CALLBACK else "self"
        added: list[tuple[str, list[str] | None, str]] = [
            (self.start_hook, [clear], f"def {self.start_hook}({params}):\n")
        ]
        if self.step is None:
            added.append((self.batch_hook, None, f"def {self.batch_end.new_signature}:\n"))
        elif step is None:
            added.append((self.step, [self.step_wrapper()], ""))
        for name, lines, header in added:
            existing = method(name)
            if existing is not None:
                at, func = existing
                body[at] = _prepend(func, _statements(lines or [self.append_lines(func)]))
                continue
            if not header:  # a whole method
                text = "".join(lines or [])
            else:
                text = header + "".join(
                    "    " + line for line in "".join(lines or [self.append_lines(None)]).splitlines(keepends=True)
                )
            end = method(self.new_hook)  # the new method goes right above the epoch-end hook
            assert end is not None  # renamed above
            body[end[0] : end[0] + 1] = _above(_statement(text), end[1])
        return class_node.with_changes(body=class_node.body.with_changes(body=body))


def _with_new_init(body: list[cst.BaseStatement], init_line: Statement) -> list[cst.BaseStatement]:
    """``body`` with an ``__init__`` that passes every argument on and creates the cache, before the first
    method (a pass-through keeps ``save_hyperparameters`` and every caller as they were)."""
    text = (
        "def __init__(self, *args, **kwargs):\n    super().__init__(*args, **kwargs)\n    "
        + cst.Module([init_line]).code
    )
    init = _statement(text)
    first = next((i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef)), None)
    if first is not None:
        method = body[first]
        assert isinstance(method, cst.FunctionDef)  # as found
        body = [*body[:first], *_above(init, method), *body[first + 1 :]]
    else:
        body = [*body, init.with_changes(leading_lines=[cst.EmptyLine(indent=False)])]
    return body


def _above(new: Statement, method: Statement) -> list[Statement]:
    """``[new, method]``: ``new`` goes where ``method`` began, taking the blank lines above it; the comments above
    ``method`` (from the first comment line on) stay with it, below one blank line."""
    lines = list(method.leading_lines)
    first_comment = next((i for i, line in enumerate(lines) if line.comment is not None), len(lines))
    return [
        new.with_changes(leading_lines=lines[:first_comment]),
        method.with_changes(leading_lines=[cst.EmptyLine(indent=False), *lines[first_comment:]]),
    ]


def _statements(lines: list[str]) -> list[Statement]:
    """The statements of ``lines`` of code, a comment line kept above the statement it precedes."""
    return list(_parsed("".join(lines)))


@functools.lru_cache(maxsize=1024)
def _parsed(text: str) -> tuple[Statement, ...]:
    """The statements of ``text``, parsed once: libcst nodes are immutable, so one parse serves every class a
    file's rewrites write the same code into."""
    return tuple(cst.parse_module("pass\n" + text).body[1:])


def _statement(text: str) -> Statement:
    [statement] = _parsed(text)
    return statement


def _indented(func: cst.FunctionDef) -> cst.FunctionDef:
    """``func`` with its body as an indented block: a one-line body (``def f(self): print(1)``, a
    ``SimpleStatementSuite``) becomes the block's one line, its statements, semicolons and comment kept."""
    return func if isinstance(func.body, cst.IndentedBlock) else func.with_changes(body=_block(func))


def _block(func: cst.FunctionDef) -> cst.IndentedBlock:
    """The body of ``func`` as an indented block (see :func:`_indented`)."""
    suite = func.body
    if isinstance(suite, cst.SimpleStatementSuite):
        line = cst.SimpleStatementLine(body=suite.body, trailing_whitespace=suite.trailing_whitespace)
        return cst.IndentedBlock(body=[line])
    if not isinstance(suite, cst.IndentedBlock):  # pragma: no cover - libcst's suites are these two
        raise TypeError(f"a function body of type {type(suite).__name__}")
    return suite


def _prepend(func: cst.FunctionDef, statements: Sequence[cst.BaseStatement]) -> cst.FunctionDef:
    """``func`` with ``statements`` first in its body (after its docstring)."""
    block = _block(func)
    body = list(block.body)
    start = 1 if body and is_docstring(body[0]) else 0
    return func.with_changes(body=block.with_changes(body=[*body[:start], *statements, *body[start:]]))


def _insert_in_init(init: cst.FunctionDef, line: cst.BaseStatement) -> cst.FunctionDef:
    """``__init__`` with ``line`` right after its ``super().__init__(...)`` (or ``Base.__init__(self, ...)``), or
    first in its body (after its docstring) when it calls none."""
    block = _block(init)
    body = list(block.body)
    index = next((i + 1 for i, s in enumerate(body) if _calls_init(s)), None)
    if index is None:
        index = 1 if body and is_docstring(body[0]) else 0
    return init.with_changes(body=block.with_changes(body=[*body[:index], line, *body[index:]]))


def _calls_init(statement: cst.BaseStatement) -> bool:
    """Whether the line calls an ``__init__`` (``super().__init__()``; ``super().__init__(); self.a = 1`` too)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return any(
        isinstance(expr, cst.Expr)
        and isinstance(expr.value, cst.Call)
        and isinstance(expr.value.func, cst.Attribute)
        and expr.value.func.attr.value == "__init__"
        for expr in statement.body
    )


# -- the module's step: cache what it returns -------------------------------------------------------------------


def _is_none(value: cst.BaseExpression | None) -> bool:
    return value is None or (isinstance(value, cst.Name) and value.value == "None")


def _dict_display(value: cst.BaseExpression) -> bool:
    """A non-empty dict display without ``**``: a dict, never ``None`` nor empty, whatever it holds."""
    return (
        isinstance(value, cst.Dict)
        and bool(value.elements)
        and all(isinstance(element, cst.DictElement) for element in value.elements)
    )


class _StepReturns(cst.CSTVisitor):
    """The ``return`` statements of a step that return a value (nested functions and classes left out), and why
    code could not be added before one of them: inside a ``try`` (its ``except`` would catch what the added lines
    raise), on a line of several statements or of a compound statement, or a step that ``yield``s."""

    def __init__(self) -> None:
        self.values: list[cst.BaseExpression] = []
        self.problem: str | None = None
        self._try = 0
        self._suite = 0
        self._line: cst.SimpleStatementLine | None = None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Try(self, node: cst.Try) -> None:
        self._try += 1

    def leave_Try(self, original_node: cst.Try) -> None:
        self._try -= 1

    def visit_TryStar(self, node: cst.TryStar) -> None:
        self._try += 1

    def leave_TryStar(self, original_node: cst.TryStar) -> None:
        self._try -= 1

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._suite += 1

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite) -> None:
        self._suite -= 1

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._line = node

    def visit_Yield(self, node: cst.Yield) -> None:
        self.problem = self.problem or "is a generator"

    def visit_Return(self, node: cst.Return) -> None:
        if _is_none(node.value):
            return  # Lightning 1.x kept nothing of it: nothing to add
        assert node.value is not None
        self.values.append(node.value)
        if self._try:
            self.problem = self.problem or "returns inside a `try`: the added lines would run under its `except`"
        elif self._suite or (self._line is not None and len(self._line.body) > 1):
            self.problem = self.problem or (
                "returns on the line of a compound statement: put the `return` on a line of its own"
            )


class _CacheBeforeReturns(cst.CSTTransformer):
    """Adds :meth:`_Spec.step_lines` before each ``return`` of a value (not in a nested scope); a value other than
    a name is bound to ``name`` first, so it is computed once."""

    def __init__(self, spec: _Spec, name: str, entry: str) -> None:
        self.spec, self.name, self.entry = spec, name, entry

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        [small] = updated_node.body if len(updated_node.body) == 1 else [None]
        if not isinstance(small, cst.Return) or _is_none(small.value):
            return updated_node
        assert small.value is not None
        value = small.value
        added: list[cst.BaseStatement] = []
        if isinstance(value, cst.Name) and not value.lpar:
            name = value.value
        else:
            name = self.name
            target = cst.AssignTarget(cst.Name(name))
            added.append(cst.SimpleStatementLine([cst.Assign([target], _unparenthesized(value))]))
            small = small.with_changes(value=cst.Name(name))
        added += _statements([self.spec.step_lines(name, _dict_display(value), self.entry)])
        added[0] = added[0].with_changes(leading_lines=updated_node.leading_lines)
        return cst.FlattenSentinel([*added, updated_node.with_changes(body=[small], leading_lines=())])


def _free_name(preferred: tuple[str, ...], taken: set[str]) -> str:
    """The first of ``preferred``, then of ``<last>_1``, ``<last>_2``, ..., that is not in ``taken``."""
    numbered = (f"{preferred[-1]}_{n}" for n in range(1, len(taken) + 2))
    return next(name for name in (*preferred, *numbered) if name not in taken)


def _unparenthesized(value: cst.BaseExpression) -> cst.BaseExpression:
    """``value`` without the parentheses around it where the right side of an assignment reads the same without
    them: one line, no comment, not a ``:=`` nor a generator expression (which need them); else as written."""
    if not value.lpar or isinstance(value, cst.NamedExpr | cst.GeneratorExp):
        return value
    return value if "\n" in cst.Module([]).code_for_node(value) else value.with_changes(lpar=(), rpar=())


def _cache_before_returns(func: cst.FunctionDef, spec: _Spec) -> tuple[cst.FunctionDef, bool]:
    """The step ``func`` caching each value it returns, and whether every such value is a dict display."""
    func = _indented(func)  # `def training_step(self, batch, batch_idx): return loss` gets lines of its own
    returns = _StepReturns()
    func.body.visit(returns)
    taken = identifiers_in(func)
    name, entry = _free_name(("output", "step_output"), taken), _free_name(("entry", "cached", "cached_entry"), taken)
    body = func.body.visit(_CacheBeforeReturns(spec, name, entry))
    assert isinstance(body, cst.BaseSuite)
    return func.with_changes(body=body), bool(returns.values) and all(map(_dict_display, returns.values))


#: Optimizers that call the closure Lightning hands them more than once a step (``torch.optim.LBFGS``): each call
#: runs ``training_step``.
_CLOSURE_OPTIMIZERS = (b"LBFGS",)
#: An optimizer the project writes itself (``step(self, closure)``): read further (:func:`_calls_closure_again`) for
#: a SAM-style step that calls the closure, and so ``training_step``, several times a step.
_OWN_CLOSURE_STEP = re.compile(rb"\bdef\s+step\s*\(\s*self\s*,\s*closure\b")


def _subclass_defines(ctx: ClassContext, hook: str) -> bool:
    """Whether a class derived from the class of ``ctx`` defines ``hook``: in any file of the project, or, for a
    file outside one (a snippet given to ``check_source``, a notebook), in the file itself."""
    file = ctx.file
    if file.path is not None and file.path in file.project.name_of:
        return bool(file.project.subclasses_defining(file.info, ctx.name, hook))
    info = file.info
    key = ("same-file ancestors",)
    if key not in file.memo:  # each class's ancestors among the file's classes, once per file
        file.memo[key] = {
            name: {c for a, c in file.project.ancestors(info, info.classes[name]) if a.name == info.name}
            for name in info.methods
        }
    ancestors = file.memo[key]
    return any(hook in methods and ctx.name in ancestors[name] for name, methods in info.methods.items())


def _evaluation_step_refusal(ctx: ClassContext, stage: str) -> str | None:
    """Why an evaluation module's rewrite caches in its batch-end hook rather than in its step, as the site's recipe
    does; ``None`` when it caches in the step. The step must be the class's own (a step it inherits is code the
    rewrite does not edit) and take ``batch, batch_idx`` and at most ``dataloader_idx``; predictions stay in the
    batch-end hook (1.x kept a ``None`` a step returned by falling off its end), and so does a step that could not
    take the lines (:func:`_step_refusal`)."""
    name = registry.STEP_METHODS[stage]
    step = ctx.methods.get(name)
    if stage == "predict":
        return "predictions are cached where 1.x collected them, `None` included"
    if step is None:
        return f"the class inherits `{name}`"
    params = positional(step)
    if not plain_signature(step) or not 3 <= len(params) <= 4:
        return f"`{name}` takes other parameters than `batch, batch_idx, dataloader_idx`"
    if len(params) == 4:
        loader = params[3]
        if loader.default is not None and not (isinstance(loader.default, cst.Integer) and loader.default.value == "0"):
            # with one dataloader Lightning passes no index: the step would append under its default, not 0
            return f"`{name}`'s `{loader.name.value}` defaults to another index than 0"
        if loader.name.value in _bound_names(step):
            return f"`{name}` binds `{loader.name.value}` again: the index it appends under would not be the loader's"
    return _step_refusal(ctx, name)


class _Bindings(cst.CSTVisitor):
    """The names a function's body binds in its own scope: assignment, ``for``, ``with ... as``, ``:=``, ``except
    ... as``, ``import``, ``del``, ``global``/``nonlocal`` (nested functions and classes left out, but their names)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def _targets(self, node: cst.CSTNode | None) -> None:
        if node is not None:
            self.names |= {n.value for n in _names(node)}

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._targets(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._targets(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._targets(node.target)

    def visit_Global(self, node: cst.Global) -> None:
        self.names |= {item.name.value for item in node.names}

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.names |= {item.name.value for item in node.names}

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None and isinstance(node.name, cst.Name):
            self.names.add(node.name.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names.add(node.name.value)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.names.add(node.name.value)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _bound_names(func: cst.FunctionDef) -> set[str]:
    """The names the body of ``func`` binds (:class:`_Bindings`)."""
    visitor = _Bindings()
    func.body.visit(visitor)
    return visitor.names


def _loader_name(step: cst.FunctionDef) -> str:
    """The dataloader index of an evaluation step: its fourth parameter, or ``0`` (a step without one refuses a
    second dataloader)."""
    params = positional(step)
    return params[3].name.value if len(params) > 3 else "0"


def _step_refusal(ctx: ClassContext, name: str) -> str | None:
    """Why a module's step ``name`` cannot cache what it returns while keeping what it returns and computes, or
    ``None``. The optimizer's closure is read for ``training_step`` only."""
    file = ctx.file
    step = ctx.methods.get(name)
    if step is not None:
        if step.decorators:
            return f"`{name}` is decorated: a decorator may change what it returns"
        if step.asynchronous is not None:
            return f"`{name}` is `async def`"
        params = positional(step)
        if not params or params[0].name.value != "self":
            return f"`{name}` does not take `self` first"
        returns = _StepReturns()
        _indented(step).body.visit(returns)
        if returns.problem:
            return f"`{name}` {returns.problem}"
        if not returns.values:
            return f"`{name}` returns nothing: the rewrite would cache nothing"
    else:
        why = _inherited_step_refusal(ctx, name)
        if why:
            return why
    where = _step_caller(ctx, name)
    if where:
        return f"{where}: what it returns there would be cached too"
    if name != registry.STEP_METHODS["train"]:
        return None
    sources = [file.source]
    if file.path is not None and file.path in file.project.name_of:
        sources += [file.project.read(p) for p in file.project.name_of if p != file.path]
    for optimizer in _CLOSURE_OPTIMIZERS:
        if any(optimizer in data for data in sources):
            return (
                f"an optimizer that calls its closure several times a step ({optimizer.decode()}) runs `{name}` "
                "more than once a batch"
            )
    key = ("optimizer calls its closure again",)
    if key not in file.memo:  # the same answer for every class of the file
        file.memo[key] = any(_OWN_CLOSURE_STEP.search(data) and _calls_closure_again(data) for data in sources)
    if file.memo[key]:
        return (
            f"an optimizer of the project's own calls the closure of its `step` more than once (or in a loop): "
            f"`{name}` runs more than once a batch"
        )
    return None


def _calls_closure_again(source: bytes) -> bool:
    """Whether a ``step(self, closure)`` of a class in ``source`` may call its closure more than once a step: two
    calls of it, or one in a loop (a SAM-style step); a file that does not parse counts as one that does."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True
    for node in nodes_of(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name != "step":
            continue
        params = [a.arg for a in node.args.args]
        if len(params) < 2 or params[1] != "closure":
            continue
        calls = [
            call
            for call in ast.walk(node)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "closure"
        ]
        looped = any(
            isinstance(loop, ast.For | ast.While | ast.AsyncFor) and any(c in calls for c in ast.walk(loop))
            for loop in ast.walk(node)
        )
        if len(calls) > 1 or looped:
            return True
    return False


def _inherited_step_refusal(ctx: ClassContext, name: str) -> str | None:
    """Why a step added to the class (``def training_step(self, *args, **kwargs)`` calling the inherited one) could
    fail where the inherited one did not: Lightning passes ``batch_idx`` to a step that takes ``*args``, so the
    inherited step must take it. ``None`` when the nearest class of the project that defines the step takes it, or
    the Lightning class the chain reaches defines it (recorded from the installed Lightning)."""
    file = ctx.file
    for base_info, base in file.project.ancestors(file.info, file.info.classes.get(ctx.name, [])):
        if name not in base_info.methods.get(base, set()):
            continue
        path = file.project.by_name.get(base_info.name)
        tree = file.tree
        if base_info is not file.info:
            tree = ast.parse(file.project.read(path)) if path else ast.Module(body=[], type_ignores=[])
        classes = [n for n in nodes_of(tree) if isinstance(n, ast.ClassDef) and n.name == base]
        defs = [f for c in classes for f in c.body if isinstance(f, ast.FunctionDef) and f.name == name]
        node = defs[-1] if defs else None
        if node is None or not (node.args.vararg or len(node.args.posonlyargs) + len(node.args.args) >= 3):
            return f"base class `{base}`'s `{name}` may not take `batch_idx`: cache in it by hand"
        return None
    if ctx.via is not None and name in hook_names.load()["classes"].get(ctx.via, ()):
        return None
    return f"no class of the checked files defines `{name}`"


def _step_caller(ctx: ClassContext, name: str) -> str | None:
    """Where code other than Lightning calls the step -- ``self.training_step(...)`` in ``validation_step`` -- in
    this file or the project, ``super().training_step`` inside the class's own step left out; or ``None``. The
    step's name as a string is not taken for a call: it is a common word in logs and docs (lightning-bolts names a
    histogram group ``"training_step"``), and a step called through ``getattr`` is a risk the fix states."""
    file = ctx.file
    first, last = ctx.spans.get(name, (0, -1))
    if file._mentioned((name,)):
        for use in file.uses().names.get(name, ()):
            if use.what == "string":
                continue
            if use.receiver == "super" and use.cls == ctx.name and first <= use.line <= last:
                continue  # the class's own step calls the inherited one
            if file._relevant(use, None, ctx, name):
                return f"`{name}` is used at {file.place(use.line)}"
    if file.path is None or file.path not in file.project.name_of:
        return None
    for ref in file.project.references(name, (), exclude=file.path):
        if ref.what == "string" or (ref.what in ("attribute", "name") and not file._relevant(ref, ref.path, ctx, name)):
            continue
        return f"`{name}` is used at {shown_path(ref.path, file.path) if ref.path is not None else '?'}:{ref.line}"
    return None
