"""test_epoch_end on a module with a test_step of its own (here it hands on what BoringModel's step returns, so the
matrix's ``eval_step`` values reach it): the test run's mean loss.

Classes: ``OwnStepTestEpochMean`` (module). Stage: test. Weighting: batch. Logs: ``test_loss``.
"""

import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class OwnStepTestEpochMean(BoringModel):
    def test_step(self, batch, batch_idx):
        return super().test_step(batch, batch_idx)

    def test_epoch_end(self, outputs):
        test_loss = torch.stack([x["y"] for x in outputs]).mean()
        self.log("test_loss", test_loss)
