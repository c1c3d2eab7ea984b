"""on_epoch_start and on_epoch_end on a callback: what training had reached at each epoch's start and end.

Classes: ``EpochWatcher`` (callback). Stage: every. Weighting: none. Keeps: ``epoch_calls``.
"""

from lightning.pytorch.callbacks import Callback


class EpochWatcher(Callback):
    def __init__(self):
        self.epoch_calls = []

    def on_epoch_start(self, trainer, pl_module):
        self.epoch_calls.append(["start", trainer.state.stage.value])

    def on_epoch_end(self, trainer, pl_module):
        weight = float(pl_module.layer.weight.detach().sum())
        self.epoch_calls.append(["end", trainer.state.stage.value, weight])
