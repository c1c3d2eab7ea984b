"""Run every old pattern of the registry on the installed Lightning and record what Lightning does.

This is the only place where facts about Lightning's behaviour are made: the reference table, the symptom index
and the compatibility table render the records written here. Works on every release this guide covers (the
pytorch-lightning 1.x and lightning 2.x releases of ``data/compat/matrix.toml``): it imports ``lightning.pytorch``
when present, else ``pytorch_lightning``, and passes only the ``Trainer`` arguments the installed release accepts.
``nox -s record``, ``nox -s legacy`` and ``nox -s matrix`` run it on every release of ``data/compat/matrix.toml``.

Usage::

    python -m migration_guide.probes --output records.json [PATTERN_ID ...]

The output is one JSON document (see :func:`probe_all`). Each pattern runs in this one process, on a fresh model
and ``Trainer``, seeded: 4 training batches per epoch, 2 validation, 2 test and 2 predict batches, 2 epochs.
"""

from __future__ import annotations

import argparse
import inspect
import platform
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

from lightning_migrate import records, registry
from lightning_migrate.hook_names import import_lightning  # the installed package's: the checker records with it too
from migration_guide import run_configurations

TRAIN_BATCHES, EVAL_BATCHES, BATCH_SIZE, FEATURES, EPOCHS = 4, 2, 2, 4, 2
#: Schema version of the records: bump when a field changes meaning.
SCHEMA = 1


def _trainer_kwargs(pl) -> dict[str, Any]:
    """Quiet, single-device CPU ``Trainer`` arguments, spelled the way the installed release spells them."""
    accepted = inspect.signature(pl.Trainer.__init__).parameters
    kwargs: dict[str, Any] = {"max_epochs": EPOCHS, "logger": False}
    alternatives = [
        ("enable_checkpointing", False, "checkpoint_callback", False),
        ("enable_progress_bar", False, "progress_bar_refresh_rate", 0),
        ("enable_model_summary", False, "weights_summary", None),
    ]
    for new, new_value, old, old_value in alternatives:
        if new in accepted:
            kwargs[new] = new_value
        elif old in accepted:
            kwargs[old] = old_value
    if "accelerator" in accepted and "devices" in accepted:
        kwargs.update(accelerator="cpu", devices=1)
    return kwargs


