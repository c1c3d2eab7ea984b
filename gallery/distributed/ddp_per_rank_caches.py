"""
Per-rank caches under DDP
=========================

This page trains on 2 CPU processes with Lightning's ``ddp_fork`` strategy and shows the per-rank cache lengths,
the result of ``self.all_gather``, and the difference ``self.log(..., sync_dist=True)`` makes; then it validates on
21 samples, which do not divide by 2, with Lightning's sampler and with one that does not pad. The recipe, first,
gathers caches of any lengths and counts every sample once.

:claim:`Ddp-each-rank-own-shard`. :claim:`Distributed-sampler-repeats-a-sample`, and a gathered cache counts it
twice. :claim:`All-gather-of-unequal-caches-aborts`.
"""

# %%
# The recipe: gather the lengths, pad to the longest, keep ``len(dataset)``
# -------------------------------------------------------------------------
# ``gather_in_sampler_order`` first gathers how many rows each rank holds, pads every rank's rows with zeros to the
# longest, gathers them, and reads them position by position across the ranks, leaving the padding out, whatever the
# shard sizes, for per-sample values of any shape (a loss per sample here; an embedding per sample on
# :doc:`Gathering per-sample vectors </examples/distributed/ddp_gather_per_sample_vectors>`). The module keeps a cache
# per ``dataloader_idx``, empties it when each validation run starts as well as when it ends (a run that stopped
# half-way leaves nothing behind), and logs one value for every validation loader on every rank, so that every rank
# makes the same collective calls. It reads the dataset from ``self.trainer.val_dataloaders``, as one loader or as a
# list of them. Every rank computes the same mean, so ``sync_dist=True`` (:claim:`unsynced-epoch-log-warns`) has
# identical values to average; with one process nothing is cut (:claim:`all-gather-one-process-no-dimension`).
import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class DatasetMeanValidationLoss(BoringModel):
    def __init__(self):
        super().__init__()
        self.sample_losses = {}  # dataloader_idx -> per-sample losses of this rank, in batch order

    def on_validation_epoch_start(self):
        self.sample_losses.clear()

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        predictions = self(batch)
        losses = torch.nn.functional.mse_loss(predictions, torch.ones_like(predictions), reduction="none")
        self.sample_losses.setdefault(dataloader_idx, []).append(losses.mean(dim=1))

    def on_validation_epoch_end(self):
        loaders = self.trainer.val_dataloaders
        loaders = loaders if isinstance(loaders, (list, tuple)) else [loaders]
        for idx, loader in enumerate(loaders):
            losses = torch.cat(self.sample_losses.get(idx, [torch.zeros(0, device=self.device)]))
            every_sample_once = self.gather_in_sampler_order(losses)[: len(loader.dataset)]
            self.log(f"val_loss_{idx}", every_sample_once.mean(), sync_dist=True, add_dataloader_idx=False)
        self.sample_losses.clear()

    def gather_in_sampler_order(self, values):
        """Every rank's ``values`` (one row per sample along dimension 0, any shape beyond), whatever their lengths,
        read position by position across the ranks: rank 0's first row, rank 1's first, ..."""
        lengths = self.all_gather(torch.tensor([len(values)], device=values.device)).reshape(-1)
        padded = values.new_zeros(int(lengths.max()), *values.shape[1:])
        padded[: len(values)] = values
        rows = self.all_gather(padded).reshape(len(lengths), -1, *values.shape[1:])  # rank r's rows, then padding
        kept = torch.arange(rows.shape[1], device=values.device) < lengths[:, None]
        return rows.transpose(0, 1)[kept.T]  # rank 0's first row, rank 1's first, ..., without the padding


# %%
# .. recipe-domain:: ddp_dataset_mean
#
# The module
# ----------
# Sample ``i`` of the dataset is a vector filled with the value ``i``, so a cache of ``batch[:, 0]`` lists
# a rank's samples. ``training_step`` appends them; ``on_train_epoch_end`` gathers the per-rank
# cache length and mean across processes and logs them. The page reads them from ``trainer.callback_metrics`` in
# the process that called ``trainer.fit``.
import contextlib
import logging
import math
import os
import tempfile
import warnings
from pathlib import Path

import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import RandomDataset
from torch.utils.data import DataLoader, Dataset

print(f"Lightning {lightning.__version__}")

SAMPLES = 10
WORLD_SIZE = 2


