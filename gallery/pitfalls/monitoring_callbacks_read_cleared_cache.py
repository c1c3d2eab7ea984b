"""
A monitoring callback that reads the module's cache
===================================================

:claim:`Monitoring-callbacks-after-module`. So a subclass of one of them that reads the module's cache finds it
cleared. The fix: read the value the module logged, or read the cache from a plain
``Callback``. This page shows the order of the hooks, the subclass failing, and both reads holding.
"""

# %%
# The fix
# -------
# Read the value the module **logged**: pass its name to ``monitor=``, and read ``trainer.callback_metrics`` in a
# subclass's own code. A callback that needs the cache itself is a plain
# ``Callback``: :claim:`plain-callbacks-before-module-train-epoch-end`.
import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import ModelCheckpoint


class CheckpointSkippingNaN(ModelCheckpoint):
    def on_train_epoch_end(self, trainer, pl_module):
        if not torch.isnan(trainer.callback_metrics[self.monitor]):  # the value the module logged
            super().on_train_epoch_end(trainer, pl_module)


class CacheMeanCallback(pl.Callback):
    def on_train_epoch_end(self, trainer, pl_module):
        pl_module.log("callback_epoch_mean", torch.stack(pl_module.training_step_losses).mean())


# %%
# .. recipe-domain:: callback_reads_module_cache
#
# The module-side recipe
# ----------------------
# As on :doc:`Module-side caching </examples/core/module_side_caching>`: ``training_step`` caches a detached
# copy of the loss, ``on_train_epoch_end`` logs the mean and clears the cache.
import csv
import math
import tempfile
from pathlib import Path

import lightning
from lightning.pytorch.callbacks import EarlyStopping
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class LossCachingModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.training_step_losses = []  # this epoch's cache

    def training_step(self, batch, batch_idx):
        # your loss, as your step computes it
        prediction = self(batch)
        loss = torch.nn.functional.mse_loss(prediction, torch.ones_like(prediction))
        self.training_step_losses.append(loss.detach().clone())
        return loss

    def on_train_epoch_end(self):
        self.log("train_loss_epoch_mean", torch.stack(self.training_step_losses).mean())
        self.training_step_losses.clear()


# %%
# Who runs when
# -------------
# Small recorders note, at each epoch end, who runs and how many cached losses it finds: the module, a plain
# callback, a ``ModelCheckpoint`` subclass and an ``EarlyStopping`` subclass. The plain callback is last in the
# ``callbacks`` list.


class RecordingModel(LossCachingModel):
    def __init__(self, calls):
        super().__init__()
        self.calls = calls

    def on_train_epoch_end(self):
        self.calls.append(("LightningModule", len(self.training_step_losses)))
        super().on_train_epoch_end()


def recorder(base):
    """A subclass of the callback class ``base`` that notes its ``on_train_epoch_end`` in ``calls``."""

    class Recorder(base):
        def __init__(self, calls, **kwargs):
            super().__init__(**kwargs)
            self.calls = calls

        def on_train_epoch_end(self, trainer, pl_module):
            self.calls.append((base.__name__, len(pl_module.training_step_losses)))
            super().on_train_epoch_end(trainer, pl_module)

    return Recorder


