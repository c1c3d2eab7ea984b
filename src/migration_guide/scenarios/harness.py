"""Running one cell: a recipe, taken from its page, in one scenario, with observers beside it.

For each cell this module

1. takes the recipe's classes **from the page itself** (the page's imports and the named top-level definitions,
   compiled with the page's file name and line numbers), so the code that runs is the code the reader copies; the
   page's ``BoringModel`` is bound to the scenario's base module (what its steps return, its optimizers) before the
   recipe's classes are defined. A recipe with ``transform = "lightning-migrate"`` runs what the checker's rewrite
   makes of its page (:data:`TRANSFORMS`);
2. runs the scenario's Trainer calls with observers beside the recipe, never inside it: a :class:`RecordingLogger`
   that keeps every value the recipe logs, and a ``GroundTruth`` callback that keeps, on rank 0, the weights
   Lightning trained, validated, tested or predicted with, the training batches it drew and the datasets each
   evaluation read; a crash injected part-way, or a checkpoint saved mid-epoch, when the scenario asks;
3. computes the ground truth from those records and the data with plain PyTorch (:mod:`.truth`) and compares.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import functools
import importlib
import io
import json
import logging
import math
import os
import re
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from . import truth
from .space import ROOT, MatrixError, Recipe, Scenario

#: The matrix's own Trainer arguments, under every scenario's: observers only, nothing that changes training.
TRAINER_BASE = {"max_epochs": 2, "enable_progress_bar": False, "enable_model_summary": False, "accelerator": "cpu"}
#: Relative tolerance of a comparison: the recipe and the ground truth sum float32 values in their own order.
REL_TOL = 1e-5
#: Relative tolerance of a training value under ``bf16-mixed`` when the scenario's step computes its loss by hand
#: (``step.train = "hand-loss"``): that loss is bfloat16 (autocast leaves the arithmetic in the prediction's
#: dtype), rounded to bfloat16's 8 significant bits before any recipe sees it, and a recipe's mean of bfloat16
#: values is rounded again: two roundings of up to 2**-8 each, against a float32 truth.
BF16_HAND_LOSS_REL_TOL = 2**-7
OUTCOMES = ("holds", "differs", "raises", "not applicable")
#: Seconds a DDP collective may wait before gloo gives up (a deadlock becomes an error, not a hung build).
DDP_TIMEOUT = 60
#: ``transform`` of a recipe -> ``"module:function"``; the function takes ``(text, filename)`` and returns the
#: source whose definitions run (the checker's rewrite of a user's file).
TRANSFORMS = {"lightning-migrate": "lightning_migrate.checker:rewrite_source"}
#: The message of the crash a scenario injects (``crash = true``, ``resume = true``).
CRASH = "crash injected by the scenario matrix"


#: The detail of a crash or resume cell whose first run ends before the point the crash is injected at: the scenario
#: does not exist for that recipe, as a scenario without the recipe's stage does not (decided by the run).
NO_CRASH_POINT = (
    "the first run ends before the crash can happen: it has no {stage} batch outside the sanity check (a resumed"
    " run: no step halfway through its second epoch)"
)


#: The detail of a cell whose run never reaches the recipe's stage outside the sanity check: nothing to compare
#: (decided by the run).
NO_STAGE_RUN = "the run never reaches a {stage} epoch outside the sanity check"


class InjectedCrash(RuntimeError):
    """The crash a scenario injects part-way through a run."""


class RunawayRun(RuntimeError):
    """A run that went on past :data:`RUNAWAY_BATCHES` training batches: Lightning never ended it."""


#: How deep the graph check looks into a cache's nested lists, tuples and dicts.
GRAPH_DEPTH = 4


#: Training batches after which a cell's run is stopped as a runaway (the longest scenario runs fewer than 100).
RUNAWAY_BATCHES = 500


# -- Taking a recipe from its page ------------------------------------------------------------------------------
def page_source(page: Path, transform: str | None = None) -> str:
    """The Python source of a page: a gallery script as it is; for a MyST notebook (``.md``), its ``code-cell``
    blocks without the option lines they open with (``:tags: [remove-cell]``), every other line blanked so that line
    numbers stay the page's own; with ``transform``, what the
    transform (:data:`TRANSFORMS`) makes of the file's text.

    Raises:
        MatrixError: ``transform`` is unknown, or its function cannot be imported.
    """
    text = page.read_text(encoding="utf-8")
    if transform is not None:
        if transform not in TRANSFORMS:
            raise MatrixError(f"{page}: unknown transform {transform!r} (known: {sorted(TRANSFORMS)})")
        module, _, name = TRANSFORMS[transform].partition(":")
        try:
            function = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as error:
            raise MatrixError(f"{page}: transform {transform!r} needs {TRANSFORMS[transform]}: {error}") from None
        return function(text, str(page))
    if page.suffix != ".md":
        return text
    lines, inside, options = [], False, False
    for line in text.splitlines():
        if line.startswith("```{code-cell}"):
            inside = options = True  # a cell opens with its options (MyST's ``:tags: [...]`` lines), if any
            lines.append("")
        elif inside and line.startswith("```"):
            inside = False
            lines.append("")
        elif options and line.startswith(":"):
            lines.append("")  # an option of the cell (myst-nb's ``:tags: [remove-cell]``), not Python
        else:
            options = False
            lines.append(line if inside else "")
    return "\n".join(lines) + "\n"


def page_definitions(page: Path, names: tuple[str, ...], base: type, transform: str | None = None) -> dict[str, Any]:
    """The namespace of ``page``'s imports and its top-level definitions ``names``, with ``BoringModel`` = ``base``.

    The statements are compiled from the page's own source (:func:`page_source`) with its file name, so a
    traceback names the page and the line the reader sees. Nothing else of the page runs (not its training, not
    its checks).

    Raises:
        MatrixError: ``page`` does not define one of ``names`` at top level.
    """
    tree = ast.parse(page_source(page, transform), filename=str(page))
    namespace: dict[str, Any] = {"__name__": f"recipe_page_{page.stem}", "__file__": str(page)}
    imports: list[ast.stmt] = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    exec(compile(ast.Module(body=imports, type_ignores=[]), str(page), "exec"), namespace)
    namespace["BoringModel"] = base
    by_name: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            by_name[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    by_name[target.id] = node
    for name in names:
        if name not in by_name:
            raise MatrixError(f"{page}: defines no top-level {name!r} (named in the matrix file)")
        exec(compile(ast.Module(body=[by_name[name]], type_ignores=[]), str(page), "exec"), namespace)
    return namespace


# -- The scenario's base module: what a user's module looks like in that configuration -------------------------
@dataclass(frozen=True)
class TrainStep:
    """One kind of ``step.train`` (:data:`migration_guide.scenario_schema.TRAIN_STEPS`): whether the step
    optimizes by hand, how many optimizers it has, what it returns (``returns(module, batch, batch_idx, loss)``; under
    manual optimization called after the optimizers stepped), and which batches have no loss in the old ``outputs``
    list (``skipped(batch_idx)``)."""

    returns: Callable[..., Any]
    manual: bool = False
    optimizers: int = 1
    skipped: Callable[[int], bool] = staticmethod(lambda batch_idx: False)


def _loss_dict(module, batch, batch_idx, loss):
    return {"loss": loss}


def _hand_loss(module, batch, batch_idx, loss):
    import torch

    prediction = module(batch)  # in the prediction's dtype: bfloat16 under bf16-mixed
    return {"loss": ((prediction - torch.ones_like(prediction)) ** 2).mean()}


def _gan_losses(module, batch, batch_idx, loss):
    import torch

    prediction = module(batch)
    g_loss = torch.nn.functional.mse_loss(prediction, torch.ones_like(prediction))
    d_loss = torch.nn.functional.mse_loss(prediction, torch.zeros_like(prediction))
    return {"g_loss": g_loss, "d_loss": d_loss}


#: The implementation of each ``step.train`` kind (the schema declares them, with what each means).
TRAIN_STEPS: dict[str, TrainStep] = {
    "loss-dict": TrainStep(_loss_dict),
    "tensor": TrainStep(lambda module, batch, batch_idx, loss: loss),
    "none-batch-1": TrainStep(
        lambda module, batch, batch_idx, loss: None if batch_idx == 1 else {"loss": loss},
        skipped=lambda batch_idx: batch_idx == 1,
    ),
    "hand-loss": TrainStep(_hand_loss),
    "manual": TrainStep(_loss_dict, manual=True),
    "manual-nothing": TrainStep(lambda module, batch, batch_idx, loss: None, manual=True, skipped=lambda i: True),
    "manual-no-loss": TrainStep(lambda module, batch, batch_idx, loss: {"x": loss.detach()}, manual=True),
    "manual-two-optimizers": TrainStep(_loss_dict, manual=True, optimizers=2),
    # Lightning #17801: two optimizers, losses by name, no "loss"; the step's backward is of their sum
    "manual-gan-losses": TrainStep(_gan_losses, manual=True, optimizers=2),
}
#: The implementation of each ``step.eval`` kind: what validation_step and test_step return, from their loss and
#: BoringModel's key (``"x"``, ``"y"``).
EVAL_STEPS: dict[str, Callable[[Any, str], Any]] = {
    "dict": lambda loss, key: {key: loss},
    "tensor": lambda loss, key: loss,
    "none": lambda loss, key: None,
}


def _kind(table: dict, kind: Any, setting: str) -> Any:
    """``table[kind]``: the implementation of a kind of ``setting``.

    Raises:
        MatrixError: the harness implements no such kind (the schema and the harness disagree).
    """
    try:
        return table[kind]
    except (KeyError, TypeError):
        raise MatrixError(f"{setting} = {kind!r}: the harness implements {sorted(map(str, table))} only") from None


def make_base(train_step: str, eval_step: str, plateau_monitor: str | None = None) -> type:
    """Lightning's ``BoringModel`` as the scenario's user writes it: ``training_step`` returns what ``train_step``
    says (:data:`TRAIN_STEPS`: a dict with ``"loss"``, a bare tensor, ``None`` for batch 1, or under manual
    optimization the loss, nothing, a dict without ``"loss"``, the loss after stepping two optimizers, or after
    stepping two optimizers a GAN's ``{"g_loss", "d_loss"}``: the squared error against ones and against zeros);
    ``validation_step`` and ``test_step`` return what ``eval_step`` says (:data:`EVAL_STEPS`: the dicts
    ``BoringModel`` returns, ``{"x": loss}`` and ``{"y": loss}``, the bare loss, or ``None``) and take
    ``dataloader_idx`` as a module with several dataloaders must; a batch of several training loaders (a list) is
    concatenated; with ``plateau_monitor``, a ``ReduceLROnPlateau`` monitors that logged value.

    Raises:
        MatrixError: a kind the harness does not implement.
    """
    import torch
    from lightning.pytorch.demos.boring_classes import BoringModel as DemoModel

    spec: TrainStep = _kind(TRAIN_STEPS, train_step, "step.train")
    evaluation = _kind(EVAL_STEPS, eval_step, "step.eval")

    class BoringModel(DemoModel):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.automatic_optimization = not spec.manual

        def forward(self, x):
            return super().forward(torch.cat(x) if isinstance(x, (list, tuple)) else x)

        def training_step(self, batch, batch_idx):
            if not spec.manual:
                return spec.returns(self, batch, batch_idx, self.step(batch))
            optimizers = self.optimizers()
            optimizers = optimizers if isinstance(optimizers, list) else [optimizers]
            loss = self.step(batch)
            output = spec.returns(self, batch, batch_idx, loss)
            # the backward is of the losses the step returns with their graph (a GAN's two), else of its loss
            losses = [v for v in (output or {}).values() if isinstance(v, torch.Tensor) and v.requires_grad]
            for optimizer in optimizers:
                optimizer.zero_grad()
            self.manual_backward(sum(losses) if losses else loss)
            for optimizer in optimizers:
                optimizer.step()
            return output

        def _evaluation_step(self, batch, key):
            return evaluation(self.step(batch), key)

        def validation_step(self, batch, batch_idx, dataloader_idx=0):
            return self._evaluation_step(batch, "x")

        def test_step(self, batch, batch_idx, dataloader_idx=0):
            return self._evaluation_step(batch, "y")

        def configure_optimizers(self):
            if spec.optimizers == 2:
                return [torch.optim.SGD([self.layer.weight], lr=0.1), torch.optim.SGD([self.layer.bias], lr=0.1)]
            if plateau_monitor is None:
                return super().configure_optimizers()
            optimizer = torch.optim.SGD(self.layer.parameters(), lr=0.1)
            scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0)
            return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "monitor": plateau_monitor}}

    return BoringModel


#: Batches whose training_step returns no loss, by ``step.train``: the old ``outputs`` list had no entry for them.
SKIPPED = {kind: spec.skipped for kind, spec in TRAIN_STEPS.items()}


# -- Data: datasets the ground truth can read back, loaders as the scenario's user makes them ---------------------
@functools.cache
def _data_classes():
    import torch
    from torch.utils.data import Dataset, IterableDataset, Sampler

    def rank_and_world() -> tuple[int, int]:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return torch.distributed.get_rank(), torch.distributed.get_world_size()
        return 0, 1

    class Samples(Dataset):
        """``samples`` random 32-vectors (seeded by ``name``), map-style; ``name`` lets the ground truth find it."""

        def __init__(self, name: str, samples: int):
            self.name = name
            generator = torch.Generator().manual_seed(sum(map(ord, name)))
            self.data = torch.randn(samples, 32, generator=generator)

        def __len__(self):
            return len(self.data)

        def __getitem__(self, index):
            return self.data[index]

    class IterableSamples(IterableDataset):
        """The same samples as an iterable without ``__len__``; each rank reads its own share
        (samples ``rank, rank + world_size, ...``), as the PyTorch documentation asks of an iterable dataset."""

        def __init__(self, samples: Samples):
            self.name = samples.name
            self.data = samples.data

        def __iter__(self):
            rank, world = rank_and_world()
            return iter(self.data[rank::world])

    class OwnSplit(Sampler):
        """A user's own split between the ranks, without padding: rank ``r`` reads samples ``r, r + world, ...``
        (shards of unequal length when the dataset does not divide). Used with ``use_distributed_sampler=False``."""

        def __init__(self, dataset):
            self.size = len(dataset)

        def _indices(self):
            rank, world = rank_and_world()
            return range(rank, self.size, world)

        def __iter__(self):
            return iter(self._indices())

        def __len__(self):
            return len(self._indices())

    class FrameworkBatchSampler(Sampler):
        """A framework's own batch sampler, put in by its strategy after Lightning prepared the loader (as NeMo's
        Megatron data sampler deals micro-batches, NVIDIA-BioNeMo/bionemo-recipes #482): of each global batch of
        ``batch_size * world`` consecutive samples, rank ``r`` reads the ``r``-th block of ``batch_size``; a rank
        whose block of the last global batch is empty reads one batch fewer. No sample is repeated."""

        def __init__(self, size: int, batch_size: int, rank: int, world: int):
            self.size, self.batch_size, self.rank, self.world = size, batch_size, rank, world

        def _batches(self):
            for start in range(0, self.size, self.batch_size * self.world):
                first = start + self.rank * self.batch_size
                block = list(range(first, min(first + self.batch_size, self.size)))
                if block:
                    yield block

        def __iter__(self):
            return self._batches()

        def __len__(self):
            return sum(1 for _ in self._batches())

    return Samples, IterableSamples, OwnSplit, FrameworkBatchSampler


#: ``data.course = "not-monotone"``: every training sample is shifted by this (BoringModel learns a weight along
#: the shift)...
NOT_MONOTONE_TRAIN_SHIFT = 0.5
#: ... and the validation samples after the sanity check's first two batches are the same kind of sample, shifted
#: and then scaled by this (the other side, twice as far), the first two batches being zeros. Measured with the
#: matrix's defaults and validation every 2 batches: 1.572, 1.686, 1.988, 1.898 (it rises, then falls), and the
#: untrained model's sanity loss, 0.930, is below every later validation's.
NOT_MONOTONE_VAL_SCALE = -2.0


def _not_monotone(datasets: dict[str, Any], data: dict[str, Any]) -> None:
    """``data.course = "not-monotone"``: training samples shifted by :data:`NOT_MONOTONE_TRAIN_SHIFT`; the validation
    samples after the default sanity check's two batches shifted and scaled by :data:`NOT_MONOTONE_VAL_SCALE`, those
    two batches being zeros."""
    easy = 2 * data["batch_size"]  # the default sanity check's two batches
    for name in ("train", "train2"):
        datasets[name].data += NOT_MONOTONE_TRAIN_SHIFT
    for name in ("val", "val2"):
        datasets[name].data[:easy] = 0.0
        rest = datasets[name].data[easy:]
        datasets[name].data[easy:] = (rest + NOT_MONOTONE_TRAIN_SHIFT) * NOT_MONOTONE_VAL_SCALE


#: The implementation of each ``data.course`` kind: how it reshapes the datasets (in place).
COURSES: dict[str, Callable[[dict[str, Any], dict[str, Any]], None]] = {
    "falling": lambda datasets, data: None,
    "not-monotone": _not_monotone,
}


def make_datasets(data: dict[str, Any]) -> dict[str, Any]:
    """Every dataset the scenario can read, by name: ``train``, ``train2``, ``val``, ``val2``, ``test``, ...
    (the ``2`` ones have ``data["second"]`` samples), reshaped as ``data["course"]`` says (:data:`COURSES`): with
    ``"not-monotone"`` the validation loss is not monotone and the sanity check's batches are easier than the rest
    (:data:`NOT_MONOTONE_TRAIN_SHIFT`, :data:`NOT_MONOTONE_VAL_SCALE`): a best-so-far value that counts the sanity
    check, or that restarts, shows there."""
    Samples, *_ = _data_classes()
    datasets = {}
    for stage in ("train", "val", "test", "predict"):
        datasets[stage] = Samples(stage, data[stage])
        datasets[f"{stage}2"] = Samples(f"{stage}2", data["second"])
    _kind(COURSES, data["course"], "data.course")(datasets, data)
    return datasets


def _map_loader(dataset, data: dict[str, Any], shuffle: bool):
    from torch.utils.data import DataLoader

    _, _, OwnSplit, _ = _data_classes()
    split = _kind(SPLITS, data["split"], "data.split")
    return DataLoader(dataset, batch_size=data["batch_size"], **split(dataset, shuffle, OwnSplit))


def _iterable_loader(dataset, data: dict[str, Any], shuffle: bool):
    from torch.utils.data import DataLoader

    _, IterableSamples, _, _ = _data_classes()
    return DataLoader(IterableSamples(dataset), batch_size=data["batch_size"])


#: The implementation of each ``data.kind``: the loader of a dataset (``(dataset, data, shuffle)``).
DATA_KINDS: dict[str, Callable[..., Any]] = {"map": _map_loader, "iterable": _iterable_loader}
#: The implementation of each ``data.split``: a map-style loader's sampling arguments. An iterable dataset splits
#: itself between the ranks (``IterableSamples``).
SPLITS: dict[str, Callable[..., dict[str, Any]]] = {
    "sampler": lambda dataset, shuffle, own: {"shuffle": shuffle},  # Lightning adds its DistributedSampler
    "own": lambda dataset, shuffle, own: {"sampler": own(dataset)},
}
#: The implementation of each ``data.train_loaders``: how many training loaders.
TRAIN_LOADER_COUNTS: dict[Any, Callable[[int], int]] = {1: lambda n: 1, 2: lambda n: 2}
#: The implementation of each ``data.eval_loaders``: how many loaders validation, test or predict gets, from the
#: training epoch (validation) or the number of earlier calls (test, predict).
EVAL_LOADER_COUNTS: dict[Any, Callable[[int], int]] = {1: lambda n: 1, 2: lambda n: 2, "varies": lambda n: 1 + n % 2}


class DataSource:
    """The loaders of each stage as the scenario's user makes them: passed to the call, or from a
    ``LightningDataModule`` (:meth:`datamodule`), one or two per stage, or a count that changes."""

    def __init__(self, data: dict[str, Any], datasets: dict[str, Any]):
        self.data = data
        self.datasets = datasets
        self.calls = {"test": 0, "predict": 0}  # test and predict calls made so far (varying counts)

    def loader(self, name: str, shuffle: bool = False):
        make = _kind(DATA_KINDS, self.data["kind"], "data.kind")
        return make(self.datasets[name], self.data, shuffle)

    def count(self, stage: str, epoch: int = 0) -> int:
        """How many loaders ``stage`` gets now (:data:`TRAIN_LOADER_COUNTS`, :data:`EVAL_LOADER_COUNTS`): 1, 2, or
        when varying, 1 + (epoch or call number) % 2."""
        if stage == "train":
            return _kind(TRAIN_LOADER_COUNTS, self.data["train_loaders"], "data.train_loaders")(epoch)
        count = _kind(EVAL_LOADER_COUNTS, self.data["eval_loaders"], "data.eval_loaders")
        return count(epoch if stage == "val" else self.calls[stage])

    def loaders(self, stage: str, epoch: int = 0):
        """One loader, or a list of them (``stage``: train, val, test, predict)."""
        shuffle = stage == "train" and self.data["shuffle"]
        made = [self.loader(name, shuffle) for name in (stage, f"{stage}2")[: self.count(stage, epoch)]]
        return made[0] if len(made) == 1 else made

    def passed(self, stage: str) -> dict[str, Any] | None:
        """What a Trainer call of ``stage`` is given (:data:`DATA_SOURCES`): its loaders, or ``None`` when a
        datamodule, given to every call of the attempt, makes them."""
        return _kind(DATA_SOURCES, self.data["source"], "data.source")(self, stage)

    def datamodule(self):
        """A ``LightningDataModule`` whose hooks return :meth:`loaders` (validation: by the trainer's epoch)."""
        import lightning.pytorch as pl

        source = self

        class DataModule(pl.LightningDataModule):
            def train_dataloader(self):
                return source.loaders("train")

            def val_dataloader(self):
                return source.loaders("val", self.trainer.current_epoch if self.trainer else 0)

            def test_dataloader(self):
                return source.loaders("test")

            def predict_dataloader(self):
                return source.loaders("predict")

        return DataModule()


def rank_file(file: Path, rank: int) -> Path:
    """Where rank ``rank`` keeps its ground-truth record: ``file`` for rank 0, ``<stem>.rank<r><suffix>`` beside it
    for the others."""
    file = Path(file)
    return file if rank == 0 else file.with_name(f"{file.stem}.rank{rank}{file.suffix}")


def load_record(file: Path, world_size: int) -> dict[str, Any]:
    """Rank 0's ground-truth record (``file``), its ``train`` entries joined by every other rank's (each entry
    tagged with its ``rank``): the batches each rank trained on. Evaluation runs stay rank 0's (their truth reads
    the datasets, not the batches).

    Raises:
        RuntimeError: a rank of ``world_size`` left no record (a worker that never reached its teardown): the cell
            raises, naming the file.
    """
    import torch

    record = torch.load(file, weights_only=False)
    train = [{**entry, "rank": 0} for entry in record["train"]]
    for rank in range(1, world_size):
        path = rank_file(file, rank)
        if not path.exists():
            raise RuntimeError(f"{path}: rank {rank} of {world_size} left no ground-truth record")
        train += [{**entry, "rank": rank} for entry in torch.load(path, weights_only=False)["train"]]
    return {**record, "train": train}


def _passed_loaders(source: DataSource, stage: str) -> dict[str, Any]:
    if stage == "fit":
        return {"train_dataloaders": source.loaders("train"), "val_dataloaders": source.loaders("val")}
    return {"dataloaders": source.loaders({"validate": "val"}.get(stage, stage))}


#: The implementation of each ``data.source``: the keyword arguments of a Trainer call (``fit``, ``validate``,
#: ``test``, ``predict``), or ``None`` for the attempt's datamodule.
DATA_SOURCES: dict[str, Callable[[DataSource, str], dict[str, Any] | None]] = {
    "loaders": _passed_loaders,
    "datamodule": lambda source, stage: None,
}


# -- Observers beside the recipe --------------------------------------------------------------------------------
@functools.cache
def _observers():
    """The matrix's logger and callbacks (defined lazily: Lightning is imported on use)."""
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.loggers import Logger
    from lightning.pytorch.utilities import rank_zero_only

    def dataset_names(loaders) -> list[str]:
        loaders = loaders if isinstance(loaders, (list, tuple)) else [loaders]
        return [loader.dataset.name for loader in loaders]

    class RecordingLogger(Logger):
        """Appends every ``log_metrics`` call (rank 0) to a JSON-lines file: ``{"step": int, "metrics": {...}}``."""

        def __init__(self, file: Path):
            super().__init__()
            self.file = Path(file)

        @property
        def name(self):
            return "scenario-matrix"

        @property
        def version(self):
            return 0

        @rank_zero_only
        def log_hyperparams(self, params, *args, **kwargs):
            pass

        @rank_zero_only
        def log_metrics(self, metrics, step=None):
            with self.file.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"step": step, "metrics": {k: float(v) for k, v in metrics.items()}}) + "\n")

    class GroundTruth(pl.Callback):
        """Keeps what the ground truth needs in ``file`` (``torch.save``): the weights each training batch was
        computed with and the batch; for each validation, test and predict run, the weights and the names of the
        datasets it read; and at the end of each stage run, ``trainer.callback_metrics`` (what a disabled logger,
        under ``fast_dev_run``, would have received last). Under DDP each rank keeps its own record, rank ``r > 0``
        in :func:`rank_file` of ``file``: a training value's truth spans every rank's batches
        (:func:`load_record`). With ``keep``: at the end of each Trainer call, a copy of that attribute of the
        module or the first callback that has it, as rank 0 holds it (``kept``, by call: under DDP the recipe's
        objects run in the worker processes)."""

        def __init__(self, file: Path, trainer_number: int = 0, keep: str | None = None):
            self.file = Path(file)
            self.trainer_number = trainer_number  # which Trainer of the attempt: entries are tagged with it
            self.keep = keep
            self.call = 0
            self.record: dict[str, list] = {
                "train": [], "validation": [], "test": [], "predict": [], "metrics": [], "events": [],
            }  # fmt: skip

        @staticmethod
        def _weights(pl_module):
            return {name: value.detach().clone() for name, value in pl_module.state_dict().items()}

        def state_dict(self):
            # In every checkpoint: how many validation runs (outside the sanity check) came before it, so that a
            # run resumed from it knows which of the interrupted run's validations its own values follow.
            return {"validation_runs": len(self.record["validation"])}

        def load_state_dict(self, state_dict):
            self.record["carried"] = state_dict["validation_runs"]

        def _kept(self, trainer, pl_module):
            if self.keep is None:
                return
            owners = [owner for owner in (pl_module, *trainer.callbacks) if hasattr(owner, self.keep)]
            if owners:
                self.record.setdefault("kept", {})[self.call] = copy.deepcopy(list(getattr(owners[0], self.keep)))

        def on_exception(self, trainer, pl_module, exception):
            # An interrupted run's record is read too: the truth of a value carried across runs spans both.
            if trainer.global_rank == 0:
                self._kept(trainer, pl_module)
            torch.save(self.record, rank_file(self.file, trainer.global_rank))

        def setup(self, trainer, pl_module, stage):
            # Each Trainer call under ddp_fork starts from the main process's copy of this callback: carry on
            # from what the previous call's same rank kept.
            own = rank_file(self.file, trainer.global_rank)
            if own.exists():
                self.record = torch.load(own, weights_only=False)
            self.call = len(self.record.get("kept", {}))

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            if len(self.record["train"]) >= RUNAWAY_BATCHES:  # every rank counts the same: all stop together
                raise RunawayRun(f"more than {RUNAWAY_BATCHES} training batches: Lightning never ended the run")
            self._event("on_train_batch_start", trainer)
            copy = [b.detach().clone() for b in batch] if isinstance(batch, (list, tuple)) else batch.detach().clone()
            entry = {
                "epoch": trainer.current_epoch,
                "batch_idx": batch_idx,
                "batch": copy,
                "trainer": self.trainer_number,
            }
            self.record["train"].append({**entry, "weights": self._weights(pl_module)})

        def _evaluation(self, stage, trainer, pl_module, loaders):
            entry = {
                "weights": self._weights(pl_module),
                "datasets": dataset_names(loaders),
                "trainer": self.trainer_number,
                "fn": trainer.state.fn.value,  # "fit", "validate", "test", "predict"
                "global_step": trainer.global_step,  # optimizer steps so far (a ModelCheckpoint saves on a new one)
            }
            self.record[stage].append(entry)

        def _batch(self, stage, trainer, batch_idx, dataloader_idx):
            # how many batches of each loader this run evaluated (rank 0): fewer than its limit when Lightning
            # finishes a validation a resumed checkpoint interrupted (2.0.9 and 2.2.5 do, measured)
            if not trainer.sanity_checking and self.record[stage]:
                counts = self.record[stage][-1].setdefault("batches", {})
                counts[dataloader_idx] = max(counts.get(dataloader_idx, 0), batch_idx + 1)

        def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
            self._batch("validation", trainer, batch_idx, dataloader_idx)

        def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
            self._batch("test", trainer, batch_idx, dataloader_idx)

        def on_predict_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
            self._batch("predict", trainer, batch_idx, dataloader_idx)

        def _event(self, hook, trainer):
            # every stage's epoch start and end, the sanity check's included, and every training batch's start and
            # end, in order: where a stage-less hook of 1.x ran (``weighting = "calls"``)
            self.record["events"].append({"hook": hook, "stage": trainer.state.stage.value})

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self._event("on_train_batch_end", trainer)

        def on_train_epoch_start(self, trainer, pl_module):
            self._event("on_train_epoch_start", trainer)

        def on_train_epoch_end(self, trainer, pl_module):
            self._event("on_train_epoch_end", trainer)

        def on_validation_epoch_start(self, trainer, pl_module):
            self._event("on_validation_epoch_start", trainer)
            if not trainer.sanity_checking:  # sanity-check values are never logged: nothing to compare
                self._evaluation("validation", trainer, pl_module, trainer.val_dataloaders)

        def on_validation_epoch_end(self, trainer, pl_module):
            self._event("on_validation_epoch_end", trainer)

        def on_test_epoch_start(self, trainer, pl_module):
            self._event("on_test_epoch_start", trainer)
            self._evaluation("test", trainer, pl_module, trainer.test_dataloaders)

        def on_test_epoch_end(self, trainer, pl_module):
            self._event("on_test_epoch_end", trainer)

        def on_predict_epoch_start(self, trainer, pl_module):
            self._event("on_predict_epoch_start", trainer)
            self._evaluation("predict", trainer, pl_module, trainer.predict_dataloaders)

        def on_predict_epoch_end(self, trainer, pl_module):
            self._event("on_predict_epoch_end", trainer)

        def _metrics(self, stage, trainer):
            values = {name: float(value) for name, value in trainer.callback_metrics.items() if value.numel() == 1}
            self.record["metrics"].append({"stage": stage, "values": values, "trainer": self.trainer_number})

        def on_train_end(self, trainer, pl_module):
            self._metrics("train", trainer)

        def on_validation_end(self, trainer, pl_module):
            if not trainer.sanity_checking:
                self._metrics("validation", trainer)

        def on_test_end(self, trainer, pl_module):
            self._metrics("test", trainer)

        def teardown(self, trainer, pl_module, stage):
            if trainer.global_rank == 0:
                self._kept(trainer, pl_module)
            torch.save(self.record, rank_file(self.file, trainer.global_rank))

    class GraphCheck(pl.Callback):
        """After every training batch, looks for cached tensors that still hold an autograd graph in the recipe's
        module and callbacks: their public list, tuple and dict attributes -- of the object, and of its own classes
        (a cache kept as a class attribute; Lightning's and torch's classes are left out) -- and what those hold,
        nested (a list of the dicts training_step returned, kept whole), down to :data:`GRAPH_DEPTH` levels. A
        cache that keeps graphs alive grows memory."""

        def __init__(self, owners):
            self.owners = owners
            self.found: list[str] = []

        @staticmethod
        def _attributes(owner):
            yield from vars(owner).items()
            for cls in type(owner).__mro__:
                if not cls.__module__.startswith(("lightning", "torch", "builtins")):
                    yield from vars(cls).items()

        @classmethod
        def _holds_graph(cls, value, depth: int = 0) -> bool:
            if isinstance(value, torch.Tensor):
                return value.grad_fn is not None
            if depth >= GRAPH_DEPTH:
                return False
            if isinstance(value, dict):
                value = value.values()
            elif not isinstance(value, (list, tuple)):
                return False
            return any(cls._holds_graph(item, depth + 1) for item in value)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            for owner in [pl_module, *self.owners]:
                for name, value in self._attributes(owner):
                    if name.startswith("_") or not isinstance(value, (list, tuple, dict)):
                        continue
                    if self._holds_graph(value):
                        self.found.append(f"{type(owner).__name__}.{name}")
                        return

    class Crash(pl.Callback):
        """Raises :class:`InjectedCrash` part-way through the first run of ``stage``: at the end of its second batch
        (validation: not the sanity check), or at its epoch end when it has one batch only. It sits after the
        recipe's callbacks, so theirs ran for that batch; the module's epoch-end hook had not."""

        def __init__(self, stage):
            self.stage = stage
            self.batches = 0

        def _batch(self, trainer):
            if not trainer.sanity_checking:
                self.batches += 1
                if self.batches == 2:
                    raise InjectedCrash(CRASH)

        def _epoch_end(self, trainer, stage):
            if stage == self.stage and not trainer.sanity_checking:
                raise InjectedCrash(CRASH)

        def on_train_batch_end(self, trainer, *args):
            if self.stage == "train":
                self._batch(trainer)

        def on_validation_batch_end(self, trainer, *args):
            if self.stage == "validation":
                self._batch(trainer)

        def on_test_batch_end(self, trainer, *args):
            if self.stage == "test":
                self._batch(trainer)

        def on_predict_batch_end(self, trainer, *args):
            if self.stage == "predict":
                self._batch(trainer)

        def on_train_epoch_end(self, trainer, pl_module):
            self._epoch_end(trainer, "train")

        def on_validation_epoch_end(self, trainer, pl_module):
            self._epoch_end(trainer, "validation")

        def on_test_epoch_end(self, trainer, pl_module):
            self._epoch_end(trainer, "test")

        def on_predict_epoch_end(self, trainer, pl_module):
            self._epoch_end(trainer, "predict")

    class MidEpochCheckpoint(pl.Callback):
        """Saves a checkpoint with ``trainer.save_checkpoint`` halfway through the second epoch (after batch
        ``num_training_batches // 2 - 1``, or batch 0 of a dataset without length), as
        ``ModelCheckpoint(every_n_train_steps=...)`` would, then crashes at the next batch: a job killed mid-epoch.
        ``path=None``: crashes at the same point without saving (the run resumes from the ``last.ckpt`` that a
        ``ModelCheckpoint(save_last=True)`` wrote at the end of the first epoch)."""

        def __init__(self, path: Path | None):
            self.path = Path(path) if path is not None else None
            self.saved = False

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            if self.saved:
                raise InjectedCrash(CRASH)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            batches = trainer.num_training_batches  # inf for a dataset without __len__: then after batch 0
            half = max(batches // 2 - 1, 0) if math.isfinite(batches) else 0
            if trainer.current_epoch == 1 and batch_idx == half:
                if self.path is not None:
                    trainer.save_checkpoint(self.path)
                self.saved = True

    return RecordingLogger, GroundTruth, GraphCheck, Crash, MidEpochCheckpoint


# -- One cell ---------------------------------------------------------------------------------------------------
def _metric_names(recipe: Recipe, loaders: int) -> list[str]:
    if len(recipe.metric) == 1 and "{idx}" in recipe.metric[0]:
        return [recipe.metric[0].format(idx=idx) for idx in range(loaders)]
    return list(recipe.metric)


def _logged(file: Path, recipe: Recipe) -> list[dict[str, float]]:
    """Each logging call that carried the recipe's metrics, in order: ``{name: value}`` of those metrics."""
    rows = []
    if file.exists():
        for line in file.read_text(encoding="utf-8").splitlines():
            metrics = json.loads(line)["metrics"]
            row = {name: value for name, value in metrics.items() if _is_recipe_metric(recipe, name)}
            if row:
                rows.append(row)
    return rows


def _is_recipe_metric(recipe: Recipe, name: str) -> bool:
    if len(recipe.metric) == 1 and "{idx}" in recipe.metric[0]:
        head, _, tail = recipe.metric[0].partition("{idx}")
        middle = name[len(head) : len(name) - len(tail)] if name.startswith(head) and name.endswith(tail) else ""
        return middle.isdigit()
    return name in recipe.metric


def _bfloat16_number(value: float) -> bool:
    """Whether ``value`` is exactly a bfloat16 number (8 significant bits): what a value computed in bfloat16 is."""
    import torch

    return float(torch.tensor(value, dtype=torch.float32).bfloat16()) == value


def _compare(seen: list, expected: list, rel_tol: float = REL_TOL, bfloat16: bool = False) -> tuple[str, str, float]:
    """``("holds" | "differs", detail, largest relative error)`` of two lists of per-run values (``{name: float}``
    dicts, or for predictions a tensor or a list of tensors, one per dataloader), within ``rel_tol``.

    ``bfloat16`` (the run's precision is ``bf16-mixed``): a logged value that is a bfloat16 number where the float32
    truth is not differs even within ``rel_tol`` -- the recipe computed it in bfloat16, and its rounding landed near
    the truth by chance (found by exploration, seed 33: 8.3e-06 from a float32 truth, at 2**-8 spacing).
    """
    import torch

    if len(seen) != len(expected):
        return "differs", f"{len(seen)} values logged, {len(expected)} expected", math.inf
    worst, where = 0.0, ""
    rounded: list[str] = []  # values computed in bfloat16 where the truth is not (``bfloat16``)
    for run, (got, want) in enumerate(zip(seen, expected, strict=True)):
        if isinstance(want, dict):
            if set(got) != set(want):
                return "differs", f"run {run}: logged {sorted(got)}, expected {sorted(want)}", math.inf
            pairs = [(name, got[name], want[name]) for name in sorted(want)]
        else:  # predictions: one tensor per dataloader (a bare tensor stands for the one loader's)
            wants = want if isinstance(want, list) else [want]
            gots = list(got) if isinstance(got, (list, tuple)) else [got]
            if len(gots) != len(wants):
                return (
                    "differs",
                    f"run {run}: {len(gots)} tensors, expected {len(wants)} (one per dataloader)",
                    math.inf,
                )
            pairs = [(f"dataloader {i}", a, b) for i, (a, b) in enumerate(zip(gots, wants, strict=True))]
        for name, a, b in pairs:
            if isinstance(b, torch.Tensor):
                if not isinstance(a, torch.Tensor) or a.shape != b.shape:
                    shape = tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__
                    return "differs", f"run {run}, {name}: shape {shape}, expected {tuple(b.shape)}", math.inf
                error = ((a.float() - b.float()).abs().max() / b.float().abs().max()).item()
            else:
                error = abs(a - b) / abs(b) if b else abs(a)
            error = math.inf if math.isnan(error) else error
            if error > worst:
                worst, where = error, f"run {run}, {name}: {a!r} vs {b!r}"
            if bfloat16 and isinstance(a, float) and isinstance(b, float) and a != b:
                if _bfloat16_number(a) and not _bfloat16_number(b):
                    rounded.append(f"run {run}, {name}: {a!r}, a bfloat16 number, vs {b!r}")
    if worst <= rel_tol and rounded:
        return "differs", f"computed in bfloat16 ({rounded[0]}), within {worst:.3g} by rounding", worst
    if worst <= rel_tol:
        return "holds", f"{len(seen)} values" + (f" (within {rel_tol:.3g})" if rel_tol != REL_TOL else ""), worst
    return "differs", f"largest relative error {worst:.3g} ({where})", worst


def _ddp_fork():
    from lightning.pytorch.strategies import DDPStrategy

    return DDPStrategy(start_method="fork", timeout=timedelta(seconds=DDP_TIMEOUT))


#: The implementation of each ``strategy``: the Trainer's strategy object (``trainer.devices`` processes).
STRATEGIES: dict[str, Callable[[], Any]] = {"ddp_fork": _ddp_fork}


def _framework_batch_sampler(strategy: Any, scenario: Scenario) -> Any:
    """A framework's DDP strategy in place of Lightning's (``strategy``): after Lightning prepared a predict loader, it
    makes the loader again with a batch sampler of its own (``FrameworkBatchSampler``), as NeMo's strategy does with
    its data sampler (NVIDIA-BioNeMo/bionemo-recipes #482)."""
    from lightning.pytorch.strategies import DDPStrategy
    from torch.utils.data import DataLoader

    *_, FrameworkBatchSampler = _data_classes()
    batch_size = scenario.data["batch_size"]

    class FrameworkStrategy(DDPStrategy):
        def process_dataloader(self, dataloader):
            dataloader = super().process_dataloader(dataloader)
            if not self.lightning_module.trainer.predicting or not isinstance(dataloader, DataLoader):
                return dataloader
            size = len(dataloader.dataset)
            sampler = FrameworkBatchSampler(size, batch_size, self.global_rank, self.world_size)
            return DataLoader(dataloader.dataset, batch_sampler=sampler)

    return FrameworkStrategy(start_method="fork", timeout=timedelta(seconds=DDP_TIMEOUT))


#: The implementation of each ``data.batch_sampler``: the strategy a multi-process scenario runs with, from the one
#: :data:`STRATEGIES` makes.
BATCH_SAMPLERS: dict[str, Callable[[Any, Scenario], Any]] = {
    "lightning": lambda strategy, scenario: strategy,
    "framework": _framework_batch_sampler,
}


def _strategy(scenario: Scenario):
    batch_sampler = _kind(BATCH_SAMPLERS, scenario.data["batch_sampler"], "data.batch_sampler")
    if scenario.settings["strategy"] is None:
        if scenario.data["batch_sampler"] != "lightning":  # a framework's batch sampler is put in by its strategy
            raise MatrixError(f"[scenario.{scenario.id}]: data.batch_sampler = 'framework' needs a strategy")
        return {}
    strategy = _kind(STRATEGIES, scenario.settings["strategy"], "strategy")()
    return {"strategy": batch_sampler(strategy, scenario)}


# -- What the scenario puts beside the recipe, the calls it makes, how it is interrupted ---------------------------
def _accumulation_scheduler(recipe: Recipe, monitored: str, tmp: Path) -> list:
    from lightning.pytorch.callbacks import GradientAccumulationScheduler

    return [GradientAccumulationScheduler(scheduling={1: 2})]


def _prediction_writer(recipe: Recipe, monitored: str, tmp: Path) -> list:
    from lightning.pytorch.callbacks import BasePredictionWriter

    class BatchWriter(BasePredictionWriter):
        """A user's writer: keeps each batch's predictions (or writes them to disk)."""

        def __init__(self):
            super().__init__(write_interval="batch")
            self.written = 0

        def write_on_batch_end(self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, idx):
            self.written += 1

    return [BatchWriter()]


def _monitoring(recipe: Recipe, monitored: str, tmp: Path) -> list:
    from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint

    if recipe.stage not in ("train", "validation"):
        return []
    on_train = recipe.stage == "train"

    class CheckpointSubclass(ModelCheckpoint):
        """A user's ModelCheckpoint subclass: Lightning orders it with the monitoring callbacks."""

    return [
        ModelCheckpoint(dirpath=tmp / "best", monitor=monitored, save_on_train_epoch_end=on_train),
        EarlyStopping(monitor=monitored, patience=1000, check_on_train_epoch_end=on_train),
        CheckpointSubclass(dirpath=tmp / "sub", monitor=monitored, save_on_train_epoch_end=on_train),
    ]


#: The implementation of each kind of ``callbacks``: the callback objects put beside the recipe for each new Trainer
#: (``(recipe, the recipe's first metric, the cell's folder)``; the same folders in every attempt, as a resumed job
#: writes where the interrupted one wrote), in this order. ``plateau`` is the scenario's module's scheduler
#: (:func:`make_base`), no callback.
BESIDE: dict[str, Callable[[Recipe, str, Path], list]] = {
    "accumulation-scheduler": _accumulation_scheduler,
    "prediction-writer": _prediction_writer,
    "monitoring": _monitoring,
    "plateau": lambda recipe, monitored, tmp: [],
}


def _fit(trainer, model, data: dict[str, Any], source: DataSource, scenario: Scenario, ckpt_path) -> None:
    trainer.fit(model, **data, ckpt_path=ckpt_path or None)


def _validate(trainer, model, data: dict[str, Any], source: DataSource, scenario: Scenario, ckpt_path) -> None:
    trainer.validate(model, **data, verbose=False)


def _test(trainer, model, data: dict[str, Any], source: DataSource, scenario: Scenario, ckpt_path) -> None:
    trainer.test(model, **data, verbose=False)
    source.calls["test"] += 1


def _predict(trainer, model, data: dict[str, Any], source: DataSource, scenario: Scenario, ckpt_path) -> None:
    # Lightning refuses return_predictions=True under ddp_fork (the main process cannot receive them)
    kwargs = {"return_predictions": False} if scenario.distributed else {}
    kwargs.update(scenario.settings["predict_kwargs"])
    trainer.predict(model, **data, **kwargs)
    source.calls["predict"] += 1


#: The implementation of each Trainer call of ``runs``: ``(trainer, model, its data arguments, the data source,
#: the scenario, the checkpoint a fit resumes from)``.
CALLS: dict[str, Callable[..., None]] = {"fit": _fit, "validate": _validate, "test": _test, "predict": _predict}


def _last_checkpoint(tmp: Path):
    """``ModelCheckpoint(save_last=True)`` in the same folder in every attempt, as a restarted job has it; it saves
    at every training epoch's end (``save_on_train_epoch_end=True``: without a monitor it would otherwise save after
    validation only, and with validation every other epoch the first epoch would leave none)."""
    from lightning.pytorch.callbacks import ModelCheckpoint

    return ModelCheckpoint(dirpath=tmp / "last", save_last=True, save_on_train_epoch_end=True)


def _mid_epoch(tmp: Path, mid_epoch_checkpoint: type) -> tuple[list, Any, list]:
    checkpoint = tmp / "mid-epoch.ckpt"
    return [mid_epoch_checkpoint(checkpoint)], checkpoint, []


def _restart(tmp: Path, mid_epoch_checkpoint: type) -> tuple[list, Any, list]:
    # a new process runs fit(ckpt_path="last") from the checkpoint of the first epoch's end
    return [_last_checkpoint(tmp), mid_epoch_checkpoint(None)], "last", [_last_checkpoint(tmp)]


#: The implementation of each ``resume``: ``(callbacks injected into the interrupted run, the checkpoint the next
#: run resumes from, callbacks beside the resumed run)``, from the cell's folder and the ``MidEpochCheckpoint``
#: observer; ``False``: no interrupted run.
RESUMES: dict[Any, Callable[[Path, type], tuple[list, Any, list]] | None] = {
    False: None,
    True: _mid_epoch,
    "last": _restart,
}


def _is_injected(error: BaseException) -> bool:
    """Whether ``error`` is the injected crash (under DDP, the launcher re-raises it with the worker's traceback)."""
    return isinstance(error, InjectedCrash) or CRASH in str(error)


#: Where a DDP run meets its processes: Lightning's launch writes ``MASTER_PORT`` into the environment of the process
#: that called the Trainer and never removes it (2.6.6: its environment's ``teardown`` removes ``WORLD_SIZE`` only),
#: so every later DDP cell of that process, and every process it starts, would use the same port -- two workers on
#: one port fail with ``EADDRINUSE`` (30 cells of one build did, the matrix started by a test that had run a DDP
#: cell itself). ``STANDALONE_PORT``, when set, is the port Lightning's free-port search returns every time. Each
#: cell picks a free port of its own (:func:`_own_rendezvous`).
RENDEZVOUS_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "STANDALONE_PORT")