class IndexDataset(Dataset):
    """Sample ``i`` is a 32-vector filled with ``float(i)``."""

    def __init__(self, samples=SAMPLES):
        self.samples = samples

    def __len__(self):
        return self.samples

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
    """Records the warnings of rank 0 during ``fit`` into ``<default_root_dir>/rank0-warnings.txt``.

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
    options = {"max_epochs": 1, "limit_val_batches": 0, **kwargs}
    return pl.Trainer(
        callbacks=[WarningRecorder()],
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tempfile.mkdtemp(),
        **options,
    )


# %%
# Two processes
# -------------
# The page uses ``strategy="ddp_fork"`` (with ``accelerator="cpu"``), so that its notebook runs in Jupyter as it is:
# :claim:`ddp-fork-main-process-waits`.
pl.seed_everything(0)
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
# :claim:`Unsynced-epoch-log-warns` (recorded on rank 0):
rank0_warnings = Path(ddp_trainer.default_root_dir, "rank0-warnings.txt").read_text().splitlines()
unsynced_warning = next(line for line in rank0_warnings if "'mean_sample'" in line)
print(unsynced_warning)

# %%
# One process, for comparison
# ---------------------------
# :claim:`All-gather-one-process-no-dimension`: the scalar stays a scalar.
single_model = ShardCachingModel()
single_trainer = make_trainer(devices=1)
single_trainer.fit(single_model)
single = {name: value.item() for name, value in single_trainer.callback_metrics.items()}
print(f"all_gather of a scalar with 1 process: shape {single_model.gathered_shape}")
print(f"1 process: {single['cache_length/rank0']:.0f} cached samples, mean sample {single['mean_sample']}")

# %%
# What each rank saw
# ------------------
# Ten samples on two ranks with batch size 1: :claim:`ddp-each-rank-own-shard`. :claim:`Unsynced-log-is-rank-0s`.
assert ddp["world_size"] == WORLD_SIZE
assert ddp["pid"] != os.getpid() and not ddp_model.layer.weight.equal(initial_weight), (
    "rank 0 ran in a worker process, and the workers' trained weights came back to this one"
)
assert [ddp[f"cache_length/rank{rank}"] for rank in range(WORLD_SIZE)] == [5, 5] and single[
    "cache_length/rank0"
] == SAMPLES, "each of the 2 ranks cached its own 5 of the 10 samples; one process cached all 10"
assert ddp["gathered_ndim"] == 1 and single_model.gathered_shape == () and single["gathered_ndim"] == 0, (
    "self.all_gather of a scalar has one entry per rank with 2 processes, and adds no dimension with 1"
)
assert (
    ddp["mean_sample"] != single["mean_sample"]
    and ddp["mean_sample_synced"] == single["mean_sample"] == (SAMPLES - 1) / 2
), "without sync_dist the logged value is rank 0's own; with sync_dist=True the mean over the ranks"
assert unsynced_warning.startswith("PossibleUserWarning") and not any(
    "'mean_sample_synced'" in line for line in rank0_warnings
), "Lightning warned about the epoch-level value logged without sync_dist, and only about that one"


# %%
# A dataset that does not divide by 2
# -----------------------------------
# Validation over 21 samples on 2 ranks: :claim:`distributed-sampler-repeats-a-sample`. The module below is what a
# migration often writes: gather the per-sample losses and take their mean. It also gathers which samples it saw
# (sample ``i`` is filled with ``i``), so the page can show the repeat.
VAL_SAMPLES = 21
val_loader = DataLoader(IndexDataset(VAL_SAMPLES), batch_size=8)
train_loader = DataLoader(RandomDataset(32, 42), batch_size=8)


def per_sample_loss(model, batch):
    """BoringModel's loss (mean squared error against ones) of each sample of ``batch``: shape ``(batch,)``."""
    predictions = model(batch)
    return torch.nn.functional.mse_loss(predictions, torch.ones_like(predictions), reduction="none").mean(dim=1)


