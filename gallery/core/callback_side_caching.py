"""
Callback-side caching
=====================

A callback that used to read ``outputs`` in ``on_train_epoch_end(trainer, pl_module, outputs)`` can collect
the same values itself: ``on_train_batch_end`` receives each batch's ``outputs``, so the callback appends
what it needs there and reduces it in ``on_train_epoch_end(trainer, pl_module)``. The module is untouched.
This page checks, epoch by epoch, that the callback sees exactly what the old ``outputs`` list held.
"""

# %%
# The callback
# ------------
# ``on_train_batch_end`` gets the dictionary ``training_step`` returned. Keep only what the epoch-end
# computation needs -- here the loss, detached so the cache never holds an autograd graph -- and clear the
# cache once the epoch's value is computed.
import math

import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class EpochLossCallback(pl.Callback):
    def __init__(self):
        self.batch_losses = []  # this epoch's cache
        self.epochs = []  # one summary per epoch

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.batch_losses.append(outputs["loss"].detach())

    def on_train_epoch_end(self, trainer, pl_module):
        self.epochs.append(
            {
                "entries": len(self.batch_losses),
                "mean_loss": torch.stack(self.batch_losses).mean().item(),
                "holds_graph": any(loss.requires_grad for loss in self.batch_losses),
            }
        )
        self.batch_losses.clear()


# %%
# Train
# -----
# Three epochs of four batches each, seeded. A copy of the initial weights is kept for the reference below.
EPOCHS = 3
torch.manual_seed(7)
loader = DataLoader(RandomDataset(32, 32), batch_size=8)
model = BoringModel()
initial_weights = {name: value.clone() for name, value in model.state_dict().items()}

callback = EpochLossCallback()
trainer = pl.Trainer(
    max_epochs=EPOCHS,
    limit_val_batches=0,
    callbacks=[callback],
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, loader)

# %%
# The reference: the same training as a plain PyTorch loop
# --------------------------------------------------------
# The old ``outputs`` list held one entry per batch. A plain loop over the same batches, from the same
# initial weights, with the optimizer and scheduler ``BoringModel.configure_optimizers`` returns, computes
# those per-batch losses without any cache.


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

for epoch, (seen, expected) in enumerate(zip(callback.epochs, reference_means, strict=True)):
    print(f"epoch {epoch}: {seen['entries']} cached losses, mean {seen['mean_loss']:.6f} (plain loop: {expected:.6f})")

# %%
# What the callback delivered
# ---------------------------
# For every epoch: one cached entry per training batch, the same mean loss as the plain loop, and no
# autograd graph kept alive by the cache. A callback that forgets ``.clear()`` or overwrites instead of
# appending fails these checks -- and with them the build of this page.
assert len(callback.epochs) == EPOCHS
for seen, expected in zip(callback.epochs, reference_means, strict=True):
    assert seen["entries"] == trainer.num_training_batches == 4
    assert math.isclose(seen["mean_loss"], expected, rel_tol=1e-6)
    assert not seen["holds_graph"]
assert callback.batch_losses == []
