"""
The old ``outputs`` hooks on Lightning 2.x
==========================================

This page runs three old hook shapes written to read the epoch's ``training_step`` outputs, and shows the error
of each today, and **when**: how many training steps ran before the failure. The fix is on
:doc:`Module-side caching </examples/core/module_side_caching>` (a module's hook) and
:doc:`Callback-side caching </examples/core/callback_side_caching>` (a callback's).

The last 1.x releases, shape by shape: :claim:`old-outputs-on-1-4-9`;
:claim:`old-outputs-on-1-9-5`. :claim:`Outputs-argument-deprecated-and-removed`, and
:claim:`epoch-end-hooks-removed-in-2-0`.
"""

# %%
# Set-up
# ------
# ``BoringModel`` and ``RandomDataset`` come from ``lightning.pytorch.demos.boring_classes`` (the import below).
# Four batches per epoch, two epochs, no logger or checkpoints.
import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


def make_trainer(callbacks=()):
    return pl.Trainer(
        max_epochs=2,
        limit_val_batches=0,
        callbacks=list(callbacks),
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


def fit_and_capture(model, callbacks=()):
    """Fit ``model``; return the exception Lightning raised (``None`` if none) and the trainer it came from."""
    pl.seed_everything(0)
    trainer = make_trainer(callbacks)
    try:
        trainer.fit(model, DataLoader(RandomDataset(32, 32), batch_size=8))
    except Exception as err:  # whatever Lightning raises: the checks below say which
        print(f"{type(err).__name__}: {err}")
        print(f"training steps taken before the failure: {trainer.global_step}")
        return err, trainer
    return None, trainer


# %%
# ``LightningModule.on_train_epoch_end(self, outputs)``
# -----------------------------------------------------
# The module hook with the ``outputs`` argument.


class ModuleHookWithOutputs(BoringModel):
    def on_train_epoch_end(self, outputs):
        self.log("train_loss_epoch_mean", torch.stack([out["loss"] for out in outputs]).mean())


module_hook_error, trainer = fit_and_capture(ModuleHookWithOutputs())

# %%
# :claim:`Module-outputs-hook-fails-after-an-epoch`.
assert isinstance(module_hook_error, TypeError) and trainer.global_step == trainer.num_training_batches == 4, (
    "the module's on_train_epoch_end(outputs) raises TypeError after the whole first epoch"
)

# %%
# ``Callback.on_train_epoch_end(self, trainer, pl_module, outputs)``
# ------------------------------------------------------------------
# The same argument on a callback.


class CallbackHookWithOutputs(pl.Callback):
    def on_train_epoch_end(self, trainer, pl_module, outputs):
        pl_module.log("train_loss_epoch_mean", torch.stack([out["loss"] for out in outputs]).mean())


callback_hook_error, trainer = fit_and_capture(BoringModel(), callbacks=[CallbackHookWithOutputs()])

# %%
# :claim:`Callback-outputs-hook-fails-after-an-epoch`: on a real model, that can be hours of compute lost to a
# signature.
assert isinstance(callback_hook_error, TypeError) and trainer.global_step == trainer.num_training_batches == 4, (
    "the callback's on_train_epoch_end(outputs) raises TypeError after the whole first epoch"
)

# %%
# ``LightningModule.training_epoch_end(self, outputs)``
# -----------------------------------------------------
# The module's old epoch-end hook.


class TrainingEpochEnd(BoringModel):
    def training_epoch_end(self, outputs):
        self.log("train_loss_epoch_mean", torch.stack([out["loss"] for out in outputs]).mean())


training_epoch_end_error, trainer = fit_and_capture(TrainingEpochEnd())

# %%
# :claim:`Training-epoch-end-refused-before-training`.
assert (
    isinstance(training_epoch_end_error, NotImplementedError)
    and "training_epoch_end" in str(training_epoch_end_error)
    and trainer.global_step == 0
), "Lightning refuses training_epoch_end with NotImplementedError before the first training step"

# %%
# What to do instead
# ------------------
# Keep what you need yourself while the epoch runs, either in a callback
# (:doc:`Callback-side caching </examples/core/callback_side_caching>`) or in the module
# (:doc:`Module-side caching </examples/core/module_side_caching>`).