class GatheredMean(BoringModel):
    def __init__(self):
        super().__init__()
        self.sample_losses = []
        self.sample_ids = []  # for this page only: which samples the rank saw

    def validation_step(self, batch, batch_idx):
        self.sample_losses.append(per_sample_loss(self, batch).detach())
        self.sample_ids.append(batch[:, 0])

    def on_validation_epoch_end(self):
        losses = self.all_gather(torch.cat(self.sample_losses))  # shape (world_size, samples per rank)
        ids = self.all_gather(torch.cat(self.sample_ids))
        self.log("val_loss_all_gathered", losses.mean(), sync_dist=True)
        self.log("gathered_samples", float(losses.numel()), sync_dist=True)
        self.log("distinct_samples", float(ids.unique().numel()), sync_dist=True)
        self.log("rank1_last_sample", ids[1, -1], sync_dist=True)
        in_sampler_order = ids.T.reshape(-1)  # column by column: rank 0, rank 1, rank 0, ...
        self.log(
            "first_21_in_dataset_order", float(in_sampler_order[:VAL_SAMPLES].equal(torch.arange(21.0))), sync_dist=True
        )
        self.sample_losses.clear()
        self.sample_ids.clear()


def dataset_mean_loss(model, dataset):
    """The mean loss over every sample of ``dataset`` once, computed by hand with ``model``'s weights."""
    model.eval()
    with torch.no_grad():
        return per_sample_loss(model, torch.stack([dataset[i] for i in range(len(dataset))])).mean().item()


pl.seed_everything(0)
naive_model = GatheredMean()
naive_trainer = make_trainer(devices=WORLD_SIZE, strategy="ddp_fork", max_epochs=2, limit_val_batches=None)
naive_trainer.fit(naive_model, train_loader, val_loader)
naive = {name: value.item() for name, value in naive_trainer.callback_metrics.items()}
true_mean = dataset_mean_loss(naive_model, val_loader.dataset)  # with the weights this process holds after fit
with torch.no_grad():
    sample_0_loss = per_sample_loss(naive_model, val_loader.dataset[0][None]).item()
print(f"gathered losses: {naive['gathered_samples']:.0f} for {VAL_SAMPLES} samples")
print(f"distinct samples among them: {naive['distinct_samples']:.0f}")
print(f"last sample of rank 1: {naive['rank1_last_sample']:.0f}")
print(f"mean of the gathered cache: {naive['val_loss_all_gathered']:.6f}; over the dataset: {true_mean:.6f}")

# %%
# The gathered mean is off: it is the dataset's mean with sample 0 counted a second time:
# :claim:`distributed-sampler-repeats-a-sample`.
assert (
    naive["gathered_samples"] == 22 and naive["distinct_samples"] == VAL_SAMPLES and naive["rank1_last_sample"] == 0
), "Lightning's sampler gave each rank 11 of the 21 samples: rank 1's last is sample 0 again"
doubled = (true_mean * VAL_SAMPLES + sample_0_loss) / (VAL_SAMPLES + 1)
assert math.isclose(naive["val_loss_all_gathered"], doubled, rel_tol=1e-5)
assert not math.isclose(naive["val_loss_all_gathered"], true_mean, rel_tol=1e-3)
assert naive["first_21_in_dataset_order"] == 1.0

# %%
# Gathering assumes every rank cached as many values
# --------------------------------------------------
# The module below reshapes the gathered losses into one row per rank (``reshape(world_size, -1)``), row ``r`` meant
# as rank ``r``'s losses in the order its batches ran, and reads the rows column by column (``gathered.T.reshape(-1)``)
# to put back the sampler's list of indices (the dataset's order here, asserted above), the repeated samples at its
# tail, keeping the first ``len(dataset)`` values as every sample once. That reading needs every rank to cache the
# same number of losses: :claim:`distributed-sampler-repeats-a-sample`.


class EqualLengthGather(BoringModel):
    def __init__(self):
        super().__init__()
        self.sample_losses = []

    def validation_step(self, batch, batch_idx):
        self.sample_losses.append(per_sample_loss(self, batch))

    def on_validation_epoch_end(self):
        gathered = self.all_gather(torch.cat(self.sample_losses)).reshape(self.trainer.world_size, -1)
        every_sample_once = gathered.T.reshape(-1)[: len(self.trainer.val_dataloaders.dataset)]
        self.log("val_loss", every_sample_once.mean(), sync_dist=True)
        self.sample_losses.clear()


# %%
# A sampler that does not pad hands the ranks shards of different sizes. Here the module builds its own validation
# loader in ``val_dataloader`` -- rank ``r`` takes every second sample from ``r`` on, 11 samples on rank 0 and 10 on
# rank 1 -- and the page passes ``use_distributed_sampler=False`` to the ``Trainer``. The small helper below
# sends the standard error of this process and of the worker processes to a file, so that the page can show what
# was written there.


