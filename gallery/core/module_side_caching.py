"""
Module-side caching
===================

A module that used to implement ``training_epoch_end(self, outputs)`` keeps the values itself: it appends
what it needs in ``training_step``, and consumes and clears the cache in ``on_train_epoch_end(self)``.
A callback that needs the same values reads them from ``pl_module``. This page checks, epoch by epoch,
that the cache holds exactly what the old ``outputs`` list held.
"""

# %%
# The module
# ----------
# ``training_step`` appends the detached loss: a cached tensor that still requires grad would keep the
# batch's whole autograd graph alive until the epoch ends.
import math

import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class LossCachingModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.training_step_losses = []  # this epoch's cache
        self.epochs = []  # one summary per epoch

    def training_step(self, batch, batch_idx):
        output = super().training_step(batch, batch_idx)
        self.training_step_losses.append(output["loss"].detach())
        return output

    def on_train_epoch_end(self):
        self.epochs.append(
            {
                "entries": len(self.training_step_losses),
                "mean_loss": torch.stack(self.training_step_losses).mean().item(),
                "holds_graph": any(loss.requires_grad for loss in self.training_step_losses),
            }
        )
        self.training_step_losses.clear()


# %%
# A callback that reads the module's cache
# ----------------------------------------
# Lightning calls a callback's ``on_train_epoch_end`` before the module's, so the callback sees the full
# cache; the module clears it afterwards.


class CacheReader(pl.Callback):
    def __init__(self):
        self.entries_seen = []

    def on_train_epoch_end(self, trainer, pl_module):
        self.entries_seen.append(len(pl_module.training_step_losses))


# %%
# Train
# -----
# Three epochs of four batches each, seeded. A copy of the initial weights is kept for the reference below.
EPOCHS = 3
torch.manual_seed(7)
loader = DataLoader(RandomDataset(32, 32), batch_size=8)
model = LossCachingModel()
initial_weights = {name: value.clone() for name, value in model.state_dict().items()}

reader = CacheReader()
trainer = pl.Trainer(
    max_epochs=EPOCHS,
    limit_val_batches=0,
    callbacks=[reader],
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, loader)

# %%
# The reference: the same training as a plain PyTorch loop
# --------------------------------------------------------
# A plain ``BoringModel`` with the same initial weights, trained by hand over the same batches with the
# optimizer and scheduler ``configure_optimizers`` returns, computes the per-batch losses without any cache.


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

for epoch, (seen, expected) in enumerate(zip(model.epochs, reference_means, strict=True)):
    print(f"epoch {epoch}: {seen['entries']} cached losses, mean {seen['mean_loss']:.6f} (plain loop: {expected:.6f})")

# %%
# What the cache delivered
# ------------------------
# For every epoch: one entry per training batch (seen by the module and by the callback), the same mean loss
# as the plain loop, and no autograd graph kept alive. Forgetting ``.clear()``, caching ``output["loss"]``
# without ``.detach()``, or overwriting instead of appending fails these checks -- and the build of this page.
assert len(model.epochs) == EPOCHS
for seen, expected in zip(model.epochs, reference_means, strict=True):
    assert seen["entries"] == trainer.num_training_batches == 4
    assert math.isclose(seen["mean_loss"], expected, rel_tol=1e-6)
    assert not seen["holds_graph"]
assert reader.entries_seen == [4] * EPOCHS
assert model.training_step_losses == []
