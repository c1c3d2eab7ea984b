"""The scenario matrix: every recipe the site recommends, run in every Trainer configuration users run.

``data/scenarios.toml`` declares the scenarios (columns: Trainer arguments, the methods called, the data) and the
recipes (rows: the gallery page that shows the recipe, the names it defines, what it reduces and how it weights
batches). For each cell this module

1. takes the recipe's classes **from the gallery page itself** (the page's imports and the named top-level
   definitions, compiled with the page's file name and line numbers), so the code that runs is the code the
   reader copies; the page's ``BoringModel`` is bound to the scenario's base module (manual optimization, a step
   that skips a batch) before the recipe's classes are defined;
2. runs the scenario with two observers beside the recipe, never inside it: a :class:`RecordingLogger` that
   keeps every value the recipe logs, and a :class:`GroundTruth` callback that keeps the weights Lightning trained,
   validated, tested or predicted with, and the training batches it drew;
3. computes the ground truth from those weights and the data with plain PyTorch (no Lightning, no recipe code),
   weighted the way the recipe's quantity is defined (``batch``: the mean of per-batch means, as the old
   ``outputs`` list gave ``training_epoch_end``; ``sample``: every sample of the dataset once, as
   ``self.log(..., on_epoch=True)`` does in one process), and compares;
4. classifies the cell: ``holds``, ``differs`` (by how much), ``raises`` (what, as Lightning or Python raised it)
   or ``not applicable`` (declared, with the reason, in the TOML file), and compares it with what the TOML file
   expects (``holds`` unless declared otherwise with a reason and the page that shows the variant that holds).

``python -m lightning_migrate.scenarios --output FILE`` writes the results as JSON (atomically) and exits 1 when
a cell's outcome is not the expected one, naming the recipe, the scenario and what happened. The Sphinx
extension ``docs/_ext/scenario_matrix.py`` runs it at every build and renders ``docs/reference/scenarios.rst``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import io
import json
import logging
import math
import os
import sys
import tempfile
import time
import tomllib
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MATRIX_FILE = ROOT / "data" / "scenarios.toml"
#: The matrix's own Trainer arguments, under every scenario's: observers only, nothing that changes training.
TRAINER_BASE = {"max_epochs": 2, "enable_progress_bar": False, "enable_model_summary": False}
DATA_DEFAULTS = {"train": 40, "val": [24], "test": 24, "predict": 20, "batch_size": 8, "shuffle": False}
#: The Trainer methods that run each stage a recipe can reduce.
STAGE_RUNS = {"train": ("fit",), "validation": ("fit", "validate"), "test": ("test",), "predict": ("predict",)}
#: Relative tolerance of a comparison: the recipe and the ground truth sum float32 values in their own order.
REL_TOL = 1e-5
OUTCOMES = ("holds", "differs", "raises", "not applicable")
WEIGHTINGS = ("batch", "batch_max", "sample", "predictions")


# -- The declared matrix ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scenario:
    """One Trainer configuration users run (a ``[scenario.<id>]`` table of the matrix file)."""

    id: str
    title: str
    trainer: dict[str, Any]
    runs: tuple[str, ...]
    data: dict[str, Any]
    base: str = "boring"
    monitor: bool = False
    predict_kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def distributed(self) -> bool:
        return int(self.trainer.get("devices", 1)) > 1


@dataclass(frozen=True)
class Recipe:
    """One recommended replacement (a ``[recipe.<id>]`` table of the matrix file)."""

    id: str
    title: str
    page: str
    define: tuple[str, ...]
    module: str
    callbacks: tuple[str, ...]
    stage: str
    weighting: str
    metric: tuple[str, ...]
    not_applicable: dict[str, str]
    expect: dict[str, dict[str, str]]
    over_runs: str | None = None

    def runs_in(self, scenario: Scenario) -> bool:
        """Whether ``scenario`` runs the stage this recipe reduces."""
        return any(run in STAGE_RUNS[self.stage] for run in scenario.runs)


class MatrixError(ValueError):
    """The matrix file is malformed; the message names the file, the table and the cause."""


def load_matrix(path: Path = MATRIX_FILE) -> tuple[list[Scenario], list[Recipe]]:
    """Read the matrix file: its scenarios and recipes, in file order.

    Raises:
        MatrixError: a table lacks a required key, names an unknown scenario, stage, weighting or base.
    """
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise MatrixError(f"{path}: {error}") from None
    scenarios = []
    for sid, table in document.get("scenario", {}).items():
        data = {**DATA_DEFAULTS, **table.get("data", {})}
        base = table.get("base", "boring")
        if base not in BASES:
            raise MatrixError(f"{path}: [scenario.{sid}] base must be one of {sorted(BASES)}, not {base!r}")
        unknown = set(table.get("runs", ())) - {"fit", "validate", "test", "predict"}
        if unknown or not table.get("runs"):
            raise MatrixError(f"{path}: [scenario.{sid}] runs must list fit/validate/test/predict, not {unknown}")
        scenarios.append(
            Scenario(
                sid,
                table.get("title", sid),
                dict(table.get("trainer", {})),
                tuple(table["runs"]),
                data,
                base,
                bool(table.get("monitor", False)),
                dict(table.get("predict_kwargs", {})),
            )
        )
    ids = {s.id for s in scenarios}
    recipes = []
    for rid, table in document.get("recipe", {}).items():
        where = f"{path}: [recipe.{rid}]"
        missing = {"title", "page", "define", "module", "stage", "weighting", "metric"} - set(table)
        if missing:
            raise MatrixError(f"{where} lacks {sorted(missing)}")
        if table["stage"] not in STAGE_RUNS:
            raise MatrixError(f"{where} stage must be one of {sorted(STAGE_RUNS)}, not {table['stage']!r}")
        if table["weighting"] not in WEIGHTINGS:
            raise MatrixError(f"{where} weighting must be one of {WEIGHTINGS}, not {table['weighting']!r}")
        if table.get("over_runs") not in (None, "running_min"):
            raise MatrixError(f"{where} over_runs must be running_min, not {table['over_runs']!r}")
        declared = {**table.get("not_applicable", {}), **table.get("expect", {})}
        if set(declared) - ids:
            raise MatrixError(f"{where} names unknown scenarios {sorted(set(declared) - ids)}")
        for sid, expectation in table.get("expect", {}).items():
            if expectation.get("outcome") not in ("differs", "raises") or not expectation.get("reason"):
                raise MatrixError(f"{where} expect.{sid} needs outcome = differs | raises and a reason")
            if expectation["outcome"] == "raises" and not expectation.get("match"):
                raise MatrixError(f"{where} expect.{sid}: a declared error needs match = text of the error")
        metric = table["metric"]
        recipes.append(
            Recipe(
                rid,
                table["title"],
                table["page"],
                tuple(table["define"]),
                table["module"],
                tuple(table.get("callbacks", ())),
                table["stage"],
                table["weighting"],
                tuple(metric) if isinstance(metric, list) else (metric,),
                dict(table.get("not_applicable", {})),
                {sid: dict(e) for sid, e in table.get("expect", {}).items()},
                table.get("over_runs"),
            )
        )
    return scenarios, recipes


# -- Taking a recipe from its page ------------------------------------------------------------------------------
def page_source(page: Path) -> str:
    """The Python source of a page: a gallery script as it is; for a MyST notebook (``.md``), its ``code-cell``
    blocks, every other line blanked so that line numbers stay the page's own."""
    text = page.read_text(encoding="utf-8")
    if page.suffix != ".md":
        return text
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith("```{code-cell}"):
            inside = True
            lines.append("")
        elif inside and line.startswith("```"):
            inside = False
            lines.append("")
        else:
            lines.append(line if inside else "")
    return "\n".join(lines) + "\n"


