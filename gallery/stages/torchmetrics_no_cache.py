"""
No cache at all: ``torchmetrics`` and ``self.log(..., on_epoch=True)``
======================================================================

Many ``validation_epoch_end`` methods only averaged a loss or computed a metric over the epoch. Neither needs a
cache: ``self.log(name, value, on_epoch=True)`` averages a scalar over the epoch, and a ``torchmetrics`` metric
object updated in every step and logged with ``on_epoch=True`` is computed at epoch end and reset by
Lightning. This page checks both epoch values against the batches evaluated by hand, and that the metric
started each epoch empty.
"""

# %%
# The module
# ----------
# ``MeanMetric`` accumulates a running sum and weight; ``self.log`` is given the metric object itself, not
# its value, so Lightning calls ``compute()`` at epoch end and ``reset()`` afterwards. The loss is also logged
# as a plain scalar. Every batch has the same size, so the mean of the batch means is the epoch mean.
import copy

import lightning
import lightning.pytorch as pl
import torch
import torchmetrics
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class MetricModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.val_mean_loss = torchmetrics.MeanMetric()
        self.updates_at_epoch_start = []

    def on_validation_epoch_start(self):
        self.updates_at_epoch_start.append(self.val_mean_loss.update_count)

    def validation_step(self, batch, batch_idx):
        loss = self.step(batch)
        self.val_mean_loss.update(loss)
        self.log("val_metric", self.val_mean_loss, on_step=False, on_epoch=True)
        self.log("val_scalar", loss, on_step=False, on_epoch=True)


# %%
# A callback records what was logged at the end of each validation run, and a copy of the weights validated.


class Recorder(pl.Callback):
    def __init__(self):
        self.logged = []
        self.snapshots = []
        self.updates_at_end = []

    def on_validation_epoch_start(self, trainer, pl_module):
        self.snapshots.append(copy.deepcopy(pl_module.state_dict()))

    def on_validation_end(self, trainer, pl_module):
        metrics = trainer.callback_metrics
        self.logged.append((metrics["val_metric"].item(), metrics["val_scalar"].item()))
        self.updates_at_end.append(pl_module.val_mean_loss.update_count)


pl.seed_everything(2, verbose=False)
train_loader = DataLoader(RandomDataset(32, 32), batch_size=8)
val_loader = DataLoader(RandomDataset(32, 24), batch_size=8)
recorder = Recorder()
model = MetricModel()
trainer = pl.Trainer(
    max_epochs=3,
    num_sanity_val_steps=0,
    callbacks=[recorder],
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, train_loader, val_loader)

# %%
# The reference: each validated set of weights, evaluated by hand
# ---------------------------------------------------------------


def reference_mean(state_dict):
    reference = BoringModel()
    reference.load_state_dict(state_dict)
    reference.eval()
    with torch.no_grad():
        return torch.stack([reference.step(batch) for batch in val_loader]).mean().item()


reference_means = [reference_mean(state) for state in recorder.snapshots]
for epoch, ((metric, scalar), expected) in enumerate(zip(recorder.logged, reference_means, strict=True)):
    print(f"epoch {epoch}: MeanMetric {metric:.6f}, self.log scalar {scalar:.6f} (by hand: {expected:.6f})")
print(f"MeanMetric.update_count at each validation epoch start: {model.updates_at_epoch_start}")
print(f"MeanMetric.update_count at each validation end: {recorder.updates_at_end}")

# %%
# What Lightning did for us
# -------------------------
# Both epoch values equal the reference (compared with a relative tolerance of 1e-6: the metric and the
# logger accumulate sums in their own order, and bitwise equality is not something they promise). The metric
# had seen three updates when each validation run ended and none when the next one began: Lightning reset it.
# Had it not, epochs 1 and 2 would average over the earlier epochs' batches too and miss the reference.
assert len(recorder.logged) == 3
for (metric, scalar), expected in zip(recorder.logged, reference_means, strict=True):
    assert abs(metric - expected) <= 1e-6 * expected
    assert abs(scalar - expected) <= 1e-6 * expected
assert model.updates_at_epoch_start == [0, 0, 0]
assert recorder.updates_at_end == [len(val_loader)] * 3 == [3, 3, 3]
assert model.val_mean_loss.update_count == 0
