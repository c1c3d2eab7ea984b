"""
Callback-side caching
=====================

A callback keeps what it needs itself: it appends in ``on_train_batch_end`` and reduces in
``on_train_epoch_end(trainer, pl_module)``; the module is untouched. This page checks, epoch by epoch, that the
callback's cache holds each batch's loss, as a plain PyTorch loop computes it.

What the old ``on_train_epoch_end(trainer, pl_module, outputs)`` of a callback received depended on the release:
:claim:`old-outputs-on-1-4-9`; :claim:`old-outputs-on-1-9-5`. Today :claim:`train-batch-end-receives-outputs`.
"""

# %%
# The callback
# ------------
# .. recipe-domain:: callback_side
#
# Keep only what the epoch-end computation needs -- here the loss -- and reduce, log and clear the cache in
# ``on_train_epoch_end``. Four details make it hold in every configuration the
# :doc:`scenario matrix </reference/scenarios>` runs:
#
# * :claim:`empty-outputs-for-none-and-manual`: skip those batches, they have no loss;
# * :claim:`accumulation-divides-outputs-loss`
#   (:doc:`gradient accumulation </examples/pitfalls/accumulated_loss_scaled>`): multiply it back;
# * an epoch with no cached loss logs nothing instead of failing in ``torch.stack``;
# * the cache is also emptied when each epoch starts, so that a run that stopped half-way and is started again with
#   the same callback object leaves nothing behind
#   (:doc:`Interrupted runs and mid-epoch checkpoints </examples/pitfalls/interrupted_and_resumed_runs>`).
import csv
import math
import tempfile
from pathlib import Path

import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class EpochLossCallback(pl.Callback):
    def __init__(self):
        self.batch_losses = []  # this epoch's cache

    def on_train_epoch_start(self, trainer, pl_module):
        self.batch_losses.clear()  # nothing left over from a run that stopped half-way

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if not outputs:  # the step returned None, or nothing under manual optimization
            return
        self.batch_losses.append(outputs["loss"].detach() * trainer.accumulate_grad_batches)

    def on_train_epoch_end(self, trainer, pl_module):
        if self.batch_losses:
            pl_module.log("train_loss_epoch_mean", torch.stack(self.batch_losses).mean())
            self.batch_losses.clear()


# %%
# Train
# -----
# Three epochs of four batches each, seeded. A copy of the initial weights is kept for the reference below, and
# a ``CSVLogger`` keeps what the callback logs: the checks stand beside the recipe, not in it.
EPOCHS = 3
torch.manual_seed(7)
loader = DataLoader(RandomDataset(32, 32), batch_size=8)
model = BoringModel()
initial_weights = {name: value.clone() for name, value in model.state_dict().items()}

callback = EpochLossCallback()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")  # keeps every logged value, for the check below
trainer = pl.Trainer(
    max_epochs=EPOCHS,
    limit_val_batches=0,
    callbacks=[callback],
    logger=logger,
    log_every_n_steps=1,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, loader)

# %%
# The reference: the same training as a plain PyTorch loop
# --------------------------------------------------------
# :claim:`Old-list-one-entry-per-batch`. A plain loop over the same batches, from the same initial weights, with the
# optimizer and scheduler ``BoringModel.configure_optimizers`` returns, computes those per-batch losses without any
# cache.


def plain_loop_epoch_means(model, loader, epochs):
    [optimizer], [scheduler] = model.configure_optimizers()
    means = []
    for _ in range(epochs):
        losses = []
        for batch_idx, batch in enumerate(loader):
            optimizer.zero_grad()
            loss = model.training_step(batch, batch_idx)["loss"]
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        means.append(sum(losses) / len(losses))
    return means


reference_model = BoringModel()
reference_model.load_state_dict(initial_weights)
reference_means = plain_loop_epoch_means(reference_model, loader, EPOCHS)

with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    logged = [float(row["train_loss_epoch_mean"]) for row in csv.DictReader(file) if row["train_loss_epoch_mean"]]
for epoch, (seen, expected) in enumerate(zip(logged, reference_means, strict=True)):
    print(f"epoch {epoch}: logged mean {seen:.6f} (plain loop: {expected:.6f})")

# %%
# What the callback delivered
# ---------------------------
# One logged mean per epoch, equal to the plain loop's, and an empty cache at the end. A callback that forgets
# ``.clear()`` or overwrites instead of appending fails these checks. The
# :doc:`scenario matrix </reference/scenarios>` runs this same class under gradient accumulation, several
# validation runs per epoch, skipped batches, manual optimization, monitoring callbacks and DDP:
# :claim:`callback-side-ddp-logs-rank-0` (:claim:`old-ddp-lists-per-rank`).
assert len(logged) == EPOCHS and all(
    math.isclose(seen, expected, rel_tol=1e-6) for seen, expected in zip(logged, reference_means, strict=True)
), "the mean of the losses on_train_batch_end received equals the plain loop's mean over every batch, every epoch"
assert callback.batch_losses == []
