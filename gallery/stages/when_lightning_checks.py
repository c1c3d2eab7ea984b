"""
When Lightning notices a removed epoch-end hook
===============================================

This page defines each of the old ``training_epoch_end``, ``validation_epoch_end`` and ``test_epoch_end`` in
turn, fits the model (and tests it), and records how many training steps were taken before the error.

:claim:`Fit-refuses-removed-training-and-validation-hooks`; :claim:`test-epoch-end-refused-only-by-test`.
"""

# %%
# Set-up
# ------
import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


def make_trainer(**kwargs):
    return pl.Trainer(
        max_epochs=1,
        **kwargs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


train_loader = DataLoader(RandomDataset(32, 32), batch_size=8)
test_loader = DataLoader(RandomDataset(32, 16), batch_size=8)


def run_and_capture(entry_point, *args):
    """Call ``entry_point(*args)``; print and return what it raised, or ``None``."""
    try:
        entry_point(*args)
    except Exception as err:  # whatever Lightning raises: the checks below say which
        print(f"{type(err).__name__}: {err}")
        return err
    return None


class WithTrainingEpochEnd(BoringModel):
    def training_epoch_end(self, outputs):
        pass


class WithValidationEpochEnd(BoringModel):
    def validation_epoch_end(self, outputs):
        pass


class WithTestEpochEnd(BoringModel):
    def test_epoch_end(self, outputs):
        pass


# %%
# ``training_epoch_end`` and ``trainer.fit``
# ------------------------------------------
trainer = make_trainer()
error = run_and_capture(trainer.fit, WithTrainingEpochEnd(), train_loader)
print(f"training steps taken: {trainer.global_step}")
assert isinstance(error, NotImplementedError) and trainer.global_step == 0, (
    "trainer.fit refuses training_epoch_end before the first training step"
)

# %%
# ``validation_epoch_end`` and ``trainer.fit``, without validation data
# ---------------------------------------------------------------------
# :claim:`Limit-val-batches-zero-runs-no-validation`.
control = make_trainer(limit_val_batches=0)
control.fit(BoringModel(), train_loader)
print(
    f"plain BoringModel: {control.global_step} training steps, "
    f"{control.fit_loop.epoch_loop.val_loop.batch_progress.total.completed} validation batches"
)
assert control.fit_loop.epoch_loop.val_loop.batch_progress.total.completed == 0, (
    "with limit_val_batches=0 a plain BoringModel's fit ran no validation batch"
)

# %%
# The same setting with ``validation_epoch_end`` defined: :claim:`fit-refuses-validation-epoch-end-without-batches`.
trainer = make_trainer(limit_val_batches=0)
error = run_and_capture(trainer.fit, WithValidationEpochEnd(), train_loader)
print(f"training steps taken: {trainer.global_step}")
assert isinstance(error, NotImplementedError) and "validation_epoch_end" in str(error) and trainer.global_step == 0, (
    "trainer.fit refuses validation_epoch_end before the first training step, even with no validation batch to run"
)

# %%
# ``test_epoch_end``: after training, at ``trainer.test``
# -------------------------------------------------------
# :claim:`Test-epoch-end-refused-only-by-test` -- typically at the very end of a long run.
model = WithTestEpochEnd()
trainer = make_trainer()
fit_error = run_and_capture(trainer.fit, model, train_loader)
print(f"trainer.fit raised: {fit_error!r}; training steps taken: {trainer.global_step}")
test_error = run_and_capture(trainer.test, model, test_loader)
print(f"test batches run: {trainer.test_loop.batch_progress.total.completed}")

assert (
    fit_error is None
    and trainer.global_step == trainer.num_training_batches == 4
    and isinstance(test_error, NotImplementedError)
    and "test_epoch_end" in str(test_error)
    and trainer.test_loop.batch_progress.total.completed == 0
), "trainer.fit trains a model with test_epoch_end; trainer.test refuses it before its first batch"

# %%
# Summary
# -------
# :claim:`Fit-refuses-removed-training-and-validation-hooks`; :claim:`test-epoch-end-refused-only-by-test`. Search a
# code base for all three names before the first long run (see the pages on
# :doc:`test_epoch_end </examples/stages/test_epoch_end>` and
# :doc:`validation_epoch_end </examples/stages/validation_epoch_end>`).
