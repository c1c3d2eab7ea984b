"""
``on_predict_epoch_end`` lost its ``outputs``
=============================================

Lightning 1.x passed the predictions of the whole epoch to ``on_predict_epoch_end`` (``results`` on the module,
``outputs`` on a callback); Lightning 2.0 calls both hooks without them. The predictions are still there:
``trainer.predict`` returns them, a callback can read ``trainer.predict_loop.predictions`` at epoch end, and a
module can collect its own in ``predict_step``. This page shows the old hooks failing and checks all three
replacements against the model applied by hand.
"""

# %%
# The old code
# ------------
# Five batches of 4 random vectors; ``BoringModel``'s ``predict_step`` returns the model's output for the batch.
import lightning
import lightning.pytorch as pl
import torch
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
