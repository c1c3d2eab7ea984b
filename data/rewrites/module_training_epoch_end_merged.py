"""training_epoch_end beside on_train_epoch_end on a module: the epoch's mean loss, made in one and logged in the other.

Classes: ``MergedEpochEnd`` (module). Stage: train. Weighting: batch (the mean of per-batch losses, cached by the
step itself). Logs: ``train_loss_epoch_mean``.
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class MergedEpochEnd(BoringModel):
    def __init__(self):
        super().__init__()
        self.epoch_losses = []

    def training_step(self, batch, batch_idx):
        output = super().training_step(batch, batch_idx)
        if output is not None:  # the batch is skipped
            self.epoch_losses.append(output["loss"].detach())
        return output

    def training_epoch_end(self, outputs):
        self.epoch_mean = torch.stack(self.epoch_losses).mean()
        self.epoch_losses.clear()

    def on_train_epoch_end(self):
        self.log("train_loss_epoch_mean", self.epoch_mean)
