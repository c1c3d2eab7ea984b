"""training_epoch_end on a module: the epoch's mean training loss.

Classes: ``TrainingEpochMean`` (module). Stage: train. Weighting: batch (the mean of per-batch losses, as the
old ``outputs`` list held one entry per batch). Logs: ``train_loss_epoch_mean``.
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class TrainingEpochMean(BoringModel):
    def training_epoch_end(self, outputs):
        avg_loss = torch.stack([x["loss"] for x in outputs]).mean()
        self.log("train_loss_epoch_mean", avg_loss)
