"""
No cache at all: ``torchmetrics`` and ``self.log(..., on_epoch=True)``
======================================================================

Many ``validation_epoch_end`` methods only averaged a loss or computed a metric over the epoch. Neither needs a
cache: ``self.log(name, value, on_epoch=True)`` of a scalar, or a ``torchmetrics`` metric object updated in every
step and logged with ``on_epoch=True``. Give a ``MeanMetric`` fed one mean per batch the batch's size as its
weight (the run without it is below). This page checks both epoch values against every validation sample evaluated
by hand, on a validation set whose last batch is smaller, and that the metric started each epoch empty.
"""

# %%
# The module
# ----------
# .. recipe-domain:: torchmetrics torchmetrics_log
#
# The module keeps a ``MeanMetric``: it updates it in every step and logs the metric object itself, not its value:
# :claim:`logged-metric-computed-and-reset`. Each update carries the batch's sample count as its weight.
# The loss is also logged as a plain scalar: :claim:`self-log-on-epoch-sample-mean`. The reset at the start of each
# validation run keeps ``trainer.validate()`` before ``trainer.fit()`` working (the last section of this page shows
# why).
import copy
import csv
import math
import tempfile
from pathlib import Path

import lightning
import lightning.pytorch as pl
import torch
import torchmetrics
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class MetricModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.val_mean_loss = torchmetrics.MeanMetric()

    def on_validation_epoch_start(self):
        self.val_mean_loss.reset()  # fresh states, made in this run's grad mode

    def validation_step(self, batch, batch_idx):
        loss = self.step(batch)  # the mean over the batch's samples
        self.val_mean_loss.update(loss, weight=len(batch))
        self.log("val_metric", self.val_mean_loss, on_step=False, on_epoch=True)
        self.log("val_scalar", loss, on_step=False, on_epoch=True)


# %%
# Train, with the checks beside the module
# ----------------------------------------
# 20 validation samples in batches of 8: the last batch holds 4. A ``CSVLogger`` keeps what the module
# logs; a small callback keeps a copy of the weights each validation run used, reads the metric's
# ``update_count`` when each run starts and ends, and notes whether the run is in inference mode.


class MetricObserver(pl.Callback):
    def __init__(self):
        self.snapshots = []
        self.updates_at_start = []
        self.updates_at_end = []
        self.inference_mode = []

    def on_validation_epoch_start(self, trainer, pl_module):
        self.snapshots.append(copy.deepcopy(pl_module.state_dict()))
        self.inference_mode.append(torch.is_inference_mode_enabled())
        self.updates_at_start.append(pl_module.val_mean_loss.update_count)

    def on_validation_end(self, trainer, pl_module):
        self.updates_at_end.append(pl_module.val_mean_loss.update_count)


EPOCHS = 3
pl.seed_everything(2)
train_loader = DataLoader(RandomDataset(32, 32), batch_size=8)
val_dataset = RandomDataset(32, 20)
val_loader = DataLoader(val_dataset, batch_size=8)


