"""
A callback that still asks for ``outputs``
==========================================

For a ``TypeError`` about the missing ``outputs`` of a callback's ``on_train_epoch_end(self, trainer, pl_module,
outputs)``: drop the argument, collect each batch's loss in ``on_train_batch_end``, then reduce, log and clear the
list in ``on_train_epoch_end(self, trainer, pl_module)``.

.. code-block:: python
   :caption: Before (Lightning 1.x)

   class OldCallback(pl.Callback):
       def on_train_epoch_end(self, trainer, pl_module, outputs):
           pl_module.log("train_loss_epoch_mean", torch.stack([out["loss"] for out in outputs]).mean())

.. rst-class:: fix-label

After (Lightning 2.x):
"""

import lightning.pytorch as pl
import torch


class CachingCallback(pl.Callback):
    def __init__(self):
        self.losses = []  # this epoch's losses

    def on_train_epoch_start(self, trainer, pl_module):
        self.losses.clear()  # nothing left over from a run that stopped half-way

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if not outputs:  # nothing to cache for this batch
            return
        self.losses.append(outputs["loss"].detach() * trainer.accumulate_grad_batches)

    def on_train_epoch_end(self, trainer, pl_module):
        if self.losses:
            pl_module.log("train_loss_epoch_mean", torch.stack(self.losses).mean())
            self.losses.clear()


# %%
# .. recipe-domain:: callback_outputs_fix
#
# .. dropdown:: Why each line
#
#    As on :doc:`Callback-side caching </examples/core/callback_side_caching>`, the callback skips an empty
#    ``outputs`` (:doc:`which batches give one </examples/pitfalls/empty_outputs>`), multiplies ``outputs["loss"]`` by
#    ``accumulate_grad_batches`` (:doc:`why </examples/pitfalls/accumulated_loss_scaled>`), and logs nothing for an
#    epoch without a cached loss.
#
# The symptom, run today
# ----------------------
# :claim:`Outputs-argument-deprecated-and-removed`. :claim:`Callback-outputs-hook-fails-after-an-epoch`.
# Two training batches per epoch; a second callback counts the batches that ran.
import csv
import math
import tempfile
from pathlib import Path

import lightning
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

pl.seed_everything(0)  # seeded before the data is drawn: the same numbers at every run
train_loader = DataLoader(RandomDataset(32, 16), batch_size=8)


class BatchCounter(pl.Callback):
    def __init__(self):
        self.batches = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.batches += 1


def make_trainer(callbacks, logger=False):
    return pl.Trainer(
        max_epochs=2,
        limit_val_batches=0,
        callbacks=callbacks,
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


class OldCallback(pl.Callback):
    def on_train_epoch_end(self, trainer, pl_module, outputs):
        pl_module.log("train_loss_epoch_mean", torch.stack([out["loss"] for out in outputs]).mean())


counter = BatchCounter()
trainer = make_trainer([OldCallback(), counter])
error = None
try:
    trainer.fit(BoringModel(), train_loader)
except TypeError as err:
    error = err
    print(f"{type(err).__name__}: {err}")
print(f"training batches run before the failure: {counter.batches}; optimizer steps: {trainer.global_step}")

# %%
# The second callback's count above gives the batches that ran before the error.

# sphinx_gallery_start_ignore
assert error is not None and counter.batches == trainer.global_step == 2, (
    "the callback's on_train_epoch_end(outputs) raised TypeError after both batches of the first epoch"
)
# sphinx_gallery_end_ignore

# %%
# A default value hides the problem
# ---------------------------------
# The same callback with ``outputs=None`` in its signature: :claim:`outputs-default-never-fails-receives-none`.


class SilentCallback(pl.Callback):
    def __init__(self):
        self.received = []

    def on_train_epoch_end(self, trainer, pl_module, outputs=None):
        self.received.append(outputs)


silent = SilentCallback()
trainer = make_trainer([silent])
trainer.fit(BoringModel(), train_loader)
print(f"outputs received at each epoch end: {silent.received}")

# sphinx_gallery_start_ignore
assert silent.received == [None, None], "a default outputs=None receives None at every epoch end"
# sphinx_gallery_end_ignore

# %%
# The cause
# ---------
# :claim:`Extra-parameters-never-passed`.
# :claim:`Train-batch-end-receives-outputs`.
#
# The proof: the fix against a plain PyTorch loop
# -----------------------------------------------
# A ``CSVLogger`` keeps what the callback logs, and the reference is the same training as a plain PyTorch loop
# from the same initial weights, with the optimizer and scheduler ``BoringModel.configure_optimizers`` returns.
pl.seed_everything(4)
model = BoringModel()
initial_weights = {name: value.clone() for name, value in model.state_dict().items()}
caching = CachingCallback()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
make_trainer([caching], logger).fit(model, train_loader)
with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    logged = [float(row["train_loss_epoch_mean"]) for row in csv.DictReader(file) if row["train_loss_epoch_mean"]]

reference_model = BoringModel()
reference_model.load_state_dict(initial_weights)
[optimizer], [scheduler] = reference_model.configure_optimizers()
reference_means = []
for _ in range(2):
    losses = []
    for batch_idx, batch in enumerate(train_loader):
        optimizer.zero_grad()
        loss = reference_model.training_step(batch, batch_idx)["loss"]
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    scheduler.step()
    reference_means.append(torch.stack(losses).mean().item())

for epoch, (mean, expected) in enumerate(zip(logged, reference_means, strict=True)):
    print(f"epoch {epoch}: callback mean {mean:.6f} (plain loop: {expected:.6f})")

# %%
# One logged mean per epoch over both batches, equal to the plain loop's; the list is empty afterwards. Under DDP:
# :claim:`callback-outputs-fix-ddp-logs-rank-0` (:claim:`old-ddp-lists-per-rank`); for the mean over every rank's
# batches, see :doc:`The epoch mean of a training loss over every rank </examples/distributed/ddp_training_epoch_mean>`.

# sphinx_gallery_start_ignore
assert len(logged) == 2
for mean, expected in zip(logged, reference_means, strict=True):
    assert math.isclose(mean, expected, rel_tol=1e-6)
assert caching.losses == []
# sphinx_gallery_end_ignore
