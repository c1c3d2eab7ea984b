"""
Several validation dataloaders
==============================

``validation_epoch_end(self, outputs)`` received one list of outputs per dataloader. Its replacement must
keep them apart itself: ``validation_step`` takes a ``dataloader_idx`` argument, and the cache is keyed by it.
``on_validation_epoch_end`` still runs once per validation run, after all the dataloaders.
"""

# %%
# Two validation dataloaders with known values
# --------------------------------------------
# Loader 0 yields the values 1 and 2, loader 1 the values 10 and 20, one per batch; ``validation_step`` uses
# the value itself as its "loss". The means per loader are 1.5 and 15.0.
from collections import defaultdict

import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

train_loader = DataLoader(RandomDataset(32, 8), batch_size=8)
val_loaders = [DataLoader(torch.tensor([1.0, 2.0])), DataLoader(torch.tensor([10.0, 20.0]))]


def make_trainer():
    return pl.Trainer(
        max_epochs=2,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


# %%
# The symptom: no ``dataloader_idx`` argument
# -------------------------------------------
# A ``validation_step`` migrated from a single-loader model has no ``dataloader_idx``. With two loaders,
# Lightning refuses to start validation.


class NoDataloaderIdx(BoringModel):
    def validation_step(self, batch, batch_idx):
        return batch.sum()


trainer = make_trainer()
try:
    trainer.fit(NoDataloaderIdx(), train_loader, val_loaders)
except RuntimeError as err:
    error = err
    print(f"{type(err).__name__}: {err}")
else:
    raise AssertionError("two loaders without dataloader_idx no longer fail: this page is out of date")
print(f"training steps taken: {trainer.global_step}")

# %%
# Without a sanity check, the first validation run is the one that fails -- after the first epoch trained.
assert isinstance(error, RuntimeError)
assert "dataloader_idx" in str(error)
assert trainer.global_step == trainer.num_training_batches == 1

# %%
# The fix: a cache keyed by ``dataloader_idx``
# --------------------------------------------
# ``dataloader_idx=0`` as a default keeps the same method usable with a single loader.


class PerLoaderCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.cache = defaultdict(list)
        self.epoch_end_calls = 0
        self.means = []

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        self.cache[dataloader_idx].append(batch.sum())

    def on_validation_epoch_end(self):
        self.epoch_end_calls += 1
        means = {idx: torch.stack(values).mean().item() for idx, values in sorted(self.cache.items())}
        for idx, mean in means.items():
            self.log(f"val_mean_{idx}", mean, add_dataloader_idx=False)
        self.means.append(means)
        self.cache.clear()


model = PerLoaderCache()
trainer = make_trainer()
trainer.fit(model, train_loader, val_loaders)
print(f"on_validation_epoch_end calls: {model.epoch_end_calls}; means per run: {model.means}")

# %%
# Two epochs, two validation runs, two calls of the hook -- not one per loader -- and the means per loader
# are exactly 1.5 and 15.0 in each run.
assert model.epoch_end_calls == 2
assert model.means == [{0: 1.5, 1: 15.0}, {0: 1.5, 1: 15.0}]
assert trainer.callback_metrics["val_mean_1"].item() == 15.0
assert not model.cache
