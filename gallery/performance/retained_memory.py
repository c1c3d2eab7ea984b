"""
Retained memory at epoch end
============================

**The conclusion first:** the old ``outputs`` contract keeps every step's returned tensors until the epoch
ends, so what it holds grows with the length of the epoch and the size of each step's output; module-side
caching, callback-side caching and a torchmetrics metric keep a scalar per step, or nothing per step. With a
model that returns its logits, from 1,000 steps on every replacement keeps at least 100 times fewer bytes --
asserted below, on the Lightning that built this page. The figure is measured further down this page:

.. image:: /examples/performance/images/sphx_glr_retained_memory_001.png
   :alt: Tensor bytes retained at epoch end against steps in the epoch, log-log, for the two model shapes:
         the old contract grows far above the three replacements when steps return logits.

Lightning 1.x kept the dictionary every ``training_step`` returned until the epoch ended, so that
``training_epoch_end(outputs)`` could receive it. This page measures how many bytes that contract holds at
epoch end, next to module-side caching, callback-side caching and a torchmetrics metric, for epochs of 100 to
10,000 steps. What each approach costs in time is measured on
:doc:`Time per epoch of each approach </examples/performance/time_per_epoch>`.
"""

# %%
# What "the old contract" is on this page
# ---------------------------------------
# The Lightning this page runs on no longer keeps outputs, so the page reproduces exactly what 1.x kept.
# Lightning 1.5 to 1.9 (``TrainingEpochLoop.advance`` in ``training_epoch_loop.py``) appended, for every batch,
# the dictionary ``ClosureResult.asdict()`` built from what ``training_step`` returned -- the loss detached and
# cloned, every other key as returned -- whenever ``training_epoch_end`` was overridden, and let it go only when
# the next epoch started. Lightning 2.x still builds that dictionary with the same ``ClosureResult`` and passes
# it to ``on_train_batch_end`` as ``outputs``: a callback that appends it there keeps what 1.x kept. The run
# below checks the two properties that matter for memory: the kept loss is detached, and it is a copy.
import ctypes
import gc

import lightning
import lightning.pytorch as pl
import matplotlib.pyplot as plt
import psutil
import torch
import torchmetrics
from lightning.pytorch.loops.optimization.automatic import ClosureResult
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

# sphinx_gallery_dummy_images = 1
print(f"Lightning {lightning.__version__}")
print(f"torchmetrics {torchmetrics.__version__}, torch {torch.__version__}")
torch.set_num_threads(1)  # the toy model's tensors are too small for more threads to help

FEATURES, CLASSES, BATCH = 32, 10, 64


def retained_bytes(cache):
    """Bytes of tensor data that ``cache`` keeps alive.

    ``cache`` is any nesting of lists, tuples and dicts with tensors as leaves. Every tensor's storage is
    counted once, however many tensors view it (storages are told apart by ``untyped_storage().data_ptr()``).
    Returns bytes (``int``); Python object overhead is not included -- the RSS view below shows it.
    """
    storages, pending = {}, [cache]
    while pending:
        item = pending.pop()
        if isinstance(item, torch.Tensor):
            storage = item.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return sum(storages.values())


# %%
# Two model shapes
# ----------------
# One linear classifier, two things ``training_step`` can return: only the loss, or the loss and the
# per-sample logits (``BATCH`` x ``CLASSES``, detached -- returning them attached would also keep each
# batch's autograd graph alive, which the byte count below would not even see). With ``caches_loss`` the
# module itself appends the detached loss: that is module-side caching.


class Classifier(pl.LightningModule):
    def __init__(self, returns_logits, caches_loss=False):
        super().__init__()
        self.layer = nn.Linear(FEATURES, CLASSES)
        self.returns_logits, self.caches_loss = returns_logits, caches_loss
        self.step_losses = []  # the module-side cache

    def training_step(self, batch, batch_idx):
        features, labels = batch
        logits = self.layer(features)
        loss = F.cross_entropy(logits, labels)
        if self.caches_loss:
            self.step_losses.append(loss.detach())
        return {"loss": loss, "logits": logits.detach()} if self.returns_logits else {"loss": loss}

    def on_train_epoch_end(self):
        if self.caches_loss:
            self.epoch_mean = torch.stack(self.step_losses).mean().item()
            self.step_losses.clear()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


