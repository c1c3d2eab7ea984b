"""training_step_end making the loss from what training_step returned (the split DataParallel asked for in 1.x).

Classes: ``StepEndModel`` (module). Stage: train. Weighting: batch (the mean of the losses the step-end hook made,
one per batch, over every process's batches). Logs: ``train_loss_epoch_mean``.
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class StepEndModel(BoringModel):
    def __init__(self):
        super().__init__()
        self.step_losses = []

    def on_train_epoch_start(self):
        self.step_losses.clear()

    def training_step(self, batch, batch_idx):
        output = super().training_step(batch, batch_idx)
        if output is None:  # the batch is skipped
            return None
        loss = output["loss"] if isinstance(output, dict) else output
        return {"parts": loss.reshape(1)}

    def training_step_end(self, step_output):
        if step_output is None:
            return None
        loss = step_output["parts"].mean()
        self.step_losses.append(loss.detach())
        return {"loss": loss}

    def on_train_epoch_end(self):
        losses = torch.stack(self.step_losses)
        count = torch.tensor(float(len(self.step_losses)), device=losses.device)
        totals = self.all_gather(torch.stack([losses.sum(), count])).reshape(-1, 2).sum(dim=0)  # every process's
        self.log("train_loss_epoch_mean", totals[0] / totals[1], sync_dist=True)
