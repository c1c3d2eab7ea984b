"""The rename of an old epoch-end method whose body never reads ``outputs``: ``validation_epoch_end(self, outputs)``
becomes ``on_validation_epoch_end(self)``, its body unchanged.

A rename keeps what the body does only where the new hook runs where the old method ran. Two measured differences
decide the tier:

* **The order beside the callbacks.** Lightning 1.x ran the module's old method before every callback's epoch-end
  hook of the same epoch end; the renamed hook runs after them (the ``*-outputs-lifetime`` observations of
  ``data/compat/1.9.5.json`` list the hook calls in order). Where a callback of the checked files defines that hook
  and may read the module, and the body changes something it could read (:func:`._caching.callback_reading`),
  the callback would read the epoch before's work: the rename is **unsafe**, and the marker names the callback.
* **An epoch that trains no batch.** 1.9.5 called ``training_epoch_end`` only when the epoch's outputs list was not
  empty -- one entry per batch that completed, whatever the step returned -- so it skipped the method in an epoch
  that completed no batch (``on_train_batch_start`` returning ``-1`` at the first, a run resumed after the epoch's
  last batch); ``on_train_epoch_end`` runs there (claim ``old-training-epoch-end-skipped-without-batches``). The
  rename of a ``training_epoch_end`` therefore counts the epoch's batches and returns at once when it counted none::

      def __init__(self, *args, **kwargs):
          super().__init__(*args, **kwargs)
          self.train_batches_this_epoch = 0  # the batches trained this epoch, counted in on_train_batch_end

      def on_train_epoch_start(self):
          self.train_batches_this_epoch = 0

      def on_train_batch_end(self, outputs, batch, batch_idx):
          self.train_batches_this_epoch += 1

      def on_train_epoch_end(self):
          if not self.train_batches_this_epoch:  # no batch was trained this epoch
              return
          ...  # the old body, unchanged

  Its shape, ``training-epoch-end/rename``, is **proven** by the row of the scenario matrix that runs
  ``data/rewrites/module_training_epoch_end_unread.py`` (:mod:`..proven`); it is **unsafe** where the count cannot
  be added as written (a hook bound otherwise than with a ``def``, defined by a base or a subclass, ``async``).

The rename of ``validation_epoch_end`` and ``test_epoch_end`` is **safe**: 1.9.5 called them at every epoch end of
their loop, as it called ``on_validation_epoch_end`` and ``on_test_epoch_end``. So is the rename of a
``training_epoch_end`` whose body does nothing at all (``pass``, a docstring, comments): running it in one more
epoch changes nothing, and no count is added.
"""

from __future__ import annotations

import re

import libcst as cst

from lightning_migrate import hook_names, registry
from lightning_migrate.checker import proven
from lightning_migrate.checker.base import MODULE, PROVEN, SAFE, UNSAFE, ClassContext, Fix, with_name
from lightning_migrate.checker.rules._caching import (
    BATCH_END,
    _above,
    _insert_in_init,
    _prepend,
    _statement,
    _statements,
    _subclass_defines,
    _with_new_init,
    callback_reading,
    epoch_start,
)

#: The module attribute the counted rename keeps the epoch's batch count in.
COUNTER = "train_batches_this_epoch"
#: The registry pattern whose rename is counted, and the shape the counted rename writes.
COUNTED = {"training-epoch-end": "training-epoch-end/rename"}
#: The module's batch-end hook of training (its 2.x signature), where the counted rename counts.
BATCH_END_SIGNATURE = BATCH_END[(MODULE, "train")].new_signature or ""
BATCH_HOOK = BATCH_END_SIGNATURE.partition("(")[0]
#: The epoch-start hook of training, where the counted rename resets the count.
START_HOOK = epoch_start((registry.get(next(iter(COUNTED))).new_signature or "").partition("(")[0], MODULE)


