"""LM002: an epoch-end hook (``on_train_epoch_end`` and its kin) that declares parameters Lightning does not pass."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import libcst as cst

from lightning_migrate import registry
from lightning_migrate.checker.base import (
    CALLBACK,
    MODULE,
    SAFE,
    ClassContext,
    Finding,
    Fix,
    Rule,
    drop_params,
    expected_count,
    manual_fix,
    on_def,
    plain_signature,
    positional,
)
from lightning_migrate.checker.resolve import ModuleInfo
from lightning_migrate.checker.rules._caching import caching_fix
from lightning_migrate.checker.rules._common import by_hook, literal_list, new_hook, removed, signature

#: (hook, owner) -> registry pattern of the old shape; validation and test never took outputs in a release.
PATTERNS = by_hook(
    (
        "module-on-train-epoch-end-outputs",
        "callback-on-train-epoch-end-outputs",
        "module-on-predict-epoch-end-outputs",
        "callback-on-predict-epoch-end-outputs",
    )
)
#: every stage's epoch-end hook: the new hooks of the epoch-end patterns of the registry
HOOKS = frozenset(
    new_hook(pid)
    for pid in (
        "module-on-train-epoch-end-outputs",
        "validation-epoch-end",
        "test-epoch-end",
        "module-on-predict-epoch-end-outputs",
    )
)
#: the training epoch-end hook: the epoch-end hook whose calls the cited claims' probes record
_TRAIN_EPOCH_END = new_hook("module-on-train-epoch-end-outputs")
#: the patterns whose presence in a module made Lightning 1.3-1.4 collect training outputs for the callbacks
_TRACKING = (registry.get("training-epoch-end"), registry.get("module-on-train-epoch-end-outputs"))


class EpochEndParameters(Rule):
    code = "LM002"
    name = "epoch-end-parameters"
    title = "epoch-end hooks that take outputs, or another parameter without a default"
    hooks = HOOKS
    patterns = tuple(PATTERNS.values())
    summary = (
        f"{literal_list(sorted(HOOKS))} declaring a parameter beyond ``self`` on a ``{MODULE}``, or beyond "
        f"``self, trainer, pl_module`` on a ``{CALLBACK}`` -- such as the ``outputs`` of the registry's old "
        "signatures -- that has no default value. A parameter with a default (``unused=None``) is not a finding: "
        f"wherever the hook is called without it, the default stands in (for ``{_TRAIN_EPOCH_END}``: "
        ":claim:`epoch-end-hooks-called-without-outputs`). ``*args`` and ``**kwargs`` are accepted."
    )
    fix_text = (
        "**safe** when the body never reads the extra parameters and they are the last parameter of the registry's "
        f"old signature of the hook, under its name ({literal_list(sorted({hook for hook, _ in PATTERNS}))}): the "
        "fix drops them. Any other extra parameter is **manual**: a call with the old signature's parameters lacks "
        "it and raises before the body runs, so dropping it would make the body run where it did not run before. "
        f"How ``{_TRAIN_EPOCH_END}`` and the training batch hooks are called: :claim:`extra-parameters-never-passed`. "
        "**proven** (plain ``--fix``) when the "
        "body reads the old ``outputs`` and the rewrite's shape is "
        "proven (**unsafe**, opt-in with ``--unsafe-fixes``, where none does): on a module, module-side "
        "caching (as for LM001); on a callback, callback-side caching -- the callback's batch-end hook collects "
        f"each batch's ``outputs`` and the epoch-end hook takes and clears them. What the old hooks received: "
        ":claim:`old-outputs-on-1-4-9`; :claim:`old-list-loss-whole-then-divided`; and today "
        ":claim:`accumulation-divides-outputs-loss`: the rewrite multiplies it back, and it is offered where "
        "the project has such a module (the marker says so where not). **manual** otherwise: a marker comment says "
        "why; collect what you need in the batch-end hook (callback-side caching) or in the step (module-side "
        "caching)."
    )
    example = """\
from pytorch_lightning import Callback


