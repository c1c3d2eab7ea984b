"""test_step_end logging the loss test_step returned, and returning nothing (1.x then kept the step's output).

Classes: ``TestStepEndModel`` (module). Stage: test. Weighting: sample (``self.log``'s epoch mean weights each
batch by its size). Logs: ``test_loss``.
"""

from lightning.pytorch.demos.boring_classes import BoringModel


class TestStepEndModel(BoringModel):
    def test_step(self, batch, batch_idx):
        return {"y": self.step(batch)}

    def test_step_end(self, output):
        self.log("test_loss", output["y"])