def page_definitions(page: Path, names: tuple[str, ...], base: type) -> dict[str, Any]:
    """The namespace of ``page``'s imports and its top-level definitions ``names``, with ``BoringModel`` = ``base``.

    ``page`` is a gallery script or a MyST notebook (:func:`page_source`).

    The statements are compiled from the page's own source with its file name, so a traceback names the page and
    the line the reader sees. Nothing else of the page runs (not its training, not its checks).

    Raises:
        MatrixError: ``page`` does not define one of ``names`` at top level.
    """
    tree = ast.parse(page_source(page), filename=str(page))
    namespace: dict[str, Any] = {"__name__": f"recipe_page_{page.stem}", "__file__": str(page)}
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
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
            raise MatrixError(f"{page}: defines no top-level {name!r} (named in {MATRIX_FILE.name})")
        exec(compile(ast.Module(body=[by_name[name]], type_ignores=[]), str(page), "exec"), namespace)
    return namespace


# -- Scenario bases: what a user's module looks like in that configuration --------------------------------------
@functools.cache
def _bases() -> dict[str, Any]:
    from lightning.pytorch.demos.boring_classes import BoringModel as DemoModel

    class BoringModel(DemoModel):
        """Lightning's BoringModel, its evaluation steps taking ``dataloader_idx`` as a module with several
        validation dataloaders must (Lightning raises otherwise)."""

        def validation_step(self, batch, batch_idx, dataloader_idx=0):
            return super().validation_step(batch, batch_idx)

        def test_step(self, batch, batch_idx, dataloader_idx=0):
            return super().test_step(batch, batch_idx)

    class ManualOptimization(BoringModel):
        """Manual optimization: ``training_step`` steps the optimizer itself and returns the loss."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.automatic_optimization = False

        def training_step(self, batch, batch_idx):
            optimizer = self.optimizers()
            loss = self.step(batch)
            optimizer.zero_grad()
            self.manual_backward(loss)
            optimizer.step()
            return {"loss": loss}

    class ManualReturnsNothing(ManualOptimization):
        """Manual optimization whose ``training_step`` returns nothing (Lightning allows it)."""

        def training_step(self, batch, batch_idx):
            super().training_step(batch, batch_idx)

    class SkipsBatchOne(BoringModel):
        """``training_step`` returns ``None`` for ``batch_idx == 1``: Lightning skips that batch's optimization."""

        def training_step(self, batch, batch_idx):
            output = super().training_step(batch, batch_idx)
            return None if batch_idx == 1 else output

    return {
        "boring": BoringModel,
        "manual": ManualOptimization,
        "manual-returns-nothing": ManualReturnsNothing,
        "skips-batch-1": SkipsBatchOne,
    }


