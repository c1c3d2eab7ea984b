"""
``test_epoch_end`` becomes ``on_test_epoch_end``
================================================

This page trains and tests a model that still defines ``test_epoch_end(self, outputs)``, then checks the
replacement -- append in ``test_step``, reduce in ``on_test_epoch_end(self)`` -- against the test batches evaluated
by hand.

Lightning's changelog: :claim:`epoch-end-hooks-removed-in-2-0`. :claim:`Test-epoch-end-refused-only-by-test`.
"""

# %%
# The old code
# ------------
import csv
import tempfile
from pathlib import Path

import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


def make_trainer(logger=False):
    return pl.Trainer(
        max_epochs=1,
        limit_val_batches=0,
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


pl.seed_everything(5, verbose=False)
train_loader = DataLoader(RandomDataset(32, 32), batch_size=8)
test_loader = DataLoader(RandomDataset(32, 40), batch_size=8)


class OldTestEpochEnd(BoringModel):
    def test_epoch_end(self, outputs):
        self.log("test_loss", torch.stack([out["y"] for out in outputs]).mean())


old_model = OldTestEpochEnd()
old_trainer = make_trainer()
old_trainer.fit(old_model, train_loader)
print(f"trainer.fit finished: {old_trainer.global_step} training steps")
old_error = None
try:
    old_trainer.test(old_model, test_loader, verbose=False)
except NotImplementedError as err:
    old_error = err
    print(f"{type(err).__name__}: {err}")

# %%
# :claim:`Test-epoch-end-refused-only-by-test`.
assert (
    old_trainer.global_step == 4
    and old_trainer.test_loop.batch_progress.total.started == 0
    and old_error is not None
    and "test_epoch_end" in str(old_error)
), "training ran with test_epoch_end defined; trainer.test refused it before its first batch"

# %%
# The replacement
# ---------------
# .. recipe-domain:: test
#
# ``test_step`` appends the loss; ``on_test_epoch_end`` reduces, logs and clears, and ``on_test_epoch_start``
# clears too (a test run that stopped half-way leaves nothing behind); the step caches ``loss.clone()``, one
# element (see the :doc:`memory page </examples/performance/retained_memory>`). A ``CSVLogger`` keeps what the
# module logs, for the check below.


class TestLossCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.test_step_losses = []  # this test run's cache

    def on_test_epoch_start(self):
        self.test_step_losses.clear()  # nothing left over from a run that stopped half-way

    def test_step(self, batch, batch_idx):
        loss = self.step(batch)
        self.test_step_losses.append(loss.clone())
        return loss

    def on_test_epoch_end(self):
        self.log("test_loss", torch.stack(self.test_step_losses).mean())
        self.test_step_losses.clear()


model = TestLossCache()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
trainer = make_trainer(logger)
trainer.fit(model, train_loader)
[results] = trainer.test(model, test_loader, verbose=False)
with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    logged = [float(row["test_loss"]) for row in csv.DictReader(file) if row.get("test_loss")]

# %%
# The reference: the trained weights, in eval mode, under ``torch.no_grad``
# -------------------------------------------------------------------------
# Testing does not change the weights, so evaluating the same five batches by hand gives exactly the same
# mean.
model.eval()
with torch.no_grad():
    reference = torch.stack([model.step(batch) for batch in test_loader]).mean().item()
print(f"on_test_epoch_end mean {logged[0]:.6f} (by hand: {reference:.6f})")
print(f"trainer.test returned {results}")

# %%
# One logged mean, equal to the reference, also returned by ``trainer.test``; the cache is empty afterwards.
assert logged == [reference]
assert results["test_loss"] == reference
assert model.test_step_losses == []

# %%
# Where this recipe does not hold
# -------------------------------
# The :doc:`scenario matrix </reference/scenarios>` runs ``TestLossCache`` after training with the default
# sanity check, with an uneven last batch (the value is then the mean of batch means) and in ``trainer.test()`` on its
# own: it gives the reference value. Under DDP :claim:`ddp-module-cache-differs`: see
# :doc:`Per-rank caches under DDP </examples/distributed/ddp_per_rank_caches>` for the variant that holds.
