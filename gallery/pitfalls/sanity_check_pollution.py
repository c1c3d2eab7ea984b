"""
Sanity-check values in the first epoch
======================================

Code whose ``on_validation_epoch_end`` returns early during sanity checking, without emptying its cache, averages
the sanity batches into epoch 0; code that tracks a "best" value records the sanity check's value from the
untrained model. The fix: clear the cache every time, and skip only the logging and the tracking while
``trainer.sanity_checking``. This page counts exactly what each variant sees, and checks the fix.

The sanity check, a few validation batches before training:
:claim:`default-sanity-check-and-checkpointing`; and :claim:`validation-epoch-end-after-sanity-check`.
"""

# %%
# The fix
# -------
# Always clear the cache, and guard only what must not see the sanity check with ``trainer.sanity_checking``:
# here the logged mean and a best-so-far value.
import math

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class Guarded(BoringModel):
    def __init__(self):
        super().__init__()
        self.validation_step_losses = []  # this validation run's cache
        self.best_val_loss = math.inf

    def validation_step(self, batch, batch_idx):
        loss = self.step(batch)
        self.validation_step_losses.append(loss.clone())  # a copy of this batch's loss
        return loss

    def on_validation_epoch_end(self):
        mean = torch.stack(self.validation_step_losses).mean()
        self.validation_step_losses.clear()  # the sanity check's values too
        if self.trainer.sanity_checking:
            return
        self.best_val_loss = min(self.best_val_loss, mean.item())
        self.log("val_loss", mean)
        self.log("best_val_loss", self.best_val_loss)

    def on_save_checkpoint(self, checkpoint):
        checkpoint["best_val_loss"] = self.best_val_loss  # a resumed run carries on from the best so far

    def on_load_checkpoint(self, checkpoint):
        self.best_val_loss = checkpoint.get("best_val_loss", math.inf)


# %%
# .. recipe-domain:: sanity_guarded sanity_guarded_best
#
# Scripted validation values
# --------------------------
# Four validation batches whose "loss" is scripted as 1, 2, 3, 4 (the mean of one full run is 2.5). The sanity
# check's batches are the first ones: :claim:`default-sanity-check-and-checkpointing`.
import copy
import csv
import tempfile
from pathlib import Path

import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

VALUES = [1.0, 2.0, 3.0, 4.0]
pl.seed_everything(0)  # seeded before the data is drawn: the same numbers at every run
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
assert polluted.epoch_end_calls == 2 and polluted.validation_steps == 6, (
    "a one-epoch fit ran on_validation_epoch_end twice, after the 2 sanity batches and after the 4 real ones"
)
assert polluted.epoch_means == [(6, torch.tensor(13 / 6).item())]

# %%
# The symptom: a best-value tracker that counts the sanity check
# --------------------------------------------------------------
# This hook clears correctly, but feeds every mean to the tracker -- including the sanity check's 1.5, this page's
# scripted stand-in for the value a real model's sanity check gives before it has trained.


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
# :claim:`Validation-epoch-end-after-sanity-check`: here twice in a one-epoch fit. Read ``trainer.sanity_checking``
# to tell the two apart.
#
# The fix, run
# ------------
# ``Guarded``, from the top of this page: it always clears the cache, and guards only what must not see the
# sanity check.


# %%
# The checks beside it: a callback keeps the weights of every validation run and the cache's length when each
# run starts; a ``CSVLogger`` keeps what the module logs. Three epochs, the default sanity check.


class ValidationObserver(pl.Callback):
    def __init__(self):
        self.runs = []  # (sanity check?, weights, cached losses left over at the start)

    def on_validation_epoch_start(self, trainer, pl_module):
        weights = copy.deepcopy(pl_module.state_dict())
        self.runs.append((trainer.sanity_checking, weights, len(pl_module.validation_step_losses)))


def mean_loss(weights, batches):
    """The mean of per-batch losses of ``batches`` with ``weights``, computed by hand (no Lightning)."""
    reference = BoringModel()
    reference.load_state_dict(weights)
    reference.eval()
    with torch.no_grad():
        return torch.stack([reference.step(batch) for batch in batches]).mean().item()


