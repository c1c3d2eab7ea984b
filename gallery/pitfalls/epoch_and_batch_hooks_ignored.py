"""
``on_epoch_end``, ``on_batch_end`` and friends on Lightning 2.x
===============================================================

Rename the stage-less hooks after their stage: ``on_epoch_start`` and ``on_epoch_end`` (of modules and callbacks)
become ``on_train_epoch_start`` and ``on_train_epoch_end``, and a callback's ``on_batch_start`` and ``on_batch_end``
become ``on_train_batch_start`` and ``on_train_batch_end``, which take the batch. Where the old body was meant for
every loop, put it in ``on_validation_epoch_end`` and the other stages' hooks too:
:claim:`epoch-hooks-ran-for-every-loop`.

.. code-block:: python
   :caption: Before (Lightning 1.x)

   def on_epoch_end(self):  # module
       ...

   def on_batch_end(self, trainer, pl_module):  # callback
       ...

.. rst-class:: fix-label

After (Lightning 2.x):
"""

import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import BoringModel  # stands in for your own LightningModule


class StageHooksModule(BoringModel):
    def on_train_epoch_start(self):
        pass  # what on_epoch_start did

    def on_train_epoch_end(self):
        pass  # what on_epoch_end did


class StageHooksCallback(pl.Callback):
    def on_train_epoch_start(self, trainer, pl_module):
        pass

    def on_train_epoch_end(self, trainer, pl_module):
        pass

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        pass  # what on_batch_start did

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        pass  # what on_batch_end did


# %%
# .. dropdown:: Why they are silently skipped
#
#    Lightning's changelog: :claim:`stageless-hooks-removed`. Then :claim:`stageless-hooks-refused-on-1-9`,
#    and :claim:`stageless-hooks-ignored`.
#
# The old code, run today: nothing happens
# -----------------------------------------
# Each old hook counts its calls; one training epoch of 2 batches, with a validation run of 1 batch.
import warnings
from collections import Counter

import lightning
from lightning.pytorch.demos.boring_classes import RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


def fit(model, callback):
    """Fit ``model`` one epoch with ``callback``; return the warnings raised that name one of the old hooks."""
    trainer = pl.Trainer(
        max_epochs=1,
        num_sanity_val_steps=0,
        callbacks=[callback],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(model, DataLoader(RandomDataset(32, 16), batch_size=8), DataLoader(RandomDataset(32, 8)))
    old = ("on_epoch_start", "on_epoch_end", "on_batch_start", "on_batch_end")
    return [w for w in caught if any(name in str(w.message) for name in old)]


class OldModule(BoringModel):
    def __init__(self):
        super().__init__()
        self.calls = Counter()

    def on_epoch_start(self):
        self.calls["on_epoch_start"] += 1

    def on_epoch_end(self):
        self.calls["on_epoch_end"] += 1


class OldCallback(pl.Callback):
    def __init__(self):
        self.calls = Counter()

    def on_epoch_start(self, trainer, pl_module):
        self.calls["on_epoch_start"] += 1

    def on_epoch_end(self, trainer, pl_module):
        self.calls["on_epoch_end"] += 1

    def on_batch_start(self, trainer, pl_module):
        self.calls["on_batch_start"] += 1

    def on_batch_end(self, trainer, pl_module):
        self.calls["on_batch_end"] += 1


old_model, old_callback = OldModule(), OldCallback()
old_warnings = fit(old_model, old_callback)
print(f"module calls: {dict(old_model.calls)}; callback calls: {dict(old_callback.calls)}")
print(f"warnings naming an old hook: {len(old_warnings)}")

# %%
# Above: how often each old hook ran in that fit, and how many warnings named one.

# sphinx_gallery_start_ignore
assert not old_model.calls and not old_callback.calls and old_warnings == [], (
    "the stage-less hooks were never called, and no warning named them"
)
# sphinx_gallery_end_ignore

# %%
# The proof: the stage hooks run
# ------------------------------
# The classes above, each hook counting its calls, with the old hooks still defined in the parent classes.


class NewModule(StageHooksModule, OldModule):
    def on_train_epoch_start(self):
        self.calls["on_train_epoch_start"] += 1

    def on_train_epoch_end(self):
        self.calls["on_train_epoch_end"] += 1


class NewCallback(StageHooksCallback, OldCallback):
    def on_train_epoch_start(self, trainer, pl_module):
        self.calls["on_train_epoch_start"] += 1

    def on_train_epoch_end(self, trainer, pl_module):
        self.calls["on_train_epoch_end"] += 1

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.calls["on_train_batch_start"] += 1

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.calls["on_train_batch_end"] += 1


new_model, new_callback = NewModule(), NewCallback()
fit(new_model, new_callback)
print(f"module calls: {dict(new_model.calls)}; callback calls: {dict(new_callback.calls)}")

# %%
# The output above counts each stage hook's calls; the old ones are still defined in the parent classes, and
# :claim:`stageless-hooks-ignored`.

# sphinx_gallery_start_ignore
assert new_model.calls == {"on_train_epoch_start": 1, "on_train_epoch_end": 1}
assert new_callback.calls == {
    "on_train_epoch_start": 1,
    "on_train_epoch_end": 1,
    "on_train_batch_start": 2,
    "on_train_batch_end": 2,
}
# sphinx_gallery_end_ignore
