"""
Renamed the hook but kept ``outputs``
=====================================

For a ``TypeError`` about the missing ``outputs`` of an ``on_validation_epoch_end(self, outputs)`` (a
``validation_epoch_end`` renamed, its argument kept): dropping the argument is not enough. Append each batch's loss
to a list of your own in ``validation_step``, then reduce, log and clear it in ``on_validation_epoch_end(self)``.

.. code-block:: python
   :caption: Before (half migrated)

   def on_validation_epoch_end(self, outputs):
       self.log("val_loss", torch.stack([out["x"] for out in outputs]).mean())

.. rst-class:: fix-label

After (Lightning 2.x):
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel  # stands in for your own LightningModule


class Migrated(BoringModel):
    def __init__(self):
        super().__init__()
        self.validation_step_outputs = []  # this validation run's losses

    def on_validation_epoch_start(self):
        self.validation_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def validation_step(self, batch, batch_idx):
        # your loss, as your step computes it
        prediction = self(batch)
        loss = torch.nn.functional.mse_loss(prediction, torch.ones_like(prediction))
        self.validation_step_outputs.append(loss.clone())  # a copy of this batch's loss
        return {"x": loss}

    def on_validation_epoch_end(self):
        self.log("val_loss", torch.stack(self.validation_step_outputs).mean())
        self.validation_step_outputs.clear()


# %%
# .. recipe-domain:: renamed_hook_fix
#
# .. dropdown:: Why each line
#
#    :claim:`Extra-parameters-never-passed`: keep the values yourself while the epoch runs. With several validation
#    dataloaders this ``validation_step`` needs a ``dataloader_idx`` argument:
#    :claim:`validation-step-needs-dataloader-idx` (:doc:`Several validation dataloaders
#    </examples/pitfalls/multiple_val_dataloaders>`). Under DDP :claim:`ddp-module-cache-differs`
#    (:doc:`Per-rank caches under DDP </examples/distributed/ddp_per_rank_caches>` shows the variant that gathers).
#
# The old code, run today
# -----------------------
# :claim:`Renamed-validation-hook-fails-in-sanity-check`; :claim:`renamed-test-hook-fails-after-testing`.
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

pl.seed_everything(0)
train_loader = DataLoader(RandomDataset(32, 32), batch_size=8)
val_loader = DataLoader(RandomDataset(32, 16), batch_size=8)


class SanityCheckSeen(pl.Callback):
    """Records whether the sanity check started and whether it finished."""

    def __init__(self):
        self.started = self.finished = False

    def on_sanity_check_start(self, trainer, pl_module):
        self.started = True

    def on_sanity_check_end(self, trainer, pl_module):
        self.finished = True


def make_trainer(**kwargs):
    return pl.Trainer(
        **{"max_epochs": 1, "logger": False, **kwargs},
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


class HalfMigrated(BoringModel):
    def on_validation_epoch_end(self, outputs):
        self.log("val_loss", torch.stack([out["x"] for out in outputs]).mean())


sanity = SanityCheckSeen()
trainer = make_trainer(callbacks=[sanity])
error = None
try:
    trainer.fit(HalfMigrated(), train_loader, val_loader)
except TypeError as err:
    error = err
    print(f"{type(err).__name__}: {err}")
print(f"sanity check started: {sanity.started}, finished: {sanity.finished}")
print(f"training steps taken: {trainer.global_step}")

# %%
# The lines above tell whether the sanity check started and finished, and how many training steps ran before the
# error.

# sphinx_gallery_start_ignore
assert error is not None and "outputs" in str(error) and sanity.started and not sanity.finished, (
    "on_validation_epoch_end(self, outputs) raised TypeError inside the default sanity check"
)
assert trainer.global_step == 0, "the TypeError of the sanity check came before any training step"
# sphinx_gallery_end_ignore

# %%
# Without the sanity check
# ------------------------
# With ``num_sanity_val_steps=0`` the run below fails later, at its first real validation run, after the first
# training epoch (:claim:`renamed-validation-hook-fails-in-sanity-check`): the output gives the steps taken, which on
# a real model can be hours.
trainer = make_trainer(num_sanity_val_steps=0)
later_error = None
try:
    trainer.fit(HalfMigrated(), train_loader, val_loader)
except TypeError as err:
    later_error = err
    print(f"{type(err).__name__}: {err}")
print(f"training steps taken: {trainer.global_step}")
# sphinx_gallery_start_ignore
assert later_error is not None and trainer.global_step == trainer.num_training_batches == 4, (
    "without the sanity check the TypeError came after the first training epoch"
)
# sphinx_gallery_end_ignore

# %%
# The proof
# ---------
# ``Migrated`` above, trained: a ``CSVLogger`` keeps what the module logs, and the callback above tells whether the
# sanity check finished.
model = Migrated()
sanity = SanityCheckSeen()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
trainer = make_trainer(callbacks=[sanity], logger=logger, log_every_n_steps=1)
trainer.fit(model, train_loader, val_loader)
with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    logged = [float(row["val_loss"]) for row in csv.DictReader(file) if row.get("val_loss")]

# After training the reference is the final model evaluated by hand: the last validation ran on these weights.
model.eval()
with torch.no_grad():
    reference = torch.stack([model.step(batch) for batch in val_loader]).mean().item()
print(f"logged val_loss: {logged}; epoch 0 by hand: {reference:.6f}")
print(f"sanity check started: {sanity.started}, finished: {sanity.finished}")
print(f"training steps taken: {trainer.global_step}")

# %%
# With the fix: a sanity check to its end, one logged mean for the epoch's validation, equal to the
# hand-computed reference, every training step, and an empty list.

# sphinx_gallery_start_ignore
assert sanity.started and sanity.finished
assert len(logged) == 1
assert math.isclose(logged[0], reference, rel_tol=1e-6)
assert trainer.global_step == 4
assert model.validation_step_outputs == []
# sphinx_gallery_end_ignore

# %%
# ``test_epoch_end`` renamed, ``outputs`` kept
# --------------------------------------------
# :claim:`Renamed-test-hook-fails-after-testing`.
test_loader = DataLoader(RandomDataset(32, 40), batch_size=8)


class HalfMigratedTest(BoringModel):
    def on_test_epoch_end(self, outputs):
        self.log("test_loss", torch.stack([out["y"] for out in outputs]).mean())


half_migrated = HalfMigratedTest()
trainer = make_trainer(num_sanity_val_steps=0)
trainer.fit(half_migrated, train_loader, val_loader)
test_error = None
try:
    trainer.test(half_migrated, test_loader, verbose=False)
except TypeError as err:
    test_error = err
    print(f"{type(err).__name__}: {err}")
print(f"training steps taken: {trainer.global_step}")
print(f"test batches run before the failure: {trainer.test_loop.batch_progress.total.completed} of {len(test_loader)}")

# %%
# The output above: 4 training steps and 5 test batches, then the error.

# sphinx_gallery_start_ignore
assert (
    test_error is not None
    and "outputs" in str(test_error)
    and trainer.global_step == 4
    and trainer.test_loop.batch_progress.total.completed == len(test_loader) == 5
), "on_test_epoch_end(self, outputs) raised TypeError after training and every test batch"
# sphinx_gallery_end_ignore

# %%
# The fix is the same: keep the values in ``test_step``, reduce and clear them in the argument-less hook (emptied
# when each test run starts too, so that a run that stopped half-way leaves nothing behind).
#
# .. recipe-domain:: renamed_hook_test_fix


class MigratedTest(BoringModel):
    def __init__(self):
        super().__init__()
        self.test_step_losses = []  # this test run's cache

    def on_test_epoch_start(self):
        self.test_step_losses.clear()

    def test_step(self, batch, batch_idx):
        loss = self.step(batch)
        self.test_step_losses.append(loss.clone())
        return {"y": loss}

    def on_test_epoch_end(self):
        self.log("test_loss", torch.stack(self.test_step_losses).mean())
        self.test_step_losses.clear()


migrated_test = MigratedTest()
trainer = make_trainer(num_sanity_val_steps=0)
trainer.fit(migrated_test, train_loader, val_loader)
[test_results] = trainer.test(migrated_test, test_loader, verbose=False)
migrated_test.eval()
with torch.no_grad():
    test_reference = torch.stack([migrated_test.step(batch) for batch in test_loader]).mean().item()
print(f"trainer.test returned {test_results}; by hand: {test_reference:.6f}")

# %%
# The test mean equals the trained model's mean test loss computed by hand, and the cache is empty.

# sphinx_gallery_start_ignore
assert math.isclose(test_results["test_loss"], test_reference, rel_tol=1e-6)
assert migrated_test.test_step_losses == []
# sphinx_gallery_end_ignore
