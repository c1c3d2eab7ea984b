"""on_epoch_end on a callback: what training had reached at each epoch end.

Classes: ``EpochEndWatcher`` (callback). Stage: every. Weighting: none. Keeps: ``epoch_calls``.
"""

from lightning.pytorch.callbacks import Callback


class EpochEndWatcher(Callback):
    def __init__(self):
        self.epoch_calls = []

    def on_epoch_end(self, trainer, pl_module):
        weight = float(pl_module.layer.weight.sum())
        self.epoch_calls.append([trainer.state.stage.value, weight])
