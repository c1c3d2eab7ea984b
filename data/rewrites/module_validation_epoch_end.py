"""validation_epoch_end on a module: the validation run's mean loss.

Classes: ``ValidationEpochMean`` (module). Stage: validation. Weighting: batch. Logs: ``val_loss``.
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class ValidationEpochMean(BoringModel):
    def validation_epoch_end(self, outs):
        avg_loss = torch.stack([o["x"] for o in outs]).mean()
        self.log("val_loss", avg_loss)
