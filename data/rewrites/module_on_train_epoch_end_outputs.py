"""on_train_epoch_end(self, outputs) on a module (Lightning 1.3-1.4): the epoch's mean training loss.

Classes: ``OutputsHookModel`` (module). Stage: train. Weighting: batch. Logs: ``train_loss_epoch_mean``.
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class OutputsHookModel(BoringModel):
    def on_train_epoch_end(self, outputs):
        self.log("train_loss_epoch_mean", torch.stack([o["loss"] for o in outputs]).mean())
