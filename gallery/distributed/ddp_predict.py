"""
Predictions under DDP
=====================

The recipe first: a prediction writer, subclass of ``BasePredictionWriter``; it gathers every rank's predictions on
rank 0 and saves them in the dataset's order, one tensor per predict dataloader. Then this page predicts on 2 CPU
processes with a module that caches its predictions, and with the writer.

:claim:`Ddp-predict-shares-stay-in-workers`.
"""

# %%
# The recipe: a writer that gathers on rank 0
# -------------------------------------------
# :claim:`Ddp-writer-receives-each-ranks-share`. The writer gathers both across the ranks with ``gather_rows`` (call it
# on every rank; it gathers the lengths first and pads to the longest, so shares of different sizes are accepted), puts
# the rows back in the dataset's order, and rank 0 saves one tensor per dataloader. ``all_predictions`` reads the file,
# in whichever process asks.
import tempfile
from pathlib import Path

import torch
from lightning.pytorch.callbacks import BasePredictionWriter


class GatheredPredictionsWriter(BasePredictionWriter):
    def __init__(self, output_dir=None):
        super().__init__(write_interval="epoch")
        self.output_file = Path(output_dir or tempfile.mkdtemp(), "predictions.pt")

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices):
        per_loader = predictions if len(batch_indices) > 1 else [predictions]
        gathered = []
        for batches, indices in zip(per_loader, batch_indices, strict=True):
            rows = self.gather_rows(pl_module, torch.cat(batches).to(pl_module.device))
            flat_indices = torch.tensor([index for batch in indices for index in batch], device=pl_module.device)
            gathered.append(rows[self.gather_rows(pl_module, flat_indices).argsort()].cpu())
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
# .. recipe-domain:: ddp_predict_writer
#
# A module that caches its predictions
# ------------------------------------
# The module-side replacement of the old ``on_predict_epoch_end(self, results)``: it appends in ``predict_step``
# and joins the cache in ``on_predict_epoch_end``. A small callback beside it writes, on each rank, how many rows
# that rank's cache held (the worker processes cannot print to this page, so the main process reads the files).
import logging.handlers

import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

WORLD_SIZE = 2


class PredictionCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.predict_step_outputs = []

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        prediction = self(batch)
        self.predict_step_outputs.append(prediction)
        return prediction

    def on_predict_epoch_end(self):
        self.all_predictions = torch.cat(self.predict_step_outputs)
        self.predict_step_outputs.clear()


class RowsPerRank(pl.Callback):
    """Writes ``rank<r>.txt`` into ``folder``: how many rows rank ``r``'s ``all_predictions`` held."""

    def __init__(self, folder):
        self.folder = Path(folder)

    def on_predict_end(self, trainer, pl_module):
        Path(self.folder, f"rank{trainer.global_rank}.txt").write_text(str(len(pl_module.all_predictions)))


def make_trainer(callbacks=(), **kwargs):
    return pl.Trainer(
        accelerator="cpu",
        callbacks=list(callbacks),
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tempfile.mkdtemp(),
        **kwargs,
    )


pl.seed_everything(0)
predict_loader = DataLoader(RandomDataset(32, 21), batch_size=4)
model = PredictionCache()

# %%
# What each rank kept, and what came back
# ---------------------------------------
# 21 samples on 2 processes: :claim:`predict-sampler-does-not-repeat`.
counts_folder = tempfile.mkdtemp()
returned = make_trainer([RowsPerRank(counts_folder)], devices=WORLD_SIZE, strategy="ddp_fork").predict(
    model, predict_loader
)
rows_per_rank = [int(Path(counts_folder, f"rank{rank}.txt").read_text()) for rank in range(WORLD_SIZE)]
print(f"rows in each rank's cache: {rows_per_rank}")
print(f"trainer.predict returned {returned}")
print(f"the module in this process has all_predictions: {hasattr(model, 'all_predictions')}")

# %%
# :claim:`Ddp-predict-shares-stay-in-workers`.
assert rows_per_rank == [11, 10], "for prediction the 2 ranks got shares of 11 and 10 of the 21 samples"
assert returned is None and not hasattr(model, "all_predictions"), (
    "the process that called trainer.predict got None back, and its module never ran on_predict_epoch_end"
)

# %%
# Asking for the return value does not help: :claim:`fork-refuses-return-predictions`. The page keeps torch's log
# lines of that run in ``torch_log`` and prints only the error.
torch_log = logging.handlers.BufferingHandler(capacity=100)
torch_logger = logging.getLogger("torch")
torch_logger.handlers, saved_handlers = [torch_log], torch_logger.handlers
return_error = None
try:
    make_trainer(devices=WORLD_SIZE, strategy="ddp_fork").predict(model, predict_loader, return_predictions=True)
except Exception as err:  # the error this process caught
    return_error = err
finally:
    torch_logger.handlers = saved_handlers
last_line = str(return_error).strip().splitlines()[-1]
print(f"{type(return_error).__name__}, from a worker process: {last_line}")

# %%
assert "return_predictions" in last_line and "spawn or fork" in last_line, (
    "with ddp_fork, return_predictions=True is refused in the workers and the main process receives the error"
)

# %%
# The recipe, run
# ---------------
# ``GatheredPredictionsWriter``, from the top of this page, in three runs: 2 processes with one predict
# dataloader, 2 processes with two (21 and 6 samples), and 1 process. The reference is the model applied by hand
# to each dataset, in order.
second_loader = DataLoader(RandomDataset(32, 6), batch_size=4)
runs = {
    "2 processes, 1 loader": ({"devices": WORLD_SIZE, "strategy": "ddp_fork"}, predict_loader),
    "2 processes, 2 loaders": ({"devices": WORLD_SIZE, "strategy": "ddp_fork"}, [predict_loader, second_loader]),
    "1 process, 1 loader": ({"devices": 1}, predict_loader),
}
model.eval()
results = {}
for name, (options, loaders) in runs.items():
    writer = GatheredPredictionsWriter()
    make_trainer([writer], **options).predict(model, loaders, return_predictions=False)
    loaders = loaders if isinstance(loaders, list) else [loaders]
    with torch.no_grad():
        references = [torch.cat([model(batch) for batch in loader]) for loader in loaders]
    results[name] = (writer.all_predictions, references)
    shapes = [tuple(predictions.shape) for predictions in writer.all_predictions]
    print(f"{name}: saved shapes {shapes}, equal to the references: ", end="")
    print(all(map(torch.allclose, writer.all_predictions, references)))

# %%
# What the writer delivered
# -------------------------
# In every run the saved file holds one tensor per dataloader, with every sample's prediction once, in the dataset's
# order, equal to the model applied by hand (compared to float32 rounding, not bit for bit). The same writer works
# with one process and with several, with one predict dataloader and with several. Under
# a framework that replaces the batch sampler, see :doc:`Predictions under DDP when a framework replaces the batch
# sampler </examples/distributed/ddp_predict_replaced_batch_sampler>`.
assert all(
    len(saved) == len(references)
    and all(
        predictions.shape == reference.shape and torch.allclose(predictions, reference, rtol=1e-6, atol=1e-6)
        for predictions, reference in zip(saved, references, strict=True)
    )
    for saved, references in results.values()
), "with 1 and 2 processes the writer's file held every prediction once, in the dataset's order, per loader"
assert [len(predictions) for predictions in results["2 processes, 2 loaders"][0]] == [21, 6]
