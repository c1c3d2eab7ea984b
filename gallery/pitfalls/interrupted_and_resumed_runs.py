"""
Interrupted runs and mid-epoch checkpoints
==========================================

A cache lives in the module or the callback object, not in the ``Trainer``: when a run stops half-way -- on
this page, with an exception -- and ``fit`` is called again with the same objects, the cache
still holds the batches of the run that stopped. The fix: empty the cache when each epoch starts, and resume from
end-of-epoch checkpoints. This page measures both cases, and a run resumed from a checkpoint saved in the middle of
an epoch.

:claim:`Mid-epoch-resume-restarts-the-dataloader`.
"""

# %%
# The fix
# -------
# The module-side cache of :doc:`Module-side caching </examples/core/module_side_caching>`: ``training_step``
# appends, ``on_train_epoch_end`` logs the mean and clears -- and ``on_train_epoch_start`` clears too, so that
# a run called again after it stopped half-way starts from an empty cache.
import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class LossCachingModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.training_step_losses = []  # this epoch's cache

    def on_train_epoch_start(self):
        self.training_step_losses.clear()  # nothing left over from a run that stopped half-way

    def training_step(self, batch, batch_idx):
        output = super().training_step(batch, batch_idx)
        self.training_step_losses.append(output["loss"].detach().clone())
        return output

    def on_train_epoch_end(self):
        self.log("train_loss_epoch_mean", torch.stack(self.training_step_losses).mean())
        self.training_step_losses.clear()


# %%
# The checks beside the recipe
# ----------------------------
# ``ClearedOnlyAtEnd`` is the module above without the line in ``on_train_epoch_start``. Sample ``i`` of the
# dataset is a vector filled with the value ``i / 64``, so a batch tells which samples it holds. A callback records,
# for every training step, the epoch, the ``batch_idx``, the batch and the weights it was computed with; another
# stands for the crash: it saves a checkpoint after batch 3 of the second epoch and raises after batch 5.
import csv
import math
import tempfile
import warnings
from pathlib import Path

import lightning
import lightning.pytorch as pl
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader, Dataset

print(f"Lightning {lightning.__version__}")


class ClearedOnlyAtEnd(LossCachingModel):
    def on_train_epoch_start(self):
        pass


class IndexDataset(Dataset):
    """Sample ``i`` is a 32-vector filled with ``i / 64``."""

    def __len__(self):
        return 64

    def __getitem__(self, index):
        return torch.full((32,), index / 64)


class StepRecord(pl.Callback):
    def __init__(self):
        self.steps = []  # (epoch, batch_idx, batch, weights before the step)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        weights = {name: value.detach().clone() for name, value in pl_module.state_dict().items()}
        self.steps.append((trainer.current_epoch, batch_idx, batch.clone(), weights))


class Preempted(pl.Callback):
    """Saves a checkpoint after batch 3 of epoch 1 into ``path``, then raises after batch 5."""

    def __init__(self, path):
        self.path = path

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.current_epoch == 1 and batch_idx == 3:
            trainer.save_checkpoint(self.path)
        if trainer.current_epoch == 1 and batch_idx == 5:
            raise RuntimeError("preempted")


loader = DataLoader(IndexDataset(), batch_size=8)  # 8 batches per epoch