@contextlib.contextmanager
def _own_rendezvous():
    """Run without :data:`RENDEZVOUS_VARIABLES` (Lightning then picks a free port), and leave the environment as it
    was found."""
    saved = {name: os.environ.pop(name) for name in RENDEZVOUS_VARIABLES if name in os.environ}
    try:
        yield
    finally:
        for name in RENDEZVOUS_VARIABLES:
            os.environ.pop(name, None)
        os.environ.update(saved)


#: How many times a cell runs when its DDP rendezvous lost its port: Lightning's free-port search binds port 0 and
#: closes the socket, and until the launched workers listen on that port, another process -- the other worker of
#: the matrix, a connection's own end -- may take it (one claim cell of a fresh-clone build raised ``EADDRINUSE``,
#: among about 400 DDP cells). PyTorch's own distributed tests run such a test again likewise
#: (``retry_on_connect_failures`` of ``torch.testing._internal.common_utils``, on "Address already in use").
RENDEZVOUS_ATTEMPTS = 3


def lost_port_race(detail: str) -> bool:
    """Whether a cell's error text is a rendezvous that found its port taken (``EADDRINUSE``), not the recipe's."""
    return "EADDRINUSE" in detail or "address already in use" in detail.lower()


def run_cell(recipe: Recipe, scenario: Scenario, root: Path = ROOT) -> dict[str, Any]:
    """Run ``recipe`` in ``scenario``; return ``{"outcome", "detail", ...}`` (never raises for the recipe's errors).

    ``outcome`` is one of :data:`OUTCOMES`. A ``raises`` cell's ``detail`` is the exception's type and message as
    raised (for DDP, as the launcher re-raised it), with the line of the recipe's page in ``where``. A cell outside
    the recipe's domain is ``not applicable`` with the declared reason and ``see``, the page of the variant; so is a
    crash or resume cell whose first run never reaches the point of its crash (:data:`NO_CRASH_POINT`), and a cell
    whose run never reaches the recipe's stage outside the sanity check (:data:`NO_STAGE_RUN`), decided by running
    it (``in_run``). A cell whose DDP rendezvous found its port taken runs again, up to :data:`RENDEZVOUS_ATTEMPTS`
    times in all.
    """
    outside = recipe.outside_for(scenario)
    if outside:
        return {"outcome": "not applicable", "detail": outside.reason, "see": outside.see}
    if not recipe.runs_in(scenario):
        return {"outcome": "not applicable", "detail": f"this scenario runs no {recipe.stage} stage"}
    started = time.perf_counter()
    for attempt in range(1, RENDEZVOUS_ATTEMPTS + 1):
        with tempfile.TemporaryDirectory(prefix=f"matrix-{recipe.id}-{scenario.id}-") as tmp, _own_rendezvous():
            try:
                result = _run(recipe, scenario, root, Path(tmp))
            except MatrixError:  # the matrix file or a page is wrong, not the recipe: the run stops, naming it
                raise
            except Exception as error:  # the recipe's failure is the cell's outcome
                result = {
                    "outcome": "raises",
                    "detail": _error_text(error, Path(tmp)),
                    "where": _page_line(traceback.extract_tb(error.__traceback__), root / recipe.page),
                }
        if not (result["outcome"] == "raises" and lost_port_race(result["detail"])):
            break
        if attempt < RENDEZVOUS_ATTEMPTS:
            print(f"{recipe.id} in {scenario.id}: its port was taken meanwhile (EADDRINUSE); running it again")
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


