"""
The old ``outputs`` hooks on Lightning 2.x
==========================================

Lightning 1.x handed every epoch-end hook the list of all ``training_step`` outputs. Lightning 1.3
deprecated the ``outputs`` argument of ``on_train_epoch_end``, 1.5 removed it, and 2.0 removed
``training_epoch_end`` altogether. This page runs the three old shapes on the Lightning installed for this
build and shows what Lightning raises, and **when**: how many training steps ran before the failure.
"""

# %%
# Set-up
# ------
# ``BoringModel`` and ``RandomDataset`` are Lightning's own demo classes: a linear layer trained on random
# vectors. Four batches per epoch, two epochs, no logger or checkpoints.
import lightning
import lightning.pytorch as pl
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
    pl.seed_everything(0, verbose=False)
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
# The module hook with the ``outputs`` argument that 1.3 deprecated.


class ModuleHookWithOutputs(BoringModel):
    def on_train_epoch_end(self, outputs):
        self.epoch_mean = sum(out["loss"] for out in outputs) / len(outputs)


module_hook_error, trainer = fit_and_capture(ModuleHookWithOutputs())

# %%
# Lightning calls the hook without arguments, so Python itself raises ``TypeError`` -- but only once the
# whole first epoch (four batches) has trained.
assert isinstance(module_hook_error, TypeError)
assert trainer.global_step == trainer.num_training_batches == 4

# %%
# ``Callback.on_train_epoch_end(self, trainer, pl_module, outputs)``
# ------------------------------------------------------------------
# The same argument on a callback.


class CallbackHookWithOutputs(pl.Callback):
    def on_train_epoch_end(self, trainer, pl_module, outputs):
        self.epoch_mean = sum(out["loss"] for out in outputs) / len(outputs)


callback_hook_error, trainer = fit_and_capture(BoringModel(), callbacks=[CallbackHookWithOutputs()])

# %%
# Again a plain ``TypeError`` from Python, after a whole epoch of training: on a real model, that can be
# hours of compute lost to a signature.
assert isinstance(callback_hook_error, TypeError)
assert trainer.global_step == trainer.num_training_batches == 4

# %%
# ``LightningModule.training_epoch_end(self, outputs)``
# -----------------------------------------------------
# The hook 2.0 removed.


class TrainingEpochEnd(BoringModel):
    def training_epoch_end(self, outputs):
        self.epoch_mean = sum(out["loss"] for out in outputs) / len(outputs)


training_epoch_end_error, trainer = fit_and_capture(TrainingEpochEnd())

# %%
# Lightning checks for this removed hook itself, before the first training step.
assert isinstance(training_epoch_end_error, NotImplementedError)
assert "training_epoch_end" in str(training_epoch_end_error)
assert trainer.global_step == 0

# %%
# What to do instead
# ------------------
# Keep what you need yourself while the epoch runs, either in a callback
# (:doc:`Callback-side caching </examples/core/callback_side_caching>`) or in the module
# (:doc:`Module-side caching </examples/core/module_side_caching>`).
