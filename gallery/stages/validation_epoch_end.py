"""
``validation_epoch_end`` becomes ``on_validation_epoch_end``
============================================================

Lightning 2.0 removed ``validation_epoch_end(self, outputs)``. The replacement appends what it needs in
``validation_step`` and reduces and clears it in ``on_validation_epoch_end(self)``, which takes no
arguments. This page shows what the old hook raises, then checks the replacement's epoch means against the
same batches evaluated by hand.
"""

# %%
# The old code
# ------------
# ``BoringModel`` is Lightning's own demo model; its ``validation_step`` returns ``{"x": loss}``.
import copy

import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


def make_trainer(callbacks=()):
    return pl.Trainer(
        max_epochs=2,
        num_sanity_val_steps=0,
        callbacks=list(callbacks),
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


pl.seed_everything(3, verbose=False)
train_loader = DataLoader(RandomDataset(32, 32), batch_size=8)
val_loader = DataLoader(RandomDataset(32, 24), batch_size=8)


class OldValidationEpochEnd(BoringModel):
    def validation_epoch_end(self, outputs):
        self.log("val_loss", torch.stack([out["x"] for out in outputs]).mean())


old_trainer = make_trainer()
try:
    old_trainer.fit(OldValidationEpochEnd(), train_loader, val_loader)
except NotImplementedError as err:
    old_error = err
    print(f"{type(err).__name__}: {err}")
else:
    raise AssertionError("validation_epoch_end no longer fails: this page is out of date")
print(f"training steps taken before the failure: {old_trainer.global_step}")

# %%
# ``trainer.fit`` checks for the removed hook before the first training step.
assert isinstance(old_error, NotImplementedError)
assert "validation_epoch_end" in str(old_error)
assert old_trainer.global_step == 0

# %%
# The replacement
# ---------------
# ``validation_step`` appends the loss; ``on_validation_epoch_end`` reduces, logs and clears. Validation runs
# under ``torch.no_grad``, so the cached tensors hold no autograd graph.


class ValidationLossCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.validation_step_losses = []
        self.epoch_means = []

    def validation_step(self, batch, batch_idx):
        loss = self.step(batch)
        self.validation_step_losses.append(loss)
        return {"x": loss}

    def on_validation_epoch_end(self):
        mean = torch.stack(self.validation_step_losses).mean()
        self.log("val_loss", mean)
        self.epoch_means.append(mean.item())
        self.validation_step_losses.clear()


# %%
# The weights change between validation runs, so a small callback keeps a copy of them each time validation
# starts: the reference below evaluates exactly the weights Lightning validated.


class WeightSnapshots(pl.Callback):
    def __init__(self):
        self.snapshots = []

    def on_validation_epoch_start(self, trainer, pl_module):
        self.snapshots.append(copy.deepcopy(pl_module.state_dict()))


snapshots = WeightSnapshots()
model = ValidationLossCache()
trainer = make_trainer([snapshots])
trainer.fit(model, train_loader, val_loader)

# %%
# The reference: the same batches, the same weights, no Lightning
# ---------------------------------------------------------------
# A fresh ``BoringModel`` in eval mode under ``torch.no_grad`` computes each batch's loss. Validation does not
# change the weights, so the means agree exactly, not merely approximately.


def reference_mean(state_dict, loader):
    reference = BoringModel()
    reference.load_state_dict(state_dict)
    reference.eval()
    with torch.no_grad():
        return torch.stack([reference.step(batch) for batch in loader]).mean().item()


reference_means = [reference_mean(state, val_loader) for state in snapshots.snapshots]
for epoch, (mean, expected) in enumerate(zip(model.epoch_means, reference_means, strict=True)):
    print(f"epoch {epoch}: on_validation_epoch_end mean {mean:.6f} (by hand: {expected:.6f})")

# %%
# One mean per epoch, equal to the reference; ``trainer.callback_metrics`` holds the last one; the cache is
# empty after every epoch.
assert len(model.epoch_means) == 2
assert model.epoch_means == reference_means
assert trainer.callback_metrics["val_loss"].item() == reference_means[-1]
assert model.validation_step_losses == []