BASES = ("boring", "manual", "manual-returns-nothing", "skips-batch-1")
#: Batches whose training_step returns no loss, by base: the old ``outputs`` list had no entry for them.
SKIPPED = {"skips-batch-1": lambda batch_idx: batch_idx == 1, "manual-returns-nothing": lambda batch_idx: True}


# -- Observers beside the recipe --------------------------------------------------------------------------------
@functools.cache
def _observers():
    """The matrix's logger and ground-truth callback classes (defined lazily: Lightning is imported on use)."""
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.loggers import Logger
    from lightning.pytorch.utilities import rank_zero_only

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
        """Keeps what the ground truth needs, on rank 0, in ``file`` (``torch.save``): the weights each training
        batch was computed with and the batch, and the weights of each validation, test and predict run."""

        def __init__(self, file: Path):
            self.file = Path(file)
            self.record: dict[str, list] = {"train": [], "validation": [], "test": [], "predict": []}

        @staticmethod
        def _weights(pl_module):
            return {name: value.detach().clone() for name, value in pl_module.state_dict().items()}

        def setup(self, trainer, pl_module, stage):
            # Each Trainer call under ddp_fork starts from the main process's copy of this callback: carry on
            # from what the previous call's rank 0 kept.
            if self.file.exists():
                self.record = torch.load(self.file, weights_only=False)

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            entry = {"epoch": trainer.current_epoch, "batch_idx": batch_idx, "batch": batch.detach().clone()}
            self.record["train"].append({**entry, "weights": self._weights(pl_module)})

        def on_validation_epoch_start(self, trainer, pl_module):
            if not trainer.sanity_checking:  # sanity-check values are never logged: nothing to compare
                self.record["validation"].append(self._weights(pl_module))

        def on_test_epoch_start(self, trainer, pl_module):
            self.record["test"].append(self._weights(pl_module))

        def on_predict_epoch_start(self, trainer, pl_module):
            self.record["predict"].append(self._weights(pl_module))

        def teardown(self, trainer, pl_module, stage):
            if trainer.global_rank == 0:
                torch.save(self.record, self.file)

    class GraphCheck(pl.Callback):
        """After every training batch, looks for cached tensors that still hold an autograd graph in the recipe's
        module and callbacks (public list / dict attributes): a cache that keeps graphs alive grows memory."""

        def __init__(self, owners):
            self.owners = owners
            self.found: list[str] = []

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            for owner in [pl_module, *self.owners]:
                for name, value in vars(owner).items():
                    if name.startswith("_") or not isinstance(value, (list, dict)):
                        continue
                    items = value.values() if isinstance(value, dict) else value
                    for item in items:
                        for tensor in item if isinstance(item, (list, tuple)) else [item]:
                            if isinstance(tensor, torch.Tensor) and tensor.grad_fn is not None:
                                self.found.append(f"{type(owner).__name__}.{name}")
                                return

    return RecordingLogger, GroundTruth, GraphCheck


