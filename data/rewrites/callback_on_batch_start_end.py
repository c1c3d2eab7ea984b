"""on_batch_start and on_batch_end on a callback: what training had reached at each batch's start and end.

Classes: ``BatchWatcher`` (callback). Stage: every. Weighting: none. Keeps: ``batch_calls``.
"""

from lightning.pytorch.callbacks import Callback


class BatchWatcher(Callback):
    def __init__(self):
        self.batch_calls = []

    def on_batch_start(self, trainer, pl_module):
        self.batch_calls.append(["start", trainer.state.stage.value])

    def on_batch_end(self, trainer, pl_module):
        weight = float(pl_module.layer.weight.detach().sum())
        self.batch_calls.append(["end", trainer.state.stage.value, weight])
