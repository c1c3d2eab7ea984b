"""A callback's on_train_epoch_end(trainer, pl_module, outputs) (Lightning 1.3-1.4): the epoch's mean training
loss. Lightning passed a callback these outputs only when the module defined ``training_epoch_end`` (it does here,
to count the epoch's batches).

Classes: ``BatchCountModel`` (module), ``EpochLossCallback`` (callback). Stage: train. Weighting: batch. Logs:
``train_loss_epoch_mean`` (the callback) and ``train_batches`` (the module).
"""

import torch
from lightning.pytorch import Callback
from lightning.pytorch.demos.boring_classes import BoringModel


class BatchCountModel(BoringModel):
    def training_epoch_end(self, outputs):
        self.log("train_batches", float(len(outputs)))


class EpochLossCallback(Callback):
    def on_train_epoch_end(self, trainer, pl_module, outputs):
        epoch_mean = torch.stack([out["loss"] for out in outputs]).mean()
        pl_module.log("train_loss_epoch_mean", epoch_mean)