# -- Ground truth: plain PyTorch over the data and the recorded weights ------------------------------------------
def _loss_per_sample(weights: dict, batch):
    """BoringModel's loss (mean squared error against ones), one value per sample: shape ``(batch,)``."""
    import torch
    from lightning.pytorch.demos.boring_classes import BoringModel

    reference = BoringModel()
    reference.load_state_dict(weights)
    reference.eval()
    with torch.no_grad():
        predictions = reference(batch)
        return ((predictions - torch.ones_like(predictions)) ** 2).mean(dim=1), predictions


def _reduce(per_batch: list, weighting: str) -> float:
    """Mean of per-batch means (``batch``), the largest per-batch mean (``batch_max``: the epoch's worst batch) or
    the mean of every sample (``sample``) of a list of per-sample loss tensors."""
    import torch

    if weighting == "batch":
        return torch.stack([losses.mean() for losses in per_batch]).mean().item()
    if weighting == "batch_max":
        return torch.stack([losses.mean() for losses in per_batch]).max().item()
    return torch.cat(per_batch).mean().item()


def ground_truth(recipe: Recipe, scenario: Scenario, record: dict, datasets: dict) -> list:
    """The values the recipe must log, in order: one per training epoch, validation, test or predict run.

    Training epochs use the recorded batches with the weights before each (the old ``outputs`` list held each
    batch's loss at those weights; batches whose step returned no loss had no entry). Evaluation runs use the
    dataset itself, every sample once, batched as a plain ``DataLoader`` would -- never through Lightning's
    sampler, so under DDP a padded sample is not counted twice.
    """
    import torch
    from torch.utils.data import DataLoader

    batch_size = scenario.data["batch_size"]
    if recipe.stage == "train":
        skipped = SKIPPED.get(scenario.base, lambda batch_idx: False)
        epochs: dict[int, list] = {}
        for entry in record["train"]:
            if not skipped(entry["batch_idx"]):
                epochs.setdefault(entry["epoch"], []).append(_loss_per_sample(entry["weights"], entry["batch"])[0])
        return [[_reduce(losses, recipe.weighting)] for _, losses in sorted(epochs.items())]
    if recipe.stage == "predict":
        loader = DataLoader(datasets["predict"], batch_size=batch_size)
        return [[torch.cat([_loss_per_sample(weights, batch)[1] for batch in loader])] for weights in record["predict"]]
    loaders = datasets["val"] if recipe.stage == "validation" else [datasets["test"]]
    limit = scenario.trainer.get("limit_val_batches" if recipe.stage == "validation" else "limit_test_batches")
    if limit is not None and not isinstance(limit, int):
        raise MatrixError(f"[scenario.{scenario.id}]: the ground truth supports an integer batch limit only")
    values = []
    for weights in record[recipe.stage]:
        per_loader = []
        for dataset in loaders:
            batches = list(DataLoader(dataset, batch_size=batch_size))[:limit]
            per_batch = [_loss_per_sample(weights, batch)[0] for batch in batches]
            per_loader.append(_reduce(per_batch, recipe.weighting))
        values.append(per_loader)
    if recipe.over_runs == "running_min":  # the best value so far, run after run (a "best_val_loss")
        values = [[min(run[i] for run in values[: n + 1]) for i in range(len(values[n]))] for n in range(len(values))]
    return values