# %%
# The approaches
# --------------
# Each one computes the epoch's mean loss at epoch end and says what it holds until then (``cache``).
# The measurement is taken in ``on_train_epoch_end``, just before the cache is cleared: that is the peak.


class Approach(pl.Callback):
    """Base: ``cache(pl_module)`` is what the approach keeps; ``retained`` its bytes at the last epoch end."""

    module_caches = False

    def cache(self, pl_module):
        return []

    def on_train_epoch_end(self, trainer, pl_module):
        self.retained = retained_bytes(self.cache(pl_module))


class NoCache(Approach):
    """The baseline: keeps nothing (and computes nothing)."""


class OldContract(Approach):
    """What Lightning 1.x kept: every batch's ``outputs`` dictionary, until the epoch ends."""

    def __init__(self):
        self.outputs = []

    def cache(self, pl_module):
        return self.outputs

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.outputs.append(outputs)

    def on_train_epoch_end(self, trainer, pl_module):
        super().on_train_epoch_end(trainer, pl_module)
        self.epoch_mean = torch.stack([out["loss"] for out in self.outputs]).mean().item()
        self.outputs.clear()


class ModuleCache(Approach):
    """Module-side caching: the module appends in ``training_step``; this callback only reads its cache."""

    module_caches = True

    def cache(self, pl_module):
        return pl_module.step_losses


class CallbackCache(Approach):
    """Callback-side caching: a detached scalar appended in ``on_train_batch_end``."""

    def __init__(self):
        self.losses = []

    def cache(self, pl_module):
        return self.losses

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.losses.append(outputs["loss"].detach())

    def on_train_epoch_end(self, trainer, pl_module):
        super().on_train_epoch_end(trainer, pl_module)
        self.epoch_mean = torch.stack(self.losses).mean().item()
        self.losses.clear()


class MetricMean(Approach):
    """torchmetrics: ``MeanMetric`` accumulates a running sum and weight; nothing per step is kept."""

    def __init__(self):
        self.mean = torchmetrics.MeanMetric()

    def cache(self, pl_module):
        return self.mean.metric_state

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.mean.update(outputs["loss"])

    def on_train_epoch_end(self, trainer, pl_module):
        super().on_train_epoch_end(trainer, pl_module)
        self.epoch_mean = self.mean.compute().item()
        self.mean.reset()


APPROACHES = {
    "old contract (1.x outputs)": OldContract,
    "module-side cache": ModuleCache,
    "callback-side cache": CallbackCache,
    "torchmetrics MeanMetric": MetricMean,
}
SHAPES = {"loss only": False, "loss + logits": True}
#: Line styles: equal curves (the scalar caches, and in the loss-only model the old contract) stay visible.
STYLES = {
    "old contract (1.x outputs)": {"marker": "o", "markersize": 9, "linewidth": 3},
    "module-side cache": {"marker": "s", "markersize": 6, "linestyle": "--"},
    "callback-side cache": {"marker": "^", "markersize": 4, "linestyle": ":"},
    "torchmetrics MeanMetric": {"marker": "D", "markersize": 4},
}

# %%
# Real epochs with a Trainer
# --------------------------
# Every approach (and the no-cache baseline) trains real one-epoch fits of 20 and 100 steps on the
# installed Lightning, and records what it holds at the end of each.


