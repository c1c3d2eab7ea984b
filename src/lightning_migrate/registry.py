"""The old patterns: every removed or changed epoch-end / batch hook shape user code can still contain.

One entry per shape. The reference table, the symptom index, the compatibility table, the probes and the
checker rules are all derived from this list: adding a removed hook means adding one :class:`OldPattern`.

Facts typed here are only those Lightning's changelog states (the version that deprecated and the version that
removed each shape, source: the CHANGELOG.md of Lightning-AI/pytorch-lightning, ``src/lightning/pytorch``).
What Lightning *does* with each shape today is never typed here: :mod:`migration_guide.probes` runs the
``source`` snippet of each entry and records it.

This module imports nothing beyond the standard library, so the checker can use it without Lightning installed.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Trainer entry points a probe can run: ``fit`` trains (with validation), the others evaluate one stage.
RUNS = ("fit", "validate", "test", "predict")
#: The classes whose hooks the patterns are about (a pattern's ``owner``).
OWNERS = ("LightningModule", "Callback")
#: The ``LightningModule`` method that runs each batch of a stage (``stage`` -> step); the tests check each name
#: against the hooks recorded from the installed Lightning (:mod:`lightning_migrate.hook_names`).
STEP_METHODS = {
    "train": "training_step",
    "validation": "validation_step",
    "test": "test_step",
    "predict": "predict_step",
}
#: The callbacks Lightning 2.x calls after the module's ``on_train_epoch_end`` (its fit loop calls the "monitoring"
#: callbacks, instances of ``Checkpoint`` or ``EarlyStopping``, last), where 1.x called every callback after
#: ``training_epoch_end``; the tests check each is one of those two classes in the installed Lightning.
MONITORING_CALLBACKS = ("Checkpoint", "ModelCheckpoint", "OnExceptionCheckpoint", "EarlyStopping")
#: Lightning's progress bars: their epoch-end hooks print what was logged and change nothing a module or another
#: callback reads, so the order of the module's epoch-end hook beside theirs changes only what the bar shows; the
#: tests check each is a ``ProgressBar`` of the installed Lightning.
DISPLAY_CALLBACKS = ("ProgressBar", "TQDMProgressBar", "RichProgressBar")
#: The class a pattern's ``source`` defines, by owner: the name Lightning's messages quote when the probe runs it.
PROBE_CLASSES = {"LightningModule": "LitModel", "Callback": "MyCallback"}


@dataclass(frozen=True)
class OldPattern:
    """One old hook shape.

    Attributes:
        id: stable identifier; also the anchor of the pattern's row in the reference table (``#<id>``).
        owner: ``"LightningModule"`` or ``"Callback"``.
        old_signature: the old signature, as user code wrote it (the hook's name, then its parameters).
        new_signature: what to write today (``None`` when the hook is gone and nothing replaces it one to one).
        stage: ``"train"``, ``"validation"``, ``"test"`` or ``"predict"``.
        deprecated_in: Lightning release that deprecated the shape (``None``: removed without deprecation).
        removed_in: Lightning release that removed it.
        replacement: one sentence (reStructuredText) saying what to do instead.
        example: docname of the executed example that shows the fix.
        run: the ``Trainer`` method that exercises the hook (one of :data:`RUNS`).
        body: the statements of the old hook when the probes run it (lines separated by ``\n``): it appends to
            ``self.calls`` what Lightning called it with, so a probe can tell "called", "failed" and "never called".

    :attr:`hook` and :attr:`source` are derived from these, never typed; :attr:`source` defines the
    :attr:`probe_class`.
    """

    id: str
    owner: str
    old_signature: str
    new_signature: str | None
    stage: str
    deprecated_in: str | None
    removed_in: str
    replacement: str
    example: str
    run: str
    body: str

    def __post_init__(self) -> None:
        if self.owner not in OWNERS:
            raise ValueError(f"{self.id}: owner must be one of {OWNERS}, not {self.owner!r}")
        if self.run not in RUNS:
            raise ValueError(f"{self.id}: run must be one of {RUNS}, not {self.run!r}")
        if not self.hook.isidentifier() or not self.old_signature.endswith(")"):
            raise ValueError(f"{self.id}: old_signature must read `hook(parameters)`, not {self.old_signature!r}")

    @property
    def probe_class(self) -> str:
        """The name of the class :attr:`source` defines (:data:`PROBE_CLASSES`): Lightning's messages quote it."""
        return PROBE_CLASSES[self.owner]

    @property
    def hook(self) -> str:
        """The method name as user code writes it: :attr:`old_signature` up to its parenthesis."""
        return self.old_signature.partition("(")[0]

    @property
    def source(self) -> str:
        """Python source of the old shape, for the probes: ``LitModel`` (subclass of the probes' ``ProbeModel``)
        for a module pattern or ``MyCallback`` (subclass of ``Callback``) for a callback pattern, defining the hook
        with :attr:`old_signature` and :attr:`body`."""
        body = "".join(f"        {line}\n" for line in self.body.splitlines())
        return f"\nclass {self.probe_class}({PROBE_BASES[self.owner]}):\n    def {self.old_signature}:\n{body}"


#: What the class a probe defines (:data:`PROBE_CLASSES`) subclasses, for a pattern of each owner (:data:`OWNERS`).
PROBE_BASES = {"LightningModule": "ProbeModel", "Callback": "Callback"}

_CORE = "examples/core/"
#: The page that runs the old and the new signatures of every batch hook that took ``dataloader_idx``.
_DATALOADER_IDX = "examples/pitfalls/batch_hooks_dataloader_idx"
#: The page that runs the removed stage-less epoch and batch hooks, then the stage hooks that replace them.
_STAGELESS = "examples/pitfalls/epoch_and_batch_hooks_ignored"

PATTERNS: tuple[OldPattern, ...] = (
    OldPattern(
        id="module-on-train-epoch-end-outputs",
        owner="LightningModule",
        old_signature="on_train_epoch_end(self, outputs)",
        new_signature="on_train_epoch_end(self)",
        stage="train",
        deprecated_in="1.3",
        removed_in="1.5",
        replacement="Append what you need in ``training_step``; reduce and clear it in ``on_train_epoch_end(self)``.",
        example=_CORE + "module_side_caching",
        run="fit",
        body="self.calls.append(outputs)",
    ),
    OldPattern(
        id="callback-on-train-epoch-end-outputs",
        owner="Callback",
        old_signature="on_train_epoch_end(self, trainer, pl_module, outputs)",
        new_signature="on_train_epoch_end(self, trainer, pl_module)",
        stage="train",
        deprecated_in="1.3",
        removed_in="1.5",
        replacement=(
            "Append what you need in ``on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)``; "
            "reduce and clear it in ``on_train_epoch_end(trainer, pl_module)``."
        ),
        example=_CORE + "callback_side_caching",
        run="fit",
        body="self.calls.append(outputs)",
    ),
    OldPattern(
        id="training-epoch-end",
        owner="LightningModule",
        old_signature="training_epoch_end(self, outputs)",
        new_signature="on_train_epoch_end(self)",
        stage="train",
        deprecated_in=None,
        removed_in="2.0",
        replacement="Append what you need in ``training_step``; reduce and clear it in ``on_train_epoch_end(self)``.",
        example=_CORE + "module_side_caching",
        run="fit",
        body="self.calls.append(outputs)",
    ),
    OldPattern(
        id="validation-epoch-end",
        owner="LightningModule",
        old_signature="validation_epoch_end(self, outputs)",
        new_signature="on_validation_epoch_end(self)",
        stage="validation",
        deprecated_in=None,
        removed_in="2.0",
        replacement=(
            "Append what you need in ``validation_step``; reduce and clear it in ``on_validation_epoch_end(self)``."
        ),
        example="examples/stages/validation_epoch_end",
        run="fit",
        body="self.calls.append(outputs)",
    ),
    OldPattern(
        id="test-epoch-end",
        owner="LightningModule",
        old_signature="test_epoch_end(self, outputs)",
        new_signature="on_test_epoch_end(self)",
        stage="test",
        deprecated_in=None,
        removed_in="2.0",
        replacement="Append what you need in ``test_step``; reduce and clear it in ``on_test_epoch_end(self)``.",
        example="examples/stages/test_epoch_end",
        run="test",
        body="self.calls.append(outputs)",
    ),
    OldPattern(
        id="module-on-predict-epoch-end-outputs",
        owner="LightningModule",
        old_signature="on_predict_epoch_end(self, results)",
        new_signature="on_predict_epoch_end(self)",
        stage="predict",
        deprecated_in=None,
        removed_in="2.0",
        replacement="Use the result of ``trainer.predict``, or append in ``predict_step`` and read it at epoch end.",
        example="examples/stages/predict_epoch_end",
        run="predict",
        body="self.calls.append(results)",
    ),
    OldPattern(
        id="callback-on-predict-epoch-end-outputs",
        owner="Callback",
        old_signature="on_predict_epoch_end(self, trainer, pl_module, outputs)",
        new_signature="on_predict_epoch_end(self, trainer, pl_module)",
        stage="predict",
        deprecated_in=None,
        removed_in="2.0",
        replacement=(
            "Collect predictions in ``on_predict_batch_end``, or read ``trainer.predict_loop.predictions`` "
            "(with ``return_predictions=False``, collect them in ``on_predict_batch_end``)."
        ),
        example="examples/stages/predict_epoch_end",
        run="predict",
        body="self.calls.append(outputs)",
    ),
    OldPattern(
        id="training-step-end",
        owner="LightningModule",
        old_signature="training_step_end(self, step_output)",
        new_signature=None,
        stage="train",
        deprecated_in=None,
        removed_in="2.0",
        replacement="Do the work at the end of ``training_step``, or in ``on_train_batch_end``.",
        example="examples/pitfalls/step_end_hooks_ignored",
        run="fit",
        body="self.calls.append(step_output)\nreturn step_output",
    ),
    OldPattern(
        id="validation-step-end",
        owner="LightningModule",
        old_signature="validation_step_end(self, step_output)",
        new_signature=None,
        stage="validation",
        deprecated_in=None,
        removed_in="2.0",
        replacement="Do the work at the end of ``validation_step``, or in ``on_validation_batch_end``.",
        example="examples/pitfalls/step_end_hooks_ignored",
        run="fit",
        body="self.calls.append(step_output)\nreturn step_output",
    ),
    OldPattern(
        id="test-step-end",
        owner="LightningModule",
        old_signature="test_step_end(self, step_output)",
        new_signature=None,
        stage="test",
        deprecated_in=None,
        removed_in="2.0",
        replacement="Do the work at the end of ``test_step``, or in ``on_test_batch_end``.",
        example="examples/pitfalls/step_end_hooks_ignored",
        run="test",
        body="self.calls.append(step_output)\nreturn step_output",
    ),
    OldPattern(
        id="module-on-train-batch-end-dataloader-idx",
        owner="LightningModule",
        old_signature="on_train_batch_end(self, outputs, batch, batch_idx, dataloader_idx)",
        new_signature="on_train_batch_end(self, outputs, batch, batch_idx)",
        stage="train",
        deprecated_in="1.5",
        removed_in="1.7",
        replacement="Drop ``dataloader_idx`` from the signature.",
        example=_DATALOADER_IDX,
        run="fit",
        body="self.calls.append(outputs)",
    ),
    OldPattern(
        id="callback-on-train-batch-end-dataloader-idx",
        owner="Callback",
        old_signature="on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx)",
        new_signature="on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx)",
        stage="train",
        deprecated_in="1.5",
        removed_in="1.7",
        replacement="Drop ``dataloader_idx`` from the signature.",
        example=_DATALOADER_IDX,
        run="fit",
        body="self.calls.append(outputs)",
    ),
    OldPattern(
        id="module-on-epoch-end",
        owner="LightningModule",
        old_signature="on_epoch_end(self)",
        new_signature="on_train_epoch_end(self)",
        stage="train",
        deprecated_in="1.6",
        removed_in="1.8",
        replacement="Use the stage's own hook: ``on_train_epoch_end``, ``on_validation_epoch_end``, ...",
        example=_STAGELESS,
        run="fit",
        body="self.calls.append(None)",
    ),
    OldPattern(
        id="callback-on-epoch-end",
        owner="Callback",
        old_signature="on_epoch_end(self, trainer, pl_module)",
        new_signature="on_train_epoch_end(self, trainer, pl_module)",
        stage="train",
        deprecated_in="1.6",
        removed_in="1.8",
        replacement="Use the stage's own hook: ``on_train_epoch_end``, ``on_validation_epoch_end``, ...",
        example=_STAGELESS,
        run="fit",
        body="self.calls.append(None)",
    ),
    OldPattern(
        id="module-on-epoch-start",
        owner="LightningModule",
        old_signature="on_epoch_start(self)",
        new_signature="on_train_epoch_start(self)",
        stage="train",
        deprecated_in="1.6",
        removed_in="1.8",
        replacement=("Use the stage's own hook: ``on_train_epoch_start``, ``on_validation_epoch_start``, ..."),
        example=_STAGELESS,
        run="fit",
        body="self.calls.append(None)",
    ),
    OldPattern(
        id="callback-on-epoch-start",
        owner="Callback",
        old_signature="on_epoch_start(self, trainer, pl_module)",
        new_signature="on_train_epoch_start(self, trainer, pl_module)",
        stage="train",
        deprecated_in="1.6",
        removed_in="1.8",
        replacement=("Use the stage's own hook: ``on_train_epoch_start``, ``on_validation_epoch_start``, ..."),
        example=_STAGELESS,
        run="fit",
        body="self.calls.append(None)",
    ),
    OldPattern(
        id="callback-on-batch-start",
        owner="Callback",
        old_signature="on_batch_start(self, trainer, pl_module)",
        new_signature="on_train_batch_start(self, trainer, pl_module, batch, batch_idx)",
        stage="train",
        deprecated_in="1.6",
        removed_in="1.8",
        replacement="Rename to ``on_train_batch_start`` and accept ``batch, batch_idx``.",
        example=_STAGELESS,
        run="fit",
        body="self.calls.append(None)",
    ),
    OldPattern(
        id="callback-on-batch-end",
        owner="Callback",
        old_signature="on_batch_end(self, trainer, pl_module)",
        new_signature="on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx)",
        stage="train",
        deprecated_in="1.6",
        removed_in="1.8",
        replacement="Rename to ``on_train_batch_end`` and accept ``outputs, batch, batch_idx``.",
        example=_STAGELESS,
        run="fit",
        body="self.calls.append(None)",
    ),
    OldPattern(
        id="module-on-train-batch-start-dataloader-idx",
        owner="LightningModule",
        old_signature="on_train_batch_start(self, batch, batch_idx, dataloader_idx)",
        new_signature="on_train_batch_start(self, batch, batch_idx)",
        stage="train",
        deprecated_in="1.5",
        removed_in="1.7",
        replacement=("Drop ``dataloader_idx`` from the signature."),
        example=_DATALOADER_IDX,
        run="fit",
        body="self.calls.append(batch_idx)",
    ),
    OldPattern(
        id="callback-on-train-batch-start-dataloader-idx",
        owner="Callback",
        old_signature="on_train_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx)",
        new_signature="on_train_batch_start(self, trainer, pl_module, batch, batch_idx)",
        stage="train",
        deprecated_in="1.5",
        removed_in="1.7",
        replacement=("Drop ``dataloader_idx`` from the signature."),
        example=_DATALOADER_IDX,
        run="fit",
        body="self.calls.append(batch_idx)",
    ),
    OldPattern(
        id="module-on-validation-batch-end-dataloader-idx-required",
        owner="LightningModule",
        old_signature="on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx)",
        new_signature="on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0)",
        stage="validation",
        deprecated_in=None,
        removed_in="2.0",
        replacement="Give ``dataloader_idx`` a default of ``0``.",
        example=_DATALOADER_IDX,
        run="validate",
        body="self.calls.append(dataloader_idx)",
    ),
    OldPattern(
        id="callback-on-validation-batch-end-dataloader-idx-required",
        owner="Callback",
        old_signature="on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx)",
        new_signature="on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0)",
        stage="validation",
        deprecated_in=None,
        removed_in="2.0",
        replacement="Give ``dataloader_idx`` a default of ``0``.",
        example=_DATALOADER_IDX,
        run="validate",
        body="self.calls.append(dataloader_idx)",
    ),
    OldPattern(
        id="module-on-test-batch-end-dataloader-idx-required",
        owner="LightningModule",
        old_signature="on_test_batch_end(self, outputs, batch, batch_idx, dataloader_idx)",
        new_signature="on_test_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0)",
        stage="test",
        deprecated_in=None,
        removed_in="2.0",
        replacement="Give ``dataloader_idx`` a default of ``0``.",
        example=_DATALOADER_IDX,
        run="test",
        body="self.calls.append(dataloader_idx)",
    ),
    OldPattern(
        id="callback-on-test-batch-end-dataloader-idx-required",
        owner="Callback",
        old_signature="on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx)",
        new_signature="on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0)",
        stage="test",
        deprecated_in=None,
        removed_in="2.0",
        replacement="Give ``dataloader_idx`` a default of ``0``.",
        example=_DATALOADER_IDX,
        run="test",
        body="self.calls.append(dataloader_idx)",
    ),
    OldPattern(
        id="module-on-predict-batch-end-dataloader-idx-required",
        owner="LightningModule",
        old_signature="on_predict_batch_end(self, outputs, batch, batch_idx, dataloader_idx)",
        new_signature="on_predict_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0)",
        stage="predict",
        deprecated_in=None,
        removed_in="2.0",
        replacement="Give ``dataloader_idx`` a default of ``0``.",
        example=_DATALOADER_IDX,
        run="predict",
        body="self.calls.append(dataloader_idx)",
    ),
    OldPattern(
        id="callback-on-predict-batch-end-dataloader-idx-required",
        owner="Callback",
        old_signature="on_predict_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx)",
        new_signature="on_predict_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0)",
        stage="predict",
        deprecated_in=None,
        removed_in="2.0",
        replacement="Give ``dataloader_idx`` a default of ``0``.",
        example=_DATALOADER_IDX,
        run="predict",
        body="self.calls.append(dataloader_idx)",
    ),
)

BY_ID: dict[str, OldPattern] = {pattern.id: pattern for pattern in PATTERNS}
if len(BY_ID) != len(PATTERNS):  # pragma: no cover - guards the data above
    raise ValueError("duplicate pattern ids in the registry")


def get(pattern_id: str) -> OldPattern:
    """Return the pattern with ``pattern_id``; raise ``KeyError`` naming the known ids if there is none."""
    try:
        return BY_ID[pattern_id]
    except KeyError:
        raise KeyError(f"no old pattern {pattern_id!r}; known: {', '.join(BY_ID)}") from None


#: What migrated code calls the list that replaces an old hook's ``outputs``, by pattern id: the name a reader
#: types into the search when their code already half-follows the fix. The name is the stage's step method
#: (:data:`STEP_METHODS`) and ``_outputs``, the rule of Lightning's own example: the docstrings of
#: ``LightningModule.on_train_epoch_end`` and ``Callback.on_train_epoch_end`` keep ``self.training_step_outputs``
#: (``lightning/pytorch/core/hooks.py``, ``lightning/pytorch/callbacks/callback.py``; tests/test_search_idioms.py
#: reads them from the installed Lightning). The site's search indexes each on its pattern's ``example``.
CACHE_IDIOMS: dict[str, tuple[str, ...]] = {
    "training-epoch-end": ("training_step_outputs",),
    "module-on-train-epoch-end-outputs": ("training_step_outputs",),
    "validation-epoch-end": ("validation_step_outputs",),
    "test-epoch-end": ("test_step_outputs",),
    "module-on-predict-epoch-end-outputs": ("predict_step_outputs",),
}
if not set(CACHE_IDIOMS) <= set(BY_ID):  # pragma: no cover - guards the data above
    raise ValueError(f"CACHE_IDIOMS names unknown patterns: {sorted(set(CACHE_IDIOMS) - set(BY_ID))}")


def idioms(pattern_id: str) -> tuple[str, ...]:
    """The cache names of :data:`CACHE_IDIOMS` for ``pattern_id`` (empty for a pattern without one)."""
    return CACHE_IDIOMS.get(pattern_id, ())
