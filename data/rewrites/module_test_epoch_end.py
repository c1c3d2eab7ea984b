"""test_epoch_end on a module: the test run's mean loss.

Classes: ``TestEpochMean`` (module). Stage: test. Weighting: batch. Logs: ``test_loss``.
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class TestEpochMean(BoringModel):
    def test_epoch_end(self, outputs):
        test_loss = torch.stack([x["y"] for x in outputs]).mean()
        self.log("test_loss", test_loss)
