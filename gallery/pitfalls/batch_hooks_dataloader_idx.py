"""
The ``dataloader_idx`` argument of the batch hooks
==================================================

Drop ``dataloader_idx`` from the training batch hooks (``on_train_batch_start``, ``on_train_batch_end``), and give it
a default, ``dataloader_idx=0``, in the validation, test and predict batch hooks and steps, in a module and in a
callback alike.

.. code-block:: python
   :caption: Before (Lightning 1.x)

   def on_train_batch_start(self, batch, batch_idx, dataloader_idx):
       ...

   def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx):
       ...

.. rst-class:: fix-label

After (Lightning 2.x):
"""

import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel  # stands in for your own LightningModule


class BatchHooksModule(BoringModel):
    def test_step(self, batch, batch_idx, dataloader_idx=0):  # several test loaders: the step takes the index too
        # your loss, as your step computes it
        prediction = self(batch)
        loss = torch.nn.functional.mse_loss(prediction, torch.ones_like(prediction))
        return loss

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        return self(batch)  # your prediction

    def on_train_batch_start(self, batch, batch_idx):
        pass

    def on_train_batch_end(self, outputs, batch, batch_idx):
        pass

    def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        pass

    def on_test_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        pass

    def on_predict_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        pass


class BatchHooksCallback(pl.Callback):
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        pass

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        pass

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        pass

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        pass

    def on_predict_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        pass


# %%
# .. dropdown:: Why
#
#    :claim:`Train-batch-hooks-dataloader-idx-removed`.
#    :claim:`Eval-batch-hooks-dataloader-idx-only-with-several`.
#
# The old code, run today
# -----------------------
# Two old module hooks, each with the ``Trainer`` entry point of its stage and one dataloader.
import lightning
from lightning.pytorch.demos.boring_classes import RandomDataset
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
# :claim:`Train-batch-hooks-called-without-dataloader-idx`; :claim:`required-eval-dataloader-idx-refused`.

# sphinx_gallery_start_ignore
assert [type(err) for err in errors] == [TypeError, RuntimeError] and all(
    "dataloader_idx" in str(err) for err in errors
), "the training hook fails with TypeError, the validation hook is refused with RuntimeError, both naming the argument"
# sphinx_gallery_end_ignore

# %%
# The proof: each hook's calls, batch by batch
# --------------------------------------------
# The same classes, each hook noting the ``dataloader_idx`` it received (the training hooks, written with the new
# signatures above, have no ``dataloader_idx`` parameter and note ``None``).


class RecordedModule(BatchHooksModule):
    def __init__(self):
        super().__init__()
        self.calls = []  # (hook, dataloader_idx)

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


class RecordedCallback(BatchHooksCallback):
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
model, callback = RecordedModule(), RecordedCallback()
make_trainer([callback]).fit(model, loader(16), loader(8))
make_trainer([callback]).test(model, [loader(8), loader(16)], verbose=False)
make_trainer([callback]).predict(model, [loader(8), loader(16)])
for hook in dict(model.calls):
    print(f"{hook}: dataloader_idx of each call {[idx for name, idx in model.calls if name == hook]}")

# %%
# The calls, in the module and in the callback alike: :claim:`eval-batch-hooks-dataloader-idx-only-with-several`.
expected = (
    [("on_train_batch_start", None), ("on_train_batch_end", None)] * 2
    + [("on_validation_batch_end", 0)]
    + [("on_test_batch_end", 0), ("on_test_batch_end", 1), ("on_test_batch_end", 1)]
    + [("on_predict_batch_end", 0), ("on_predict_batch_end", 1), ("on_predict_batch_end", 1)]
)
# sphinx_gallery_start_ignore
assert model.calls == callback.calls == expected, (
    "each batch hook ran once per batch; the default 0 stood in with one loader, with two each loader's index came"
)
# sphinx_gallery_end_ignore
