"""
Epoch means of several losses under manual optimization
=======================================================

A GAN's ``training_step`` steps its two optimizers itself and returns its losses by name,
``{"g_loss": ..., "d_loss": ...}``, with no ``"loss"`` key for code that read ``outputs`` in
``training_epoch_end``, or for a callback that reads ``outputs["loss"]``, to average. Keep one cache per loss in the
module, average each in ``on_train_epoch_end`` over every process's batches, and clear them. This page checks each
epoch's two means against a plain PyTorch loop over the same batches and weights.
"""

# %%
# The module
# ----------
# .. recipe-domain:: several_losses_manual
#
# ``training_step`` appends a detached copy of each loss to its own list, under the loss's name.
# ``on_train_epoch_end`` sums each list (in float32) and counts it, and adds both up over the processes with
# ``self.trainer.strategy.reduce(..., reduce_op="sum")``, as on :doc:`the DDP training-mean page
# </examples/distributed/ddp_training_epoch_mean>`, so that each batch counts once, whichever process ran it. Every
# process makes both calls, even with nothing cached. It logs each mean and clears the lists; ``on_train_epoch_start``
# clears too, so that a run that stopped half-way and is started again with the same module leaves nothing behind. The
# two optimizers here stand for a generator's and a discriminator's (the weight and the bias of ``BoringModel``'s
# layer).
import copy
import csv
import math
import tempfile
from pathlib import Path

import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.nn import functional as F
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class TwoLossesModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.step_losses = {"g_loss": [], "d_loss": []}  # this epoch's caches, one per loss

    def configure_optimizers(self):
        generator = torch.optim.SGD([self.layer.weight], lr=0.1)
        discriminator = torch.optim.SGD([self.layer.bias], lr=0.1)
        return generator, discriminator

    def on_train_epoch_start(self):
        for losses in self.step_losses.values():
            losses.clear()  # nothing left over from a run that stopped half-way

    def training_step(self, batch, batch_idx):
        generator, discriminator = self.optimizers()
        prediction = self(batch)
        g_loss = F.mse_loss(prediction, torch.ones_like(prediction))
        d_loss = F.mse_loss(prediction, torch.zeros_like(prediction))
        generator.zero_grad()
        discriminator.zero_grad()
        self.manual_backward(g_loss + d_loss)
        generator.step()
        discriminator.step()
        self.step_losses["g_loss"].append(g_loss.detach().clone())
        self.step_losses["d_loss"].append(d_loss.detach().clone())
        return {"g_loss": g_loss, "d_loss": d_loss}

    def on_train_epoch_end(self):
        reduce = self.trainer.strategy.reduce  # with reduce_op="sum": every process's sum, added up
        for name, losses in self.step_losses.items():
            total = torch.stack(losses).float().sum() if losses else torch.zeros((), device=self.device)
            total = reduce(total, reduce_op="sum")
            count = reduce(torch.tensor(float(len(losses)), device=self.device), reduce_op="sum")
            if count > 0:  # no process cached a loss this epoch: nothing to log
                self.log(f"{name}_epoch_mean", total / count, sync_dist=True)
            losses.clear()


# %%
# The check beside it
# -------------------
# A callback keeps the weights each training batch starts from; a ``CSVLogger`` keeps what the module logs. Two
# epochs of five batches.


class BatchWeights(pl.Callback):
    def __init__(self):
        self.batches = []  # (epoch, weights at the batch's start, batch)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.batches.append((trainer.current_epoch, copy.deepcopy(pl_module.state_dict()), batch.clone()))


def epoch_means(batches, target):
    """Per epoch, the mean over batches of the squared error against ``target``, computed by hand."""
    per_epoch = {}
    reference = BoringModel()
    for epoch, weights, batch in batches:
        reference.load_state_dict(weights)
        with torch.no_grad():
            prediction = reference(batch)
            per_epoch.setdefault(epoch, []).append(((prediction - target) ** 2).mean())
    return [torch.stack(losses).mean().item() for _, losses in sorted(per_epoch.items())]


def logged(logger, name):
    with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
        return [float(row[name]) for row in csv.DictReader(file) if row.get(name)]


pl.seed_everything(0)
train_loader = DataLoader(RandomDataset(32, 40), batch_size=8)
observer = BatchWeights()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
trainer = pl.Trainer(
    max_epochs=2,
    callbacks=[observer],
    logger=logger,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
model = TwoLossesModel()
trainer.fit(model, train_loader)
print(f"g_loss per epoch {logged(logger, 'g_loss_epoch_mean')}")
print(f"d_loss per epoch {logged(logger, 'd_loss_epoch_mean')}")

# %%
# Each epoch logs both means, each equal to the mean of that loss over the epoch's five batches computed by hand,
# and the caches are empty once the epoch ends.

# sphinx_gallery_start_ignore
for name, target in (("g_loss", 1.0), ("d_loss", 0.0)):
    seen, want = logged(logger, f"{name}_epoch_mean"), epoch_means(observer.batches, target)
    assert len(seen) == len(want) == 2, (name, seen, want)
    for a, b in zip(seen, want, strict=True):
        assert math.isclose(a, b, rel_tol=1e-5), (name, a, b)
assert all(losses == [] for losses in model.step_losses.values())
# sphinx_gallery_end_ignore
