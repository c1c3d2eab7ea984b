"""
Predictions under DDP when a framework replaces the batch sampler
=================================================================

Some frameworks make each predict loader again, with a batch sampler of their own
(NeMo's data sampler does: NVIDIA-BioNeMo/bionemo-recipes #482). :claim:`Replaced-batch-sampler-gives-no-batch-indices`.
The recipe first: a prediction writer that iterates each rank's batch sampler again for the indices, gathers every
rank's predictions on rank 0 and saves them in the dataset's order. Then this page predicts on 2
CPU processes under a strategy that stands in for such a framework.
"""

# %%
# The recipe: replay the batch sampler
# ------------------------------------
# A batch sampler that deals the same batches each time it is iterated (one that does not shuffle, as a predict loader's
# should not) tells which samples each of the rank's batches held: ``write_on_epoch_end`` iterates
# ``trainer.predict_dataloaders``' batch samplers again, for as many batches as the rank predicted, instead of reading
# ``batch_indices``. ``gather_rows`` gathers the predictions and those indices across the ranks (it must be called on
# every rank; it gathers the lengths first and pads to the longest, so shares of different sizes are accepted), puts the
# rows back in the dataset's order, and saves one tensor per dataloader on rank 0. ``all_predictions`` reads the file,
# in whichever process asks.
import itertools
import tempfile
from pathlib import Path

import torch
from lightning.pytorch.callbacks import BasePredictionWriter


class ReplayedIndicesWriter(BasePredictionWriter):
    def __init__(self, output_dir=None):
        super().__init__(write_interval="epoch")
        self.output_file = Path(output_dir or tempfile.mkdtemp(), "predictions.pt")

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices):
        loaders = trainer.predict_dataloaders
        loaders = loaders if isinstance(loaders, (list, tuple)) else [loaders]
        per_loader = predictions if len(loaders) > 1 else [predictions]
        gathered = []
        for batches, loader in zip(per_loader, loaders, strict=True):
            replayed = itertools.islice(loader.batch_sampler, len(batches))  # the rank's batches, again
            indices = torch.tensor([index for batch in replayed for index in batch], device=pl_module.device)
            rows = self.gather_rows(pl_module, torch.cat(batches).to(pl_module.device))
            gathered.append(rows[self.gather_rows(pl_module, indices).argsort()].cpu())
        if trainer.is_global_zero:
            torch.save(gathered, self.output_file)

    @staticmethod
    def gather_rows(module, rows):
        """Every rank's ``rows`` (a tensor, any length along dimension 0) joined: rank 0's, then rank 1's, ..."""
        lengths = module.all_gather(torch.tensor([len(rows)], device=rows.device)).reshape(-1)
        padded = torch.zeros(int(lengths.max()), *rows.shape[1:], dtype=rows.dtype, device=rows.device)
        padded[: len(rows)] = rows
        gathered = module.all_gather(padded).reshape(len(lengths), *padded.shape)
        return torch.cat([gathered[rank, :length] for rank, length in enumerate(lengths.tolist())])

    @property
    def all_predictions(self):
        return torch.load(self.output_file)


# %%
# .. recipe-domain:: ddp_predict_replayed_indices
#
# A framework's strategy
# ----------------------
# The strategy below stands in for a framework's: it makes each predict loader again with a batch sampler of its own,
# which gives rank ``r`` the ``r``-th block of 4 samples of every 8, as Megatron's sampler deals micro-batches. A second
# writer, beside the recipe, writes what each rank received as ``batch_indices`` and the warnings it saw into files: the
# worker processes cannot print to this page.
import warnings

import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.strategies import DDPStrategy
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

WORLD_SIZE = 2
BATCH_SIZE = 4


class BlocksOfEachGlobalBatch(torch.utils.data.Sampler):
    """Rank ``rank`` reads samples ``[start + rank * batch_size, start + (rank + 1) * batch_size)`` of each global
    batch of ``batch_size * world_size`` samples starting at ``start``."""

    def __init__(self, size, batch_size, rank, world_size):
        self.size, self.batch_size, self.rank, self.world_size = size, batch_size, rank, world_size

    def __iter__(self):
        for start in range(0, self.size, self.batch_size * self.world_size):
            first = start + self.rank * self.batch_size
            block = list(range(first, min(first + self.batch_size, self.size)))
            if block:
                yield block


class FrameworkStrategy(DDPStrategy):
    def process_dataloader(self, dataloader):
        dataloader = super().process_dataloader(dataloader)
        if not self.lightning_module.trainer.predicting:
            return dataloader
        sampler = BlocksOfEachGlobalBatch(len(dataloader.dataset), BATCH_SIZE, self.global_rank, self.world_size)
        return DataLoader(dataloader.dataset, batch_sampler=sampler)


class ReceivedIndices(BasePredictionWriter):
    """Writes ``rank<r>.pt`` into ``folder``: the ``batch_indices`` rank ``r`` received, and its warnings."""

    def __init__(self, folder):
        super().__init__(write_interval="epoch")
        self.folder = Path(folder)

    def setup(self, trainer, pl_module, stage):
        self._catcher = warnings.catch_warnings(record=True)
        self.caught = self._catcher.__enter__()
        warnings.simplefilter("always")

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices):
        self._catcher.__exit__(None, None, None)
        seen = [f"{w.category.__name__}: {w.message}" for w in self.caught]
        record = {"batch_indices": batch_indices, "warnings": seen}
        torch.save(record, Path(self.folder, f"rank{trainer.global_rank}.pt"))


pl.seed_everything(0)
model = BoringModel().eval()
predict_loader = DataLoader(RandomDataset(32, 21), batch_size=BATCH_SIZE)
folder = tempfile.mkdtemp()
writer = ReplayedIndicesWriter()
trainer = pl.Trainer(
    accelerator="cpu",
    devices=WORLD_SIZE,
    strategy=FrameworkStrategy(start_method="fork"),
    callbacks=[writer, ReceivedIndices(folder)],
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.predict(model, predict_loader, return_predictions=False)
received = [torch.load(Path(folder, f"rank{rank}.pt")) for rank in range(WORLD_SIZE)]
for rank, seen in enumerate(received):
    print(f"rank {rank} received batch_indices {seen['batch_indices']}")
inferred = [line for line in received[0]["warnings"] if "batch indices" in line]
print(inferred[0])

# %%
# No rank received the indices of its batches: :claim:`replaced-batch-sampler-gives-no-batch-indices`. A writer that
# puts the rows in order by ``batch_indices``, as the one on :doc:`Predictions under DDP
# </examples/distributed/ddp_predict>` does, saves no row.
assert all(seen["batch_indices"] == [[]] for seen in received) and inferred[0].startswith(
    "UserWarning: Couldn't infer the batch indices fetched from your dataloader"
), "under a strategy that replaced the batch sampler, each rank received empty batch_indices, and Lightning warned"

# %%
# What the recipe saved
# ---------------------
# The reference is the model applied by hand to the 21 samples, in order.
with torch.no_grad():
    reference = model(predict_loader.dataset.data)
[saved] = writer.all_predictions
print(f"saved {tuple(saved.shape)}, equal to the model applied by hand: {torch.allclose(saved, reference, atol=1e-6)}")

# %%
# The recipe saved every sample's prediction once, in the dataset's order, under the framework's batch sampler as
# under Lightning's (:doc:`where it works </reference/scenarios>`).
assert saved.shape == reference.shape and torch.allclose(saved, reference, atol=1e-6), (
    "replaying each rank's batch sampler, the writer saved every prediction once, in the dataset's order"
)
