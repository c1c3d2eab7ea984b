"""
Forgetting to clear the cache, or overwriting it
================================================

A module-side cache must be emptied at the end of every epoch. Without ``.clear()``, the second epoch's mean
silently includes the first epoch's values; assigning instead of appending keeps only the last batch. Neither
raises anything: the only symptom is a wrong number. This page runs the correct cache and both bugs, and
compares what each logs with losses computed by hand.
"""

# %%
# The fix
# -------
# Append in ``validation_step``, and ``clear()`` in ``on_validation_epoch_end`` right after reducing.
import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class ClearedCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.validation_step_losses = []  # this validation run's cache

    def validation_step(self, batch, batch_idx):
        loss = self.step(batch)
        self.validation_step_losses.append(loss.clone())  # a copy of this batch's loss
        return loss

    def on_validation_epoch_end(self):
        self.log("val_loss", torch.stack(self.validation_step_losses).mean())
        self.validation_step_losses.clear()


# %%
# .. recipe-domain:: cleared_cache
#
# Two bugs
# --------
# Two validation batches per epoch, two epochs, no sanity check. ``ClearedCache`` appends each batch's loss in
# ``validation_step``, logs the mean and clears in ``on_validation_epoch_end``; ``NoClear`` forgets the
# ``.clear()``; ``Overwrite`` assigns instead of appending.
import copy
import csv
import math
import tempfile
from pathlib import Path

import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

pl.seed_everything(0)  # seeded before the data is drawn: the same numbers at every run
train_loader = DataLoader(RandomDataset(32, 64), batch_size=8)
val_loader = DataLoader(RandomDataset(32, 16), batch_size=8)


class NoClear(ClearedCache):
    def on_validation_epoch_end(self):
        self.log("val_loss", torch.stack(self.validation_step_losses).mean())


class Overwrite(ClearedCache):
    def validation_step(self, batch, batch_idx):
        loss = self.step(batch)
        self.validation_step_losses = [loss]
        return loss


# %%
# The checks beside the modules
# -----------------------------
# A callback keeps the weights of each validation run and the cache's length twice: in its own
# ``on_validation_epoch_end`` (:claim:`plain-callbacks-before-module-epoch-ends`: what the module is about to
# reduce), and in ``on_validation_end`` (what is left: the runs below show each cache there). A ``CSVLogger`` keeps
# what each module logs.


class CacheObserver(pl.Callback):
    def __init__(self):
        self.snapshots = []
        self.entries_reduced = []
        self.entries_left = []

    def on_validation_epoch_start(self, trainer, pl_module):
        self.snapshots.append(copy.deepcopy(pl_module.state_dict()))

    def on_validation_epoch_end(self, trainer, pl_module):
        self.entries_reduced.append(len(pl_module.validation_step_losses))

    def on_validation_end(self, trainer, pl_module):
        self.entries_left.append(len(pl_module.validation_step_losses))


def run(model_class):
    pl.seed_everything(0)
    observer = CacheObserver()
    logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
    trainer = pl.Trainer(
        max_epochs=2,
        num_sanity_val_steps=0,
        callbacks=[observer],
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model_class(), train_loader, val_loader)
    with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
        logged = [float(row["val_loss"]) for row in csv.DictReader(file) if row.get("val_loss")]
    print(
        f"{model_class.__name__}: logged val_loss {[round(v, 6) for v in logged]}, entries reduced per epoch "
        f"{observer.entries_reduced}, left in the cache after each epoch end {observer.entries_left}"
    )
    return observer, logged


def batch_losses(weights):
    """Each validation batch's loss with ``weights``, computed by hand (no Lightning)."""
    reference = BoringModel()
    reference.load_state_dict(weights)
    reference.eval()
    with torch.no_grad():
        return [reference.step(batch).item() for batch in val_loader]


def mean(values):
    return sum(values) / len(values)


correct, correct_logged = run(ClearedCache)
no_clear, no_clear_logged = run(NoClear)
overwrite, overwrite_logged = run(Overwrite)
by_hand = [batch_losses(weights) for weights in correct.snapshots]  # one list of 2 losses per epoch
print(f"batch losses by hand, per epoch: {[[round(v, 6) for v in epoch] for epoch in by_hand]}")

# %%
# The same training for all three.
for observer in (no_clear, overwrite):
    for mine, theirs in zip(observer.snapshots, correct.snapshots, strict=True):
        assert all(torch.equal(mine[name], theirs[name]) for name in mine)

# %%
# The correct cache
# -----------------
# Two entries per epoch, each epoch's mean of its own two batches, and an empty cache after every
# ``on_validation_epoch_end``.
assert correct.entries_reduced == [2, 2] and correct.entries_left == [0, 0]
for seen, epoch in zip(correct_logged, by_hand, strict=True):
    assert math.isclose(seen, mean(epoch), rel_tol=1e-6)

# %%
# Without ``.clear()``
# --------------------
# The second epoch averages all four values, the first epoch's included. The cache also grows without bound --
# on a real model, a slow memory leak.
assert no_clear.entries_reduced == [2, 4] and no_clear.entries_left == [2, 4]
assert math.isclose(no_clear_logged[0], mean(by_hand[0]), rel_tol=1e-6)
assert math.isclose(no_clear_logged[1], mean(by_hand[0] + by_hand[1]), rel_tol=1e-6)
assert not math.isclose(no_clear_logged[1], mean(by_hand[1]), rel_tol=1e-4)

# %%
# Overwriting instead of appending
# --------------------------------
# ``self.validation_step_losses = [loss]`` keeps one entry per epoch, the last batch's.
assert overwrite.entries_reduced == [1, 1]
for seen, epoch in zip(overwrite_logged, by_hand, strict=True):
    assert math.isclose(seen, epoch[-1], rel_tol=1e-6)
    assert not math.isclose(seen, mean(epoch), rel_tol=1e-4)

# %%
# The fix
# -------
# ``append`` in the step, ``clear()`` in ``on_validation_epoch_end`` after reducing -- as ``ClearedCache``
# does above. Where else ``ClearedCache`` held: the box above the recipe (:doc:`where it works
# </reference/scenarios>`). The full example with a real model:
# :doc:`validation_epoch_end becomes on_validation_epoch_end </examples/stages/validation_epoch_end>`.
# With several validation dataloaders this ``validation_step`` needs a ``dataloader_idx`` argument:
# :claim:`validation-step-needs-dataloader-idx` (:doc:`Several validation dataloaders
# </examples/pitfalls/multiple_val_dataloaders>`). Under DDP :claim:`ddp-module-cache-differs`
# (:doc:`Per-rank caches under DDP </examples/distributed/ddp_per_rank_caches>` shows the variant that gathers).