def fit(approach_cls, returns_logits, steps):
    """One epoch of ``steps`` batches; returns ``(approach, model)``."""
    torch.manual_seed(0)
    approach = approach_cls()
    model = Classifier(returns_logits, caches_loss=approach.module_caches)
    data = TensorDataset(torch.randn(steps * BATCH, FEATURES), torch.randint(CLASSES, (steps * BATCH,)))
    trainer = pl.Trainer(
        max_epochs=1,
        callbacks=[approach],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, DataLoader(data, batch_size=BATCH))
    assert trainer.global_step == steps
    return approach, model


TRAINER_STEPS = (20, 100)
trainer_bytes = {}  # (shape, approach, steps) -> retained bytes at epoch end
for shape, returns_logits in SHAPES.items():
    for name, approach_cls in {"no cache": NoCache, **APPROACHES}.items():
        for steps in TRAINER_STEPS:
            approach, model = fit(approach_cls, returns_logits, steps)
            trainer_bytes[shape, name, steps] = approach.retained
            if approach.module_caches:  # the module cleared its cache after the callback measured it
                assert model.step_losses == []

# %%
# Is the dictionary Lightning hands to ``on_train_batch_end`` really a detached copy of the loss, as the
# old contract's was? One ``training_step`` through Lightning's own ``ClosureResult`` answers it.
probe = Classifier(returns_logits=True)
batch = (torch.randn(BATCH, FEATURES), torch.randint(CLASSES, (BATCH,)))
step_output = probe.training_step(batch, 0)
kept = ClosureResult.from_training_step_output(step_output).asdict()
print(f"kept keys: {sorted(kept)}; loss requires grad: {kept['loss'].requires_grad}")
assert sorted(kept) == ["logits", "loss"] and not kept["loss"].requires_grad
assert kept["loss"].untyped_storage().data_ptr() != step_output["loss"].untyped_storage().data_ptr()
assert kept["logits"] is step_output["logits"]

# %%
# Long epochs without a Trainer
# -----------------------------
# Retained bytes depend only on what each step adds to the cache, not on how the step was scheduled. So the
# long epochs (up to 10,000 steps) call the same hooks directly -- ``training_step``, then Lightning's own
# ``ClosureResult`` to build ``outputs``, then each approach's ``on_train_batch_end`` -- under
# ``torch.no_grad()`` and without optimizer steps, which change the values but not the sizes of what is kept.
# The same driver is first run for 20 and 100 steps and must match the Trainer's bytes exactly: that check
# is what licenses the shortcut, and it keeps this page quick to run.
#
# Process RSS (``psutil``) is the second view, for the logits model: it includes what the byte count leaves
# out (the tensor and Python objects around each storage, the allocator's rounding). There each approach
# fills its cache alone, every cache stays alive until all are measured, and memory freed before a pass is
# handed back to the system (``malloc_trim``), so that less of it is there for a cache to grow into unseen.
# Not none: Python's and torch's allocators keep pools of their own, which ``malloc_trim`` does not return.
process = psutil.Process()
try:  # glibc: hand memory freed by earlier work back to the system, so that it cannot hide a cache's growth
    release_free_memory = ctypes.CDLL("libc.so.6").malloc_trim
except (OSError, AttributeError):  # another C library: RSS growth may then start late

    def release_free_memory(pad):
        return 0


CHECKPOINTS = (100, 300, 1_000, 3_000, 10_000)


def drive(names, returns_logits, checkpoints, keep_alive):
    """Run ``max(checkpoints)`` steps through the hooks of the approaches ``names``, sharing each step.

    Returns ``{name: {steps: (retained bytes, process RSS growth in bytes)}}`` at each checkpoint (the RSS
    growth is the sum over all ``names``: meaningful when there is one). The approaches and the model are
    appended to ``keep_alive``, so their memory stays allocated as long as the caller keeps that list.
    """
    torch.manual_seed(0)
    approaches = {name: APPROACHES.get(name, NoCache)() for name in names}
    model = Classifier(returns_logits, caches_loss=any(a.module_caches for a in approaches.values()))
    batch = (torch.randn(BATCH, FEATURES), torch.randint(CLASSES, (BATCH,)))
    measured = {name: {} for name in names}
    release_free_memory(0)
    rss_start = process.memory_info().rss
    with torch.no_grad():
        for step in range(1, max(checkpoints) + 1):
            outputs = ClosureResult.from_training_step_output(model.training_step(batch, step)).asdict()
            for approach in approaches.values():
                approach.on_train_batch_end(None, model, outputs, batch, step)
            if step in checkpoints:
                rss = process.memory_info().rss - rss_start
                for name, approach in approaches.items():
                    measured[name][step] = (retained_bytes(approach.cache(model)), rss)
    keep_alive.append((approaches, model))
    return measured


