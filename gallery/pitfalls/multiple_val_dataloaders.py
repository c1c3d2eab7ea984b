"""
Several validation dataloaders
==============================

``validation_epoch_end(self, outputs)`` received one list of outputs per dataloader. Its replacement must
keep them apart itself: ``validation_step`` takes a ``dataloader_idx`` argument, and the cache is keyed by it.
``on_validation_epoch_end`` still runs once per validation run, after all the dataloaders.
"""

# %%
# Two validation dataloaders
# --------------------------
# Lightning's ``RandomDataset``: 16 validation samples in loader 0, 24 in loader 1, batches of 8, and one
# training batch per epoch.
import copy
import csv
import tempfile
from collections import defaultdict
from pathlib import Path

import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

pl.seed_everything(4, verbose=False)
train_loader = DataLoader(RandomDataset(32, 8), batch_size=8)
val_loaders = [DataLoader(RandomDataset(32, 16), batch_size=8), DataLoader(RandomDataset(32, 24), batch_size=8)]


def make_trainer(callbacks=(), logger=False):
    return pl.Trainer(
        max_epochs=2,
        num_sanity_val_steps=0,
        callbacks=list(callbacks),
        logger=logger,
        log_every_n_steps=1,
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
        return self.step(batch)


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
# ``dataloader_idx=0`` as a default keeps the same method usable with a single loader. The epoch-end hook logs
# one mean per loader, under a name that carries the loader's index.


class PerLoaderCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.validation_step_losses = defaultdict(list)  # dataloader_idx -> this run's losses

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        loss = self.step(batch)
        self.validation_step_losses[dataloader_idx].append(loss)
        return loss

    def on_validation_epoch_end(self):
        for idx, losses in sorted(self.validation_step_losses.items()):
            self.log(f"val_loss_{idx}", torch.stack(losses).mean())
        self.validation_step_losses.clear()


# %%
# The checks stand beside the recipe: Lightning's ``CSVLogger`` keeps what the module logs, and a small callback
# keeps a copy of the weights when each validation run starts and, in its own ``on_validation_epoch_end`` (which
# Lightning calls just before the module's), counts the calls and how many losses per loader the cache holds.


class CacheObserver(pl.Callback):
    def __init__(self):
        self.snapshots = []
        self.cache_sizes = []  # one entry per on_validation_epoch_end call

    def on_validation_epoch_start(self, trainer, pl_module):
        self.snapshots.append(copy.deepcopy(pl_module.state_dict()))

    def on_validation_epoch_end(self, trainer, pl_module):
        self.cache_sizes.append({idx: len(v) for idx, v in sorted(pl_module.validation_step_losses.items())})


observer = CacheObserver()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
model = PerLoaderCache()
trainer = make_trainer([observer], logger)
trainer.fit(model, train_loader, val_loaders)

with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    rows = [row for row in csv.DictReader(file) if row.get("val_loss_0") or row.get("val_loss_1")]
logged = [{idx: float(row[f"val_loss_{idx}"]) for idx in (0, 1)} for row in rows]

# %%
# The reference: each loader's batches, evaluated by hand with the weights of each validation run.


def reference_mean(state_dict, loader):
    reference = BoringModel()
    reference.load_state_dict(state_dict)
    reference.eval()
    with torch.no_grad():
        return torch.stack([reference.step(batch) for batch in loader]).mean().item()


reference_means = [
    {idx: reference_mean(state, loader) for idx, loader in enumerate(val_loaders)} for state in observer.snapshots
]
assert len(logged) == len(reference_means) == 2, "one logged row per validation run"
calls = len(observer.cache_sizes)
print(f"on_validation_epoch_end calls: {calls}; cached losses per loader at each call: {observer.cache_sizes}")
for run, (means, expected) in enumerate(zip(logged, reference_means, strict=True)):
    print(f"run {run}: " + ", ".join(f"loader {i} {means[i]:.6f} (by hand: {expected[i]:.6f})" for i in means))

# %%
# Two epochs, two validation runs, two calls of the hook -- not one per loader. Each call found both loaders'
# losses in the cache (2 and 3 batches) and logged both means in one row, equal to the references; the cache is
# empty afterwards. The :doc:`scenario matrix </reference/scenarios>` runs ``PerLoaderCache`` in every
# configuration it declares, with one validation loader or two. Under DDP each rank caches only its own shard and
# the value logged is rank 0's own mean: :doc:`Per-rank caches under DDP </examples/distributed/ddp_per_rank_caches>`
# shows the variant.
assert len(observer.cache_sizes) == 2
assert observer.cache_sizes == [{0: len(val_loaders[0]), 1: len(val_loaders[1])}] * 2 == [{0: 2, 1: 3}] * 2
assert logged == reference_means
assert not model.validation_step_losses