class OwnShards(EqualLengthGather):
    def val_dataloader(self):
        dataset = IndexDataset(VAL_SAMPLES)
        shard = range(self.trainer.global_rank, len(dataset), self.trainer.world_size)
        return DataLoader(dataset, batch_size=8, sampler=shard)


@contextlib.contextmanager
def standard_error_into(path):
    """Standard error of this process and of the processes it starts (file descriptor 2, ``sys.stderr`` and torch's
    log) goes to the file ``path`` inside the ``with`` block."""
    torch_log = logging.getLogger("torch")
    saved_handlers, saved_fd = torch_log.handlers, os.dup(2)
    with open(path, "w") as file, contextlib.redirect_stderr(file):
        os.dup2(file.fileno(), 2)
        torch_log.handlers = [logging.StreamHandler(file)]
        try:
            yield
        finally:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
            torch_log.handlers = saved_handlers


pl.seed_everything(0)
unequal_trainer = make_trainer(
    devices=WORLD_SIZE, strategy="ddp_fork", max_epochs=1, limit_val_batches=None, use_distributed_sampler=False
)
workers_stderr = Path(tempfile.mkdtemp(), "stderr.txt")
with standard_error_into(workers_stderr):
    try:
        unequal_trainer.fit(OwnShards(), train_loader)
    except Exception as err:  # what the main process received
        unequal_error = err
print(f"{type(unequal_error).__name__}: {unequal_error}")
gloo_lines = [line.split("] ", 1)[-1] for line in workers_stderr.read_text().splitlines() if "what()" in line]
print("\n".join(gloo_lines))

# %%
# The two ranks sent 11 and 10 values to one ``all_gather``: :claim:`all-gather-of-unequal-caches-aborts`; the
# exception above is the one this page caught.
assert isinstance(
    unequal_error, (torch.multiprocessing.ProcessExitedException, torch.multiprocessing.ProcessRaisedException)
) and any("Received data size doesn't match expected size" in line for line in gloo_lines), (
    "gloo aborted the worker whose all_gather received caches of 11 and 10 values"
)

# %%
# The recipe, run
# ---------------
# ``DatasetMeanValidationLoss``, from the top of this page, in three runs: 2 processes with padded shards of 11 samples
# (the default sampler), 2 processes with shards of 11 and 10 samples, 1 process. Each is compared with the mean over
# the 21 samples computed by hand with the weights the workers sent back.


class DatasetMeanOwnShards(DatasetMeanValidationLoss):
    val_dataloader = OwnShards.val_dataloader


runs = {
    "2 processes, padding sampler": (DatasetMeanValidationLoss(), {"devices": WORLD_SIZE, "strategy": "ddp_fork"}),
    "2 processes, shards of 11 and 10": (
        DatasetMeanOwnShards(),
        {"devices": WORLD_SIZE, "strategy": "ddp_fork", "use_distributed_sampler": False},
    ),
    "1 process": (DatasetMeanValidationLoss(), {"devices": 1}),
}
recipe_results = {}
for name, (recipe_model, options) in runs.items():
    pl.seed_everything(0)
    recipe_trainer = make_trainer(max_epochs=2, limit_val_batches=None, **options)
    own_loader = isinstance(recipe_model, DatasetMeanOwnShards)
    recipe_trainer.fit(recipe_model, train_loader, None if own_loader else val_loader)
    logged = recipe_trainer.callback_metrics["val_loss_0"].item()
    by_hand = dataset_mean_loss(recipe_model, val_loader.dataset)
    recipe_results[name] = (logged, by_hand, recipe_model)
    print(f"{name}: logged {logged:.6f}; over the dataset by hand: {by_hand:.6f}")

# %%
# What the recipe delivered
# -------------------------
# In all three runs the logged value is the mean over the 21 samples, each once, at the weights of the last validation
# run, and the cache is empty afterwards. Where else the same class held, against a mean computed from the dataset
# without Lightning: the box above the recipe (:doc:`where it works </reference/scenarios>`). Every rank must make the
# same logging calls with ``sync_dist=True``, in the same order -- never only ``if self.trainer.is_global_zero``
# (:doc:`Every rank must make the same sync_dist calls </examples/distributed/ddp_same_log_calls>`); for predictions,
# see :doc:`Predictions under DDP </examples/distributed/ddp_predict>`.
for logged, by_hand, recipe_model in recipe_results.values():
    assert math.isclose(logged, by_hand, rel_tol=1e-5)
    assert recipe_model.sample_losses == {}
