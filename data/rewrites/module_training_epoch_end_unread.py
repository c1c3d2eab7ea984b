"""training_epoch_end on a module that never reads ``outputs``: the epoch's mean loss, from the module's own list.

Classes: ``OwnListEpochEnd`` (module). Stage: train. Weighting: batch (the mean of per-batch losses, cached by the
step itself). Logs: ``train_loss_epoch_mean``.
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class OwnListEpochEnd(BoringModel):
    def __init__(self):
        super().__init__()
        self.epoch_losses = []

    def training_step(self, batch, batch_idx):
        output = super().training_step(batch, batch_idx)
        if output is not None:  # the batch is skipped
            self.epoch_losses.append(output["loss"].detach())
        return output

    def training_epoch_end(self, outputs):
        self.log("train_loss_epoch_mean", torch.stack(self.epoch_losses).mean())
        self.epoch_losses.clear()
