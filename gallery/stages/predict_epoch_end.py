"""
``on_predict_epoch_end`` lost its ``outputs``
=============================================

Instead of the ``results`` of a module's ``on_predict_epoch_end(self, results)`` or the ``outputs`` of a callback's
``on_predict_epoch_end(self, trainer, pl_module, outputs)``, collect the predictions in ``predict_step`` (module), or
read ``trainer.predict_loop.predictions`` in ``on_predict_epoch_end(self, trainer, pl_module)`` (callback).

.. code-block:: python
   :caption: Before (Lightning 1.x)

   def on_predict_epoch_end(self, results):  # module
       self.all_predictions = torch.cat(results[0])

   def on_predict_epoch_end(self, trainer, pl_module, outputs):  # callback
       self.all_predictions = torch.cat(outputs[0])

.. rst-class:: fix-label

After (Lightning 2.x):
"""

import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel  # stands in for your own LightningModule


class PredictionCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.predict_step_outputs = {}  # dataloader_idx -> this run's predictions, one tensor per batch

    def on_predict_epoch_start(self):
        self.predict_step_outputs.clear()

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        prediction = self(batch)  # your step's prediction
        self.predict_step_outputs.setdefault(dataloader_idx, []).append(prediction)
        return prediction

    def on_predict_epoch_end(self):
        self.all_predictions = [torch.cat(batches) for _, batches in sorted(self.predict_step_outputs.items())]
        self.predict_step_outputs.clear()


class PredictionsReader(pl.Callback):
    def on_predict_epoch_end(self, trainer, pl_module):
        predictions = trainer.predict_loop.predictions
        per_loader = predictions if len(trainer.num_predict_batches) > 1 else [predictions]
        self.all_predictions = [torch.cat(batches) for batches in per_loader]


# %%
# .. recipe-domain:: predict predict_loop_reader
#
# .. dropdown:: Why each line
#
#    Both keep one tensor per predict dataloader in ``all_predictions``:
#    :claim:`predict-loop-predictions-shape`, and the module keys its list by ``dataloader_idx``. The
#    module also empties its list when each predict run starts, so a run that stopped half-way leaves nothing
#    behind. The return value of ``trainer.predict`` is a third way: :claim:`predict-returns-one-entry-per-batch`.
#    With ``return_predictions=False``, use the module's list or a ``BasePredictionWriter`` (below):
#    :claim:`return-predictions-false-keeps-none`.
#
# The old code, run today
# -----------------------
# :claim:`Old-predict-epoch-end-received-predictions`; :claim:`predict-epoch-end-called-without-them`.
# Five batches of 4 random vectors, and ``BoringModel``'s ``predict_step``; the reference below applies the model to
# each batch by hand.
import lightning
from lightning.pytorch.callbacks import BasePredictionWriter
from lightning.pytorch.demos.boring_classes import RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


def make_trainer(callbacks=()):
    return pl.Trainer(
        callbacks=list(callbacks),
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


pl.seed_everything(11)
predict_loader = DataLoader(RandomDataset(32, 20), batch_size=4)


def predict_and_capture(model, callbacks=()):
    """Run ``trainer.predict``; return the exception Lightning raised and the trainer."""
    trainer = make_trainer(callbacks)
    try:
        trainer.predict(model, predict_loader)
    except TypeError as err:
        print(f"{type(err).__name__}: {err}")
        print(f"predict batches run before the failure: {trainer.predict_loop.batch_progress.total.completed}")
        return err, trainer
    return None, trainer


class OldModuleHook(BoringModel):
    def on_predict_epoch_end(self, results):
        self.all_predictions = torch.cat(results[0])


class OldCallbackHook(pl.Callback):
    def on_predict_epoch_end(self, trainer, pl_module, outputs):
        self.all_predictions = torch.cat(outputs[0])


module_error, module_trainer = predict_and_capture(OldModuleHook())
callback_error, callback_trainer = predict_and_capture(BoringModel(), [OldCallbackHook()])

# sphinx_gallery_start_ignore
assert all(
    isinstance(error, TypeError) and trainer.predict_loop.batch_progress.total.completed == len(predict_loader) == 5
    for error, trainer in [(module_error, module_trainer), (callback_error, callback_trainer)]
), "the old predict hooks raise TypeError after every prediction of the epoch"
# sphinx_gallery_end_ignore

# %%
# The proof: the model applied by hand
# ------------------------------------
# All three, from one predict run.
pl.seed_everything(12)
model = PredictionCache()
reader = PredictionsReader()
returned = make_trainer([reader]).predict(model, predict_loader)

# %%
# The reference: the same model in eval mode under ``torch.no_grad``, batch by batch.
model.eval()
with torch.no_grad():
    reference = torch.cat([model(batch) for batch in predict_loader])

candidates = {
    "trainer.predict return value": torch.cat(returned),
    "trainer.predict_loop.predictions (callback)": torch.cat(reader.all_predictions),
    "predict_step cache (module)": torch.cat(model.all_predictions),
}
for name, predictions in candidates.items():
    print(f"{name}: shape {tuple(predictions.shape)}, equal to the reference: {torch.equal(predictions, reference)}")

# %%
# All three hold exactly the reference predictions, 20 rows of 2 outputs (the callback and the module in one
# tensor, for the one dataloader), and the module's cache was cleared.

# sphinx_gallery_start_ignore
assert len(returned) == len(predict_loader) == 5, "trainer.predict returned one entry per batch"
assert reference.shape == (20, 2)
assert len(reader.all_predictions) == len(model.all_predictions) == 1
for predictions in candidates.values():
    assert torch.equal(predictions, reference)
assert model.predict_step_outputs == {}
# sphinx_gallery_end_ignore

# %%
# ``return_predictions=False``
# ----------------------------
# Large prediction runs often pass ``return_predictions=False``, to keep no batch's output for the return value:
# :claim:`return-predictions-false-keeps-none`. The callback that reads it runs below; its error is printed.
reader_trainer = make_trainer([PredictionsReader()])
reader_error = None
try:
    reader_trainer.predict(model, predict_loader, return_predictions=False)
except ValueError as err:
    reader_error = err
    print(f"{type(err).__name__}: {err}")
kept = reader_trainer.predict_loop.predictions
print(f"trainer.predict_loop.predictions after {len(predict_loader)} batches: {kept}")

# %%
# A callback that needs the predictions in any case subclasses Lightning's ``BasePredictionWriter`` with
# ``write_interval="epoch"``: :claim:`prediction-writer-receives-predictions`. The module's own cache does not
# depend on ``return_predictions`` either.
#
# .. recipe-domain:: predict_writer


class PredictionsWriter(BasePredictionWriter):
    def __init__(self):
        super().__init__(write_interval="epoch")

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices):
        per_loader = predictions if len(batch_indices) > 1 else [predictions]
        self.all_predictions = [torch.cat(batches) for batches in per_loader]  # or write them to disk


