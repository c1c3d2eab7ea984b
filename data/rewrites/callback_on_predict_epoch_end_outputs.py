"""A callback's on_predict_epoch_end(trainer, pl_module, outputs): every prediction of the run, kept on the
callback.

Classes: ``PredictionsCallback`` (callback; the module is ``BoringModel``). Stage: predict. Weighting:
predictions. Keeps: ``epoch_predictions`` (attribute of the callback: one tensor per predict dataloader).
"""

import torch
from lightning.pytorch import Callback


class PredictionsCallback(Callback):
    def on_predict_epoch_end(self, trainer, pl_module, outputs):
        self.epoch_predictions = [torch.cat(preds) for preds in outputs]