for shape, returns_logits in SHAPES.items():
    small = drive(["no cache", *APPROACHES], returns_logits, TRAINER_STEPS, keep_alive=[])
    for name, measured in small.items():
        for steps in TRAINER_STEPS:
            assert measured[steps][0] == trainer_bytes[shape, name, steps], (shape, name, steps)

direct = {}  # (shape, approach) -> {steps: (retained bytes, RSS growth)}
for name, measured in drive(list(APPROACHES), False, CHECKPOINTS, keep_alive=[]).items():
    direct["loss only", name] = measured
keep_alive = []
gc.collect()  # once: the passes themselves create no reference cycles, and a full collection is not free
for name in APPROACHES:
    direct["loss + logits", name] = drive([name], True, CHECKPOINTS, keep_alive)[name]
del keep_alive

# %%
# Bytes retained at epoch end
# ---------------------------
# The figure at the top of this page: tensor bytes each approach keeps at epoch end, for each epoch length.
for shape in SHAPES:
    print(f"training_step returns {shape}: tensor bytes at epoch end, by steps in the epoch")
    print(f"{'':<26}" + "".join(f"{n:>11,}" for n in CHECKPOINTS))
    for name in APPROACHES:
        print(f"{name:<26}" + "".join(f"{direct[shape, name][n][0]:>11,}" for n in CHECKPOINTS))

figure, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True, layout="constrained")
for ax, shape in zip(axes, SHAPES, strict=True):
    for name in APPROACHES:
        ax.loglog(CHECKPOINTS, [direct[shape, name][n][0] for n in CHECKPOINTS], label=name, **STYLES[name])
    ax.set(title=f"training_step returns {shape}", xlabel="steps in the epoch")
    ax.grid(True, which="major", alpha=0.3)
axes[0].set_ylabel("tensor bytes retained at epoch end")
figure.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=4)
plt.show()

# %%
# The headline, asserted: with the logits model and 1,000 steps or more, every replacement retains at
# least 100 times less than the old contract, and a scalar cache stays within 8 bytes per step plus a small
# constant (a float32 scalar is 4 bytes; ``MeanMetric`` keeps a constant two).
for n in CHECKPOINTS:
    old = direct["loss + logits", "old contract (1.x outputs)"][n][0]
    for name in ("module-side cache", "callback-side cache", "torchmetrics MeanMetric"):
        for shape in SHAPES:
            kept_bytes = direct[shape, name][n][0]
            assert kept_bytes <= 8 * n + 64, (shape, name, n, kept_bytes)
            if shape == "loss + logits" and n >= 1_000:
                assert old >= 100 * kept_bytes, (name, n, old, kept_bytes)
    assert (
        direct["loss + logits", "torchmetrics MeanMetric"][n][0]
        == direct["loss only", "torchmetrics MeanMetric"][100][0]
    )
assert direct["loss only", "torchmetrics MeanMetric"][100][0] == 2 * 4  # two float32 scalars: the sum and the weight

# %%
# Bytes per step
# --------------
# Retained bytes grow exactly linearly: the per-step cost is the slope between the first and last
# checkpoints, the constant what is left at zero steps. The old contract's per-step cost is the size of what
# ``training_step`` returned.
per_step = {}
for (shape, name), measured in direct.items():
    n0, n1 = CHECKPOINTS[0], CHECKPOINTS[-1]
    b0, b1 = measured[n0][0], measured[n1][0]
    per_step[shape, name] = (b1 - b0) / (n1 - n0)
    constant = b0 - per_step[shape, name] * n0
    assert all(b == constant + per_step[shape, name] * n for n, (b, _) in measured.items())
    print(f"{name:<27} {shape:<14} {per_step[shape, name]:>7.1f} B/step + {constant:>3.0f} B")
