"""
The uneven last batch
=====================

Old ``validation_epoch_end(self, outputs)`` code often ended in ``torch.stack(outputs)``. When the dataset
size is not a multiple of the batch size the last batch is smaller, and stacking per-sample predictions
fails. This page caches per-sample predictions of 10 samples in batches of 4, 4 and 2, shows the error,
and the two fixes: ``torch.cat`` per-sample tensors, or stack one scalar per batch.
"""

# %%
# The module
# ----------
# ``validation_step`` caches the per-sample predictions of its batch (shape ``(batch_size, 2)``) and the
# batch's mean prediction (a scalar).
import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class PredictionCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.predictions = []  # one (batch_size, 2) tensor per batch
        self.batch_means = []  # one scalar per batch
        self.epoch = {}

    def validation_step(self, batch, batch_idx):
        predictions = self(batch).detach()
        self.predictions.append(predictions)
        self.batch_means.append(predictions.mean())

    def on_validation_epoch_end(self):
        self.epoch["batch_sizes"] = [len(p) for p in self.predictions]
        try:
            torch.stack(self.predictions)
        except RuntimeError as err:
            self.epoch["stack_error"] = err
        self.epoch["cat"] = torch.cat(self.predictions)
        self.epoch["stacked_means"] = torch.stack(self.batch_means)
        self.predictions.clear()
        self.batch_means.clear()


pl.seed_everything(0, verbose=False)
model = PredictionCache()
trainer = pl.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.validate(model, DataLoader(RandomDataset(32, 10), batch_size=4), verbose=False)

# %%
# The symptom
# -----------
# ``torch.stack`` needs tensors of one shape; the last batch has 2 rows, the others 4.
err = model.epoch["stack_error"]
print(f"batch sizes: {model.epoch['batch_sizes']}")
print(f"{type(err).__name__}: {err}")

# %%
# The fixes
# ---------
# ``torch.cat`` joins per-sample tensors along the batch dimension: one row per sample, whatever the batch
# sizes. Per-batch scalars all have shape ``()``, so stacking them works and gives one entry per batch.
print(f"torch.cat of the predictions: shape {tuple(model.epoch['cat'].shape)}")
print(f"torch.stack of the batch means: shape {tuple(model.epoch['stacked_means'].shape)}")

# %%
# One more trap: the mean of the batch means is not the mean over samples when the batches differ in size:
# the 2 samples of the last batch weigh as much as the 4 of another. Weight by batch size, or reduce the
# concatenated samples.
sizes = torch.tensor(model.epoch["batch_sizes"], dtype=torch.float32)
mean_of_means = model.epoch["stacked_means"].mean()
weighted = (model.epoch["stacked_means"] * sizes).sum() / sizes.sum()
sample_mean = model.epoch["cat"].mean()
print(f"mean of batch means {mean_of_means:.6f}, weighted {weighted:.6f}, over samples {sample_mean:.6f}")

assert model.epoch["batch_sizes"] == [4, 4, 2]
assert isinstance(err, RuntimeError)
assert model.epoch["cat"].shape == (10, 2)
assert model.epoch["stacked_means"].shape == (3,)
assert torch.isclose(weighted, sample_mean)
assert not torch.isclose(mean_of_means, sample_mean)
