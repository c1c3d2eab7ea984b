"""
``validation_epoch_end`` becomes ``on_validation_epoch_end``
============================================================

Instead of ``validation_epoch_end(self, outputs)``, append each batch's loss to a list of your own in
``validation_step``, then reduce, log and clear it in ``on_validation_epoch_end(self)``.

.. code-block:: python
   :caption: Before (Lightning 1.x)

   def validation_epoch_end(self, outputs):
       self.log("val_loss", torch.stack([out["x"] for out in outputs]).mean())

.. rst-class:: fix-label

After (Lightning 2.x):
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel  # stands in for your own LightningModule


class ValidationLossCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.validation_step_outputs = []  # this validation run's losses

    def on_validation_epoch_start(self):
        self.validation_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def validation_step(self, batch, batch_idx):
        # your loss, as your step computes it
        prediction = self(batch)
        loss = torch.nn.functional.mse_loss(prediction, torch.ones_like(prediction))
        self.validation_step_outputs.append(loss.clone())
        return loss

    def on_validation_epoch_end(self):
        self.log("val_loss", torch.stack(self.validation_step_outputs).mean())
        self.validation_step_outputs.clear()


# %%
# .. recipe-domain:: validation
#
# .. dropdown:: Why each line
#
#    * no ``.detach()``: :claim:`Validation-runs-without-autograd`, and the check below finds no cached loss that
#      requires grad; the step caches ``loss.clone()``, a copy of the loss, not the loss itself:
#      :claim:`mse-loss-keeps-elementwise-buffer`.
#    * The ``.clear()`` in ``on_validation_epoch_start``: a validation run that stopped half-way leaves nothing
#      behind.
#    * Several validation dataloaders: :claim:`validation-step-needs-dataloader-idx`
#      (:doc:`Several validation dataloaders </examples/pitfalls/multiple_val_dataloaders>` shows the error and the
#      per-loader list).
#    * DDP: :claim:`ddp-module-cache-differs`
#      (:doc:`Per-rank caches under DDP </examples/distributed/ddp_per_rank_caches>`).
#
# The old code, run today
# -----------------------
# Lightning's changelog: :claim:`epoch-end-hooks-removed-in-2-0`.
# :claim:`Boring-model-validation-step-returns-x`.
import copy
import csv
import tempfile
from pathlib import Path

import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


def make_trainer(callbacks=(), logger=False):
    return pl.Trainer(
        max_epochs=2,
        num_sanity_val_steps=0,
        callbacks=list(callbacks),
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


pl.seed_everything(3)
train_loader = DataLoader(RandomDataset(32, 32), batch_size=8)
val_loader = DataLoader(RandomDataset(32, 24), batch_size=8)


class OldValidationEpochEnd(BoringModel):
    def validation_epoch_end(self, outputs):
        self.log("val_loss", torch.stack([out["x"] for out in outputs]).mean())


old_trainer = make_trainer()
old_error = None
try:
    old_trainer.fit(OldValidationEpochEnd(), train_loader, val_loader)
except NotImplementedError as err:
    old_error = err
    print(f"{type(err).__name__}: {err}")
print(f"training steps taken before the failure: {old_trainer.global_step}")

# %%
# :claim:`Fit-refuses-removed-training-and-validation-hooks`.

# sphinx_gallery_start_ignore
assert old_error is not None and "validation_epoch_end" in str(old_error) and old_trainer.global_step == 0, (
    "trainer.fit refuses validation_epoch_end before the first training step"
)
# sphinx_gallery_end_ignore

# %%
# The proof: the same batches, the same weights, evaluated by hand
# ----------------------------------------------------------------
# A ``CSVLogger`` keeps every value the module logs, and a small callback keeps a copy of the weights each time
# validation starts (they change between validation runs), so the reference below evaluates exactly the weights
# of each validation run. It also notes the autograd mode of each batch and whether the last cached loss requires grad.


class ValidationObserver(pl.Callback):
    def __init__(self):
        self.snapshots = []
        self.cached_with_graph = []
        self.grad_enabled = []

    def on_validation_epoch_start(self, trainer, pl_module):
        self.snapshots.append(copy.deepcopy(pl_module.state_dict()))

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self.cached_with_graph.append(pl_module.validation_step_outputs[-1].requires_grad)
        self.grad_enabled.append(torch.is_grad_enabled())


observer = ValidationObserver()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
model = ValidationLossCache()
trainer = make_trainer([observer], logger)
trainer.fit(model, train_loader, val_loader)

with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    logged = [float(row["val_loss"]) for row in csv.DictReader(file) if row["val_loss"]]

# %%
# A fresh ``BoringModel`` in eval mode under ``torch.no_grad`` computes each batch's loss, with the weights the
# callback copied when that validation run started, so the means agree exactly, not merely approximately.


def reference_mean(state_dict, loader):
    reference = BoringModel()
    reference.load_state_dict(state_dict)
    reference.eval()
    with torch.no_grad():
        return torch.stack([reference.step(batch) for batch in loader]).mean().item()


reference_means = [reference_mean(state, val_loader) for state in observer.snapshots]
assert len(reference_means) == 2, "one validation run per epoch"
for epoch, (mean, expected) in enumerate(zip(logged, reference_means, strict=True)):
    print(f"epoch {epoch}: on_validation_epoch_end mean {mean:.6f} (by hand: {expected:.6f})")
print(f"cached losses that required grad: {sum(observer.cached_with_graph)} of {len(observer.cached_with_graph)}")
print(f"validation batches run with autograd on: {sum(observer.grad_enabled)} of {len(observer.grad_enabled)}")

# %%
# One logged mean per epoch, equal to the reference, the last one in ``trainer.callback_metrics``; no cached loss
# required grad, since :claim:`validation-runs-without-autograd`; the list is empty after every epoch.

# sphinx_gallery_start_ignore
assert len(logged) == len(reference_means) == 2, "one logged mean per validation run"
assert logged == reference_means
assert trainer.callback_metrics["val_loss"].item() == reference_means[-1]
assert observer.cached_with_graph == observer.grad_enabled == [False] * 2 * len(val_loader), (
    "autograd was off in every validation batch, and no cached loss required grad"
)
assert model.validation_step_outputs == []
# sphinx_gallery_end_ignore
