"""
When Lightning notices a removed epoch-end hook
===============================================

Lightning 2.x checks for the removed ``training_epoch_end``, ``validation_epoch_end`` and ``test_epoch_end``
hooks itself, but only when a ``Trainer`` entry point starts that runs their stage: ``trainer.fit`` looks for
the first two, ``trainer.test`` for the third. This page runs each case and records how many training steps
were taken first.
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
# ``training_epoch_end``: refused by ``trainer.fit``
# --------------------------------------------------
trainer = make_trainer()
error = run_and_capture(trainer.fit, WithTrainingEpochEnd(), train_loader)
print(f"training steps taken: {trainer.global_step}")
assert isinstance(error, NotImplementedError)
assert trainer.global_step == 0

# %%
# ``validation_epoch_end``: refused by ``trainer.fit``, even without validation data
# ----------------------------------------------------------------------------------
# With ``limit_val_batches=0`` no validation runs at all: a plain ``BoringModel`` fitted with that setting
# runs zero validation batches.
control = make_trainer(limit_val_batches=0)
control.fit(BoringModel(), train_loader)
print(
    f"plain BoringModel: {control.global_step} training steps, "
    f"{control.fit_loop.epoch_loop.val_loop.batch_progress.total.completed} validation batches"
)
assert control.fit_loop.epoch_loop.val_loop.batch_progress.total.completed == 0

# %%
# The same setting with ``validation_epoch_end`` defined: refused all the same.
trainer = make_trainer(limit_val_batches=0)
error = run_and_capture(trainer.fit, WithValidationEpochEnd(), train_loader)
print(f"training steps taken: {trainer.global_step}")
assert isinstance(error, NotImplementedError)
assert "validation_epoch_end" in str(error)
assert trainer.global_step == 0

# %%
# ``test_epoch_end``: trains, then fails at ``trainer.test``
# ----------------------------------------------------------
# ``trainer.fit`` does not look for ``test_epoch_end``: the whole epoch trains. The error comes only when
# testing starts -- typically at the very end of a long run.
model = WithTestEpochEnd()
trainer = make_trainer()
fit_error = run_and_capture(trainer.fit, model, train_loader)
print(f"trainer.fit raised: {fit_error!r}; training steps taken: {trainer.global_step}")
test_error = run_and_capture(trainer.test, model, test_loader)
print(f"test batches run: {trainer.test_loop.batch_progress.total.completed}")

assert fit_error is None
assert trainer.global_step == trainer.num_training_batches == 4
assert isinstance(test_error, NotImplementedError)
assert "test_epoch_end" in str(test_error)
assert trainer.test_loop.batch_progress.total.completed == 0

# %%
# Summary
# -------
# A removed hook in the training or validation stage stops ``trainer.fit`` before any work; a
# ``test_epoch_end`` left behind survives the whole of training. Search a code base for all three names
# before the first long run (see the pages on :doc:`test_epoch_end </examples/stages/test_epoch_end>` and
# :doc:`validation_epoch_end </examples/stages/validation_epoch_end>`).
