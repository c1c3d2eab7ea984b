"""
``outputs["loss"]`` under gradient accumulation
===============================================

:claim:`Accumulation-divides-outputs-loss`: on this page, a callback that caches ``outputs["loss"]`` as it comes logs
an epoch mean 3 times too small. Multiply it back by ``trainer.accumulate_grad_batches``.
"""

# %%
# The fix
# -------
# The one change to a callback written without accumulation is
# ``outputs["loss"].detach() * trainer.accumulate_grad_batches``; the callback also skips empty ``outputs``, as
# the :doc:`callback-side recipe </examples/core/callback_side_caching>` does (see :doc:`Empty outputs: a skipped
# batch and manual optimization </examples/pitfalls/empty_outputs>`).
import lightning.pytorch as pl
import torch


class EpochLossCallback(pl.Callback):
    def __init__(self):
        self.batch_losses = []  # this epoch's cache

    def on_train_epoch_start(self, trainer, pl_module):
        self.batch_losses.clear()  # nothing left over from a run that stopped half-way

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if not outputs:  # an empty outputs: nothing to cache for this batch
            return
        self.batch_losses.append(outputs["loss"].detach() * trainer.accumulate_grad_batches)

    def on_train_epoch_end(self, trainer, pl_module):
        if self.batch_losses:
            pl_module.log("train_loss_epoch_mean", torch.stack(self.batch_losses).mean())
            self.batch_losses.clear()


# %%
# .. recipe-domain:: accumulation_fix
#
# The naive callback
# ------------------
# It caches ``outputs["loss"]`` and logs the epoch mean, as it would without accumulation.
import csv
import math
import tempfile
from pathlib import Path

import lightning
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class NaiveEpochLossCallback(pl.Callback):
    def __init__(self):
        self.batch_losses = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.batch_losses.append(outputs["loss"].detach())

    def on_train_epoch_end(self, trainer, pl_module):
        pl_module.log("train_loss_epoch_mean", torch.stack(self.batch_losses).mean())
        self.batch_losses.clear()


# %%
# The checks beside it
# --------------------
# Two small callbacks record what the page compares, without touching the recipe: the weights and the batch
# each training step is computed with (for a loss computed by hand with plain PyTorch), and the value of
# each ``outputs["loss"]``.


class StepInputs(pl.Callback):
    def __init__(self):
        self.steps = []  # (epoch, batch_idx, batch, weights before the step)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        weights = {name: value.detach().clone() for name, value in pl_module.state_dict().items()}
        self.steps.append((trainer.current_epoch, batch_idx, batch.clone(), weights))


class OutputsLoss(pl.Callback):
    def __init__(self):
        self.values, self.requires_grad = [], []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.values.append(outputs["loss"].item())
        self.requires_grad.append(outputs["loss"].requires_grad)


def loss_by_hand(weights, batch):
    """The loss of ``BoringModel`` by hand: a linear layer, then the mean squared error against ones."""
    with torch.no_grad():
        predictions = batch @ weights["layer.weight"].T + weights["layer.bias"]
        return ((predictions - 1) ** 2).mean().item()


def epoch_means_by_hand(steps):
    """The mean of each epoch's per-batch losses, each computed by hand with ``loss_by_hand``."""
    per_epoch = {}
    for epoch, _, batch, weights in steps:
        per_epoch.setdefault(epoch, []).append(loss_by_hand(weights, batch))
    return [sum(losses) / len(losses) for _, losses in sorted(per_epoch.items())]


def logged_values(logger, name):
    with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
        return [float(row[name]) for row in csv.DictReader(file) if row.get(name)]


