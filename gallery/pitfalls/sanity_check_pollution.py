"""
Sanity-check values in the first epoch
======================================

Before training, ``trainer.fit`` runs a few validation batches as a sanity check (``num_sanity_val_steps``,
2 by default), and ``on_validation_epoch_end`` runs after them too. Code that skips that call without
emptying its cache averages the sanity batches into epoch 0; code that tracks a "best" value records the
sanity check's value from the untrained model. This page counts exactly what each variant sees.
"""

# %%
# Scripted validation values
# --------------------------
# Four validation batches whose "loss" is scripted as 1, 2, 3, 4 (the mean of one full run is 2.5). The sanity
# check sees the first two.
import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

VALUES = [1.0, 2.0, 3.0, 4.0]
train_loader = DataLoader(RandomDataset(32, 8), batch_size=8)
val_loader = DataLoader(RandomDataset(32, 32), batch_size=8)


class Scripted(BoringModel):
    def __init__(self):
        super().__init__()
        self.cache = []
        self.epoch_end_calls = 0
        self.validation_steps = 0
        self.epoch_means = []
        self.best_values = []  # every value the "best so far" tracker accepted

    def validation_step(self, batch, batch_idx):
        self.validation_steps += 1
        self.cache.append(torch.tensor(VALUES[batch_idx]))

    def track_best(self, mean):
        if not self.best_values or mean < self.best_values[-1]:
            self.best_values.append(mean)


def fit(model):
    trainer = pl.Trainer(
        max_epochs=1,
        num_sanity_val_steps=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, train_loader, val_loader)
    print(
        f"{type(model).__name__}: {model.validation_steps} validation steps, "
        f"{model.epoch_end_calls} on_validation_epoch_end calls, (entries, mean) per run {model.epoch_means}, "
        f"best values recorded {model.best_values}"
    )
    return model


# %%
# The symptom: skipping the sanity check without clearing
# -------------------------------------------------------
# This hook returns early while ``trainer.sanity_checking`` is true -- and leaves the two sanity values in the
# cache. Epoch 0's mean is then taken over 6 values: (1 + 2 + 1 + 2 + 3 + 4) / 6 = 13 / 6, not 2.5.


class SkipsWithoutClearing(Scripted):
    def on_validation_epoch_end(self):
        self.epoch_end_calls += 1
        if self.trainer.sanity_checking:
            return
        entries, mean = len(self.cache), torch.stack(self.cache).mean().item()
        self.epoch_means.append((entries, mean))
        self.cache.clear()


polluted = fit(SkipsWithoutClearing())
assert polluted.epoch_end_calls == 2
assert polluted.validation_steps == 6
assert polluted.epoch_means == [(6, torch.tensor(13 / 6).item())]

# %%
# The symptom: a best-value tracker that counts the sanity check
# --------------------------------------------------------------
# This hook clears correctly, but feeds every mean to the tracker -- including the sanity check's 1.5, which
# on a real model comes from the untrained weights and from a partial run of the validation set.


class TracksSanityCheck(Scripted):
    def on_validation_epoch_end(self):
        self.epoch_end_calls += 1
        entries, mean = len(self.cache), torch.stack(self.cache).mean().item()
        self.cache.clear()
        self.epoch_means.append((entries, mean))
        self.track_best(mean)


tracker = fit(TracksSanityCheck())
assert tracker.epoch_means == [(2, 1.5), (4, 2.5)]
assert tracker.best_values == [1.5]  # the sanity check's value "beat" the real epoch's 2.5

# %%
# The cause
# ---------
# ``on_validation_epoch_end`` runs after every validation run, the sanity check included: here twice in a
# one-epoch fit. ``trainer.sanity_checking`` tells the two apart.
#
# The fix
# -------
# Always clear the cache, and guard only what must not see the sanity check.


class Guarded(Scripted):
    def on_validation_epoch_end(self):
        self.epoch_end_calls += 1
        entries, mean = len(self.cache), torch.stack(self.cache).mean().item()
        self.cache.clear()
        if self.trainer.sanity_checking:
            return
        self.epoch_means.append((entries, mean))
        self.track_best(mean)


guarded = fit(Guarded())

# %%
# Two calls of the hook, six validation steps in all, but epoch 0's mean uses its own 4 batches, and the
# tracker recorded exactly one value.
assert guarded.epoch_end_calls == 2
assert guarded.validation_steps == 6
assert guarded.epoch_means == [(4, 2.5)]
assert guarded.best_values == [2.5]
assert guarded.cache == []
