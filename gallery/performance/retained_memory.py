"""
Retained memory at epoch end
============================

**The conclusion first:** the figure shows the tensor bytes each way of computing an epoch-end value keeps at the
end of an epoch, against the steps in it, as measured further down this page; the sentences under it say what it
shows, each one checked by this page's asserts.

.. image:: /examples/performance/images/sphx_glr_retained_memory_001.png
   :alt: Tensor bytes retained at epoch end against steps in the epoch, log-log, for the two model shapes:
         the old contract grows far above the three replacements when steps return logits.

:claim:`Replacements-keep-one-element-per-step`, and :claim:`hundredfold-with-logits`.
:claim:`Old-contract-bytes-per-step`. The form of the cached loss matters: :claim:`mse-loss-keeps-elementwise-buffer`,
while :claim:`detach-clone-keeps-one-element`.

The page measures the old ``outputs`` contract, module-side caching, callback-side caching and a torchmetrics metric
for epochs of 100 to 10,000 steps, and what one cached loss keeps, form by form. What each approach costs in time is
measured on :doc:`Time per epoch of each approach </examples/performance/time_per_epoch>`.
"""

# %%
# What "the old contract" is on this page
# ---------------------------------------
# Since :claim:`epoch-end-hooks-removed-in-2-0`, this page reproduces the old list itself. The recorded
# runs of the old releases say what that was: :claim:`old-outputs-on-1-9-5`;
# :claim:`old-list-loss-detached-copy`; :claim:`old-list-kept-until-training-epoch-end`. The run below checks that
# :claim:`closure-result-outputs-on-2x`: a callback that appends that dictionary in ``on_train_batch_end`` keeps the
# old list's entries.
import ctypes
import gc

import lightning
import lightning.pytorch as pl
import matplotlib.pyplot as plt
import psutil
import torch
import torchmetrics
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loops.optimization.automatic import ClosureResult
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

# sphinx_gallery_dummy_images = 1
print(f"Lightning {lightning.__version__}")
print(f"torchmetrics {torchmetrics.__version__}, torch {torch.__version__}")
torch.set_num_threads(1)

FEATURES, CLASSES, BATCH = 32, 10, 64


def retained_bytes(cache):
    """Bytes of tensor data that ``cache`` keeps alive.

    ``cache`` is any nesting of lists, tuples and dicts with tensors as leaves. Every tensor's storage is
    counted once, however many tensors view it (storages are told apart by ``untyped_storage().data_ptr()``).
    Returns bytes (``int``): the storages alone -- the RSS view below counts the whole process.
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
# per-sample logits (``BATCH`` x ``CLASSES``, detached: for logits returned attached, see :doc:`Extra keys of
# outputs keep their autograd graph </examples/caching/outputs_keep_graph>`). With ``caches_loss`` the
# module itself appends ``loss.detach().clone()``, one element, as the module-side recipes do: that is module-side
# caching (what each form of the cached loss keeps is measured below).


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
            self.step_losses.append(loss.detach().clone())
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
    """The old list, as this page reproduces it: every batch's ``outputs`` dictionary, appended in
    ``on_train_batch_end`` and cleared in ``on_train_epoch_end`` (see "the old contract" above)."""

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
    """Callback-side caching: ``on_train_batch_end`` appends one scalar per step."""

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
    """torchmetrics: the step's loss goes into a ``MeanMetric``."""

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
# Real one-epoch fits of 20 and 100 steps, on the installed Lightning, for every approach and the no-cache
# baseline: each notes the bytes of its cache at the end of the epoch.


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
# The ``outputs`` of 2.x and the old contract's list
# --------------------------------------------------
# One ``training_step`` through Lightning's own ``ClosureResult``, which the long epochs below use to build
# ``outputs`` by hand (they check that it keeps exactly the bytes of real fits): what the dictionary holds.
probe = Classifier(returns_logits=True)
batch = (torch.randn(BATCH, FEATURES), torch.randint(CLASSES, (BATCH,)))
step_output = probe.training_step(batch, 0)
kept = ClosureResult.from_training_step_output(step_output).asdict()
print(f"kept keys: {sorted(kept)}; loss requires grad: {kept['loss'].requires_grad}")
assert (
    sorted(kept) == ["logits", "loss"]
    and not kept["loss"].requires_grad
    and kept["loss"].untyped_storage().data_ptr() != step_output["loss"].untyped_storage().data_ptr()
    and kept["logits"] is step_output["logits"]
), "outputs holds a detached copy of the loss and the other keys as training_step returned them"


