"""
``test_epoch_end`` becomes ``on_test_epoch_end``
================================================

Instead of ``test_epoch_end(self, outputs)``, append each batch's loss to a list of your own in ``test_step``, then
reduce, log and clear it in ``on_test_epoch_end(self)``.

.. code-block:: python
   :caption: Before (Lightning 1.x)

   def test_epoch_end(self, outputs):
       self.log("test_loss", torch.stack([out["y"] for out in outputs]).mean())

.. rst-class:: fix-label

After (Lightning 2.x):
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel  # stands in for your own LightningModule


class TestLossCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.test_step_outputs = []  # this test run's losses

    def on_test_epoch_start(self):
        self.test_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def test_step(self, batch, batch_idx):
        # your loss, as your step computes it
        prediction = self(batch)
        loss = torch.nn.functional.mse_loss(prediction, torch.ones_like(prediction))
        self.test_step_outputs.append(loss.clone())
        return loss

    def on_test_epoch_end(self):
        self.log("test_loss", torch.stack(self.test_step_outputs).mean())
        self.test_step_outputs.clear()


# %%
# .. recipe-domain:: test
#
# .. dropdown:: Why each line
#
#    * The step caches ``loss.clone()``, a copy of the loss (the
#      :doc:`memory page </examples/performance/retained_memory>` measures what each form of a cached loss keeps).
#    * The ``.clear()`` in ``on_test_epoch_start``: a test run that stopped half-way leaves nothing behind.
#    * Under DDP :claim:`ddp-module-cache-differs`: see
#      :doc:`Per-rank caches under DDP </examples/distributed/ddp_per_rank_caches>` for the variant that holds.
#
# The old code, run today
# -----------------------
# Lightning's changelog: :claim:`epoch-end-hooks-removed-in-2-0`. :claim:`Test-epoch-end-refused-only-by-test`.
import csv
import tempfile
from pathlib import Path

import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import RandomDataset
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


pl.seed_everything(5)
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

# sphinx_gallery_start_ignore
assert (
    old_trainer.global_step == 4
    and old_trainer.test_loop.batch_progress.total.started == 0
    and old_error is not None
    and "test_epoch_end" in str(old_error)
), "training ran with test_epoch_end defined; trainer.test refused it before its first batch"
# sphinx_gallery_end_ignore

# %%
# The proof: the trained weights, in eval mode, under ``torch.no_grad``
# ---------------------------------------------------------------------
# A ``CSVLogger`` keeps what the module logs; the same five batches evaluated by hand, with the weights the test
# used, give exactly the same mean.
model = TestLossCache()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
trainer = make_trainer(logger)
trainer.fit(model, train_loader)
[results] = trainer.test(model, test_loader, verbose=False)
with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    logged = [float(row["test_loss"]) for row in csv.DictReader(file) if row.get("test_loss")]

model.eval()
with torch.no_grad():
    reference = torch.stack([model.step(batch) for batch in test_loader]).mean().item()
print(f"on_test_epoch_end mean {logged[0]:.6f} (by hand: {reference:.6f})")
print(f"trainer.test returned {results}")

# %%
# One logged mean, equal to the reference, also in the return value of ``trainer.test``; the list is empty
# afterwards.

# sphinx_gallery_start_ignore
assert logged == [reference]
assert results["test_loss"] == reference
assert model.test_step_outputs == []
# sphinx_gallery_end_ignore