def fit(model, callbacks=(), validate_first=False):
    """Train ``model`` (after ``trainer.validate`` if ``validate_first``); return the (val_metric, val_scalar)
    pairs it logged, one per validation run."""
    logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
    trainer = pl.Trainer(
        max_epochs=EPOCHS,
        num_sanity_val_steps=0,
        callbacks=list(callbacks),
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    if validate_first:
        trainer.validate(model, val_loader, verbose=False)
    trainer.fit(model, train_loader, val_loader)
    with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
        rows = [row for row in csv.DictReader(file) if row["val_metric"]]
    return [(float(row["val_metric"]), float(row["val_scalar"])) for row in rows]


observer = MetricObserver()
model = MetricModel()
logged = fit(model, [observer])
print(f"validation batch sizes: {[len(batch) for batch in val_loader]}")

# %%
# The reference: every validation sample once, evaluated by hand
# ---------------------------------------------------------------
# Each validated set of weights, in eval mode under ``torch.no_grad``, applied to one sample at a time: the epoch
# value is the mean over the 20 samples, whatever the batching.


def reference_mean(state_dict):
    reference = BoringModel()
    reference.load_state_dict(state_dict)
    reference.eval()
    with torch.no_grad():
        return torch.stack([reference.step(sample) for sample in DataLoader(val_dataset, batch_size=1)]).mean().item()


reference_means = [reference_mean(state) for state in observer.snapshots]
assert len(logged) == len(reference_means) == EPOCHS, "one logged pair per validation run"
for epoch, ((metric, scalar), expected) in enumerate(zip(logged, reference_means, strict=True)):
    print(f"epoch {epoch}: MeanMetric {metric:.6f}, self.log scalar {scalar:.6f} (by hand: {expected:.6f})")
print(f"MeanMetric.update_count at each validation epoch start: {observer.updates_at_start}")
print(f"MeanMetric.update_count at each validation end: {observer.updates_at_end}")

# %%
# What Lightning did for us
# -------------------------
# Both epoch values equal the reference (compared with a relative tolerance of 1e-6, not bit for bit), and
# :claim:`logged-metric-computed-and-reset`.
assert [len(batch) for batch in val_loader] == [8, 8, 4]
assert all(
    math.isclose(metric, expected, rel_tol=1e-6) and math.isclose(scalar, expected, rel_tol=1e-6)
    for (metric, scalar), expected in zip(logged, reference_means, strict=True)
), "the weighted MeanMetric and the self.log scalar both logged the mean over every sample, last batch of 4 included"
assert observer.updates_at_start == [0] * EPOCHS and observer.updates_at_end == [len(val_loader)] * EPOCHS == [3] * 3, (
    "the logged metric had every update of a run at its end and none when the next run began"
)
assert model.val_mean_loss.update_count == 0

# %%
# Without the weight
# ------------------
# :claim:`Meanmetric-unweighted-mean-of-batch-means`. The same training, without the weight:


class UnweightedMetricModel(MetricModel):
    def validation_step(self, batch, batch_idx):
        loss = self.step(batch)
        self.val_mean_loss.update(loss)  # every batch weighted 1
        self.log("val_metric", self.val_mean_loss, on_step=False, on_epoch=True)
        self.log("val_scalar", loss, on_step=False, on_epoch=True)


unweighted_observer = MetricObserver()
unweighted = fit(UnweightedMetricModel(), [unweighted_observer])


def batch_means_mean(state_dict):
    reference = BoringModel()
    reference.load_state_dict(state_dict)
    reference.eval()
    with torch.no_grad():
        return torch.stack([reference.step(batch) for batch in val_loader]).mean().item()


for epoch, ((metric, scalar), state) in enumerate(zip(unweighted, unweighted_observer.snapshots, strict=True)):
    gap = abs(metric - scalar) / scalar
    print(f"epoch {epoch}: MeanMetric {metric:.6f} (mean of batch means: {batch_means_mean(state):.6f}), ", end="")
    print(f"self.log scalar {scalar:.6f}, relative gap {gap:.2%}")

# %%
# The unweighted metric is the mean of batch means, not the dataset mean: the two disagree in every epoch.
# Where ``MetricModel`` (with the weight) held: the box above the recipe (:doc:`where it works </reference/scenarios>`);
# with an uneven last batch both of its values match the mean over every sample. Two configurations need a variant:
# several validation dataloaders, where :claim:`validation-step-needs-dataloader-idx` and
# :claim:`one-metric-pools-loaders` (:doc:`Several validation dataloaders </examples/pitfalls/multiple_val_dataloaders>`
# keeps one metric per loader), and DDP, where :claim:`meanmetric-counts-the-repeated-sample`
# (:doc:`Per-rank caches under DDP </examples/distributed/ddp_per_rank_caches>`).
assert all(
    math.isclose(metric, batch_means_mean(state), rel_tol=1e-6)
    and math.isclose(scalar, reference_mean(state), rel_tol=1e-6)
    and not math.isclose(metric, scalar, rel_tol=1e-4)
    for (metric, scalar), state in zip(unweighted, unweighted_observer.snapshots, strict=True)
), "MeanMetric.update(loss) without a weight logged the mean of batch means, not the mean over the samples"

# %%
# .. _validate-before-fit:
#
# ``trainer.validate()`` before ``trainer.fit()``
# -----------------------------------------------
# :claim:`Validate-runs-in-inference-mode`. Below, the module without its own reset at the start of each run, run
# through ``trainer.validate()`` and then ``trainer.fit()``, and what it printed:


class NoResetAtStart(MetricModel):
    def on_validation_epoch_start(self):
        pass  # MetricModel without its reset


without_reset = NoResetAtStart()
inference_error = None
try:
    fit(without_reset, validate_first=True)
except RuntimeError as err:
    inference_error = err
    print(f"{type(err).__name__}: {err}")
print(f"the metric's state is an inference tensor: {without_reset.val_mean_loss.mean_value.is_inference()}")

# %%
# ``MetricModel`` itself, in the same order: one value for ``trainer.validate()``, then one per epoch, each equal
# to the mean over every sample.
validate_observer = MetricObserver()
validated_then_fit = fit(MetricModel(), [validate_observer], validate_first=True)
validate_references = [reference_mean(state) for state in validate_observer.snapshots]
for run, ((metric, scalar), expected) in enumerate(zip(validated_then_fit, validate_references, strict=True)):
    print(f"run {run}: MeanMetric {metric:.6f}, self.log scalar {scalar:.6f} (by hand: {expected:.6f})")
print(f"inference mode in each validation run: {validate_observer.inference_mode}")

# %%
# With the reset, both values hold after a ``trainer.validate()`` too, where the module without it stopped at the
# first validation run inside ``fit``.
assert (
    "inference tensor" in str(inference_error)
    and without_reset.val_mean_loss.mean_value.is_inference()
    and validate_observer.inference_mode == [True] + [False] * EPOCHS
), "trainer.validate() ran in inference mode, fit's validation not, and the states reset() left were inference tensors"
assert len(validated_then_fit) == 1 + EPOCHS
for (metric, scalar), expected in zip(validated_then_fit, validate_references, strict=True):
    assert math.isclose(metric, expected, rel_tol=1e-6)
    assert math.isclose(scalar, expected, rel_tol=1e-6)
