"""LM002: an ``on_*_epoch_end`` hook that declares parameters beyond ``self`` (module) or ``trainer, pl_module``."""

from __future__ import annotations

import libcst as cst

from lightning_migrate.checker.core import (
    MODULE,
    SAFE,
    ClassContext,
    Finding,
    Fix,
    Rule,
    body_uses,
    expected_count,
    manual_fix,
    positional,
    register,
)
from lightning_migrate.checker.rules._common import by_hook, removed

STAGES = ("train", "validation", "test", "predict")
#: (hook, owner) -> registry pattern of the old shape; validation and test never took outputs in a release.
PATTERNS = by_hook(
    (
        "module-on-train-epoch-end-outputs",
        "callback-on-train-epoch-end-outputs",
        "module-on-predict-epoch-end-outputs",
        "callback-on-predict-epoch-end-outputs",
    )
)


@register
class EpochEndParameters(Rule):
    code = "LM002"
    name = "epoch-end-parameters"
    title = "on_*_epoch_end hooks that take outputs, or another parameter without a default"
    hooks = frozenset(f"on_{stage}_epoch_end" for stage in STAGES)
    patterns = tuple(PATTERNS.values())
    summary = (
        "``on_train_epoch_end``, ``on_validation_epoch_end``, ``on_test_epoch_end`` or ``on_predict_epoch_end`` "
        "declaring a parameter beyond ``self`` on a ``LightningModule``, or beyond ``self, trainer, pl_module`` "
        "on a ``Callback`` -- typically the ``outputs`` of Lightning 1.x -- that has no default value. A parameter "
        "with a default (``unused=None``) is not a finding: :claim:`epoch-end-hooks-called-without-outputs`, so the "
        "default stands in. "
        "``*args`` and ``**kwargs`` are accepted."
    )
    fix_text = (
        "**safe** when the body never reads the extra parameters: they are dropped. **manual** otherwise: a marker "
        "comment links here; collect what you need in the batch-end hook (callback-side caching) or in the step "
        "(module-side caching)."
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
            read = [name for name in defaulted if body_uses(func, name)]
            if read:  # it works, but the body reads a value Lightning never passes: always the default
                message = f"`{hook}` is called without `{', '.join(read)}`: the body always sees the default value"
                yield Finding(self.code, message, (), note=True)
            return
        pattern_id = PATTERNS.get((hook, ctx.kind))
        takes = "self" if ctx.kind == MODULE else "self, trainer, pl_module"
        message = f"`{hook}` takes only `{takes}`; `{', '.join(extra)}` is never passed"
        if pattern_id is not None:
            message = removed(pattern_id, func)
        if any(body_uses(func, name) for name in extra):
            fix = manual_fix(self.code, "the body reads " + ", ".join(extra))
        else:
            fix = Fix(
                SAFE, lambda node: _drop(node, set(extra)), description="drop " + ", ".join(extra), dropped=tuple(extra)
            )
        yield Finding(self.code, message, (pattern_id,) if pattern_id else (), fix=fix)


def _drop(node, names):
    from lightning_migrate.checker.core import drop_params

    return drop_params(node, names)
