"""
Time per epoch of each approach
===============================

Keeping every batch's outputs costs memory
(:doc:`Retained memory at epoch end </examples/performance/retained_memory>`); does any way of computing an epoch-end
value cost time? This page trains the same epochs with the old contract, module-side caching, callback-side caching and
a torchmetrics metric, next to a baseline that keeps nothing, and reports each epoch's time as a ratio to that baseline,
measured in the same run. It also checks the premise of the migration: all four compute the same epoch mean.
"""

# %%
# The model and the approaches
# ----------------------------
# The linear classifier of the memory page, in its two shapes: ``training_step`` returns only the loss, or
# the loss and the per-sample logits (batch x classes, detached). Each approach computes the epoch's mean
# loss at epoch end, the way the other pages of this guide show it.
import statistics
import time

import lightning
import lightning.pytorch as pl
import matplotlib.pyplot as plt
import torch
import torchmetrics
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

print(f"Lightning {lightning.__version__}")
print(f"torchmetrics {torchmetrics.__version__}, torch {torch.__version__}")
# One intra-op thread, as on the site: a downloaded copy of this page runs with the same setting on any machine.
torch.set_num_threads(1)

FEATURES, CLASSES, BATCH, STEPS = 32, 10, 64, 100


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
        self.epoch_ended = time.process_time()  # the end of the timed epoch (see below)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class NoCache(pl.Callback):
    """The baseline: keeps nothing and computes nothing."""

    module_caches = False


class OldContract(NoCache):
    """The old list, as this page reproduces it: every batch's ``outputs``, appended in ``on_train_batch_end``
    and averaged in ``on_train_epoch_end``."""

    def __init__(self):
        self.outputs = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.outputs.append(outputs)

    def on_train_epoch_end(self, trainer, pl_module):
        self.epoch_mean = torch.stack([out["loss"] for out in self.outputs]).mean().item()
        self.outputs.clear()


class ModuleCache(NoCache):
    """Module-side caching: the module appends in ``training_step`` and reduces in ``on_train_epoch_end``."""

    module_caches = True


class CallbackCache(NoCache):
    """Callback-side caching: ``on_train_batch_end`` appends one scalar per step."""

    def __init__(self):
        self.losses = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.losses.append(outputs["loss"].detach())

    def on_train_epoch_end(self, trainer, pl_module):
        self.epoch_mean = torch.stack(self.losses).mean().item()
        self.losses.clear()


class MetricMean(NoCache):
    """torchmetrics: the step's loss goes into a ``MeanMetric``."""

    def __init__(self):
        self.mean = torchmetrics.MeanMetric()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.mean.update(outputs["loss"])

    def on_train_epoch_end(self, trainer, pl_module):
        self.epoch_mean = self.mean.compute().item()
        self.mean.reset()


APPROACHES = {
    "no cache": NoCache,
    "old contract (1.x outputs)": OldContract,
    "module-side cache": ModuleCache,
    "callback-side cache": CallbackCache,
    "torchmetrics MeanMetric": MetricMean,
}
SHAPES = {"loss only": False, "loss + logits": True}

# %%
# Timed epochs
# ------------
# One epoch of ``STEPS`` batches per fit, timed from the callback hook ``on_train_epoch_start`` to the end of
# the module's ``on_train_epoch_end``: :claim:`plain-callbacks-before-module-train-epoch-end` (each fit checks it,
# below), so the time includes every approach's epoch-end reduction. The time is this process's CPU time
# (:func:`time.process_time`), which other programs on the machine inflate less than the wall clock. After one untimed
# warm-up fit, each approach runs three times, in rounds that alternate the order of the approaches, so that none always
# runs first. An approach's ratio is the median over the rounds of its epoch time divided by the baseline's in the same
# round: each epoch is compared with one measured moments apart.


class EpochStart(pl.Callback):
    def on_train_epoch_start(self, trainer, pl_module):
        self.time = time.process_time()

    def on_train_epoch_end(self, trainer, pl_module):
        self.module_hook_had_run = hasattr(pl_module, "epoch_ended")  # the module's hook sets it


