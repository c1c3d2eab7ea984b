"""
A callback that owns its cache, and the sanity check
====================================================

A callback can keep its own cache: append in ``on_validation_batch_end``, reduce and clear in
``on_validation_epoch_end``. Before training, ``fit`` runs a *sanity check* -- a short validation loop of
``num_sanity_val_steps`` batches -- which calls the same hooks. This page counts the appends with and without
skipping the sanity check (``trainer.sanity_checking``).
"""

# %%
# The callback
# ------------
# Every validation run leaves one summary: how many batches the cache held. ``skip_sanity`` makes the
# callback ignore the sanity-check run.
import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class ValidationCache(pl.Callback):
    def __init__(self, skip_sanity):
        self.skip_sanity = skip_sanity
        self.cache = []
        self.appends = 0
        self.runs = []  # one entry per validation run: (sanity check?, cached batches)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        if self.skip_sanity and trainer.sanity_checking:
            return
        self.cache.append(outputs["x"].detach())
        self.appends += 1

    def on_validation_epoch_end(self, trainer, pl_module):
        if self.skip_sanity and trainer.sanity_checking:
            return
        self.runs.append((trainer.sanity_checking, len(self.cache)))
        self.cache.clear()


def fit(callback):
    trainer = pl.Trainer(
        max_epochs=1,
        limit_train_batches=4,
        limit_val_batches=3,
        num_sanity_val_steps=2,
        callbacks=[callback],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    loader = DataLoader(RandomDataset(32, 64), batch_size=8)
    trainer.fit(BoringModel(), train_dataloaders=loader, val_dataloaders=loader)
    return trainer


# %%
# With the sanity check counted
# -----------------------------
# ``num_sanity_val_steps=2``, ``limit_val_batches=3``: the callback appends for the 2 sanity batches, then
# for the 3 batches of the real validation run. A metric reduced at the end of the sanity run (a "best
# score", an early-stopping reference) comes from 2 batches of an untrained model.
counted = ValidationCache(skip_sanity=False)
trainer = fit(counted)
print(f"appends: {counted.appends}; runs (sanity check?, cached batches): {counted.runs}")
assert counted.appends == trainer.num_sanity_val_steps + trainer.num_val_batches[0] == 2 + 3
assert counted.runs == [(True, 2), (False, 3)]

# %%
# Skipping the sanity check
# -------------------------
# Returning early while ``trainer.sanity_checking`` is true leaves one run with the 3 real batches. (Or
# pass ``num_sanity_val_steps=0`` to the ``Trainer``, giving up the early check of the validation code.)
skipping = ValidationCache(skip_sanity=True)
trainer = fit(skipping)
print(f"appends: {skipping.appends}; runs (sanity check?, cached batches): {skipping.runs}")
assert skipping.appends == trainer.num_val_batches[0] == 3
assert skipping.runs == [(False, 3)]
assert skipping.cache == [] and counted.cache == []
