"""
Gathering per-sample vectors under DDP
======================================

Embeddings, per-sample predictions, any tensor with one row per sample: gather every rank's rows at validation
epoch end, in the dataset's order, drop the padding, and save them on rank 0.
This page validates 25 samples on 3 CPU processes and compares the saved rows with the model applied to the
dataset by hand.
"""

# %%
# The recipe
# ----------
# ``validation_step`` caches each batch's vectors, one list per ``dataloader_idx``. At epoch end
# ``gather_in_sampler_order`` gathers how many rows each rank holds, pads every rank's rows with zeros to the longest,
# gathers them, and reads them position by position across the ranks, leaving the padding out -- rank 0's first row,
# rank 1's first, and so on, whatever the shape of a row -- and keeps the first ``len(dataset)`` rows: in this page's
# runs, each sample once, in the dataset's order (checked below). Every rank gathers (each must make the same
# calls); rank 0 saves one tensor per validation dataloader, and ``val_embeddings`` reads the file in whichever process
# asks.
import tempfile
from pathlib import Path

import torch
from lightning.pytorch.demos.boring_classes import BoringModel  # stands in for your own LightningModule


class ValidationEmbeddings(BoringModel):
    def __init__(self, output_dir=None):
        super().__init__()
        self.embeddings_file = Path(output_dir or tempfile.mkdtemp(), "val_embeddings.pt")
        self.step_embeddings = {}  # dataloader_idx -> this rank's vectors, in batch order

    def on_validation_epoch_start(self):
        self.step_embeddings.clear()

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        embeddings = self(batch)  # your model's per-sample vectors: shape (batch, 2) here
        self.step_embeddings.setdefault(dataloader_idx, []).append(embeddings.detach())

    def on_validation_epoch_end(self):
        loaders = self.trainer.val_dataloaders
        loaders = loaders if isinstance(loaders, (list, tuple)) else [loaders]
        gathered = []
        for idx, loader in enumerate(loaders):
            rows = self.gather_in_sampler_order(torch.cat(self.step_embeddings[idx]))
            gathered.append(rows[: len(loader.dataset)].cpu())
        if self.trainer.is_global_zero:
            torch.save(gathered, self.embeddings_file)
        self.step_embeddings.clear()

    def gather_in_sampler_order(self, values):
        """Every rank's ``values`` (one row per sample along dimension 0, any shape beyond), whatever their lengths,
        read position by position across the ranks: rank 0's first row, rank 1's first, ..."""
        lengths = self.all_gather(torch.tensor([len(values)], device=values.device)).reshape(-1)
        padded = values.new_zeros(int(lengths.max()), *values.shape[1:])
        padded[: len(values)] = values
        rows = self.all_gather(padded).reshape(len(lengths), -1, *values.shape[1:])  # rank r's rows, then padding
        kept = torch.arange(rows.shape[1], device=values.device) < lengths[:, None]
        return rows.transpose(0, 1)[kept.T]  # rank 0's first row, rank 1's first, ..., without the padding

    @property
    def val_embeddings(self):
        """The last validation run's vectors: a tensor, or one per validation dataloader."""
        saved = torch.load(self.embeddings_file)
        return saved[0] if len(saved) == 1 else saved


# %%
# .. recipe-domain:: ddp_gather_per_sample_vectors
#
# Three processes, 25 samples
# ---------------------------
# One epoch of training, then validation of 25 samples in batches of 4 on 3 ranks: :claim:`ddp-sampler-repeats-two`.
# Beside the recipe, a variant reshapes the gathered blocks rank by rank; it writes the gathered shape into a file,
# since the worker processes cannot print to this page.
import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

WORLD_SIZE = 3
VAL_SAMPLES = 25


class RankByRank(ValidationEmbeddings):
    def gather_in_sampler_order(self, values):
        gathered = self.all_gather(values)  # one block per rank
        if self.trainer.is_global_zero:
            Path(self.embeddings_file.parent, "gathered_shape.txt").write_text(str(tuple(gathered.shape)))
        return gathered.reshape(-1, *values.shape[1:])  # rank 0's rows, then rank 1's, ...


def validate_after_training(module, devices):
    """Fit ``module`` for one epoch on ``devices`` processes; it validates the 25 samples at the epoch's end."""
    pl.seed_everything(0)
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=devices,
        strategy="ddp_fork" if devices > 1 else "auto",
        max_epochs=1,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module, DataLoader(RandomDataset(32, 24), batch_size=4), val_loader)


def by_hand(module):
    """The module, as this process holds it once ``validate_after_training`` returns, applied to every sample."""
    module.eval()
    with torch.no_grad():
        return module(val_loader.dataset.data)


val_loader = DataLoader(RandomDataset(32, VAL_SAMPLES), batch_size=4)
runs = {
    "the recipe, 3 processes": (ValidationEmbeddings(), WORLD_SIZE),
    "rank by rank, 3 processes": (RankByRank(), WORLD_SIZE),
    "the recipe, 1 process": (ValidationEmbeddings(), 1),
}
results = {}
for name, (module, devices) in runs.items():
    validate_after_training(module, devices)
    saved, reference = module.val_embeddings, by_hand(module)
    results[name] = saved, reference
    print(f"{name}: saved {tuple(saved.shape)}, equal to the model applied by hand: ", end="")
    print(saved.shape == reference.shape and torch.allclose(saved, reference, atol=1e-6))
rank_by_rank = runs["rank by rank, 3 processes"][0]
gathered_shape = Path(rank_by_rank.embeddings_file.parent, "gathered_shape.txt").read_text()
print(f"self.all_gather returned shape {gathered_shape}")

# %%
# What was gathered
# -----------------
# :claim:`All-gather-stacks-one-block-per-rank`. Read rank by rank, the first 25 rows are the wrong ones: the lines
# below show the samples they hold, one of them twice and one missing. Each kept row is matched below to the sample
# whose vector, computed by hand, it is closest to: the page asks for the nearest vector, not for equal bits.
saved, reference = results["rank by rank, 3 processes"]
samples = [int((reference - row).abs().amax(dim=1).argmin()) for row in saved]
print(f"rank by rank, the samples kept: {samples}")
twice = sorted({sample for sample in samples if samples.count(sample) > 1})
print(f"twice: {twice}; missing: {sorted(set(range(VAL_SAMPLES)) - set(samples))}")

# %%
assert gathered_shape == "(3, 9, 2)", "self.all_gather of each rank's (9, 2) rows returned (3, 9, 2)"
assert samples.count(0) == 2 and set(range(VAL_SAMPLES)) - set(samples) == {23}, (
    "read rank by rank, the first 25 gathered rows held sample 0 twice and missed sample 23"
)
assert all(
    saved.shape == reference.shape == (VAL_SAMPLES, 2) and torch.allclose(saved, reference, atol=1e-6)
    for name, (saved, reference) in results.items()
    if name.startswith("the recipe")
), "the recipe saved every sample's vector once, in the dataset's order, with 3 processes and with 1"

# %%
# The recipe saved each sample's vector once, in the dataset's order, with 3 processes as with 1. The same class
# holds in many more :doc:`Trainer configurations </reference/scenarios>`; for a mean over the samples, see
# :doc:`Per-rank caches under DDP </examples/distributed/ddp_per_rank_caches>`, and for predictions,
# :doc:`Predictions under DDP </examples/distributed/ddp_predict>`.
