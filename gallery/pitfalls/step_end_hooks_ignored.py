"""
``training_step_end`` and friends on Lightning 2.x
==================================================

This page trains, validates and tests a module that still defines ``training_step_end``, ``validation_step_end``
and ``test_step_end``, and counts their calls; then the replacements: the batch-end hooks, or the work done at the
end of the step itself.

Lightning's changelog: :claim:`step-end-hooks-removed-in-2-0`. Unlike the removed epoch-end hooks,
:claim:`step-end-hooks-ignored`: the code in them simply never runs.
"""

# %%
# The symptom: nothing happens
# ----------------------------
# Each old hook increments a counter. Three training, three validation and three test batches.
import warnings

import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

train_loader = DataLoader(RandomDataset(32, 24), batch_size=8)
val_loader = DataLoader(RandomDataset(32, 24), batch_size=8)
test_loader = DataLoader(RandomDataset(32, 24), batch_size=8)
STAGES = ("train", "validation", "test")


def fit_and_test(model):
    """Fit one epoch (no sanity check) and test; return the warnings raised that name a ``*_step_end`` hook."""
    trainer = pl.Trainer(
        max_epochs=1,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(model, train_loader, val_loader)
        trainer.test(model, test_loader, verbose=False)
    return trainer, [str(w.message) for w in caught if "step_end" in str(w.message)]


class OldStepEnd(BoringModel):
    def __init__(self):
        super().__init__()
        self.calls = dict.fromkeys(STAGES, 0)

    def training_step_end(self, step_output):
        self.calls["train"] += 1
        return step_output

    def validation_step_end(self, step_output):
        self.calls["validation"] += 1
        return step_output

    def test_step_end(self, step_output):
        self.calls["test"] += 1
        return step_output


old = OldStepEnd()
trainer, step_end_warnings = fit_and_test(old)
print(f"training steps: {trainer.global_step}; *_step_end calls: {old.calls}")
print(f"warnings that mention a *_step_end hook: {step_end_warnings}")

# %%
# Three batches ran in every stage, no hook was called, and Lightning said nothing about them.
assert trainer.global_step == 3
assert old.calls == {"train": 0, "validation": 0, "test": 0} and step_end_warnings == [], (
    "the *_step_end hooks were never called, and no warning named them"
)

# %%
# The cause
# ---------
# To Lightning 2.x they are ordinary methods. :claim:`Step-end-hooks-ran-on-1-x`.
#
# The fix: the batch-end hooks, or the step itself
# ------------------------------------------------
# The batch-end hooks take the step's output (:doc:`Empty outputs </examples/pitfalls/empty_outputs>` shows what
# each receives); work that needs only the step's own values can also move to the end of ``training_step`` and
# friends.


class BatchEndHooks(BoringModel):
    def __init__(self):
        super().__init__()
        self.calls = dict.fromkeys(STAGES, 0)
        self.in_step = 0

    def training_step(self, batch, batch_idx):
        output = super().training_step(batch, batch_idx)
        self.in_step += 1  # work moved to the end of the step
        return output

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.calls["train"] += 1

    def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        self.calls["validation"] += 1

    def on_test_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        self.calls["test"] += 1


new = BatchEndHooks()
trainer, _ = fit_and_test(new)
print(f"training steps: {trainer.global_step}; batch-end calls: {new.calls}; work done in training_step: {new.in_step}")

# %%
# Every replacement ran once per batch.
assert new.calls == {"train": 3, "validation": 3, "test": 3}, "each batch-end hook ran once per batch of its stage"
assert new.in_step == trainer.global_step == 3