def _seed_everything(pl) -> None:
    """``seed_everything(0)``, quietly: its ``verbose`` argument is newer than Lightning 2.0 (there, its INFO line is
    already turned down by :func:`quiet`). The harness runs on every 2.x release of ``data/compat/matrix.toml``."""
    import inspect

    quiet = {"verbose": False} if "verbose" in inspect.signature(pl.seed_everything).parameters else {}
    pl.seed_everything(0, **quiet)


def _run(recipe: Recipe, scenario: Scenario, root: Path, tmp: Path) -> dict[str, Any]:
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint

    RecordingLogger, GroundTruth, GraphCheck, Crash, MidEpochCheckpoint = _observers()
    settings = scenario.settings
    names0 = _metric_names(recipe, 1)
    extra = settings["callbacks"]
    for kind in extra:
        _kind(BESIDE, kind, "callbacks")  # a kind the harness does not implement stops the run, naming it
    plateau = names0[0] if "plateau" in extra and recipe.stage in ("train", "validation") else None
    base = make_base(settings["step"]["train"], settings["step"]["eval"], plateau)
    namespace = page_definitions(root / recipe.page, recipe.define, base, recipe.transform)
    _seed_everything(pl)
    datasets = make_datasets(scenario.data)
    source = DataSource(scenario.data, datasets)

    def objects():
        """The recipe's module and callbacks, as a user's script makes them: seeded first, so that the process
        that was killed and the one that resumes make the same objects, as two runs of one script do."""
        _seed_everything(pl)
        return namespace[recipe.module](), [namespace[name]() for name in recipe.callbacks]

    def beside() -> list:
        """Callbacks the scenario puts beside the recipe (:data:`BESIDE`), new for each Trainer."""
        return [made for kind, make in BESIDE.items() if kind in extra for made in make(recipe, names0[0], tmp)]

    def attempt(number: int, model, callbacks, injected: list, ckpt_path=None) -> dict[str, Any]:
        """Run the scenario's calls once; a ``+`` call gets a new Trainer. Returns the attempt's observers."""
        log_file, truth_file = tmp / f"log{number}.jsonl", tmp / f"truth{number}.pt"
        graph_check = GraphCheck(callbacks)
        monitors: list = []
        trainer = None
        trainers = 0
        datamodule = None
        for run in scenario.runs:
            if trainer is None or run.startswith("+"):
                around = beside()
                trainers += 1
                monitors = [c for c in around if isinstance(c, (ModelCheckpoint, EarlyStopping))]
                keep = recipe.metric[0].removeprefix("attribute:") if recipe.weighting == "calls" else None
                truth_callback = GroundTruth(truth_file, trainers, keep)
                trainer = pl.Trainer(
                    **{
                        **TRAINER_BASE,
                        "default_root_dir": str(tmp),
                        "logger": RecordingLogger(log_file),
                        "callbacks": [*callbacks, *around, *injected, truth_callback, graph_check],
                        **_strategy(scenario),
                        **scenario.trainer,
                    }
                )
            call = run.lstrip("+")
            data = source.passed(call)
            if data is None:  # a LightningDataModule, one for every call of the attempt
                datamodule = datamodule or source.datamodule()
                data = {"datamodule": datamodule}
            _kind(CALLS, call, "runs")(trainer, model, data, source, scenario, ckpt_path)
            ckpt_path = None if call == "fit" else ckpt_path
        return {"log": log_file, "truth": truth_file, "graph": graph_check, "monitors": monitors, "trainers": trainers}

    model, callbacks = objects()
    interruption = _kind(RESUMES, settings["resume"], "resume")
    if settings["crash"] or interruption:
        if interruption is not None:
            first_model, first_callbacks = objects()  # the process that was killed
            injected, checkpoint, resumed_beside = interruption(tmp, MidEpochCheckpoint)
        else:
            first_model, first_callbacks, checkpoint, resumed_beside = model, callbacks, None, []
            injected = [Crash(recipe.stage)]
        try:
            attempt(1, first_model, first_callbacks, injected)
        except Exception as error:
            if not _is_injected(error):
                raise
        else:  # e.g. a fit that ends (max_steps) before its first validation outside the sanity check
            return {"outcome": "not applicable", "detail": NO_CRASH_POINT.format(stage=recipe.stage), "in_run": True}
        source.calls = {"test": 0, "predict": 0}
        observed = attempt(2, model, callbacks, resumed_beside, ckpt_path=str(checkpoint) if checkpoint else None)
    else:
        observed = attempt(1, model, callbacks, [])
    record = load_record(observed["truth"], scenario.world_size)
    if not record[recipe.stage]:  # e.g. a fit that ends (max_steps) before its first validation
        return {"outcome": "not applicable", "detail": NO_STAGE_RUN.format(stage=recipe.stage), "in_run": True}
    before = None
    if recipe.over_runs and settings["resume"] and record.get("carried"):
        # a value carried across runs: its truth spans the validations the checkpoint came after, in the run
        # that was interrupted, then the resumed run's
        before = torch.load(tmp / "truth1.pt", weights_only=False)[recipe.stage][: record["carried"]]
    if recipe.weighting == "calls":
        events = record["events"]
        if settings["crash"] and not settings["resume"] and not scenario.distributed:
            # the same objects ran the crashed run in this process: their calls count (under DDP, each Trainer
            # call's workers start from the objects of the process that started the run, which never ran a hook)
            events = torch.load(tmp / "truth1.pt", weights_only=False)["events"] + events
        kept = [record["kept"][call] for call in sorted(record.get("kept", {}))]
        seen = [c for calls in kept for c in calls] if scenario.distributed else (kept[-1] if kept else [])
        return _compare_calls(recipe, root, events, seen)
    expected, tags = truth.ground_truth(recipe, scenario, record, datasets, SKIPPED, before=before)
    if recipe.weighting == "predictions":
        attribute = recipe.metric[0].removeprefix("attribute:")
        owners = [owner for owner in (model, *callbacks) if hasattr(owner, attribute)]
        seen = [getattr(owners[0], attribute)] if owners else []
        expected, tags = expected[-1:], tags[-1:]  # the attribute holds what the last predict run left
    elif scenario.trainer.get("fast_dev_run"):
        # fast_dev_run replaces the logger: what each stage's run left in trainer.callback_metrics
        stage = "train" if recipe.stage == "train" else recipe.stage
        seen = []
        for entry in record["metrics"]:
            row = {n: v for n, v in entry["values"].items() if entry["stage"] == stage and _is_recipe_metric(recipe, n)}
            if row:
                seen.append(row)
    else:
        seen = _logged(observed["log"], recipe)
    bf16_hand_loss = (
        recipe.stage == "train"
        and settings["step"]["train"] == "hand-loss"
        and str(scenario.trainer.get("precision")) == "bf16-mixed"
    )
    # the monitors read the value the recipe logged: the same tolerance (found by exploration, seed 29: a
    # ModelCheckpoint's best of a bfloat16 hand-written loss, 0.578125 against 0.58083, within 2**-7)
    tolerance = BF16_HAND_LOSS_REL_TOL if bf16_hand_loss else REL_TOL
    bfloat16 = str(scenario.trainer.get("precision")) == "bf16-mixed" and not bf16_hand_loss
    outcome, detail, largest_error = _compare(seen, expected, tolerance, bfloat16)
    if outcome == "holds" and observed["graph"].found:
        outcome, detail = "differs", f"{observed['graph'].found[0]} holds tensors with an autograd graph"
    monitors = observed["monitors"]
    # the optimizer steps before each value: a validation run's (a training epoch's value is saved at its end)
    steps = [e.get("global_step") for e in record[recipe.stage]] if recipe.stage == "validation" else []
    watched = [
        (values[names0[0]], steps[number] if steps else None)
        for number, (values, tag) in enumerate(zip(expected, tags, strict=True))
        if isinstance(values, dict) and tag == (observed["trainers"], "fit") and names0[0] in values
    ]  # what the last Trainer's monitors saw: its fit's values of the monitored name
    if outcome == "holds" and monitors and watched and not scenario.distributed and not settings["resume"]:
        best = min(value for value, _ in watched)
        saved = checkpoint_candidates(watched)
        scores = {
            "ModelCheckpoint.best_model_score": (monitors[0].best_model_score, min(saved) if saved else None),
            "EarlyStopping.best_score": (monitors[1].best_score, best),
            "subclass best_model_score": (monitors[2].best_model_score, min(saved) if saved else None),
        }
        for name, (score, want) in scores.items():
            if want is None and score is None:
                continue
            if score is None or want is None or not math.isclose(float(score), want, rel_tol=tolerance):
                outcome, detail = "differs", f"{name} is {score}, the best value it could see is {want!r}"
                break
    relative_error = None if math.isinf(largest_error) else largest_error
    return {"outcome": outcome, "detail": detail, "relative_error": relative_error}