def _summarize(value: Any, depth: int = 0) -> Any:
    """A JSON-able summary of what a hook received: container shapes, dict keys, tensor shapes and scalars."""
    import torch

    if isinstance(value, torch.Tensor):
        summary: dict[str, Any] = {"tensor": list(value.shape), "requires_grad": value.requires_grad}
        if value.numel() == 1:
            summary["value"] = round(float(value.detach()), 6)
        return summary
    if depth >= 4:
        return type(value).__name__
    if isinstance(value, dict):
        return {str(key): _summarize(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return {"len": len(value), "items": [_summarize(item, depth + 1) for item in value[:8]]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return type(value).__name__


def _namespace(pl) -> dict[str, Any]:
    """The names a registry ``source`` snippet may use: ``ProbeModel``, ``Callback``, ``torch``."""
    import torch
    from torch.utils.data import DataLoader

    def loader(batches: int) -> DataLoader:
        return DataLoader(torch.randn(batches * BATCH_SIZE, FEATURES), batch_size=BATCH_SIZE)

    class ProbeModel(pl.LightningModule):
        """A linear layer trained to output zeros; returns dicts from its steps like most 1.x code did."""

        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(FEATURES, 1)
            self.calls: list[Any] = []

        def forward(self, x):
            return self.layer(x)

        def training_step(self, batch, batch_idx):
            return {"loss": self(batch).pow(2).mean()}

        def validation_step(self, batch, batch_idx):
            return {"val_loss": self(batch).pow(2).mean()}

        def test_step(self, batch, batch_idx):
            return {"test_loss": self(batch).pow(2).mean()}

        def predict_step(self, batch, batch_idx, dataloader_idx=0):
            return self(batch)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self):
            return loader(TRAIN_BATCHES)

        def val_dataloader(self):
            return loader(EVAL_BATCHES)

        def test_dataloader(self):
            return loader(EVAL_BATCHES)

        def predict_dataloader(self):
            return loader(EVAL_BATCHES)

    class Callback(pl.Callback):
        def __init__(self):
            super().__init__()
            self.calls: list[Any] = []

    return {"ProbeModel": ProbeModel, "Callback": Callback, "torch": torch, "pl": pl}


def _batch_counter(pl):
    """A callback counting the batches each loop finished (sanity-check batches apart from validation)."""

    class BatchCounter(pl.Callback):
        def __init__(self):
            self.batches = {"train": 0, "sanity_check": 0, "validation": 0, "test": 0, "predict": 0}
            self.stage = "setup"

        def on_sanity_check_start(self, trainer, pl_module):
            self.stage = "sanity_check"

        def on_train_epoch_start(self, trainer, pl_module):
            self.stage = "train"

        def on_train_epoch_end(self, trainer, pl_module):  # no `outputs`: 1.x would pass them to a wider signature
            self.stage = "train_epoch_end"

        def on_train_batch_end(self, trainer, pl_module, *args, **kwargs):
            self.batches["train"] += 1

        def on_validation_epoch_start(self, trainer, pl_module):
            self.stage = "sanity_check" if trainer.sanity_checking else "validation"

        def on_validation_batch_end(self, trainer, pl_module, *args, **kwargs):
            self.batches["sanity_check" if trainer.sanity_checking else "validation"] += 1

        def on_validation_epoch_end(self, trainer, pl_module):
            self.stage = "sanity_check_epoch_end" if trainer.sanity_checking else "validation_epoch_end"

        def on_test_epoch_start(self, trainer, pl_module):
            self.stage = "test"

        def on_test_batch_end(self, trainer, pl_module, *args, **kwargs):
            self.batches["test"] += 1

        def on_test_epoch_end(self, trainer, pl_module):
            self.stage = "test_epoch_end"

        def on_predict_epoch_start(self, trainer, pl_module):
            self.stage = "predict"

        def on_predict_batch_end(self, trainer, pl_module, *args, **kwargs):
            self.batches["predict"] += 1

        def on_predict_epoch_end(self, trainer, pl_module, *args):
            self.stage = "predict_epoch_end"

    return BatchCounter()


def probe(pattern: registry.OldPattern, pl=None) -> dict[str, Any]:
    """Run one old pattern; return its record.

    Returns:
        A dict with ``pattern`` (the id), ``outcome`` -- ``"error"`` (Lightning or Python raised), ``"ignored"``
        (ran to the end, the hook was never called), ``"called"`` (the hook was called with what it asked for) or
        ``"called_with_warning"`` (called, and Lightning emitted a deprecation warning) --, ``error_type`` and
        ``error_message`` (the exception's class name and text, or ``None``), ``failed_during`` (the loop that was
        running: ``setup`` (before any batch), a loop (``sanity_check``, ``train``, ``validation``, ``test``,
        ``predict``) or its epoch end (``train_epoch_end``, ``validation_epoch_end``, ...)), ``batches`` (batches
        finished per loop before the end or the failure), ``training_steps`` (``trainer.global_step``),
        ``hook_calls`` (how often the old hook ran), ``received`` (a summary of its first call's argument) and
        ``warnings`` (category and text of every deprecation warning emitted) and ``configuration`` (what the run
        ran in: :func:`migration_guide.run_configurations.configuration`).
    """
    import torch

    if pl is None:
        pl, _, _ = import_lightning()
    namespace = _namespace(pl)
    exec(compile(pattern.source, f"<registry:{pattern.id}>", "exec"), namespace)  # noqa: S102 - our own data
    torch.manual_seed(0)
    if pattern.owner == "LightningModule":
        model, old_callback = namespace[pattern.probe_class](), None
        hook_owner = model
    else:
        model, old_callback = namespace["ProbeModel"](), namespace[pattern.probe_class]()
        hook_owner = old_callback
    counter = _batch_counter(pl)
    callbacks = [counter] + ([old_callback] if old_callback is not None else [])
    trainer = pl.Trainer(callbacks=callbacks, **_trainer_kwargs(pl))

    error: BaseException | None = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            getattr(trainer, pattern.run)(model)
        except Exception as exc:  # noqa: BLE001 - recording what Lightning raises is the point
            error = exc
    deprecations = [
        {"category": warning.category.__name__, "message": str(warning.message)}
        for warning in caught
        if issubclass(warning.category, DeprecationWarning) or pattern.hook in str(warning.message)
    ]
    unique_deprecations = [dict(item) for item in {tuple(d.items()): d for d in deprecations}.values()]
    for warning in caught:  # any other warning goes through the process's filters: an error unless declared
        if not (issubclass(warning.category, DeprecationWarning) or pattern.hook in str(warning.message)):
            _reemit(warning, pattern.id)

    calls = hook_owner.calls
    if error is not None:
        outcome = "error"
    elif not calls:
        outcome = "ignored"
    elif any(pattern.hook in d["message"] for d in unique_deprecations):
        outcome = "called_with_warning"
    else:
        outcome = "called"
    return {
        "pattern": pattern.id,
        "outcome": outcome,
        "error_type": type(error).__name__ if error is not None else None,
        "error_message": str(error) if error is not None else None,
        "error_origin": _origin(error),
        "failed_during": counter.stage if error is not None else None,
        "batches": counter.batches,
        "training_steps": int(trainer.global_step),
        "hook_calls": len(calls),
        "received": _summarize(calls[0]) if calls else None,
        "warnings": unique_deprecations,
        "configuration": run_configurations.configuration(trainer, model, pattern.run),
    }


def _reemit(warning: warnings.WarningMessage, pattern_id: str) -> None:
    """Emit a caught warning again under the process's filters (the build's declared warnings:
    :mod:`migration_guide.declared_warnings`).

    Raises:
        RuntimeError: the filters made it an error; the message names the file and line that warned, and the pattern.
    """
    try:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    except Warning as error:
        raise RuntimeError(
            f"{warning.filename}:{warning.lineno}: {warning.category.__name__}: {error} "
            f"(while probing {pattern_id}; accepted warnings are declared in "
            "src/migration_guide/declared_warnings.py)"
        ) from None


def _origin(error: BaseException | None) -> str | None:
    """Where the exception was raised: ``"lightning"`` (a check in Lightning) or ``"python"`` (a call failed)."""
    if error is None:
        return None
    frames = traceback.extract_tb(error.__traceback__)
    if isinstance(error, TypeError) and "positional argument" in str(error):
        return "python"
    return "lightning" if frames and ("lightning" in frames[-1].filename) else "python"


#: What ``trainer_defaults`` records: name -> how to read it off a ``Trainer`` built with defaults only.
TRAINER_DEFAULTS = {
    "num_sanity_val_steps": lambda trainer: trainer.num_sanity_val_steps,
    "enable_checkpointing": lambda trainer: trainer.checkpoint_callback is not None,
    "enable_progress_bar": lambda trainer: trainer.progress_bar_callback is not None,
    "log_every_n_steps": lambda trainer: trainer.log_every_n_steps,
    "accumulate_grad_batches": lambda trainer: trainer.accumulate_grad_batches,
    "val_check_interval": lambda trainer: trainer.val_check_interval,
    "check_val_every_n_epoch": lambda trainer: trainer.check_val_every_n_epoch,
}


def trainer_defaults(pl) -> dict[str, Any]:
    """What a ``Trainer()`` built with Lightning's defaults holds, read off the object (a default of ``None`` in the
    signature often stands for another value): ``{name: value}`` for :data:`TRAINER_DEFAULTS`, ``None`` where the
    release has no such attribute.

    ``logger=False`` is the one argument given (the default logger depends on the packages installed and writes
    nothing the recorded values depend on); the ``Trainer`` is built in a temporary directory and never run. A
    release whose default ``Trainer`` cannot be built here (pytorch-lightning 1.4.9's default ``ModelCheckpoint``
    calls ``np.Inf``, which NumPy 2 removed) records ``{"unavailable": "<error type>: <message>"}``.
    """
    import contextlib
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):
        try:
            trainer = pl.Trainer(logger=False, default_root_dir=os.getcwd())
        except Exception as error:  # noqa: BLE001 - recorded: what this release does here
            return {"unavailable": f"{type(error).__name__}: {error}"}
        values = {}
        for name, read in TRAINER_DEFAULTS.items():
            try:
                values[name] = read(trainer)
            except AttributeError:
                values[name] = None
    return values


def probe_all(pattern_ids: list[str] | None = None, configurations: bool = False) -> dict[str, Any]:
    """Probe the given patterns (all by default) on the installed Lightning.

    Returns:
        ``{"schema", "lightning": {"distribution", "version"}, "torch", "python", "records": [...],
        "trainer_defaults": {...}}`` with one record per pattern, as :func:`probe` describes, and what a default
        ``Trainer`` holds (:func:`trainer_defaults`). With ``configurations``, each record keeps the configuration
        its run ran in (:func:`migration_guide.run_configurations.configuration`), which the build's claims
        compare with their scope; the releases' committed records (:mod:`migration_guide.compat`) were made
        without it, and a key they lack would be a difference of every release.

    Raises:
        KeyError: an id that is not in the registry.
    """
    import torch

    pl, dist, version = import_lightning()
    patterns = [registry.get(pid) for pid in pattern_ids] if pattern_ids else list(registry.PATTERNS)
    return {
        "schema": SCHEMA,
        "lightning": {"distribution": dist, "version": version},
        "torch": torch.__version__.split("+")[0],
        "python": platform.python_version(),
        "records": [_without_configuration(probe(pattern, pl), configurations) for pattern in patterns],
        "trainer_defaults": trainer_defaults(pl),
    }


def _without_configuration(record: dict[str, Any], keep: bool) -> dict[str, Any]:
    if not keep:
        record.pop("configuration")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", "-o", type=Path, help="write the JSON here (default: standard output)")
    parser.add_argument("patterns", nargs="*", help="pattern ids (default: all)")
    args = parser.parse_args(argv)
    _quiet_lightning()
    result = probe_all(args.patterns or None, configurations=True)
    if args.output is None:
        sys.stdout.write(records.dumps(result))
    else:
        records.write_record(args.output, result)  # atomic: a reader never sees half a file
    return 0


def _quiet_lightning() -> None:
    """Keep Lightning's informational logging ("GPU available: ...") out of the probe's output.

    Lightning sets its logger to INFO when first imported, so it is imported before the levels are set.
    """
    import logging

    import_lightning()
    for name in ("lightning", "lightning.pytorch", "pytorch_lightning", "lightning.fabric", "lightning_fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)


if __name__ == "__main__":
    raise SystemExit(main())