# -- One cell ---------------------------------------------------------------------------------------------------
def _metric_names(recipe: Recipe, loaders: int) -> list[str]:
    if len(recipe.metric) == 1 and "{idx}" in recipe.metric[0]:
        return [recipe.metric[0].format(idx=idx) for idx in range(loaders)]
    return list(recipe.metric)


def _logged(file: Path, names: list[str]) -> list[list[float]]:
    """Each logging call that carried the recipe's metrics, in order: one list of values per call."""
    rows = []
    if file.exists():
        for line in file.read_text(encoding="utf-8").splitlines():
            metrics = json.loads(line)["metrics"]
            if any(name in metrics for name in names):
                rows.append([metrics.get(name, math.nan) for name in names])
    return rows


def _compare(seen: list, expected: list) -> tuple[str, str, float]:
    """``("holds" | "differs", detail, largest relative error)`` of two lists of per-run value lists."""
    import torch

    if len(seen) != len(expected):
        return "differs", f"{len(seen)} values logged, {len(expected)} expected", math.inf
    worst = 0.0
    where = ""
    for run, (got, want) in enumerate(zip(seen, expected, strict=True)):
        if len(got) != len(want):
            return "differs", f"run {run}: {len(got)} values logged per run, {len(want)} expected", math.inf
        for index, (a, b) in enumerate(zip(got, want, strict=True)):
            if isinstance(b, torch.Tensor):
                if not isinstance(a, torch.Tensor) or a.shape != b.shape:
                    shape = tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__
                    return "differs", f"run {run}: shape {shape}, expected {tuple(b.shape)}", math.inf
                error = ((a - b).abs().max() / b.abs().max()).item()
                error = math.inf if math.isnan(error) else error
            else:
                error = abs(a - b) / abs(b) if b else abs(a)
                error = math.inf if math.isnan(error) else error
            if error > worst:
                loader = f", loader {index}" if len(want) > 1 else ""
                worst, where = error, f"run {run}{loader}: {a!r} vs {b!r}"
    if worst <= REL_TOL:
        return "holds", f"{len(seen)} values", worst
    return "differs", f"largest relative error {worst:.3g} ({where})", worst


