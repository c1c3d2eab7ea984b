"""on_predict_epoch_end(self, results) on a module: every prediction of the run, kept on the module.

Classes: ``PredictionsKeeper`` (module). Stage: predict. Weighting: predictions (every prediction, in order).
Keeps: ``epoch_predictions`` (attribute: one tensor per predict dataloader).
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class PredictionsKeeper(BoringModel):
    def on_predict_epoch_end(self, results):
        self.epoch_predictions = [torch.cat(loader) for loader in results]
