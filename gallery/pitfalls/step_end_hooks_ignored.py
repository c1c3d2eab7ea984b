"""
``training_step_end`` and friends on Lightning 2.x
==================================================

Instead of ``training_step_end(self, step_output)``, ``validation_step_end`` and ``test_step_end``: code that
changes what the step returns goes at the end of ``training_step`` and friends, before their ``return``; code that
only reads the step's output (logging it, collecting it) goes in the batch-end hooks, below.

.. code-block:: python
   :caption: Before (Lightning 1.x)

   def training_step_end(self, step_output):
       ...  # what you did with the step's output
       return step_output

.. rst-class:: fix-label

After (Lightning 2.x):
"""

from lightning.pytorch.demos.boring_classes import BoringModel  # stands in for your own LightningModule


class BatchEndHooks(BoringModel):
    def on_train_batch_end(self, outputs, batch, batch_idx):
        pass  # what training_step_end did with the step's output

    def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        pass  # what validation_step_end did

    def on_test_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        pass  # what test_step_end did


# %%
# :doc:`Empty outputs </examples/pitfalls/empty_outputs>` shows what each batch-end hook receives.
#
# .. dropdown:: Why they are silently skipped
#
#    Lightning's changelog: :claim:`step-end-hooks-removed-in-2-0`. :claim:`Step-end-hooks-ignored`.
#    :claim:`Step-end-hooks-ran-on-1-x`.
#
# The old code, run today: nothing happens
# -----------------------------------------
# Each old hook increments a counter. Three training, three validation and three test batches.
import warnings

import lightning
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import RandomDataset
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
# Three batches in every stage, and :claim:`step-end-hooks-ignored`.

# sphinx_gallery_start_ignore
assert trainer.global_step == 3
assert old.calls == {"train": 0, "validation": 0, "test": 0} and step_end_warnings == [], (
    "the *_step_end hooks were never called, and no warning named them"
)
# sphinx_gallery_end_ignore

# %%
# The proof: the batch-end hooks' calls
# -------------------------------------
# The same three stages with ``BatchEndHooks``, each hook counting its calls, and work moved to the end of
# ``training_step`` counted too.


class CountedBatchEndHooks(BatchEndHooks):
    def __init__(self):
        super().__init__()
        self.calls = dict.fromkeys(STAGES, 0)
        self.in_step = 0

    def training_step(self, batch, batch_idx):
        output = super().training_step(batch, batch_idx)
        self.in_step += 1  # work moved to the end of the step
        return output

    def on_train_batch_end(self, outputs, batch, batch_idx):
        super().on_train_batch_end(outputs, batch, batch_idx)
        self.calls["train"] += 1

    def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        super().on_validation_batch_end(outputs, batch, batch_idx, dataloader_idx)
        self.calls["validation"] += 1

    def on_test_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        super().on_test_batch_end(outputs, batch, batch_idx, dataloader_idx)
        self.calls["test"] += 1


new = CountedBatchEndHooks()
trainer, _ = fit_and_test(new)
print(f"training steps: {trainer.global_step}; batch-end calls: {new.calls}; work done in training_step: {new.in_step}")

# %%
# Every replacement ran once per batch.

# sphinx_gallery_start_ignore
assert new.calls == {"train": 3, "validation": 3, "test": 3}, "each batch-end hook ran once per batch of its stage"
assert new.in_step == trainer.global_step == 3
# sphinx_gallery_end_ignore