def run_cell(recipe: Recipe, scenario: Scenario, root: Path = ROOT) -> dict[str, Any]:
    """Run ``recipe`` in ``scenario``; return ``{"outcome", "detail", ...}`` (never raises for the recipe's errors).

    ``outcome`` is one of :data:`OUTCOMES`. A ``raises`` cell's ``detail`` is the exception's type and message as
    raised (for DDP, as the launcher re-raised it), with the line of the recipe's page in ``where``.
    """
    if scenario.id in recipe.not_applicable:
        return {"outcome": "not applicable", "detail": recipe.not_applicable[scenario.id]}
    if not recipe.runs_in(scenario):
        return {"outcome": "not applicable", "detail": f"this scenario runs no {recipe.stage} stage"}
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
    from lightning.pytorch.demos.boring_classes import RandomDataset
    from torch.utils.data import DataLoader

    base = _bases()[scenario.base]
    namespace = page_definitions(root / recipe.page, recipe.define, base)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"matrix-{recipe.id}-{scenario.id}-") as tmp:
        tmp_path = Path(tmp)
        RecordingLogger, GroundTruth, GraphCheck = _observers()
        pl.seed_everything(0, verbose=False)
        data = scenario.data
        datasets = {
            "train": RandomDataset(32, data["train"]),
            "val": [RandomDataset(32, n) for n in data["val"]],
            "test": RandomDataset(32, data["test"]),
            "predict": RandomDataset(32, data["predict"]),
        }
        loader = {
            key: DataLoader(value, batch_size=data["batch_size"], shuffle=key == "train" and data["shuffle"])
            for key, value in datasets.items()
            if key != "val"
        }
        val_loaders = [DataLoader(d, batch_size=data["batch_size"]) for d in datasets["val"]]
        model = namespace[recipe.module]()
        callbacks = [namespace[name]() for name in recipe.callbacks]
        names = _metric_names(recipe, len(val_loaders))
        monitors = []
        if scenario.monitor and recipe.stage in ("train", "validation"):
            on_train = recipe.stage == "train"
            monitor = names[0]

            class CheckpointSubclass(ModelCheckpoint):
                """A user's ModelCheckpoint subclass: Lightning orders it with the monitoring callbacks."""

            monitors = [
                ModelCheckpoint(dirpath=tmp_path / "best", monitor=monitor, save_on_train_epoch_end=on_train),
                EarlyStopping(monitor=monitor, patience=1000, check_on_train_epoch_end=on_train),
                CheckpointSubclass(dirpath=tmp_path / "sub", monitor=monitor, save_on_train_epoch_end=on_train),
            ]
        truth_file, log_file = tmp_path / "truth.pt", tmp_path / "log.jsonl"
        graph_check = GraphCheck(callbacks)
        trainer = pl.Trainer(
            **{
                **TRAINER_BASE,
                "default_root_dir": str(tmp_path),
                "logger": RecordingLogger(log_file),
                "callbacks": [*callbacks, *monitors, GroundTruth(truth_file), graph_check],
                **scenario.trainer,
            }
        )
        val = val_loaders[0] if len(val_loaders) == 1 else val_loaders
        calls = {
            "fit": lambda: trainer.fit(model, loader["train"], val),
            "validate": lambda: trainer.validate(model, val, verbose=False),
            "test": lambda: trainer.test(model, loader["test"], verbose=False),
            "predict": lambda: trainer.predict(model, loader["predict"], **scenario.predict_kwargs),
        }
        try:
            for run in scenario.runs:
                calls[run]()
        except Exception as error:  # the recipe's failure is the cell's outcome
            return {
                "outcome": "raises",
                "detail": f"{type(error).__name__}: {error}".strip(),
                "where": _page_line(traceback.extract_tb(error.__traceback__), root / recipe.page),
                "seconds": round(time.perf_counter() - started, 3),
            }
        record = torch.load(truth_file, weights_only=False)
        expected = ground_truth(recipe, scenario, record, datasets)
        if recipe.weighting == "predictions":
            attribute = recipe.metric[0].removeprefix("attribute:")
            owners = [owner for owner in (model, *callbacks) if hasattr(owner, attribute)]
            # one tensor per predict dataloader (every scenario here predicts with one dataloader)
            seen = [list(getattr(owners[0], attribute))] if owners else []
            expected = expected[-1:]  # the attribute holds what the last predict run left
        else:
            seen = _logged(log_file, names)
        outcome, detail, error = _compare(seen, expected)
        if outcome == "holds" and graph_check.found:
            outcome, detail = "differs", f"{graph_check.found[0]} holds tensors with an autograd graph"
        if outcome == "holds" and monitors:
            best = min(values[0] for values in expected)
            scores = {
                "ModelCheckpoint.best_model_score": monitors[0].best_model_score,
                "EarlyStopping.best_score": monitors[1].best_score,
                "subclass best_model_score": monitors[2].best_model_score,
            }
            for name, score in scores.items():
                if score is None or not math.isclose(float(score), best, rel_tol=REL_TOL):
                    outcome, detail = "differs", f"{name} is {score}, the best epoch value is {best!r}"
                    break
    return {
        "outcome": outcome,
        "detail": detail,
        "relative_error": None if math.isinf(error) else error,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _page_line(frames: traceback.StackSummary, page: Path) -> str | None:
    """``path:line`` of the deepest frame of the recipe's page in a traceback, or ``None``."""
    lines = [frame for frame in frames if Path(frame.filename) == page]
    return f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page}:{lines[-1].lineno}" if lines else None


def expected_outcome(recipe: Recipe, scenario: Scenario) -> str:
    """What the matrix file declares for a cell: ``holds`` unless ``expect`` or ``not_applicable`` says otherwise."""
    if scenario.id in recipe.not_applicable or not recipe.runs_in(scenario):
        return "not applicable"
    return recipe.expect.get(scenario.id, {}).get("outcome", "holds")