def make_trainer(callbacks, epochs=2, logger=False):
    return pl.Trainer(
        max_epochs=epochs,
        limit_val_batches=0,
        callbacks=callbacks,
        logger=logger,
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


pl.seed_everything(0)  # seeded before the data is drawn: the same numbers at every run
loader = DataLoader(RandomDataset(32, 32), batch_size=8)
calls = []
monitor = "train_loss_epoch_mean"
make_trainer(
    [
        recorder(ModelCheckpoint)(calls, dirpath=tempfile.mkdtemp(), monitor=monitor, save_on_train_epoch_end=True),
        recorder(EarlyStopping)(calls, monitor=monitor, check_on_train_epoch_end=True),
        recorder(pl.Callback)(calls),
    ]
).fit(RecordingModel(calls), loader)
for epoch in range(2):
    print(f"epoch {epoch}: (who ran, cached losses found) {calls[4 * epoch : 4 * epoch + 4]}")

# %%
# Read each epoch's line above in order: who ran first, and how many cached losses each found when it ran.
order = [name for name, _ in calls[:4]]
found = dict(calls[:4])
assert (
    calls[:4] == calls[4:]
    and len(calls) == 8
    and order[:2] == ["Callback", "LightningModule"]
    and set(order[2:]) == {"ModelCheckpoint", "EarlyStopping"}
    and found == {"Callback": 4, "LightningModule": 4, "ModelCheckpoint": 0, "EarlyStopping": 0}
), "each epoch: the plain callback first with the full cache, the module, then ModelCheckpoint and EarlyStopping"

# %%
# The symptom
# -----------
# Below, a subclass of ``ModelCheckpoint`` with its own score from the cache: a whole epoch trains, then its
# ``torch.stack`` fails on the empty cache.


class CheckpointScoringTheCache(ModelCheckpoint):
    def on_train_epoch_end(self, trainer, pl_module):
        self.cache_mean = torch.stack(pl_module.training_step_losses).mean()
        super().on_train_epoch_end(trainer, pl_module)


trainer = make_trainer([CheckpointScoringTheCache(dirpath=tempfile.mkdtemp(), monitor=monitor)])
error = None
try:
    trainer.fit(LossCachingModel(), loader)
except RuntimeError as err:
    error = err
    print(f"{type(err).__name__}: {err}")
print(f"optimizer steps before the failure: {trainer.global_step} (batches per epoch: {trainer.num_training_batches})")

# %%
# The subclass found the cache empty, at the end of the first epoch's four steps.
assert error is not None and "non-empty" in str(error)
assert trainer.global_step == trainer.num_training_batches == 4

# %%
# The cause
# ---------
# :claim:`Monitoring-callbacks-after-module`, while :claim:`plain-callbacks-before-module-train-epoch-end`.
#
# The fix, run
# ------------
# ``CheckpointSkippingNaN`` and ``CacheMeanCallback``, from the top of this page.


# %%
# The checks beside the fix
# -------------------------
# A small callback records the weights and the batch each training step is computed with, for the reference: the
# mean of each epoch's losses computed by hand with plain PyTorch. ``CSVLogger`` keeps what was logged.


class StepInputs(pl.Callback):
    def __init__(self):
        self.steps = []  # (epoch, batch, weights before the step)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        weights = {name: value.detach().clone() for name, value in pl_module.state_dict().items()}
        self.steps.append((trainer.current_epoch, batch.clone(), weights))


def loss_by_hand(weights, batch):
    """The module's loss by hand: its linear layer, then the mean squared error against ones."""
    with torch.no_grad():
        predictions = batch @ weights["layer.weight"].T + weights["layer.bias"]
        return ((predictions - 1) ** 2).mean().item()


EPOCHS = 3
torch.manual_seed(11)
inputs = StepInputs()
checkpoint = CheckpointSkippingNaN(dirpath=tempfile.mkdtemp(), monitor=monitor, save_on_train_epoch_end=True)
early_stopping = EarlyStopping(monitor="callback_epoch_mean", patience=EPOCHS, check_on_train_epoch_end=True)
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
model = LossCachingModel()
make_trainer([checkpoint, early_stopping, CacheMeanCallback(), inputs], EPOCHS, logger).fit(model, loader)

per_epoch = {}
for epoch, batch, weights in inputs.steps:
    per_epoch.setdefault(epoch, []).append(loss_by_hand(weights, batch))
reference = [sum(losses) / len(losses) for _, losses in sorted(per_epoch.items())]
with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    rows = list(csv.DictReader(file))
module_logged = [float(row[monitor]) for row in rows if row[monitor]]
callback_logged = [float(row["callback_epoch_mean"]) for row in rows if row["callback_epoch_mean"]]
for epoch, expected in enumerate(reference):
    print(
        f"epoch {epoch}: by hand {expected:.6f}; module logged {module_logged[epoch]:.6f}; "
        f"plain callback logged {callback_logged[epoch]:.6f}"
    )
print(f"ModelCheckpoint subclass best score (from the logged value): {checkpoint.best_model_score.item():.6f}")
print(f"EarlyStopping best score (monitoring the plain callback's value): {early_stopping.best_score.item():.6f}")

# %%
# What the fix delivers
# ---------------------
# The module logged, and the plain callback computed from the full cache, the mean by hand of every epoch; the
# best scores of the subclass (reading the module's logged value) and of EarlyStopping (monitoring the callback's)
# are the best epoch's.
for values in (module_logged, callback_logged):
    assert len(values) == EPOCHS
    assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(values, reference, strict=True))
assert math.isclose(checkpoint.best_model_score.item(), min(reference), rel_tol=1e-6)
assert math.isclose(early_stopping.best_score.item(), min(reference), rel_tol=1e-6)
assert model.training_step_losses == []
