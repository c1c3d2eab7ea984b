"""training_epoch_end over a dict output whose other key still holds the autograd graph (the predictions).

Classes: ``PredictionsEpochLoss`` (module). Stage: train. Weighting: sample (the loss over every prediction of the
epoch, each sample once). Logs: ``train_loss_sample_mean``.
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class PredictionsEpochLoss(BoringModel):
    def training_step(self, batch, batch_idx):
        preds = self(batch)
        output = super().training_step(batch, batch_idx)
        if output is None:
            return None
        output["preds"] = preds  # keeps its graph until the epoch ends in Lightning 1.x
        return output

    def training_epoch_end(self, outputs):
        preds = torch.cat([out["preds"] for out in outputs])
        self.log("train_loss_sample_mean", self.loss(preds))