# %%
# What one cached loss keeps
# --------------------------
# A loss is a 0-d tensor, one element; the bytes below are those of its *storage*, as everywhere on this page.
# Two losses here: ``BoringModel``'s, the loss of this guide's recipe pages, and the ``F.cross_entropy`` of this
# page's classifier. For each, one training step of a real fit: the storage of the loss ``training_step`` returned,
# of the forms a module can cache, and of the ``outputs["loss"]`` of ``on_train_batch_end`` (``.item()`` is a
# Python float: no tensor storage).


def storage_bytes(value):
    """Bytes of the storage a tensor keeps alive; 0 for a Python number."""
    return value.untyped_storage().nbytes() if isinstance(value, torch.Tensor) else 0


class LossForms(pl.Callback):
    """Notes, in the first step, the storage of each form of the loss the module returned, and of ``outputs``."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        loss = pl_module.last_loss
        self.bytes = {  # the columns: the loss, its forms, and outputs["loss"]
            "loss": storage_bytes(loss),
            ".detach()": storage_bytes(loss.detach()),
            "+.clone()": storage_bytes(loss.detach().clone()),
            ".item()": storage_bytes(loss.item()),
            "outputs": storage_bytes(outputs["loss"]),
        }


def keeps_last_loss(module_class):
    class KeepsLastLoss(module_class):
        def training_step(self, batch, batch_idx):
            output = super().training_step(batch, batch_idx)
            self.last_loss = output["loss"]  # for the check, beside the module's own code
            return output

    return KeepsLastLoss


per_entry = {}
for batch_size in (64, 256):
    for name, module, data in (
        ("BoringModel", keeps_last_loss(BoringModel)(), RandomDataset(32, batch_size)),
        (
            "classifier",
            keeps_last_loss(Classifier)(returns_logits=False),
            TensorDataset(torch.randn(batch_size, FEATURES), torch.randint(CLASSES, (batch_size,))),
        ),
    ):
        forms = LossForms()
        trainer = pl.Trainer(
            max_steps=1,
            callbacks=[forms],
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(module, DataLoader(data, batch_size=batch_size))
        per_entry[name, batch_size] = forms.bytes
wide = torch.randn(256, 1000, requires_grad=True)
wide_loss = F.mse_loss(wide, torch.ones_like(wide))
print("Loss storage kept, in bytes (BoringModel: F.mse_loss, classifier: F.cross_entropy);")
print("'outputs' is the outputs['loss'] that on_train_batch_end receives.")
print(f"{'':<30}" + "".join(f"{form:>10}" for form in forms.bytes))
for (name, batch_size), forms_bytes in per_entry.items():
    print(f"{name + f', batch {batch_size}':<30}" + "".join(f"{n:>10,}" for n in forms_bytes.values()))
print(f"F.mse_loss over (256, 1000) outputs: .detach() keeps {storage_bytes(wide_loss.detach()):,} bytes")

# %%
# :claim:`Mse-loss-keeps-elementwise-buffer` (:claim:`detach-copies-nothing`), while
# :claim:`detach-clone-keeps-one-element`. :claim:`Callback-outputs-loss-one-element`, and
# :claim:`cross-entropy-one-element`. So a module that caches a scalar of ``BoringModel``'s kind caches
# ``loss.detach().clone()`` (or ``loss.item()``, a plain float), as the approaches below do.
mse_bytes_64, mse_bytes_256 = per_entry["BoringModel", 64][".detach()"], per_entry["BoringModel", 256][".detach()"]
mse_bytes_wide = storage_bytes(wide_loss.detach())
assert (
    all(per_entry["BoringModel", b]["loss"] == per_entry["BoringModel", b][".detach()"] for b in (64, 256))
    and mse_bytes_64 == 64 * 2 * 4
    and mse_bytes_256 == 256 * 2 * 4
    and mse_bytes_wide == 256 * 1000 * 4
), "F.mse_loss's loss and its .detach() keep the whole buffer"
clone_bytes = per_entry["BoringModel", 64]["+.clone()"]
assert (
    {forms_bytes["+.clone()"] for forms_bytes in per_entry.values()} == {clone_bytes}
    and clone_bytes == 4
    and all(forms_bytes[".item()"] == 0 for forms_bytes in per_entry.values())
), ".detach().clone() keeps one float32 element and .item() no tensor"
assert all(forms_bytes["outputs"] == 4 for forms_bytes in per_entry.values()), (
    "the loss on_train_batch_end receives is a one-element copy"
)
assert all(per_entry["classifier", b][".detach()"] == 4 for b in (64, 256)), "F.cross_entropy's loss is one element"

# %%
# Long epochs without a Trainer
# -----------------------------
# The long epochs (up to 10,000 steps) call the same methods directly -- the module's step, then
# ``ClosureResult.from_training_step_output(...).asdict()`` as above, then each approach's batch-end method -- under
# ``torch.no_grad()`` and without optimizer steps. The same driver is first run for 20 and 100 steps and must match
# the Trainer's bytes exactly: that check is what licenses the shortcut, and it keeps this page quick to run.
#
# Process RSS (``psutil``) is the second view, for the logits model: the memory of the whole process, where the
# byte count adds up only the storages of the cached tensors (``retained_bytes`` above). There each approach
# fills its cache alone, every cache stays alive until all are measured, and memory freed before a pass is
# handed back to the system (``malloc_trim``), so that less of it is there for a cache to grow into unseen.
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


small = {
    shape: drive(["no cache", *APPROACHES], returns_logits, TRAINER_STEPS, keep_alive=[])
    for shape, returns_logits in SHAPES.items()
}
assert all(
    small[shape][name][steps][0] == trainer_bytes[shape, name, steps]
    for shape in SHAPES
    for name in small[shape]
    for steps in TRAINER_STEPS
), "driven by hand, every approach keeps exactly the bytes it kept in the Trainer's fits"

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
# The figure at the top of this page plots, for each epoch length, the bytes of the tensors each approach keeps at
# epoch end.
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
# Bytes per step
# --------------
# :claim:`Linear-growth`: the per-step cost is the slope between the first and last checkpoints, the constant
# what is left at zero steps. :claim:`Old-contract-bytes-per-step`.
OLD = "old contract (1.x outputs)"
REPLACEMENTS = ("module-side cache", "callback-side cache", "torchmetrics MeanMetric")
per_step, constant = {}, {}
for (shape, name), measured in direct.items():
    n0, n1 = CHECKPOINTS[0], CHECKPOINTS[-1]
    b0, b1 = measured[n0][0], measured[n1][0]
    per_step[shape, name] = (b1 - b0) / (n1 - n0)
    constant[shape, name] = b0 - per_step[shape, name] * n0
    print(f"{name:<27} {shape:<14} {per_step[shape, name]:>7.1f} B/step + {constant[shape, name]:>3.0f} B")
logits_bytes = BATCH * CLASSES * 4  # float32 logits of one batch
assert all(
    b == constant[key] + per_step[key] * n for key, measured in direct.items() for n, (b, _) in measured.items()
), "every approach keeps a constant plus a fixed number of bytes per step"
old_bytes_loss, old_bytes_logits = per_step["loss only", OLD], per_step["loss + logits", OLD]
assert old_bytes_loss == 4 and old_bytes_logits == logits_bytes + 4 == BATCH * CLASSES * 4 + 4, (
    "the old contract keeps, per step, the bytes of what training_step returned"
)

# %%
# The headline, asserted: :claim:`replacements-keep-one-element-per-step`, and :claim:`hundredfold-with-logits`.
cache_bytes_per_step, metric_bytes = (
    per_step["loss + logits", REPLACEMENTS[0]],
    constant["loss + logits", REPLACEMENTS[2]],
)
assert (
    all(
        (per_step[shape, name], constant[shape, name])
        == ((0, metric_bytes) if name == REPLACEMENTS[2] else (cache_bytes_per_step, 0))
        for shape in SHAPES
        for name in REPLACEMENTS
    )
    and cache_bytes_per_step == 4
    and metric_bytes == 2 * 4
), "the replacements keep one float32 element per step, or a constant 8 bytes"
times_fewer = min(
    direct["loss + logits", OLD][n][0] / direct["loss + logits", name][n][0]
    for name in REPLACEMENTS
    for n in CHECKPOINTS
    if n >= 1_000
)
assert times_fewer >= 100, (
    "from 1,000 steps each replacement keeps at least 100 times fewer bytes than the old contract"
)

# %%
# The same caches in process RSS
# ------------------------------
# RSS growth while each cache filled (MiB, 2**20 bytes). It counts the whole process, not only the storages the
# byte count adds up, but it is coarse: only what stands far above its noise is asserted, the old contract's growth
# against the others'.
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
print(f"callback-side cache: {scalar_total / 1e6:.0f} MB of tensor data =")
print(f"  {STEPS:,} x {per_step['loss + logits', 'callback-side cache']:.0f} bytes,")
print(f"  plus a tensor object around each of the {STEPS:,} elements")
metric_bytes = direct["loss + logits", "torchmetrics MeanMetric"][CHECKPOINTS[-1]][0]
print(f"torchmetrics MeanMetric: {metric_bytes} bytes, whatever the epoch's length")
assert old_total > 1e12 and scalar_total == 4 * STEPS