writer = PredictionsWriter()
quiet_model = PredictionCache()
quiet_model.load_state_dict(model.state_dict())
not_returned = make_trainer([writer]).predict(quiet_model, predict_loader, return_predictions=False)
print(f"trainer.predict returned {not_returned}")
kept_elsewhere = {"BasePredictionWriter": writer.all_predictions[0], "module": quiet_model.all_predictions[0]}
for name, predictions in kept_elsewhere.items():
    print(f"return_predictions=False, {name}: equal to the reference: {torch.equal(predictions, reference)}")

# %%
# :claim:`Return-predictions-false-keeps-none`; the writer and the module's cache hold exactly the reference.

# sphinx_gallery_start_ignore
assert not_returned is None and kept == [], (
    "with return_predictions=False, trainer.predict returned None and the predict loop kept no prediction"
)
assert reader_trainer.predict_loop.batch_progress.total.completed == len(predict_loader)
assert isinstance(reader_error, ValueError) and "non-empty" in str(reader_error)
assert all(torch.equal(predictions, reference) for predictions in kept_elsewhere.values()), (
    "with return_predictions=False, the writer and the module's own cache hold every prediction"
)
assert quiet_model.predict_step_outputs == {}
# sphinx_gallery_end_ignore

# %%
# Two predict dataloaders
# -----------------------
# Code written for one loader -- ``torch.cat(predictions)`` -- with a list of loaders for ``trainer.predict``:


class CatsOneList(BasePredictionWriter):
    def __init__(self):
        super().__init__(write_interval="epoch")

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices):
        self.all_predictions = torch.cat(predictions)


pl.seed_everything(13)
predict_loaders = [DataLoader(RandomDataset(32, 12), batch_size=4), DataLoader(RandomDataset(32, 6), batch_size=4)]
one_list_error = None
try:
    make_trainer([CatsOneList()]).predict(model, predict_loaders)
except TypeError as err:
    one_list_error = err
    print(f"{type(err).__name__}: {err}")

# %%
# The three replacements above, with the same two loaders; the run prints the shapes the return value and each
# replacement hold, per loader.
two_loader_model = PredictionCache()
two_loader_model.load_state_dict(model.state_dict())
reader, writer = PredictionsReader(), PredictionsWriter()
returned = make_trainer([reader, writer]).predict(two_loader_model, predict_loaders)
two_loader_model.eval()
with torch.no_grad():
    references = [torch.cat([two_loader_model(batch) for batch in loader]) for loader in predict_loaders]
kept_per_loader = {
    "trainer.predict return value": [torch.cat(batches) for batches in returned],
    "trainer.predict_loop.predictions (callback)": reader.all_predictions,
    "BasePredictionWriter": writer.all_predictions,
    "predict_step cache (module)": two_loader_model.all_predictions,
}
for name, per_loader in kept_per_loader.items():
    shapes = [tuple(predictions.shape) for predictions in per_loader]
    print(f"{name}: shapes {shapes}, equal to the references: {all(map(torch.equal, per_loader, references))}")

# %%
# Two loaders' predictions, a list of lists, do not go into ``torch.cat`` (the error above); the replacements keep the
# 12 and the 6 rows of the two loaders apart, each equal to its reference. They join batches with ``torch.cat``: the
# second loader's 6 rows come in batches of 4 and 2, and its tensor is equal to its reference all the same (the other
# configurations: :doc:`where each recipe holds </reference/scenarios>`). Under DDP
# :claim:`ddp-predict-shares-stay-in-workers`: see :doc:`Predictions under DDP </examples/distributed/ddp_predict>`.

# sphinx_gallery_start_ignore
assert isinstance(one_list_error, TypeError) and "expected Tensor as element 0" in str(one_list_error)
assert all(
    len(per_loader) == len(predict_loaders) == 2 and all(map(torch.equal, per_loader, references))
    for per_loader in kept_per_loader.values()
), "with two loaders the return value, the predict loop's list and the writer's predictions hold one list per loader"
assert [len(predictions) for predictions in references] == [12, 6]
assert [len(batch) for batch in returned[1]] == [4, 2]  # the second loader's smaller last batch
assert two_loader_model.predict_step_outputs == {}
# sphinx_gallery_end_ignore