@contextlib.contextmanager
def _quiet():
    """Lightning's info banners and what the cells print stay out of the matrix's own output.

    A Python warning goes through the process's filters: in the build (``PYTHONWARNINGS``, from
    ``docs/_ext/declared_warnings.py``) an undeclared warning is an error, so the cell raises and the build names it.
    """
    lightning_logger = logging.getLogger("lightning.pytorch")
    level = lightning_logger.level
    lightning_logger.setLevel(logging.ERROR)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        try:
            yield
        finally:
            lightning_logger.setLevel(level)


def run_matrix(
    scenarios: list[Scenario], recipes: list[Recipe], root: Path = ROOT, only: set[str] | None = None
) -> dict[str, Any]:
    """Run every cell (or the recipes in ``only``); return the JSON document the page is rendered from."""
    import lightning
    import torch

    cells = []
    started = time.perf_counter()
    for recipe in recipes:
        if only and recipe.id not in only:
            continue
        for scenario in scenarios:
            with _quiet():
                result = run_cell(recipe, scenario, root)
            result.update(recipe=recipe.id, scenario=scenario.id, expected=expected_outcome(recipe, scenario))
            cells.append(result)
    return {
        "lightning": lightning.__version__,
        "torch": torch.__version__,
        "seconds": round(time.perf_counter() - started, 2),
        "scenarios": [{"id": s.id, "title": s.title} for s in scenarios],
        "recipes": [
            {"id": r.id, "title": r.title, "page": r.page, "expect": r.expect}
            for r in recipes
            if not only or r.id in only
        ],
        "cells": cells,
    }


def failures(document: dict[str, Any]) -> list[str]:
    """One line per cell whose outcome is not the declared one.

    A declared ``raises`` must raise an error whose text contains its ``match``; a declared ``differs`` must log as
    many values as expected, with different values (or contain its ``match``). Each line reads
    ``recipe × scenario: expected X, got Y: detail [page]``, ``page`` being the recipe's gallery page (with the
    line, for an exception raised there).
    """
    pages = {recipe["id"]: recipe["page"] for recipe in document["recipes"]}
    expects = {recipe["id"]: recipe["expect"] for recipe in document["recipes"]}
    lines = []
    for cell in document["cells"]:
        where = cell.get("where") or pages[cell["recipe"]]
        head = f"{cell['recipe']} × {cell['scenario']}: expected {cell['expected']}"
        if cell["outcome"] != cell["expected"]:
            lines.append(f"{head}, got {cell['outcome']}: {cell['detail']} [{where}]")
            continue
        declared = expects[cell["recipe"]].get(cell["scenario"], {})
        if declared.get("match") and declared["match"] not in cell["detail"]:
            lines.append(f"{head} with {declared['match']!r}, got: {cell['detail']} [{where}]")
        elif cell["outcome"] == "differs" and cell.get("relative_error") is None and not declared.get("match"):
            # a declared difference is a difference of value: missing or extra values are a different failure
            lines.append(f"{head} in value, got: {cell['detail']} [{where}]")
    return lines


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False, suffix=".tmp") as handle:
        handle.write(text)
    os.replace(handle.name, path)


def main(argv: list[str] | None = None) -> int:
    """Command line: run the matrix, write ``--output`` (JSON), exit 1 naming every unexpected cell."""
    parser = argparse.ArgumentParser(prog="python -m lightning_migrate.scenarios", description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, help="where to write the results (JSON)")
    parser.add_argument("--matrix", type=Path, default=MATRIX_FILE, help="the matrix file (default: %(default)s)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree whose gallery pages run")
    parser.add_argument("--recipe", action="append", help="run only this recipe (repeatable)")
    args = parser.parse_args(argv)
    try:
        scenarios, recipes = load_matrix(args.matrix)
    except MatrixError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    document = run_matrix(scenarios, recipes, args.root.resolve(), set(args.recipe) if args.recipe else None)
    if args.output:
        write_atomically(args.output, json.dumps(document, indent=1, default=str) + "\n")
    counts = {outcome: sum(c["outcome"] == outcome for c in document["cells"]) for outcome in OUTCOMES}
    print(f"scenario matrix: {len(document['cells'])} cells in {document['seconds']} s: {counts}")
    bad = failures(document)
    for line in bad:
        print(f"scenario matrix: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
