"""
Callback-side caching: replace a callback's ``on_train_epoch_end(..., outputs)``
================================================================================

Instead of the ``outputs`` argument of a callback's ``on_train_epoch_end(self, trainer, pl_module, outputs)``,
collect each batch's loss yourself in ``on_train_batch_end``, then reduce, log and clear the list in
``on_train_epoch_end(self, trainer, pl_module)``; your module stays as it is.

.. code-block:: python
   :caption: Before (Lightning 1.x)

   class EpochLossCallback(pl.Callback):
       def on_train_epoch_end(self, trainer, pl_module, outputs):
           ...  # read the epoch's losses from outputs

.. rst-class:: fix-label

After (Lightning 2.x):
"""

import lightning.pytorch as pl
import torch


class EpochLossCallback(pl.Callback):
    def __init__(self):
        self.batch_losses = []  # this epoch's losses

    def on_train_epoch_start(self, trainer, pl_module):
        self.batch_losses.clear()  # nothing left over from a run that stopped half-way

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if not outputs:  # nothing to cache for this batch
            return
        self.batch_losses.append(outputs["loss"].detach() * trainer.accumulate_grad_batches)

    def on_train_epoch_end(self, trainer, pl_module):
        if self.batch_losses:
            pl_module.log("train_loss_epoch_mean", torch.stack(self.batch_losses).mean())
            self.batch_losses.clear()


# %%
# .. recipe-domain:: callback_side
#
# .. dropdown:: Why each line
#
#    * ``if not outputs``: :claim:`empty-outputs-for-none-and-manual`; those batches have no loss to keep.
#    * ``* trainer.accumulate_grad_batches``: :claim:`accumulation-divides-outputs-loss`
#      (:doc:`gradient accumulation </examples/pitfalls/accumulated_loss_scaled>`); multiplying gives the loss back.
#    * ``if self.batch_losses``: an epoch with no cached loss logs nothing instead of calling ``torch.stack`` on an
#      empty list.
#    * the ``.clear()`` in ``on_train_epoch_start``: a run that stopped half-way and is started again with the same
#      callback object leaves nothing behind
#      (:doc:`Interrupted runs and mid-epoch checkpoints </examples/pitfalls/interrupted_and_resumed_runs>`).
#
# .. dropdown:: What the old hook received
#
#    What the old ``on_train_epoch_end(trainer, pl_module, outputs)`` of a callback received depended on the
#    release: :claim:`old-outputs-on-1-4-9`; :claim:`old-outputs-on-1-9-5`. Today
#    :claim:`train-batch-end-receives-outputs`.
#
# The proof: train, then compare with a plain PyTorch loop
# --------------------------------------------------------
# Three epochs of four batches each, seeded. A copy of the initial weights is kept for the reference below, and
# a ``CSVLogger`` keeps what the callback logs.
import csv
import math
import tempfile
from pathlib import Path

import lightning
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

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
# One logged mean per epoch, equal to the plain loop's, and an empty list at the end. A callback that forgets
# ``.clear()`` or overwrites instead of appending fails these checks. Under DDP:
# :claim:`callback-side-ddp-logs-rank-0` (:claim:`old-ddp-lists-per-rank`); for the mean over every rank's batches,
# see :doc:`The epoch mean of a training loss over every rank </examples/distributed/ddp_training_epoch_mean>`.

# sphinx_gallery_start_ignore
assert len(logged) == EPOCHS and all(
    math.isclose(seen, expected, rel_tol=1e-6) for seen, expected in zip(logged, reference_means, strict=True)
), "the mean of the losses on_train_batch_end received equals the plain loop's mean over every batch, every epoch"
assert callback.batch_losses == []
# sphinx_gallery_end_ignore
