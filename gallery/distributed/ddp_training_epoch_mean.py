"""
The epoch mean of a training loss over every rank
=================================================

:claim:`Ddp-each-rank-own-shard`. :claim:`Module-side-training-mean-is-rank-0s`. For the mean over every batch
of every rank, add up each rank's sum of losses and its number of batches across the ranks at epoch end, then
divide. This page trains on 2 CPU processes and compares both values with each rank's per-batch losses.
"""

# %%
# The recipe
# ----------
# ``training_step`` appends each batch's loss, as in :doc:`Module-side caching </examples/core/module_side_caching>`. At
# epoch end the recipe sums each rank's losses (in float32) and counts them, then adds both up over the ranks with
# ``self.trainer.strategy.reduce(..., reduce_op="sum")``; every rank must make both calls. Every rank then divides the
# totals and logs the quotient with ``sync_dist=True``. Below, the value logged is compared with the mean over every
# batch of both ranks, computed by hand, on 2 processes and on 1.
import torch
from lightning.pytorch.demos.boring_classes import BoringModel  # stands in for your own LightningModule


class EveryRankLossModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.training_step_outputs = []  # this rank's losses of this epoch

    def on_train_epoch_start(self):
        self.training_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def training_step(self, batch, batch_idx):
        # your loss, as your step computes it
        prediction = self(batch)
        loss = torch.nn.functional.mse_loss(prediction, torch.ones_like(prediction))
        self.training_step_outputs.append(loss.detach().clone())
        return loss

    def on_train_epoch_end(self):
        losses = torch.stack(self.training_step_outputs).float()
        total = self.trainer.strategy.reduce(losses.sum(), reduce_op="sum")
        count = self.trainer.strategy.reduce(torch.tensor(float(len(losses)), device=self.device), reduce_op="sum")
        self.log("train_loss_epoch_mean", total / count, sync_dist=True)
        self.training_step_outputs.clear()


# %%
# .. recipe-domain:: ddp_training_epoch_mean
#
# Two processes
# -------------
# 41 samples in batches of 8 on 2 ranks, for 2 epochs: :claim:`distributed-sampler-repeats-a-sample`, here 21
# samples and 3 batches a rank. The module below is the recipe that also logs, under ``own_rank_mean``, the value a
# module-side cache logs, ``torch.stack(self.training_step_outputs).mean()``. A callback beside it writes each rank's
# per-batch losses, ``outputs["loss"]`` of each batch, to a file of that rank: the worker processes cannot print to
# this page.
import csv
import math
import tempfile
from pathlib import Path

import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

WORLD_SIZE = 2
EPOCHS = 2


class AlsoOwnRankMean(EveryRankLossModel):
    def on_train_epoch_end(self):
        self.log("own_rank_mean", torch.stack(self.training_step_outputs).mean())
        super().on_train_epoch_end()


class BatchLossesPerRank(pl.Callback):
    """Writes ``rank<r>.pt`` into ``folder``: rank ``r``'s per-batch losses, one list per epoch."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.epochs = []

    def on_train_epoch_start(self, trainer, pl_module):
        self.epochs.append([])

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.epochs[-1].append(outputs["loss"].item())

    def on_train_end(self, trainer, pl_module):
        torch.save(self.epochs, Path(self.folder, f"rank{trainer.global_rank}.pt"))


def train(devices):
    """Fit ``AlsoOwnRankMean`` on ``devices`` processes; return what it logged per epoch and each rank's losses."""
    pl.seed_everything(0)
    folder = tempfile.mkdtemp()
    logger = CSVLogger(folder, name="", version="")
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=devices,
        strategy="ddp_fork" if devices > 1 else "auto",
        max_epochs=EPOCHS,
        limit_val_batches=0,
        callbacks=[BatchLossesPerRank(folder)],
        logger=logger,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(AlsoOwnRankMean(), DataLoader(RandomDataset(32, 41), batch_size=8))
    with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
        rows = [row for row in csv.DictReader(file) if row["train_loss_epoch_mean"]]
    logged = {name: [float(row[name]) for row in rows] for name in ("own_rank_mean", "train_loss_epoch_mean")}
    return logged, [torch.load(Path(folder, f"rank{rank}.pt")) for rank in range(devices)]


logged, rank_losses = train(WORLD_SIZE)
for epoch in range(EPOCHS):
    for rank, losses in enumerate(rank_losses):
        print(f"epoch {epoch}, rank {rank}: batch losses {[round(loss, 6) for loss in losses[epoch]]}")
    print(f"epoch {epoch}: own_rank_mean {logged['own_rank_mean'][epoch]:.6f}")
    print(f"epoch {epoch}: train_loss_epoch_mean {logged['train_loss_epoch_mean'][epoch]:.6f}")

# %%
# What each value is
# ------------------
# ``own_rank_mean`` is the mean of rank 0's three batch losses; ``train_loss_epoch_mean`` is the mean of all six.


def mean(values):
    return sum(values) / len(values)


every_rank_means = [mean([loss for losses in rank_losses for loss in losses[epoch]]) for epoch in range(EPOCHS)]
rank_0_means = [mean(rank_losses[0][epoch]) for epoch in range(EPOCHS)]
print(f"by hand, rank 0's batches: {[round(value, 6) for value in rank_0_means]}")
print(f"by hand, every rank's batches: {[round(value, 6) for value in every_rank_means]}")

# %%
assert (
    [len(losses[epoch]) for losses in rank_losses for epoch in range(EPOCHS)] == [3] * 4
    and all(
        math.isclose(seen, want, rel_tol=1e-5) for seen, want in zip(logged["own_rank_mean"], rank_0_means, strict=True)
    )
    and not any(
        math.isclose(seen, want, rel_tol=1e-3)
        for seen, want in zip(logged["own_rank_mean"], every_rank_means, strict=True)
    )
), "under DDP the module-side cache's mean was rank 0's own, not the mean over both ranks' batches"
assert all(
    math.isclose(seen, want, rel_tol=1e-5)
    for seen, want in zip(logged["train_loss_epoch_mean"], every_rank_means, strict=True)
), "the recipe logged the mean over every batch of both ranks, every epoch"

# %%
# One process
# -----------
# The same module on one process: there is one rank, and both values are the mean over its batches.
single_logged, [single_losses] = train(1)
print(f"1 process: own_rank_mean {single_logged['own_rank_mean']}")
print(f"1 process: train_loss_epoch_mean {single_logged['train_loss_epoch_mean']}")

# %%
# The recipe logs the epoch's mean over every batch, with two processes as with one; its cache is empty when the
# epoch ends. The same class holds in many more :doc:`Trainer configurations </reference/scenarios>`.

# sphinx_gallery_start_ignore
assert all(
    math.isclose(a, mean(losses), rel_tol=1e-5) and math.isclose(b, mean(losses), rel_tol=1e-5)
    for a, b, losses in zip(
        single_logged["own_rank_mean"], single_logged["train_loss_epoch_mean"], single_losses, strict=True
    )
)
# sphinx_gallery_end_ignore
