"""
Per-rank caches under DDP
=========================

With several processes (DDP), each rank runs its own copy of the module and its own cache: the epoch-end
hook of a rank sees only the batches of that rank's shard. This page trains on 2 CPU processes with
Lightning's ``ddp_fork`` strategy and shows the per-rank cache lengths, what ``self.all_gather`` returns,
and the difference ``self.log(..., sync_dist=True)`` makes.
"""

# %%
# The module
# ----------
# Sample ``i`` of the dataset is a vector filled with the value ``i``, so a cache of ``batch[:, 0]`` tells
# which samples a rank saw. ``training_step`` appends them; ``on_train_epoch_end`` gathers the per-rank
# cache length and mean across processes and logs them. Values computed in the worker processes reach the
# main process through ``trainer.callback_metrics`` (the only logged values the launcher sends back).
import os
import tempfile
import warnings
from pathlib import Path

import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel
from torch.utils.data import DataLoader, Dataset

print(f"Lightning {lightning.__version__}")

SAMPLES = 10
WORLD_SIZE = 2


class IndexDataset(Dataset):
    """Sample ``i`` is a 32-vector filled with ``float(i)``."""

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return torch.full((32,), float(index))


class ShardCachingModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.seen_samples = []  # this rank's cache

    def training_step(self, batch, batch_idx):
        self.seen_samples.append(batch[:, 0].detach())
        return super().training_step(batch, batch_idx)

    def on_train_epoch_end(self):
        seen = torch.cat(self.seen_samples)
        lengths = self.all_gather(torch.tensor(float(len(seen))))  # one entry per rank
        self.gathered_shape = tuple(lengths.shape)
        for rank, length in enumerate(lengths.reshape(-1)):
            self.log(f"cache_length/rank{rank}", length)
        self.log("gathered_ndim", float(lengths.ndim))
        self.log("world_size", float(self.trainer.world_size))
        self.log("pid", float(os.getpid()))  # which process ran this rank
        # The same per-rank value, logged without and with synchronisation.
        self.log("mean_sample", seen.mean())
        self.log("mean_sample_synced", seen.mean(), sync_dist=True)
        self.seen_samples.clear()

    def train_dataloader(self):
        return DataLoader(IndexDataset(), batch_size=1)


class WarningRecorder(pl.Callback):
    """Records the warnings rank 0 emits during ``fit`` into ``<default_root_dir>/rank0-warnings.txt``.

    Worker processes cannot print to this page, so the main process reads the file afterwards.
    """

    def setup(self, trainer, pl_module, stage):
        self._catcher = warnings.catch_warnings(record=True)
        self.caught = self._catcher.__enter__()
        warnings.simplefilter("always")

    def teardown(self, trainer, pl_module, stage):
        self._catcher.__exit__(None, None, None)
        if trainer.global_rank == 0:
            lines = [f"{w.category.__name__}: {w.message}" for w in self.caught]
            Path(trainer.default_root_dir, "rank0-warnings.txt").write_text("\n".join(lines))


def make_trainer(**kwargs):
    return pl.Trainer(
        callbacks=[WarningRecorder()],
        accelerator="cpu",
        max_epochs=1,
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tempfile.mkdtemp(),
        **kwargs,
    )


# %%
# Two processes
# -------------
# ``strategy="ddp_fork"`` forks the worker processes (gloo on CPU), which also works inside a Jupyter
# kernel (the tests of this site run this page's notebook in one). The main process takes no part in
# training: it waits for the workers, then receives rank 0's ``callback_metrics`` and trained weights.
pl.seed_everything(0, verbose=False)
ddp_model = ShardCachingModel()
initial_weight = ddp_model.layer.weight.detach().clone()
ddp_trainer = make_trainer(devices=WORLD_SIZE, strategy="ddp_fork")
ddp_trainer.fit(ddp_model)
ddp = {name: value.item() for name, value in ddp_trainer.callback_metrics.items()}
for rank in range(WORLD_SIZE):
    print(f"rank {rank}: {ddp[f'cache_length/rank{rank}']:.0f} cached samples")
print(f"all_gather of a scalar with {WORLD_SIZE} processes: ndim {ddp['gathered_ndim']:.0f}")
print(f"mean sample, rank 0 only: {ddp['mean_sample']}, sync_dist=True: {ddp['mean_sample_synced']}")

# %%
# Lightning warns about the value logged without ``sync_dist`` at epoch level (recorded on rank 0):
rank0_warnings = Path(ddp_trainer.default_root_dir, "rank0-warnings.txt").read_text().splitlines()
unsynced_warning = next(line for line in rank0_warnings if "'mean_sample'" in line)
print(unsynced_warning)

# %%
# One process, for comparison
# ---------------------------
# With a single process ``self.all_gather`` adds no dimension: the scalar stays a scalar.
single_model = ShardCachingModel()
single_trainer = make_trainer(devices=1)
single_trainer.fit(single_model)
single = {name: value.item() for name, value in single_trainer.callback_metrics.items()}
print(f"all_gather of a scalar with 1 process: shape {single_model.gathered_shape}")
print(f"1 process: {single['cache_length/rank0']:.0f} cached samples, mean sample {single['mean_sample']}")

# %%
# What each rank saw
# ------------------
# Ten samples on two ranks with batch size 1: Lightning shards the samples, each rank caches five, and each
# rank's epoch-end hook sees half the epoch. A value logged without ``sync_dist`` is rank 0's own value;
# ``sync_dist=True`` averages it over the ranks, which here equals the single-process value.
assert ddp["world_size"] == WORLD_SIZE
assert ddp["pid"] != os.getpid()  # rank 0 ran in a worker process, not in this one
assert not ddp_model.layer.weight.equal(initial_weight)  # the workers' trained weights came back
assert [ddp[f"cache_length/rank{rank}"] for rank in range(WORLD_SIZE)] == [5, 5]
assert ddp["gathered_ndim"] == 1  # shape (world_size,)
assert single_model.gathered_shape == () and single["gathered_ndim"] == 0
assert single["cache_length/rank0"] == SAMPLES
assert ddp["mean_sample"] != single["mean_sample"]
assert ddp["mean_sample_synced"] == single["mean_sample"] == (SAMPLES - 1) / 2
assert unsynced_warning.startswith("PossibleUserWarning")
assert not any("'mean_sample_synced'" in line for line in rank0_warnings)