def fit(approach_cls, returns_logits):
    """One seeded epoch of ``STEPS`` batches; returns ``(CPU seconds for the epoch, epoch mean loss or None)``."""
    torch.manual_seed(0)
    approach, start = approach_cls(), EpochStart()
    model = Classifier(returns_logits, caches_loss=approach.module_caches)
    data = TensorDataset(torch.randn(STEPS * BATCH, FEATURES), torch.randint(CLASSES, (STEPS * BATCH,)))
    trainer = pl.Trainer(
        max_epochs=1,
        callbacks=[start, approach],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, DataLoader(data, batch_size=BATCH))
    assert trainer.global_step == STEPS
    module_hook_last.append(not start.module_hook_had_run)
    return model.epoch_ended - start.time, getattr(model if approach.module_caches else approach, "epoch_mean", None)


module_hook_last = []  # per fit: the order of the module's and the callbacks' on_train_epoch_end, as a bool


for returns_logits in SHAPES.values():  # warm-up, not timed: one fit of each shape before the timed rounds
    fit(NoCache, returns_logits)
epochs, epoch_means = {}, {}  # (shape, approach) -> the CPU times of its epochs; -> epoch mean loss
for round_ in range(3):
    order = list(APPROACHES) if round_ % 2 == 0 else list(reversed(APPROACHES))
    for shape, returns_logits in SHAPES.items():
        for name in order:
            elapsed, epoch_means[shape, name] = fit(APPROACHES[name], returns_logits)
            epochs.setdefault((shape, name), []).append(elapsed)

assert all(module_hook_last), "in every fit the module's on_train_epoch_end ran after the plain callbacks'"

# %%
# Same result
# -----------
# Every approach computed the mean loss of the same seeded epoch; they agree to float32 rounding, as the check below
# asserts.
for shape in SHAPES:
    reference = epoch_means[shape, "old contract (1.x outputs)"]
    for name in list(APPROACHES)[1:]:
        print(f"{shape:<14} {name:<27} epoch mean loss {epoch_means[shape, name]:.6f}")
        assert abs(epoch_means[shape, name] - reference) <= 1e-5 * abs(reference), (shape, name)

# %%
# Time per epoch, as a ratio to the baseline
# ------------------------------------------
# The ratios are printed and plotted, not asserted: they depend on the machine that ran this page and on what else
# ran on it at the same time, and they change from one run to the next. For scale, the run also prints and shades
# how far apart the baseline's own three epochs were: a ratio inside that band is no difference this run can see.
# What each approach keeps until the epoch ends does not depend on the machine: see
# :doc:`Retained memory at epoch end </examples/performance/retained_memory>`.
ratios, spreads = {}, {}
for shape in SHAPES:
    base = epochs[shape, "no cache"]
    spreads[shape] = max(base) / min(base)
    print(f"{shape}: no cache {min(base) * 1000:.0f} ms of CPU per epoch of {STEPS} steps "
          f"(its slowest epoch took {spreads[shape]:.2f} x its fastest)")  # fmt: skip
    for name in list(APPROACHES)[1:]:
        ratios[shape, name] = statistics.median(t / b for t, b in zip(epochs[shape, name], base, strict=True))
        print(f"    {name:<27} {ratios[shape, name]:5.2f} x")

figure, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharex=True, layout="constrained")
for ax, shape in zip(axes, SHAPES, strict=True):
    names = list(APPROACHES)[1:]
    ax.axvspan(1 / spreads[shape], spreads[shape], color="0.85", label="the baseline's own spread")
    ax.barh(names, [ratios[shape, name] for name in names], color="tab:blue", height=0.5)
    ax.axvline(1, color="black", linewidth=1)
    ax.invert_yaxis()
    ax.set(title=f"training_step returns {shape}", xlabel="CPU time per epoch / no-cache baseline")
axes[1].tick_params(labelleft=False)
figure.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center")
plt.show()
