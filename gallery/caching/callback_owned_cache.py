"""
A callback that owns its cache, and the sanity check
====================================================

A callback can keep its own cache: append in ``on_validation_batch_end``, reduce and clear in
``on_validation_epoch_end``. This page counts what such a callback sees with and without skipping the sanity check
(``trainer.sanity_checking``), then compares the recipe with losses computed by hand.

What the *sanity check* means for a callback's cache: :claim:`sanity-check-calls-the-same-hooks`.
"""

# %%
# What the hooks see
# ------------------
# A callback that only counts: how many validation batches each validation run passed to
# ``on_validation_batch_end``, and whether the run was the sanity check.
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
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

pl.seed_everything(0)  # seeded before the data is drawn: the same numbers at every run
loader = DataLoader(RandomDataset(32, 64), batch_size=8)  # training and validation alike


class RunCounter(pl.Callback):
    def __init__(self):
        self.batches = 0
        self.runs = []  # one entry per validation run: (sanity check?, batches)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self.batches += 1

    def on_validation_epoch_end(self, trainer, pl_module):
        self.runs.append((trainer.sanity_checking, self.batches))
        self.batches = 0


def fit(callbacks, logger=False, max_epochs=1, **kwargs):
    trainer = pl.Trainer(
        **kwargs,
        max_epochs=max_epochs,
        limit_train_batches=4,
        limit_val_batches=3,
        num_sanity_val_steps=2,
        callbacks=callbacks,
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(BoringModel(), train_dataloaders=loader, val_dataloaders=loader)
    return trainer


# %%
# ``num_sanity_val_steps=2``, ``limit_val_batches=3``: :claim:`sanity-check-calls-the-same-hooks`. A cache filled in
# every call and reduced at the end of the sanity run (a "best score", an early-stopping reference) holds those 2
# sanity batches: :claim:`default-sanity-check-and-checkpointing`.
counter = RunCounter()
trainer = fit([counter])
print(f"validation runs (sanity check?, batches): {counter.runs}")
assert counter.runs == [(True, trainer.num_sanity_val_steps), (False, trainer.num_val_batches[0])]
assert counter.runs == [(True, 2), (False, 3)], (
    "the validation hooks ran for the 2 sanity batches, then for the 3 batches of the real validation run"
)

# %%
# The callback
# ------------
# .. recipe-domain:: callback_owned_validation
#
# Return early while ``trainer.sanity_checking`` is true, in both hooks: the sanity batches are never cached,
# and nothing is reduced for them. The cache is keyed by ``dataloader_idx`` (one list per validation dataloader),
# emptied when each validation run starts (a run that stopped half-way leaves nothing behind) and reduced and
# emptied in ``on_validation_epoch_end``, inside ``fit`` and in ``trainer.validate()`` alike; do not empty it only
# in ``on_train_epoch_end`` (see the end of this page, and
# :doc:`Hook order: when validation runs inside a training epoch </examples/caching/hook_order>`). (Or pass
# ``num_sanity_val_steps=0`` to the ``Trainer``, giving up the early check of the validation code.)
#
# :claim:`Validation-outputs-as-returned`: here ``BoringModel``'s ``{"x": loss}``. The callback reads the loss under
# ``key`` from a dictionary, takes a tensor as it is, and skips a batch that gave it nothing (:doc:`Empty outputs
# </examples/pitfalls/empty_outputs>` shows each case).


class ValidationCache(pl.Callback):
    key = "x"  # where validation_step's dictionary holds the loss

    def __init__(self):
        self.losses = {}  # dataloader_idx -> this validation run's losses

    def on_validation_epoch_start(self, trainer, pl_module):
        self.losses.clear()

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        loss = outputs.get(self.key) if isinstance(outputs, dict) else outputs
        if trainer.sanity_checking or loss is None:
            return
        self.losses.setdefault(dataloader_idx, []).append(loss.detach().clone())  # a detached copy of the loss

    def on_validation_epoch_end(self, trainer, pl_module):
        if trainer.sanity_checking:
            return
        for idx, losses in sorted(self.losses.items()):
            pl_module.log(f"val_loss_{idx}", torch.stack(losses).mean(), add_dataloader_idx=False)
        self.losses.clear()


# %%
# The checks beside it
# --------------------
# Two epochs. A callback keeps the weights of every real validation run; a ``CSVLogger`` keeps what the recipe
# logs. The reference evaluates the same 3 batches with those weights, without Lightning.


class WeightSnapshots(pl.Callback):
    def __init__(self):
        self.snapshots = []

    def on_validation_epoch_start(self, trainer, pl_module):
        if not trainer.sanity_checking:
            self.snapshots.append(copy.deepcopy(pl_module.state_dict()))


def mean_loss(weights, batches):
    reference = BoringModel()
    reference.load_state_dict(weights)
    reference.eval()
    with torch.no_grad():
        return torch.stack([reference.step(batch) for batch in batches]).mean().item()


pl.seed_everything(0)
cache, snapshots = ValidationCache(), WeightSnapshots()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
trainer = fit([cache, snapshots], logger=logger, max_epochs=2)
val_batches = list(loader)[: trainer.num_val_batches[0]]
with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    logged = [float(row["val_loss_0"]) for row in csv.DictReader(file) if row["val_loss_0"]]
expected = [mean_loss(weights, val_batches) for weights in snapshots.snapshots]
print(f"logged val_loss_0: {logged}; by hand: {expected}")

# %%
# One value per real validation run -- none for the sanity check -- each equal to the hand-computed mean of
# its 3 batches, and an empty cache afterwards. Where else the same class held: the box above the
# recipe (:doc:`where it works </reference/scenarios>`).
# Under DDP :claim:`ddp-module-cache-differs`
# (:doc:`Per-rank caches under DDP </examples/distributed/ddp_per_rank_caches>` shows the variant that gathers).
assert len(logged) == len(expected) == 2
for seen, want in zip(logged, expected, strict=True):
    assert math.isclose(seen, want, rel_tol=1e-6)
assert cache.losses == {}

# %%
# Clearing in the wrong hook
# --------------------------
# The same callback clearing only in ``on_train_epoch_end`` instead, with ``val_check_interval=0.5``:
# :claim:`val-check-interval-half-validates-twice`, and the second run reduces its own 3 batches together with the
# first run's 3.


class ClearsAtTrainEpochEnd(ValidationCache):
    def on_validation_epoch_start(self, trainer, pl_module):
        pass  # no clearing here

    def on_validation_epoch_end(self, trainer, pl_module):
        if trainer.sanity_checking:
            return
        for idx, losses in sorted(self.losses.items()):
            pl_module.log(f"val_loss_{idx}", torch.stack(losses).mean(), add_dataloader_idx=False)

    def on_train_epoch_end(self, trainer, pl_module):
        self.losses.clear()


pl.seed_everything(0)
wrong, snapshots = ClearsAtTrainEpochEnd(), WeightSnapshots()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
trainer = fit([wrong, snapshots], logger=logger, val_check_interval=0.5)
with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    wrong_logged = [float(row["val_loss_0"]) for row in csv.DictReader(file) if row["val_loss_0"]]
own_runs = [mean_loss(weights, val_batches) for weights in snapshots.snapshots]
both_runs = (own_runs[0] + own_runs[1]) / 2  # 3 batches each: the mean over all 6
print(f"clearing in on_train_epoch_end, val_check_interval=0.5: logged {wrong_logged}")
print(f"each run's own mean by hand: {own_runs}; the two runs' 6 batches together: {both_runs}")
assert len(wrong_logged) == 2
assert math.isclose(wrong_logged[0], own_runs[0], rel_tol=1e-6)
assert math.isclose(wrong_logged[1], both_runs, rel_tol=1e-6)
assert not math.isclose(wrong_logged[1], own_runs[1], rel_tol=1e-4)
