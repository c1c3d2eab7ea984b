"""
Several validation dataloaders
==============================

With several validation dataloaders, give ``validation_step`` a ``dataloader_idx`` argument and key the cache by
it: the replacement of ``validation_epoch_end(self, outputs)`` keeps each loader's values apart itself. This page
shows the error without it, the keyed cache, the same for test dataloaders and for the results of
``trainer.validate``, and one ``torchmetrics`` metric object per dataloader.

:claim:`Validation-step-needs-dataloader-idx`; :claim:`validation-epoch-end-once-per-run`.
"""

# %%
# The fix: a cache keyed by ``dataloader_idx``
# --------------------------------------------
# The epoch-end hook logs
# one mean per loader, under a name that carries the loader's index. The cache is also emptied when each
# validation run starts, so that a run that stopped half-way leaves nothing behind.
from collections import defaultdict

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class PerLoaderCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.validation_step_losses = defaultdict(list)  # dataloader_idx -> this run's losses

    def on_validation_epoch_start(self):
        self.validation_step_losses.clear()

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        loss = self.step(batch)
        self.validation_step_losses[dataloader_idx].append(loss.clone())  # cache a clone of this batch's loss
        return loss

    def on_validation_epoch_end(self):
        for idx, losses in sorted(self.validation_step_losses.items()):
            self.log(f"val_loss_{idx}", torch.stack(losses).mean())
        self.validation_step_losses.clear()


# %%
# .. recipe-domain:: per_loader
#
# Two validation dataloaders
# --------------------------
# Lightning's ``RandomDataset``: 16 validation samples in loader 0, 24 in loader 1, batches of 8, and one
# training batch per epoch.
import copy
import csv
import math
import tempfile
from pathlib import Path

import lightning
import lightning.pytorch as pl
import torchmetrics
from lightning.pytorch.demos.boring_classes import RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

pl.seed_everything(4)
train_loader = DataLoader(RandomDataset(32, 8), batch_size=8)
val_loaders = [DataLoader(RandomDataset(32, 16), batch_size=8), DataLoader(RandomDataset(32, 24), batch_size=8)]