class PrintEpoch(Callback):
    def on_train_epoch_end(self, trainer, pl_module, outputs):
        print("finished epoch", trainer.current_epoch)
"""

    def check(self, ctx: ClassContext, func: cst.FunctionDef):
        expected = expected_count(ctx.kind, 1)
        if len(positional(func)) < expected:
            return
        # Lightning calls the hook without the extra arguments: one with a default value works as it is.
        extra = [param.name.value for param in positional(func)[expected:] if param.default is None]
        extra += [param.name.value for param in func.params.kwonly_params if param.default is None]
        hook = func.name.value
        if not extra:
            defaulted = [p.name.value for p in [*positional(func)[expected:], *func.params.kwonly_params]]
            read = [name for name in defaulted if ctx.reads(func, name)]
            if read:  # it works, but the body reads a parameter beyond the hook's own: see the rule's page
                message = f"`{hook}` reads `{', '.join(read)}`, a parameter with a default beyond the hook's own"
                yield Finding(self.code, message, (), note=True)
            return
        pattern_id = PATTERNS.get((hook, ctx.kind))
        takes = "self" if ctx.kind == MODULE else "self, trainer, pl_module"
        message = f"`{hook}` takes `{', '.join(extra)}` beyond `{takes}`, without a default"
        if pattern_id is not None:
            message = removed(pattern_id, func)
        read = [name for name in extra if ctx.reads(func, name)]
        if not read and not _old_shape(func, expected, extra, pattern_id):
            fix = manual_fix(self.code, NEVER_CALLED_SO)
        elif not read:
            names = set(extra)
            if pattern_id is not None:  # the replacement's advice is for a body that reads them: this one does not
                gone = registry.get(pattern_id).removed_in
                message = f"`{signature(func)}` was removed in Lightning {gone}: the body never reads "
                message += f"`{', '.join(extra)}`; drop it"
            fix = Fix(
                SAFE,
                on_def(lambda node: drop_params(node, names)),
                description="drop " + ", ".join(extra),
                dropped=tuple(extra),
            )
        else:
            made: Fix | str = "no release passed it"
            if pattern_id is not None:
                why = self._why_not_cached(ctx, func, pattern_id)
                made = caching_fix(ctx, func, pattern_id, expected) if why is None else why
            fix = (
                made
                if isinstance(made, Fix)
                else manual_fix(self.code, f"the body reads {', '.join(read)}; no caching rewrite: {made}")
            )
        yield Finding(self.code, message, (pattern_id,) if pattern_id else (), fix=fix)

    def check_assigned(self, ctx: ClassContext, name: str, value: str | None = None):
        """A hook bound in the class body to a function of this file (``on_train_epoch_end = _print_epoch``) that
        takes a parameter without a default beyond the hook's: Lightning calls it without, and it raises."""
        func = _module_function(ctx, value) if value is not None else None
        if func is None:
            return
        params = [*func.args.posonlyargs, *func.args.args]
        if func.args.vararg is not None:
            return
        required = len(params) - len(func.args.defaults)
        expected = expected_count(ctx.kind, 1)
        extra = [p.arg for p in params[expected:required]]
        extra += [a.arg for a, d in zip(func.args.kwonlyargs, func.args.kw_defaults, strict=True) if d is None]
        if not extra:
            return
        pattern_id = PATTERNS.get((name, ctx.kind))
        shown = ", ".join(p.arg for p in params)
        message = (
            f"`{name}` (assigned in the class body) is `{value}({shown})`, which takes `{', '.join(extra)}` beyond "
            f"the hook's `{'self' if ctx.kind == MODULE else 'self, trainer, pl_module'}`"
        )
        if pattern_id is not None:
            message += f"; {name}({', '.join(new_params_of_old(registry.get(pattern_id)))}) " + removed(
                pattern_id, bare=True
            )
        fix = manual_fix(self.code, f"assigned in the class body: `{value}` takes {', '.join(extra)}, never passed")
        yield Finding(self.code, message, (pattern_id,) if pattern_id else (), fix=fix)

    def _why_not_cached(self, ctx: ClassContext, func: cst.FunctionDef, pattern_id: str) -> str | None:
        """Why a caching rewrite could not give what the release that passed the parameter gave; ``None``: it can."""
        pattern = registry.get(pattern_id)
        params = positional(func)
        if len(params) != expected_count(ctx.kind, 2) or not plain_signature(func):
            return "it takes more than the old signature's parameters"
        if pattern.stage == "train":
            old_name = new_params_of_old(pattern)[-1]
            if params[-1].name.value != old_name:
                return (
                    f"its last parameter is `{params[-1].name.value}`, not `{old_name}` as in the old signature "
                    f"`{pattern.old_signature}`, the one signature the caching rewrite is made for"
                )
            if ctx.kind == CALLBACK and not _project_module_tracks_outputs(ctx):
                return (
                    f"no {MODULE} of this project defines `{_TRACKING[0].hook}` or "
                    f"`{_TRACKING[1].old_signature}`, and a callback's caching rewrite is made for a project where one "
                    "does"
                )
        return None


