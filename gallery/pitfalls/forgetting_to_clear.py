"""
Forgetting to clear the cache, or overwriting it
================================================

A module-side cache must be emptied at the end of every epoch. Without ``.clear()``, the second epoch's mean
silently includes the first epoch's values; assigning instead of appending keeps only the last batch. Neither
raises anything: the only symptom is a wrong number. This page runs the correct cache and both bugs on
scripted validation values, so every mean is known exactly.
"""

# %%
# Scripted validation values
# --------------------------
# Two validation batches per epoch; ``validation_step`` returns the scripted value for (epoch, batch) as its
# "loss": [1, 3] in epoch 0 and [5, 7] in epoch 1. The correct epoch means are 2.0 and 6.0.
import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

SCRIPT = {0: [1.0, 3.0], 1: [5.0, 7.0]}
train_loader = DataLoader(RandomDataset(32, 8), batch_size=8)
val_loader = DataLoader(RandomDataset(32, 16), batch_size=8)


class ScriptedValidation(BoringModel):
    """Caches the scripted values; subclasses choose how the cache is filled and emptied."""

    def __init__(self):
        super().__init__()
        self.cache = []
        self.cache_sizes = []  # entries consumed by each on_validation_epoch_end
        self.cache_after_epoch_end = []

    def validation_step(self, batch, batch_idx):
        loss = torch.tensor(SCRIPT[self.current_epoch][batch_idx])
        self.remember(loss)
        return loss

    def remember(self, loss):
        self.cache.append(loss)

    def on_validation_epoch_end(self):
        self.cache_sizes.append(len(self.cache))
        self.log("val_loss", torch.stack(self.cache).mean())
        self.forget()
        self.cache_after_epoch_end.append(len(self.cache))

    def forget(self):
        self.cache.clear()


class NoClear(ScriptedValidation):
    def forget(self):
        pass


class Overwrite(ScriptedValidation):
    def remember(self, loss):
        self.cache = [loss]


# %%
# What each variant logs
# ----------------------
# A callback reads the logged ``val_loss`` from ``trainer.callback_metrics`` after each validation run. No
# sanity check, so only the two real validation runs happen.


class LoggedValues(pl.Callback):
    def __init__(self):
        self.values = []

    def on_validation_end(self, trainer, pl_module):
        self.values.append(trainer.callback_metrics["val_loss"].item())


def run(model_class):
    model, logged = model_class(), LoggedValues()
    trainer = pl.Trainer(
        max_epochs=2,
        num_sanity_val_steps=0,
        callbacks=[logged],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, train_loader, val_loader)
    print(
        f"{model_class.__name__}: logged val_loss {logged.values}, entries per epoch {model.cache_sizes}, "
        f"left in the cache after each epoch end {model.cache_after_epoch_end}"
    )
    return model, logged.values


correct, correct_logged = run(ScriptedValidation)
no_clear, no_clear_logged = run(NoClear)
overwrite, overwrite_logged = run(Overwrite)

# %%
# The correct cache
# -----------------
# Two entries per epoch, the means 2.0 and 6.0, and an empty cache after every ``on_validation_epoch_end``.
assert correct_logged == [2.0, 6.0]
assert correct.cache_sizes == [2, 2]
assert correct.cache_after_epoch_end == [0, 0]

# %%
# Without ``.clear()``
# --------------------
# The second epoch averages all four values: (1 + 3 + 5 + 7) / 4 = 4.0 instead of 6.0. The cache also grows
# without bound -- on a real model, a slow memory leak.
assert no_clear_logged == [2.0, 4.0]
assert no_clear.cache_sizes == [2, 4]
assert no_clear.cache_after_epoch_end == [2, 4]

# %%
# Overwriting instead of appending
# --------------------------------
# ``self.cache = [loss]`` keeps one entry per epoch, the last batch's: 3.0 and 7.0.
assert overwrite_logged == [3.0, 7.0]
assert overwrite.cache_sizes == [1, 1]

# %%
# The fix
# -------
# ``append`` in the step, ``clear()`` in ``on_validation_epoch_end`` after reducing -- as ``ScriptedValidation``
# does above. The full example with a real model: :doc:`../stages/validation_epoch_end`.
