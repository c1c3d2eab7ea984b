"""validation_epoch_end with several validation dataloaders: Lightning 1.x passed one list per dataloader (and a
single dataloader's list on its own).

Classes: ``PerLoaderValidation`` (module). Stage: validation. Weighting: batch, per dataloader. Logs:
``val_loss_{idx}`` (one per validation dataloader).
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class PerLoaderValidation(BoringModel):
    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        return {"x": self.step(batch)}

    def validation_epoch_end(self, outputs):
        if outputs and not isinstance(outputs[0], list):  # a single dataloader
            outputs = [outputs]
        for idx, loader_outputs in enumerate(outputs):
            self.log(f"val_loss_{idx}", torch.stack([o["x"] for o in loader_outputs]).mean())