def train(recipe):
    """Two epochs of 5 batches with ``accumulate_grad_batches=3``; returns the checks' records and the log."""
    torch.manual_seed(3)
    inputs, seen = StepInputs(), OutputsLoss()
    logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
    trainer = pl.Trainer(
        max_epochs=EPOCHS,
        accumulate_grad_batches=ACCUMULATE,
        limit_val_batches=0,
        callbacks=[recipe, inputs, seen],
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(BoringModel(), DataLoader(RandomDataset(32, 40), batch_size=8))
    return trainer, inputs, seen, logged_values(logger, "train_loss_epoch_mean")


# %%
# The symptom
# -----------
# Five batches per epoch (40 samples in batches of 8) and ``accumulate_grad_batches=3``: five is not a multiple of
# three. The first line below prints the batches per epoch and the optimizer steps the run took.
EPOCHS, ACCUMULATE = 2, 3
trainer, inputs, seen, naive_logged = train(NaiveEpochLossCallback())
by_hand = [loss_by_hand(weights, batch) for _, _, batch, weights in inputs.steps]
ratios = [hand / value for hand, value in zip(by_hand, seen.values, strict=True)]
naive_reference = epoch_means_by_hand(inputs.steps)
print(f"batches per epoch: {trainer.num_training_batches}, optimizer steps: {trainer.global_step}")
for (epoch, batch_idx, _, _), hand, value, ratio in zip(inputs.steps, by_hand, seen.values, ratios, strict=True):
    print(f"epoch {epoch} batch {batch_idx}: loss {hand:.6f}, outputs['loss'] {value:.6f}, ratio {ratio:.6f}")
for epoch, (logged, expected) in enumerate(zip(naive_logged, naive_reference, strict=True)):
    print(
        f"epoch {epoch}: naive callback logged {logged:.6f}, the loss's mean is {expected:.6f}"
        f" ({expected / logged:.6f} times as much)"
    )
print(f"outputs['loss'] requires grad: {set(seen.requires_grad)}")

# %%
# The lines above show the same ratio, ``accumulate_grad_batches``, between the step's loss and ``outputs["loss"]``
# at every batch, the batches of each epoch's short last window included, and between the loss's mean and what the
# naive callback logged.
assert trainer.num_training_batches == 5 and trainer.global_step == 2 * EPOCHS  # windows 0-2 and 3-4 per epoch
assert all(math.isclose(ratio, ACCUMULATE, rel_tol=1e-5) for ratio in ratios), (
    "every outputs['loss'] is the step's loss divided by accumulate_grad_batches, the short last window's too"
)
assert len(naive_logged) == EPOCHS
for logged, expected in zip(naive_logged, naive_reference, strict=True):
    assert math.isclose(expected / logged, ACCUMULATE, rel_tol=1e-5)
assert seen.requires_grad == [False] * 5 * EPOCHS, "outputs['loss'] does not require grad"

# %%
# The cause
# ---------
# :claim:`Accumulation-divides-outputs-loss`, and :claim:`accumulated-outputs-loss-detached`.
#
# The fix, run
# ------------
# ``EpochLossCallback``, from the top of this page, in the same training.

fixed = EpochLossCallback()
trainer, inputs, seen, fixed_logged = train(fixed)
reference = epoch_means_by_hand(inputs.steps)
for epoch, (logged, expected) in enumerate(zip(fixed_logged, reference, strict=True)):
    print(f"epoch {epoch}: fixed callback logged {logged:.6f}, the loss's mean is {expected:.6f}")

# %%
# What the fix delivers
# ---------------------
# One mean per epoch, equal to the mean of the losses computed by hand, and an empty cache at the end. Where
# else the callback-side recipe held, gradient accumulation included: the box above the recipe (:doc:`where it works
# </reference/scenarios>`).
assert len(fixed_logged) == EPOCHS
for logged, expected in zip(fixed_logged, reference, strict=True):
    assert math.isclose(logged, expected, rel_tol=1e-5)
assert fixed.batch_losses == []

# %%
# With a ``GradientAccumulationScheduler``
# ----------------------------------------
# A scheduler with ``scheduling={1: 2}``, over the same 5 batches per epoch; the same checks record each step's loss
# and its ``outputs["loss"]``.
from lightning.pytorch.callbacks import GradientAccumulationScheduler

torch.manual_seed(3)
scheduled_inputs, scheduled_seen = StepInputs(), OutputsLoss()
scheduled_trainer = pl.Trainer(
    max_epochs=2,
    limit_val_batches=0,
    callbacks=[GradientAccumulationScheduler(scheduling={1: 2}), scheduled_inputs, scheduled_seen],
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
scheduled_trainer.fit(BoringModel(), DataLoader(RandomDataset(32, 40), batch_size=8))
scheduled_ratios = {}
for (epoch, _, batch, weights), value in zip(scheduled_inputs.steps, scheduled_seen.values, strict=True):
    scheduled_ratios.setdefault(epoch, []).append(loss_by_hand(weights, batch) / value)
for epoch, epoch_ratios in sorted(scheduled_ratios.items()):
    print(f"epoch {epoch}: loss / outputs['loss'] per batch: {[round(ratio, 6) for ratio in epoch_ratios]}")

# %%
# :claim:`Scheduled-accumulation-divides-by-the-epochs-own`.
assert sorted(scheduled_ratios) == [0, 1] and all(
    math.isclose(ratio, 1 + epoch, rel_tol=1e-5) for epoch, ratios in scheduled_ratios.items() for ratio in ratios
), "under a GradientAccumulationScheduler, outputs['loss'] is divided by its own epoch's count: 1, then 2"