def rename_fix(ctx: ClassContext, func: cst.FunctionDef, pattern_id: str, new_hook: str, params: list[str]) -> Fix:
    """The fix of an old epoch-end method ``func`` (registry pattern ``pattern_id``) whose body reads none of
    ``params`` (its parameters after ``self``): a rename to ``new_hook`` -- ``safe``, ``proven`` (the counted rename
    of ``training_epoch_end``) or ``unsafe`` (see the module docstring)."""
    stage = registry.get(pattern_id).stage
    rename = with_name(new_hook, set(params))
    dropped = tuple(params)
    description = f"rename to {new_hook}(self)"
    reader = callback_reading(func, ctx.file, new_hook, stage)
    if reader is not None:
        where, name = reader
        why = (
            f"the project's callback `{name}` ({where}) defines `{new_hook}` and may read what this method does, in "
            "the other order after the rename"
        )
        return Fix(UNSAFE, rename, description=description, risk=why, withheld=why, dropped=dropped, new_name=new_hook)
    if pattern_id not in COUNTED or _empty(func):  # `pass` may run in one more epoch
        return Fix(SAFE, rename, description=description, dropped=dropped, new_name=new_hook)
    counted = _counted(ctx, func.name.value, new_hook, params, COUNTED[pattern_id])
    if isinstance(counted, Fix):
        return counted
    why = f"rename without the count of the epoch's batches that guards the renamed hook: {counted}"
    return Fix(UNSAFE, rename, description=description, risk=why, withheld=why, dropped=dropped, new_name=new_hook)


def count_refusal(ctx: ClassContext, new_hook: str) -> str | None:
    """Why the count of the epoch's batches (:func:`add_count`) cannot be added to the class of ``ctx``, whose
    ``new_hook`` (``on_train_epoch_end``) will read it, or ``None``: a hook bound otherwise than with a ``def``, an
    ``async`` one, the counter's name taken, or a base, Lightning's class or a subclass defining a hook the count
    would add over it."""
    hooks = (START_HOOK, BATCH_HOOK)
    for name in (*hooks, "__init__"):
        if name in ctx.bindings:
            return f"the class binds `{name}` at line {ctx.bindings[name]} other than with a `def`"
        method = ctx.methods.get(name)
        if method is not None and method.asynchronous is not None:
            return f"`{name}` is `async def`"
    if ctx.uses_attribute(COUNTER):
        return f"the class already uses `self.{COUNTER}`"
    file = ctx.file
    for base_info, base in file.project.ancestors(file.info, file.info.classes.get(ctx.name, [])):
        for name in hooks:
            if name not in ctx.methods and name in base_info.methods.get(base, set()):
                return f"base class `{base}` defines `{name}`"
        path = file.project.by_name.get(base_info.name)
        source = file.source if base_info.name == file.info.name else file.project.read(path) if path else b""
        if re.search(rb"\.\s*" + COUNTER.encode() + rb"\b", source):
            return f"base class `{base}`'s file uses `.{COUNTER}`"
    for name in hooks:
        if name not in ctx.methods and ctx.via is not None and name in hook_names.load()["classes"].get(ctx.via, ()):
            return f"Lightning's `{ctx.via}` defines `{name}`"
    for name in (*hooks, new_hook):
        if _subclass_defines(ctx, name):
            return f"a subclass defines `{name}` of its own"
    return None


def _method(body: list[cst.BaseStatement], name: str) -> int | None:
    """Where the class body defines ``name``: its last ``def``, the one Python binds."""
    found = [i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == name]
    return found[-1] if found else None


def this(func: cst.FunctionDef) -> str:
    """The name a method calls its object by (its first parameter: ``self`` as a rule)."""
    first = func.params.posonly_params[:1] or func.params.params[:1]
    return first[0].name.value if first else "self"


