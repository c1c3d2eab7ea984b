"""
Module-side caching
===================

Replace ``training_epoch_end(self, outputs)``: append each step's loss in ``training_step``, then reduce, log and
clear the list in ``on_train_epoch_end(self)``.

.. code-block:: python
   :caption: Before (Lightning 1.x)

   def training_epoch_end(self, outputs):
       self.log("train_loss_epoch_mean", torch.stack([out["loss"] for out in outputs]).mean())

.. rst-class:: fix-label

After (Lightning 2.x):
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel  # stands in for your own LightningModule


class LossCachingModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.training_step_outputs = []  # this epoch's losses

    def on_train_epoch_start(self):
        self.training_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def training_step(self, batch, batch_idx):
        # your loss, as your step computes it
        prediction = self(batch)
        loss = torch.nn.functional.mse_loss(prediction, torch.ones_like(prediction))
        self.training_step_outputs.append(loss.detach().clone())
        return loss

    def on_train_epoch_end(self):
        self.log("train_loss_epoch_mean", torch.stack(self.training_step_outputs).mean())
        self.training_step_outputs.clear()


# %%
# .. recipe-domain:: module_side
#
# Under DDP: :claim:`module-side-training-mean-is-rank-0s`. For the mean over every rank's batches, see
# :doc:`The epoch mean of a training loss over every rank </examples/distributed/ddp_training_epoch_mean>`.
#
# .. dropdown:: Why each line
#
#    * ``.detach().clone()``: :claim:`undetached-cache-keeps-graph`; and
#      :claim:`mse-loss-keeps-elementwise-buffer`, while :claim:`detach-clone-keeps-one-element`.
#    * :claim:`Cleared-cache-frees`; the ``.clear()`` in ``on_train_epoch_start`` leaves nothing behind when a
#      run that stopped half-way is started again with the same module
#      (:doc:`Interrupted runs and mid-epoch checkpoints </examples/pitfalls/interrupted_and_resumed_runs>`).
#
# Callbacks that read the module's list
# -------------------------------------
# .. recipe-domain:: module_cache_reader
#
# :claim:`Plain-callbacks-before-module-train-epoch-end`, so a plain callback can read the full list; and
# :claim:`monitoring-callbacks-after-module`: by then the list is cleared. To monitor the epoch's value, log it and pass
# its name to the callback's ``monitor=``. The plain callback below logs
# the epoch's worst batch loss from the list; the ``ModelCheckpoint`` subclass, a counter-example, notes how many cached
# losses it finds: the run shows the order.
import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint


class CacheReader(pl.Callback):
    def on_train_epoch_end(self, trainer, pl_module):
        worst = torch.stack(pl_module.training_step_outputs).max()
        pl_module.log("train_loss_worst_batch", worst)


class CheckpointReadingTheCache(ModelCheckpoint):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.entries_seen = []

    def on_train_epoch_end(self, trainer, pl_module):
        self.entries_seen.append(len(pl_module.training_step_outputs))
        super().on_train_epoch_end(trainer, pl_module)


# %%
# The proof: train, then compare with a plain PyTorch loop
# --------------------------------------------------------
# Three epochs of four batches each, seeded. A copy of the initial weights is kept for the reference below, and
# a ``CSVLogger`` keeps what the module logs.
import csv
import math
import tempfile
from pathlib import Path

import lightning
from lightning.pytorch.demos.boring_classes import RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

EPOCHS = 3
torch.manual_seed(7)
loader = DataLoader(RandomDataset(32, 32), batch_size=8)
model = LossCachingModel()
initial_weights = {name: value.clone() for name, value in model.state_dict().items()}

reader = CacheReader()
checkpoint = CheckpointReadingTheCache(
    dirpath=tempfile.mkdtemp(), monitor="train_loss_epoch_mean", save_on_train_epoch_end=True
)
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")  # keeps every logged value, for the check below
trainer = pl.Trainer(
    max_epochs=EPOCHS,
    limit_val_batches=0,
    callbacks=[reader, checkpoint],
    logger=logger,
    log_every_n_steps=1,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, loader)

# %%
# A plain ``BoringModel`` (the same layer and optimizer; its ``training_step`` computes the same squared error
# against ones) with the same initial weights, trained by hand over the same batches with the optimizer and scheduler
# ``configure_optimizers`` returns, computes the per-batch losses without any list.


def plain_loop_epoch_losses(model, loader, epochs):
    """Each epoch's list of per-batch losses."""
    [optimizer], [scheduler] = model.configure_optimizers()
    epoch_losses = []
    for _ in range(epochs):
        losses = []
        for batch_idx, batch in enumerate(loader):
            optimizer.zero_grad()
            loss = model.training_step(batch, batch_idx)["loss"]
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        epoch_losses.append(losses)
    return epoch_losses


reference_model = BoringModel()
reference_model.load_state_dict(initial_weights)
reference_losses = plain_loop_epoch_losses(reference_model, loader, EPOCHS)
reference_means = [sum(losses) / len(losses) for losses in reference_losses]

with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    rows = list(csv.DictReader(file))
logged = [float(row["train_loss_epoch_mean"]) for row in rows if row["train_loss_epoch_mean"]]
worst = [float(row["train_loss_worst_batch"]) for row in rows if row["train_loss_worst_batch"]]
for epoch, (seen, expected) in enumerate(zip(logged, reference_means, strict=True)):
    print(f"epoch {epoch}: logged mean {seen:.6f} (plain loop: {expected:.6f})")
    by_hand = max(reference_losses[epoch])
    print(f"         worst batch logged by the plain callback {worst[epoch]:.6f} (plain loop: {by_hand:.6f})")
print(f"cached losses found by the ModelCheckpoint subclass: {checkpoint.entries_seen}")
print(f"ModelCheckpoint's best score: {checkpoint.best_model_score.item():.6f}")

# %%
# One logged mean per epoch, equal to the plain loop's; the plain callback found the full list (its worst batch
# is the plain loop's worst of all the epoch's batches) and the ``ModelCheckpoint`` subclass an empty one, while
# the value it monitors is the best logged mean.
# Forgetting ``.clear()``, caching the loss without ``.detach()``, or overwriting instead of appending
# breaks the :doc:`recipe's checks in many Trainer configurations </reference/scenarios>`.

# sphinx_gallery_start_ignore
assert len(logged) == EPOCHS
for seen, expected in zip(logged, reference_means, strict=True):
    assert math.isclose(seen, expected, rel_tol=1e-6)
assert all(
    len(losses) == trainer.num_training_batches == 4 and math.isclose(seen, max(losses), rel_tol=1e-6)
    for seen, losses in zip(worst, reference_losses, strict=True)
), "the plain callback found each epoch's full cache"
assert checkpoint.entries_seen == [0] * EPOCHS and math.isclose(
    checkpoint.best_model_score.item(), min(reference_means), rel_tol=1e-6
), "the ModelCheckpoint subclass found the cache cleared and monitored the best logged mean"
assert model.training_step_outputs == []
# sphinx_gallery_end_ignore
