"""on_epoch_start and on_epoch_end on a module: what training had reached at each epoch's start and end.

Classes: ``EpochStartEnd`` (module). Stage: every. Weighting: none. Keeps: ``epoch_calls``.
"""

from lightning.pytorch.demos.boring_classes import BoringModel


class EpochStartEnd(BoringModel):
    def __init__(self):
        super().__init__()
        self.epoch_calls = []

    def on_epoch_start(self):
        self.epoch_calls.append(["start", self.trainer.state.stage.value])

    def on_epoch_end(self):
        weight = float(self.layer.weight.detach().sum())
        self.epoch_calls.append(["end", self.trainer.state.stage.value, weight])