def checkpoint_candidates(watched: list[tuple[float, int | None]]) -> list[float]:
    """The values a ``ModelCheckpoint`` compares, of ``(value, optimizer steps before it)`` in order: it saves (and
    so compares) only after an optimizer step since its last save, its count starting at 0 (Lightning's
    ``_should_skip_saving_checkpoint``, ``_last_global_step_saved``), so a validation that follows another with no
    step between -- ``val_check_interval`` shorter than ``accumulate_grad_batches`` -- or that comes before the first
    step is never its best (found by exploration, seed 29: its best 1.527 where a skipped validation gave 0.922). A
    value without steps (a training epoch's, saved at the epoch's end) is always compared."""
    last, compared = 0, []
    for value, step in watched:
        if step is None or step != last:
            compared.append(value)
            last = step if step is not None else last
    return compared


def _compare_calls(recipe: Recipe, root: Path, events: list[dict], kept: list) -> dict[str, Any]:
    """A recipe weighted by ``calls``: each entry its objects kept in ``metric``'s attribute (``kept``, as rank 0
    held it) starts with the edge and the stage a stage-less hook ran at (``["end", "validate", ...]``); the truth
    is where the newest 1.x release that ran those hooks called them, over the stage epochs and training batches
    ``events`` of the runs the objects made (:func:`.truth.stageless_calls`)."""
    seen = [list(entry[:2]) for entry in kept]
    expected = truth.stageless_calls(recipe, root / recipe.page, events)
    if seen == expected:
        return {"outcome": "holds", "detail": f"{len(seen)} calls where 1.x made them", "relative_error": 0.0}
    pairs = enumerate(zip(seen, expected, strict=False))
    at = next((i for i, (a, b) in pairs if a != b), min(len(seen), len(expected)))
    detail = f"{len(seen)} calls, {len(expected)} expected; first difference at call {at}: "
    detail += f"{seen[at] if at < len(seen) else 'none'} vs {expected[at] if at < len(expected) else 'none'}"
    return {"outcome": "differs", "detail": detail, "relative_error": None}