def fit(model, callbacks=(), ckpt_path=None):
    """Two epochs; returns the logged epoch means, the step record and the error the fit raised (or ``None``)."""
    record = StepRecord()
    logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
    trainer = pl.Trainer(
        max_epochs=2,
        limit_val_batches=0,
        callbacks=[record, *callbacks],
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    error = None
    try:
        trainer.fit(model, loader, ckpt_path=ckpt_path)
    except RuntimeError as err:
        error = err
    metrics = Path(logger.log_dir, "metrics.csv")
    logged = []
    if metrics.exists():
        with open(metrics, newline="") as file:
            logged = [
                float(row["train_loss_epoch_mean"]) for row in csv.DictReader(file) if row["train_loss_epoch_mean"]
            ]
    return logged, record, error


def loss_by_hand(weights, batch):
    """The loss of ``BoringModel`` by hand: a linear layer, then the mean squared error against ones."""
    with torch.no_grad():
        predictions = batch @ weights["layer.weight"].T + weights["layer.bias"]
        return ((predictions - 1) ** 2).mean().item()


def epoch_mean_by_hand(steps, epoch):
    losses = [loss_by_hand(weights, batch) for step_epoch, _, batch, weights in steps if step_epoch == epoch]
    return sum(losses) / len(losses)


# %%
# The reference: an uninterrupted run
# -----------------------------------
pl.seed_everything(0)
initial = LossCachingModel().state_dict()
reference_model = LossCachingModel()
reference_model.load_state_dict(initial)
reference_logged, reference_record, _ = fit(reference_model)
print(f"uninterrupted run: logged {reference_logged}")
assert len(reference_logged) == 2
for epoch, value in enumerate(reference_logged):
    assert math.isclose(value, epoch_mean_by_hand(reference_record.steps, epoch), rel_tol=1e-6)

# %%
# Run again with the same module object
# -------------------------------------
# The run stops after batch 5 of epoch 1, and ``fit`` is called again, from the start, with the same module object
# (here reloaded with the initial weights). What ``ClearedOnlyAtEnd`` cached in the stopped epoch is still in its
# cache when the new run begins: the output below gives how many losses.
results = {}
for model_class in (ClearedOnlyAtEnd, LossCachingModel):
    model = model_class()
    model.load_state_dict(initial)
    _, _, error = fit(model, [Preempted(Path(tempfile.mkdtemp(), "mid-epoch.ckpt"))])
    left_over = len(model.training_step_losses)
    model.load_state_dict(initial)
    logged, record, _ = fit(model)
    results[model_class.__name__] = logged
    print(f"{model_class.__name__}: the first run raised {error!r}, leaving {left_over} cached losses")
    print(f"  run again: logged {logged} (uninterrupted: {reference_logged})")

# %%
# Without the clearing at epoch start, the second run's first epoch averages 14 losses: its own 8 and the 6 left
# over. With it, both epochs equal the uninterrupted run's.
stale = results["ClearedOnlyAtEnd"]
assert not math.isclose(stale[0], reference_logged[0], rel_tol=1e-4)
assert math.isclose(stale[1], reference_logged[1], rel_tol=1e-6)
assert all(map(math.isclose, results["LossCachingModel"], reference_logged))

# %%
# Resuming from a checkpoint saved mid-epoch
# ------------------------------------------
# The stopped run saved a checkpoint after batch 3 of epoch 1. A new module resumes from it (``ckpt_path``):
# :claim:`mid-epoch-resume-restarts-the-dataloader`.
checkpoint = Path(tempfile.mkdtemp(), "mid-epoch.ckpt")
pl.seed_everything(0)
stopped = LossCachingModel()
stopped.load_state_dict(initial)
fit(stopped, [Preempted(checkpoint)])
resumed = LossCachingModel()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    resumed_logged, resumed_record, _ = fit(resumed, ckpt_path=checkpoint)
resume_warnings = {f"{w.category.__name__}: {w.message}" for w in caught if "resuming" in str(w.message)}
print("\n".join(resume_warnings))
resumed_steps = [
    (batch_idx, batch[:, 0].mul(64).round().int().tolist()) for _, batch_idx, batch, _ in resumed_record.steps
]
for batch_idx, samples in resumed_steps:
    print(f"resumed epoch, batch_idx {batch_idx}: samples {samples[0]}..{samples[-1]}")
print(f"resumed epoch's logged mean: {resumed_logged}; uninterrupted epoch 1: {reference_logged[1]:.6f}")

# %%
# Above, the resumed epoch's 4 steps, numbered 4 to 7, on samples 0 to 31 -- the samples of this page's loader's
# first 4 batches (``IndexDataset`` in order, batches of 8). Its cache held those 4 losses: the logged value is their
# mean at the weights each was computed with, not the epoch's 8 batches, and not the uninterrupted run's value.
resumed_batch_idx = [batch_idx for batch_idx, _ in resumed_steps]
assert (
    len(resume_warnings) == 1
    and "dataloader is not resumable" in resume_warnings.pop()
    and resumed_batch_idx == [4, 5, 6, 7]
    and [samples for _, samples in resumed_steps] == [list(range(8 * i, 8 * i + 8)) for i in range(4)]
), "resumed after batch 3, the epoch ran batch_idx 4 to 7 on the loader's first 4 batches, with Lightning's warning"
assert len(resumed_logged) == 1
assert math.isclose(resumed_logged[0], epoch_mean_by_hand(resumed_record.steps, 1), rel_tol=1e-6)
assert not math.isclose(resumed_logged[0], reference_logged[1], rel_tol=1e-4)

# %%
# Resume from the end of an epoch
# -------------------------------
# Resume from a checkpoint saved when an epoch ends instead:
# :claim:`end-of-epoch-resume-runs-every-batch`. Here a checkpoint saved at the end of epoch 0, then the same
# resumption.


class EndOfEpochCheckpoint(pl.Callback):
    def __init__(self, path):
        self.path = path

    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.current_epoch == 0:
            trainer.save_checkpoint(self.path)


end_checkpoint = Path(tempfile.mkdtemp(), "end-of-epoch-0.ckpt")
first = LossCachingModel()
first.load_state_dict(initial)
fit(first, [EndOfEpochCheckpoint(end_checkpoint), Preempted(checkpoint)])
resumed_at_end = LossCachingModel()
end_logged, end_record, _ = fit(resumed_at_end, ckpt_path=end_checkpoint)
print(f"resumed from the end of epoch 0: batch_idx {[step[1] for step in end_record.steps]}")
print(f"epoch 1's logged mean: {end_logged}; uninterrupted: {reference_logged[1]:.6f}")

# %%
# What we learned
# ---------------
# Emptying the cache when an epoch starts makes a run called again with the same objects give the uninterrupted
# values. :claim:`Mid-epoch-resume-restarts-the-dataloader`, so that epoch's value covers part of an epoch; from an
# end-of-epoch checkpoint, :claim:`end-of-epoch-resume-runs-every-batch`.
assert [step[1] for step in end_record.steps] == list(range(8)) and len(end_logged) == 1, (
    "resumed from an end-of-epoch checkpoint, the next epoch ran all 8 batches"
)
assert math.isclose(end_logged[0], reference_logged[1], rel_tol=1e-6)
assert resumed_at_end.training_step_losses == []