#: The marker of an extra parameter the registry's old signature lacks: a call with the old signature's parameters
#: raises TypeError before the body runs.
NEVER_CALLED_SO = (
    "the old signature of this hook lacks these parameters: dropping them makes its body run where it did not run "
    "before"
)


def _old_shape(func: cst.FunctionDef, expected: int, extra: list[str], pattern_id: str | None) -> bool:
    """Whether the extra parameters are exactly what a release passed the hook: the registry's old signature
    (``pattern_id``) has one more positional parameter, and ``func`` takes it there under its name (the releases
    that passed it looked for that name). Otherwise no release ever called ``func`` without a TypeError."""
    if pattern_id is None:
        return False
    old_name = new_params_of_old(registry.get(pattern_id))[-1]
    params = positional(func)
    return extra == [old_name] and len(params) > expected and params[expected].name.value == old_name


def new_params_of_old(pattern: registry.OldPattern) -> list[str]:
    """The parameter names of a pattern's old signature."""
    inside = pattern.old_signature.partition("(")[2].rpartition(")")[0]
    return [part.strip() for part in inside.split(",") if part.strip()]


def _project_module_tracks_outputs(ctx: ClassContext) -> bool:
    """Whether a ``LightningModule`` of this file or of its project defines ``training_epoch_end`` or
    ``on_train_epoch_end(self, outputs)``: with such a module, Lightning 1.3-1.4 passed the callbacks' old
    ``on_train_epoch_end`` the training outputs."""
    file = ctx.file
    old_param = new_params_of_old(_TRACKING[1])[-1]
    tracking_def = re.compile(
        rb"def\s+" + re.escape(_TRACKING[1].hook.encode()) + rb"\s*\(\s*self\s*,\s*" + re.escape(old_param.encode())
    )
    sources: list[tuple[Path | None, ModuleInfo | None, bytes | None]] = [(file.path, file.info, file.source)]
    if file.path is not None and file.path in file.project.name_of:
        sources += [(p, None, None) for p in file.project.name_of if p != file.path]
    for path, info, data in sources:
        if data is None and path is not None:
            data = file.project.read(path)
        if data is None:
            continue
        hook = _TRACKING[0].hook.encode()
        if hook not in data and not tracking_def.search(data):
            continue
        if info is None and path is not None:
            info = file.project.info(path)
        if info is None:
            continue
        for name, bases in info.classes.items():
            defines = info.methods.get(name, set())
            if _TRACKING[0].hook in defines or (_TRACKING[1].hook in defines and tracking_def.search(data)):
                if file.project.classify(info, bases).kind == MODULE:
                    return True
    return False


def _module_function(ctx: ClassContext, name: str) -> ast.FunctionDef | None:
    """The function ``name`` defined with ``def`` at the top level of the class's file, or ``None``."""
    found = None
    for statement in ctx.file.tree.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == name:
            found = statement  # the last definition is the one bound when the class body runs (or later)
    return found
