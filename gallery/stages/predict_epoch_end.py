"""
``on_predict_epoch_end`` lost its ``outputs``
=============================================

Lightning 1.x passed the predictions of the whole epoch to ``on_predict_epoch_end`` (``results`` on the module,
``outputs`` on a callback); Lightning 2.0 calls both hooks without them. The predictions are still there:
``trainer.predict`` returns them, a callback can read ``trainer.predict_loop.predictions`` at epoch end, and a
module can collect its own in ``predict_step``. This page shows the old hooks failing and checks all three
replacements against the model applied by hand -- then runs ``trainer.predict(return_predictions=False)``,
where Lightning keeps no predictions: only the module's own cache and a ``BasePredictionWriter`` callback
still have them.
"""

# %%
# The old code
# ------------
# Five batches of 4 random vectors; ``BoringModel``'s ``predict_step`` returns the model's output for the batch.
import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import BasePredictionWriter
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
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


pl.seed_everything(11, verbose=False)
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
    raise AssertionError("this old hook no longer fails: the page is out of date")


class OldModuleHook(BoringModel):
    def on_predict_epoch_end(self, results):
        self.all_predictions = torch.cat(results[0])


class OldCallbackHook(pl.Callback):
    def on_predict_epoch_end(self, trainer, pl_module, outputs):
        self.all_predictions = torch.cat(outputs[0])


module_error, module_trainer = predict_and_capture(OldModuleHook())
callback_error, callback_trainer = predict_and_capture(BoringModel(), [OldCallbackHook()])

# %%
# Lightning itself does not check for these signatures: Python raises ``TypeError`` when Lightning calls the
# hook without the argument -- after every prediction has been computed.
for error, trainer in [(module_error, module_trainer), (callback_error, callback_trainer)]:
    assert isinstance(error, TypeError)
    assert trainer.predict_loop.batch_progress.total.completed == len(predict_loader) == 5

# %%
# Three replacements
# ------------------
# 1. the list ``trainer.predict`` returns (one entry per batch);
# 2. a callback reading ``trainer.predict_loop.predictions`` in ``on_predict_epoch_end(trainer, pl_module)``;
# 3. a module that appends in ``predict_step`` and reads its cache in ``on_predict_epoch_end(self)``.


class PredictionsReader(pl.Callback):
    def on_predict_epoch_end(self, trainer, pl_module):
        self.all_predictions = torch.cat(trainer.predict_loop.predictions)


class PredictionCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.predict_step_outputs = []

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        prediction = self(batch)
        self.predict_step_outputs.append(prediction)
        return prediction

    def on_predict_epoch_end(self):
        self.all_predictions = torch.cat(self.predict_step_outputs)
        self.predict_step_outputs.clear()


pl.seed_everything(12, verbose=False)
model = PredictionCache()
reader = PredictionsReader()
returned = make_trainer([reader]).predict(model, predict_loader)

# %%
# The reference: the model applied by hand
# ----------------------------------------
# Prediction does not change the weights, so the same model in eval mode under ``torch.no_grad`` gives the
# reference, batch by batch.
model.eval()
with torch.no_grad():
    reference = torch.cat([model(batch) for batch in predict_loader])

candidates = {
    "trainer.predict return value": torch.cat(returned),
    "trainer.predict_loop.predictions (callback)": reader.all_predictions,
    "predict_step cache (module)": model.all_predictions,
}
for name, predictions in candidates.items():
    print(f"{name}: shape {tuple(predictions.shape)}, equal to the reference: {torch.equal(predictions, reference)}")

# %%
# All three hold exactly the reference predictions, 20 rows of 2 outputs, and the module's cache was cleared.
assert len(returned) == len(predict_loader) == 5
assert reference.shape == (20, 2)
for predictions in candidates.values():
    assert torch.equal(predictions, reference)
assert model.predict_step_outputs == []

# %%
# ``return_predictions=False``
# ----------------------------
# Large prediction runs often pass ``return_predictions=False`` so that Lightning does not keep every batch's
# output. Then ``trainer.predict`` returns ``None`` and ``trainer.predict_loop.predictions`` stays empty: the
# callback that reads it fails in ``torch.cat``.
reader_trainer = make_trainer([PredictionsReader()])
try:
    reader_trainer.predict(model, predict_loader, return_predictions=False)
except ValueError as err:
    reader_error = err
    print(f"{type(err).__name__}: {err}")
else:
    raise AssertionError("PredictionsReader no longer fails without return_predictions: this page is out of date")
kept = reader_trainer.predict_loop.predictions
print(f"trainer.predict_loop.predictions after {len(predict_loader)} batches: {kept}")

# %%
# A callback that needs the predictions in any case subclasses Lightning's ``BasePredictionWriter`` with
# ``write_interval="epoch"``: Lightning keeps the predictions for it and hands them to ``write_on_epoch_end``
# (one list per dataloader), whatever ``return_predictions`` says. The module's own cache does not depend on it
# either.


class PredictionsWriter(BasePredictionWriter):
    def __init__(self):
        super().__init__(write_interval="epoch")

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices):
        self.all_predictions = torch.cat(predictions)  # or write them to disk


writer = PredictionsWriter()
quiet_model = PredictionCache()
quiet_model.load_state_dict(model.state_dict())
not_returned = make_trainer([writer]).predict(quiet_model, predict_loader, return_predictions=False)
print(f"trainer.predict returned {not_returned}")
kept_elsewhere = {"BasePredictionWriter": writer.all_predictions, "module": quiet_model.all_predictions}
for name, predictions in kept_elsewhere.items():
    print(f"return_predictions=False, {name}: equal to the reference: {torch.equal(predictions, reference)}")

# %%
# Without ``return_predictions`` the return value is ``None`` and the predict loop's list is empty; the writer
# and the module's cache hold exactly the reference. The :doc:`scenario matrix </reference/scenarios>` runs
# ``PredictionCache`` with and without ``return_predictions`` and with a smaller last batch (``torch.cat``, not
# ``torch.stack``, joins batches of different sizes).
assert not_returned is None
assert kept == []
assert reader_trainer.predict_loop.batch_progress.total.completed == len(predict_loader)
assert "non-empty" in str(reader_error)
assert torch.equal(writer.all_predictions, reference)
assert torch.equal(quiet_model.all_predictions, reference)
assert quiet_model.predict_step_outputs == []