def logged(logger, name):
    with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
        return [float(row[name]) for row in csv.DictReader(file) if row.get(name)]


pl.seed_everything(0)
observer = ValidationObserver()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
trainer = pl.Trainer(
    max_epochs=3,
    callbacks=[observer],
    logger=logger,
    log_every_n_steps=1,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
guarded = Guarded()
trainer.fit(guarded, train_loader, val_loader)

sanity_batches = list(val_loader)[: trainer.num_sanity_val_steps]
expected = [mean_loss(weights, val_loader) for sanity, weights, _ in observer.runs if not sanity]
sanity_weights = observer.runs[0][1]
print(f"validation runs (sanity check?, cached losses at the start): {[(r[0], r[2]) for r in observer.runs]}")
print(f"logged val_loss {logged(logger, 'val_loss')}; by hand {expected}")
print(f"sanity check's mean, by hand: {mean_loss(sanity_weights, sanity_batches):.6f}")
print(f"best_val_loss logged {logged(logger, 'best_val_loss')}")

# %%
# The sanity check ran (first), every real run started from an empty cache, each logged mean equals the
# hand-computed one over its own 4 batches, and the best value is the best real epoch's.
assert [run[0] for run in observer.runs] == [True, False, False, False]
assert [run[2] for run in observer.runs] == [0, 0, 0, 0]
assert len(logged(logger, "val_loss")) == 3
for seen, want in zip(logged(logger, "val_loss"), expected, strict=True):
    assert math.isclose(seen, want, rel_tol=1e-6)
assert math.isclose(logged(logger, "best_val_loss")[-1], min(expected), rel_tol=1e-6)
assert not any(math.isclose(v, mean_loss(sanity_weights, sanity_batches)) for v in logged(logger, "val_loss"))
assert guarded.validation_step_losses == []

# %%
# Below, a new ``Guarded`` loads the saved best value back from ``last.ckpt``: the assert checks that it starts from
# it, not from infinity.
last = Path(tempfile.mkdtemp(), "last.ckpt")
trainer.save_checkpoint(last)
restored = Guarded()
restored.on_load_checkpoint(torch.load(last, weights_only=False))
print(f"best_val_loss saved {guarded.best_val_loss:.6f}, restored {restored.best_val_loss:.6f}")
assert restored.best_val_loss == guarded.best_val_loss == min(expected)

# %%
# Why not ``global_step == 0``
# ----------------------------
# Your guard ``self.trainer.global_step == 0``, meant to skip the sanity check, is true wherever ``global_step`` is
# still 0: that is what its condition says. Below: a fresh module validated by a new Trainer; the lines printed show
# what ``GlobalStepGuard`` and ``Guarded`` each returned.


class GlobalStepGuard(Guarded):
    def on_validation_epoch_end(self):
        mean = torch.stack(self.validation_step_losses).mean()
        self.validation_step_losses.clear()
        if self.trainer.global_step == 0:  # the mistake
            return
        self.log("val_loss", mean)


for model in (GlobalStepGuard(), Guarded()):
    validate_trainer = pl.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False)
    [metrics] = validate_trainer.validate(model, val_loader, verbose=False)
    print(f"{type(model).__name__}, trainer.validate(): metrics returned {metrics}")
    if isinstance(model, GlobalStepGuard):
        assert metrics == {}
    else:
        assert math.isclose(metrics["val_loss"], mean_loss(model.state_dict(), val_loader), rel_tol=1e-6)

# %%
# Where else ``Guarded`` held, against means and best values computed from the data without Lightning: the box above
# the recipe (:doc:`where it works </reference/scenarios>`).
# With several validation dataloaders this ``validation_step`` needs a ``dataloader_idx`` argument:
# :claim:`validation-step-needs-dataloader-idx` (:doc:`Several validation dataloaders
# </examples/pitfalls/multiple_val_dataloaders>`). Under DDP :claim:`ddp-module-cache-differs`
# (:doc:`Per-rank caches under DDP </examples/distributed/ddp_per_rank_caches>` shows the variant that gathers).