def make_trainer(callbacks=(), logger=False):
    return pl.Trainer(
        max_epochs=2,
        num_sanity_val_steps=0,
        callbacks=list(callbacks),
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


# %%
# The symptom: no ``dataloader_idx`` argument
# -------------------------------------------
# A ``validation_step`` migrated from a single-loader model has no ``dataloader_idx``:
# :claim:`validation-step-needs-dataloader-idx`.


class NoDataloaderIdx(BoringModel):
    def validation_step(self, batch, batch_idx):
        return self.step(batch)


trainer = make_trainer()
error = None
try:
    trainer.fit(NoDataloaderIdx(), train_loader, val_loaders)
except RuntimeError as err:
    error = err
    print(f"{type(err).__name__}: {err}")
print(f"training steps taken: {trainer.global_step}")

# %%
# This page sets ``num_sanity_val_steps=0``; the lines above show the error and the training steps taken before it:
# the first epoch's.
assert (
    error is not None and "dataloader_idx" in str(error) and trainer.global_step == trainer.num_training_batches == 1
), "with two validation loaders, a validation_step without dataloader_idx is refused when validation starts"

# %%
# The fix, run
# ------------
# ``PerLoaderCache``, from the top of this page.


# %%
# The checks stand beside the recipe: a ``CSVLogger`` keeps what the module logs, and a small callback keeps a copy
# of the weights when each validation run starts and, in its own ``on_validation_epoch_end``
# (:claim:`plain-callbacks-before-module-epoch-ends`), counts the calls and how many losses per loader the cache holds.


class CacheObserver(pl.Callback):
    def __init__(self):
        self.snapshots = []
        self.cache_sizes = []  # one entry per validation epoch end

    def on_validation_epoch_start(self, trainer, pl_module):
        self.snapshots.append(copy.deepcopy(pl_module.state_dict()))

    def on_validation_epoch_end(self, trainer, pl_module):
        self.cache_sizes.append({idx: len(v) for idx, v in sorted(pl_module.validation_step_losses.items())})


observer = CacheObserver()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
model = PerLoaderCache()
trainer = make_trainer([observer], logger)
trainer.fit(model, train_loader, val_loaders)

with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    rows = [row for row in csv.DictReader(file) if row.get("val_loss_0") or row.get("val_loss_1")]
logged = [{idx: float(row[f"val_loss_{idx}"]) for idx in (0, 1)} for row in rows]

# %%
# The reference: each loader's batches, evaluated by hand with the weights of each validation run.


def reference_mean(state_dict, loader):
    reference = BoringModel()
    reference.load_state_dict(state_dict)
    reference.eval()
    with torch.no_grad():
        return torch.stack([reference.step(batch) for batch in loader]).mean().item()


reference_means = [
    {idx: reference_mean(state, loader) for idx, loader in enumerate(val_loaders)} for state in observer.snapshots
]
assert len(logged) == len(reference_means) == 2, "one logged row per validation run"
calls = len(observer.cache_sizes)
print(f"on_validation_epoch_end calls: {calls}; cached losses per loader at each call: {observer.cache_sizes}")
for run, (means, expected) in enumerate(zip(logged, reference_means, strict=True)):
    print(f"run {run}: " + ", ".join(f"loader {i} {means[i]:.6f} (by hand: {expected[i]:.6f})" for i in means))

# %%
# The lines above show two calls of the hook in two epochs, not one per loader:
# :claim:`validation-epoch-end-once-per-run`. Each call found both loaders'
# losses in the cache (2 and 3 batches) and logged both means in one row, equal to the references; the cache is
# empty afterwards.
assert observer.cache_sizes == [{0: len(val_loaders[0]), 1: len(val_loaders[1])}] * 2 == [{0: 2, 1: 3}] * 2, (
    "on_validation_epoch_end ran once per validation run, after both loaders' batches"
)
assert logged == reference_means
assert not model.validation_step_losses

# %%
# Test dataloaders
# ----------------
# .. recipe-domain:: per_loader_test
#
# For a list of test loaders, key the test cache by ``dataloader_idx`` the same way. (For
# prediction, see :doc:`on_predict_epoch_end lost its outputs </examples/stages/predict_epoch_end>`: one tensor per
# dataloader.)


class PerLoaderTestCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.test_step_losses = defaultdict(list)  # dataloader_idx -> this run's losses

    def on_test_epoch_start(self):
        self.test_step_losses.clear()

    def test_step(self, batch, batch_idx, dataloader_idx=0):
        loss = self.step(batch)
        self.test_step_losses[dataloader_idx].append(loss.clone())
        return loss

    def on_test_epoch_end(self):
        for idx, losses in sorted(self.test_step_losses.items()):
            self.log(f"test_loss_{idx}", torch.stack(losses).mean())
        self.test_step_losses.clear()


test_model = PerLoaderTestCache()
test_model.load_state_dict(model.state_dict())
test_results = make_trainer().test(test_model, val_loaders, verbose=False)
test_references = {idx: reference_mean(model.state_dict(), loader) for idx, loader in enumerate(val_loaders)}
print(f"trainer.test returned {test_results}")
print(f"by hand: {test_references}")

# %%
# :claim:`Test-returns-one-dictionary-per-loader`.
assert len(test_results) == 2, "trainer.test returned one dictionary per test dataloader"
assert [test_results[0][f"test_loss_{idx}"] for idx in (0, 1)] == [test_references[0], test_references[1]]

# %%
# What ``trainer.validate`` and ``trainer.test`` return
# -----------------------------------------------------
# :claim:`Validate-returns-one-dictionary-per-loader` -- but a value logged in ``on_validation_epoch_end`` or
# ``on_test_epoch_end`` belongs to no dataloader (:claim:`validation-epoch-end-once-per-run`):
# :claim:`epoch-end-value-in-every-result-dictionary`.
validate_results = make_trainer().validate(model, val_loaders, verbose=False)
for idx, results in enumerate(validate_results):
    print(f"trainer.validate, dictionary {idx}: {results}")
assert len(validate_results) == 2, "trainer.validate returned one dictionary per validation dataloader"

# %%
# Read such a value by its name (from any dictionary, or from ``trainer.callback_metrics``), not by its position in
# the list.
assert (
    validate_results[0] == validate_results[1]
    and test_results[0] == test_results[1]
    and set(validate_results[1]) == {"val_loss_0", "val_loss_1"}
), "a value logged at epoch end is in every dictionary trainer.validate and trainer.test return"

# %%
# A ``torchmetrics`` metric per dataloader
# ----------------------------------------
# :doc:`No cache at all </examples/stages/torchmetrics_no_cache>` replaces the cache with a ``torchmetrics`` metric
# object, updated in every step and logged with ``on_epoch=True``. With several loaders, a ``validation_step`` that
# takes ``dataloader_idx`` but still updates its one metric object pools them: :claim:`one-metric-pools-loaders`.


class OneMetricForAllLoaders(BoringModel):
    def __init__(self):
        super().__init__()
        self.val_mean_loss = torchmetrics.MeanMetric()

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        loss = self.step(batch)
        self.val_mean_loss.update(loss, weight=len(batch))
        self.log("val_metric", self.val_mean_loss, on_step=False, on_epoch=True)


def sample_mean(state_dict, loaders):
    """The mean loss over every sample of ``loaders``, computed by hand (no Lightning)."""
    reference = BoringModel()
    reference.load_state_dict(state_dict)
    reference.eval()
    with torch.no_grad():
        batches = [batch for loader in loaders for batch in loader]
        return torch.cat([((reference(batch) - 1) ** 2).mean(dim=1) for batch in batches]).mean().item()


pooled_model = OneMetricForAllLoaders()
pooled_model.load_state_dict(model.state_dict())
[pooled_0, pooled_1] = make_trainer().validate(pooled_model, val_loaders, verbose=False)
pooled = [pooled_0["val_metric/dataloader_idx_0"], pooled_1["val_metric/dataloader_idx_1"]]
weights = model.state_dict()
own = [sample_mean(weights, [loader]) for loader in val_loaders]
both = sample_mean(weights, val_loaders)
print(f"logged: loader 0 {pooled[0]:.6f}, loader 1 {pooled[1]:.6f}")
print(f"by hand: loader 0 {own[0]:.6f}, loader 1 {own[1]:.6f}, both loaders' samples together {both:.6f}")
gap = (pooled[1] - own[1]) / own[1]
print(f"loader 1's logged value is off by {gap:.2%}")

# %%
# Loader 1's value is the mean over both loaders' 40 samples, not over its own 24.
assert math.isclose(pooled[1], both, rel_tol=1e-6) and not math.isclose(pooled[1], own[1], rel_tol=1e-4), (
    "one metric object updated by both loaders logs the mean over both loaders' samples"
)

# %%
# The fix is one metric object per loader, in a ``torch.nn.ModuleList`` of the module. The module
# adds the metrics it needs when a validation run starts, and resets them there, so every run starts from fresh states
# (see :doc:`No cache at all </examples/stages/torchmetrics_no_cache>`, on ``trainer.validate()`` before ``fit``).
# The module passes ``metric_attribute`` to ``self.log``: the name of the attribute that holds each metric it
# added.
#
# .. recipe-domain:: per_loader_metric


class PerLoaderMetric(BoringModel):
    def __init__(self):
        super().__init__()
        self.val_mean_loss = torch.nn.ModuleList()  # one MeanMetric per validation dataloader

    def on_validation_epoch_start(self):
        loaders = self.trainer.val_dataloaders
        count = len(loaders) if isinstance(loaders, (list, tuple)) else 1
        while len(self.val_mean_loss) < count:
            self.val_mean_loss.append(torchmetrics.MeanMetric().to(self.device))
        for metric in self.val_mean_loss:
            metric.reset()

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        loss = self.step(batch)
        metric = self.val_mean_loss[dataloader_idx]
        metric.update(loss, weight=len(batch))
        name, attribute = f"val_metric_{dataloader_idx}", f"val_mean_loss.{dataloader_idx}"
        self.log(name, metric, on_step=False, on_epoch=True, add_dataloader_idx=False, metric_attribute=attribute)


# %%
# Two epochs with the default sanity check, then ``trainer.validate``. A callback beside the module keeps the
# weights of every validation run.


class ValidationWeights(pl.Callback):
    def __init__(self):
        self.snapshots = []

    def on_validation_epoch_start(self, trainer, pl_module):
        self.snapshots.append(copy.deepcopy(pl_module.state_dict()))


metric_observer = ValidationWeights()
metric_logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
metric_model = PerLoaderMetric()
metric_trainer = pl.Trainer(
    max_epochs=2,
    callbacks=[metric_observer],
    logger=metric_logger,
    log_every_n_steps=1,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
metric_trainer.fit(metric_model, train_loader, val_loaders)
validated = metric_trainer.validate(metric_model, val_loaders, verbose=False)
with open(Path(metric_logger.log_dir, "metrics.csv"), newline="") as file:
    rows = [row for row in csv.DictReader(file) if row.get("val_metric_0")]
metric_logged = [[float(row[f"val_metric_{idx}"]) for idx in (0, 1)] for row in rows]
real_runs = metric_observer.snapshots[1:]  # the first snapshot is the sanity check's, not in the log
metric_references = [[sample_mean(state, [loader]) for loader in val_loaders] for state in real_runs]
for run, (seen, expected) in enumerate(zip(metric_logged, metric_references, strict=True)):
    print(f"run {run}: logged {[round(v, 6) for v in seen]} (by hand: {[round(v, 6) for v in expected]})")
print(f"trainer.validate returned {validated}")

# %%
# Each loader's value is the mean over its own samples, in both epochs and in ``trainer.validate``:
# :claim:`step-logged-value-belongs-to-its-loader`. ``PerLoaderCache``, ``PerLoaderTestCache`` and
# ``PerLoaderMetric`` also hold with one loader or two (:doc:`where they work </reference/scenarios>`). Under DDP
# :claim:`ddp-module-cache-differs`: :doc:`Per-rank caches under DDP </examples/distributed/ddp_per_rank_caches>`
# shows the variant.
assert len(metric_logged) == len(metric_references) == 3  # 2 epochs, then trainer.validate
for seen, expected in zip(metric_logged, metric_references, strict=True):
    assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(seen, expected, strict=True))
assert [set(results) for results in validated] == [{"val_metric_0"}, {"val_metric_1"}], (
    "trainer.validate returned each loader's value, logged in validation_step, in that loader's dictionary only"
)
