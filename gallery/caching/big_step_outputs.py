"""
Big per-step outputs: what a cache holds until it is cleared
============================================================

A cache you write in place of the old ``outputs`` list is yours: it holds every tensor you append until you
clear it. This page measures the bytes five caches hold during one epoch -- whole per-step tensors, a slice
of them, a copy of the slice, one scalar per step in two ways -- and after ``.clear()``.
"""

# %%
# Measuring a cache
# -----------------
# This page counts bytes by *storage*, not by tensor; the checks below say which of the cached tensors share one.
# The bytes a cache holds are the sizes of its distinct storages (``untyped_storage().nbytes()``, counted once per
# storage ``data_ptr``).
import weakref

import lightning
import lightning.pytorch as pl
import matplotlib.pyplot as plt
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


def storage_bytes(tensors):
    """Bytes of the distinct storages behind ``tensors`` (deduplicated by storage ``data_ptr``)."""
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
    return sum(storages.values())


# %%
# Five caches
# -----------
# Each training step appends to five caches: the whole batch (``(64, 32)`` float32), its first two columns
# as a slice, a copy of that slice, the loss as ``loss.detach()``, and the loss as a new float64 scalar.
# After every step the module measures each cache; ``on_train_epoch_end`` measures once more, clears, and
# keeps weak references to check nothing else holds the tensors.
BATCH, FEATURES, STEPS = 64, 32, 8


class StepCaches(BoringModel):
    def __init__(self):
        super().__init__()
        self.caches = {"whole batch": [], "slice": [], "slice copy": [], "loss.detach()": [], "float64 scalar": []}
        self.bytes_per_step = {name: [] for name in self.caches}

    def training_step(self, batch, batch_idx):
        output = super().training_step(batch, batch_idx)
        self.caches["whole batch"].append(batch.detach())
        self.caches["slice"].append(batch[:, :2].detach())
        self.caches["slice copy"].append(batch[:, :2].detach().clone())
        self.caches["loss.detach()"].append(output["loss"].detach())
        self.caches["float64 scalar"].append(output["loss"].detach().to(torch.float64))
        for name, cache in self.caches.items():
            self.bytes_per_step[name].append(storage_bytes(cache))
        return output

    def on_train_epoch_end(self):
        self.before_clear = {name: storage_bytes(cache) for name, cache in self.caches.items()}
        self.refs = [weakref.ref(t) for cache in self.caches.values() for t in cache]
        for cache in self.caches.values():
            cache.clear()
        self.after_clear = {name: storage_bytes(cache) for name, cache in self.caches.items()}


model = StepCaches()
trainer = pl.Trainer(
    max_epochs=1,
    limit_val_batches=0,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, DataLoader(RandomDataset(FEATURES, BATCH * STEPS), batch_size=BATCH))
alive_after_clear = sum(ref() is not None for ref in model.refs)

for name in model.caches:
    print(f"{name:>15}: {model.before_clear[name]:6d} bytes at epoch end, {model.after_clear[name]} after clear()")
print(f"cached tensors still alive after clear(): {alive_after_clear}")

# %%
# Bytes held, step by step
# ------------------------
fig, ax = plt.subplots(figsize=(7, 3.6))
for name, values in model.bytes_per_step.items():
    ax.plot(range(1, STEPS + 1), values, marker="o", label=name)
ax.set_yscale("symlog", linthresh=64)
ax.set_xlabel("training step")
ax.set_ylabel("bytes held by the cache")
ax.set_title("Caches grow until cleared in on_train_epoch_end")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# The conclusion, asserted
# ------------------------
# Here the cache of whole batches holds ``STEPS`` times the ``K`` bytes of one batch until cleared, and every cache
# holds nothing after: :claim:`cleared-cache-frees`. :claim:`Slice-keeps-whole-storage`. The float64 copy of the loss
# holds one element, 8 bytes, per step, and ``loss.detach()`` more:
# :claim:`mse-loss-keeps-elementwise-buffer`. The :doc:`memory page
# </examples/performance/retained_memory>` measures the forms that keep one element.
K = BATCH * FEATURES * 4  # bytes of one float32 batch
assert model.before_clear["whole batch"] == STEPS * K
assert model.bytes_per_step["whole batch"] == [step * K for step in range(1, STEPS + 1)]
assert model.before_clear["slice"] == STEPS * K and model.before_clear["slice copy"] == STEPS * BATCH * 2 * 4, (
    "a slice keeps the whole batch's storage, its clone only its own elements"
)
assert model.before_clear["float64 scalar"] == 8 * STEPS
assert model.before_clear["loss.detach()"] == STEPS * BATCH * 2 * 4, (
    "BoringModel's loss.detach() keeps the (64, 2) buffer of each step"
)
assert all(value == 0 for value in model.after_clear.values()) and alive_after_clear == 0, (
    "after clear() no cached tensor is alive"
)
