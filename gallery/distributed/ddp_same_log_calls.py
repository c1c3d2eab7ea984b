"""
Every rank must make the same ``sync_dist`` calls
=================================================

This page runs, on 2 CPU processes, two ways of logging with ``sync_dist=True`` that give the ranks different
calls -- names that depend on what a rank cached, and a value logged only ``if self.trainer.is_global_zero`` -- and
the fix: the same names on every rank, from sums and counts reduced across the ranks.

:claim:`Sync-dist-reduces-by-call-order`. :claim:`Rank-zero-only-sync-dist-fails`.
"""

# %%
# A labelled validation set
# -------------------------
# 12 samples of 4 classes, ordered for three of the classes per rank
# (:claim:`distributed-sampler-repeats-a-sample`; here nothing needs repeating); the page prints which.
import datetime
import math
import re
import tempfile

import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.strategies import DDPStrategy
from torch.utils.data import DataLoader, TensorDataset

print(f"Lightning {lightning.__version__}")

WORLD_SIZE = 2
NUM_CLASSES = 4
pl.seed_everything(0)
labels = torch.tensor([0, 0, 1, 2, 2, 3, 0, 0, 1, 2, 2, 3])
val_dataset = TensorDataset(torch.randn(len(labels), 32), labels)
train_loader = DataLoader(RandomDataset(32, 16), batch_size=4)
val_loader = DataLoader(val_dataset, batch_size=3)
print(f"classes of rank 0's samples: {sorted(set(labels[0::2].tolist()))}")
print(f"classes of rank 1's samples: {sorted(set(labels[1::2].tolist()))}")


def make_trainer(strategy="ddp_fork", devices=WORLD_SIZE):
    return pl.Trainer(
        accelerator="cpu",
        devices=devices,
        strategy=strategy,
        max_epochs=1,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tempfile.mkdtemp(),
    )


def per_sample_loss(model, features):
    """BoringModel's loss (mean squared error against ones) of each sample: shape ``(samples,)``."""
    predictions = model(features)
    return ((predictions - 1) ** 2).mean(dim=1)


# %%
# Names that depend on the rank's cache
# -------------------------------------
# The module caches each sample's loss and label and, at epoch end, logs one mean per class it found in its cache.


class PerClassLossByKeys(BoringModel):
    def __init__(self):
        super().__init__()
        self.sample_losses, self.sample_labels = [], []

    def validation_step(self, batch, batch_idx):
        features, labels = batch
        self.sample_losses.append(per_sample_loss(self, features))
        self.sample_labels.append(labels)

    def on_validation_epoch_end(self):
        losses, labels = torch.cat(self.sample_losses), torch.cat(self.sample_labels)
        per_class = {f"val_loss_class{c}": losses[labels == c].mean() for c in labels.unique().tolist()}
        self.log_dict(per_class, sync_dist=True)
        self.sample_losses.clear()
        self.sample_labels.clear()


# %%
# The reference: each class's mean loss over the dataset, by hand, with the weights the module holds in this process
# after ``trainer.fit`` (the weights of the last validation, as the checks below confirm).


def class_means(model, indices=slice(None)):
    """``{class: mean loss}`` over the validation samples ``indices`` (all of them by default), by hand."""
    features, sample_labels = val_dataset.tensors[0][indices], labels[indices]
    with torch.no_grad():
        losses = per_sample_loss(model.eval(), features)
    return {c: losses[sample_labels == c].mean().item() for c in sample_labels.unique().tolist()}


by_keys_model = PerClassLossByKeys()
by_keys_trainer = make_trainer()
by_keys_trainer.fit(by_keys_model, train_loader, val_loader)
by_keys = {name: value.item() for name, value in by_keys_trainer.callback_metrics.items()}
true_means = class_means(by_keys_model)
for c in range(NUM_CLASSES):
    logged = by_keys.get(f"val_loss_class{c}")
    if logged is None:
        print(f"class {c}: by hand {true_means[c]:.6f}; never logged")
    else:
        gap = (logged - true_means[c]) / true_means[c]
        print(f"class {c}: by hand {true_means[c]:.6f}; logged {logged:.6f}, off by {gap:.1%}")

# %%
# Class 0 holds (both ranks saw it first, each two samples of it); class 1 and class 2 are off, and class 3 was never
# logged.
#
# The cause
# ---------
# :claim:`Sync-dist-reduces-by-call-order`. The checks compute which of the other rank's values each logged name was
# averaged with, from each rank's own samples.
rank_means = [class_means(by_keys_model, slice(rank, None, WORLD_SIZE)) for rank in range(WORLD_SIZE)]
assert (
    math.isclose(by_keys["val_loss_class0"], true_means[0], rel_tol=1e-5)
    and math.isclose(by_keys["val_loss_class1"], (rank_means[0][1] + rank_means[1][2]) / 2, rel_tol=1e-5)
    and math.isclose(by_keys["val_loss_class2"], (rank_means[0][2] + rank_means[1][3]) / 2, rel_tol=1e-5)
    and "val_loss_class3" not in by_keys
), "each sync_dist value was averaged with the other rank's value of the same call, whatever its name"
assert not math.isclose(by_keys["val_loss_class1"], true_means[1], rel_tol=1e-3)