def add_count(body: list[cst.BaseStatement], new_hook: str) -> list[cst.BaseStatement]:
    """``body`` (a class body that defines ``new_hook``) with the count of the epoch's batches: reset in
    :data:`START_HOOK`, counted in :data:`BATCH_HOOK` -- at the head of the class's own hook, or in a new one right
    above ``new_hook`` -- and made in ``__init__`` (one is added when the class has none), as the caching rewrite
    makes its cache: a fit resumed from a checkpoint saved mid-epoch calls no ``START_HOOK`` for the epoch it resumes
    (the scenario matrix's ``resume-mid-epoch`` runs raised ``AttributeError`` without it)."""
    body = list(body)
    made = f"{{me}}.{COUNTER} = 0  # the batches trained this epoch, counted in {BATCH_HOOK}\n"
    init = _method(body, "__init__")
    if init is not None:
        func = body[init]
        assert isinstance(func, cst.FunctionDef)
        body[init] = _insert_in_init(func, _statement(made.format(me=this(func))))
    else:
        body = _with_new_init(body, _statement(made.format(me="self")))
    added = [
        (START_HOOK, f"{{me}}.{COUNTER} = 0\n", f"def {START_HOOK}(self):\n"),
        (BATCH_HOOK, f"{{me}}.{COUNTER} += 1\n", f"def {BATCH_END_SIGNATURE}:\n"),
    ]
    for name, line, header in added:
        existing = _method(body, name)
        if existing is not None:
            func = body[existing]
            assert isinstance(func, cst.FunctionDef)
            body[existing] = _prepend(func, _statements([line.format(me=this(func))]))
            continue
        end = _method(body, new_hook)  # the new method goes right above the epoch-end hook
        assert end is not None  # the caller's class defines it
        hook = body[end]
        assert isinstance(hook, cst.FunctionDef)
        body[end : end + 1] = _above(_statement(header + "    " + line.format(me="self")), hook)
    return body


def _empty(func: cst.FunctionDef) -> bool:
    """Whether the body does nothing at all: ``pass``, ``...`` or a docstring, comments around them (a body that
    computes a value could still raise, reading a global, in the epoch the old method was skipped)."""
    if isinstance(func.body, cst.SimpleStatementSuite):  # def ...: pass -- the small statements themselves
        smalls = list(func.body.body)
    else:
        lines = func.body.body
        if not all(isinstance(line, cst.SimpleStatementLine) for line in lines):
            return False
        smalls = [small for line in lines for small in cst.ensure_type(line, cst.SimpleStatementLine).body]
    return all(
        isinstance(small, cst.Pass)
        or (isinstance(small, cst.Expr) and isinstance(small.value, cst.Ellipsis | cst.SimpleString))
        for small in smalls
    )


def _counted(ctx: ClassContext, old_hook: str, new_hook: str, params: list[str], shape: str) -> Fix | str:
    """The counted rename of a module's ``training_epoch_end``, or why it is not made (a phrase for the marker)."""
    refusal = count_refusal(ctx, new_hook)
    if refusal is not None:
        return refusal

    def apply(class_node: cst.CSTNode) -> cst.CSTNode:
        if not isinstance(class_node, cst.ClassDef) or not isinstance(class_node.body, cst.IndentedBlock):
            return class_node  # pragma: no cover - the rule found the method in this class's block
        body: list[cst.BaseStatement] = list(class_node.body.body)
        at = _method(body, old_hook)
        if at is None:  # pragma: no cover - the rule found the method in this class
            return class_node
        old = body[at]
        assert isinstance(old, cst.FunctionDef)
        renamed = with_name(new_hook, set(params))(old)
        assert isinstance(renamed, cst.FunctionDef)
        skip = f"if not {this(old)}.{COUNTER}:  # no batch was trained this epoch\n    return\n"
        body[at] = _prepend(renamed, _statements([skip]))
        return class_node.with_changes(body=class_node.body.with_changes(body=add_count(body, new_hook)))

    return Fix(
        PROVEN if shape in proven.shapes() else UNSAFE,
        apply,
        on_class=True,
        description=f"rename to {new_hook}(self), counting the epoch's batches in self.{COUNTER}",
        risk=f"a subclass outside the checked files that overrides `{BATCH_HOOK}` without `super()` would count "
        "no batch, and the renamed hook would never run",
        withheld=f"the counted rename of `{old_hook}`, a shape no row of the scenario matrix proves",
        dropped=tuple(params),
        new_name=new_hook,
        shape=shape,
    )
