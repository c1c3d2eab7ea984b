"""
The uneven last batch
=====================

``RuntimeError: stack expects each tensor to be equal size`` at the end of validation: old
``validation_epoch_end(self, outputs)`` code often ended in ``torch.stack(outputs)``, and this page's last batch is
smaller: it validates 10 samples in batches of 4, 4 and 2. The fix: ``torch.cat`` the per-sample tensors. The
page shows the error, the fix, and why the mean of per-batch means is not the mean over the samples.
"""

# %%
# The fix
# -------
# Join the per-sample tensors with ``torch.cat`` along the batch dimension: one row per sample, whatever the batch
# sizes. ``BoringModel.loss`` (mean squared error against ones) over all the rows is the mean over the
# samples, each counted once.
import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class PredictionCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.predictions = []  # one (batch_size, 2) tensor per batch

    def validation_step(self, batch, batch_idx):
        self.predictions.append(self(batch))

    def on_validation_epoch_end(self):
        self.log("val_loss", self.loss(torch.cat(self.predictions).float()))  # float32, whatever the precision
        self.predictions.clear()


# %%
# .. recipe-domain:: uneven_predictions
#
# The symptom
# -----------
# ``validation_step`` caches the per-sample predictions of its batch (shape ``(batch_size, 2)``);
# ``on_validation_epoch_end`` stacks them, as old code stacked its ``outputs``.
import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

pl.seed_everything(0)
val_loader = DataLoader(RandomDataset(32, 10), batch_size=4)


def make_trainer():
    return pl.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)


class StacksPredictions(BoringModel):
    def __init__(self):
        super().__init__()
        self.predictions = []

    def validation_step(self, batch, batch_idx):
        self.predictions.append(self(batch))

    def on_validation_epoch_end(self):
        self.log("val_loss", self.loss(torch.stack(self.predictions)))
        self.predictions.clear()


error = None
try:
    make_trainer().validate(StacksPredictions(), val_loader, verbose=False)
except RuntimeError as err:
    error = err
    print(f"{type(err).__name__}: {err}")

# %%
# The last batch has 2 rows, the others 4; the old code stacks them with ``torch.stack``.
batch_sizes = [len(batch) for batch in val_loader]
print(f"batch sizes: {batch_sizes}")
assert batch_sizes == [4, 4, 2]
assert error is not None, "stacking the uneven batches did not fail"
assert "stack expects each tensor to be equal size" in str(error)

# %%
# The fix, run
# ------------
# ``PredictionCache``, from the top of this page.


model = PredictionCache()
[metrics] = make_trainer().validate(model, val_loader, verbose=False)
print(f"logged val_loss: {metrics['val_loss']:.6f}")

# %%
# The checks beside it
# --------------------
# By hand, without Lightning: the loss of each sample, and of each batch. The mean of the batch means weighs
# the 2 samples of the last batch as much as the 4 of another; weighted by batch size it is the sample mean
# again.
model.eval()
with torch.no_grad():
    predictions = torch.cat([model(batch) for batch in val_loader])
    sample_losses = ((predictions - 1) ** 2).mean(dim=1)
    batch_means = torch.stack([model.step(batch) for batch in val_loader])
print(f"torch.cat of the predictions: shape {tuple(predictions.shape)}")
print(f"torch.stack of the batch means: shape {tuple(batch_means.shape)}")
sizes = torch.tensor(batch_sizes, dtype=torch.float32)
mean_of_means = batch_means.mean().item()
weighted = ((batch_means * sizes).sum() / sizes.sum()).item()
sample_mean = sample_losses.mean().item()
print(f"mean of batch means {mean_of_means:.6f}, weighted by batch size {weighted:.6f}, over samples {sample_mean:.6f}")

# %%
# The recipe logs the mean over the 10 samples; the unweighted mean of batch means is another number.
# Where else ``PredictionCache`` held, against the mean over the dataset's samples: the box above the recipe
# (:doc:`where it works </reference/scenarios>`).
# With several validation dataloaders this ``validation_step`` needs a ``dataloader_idx`` argument:
# :claim:`validation-step-needs-dataloader-idx` (:doc:`Several validation dataloaders
# </examples/pitfalls/multiple_val_dataloaders>`). Under DDP :claim:`ddp-module-cache-differs`
# (:doc:`Per-rank caches under DDP </examples/distributed/ddp_per_rank_caches>` shows the variant that gathers).
assert predictions.shape == (10, 2) and batch_means.shape == (3,)
assert abs(metrics["val_loss"] - sample_mean) <= 1e-6 * sample_mean
assert abs(weighted - sample_mean) <= 1e-6 * sample_mean
assert abs(mean_of_means - sample_mean) > 1e-3 * sample_mean
assert model.predictions == []