# %%
# Logging on rank 0 only
# ----------------------
# A common variant computes the value on rank 0 only: :claim:`rank-zero-only-sync-dist-fails`. (This run sets the
# process group's timeout to 60 seconds, in case a backend waits for the missing rank instead.)


class RankZeroOnly(PerClassLossByKeys):
    def on_validation_epoch_end(self):
        if self.trainer.is_global_zero:
            losses = torch.cat(self.sample_losses)
            self.log("val_loss", losses.mean(), sync_dist=True)
        self.sample_losses.clear()
        self.sample_labels.clear()


short_timeout = DDPStrategy(start_method="fork", timeout=datetime.timedelta(seconds=60))
rank_zero_error = None
try:
    make_trainer(strategy=short_timeout).fit(RankZeroOnly(), train_loader, val_loader)
except Exception as err:  # what the main process received from the workers
    rank_zero_error = err
worker_error = str(rank_zero_error).strip().splitlines()[-1]
error_type = worker_error.split(":", 1)[0]
print(f"{type(rank_zero_error).__name__}, from a worker process: {error_type}: {worker_error.split('] ', 1)[-1]}")

# %%
# The line above prints the worker's error, as it reached this page.
assert worker_error.startswith("RuntimeError") and re.search("Connection (closed|reset) by peer", worker_error), (
    "rank 0's collective call failed: rank 1 had finished fit and its process had ended"
)

# %%
# The fix: the same names on every rank
# -------------------------------------
# Log one value per class of the dataset, on every rank, in the same order. Each rank sums its losses per class and
# counts its samples per class (zero for a class it did not see), the recipe adds both up across the ranks with
# ``self.trainer.strategy.reduce``, and every rank divides the totals and logs the quotient with ``sync_dist=True``;
# below, each logged value is compared with the class's mean over the dataset, on 2 processes and on 1. The cache is
# emptied when each validation run starts as well as when it ends.


class PerClassValidationLoss(BoringModel):
    num_classes = NUM_CLASSES

    def __init__(self):
        super().__init__()
        self.sample_losses, self.sample_labels = [], []

    def on_validation_epoch_start(self):
        self.sample_losses.clear()
        self.sample_labels.clear()

    def validation_step(self, batch, batch_idx):
        features, labels = batch
        self.sample_losses.append(per_sample_loss(self, features))
        self.sample_labels.append(labels)

    def on_validation_epoch_end(self):
        losses, labels = torch.cat(self.sample_losses), torch.cat(self.sample_labels)
        sums = torch.zeros(self.num_classes, device=self.device).index_add_(0, labels, losses)
        counts = torch.bincount(labels, minlength=self.num_classes).to(losses.dtype)
        sums = self.trainer.strategy.reduce(sums, reduce_op="sum")
        counts = self.trainer.strategy.reduce(counts, reduce_op="sum")
        self.log_dict({f"val_loss_class{c}": sums[c] / counts[c] for c in range(self.num_classes)}, sync_dist=True)
        self.sample_losses.clear()
        self.sample_labels.clear()


results = {}
for name, devices in (("2 processes", WORLD_SIZE), ("1 process", 1)):
    pl.seed_everything(0)
    fixed_model = PerClassValidationLoss()
    fixed_trainer = make_trainer(strategy="ddp_fork" if devices > 1 else "auto", devices=devices)
    fixed_trainer.fit(fixed_model, train_loader, val_loader)
    logged = {name: value.item() for name, value in fixed_trainer.callback_metrics.items()}
    results[name] = logged, class_means(fixed_model)
    print(f"{name}: " + ", ".join(f"class {c} {logged[f'val_loss_class{c}']:.6f}" for c in range(NUM_CLASSES)))
    print(f"{' ' * len(name)}  by hand: " + ", ".join(f"{value:.6f}" for value in results[name][1].values()))

# %%
# What the fix delivered
# ----------------------
# Every class is logged, with 2 processes and with 1, and each value is the class's mean over the whole validation
# set, computed by hand.
assert all(
    set(logged) == {f"val_loss_class{c}" for c in range(NUM_CLASSES)}
    and all(math.isclose(logged[f"val_loss_class{c}"], true_means[c], rel_tol=1e-5) for c in range(NUM_CLASSES))
    for logged, true_means in results.values()
), "with the same names on every rank, each class's logged value is its mean over the dataset"