logits_bytes = BATCH * CLASSES * 4  # float32 logits of one batch
assert per_step["loss + logits", "old contract (1.x outputs)"] == logits_bytes + 4

# %%
# The same caches in process RSS
# ------------------------------
# RSS growth while each cache filled (MiB, 2**20 bytes). It counts what the byte count leaves out -- each
# cached scalar is a whole tensor object around its 4 bytes of data -- but it is coarse: the allocators hand out
# memory in pages and reuse pools that earlier work left, so the scalar caches' figures move from one run to
# the next, and two caches that hold the same data can differ. Only what stands far above that noise is
# asserted: the old contract's growth against the others'.
rss = {name: direct["loss + logits", name] for name in APPROACHES}
print(f"RSS growth (MiB) at {CHECKPOINTS[-1]:,} steps, and per step (bytes):")
for name, measured in rss.items():
    growth = measured[CHECKPOINTS[-1]][1]
    print(f"{name:<27} {growth / 2**20:>8.2f} MiB {growth / CHECKPOINTS[-1]:>8.1f} B/step")
rss_per_step = {name: measured[CHECKPOINTS[-1]][1] / CHECKPOINTS[-1] for name, measured in rss.items()}

figure, ax = plt.subplots(figsize=(6, 4.2), layout="constrained")
for name, measured in rss.items():
    ax.semilogx(CHECKPOINTS, [measured[n][1] / 2**20 for n in CHECKPOINTS], label=name, **STYLES[name])
ax.set(title="training_step returns loss + logits", xlabel="steps in the epoch", ylabel="process RSS growth (MiB)")
ax.grid(True, alpha=0.3)
ax.legend()
plt.show()
assert rss_per_step["old contract (1.x outputs)"] > 10 * rss_per_step["torchmetrics MeanMetric"]
assert rss_per_step["old contract (1.x outputs)"] > rss_per_step["callback-side cache"]

# %%
# A 1M-step epoch on a large model
# --------------------------------
# The measured per-step bytes scale with what each step returns. A classifier over 1,000 classes with
# batches of 256 returning its float32 logits, for one epoch of 1,000,000 steps:
STEPS, BIG_BATCH, BIG_CLASSES = 1_000_000, 256, 1_000
bytes_per_logit = (
    per_step["loss + logits", "old contract (1.x outputs)"] - per_step["loss only", "old contract (1.x outputs)"]
) / (BATCH * CLASSES)
old_total = STEPS * (per_step["loss only", "old contract (1.x outputs)"] + bytes_per_logit * BIG_BATCH * BIG_CLASSES)
scalar_total = STEPS * per_step["loss + logits", "callback-side cache"]
print(f"old contract: {old_total / 1e9:,.0f} GB of tensor data =")
print(
    f"  {STEPS:,} x ({per_step['loss only', 'old contract (1.x outputs)']:.0f} + "
    f"{bytes_per_logit:.0f} x {BIG_BATCH} x {BIG_CLASSES}) bytes"
)
print(f"callback-side scalar cache: {scalar_total / 1e6:.0f} MB of tensor data =")
print(f"  {STEPS:,} x {per_step['loss + logits', 'callback-side cache']:.0f} bytes,")
print(f"  plus a tensor object around each of the {STEPS:,} scalars")
metric_bytes = direct["loss + logits", "torchmetrics MeanMetric"][CHECKPOINTS[-1]][0]
print(f"torchmetrics MeanMetric: {metric_bytes} bytes, whatever the epoch's length")
assert old_total > 1e12 and scalar_total == 4 * STEPS
