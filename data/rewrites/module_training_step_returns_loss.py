"""training_epoch_end reading ``x["loss"]`` from a step that returns a bare tensor (Lightning 1.x wrapped it).

Classes: ``LossStepModel`` (module). Stage: train. Weighting: batch. Logs: ``train_loss_epoch_mean``.
"""

from lightning.pytorch.demos.boring_classes import BoringModel


class LossStepModel(BoringModel):
    def training_step(self, batch, batch_idx):
        output = super().training_step(batch, batch_idx)
        if output is None:  # the batch is skipped
            return None
        loss = output["loss"]
        return loss

    def training_epoch_end(self, outputs):
        losses = [out["loss"] for out in outputs]
        self.log("train_loss_epoch_mean", sum(losses) / len(losses))