def _error_text(error: BaseException, tmp: Path) -> str:
    """``Type: message`` of what the recipe raised, as it would read it. Under DDP the launcher re-raises a worker's
    error with the worker's whole traceback in its message: the last line, the worker's own error, is kept. The
    cell's temporary folder reads ``<run dir>``, so the text does not depend on the machine."""
    text = f"{type(error).__name__}: {error}".strip()
    if "Traceback (most recent call last)" in text:
        lines = [line for line in text.splitlines() if line.strip()]
        text = f"in a DDP worker: {lines[-1].strip()}"
    return text.replace(str(tmp), "<run dir>")


def _page_line(frames: traceback.StackSummary, page: Path) -> str | None:
    """``path:line`` of the deepest frame of the recipe's page in a traceback, or ``None``."""
    lines = [frame for frame in frames if Path(frame.filename) == page]
    return f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page}:{lines[-1].lineno}" if lines else None


@contextlib.contextmanager
def quiet(declared: tuple = ()):
    """Lightning's info banners and what the cells print stay out of the matrix's own output.

    A Python warning goes through the process's filters: in the build (``PYTHONWARNINGS``, from
    :mod:`migration_guide.declared_warnings`) an undeclared warning is an error, so the cell raises and the
    build names it. The warnings that list accepts inside the cells only (``declared``: its ``IN_SCENARIO_CELLS``, as
    :func:`.space.declared_warnings` gives them: Lightning's advice about a scenario's configuration itself) are
    ignored inside the block.
    """
    import lightning.pytorch  # noqa: F401 - Lightning sets its log level to INFO when first imported: import first

    loggers = [logging.getLogger(name) for name in ("lightning.pytorch", "lightning.fabric")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        for entry in declared:
            category = getattr(builtins, entry.category)
            warnings.filterwarnings("ignore", message=re.escape(entry.message), category=category)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels, strict=True):
                logger.setLevel(level)
