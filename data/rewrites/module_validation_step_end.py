"""validation_step_end logging the loss validation_step returned, and returning nothing (1.x kept the step's output).

Classes: ``ValStepEndModel`` (module). Stage: validation. Weighting: sample (``self.log``'s epoch mean weights each
batch by its size). Logs: ``val_loss``.
"""

from lightning.pytorch.demos.boring_classes import BoringModel


class ValStepEndModel(BoringModel):
    def validation_step(self, batch, batch_idx):
        return {"x": self.step(batch)}

    def validation_step_end(self, output):
        self.log("val_loss", output["x"])
