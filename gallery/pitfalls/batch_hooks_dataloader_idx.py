"""
The ``dataloader_idx`` argument of the batch hooks
==================================================

Lightning 1.7 removed ``dataloader_idx`` from ``on_train_batch_start`` and ``on_train_batch_end``: training
uses one (possibly combined) dataloader. Since 2.0, ``on_validation_batch_end``, ``on_test_batch_end`` and
``on_predict_batch_end`` receive ``dataloader_idx`` only when there are several dataloaders. This page runs the
old shapes, then the signatures to write today, in a module and in a callback.
"""

# %%
# The symptom: the old signatures fail
# ------------------------------------
# Two old module hooks, each run by the ``Trainer`` entry point of its stage, with one dataloader.
import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


def loader(samples):
    return DataLoader(RandomDataset(32, samples), batch_size=8)


def make_trainer(callbacks=()):
    return pl.Trainer(
        max_epochs=1,
        num_sanity_val_steps=0,
        callbacks=list(callbacks),
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


class OldTrainBatchStart(BoringModel):
    def on_train_batch_start(self, batch, batch_idx, dataloader_idx):
        pass


class OldValidationBatchEnd(BoringModel):
    def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx):
        pass


errors = []
for model, run in ((OldTrainBatchStart(), "fit"), (OldValidationBatchEnd(), "validate")):
    try:
        getattr(make_trainer(), run)(model, loader(16))
    except (TypeError, RuntimeError) as err:
        errors.append(err)
        print(f"{type(err).__name__}: {err}")

# %%
# The training hook fails with a ``TypeError`` (Lightning no longer passes the argument); Lightning itself
# rejects the validation hook before validation starts, naming the argument.
assert [type(err) for err in errors] == [TypeError, RuntimeError]
assert all("dataloader_idx" in str(err) for err in errors)

# %%
# The fix: drop it for training, default it to ``0`` elsewhere
# ------------------------------------------------------------
# Each hook records the ``dataloader_idx`` it received (``None`` for the training hooks, which have none).


class BatchHooksModule(BoringModel):
    def __init__(self):
        super().__init__()
        self.calls = []  # (hook, dataloader_idx)

    def test_step(self, batch, batch_idx, dataloader_idx=0):  # several test loaders: the step takes the index too
        return super().test_step(batch, batch_idx)

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        return super().predict_step(batch, batch_idx)

    def on_train_batch_start(self, batch, batch_idx):
        self.calls.append(("on_train_batch_start", None))

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.calls.append(("on_train_batch_end", None))

    def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        self.calls.append(("on_validation_batch_end", dataloader_idx))

    def on_test_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        self.calls.append(("on_test_batch_end", dataloader_idx))

    def on_predict_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        self.calls.append(("on_predict_batch_end", dataloader_idx))


class BatchHooksCallback(pl.Callback):
    def __init__(self):
        self.calls = []  # (hook, dataloader_idx)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.calls.append(("on_train_batch_start", None))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.calls.append(("on_train_batch_end", None))

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self.calls.append(("on_validation_batch_end", dataloader_idx))

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self.calls.append(("on_test_batch_end", dataloader_idx))

    def on_predict_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self.calls.append(("on_predict_batch_end", dataloader_idx))


# %%
# One training epoch of 2 batches with one validation loader of 1 batch; then test and predict with two loaders
# each (1 and 2 batches), so the same methods serve one loader and several.
model, callback = BatchHooksModule(), BatchHooksCallback()
make_trainer([callback]).fit(model, loader(16), loader(8))
make_trainer([callback]).test(model, [loader(8), loader(16)], verbose=False)
make_trainer([callback]).predict(model, [loader(8), loader(16)])
for hook in dict(model.calls):
    print(f"{hook}: dataloader_idx of each call {[idx for name, idx in model.calls if name == hook]}")

# %%
# Every hook ran once per batch, in the module and in the callback alike; with one loader the default ``0``
# stood in, with two Lightning passed each loader's index.
expected = (
    [("on_train_batch_start", None), ("on_train_batch_end", None)] * 2
    + [("on_validation_batch_end", 0)]
    + [("on_test_batch_end", 0), ("on_test_batch_end", 1), ("on_test_batch_end", 1)]
    + [("on_predict_batch_end", 0), ("on_predict_batch_end", 1), ("on_predict_batch_end", 1)]
)
assert model.calls == callback.calls == expected
