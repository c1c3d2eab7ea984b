"""
Hook order: when validation runs inside a training epoch
========================================================

A cache is only as good as the hook that clears it. This page records every hook call of a short ``fit``, draws
the order, and shows what it means for a cache shared by training and validation, and for a validation cache when
validation runs several times per training epoch.

:claim:`Validation-between-last-train-batch-and-train-epoch-end`: a cache shared by training and validation is
cleared under training's feet.
"""

# %%
# Recording every hook
# --------------------
# The hook names are not typed here: they are read from Lightning's ``Callback`` class and its
# ``LightningModule`` hook classes, and every one of them is wrapped to note its call in a shared record.
import inspect

import lightning
import lightning.pytorch as pl
import matplotlib.pyplot as plt
import torch
from lightning.pytorch.core.hooks import ModelHooks
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

CALLBACK_HOOKS = sorted(
    name for name, _ in inspect.getmembers(pl.Callback, inspect.isfunction) if name.startswith("on_")
)
MODULE_HOOKS = sorted(name for name, _ in inspect.getmembers(ModelHooks, inspect.isfunction) if name.startswith("on_"))
MODULE_STEPS = ["training_step", "validation_step"]


def recording(owner, name, method, record):
    def hook(self, *args, **kwargs):
        record.append({"owner": owner, "hook": name})
        return method(self, *args, **kwargs)

    return hook


def recorded_classes(record):
    """A ``BoringModel`` and a ``Callback`` subclass whose every hook appends to ``record``."""
    module_methods = {
        name: recording("module", name, getattr(BoringModel, name), record) for name in MODULE_HOOKS + MODULE_STEPS
    }
    callback_methods = {
        name: recording("callback", name, getattr(pl.Callback, name), record) for name in CALLBACK_HOOKS
    }
    return type("RecordedModel", (BoringModel,), module_methods), type(
        "RecordedCallback", (pl.Callback,), callback_methods
    )


def recorded_fit(**trainer_kwargs):
    record = []
    model_class, callback_class = recorded_classes(record)
    trainer = pl.Trainer(
        max_epochs=1,
        callbacks=[callback_class()],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **trainer_kwargs,
    )
    loader = DataLoader(RandomDataset(32, 64), batch_size=8)
    trainer.fit(model_class(), train_dataloaders=loader, val_dataloaders=loader)
    return trainer, record


# %%
# One epoch: three training batches, two validation batches
# ---------------------------------------------------------
# This run switches the sanity check off (``num_sanity_val_steps=0``), so the record shows one training epoch only.
trainer, record = recorded_fit(limit_train_batches=3, limit_val_batches=2, num_sanity_val_steps=0)
callback_calls = [call["hook"] for call in record if call["owner"] == "callback"]
print(f"{len(record)} hook calls recorded; the callback hooks from the last training batch on:")
last_train_batch_end = max(i for i, hook in enumerate(callback_calls) if hook == "on_train_batch_end")
for position, hook in enumerate(callback_calls[last_train_batch_end:], start=last_train_batch_end):
    print(f"  {position:3d}  {hook}")

# %%
# The recorded order, drawn
# -------------------------
# Each dot is one call, in the order of the run; the module's hooks and the callback's hooks are drawn in two
# colours.
fit_hooks = [call for call in record if call["hook"] not in ("on_fit_start", "on_fit_end")]
names = list(dict.fromkeys(call["hook"] for call in fit_hooks))
fig, ax = plt.subplots(figsize=(9, 0.28 * len(names) + 1.2))
for owner, colour in (("module", "tab:blue"), ("callback", "tab:orange")):
    points = [(i, names.index(call["hook"])) for i, call in enumerate(fit_hooks) if call["owner"] == owner]
    ax.scatter([x for x, _ in points], [y for _, y in points], s=18, color=colour, label=owner)
validation = [i for i, call in enumerate(fit_hooks) if call["hook"] in ("on_validation_start", "on_validation_end")]
ax.axvspan(min(validation) - 0.5, max(validation) + 0.5, color="tab:green", alpha=0.12, label="validation loop")
ax.set_yticks(range(len(names)), names, fontsize=7)
ax.invert_yaxis()
ax.set_xlabel("call number")
ax.set_title(f"Hook calls of fit(): 3 training batches, 2 validation batches (Lightning {lightning.__version__})")
ax.legend(loc="lower left", fontsize=8)
ax.grid(axis="x", alpha=0.3)
fig.tight_layout()


# %%
# The order, asserted
# -------------------
# :claim:`Validation-between-last-train-batch-and-train-epoch-end`.
after = callback_calls[last_train_batch_end + 1 :]
assert (
    callback_calls.count("on_train_batch_end") == 3
    and "on_train_batch_end" not in after
    and after.index("on_validation_epoch_start")
    < after.index("on_validation_epoch_end")
    < after.index("on_train_epoch_end")
    and after[: after.index("on_validation_epoch_end")].count("on_validation_batch_end") == 2
), "after the last on_train_batch_end the whole validation loop runs, then on_train_epoch_end"

# %%
# Consequence 1: a cache shared by training and validation
# --------------------------------------------------------
# Give each stage its own cache. The first module below appends to one list in both ``training_step`` and
# ``validation_step`` and clears it in ``on_validation_epoch_end``; the second keeps one list per stage. The run
# after them prints what each epoch-end hook finds in the cache.
#
# .. recipe-domain:: separate_caches_train separate_caches_validation


class SharedCache(BoringModel):
    def __init__(self):
        super().__init__()
        self.cache = []

    def training_step(self, batch, batch_idx):
        output = super().training_step(batch, batch_idx)
        self.cache.append(("train", output["loss"].detach()))
        return output

    def validation_step(self, batch, batch_idx):
        output = super().validation_step(batch, batch_idx)
        self.cache.append(("val", output["x"].detach()))
        return output

    def on_validation_epoch_end(self):
        self.cache.clear()

    def on_train_epoch_end(self):
        self.cache.clear()


class SeparateCaches(BoringModel):
    def __init__(self):
        super().__init__()
        self.train_losses, self.val_losses = [], []  # one cache per stage

    def training_step(self, batch, batch_idx):
        output = super().training_step(batch, batch_idx)
        self.train_losses.append(output["loss"].detach().clone())  # a detached copy of the loss
        return output

    def validation_step(self, batch, batch_idx):
        output = super().validation_step(batch, batch_idx)
        self.val_losses.append(output["x"].clone())
        return output

    def on_validation_epoch_end(self):
        self.log("val_loss", torch.stack(self.val_losses).mean())
        self.val_losses.clear()

    def on_train_epoch_end(self):
        self.log("train_loss_epoch_mean", torch.stack(self.train_losses).mean())
        self.train_losses.clear()


# %%
# A small callback beside the modules notes what each cache holds when its epoch-end hook runs
# (:claim:`plain-callbacks-before-module-epoch-ends`).


class CacheContents(pl.Callback):
    def __init__(self):
        self.seen = {}

    def on_validation_epoch_end(self, trainer, pl_module):
        cache = getattr(pl_module, "cache", None)
        if cache is not None:
            self.seen["on_validation_epoch_end"] = [stage for stage, _ in cache]
        else:
            self.seen["on_validation_epoch_end"] = len(pl_module.val_losses)

    def on_train_epoch_end(self, trainer, pl_module):
        cache = getattr(pl_module, "cache", None)
        if cache is not None:
            self.seen["on_train_epoch_end"] = [stage for stage, _ in cache]
        else:
            self.seen["on_train_epoch_end"] = len(pl_module.train_losses)


def fit(model, callbacks=(), **trainer_kwargs):
    trainer = pl.Trainer(
        max_epochs=1,
        callbacks=list(callbacks),
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **trainer_kwargs,
    )
    loader = DataLoader(RandomDataset(32, 64), batch_size=8)
    trainer.fit(model, train_dataloaders=loader, val_dataloaders=loader)
    return trainer


shared, separate = SharedCache(), SeparateCaches()
shared_contents, separate_contents = CacheContents(), CacheContents()
limits = {"limit_train_batches": 3, "limit_val_batches": 2, "num_sanity_val_steps": 0}
fit(shared, [shared_contents], **limits)
separate_trainer = fit(separate, [separate_contents], **limits)
print(f"shared cache   -> {shared_contents.seen}")
print(f"separate caches -> {separate_contents.seen}")
print(f"separate caches logged: {sorted(separate_trainer.callback_metrics)}")
assert shared_contents.seen == {"on_validation_epoch_end": ["train"] * 3 + ["val"] * 2, "on_train_epoch_end": []}
assert separate_contents.seen == {"on_validation_epoch_end": 2, "on_train_epoch_end": 3}, (
    "the plain callback's epoch-end hooks found each stage's cache before the module cleared it"
)
assert {"val_loss", "train_loss_epoch_mean"} <= set(separate_trainer.callback_metrics)

# %%
# Consequence 2: ``val_check_interval < 1.0``
# -------------------------------------------
# :claim:`Val-check-interval-half-validates-twice`. So clear a validation cache in the validation hook
# (``on_validation_epoch_end``): the run below compares a cache cleared there with one cleared only in
# ``on_train_epoch_end``.


class ValidationRuns(BoringModel):
    def __init__(self):
        super().__init__()
        self.cleared_in_validation, self.cleared_per_epoch = [], []
        self.run_sizes, self.epoch_sizes = [], []

    def validation_step(self, batch, batch_idx):
        output = super().validation_step(batch, batch_idx)
        self.cleared_in_validation.append(output["x"].detach())
        self.cleared_per_epoch.append(output["x"].detach())
        return output

    def on_validation_epoch_end(self):
        self.run_sizes.append(len(self.cleared_in_validation))
        self.cleared_in_validation.clear()

    def on_train_epoch_end(self):
        self.epoch_sizes.append(len(self.cleared_per_epoch))
        self.cleared_per_epoch.clear()


runs = ValidationRuns()
runs_trainer = fit(runs, limit_train_batches=4, limit_val_batches=2, val_check_interval=0.5, num_sanity_val_steps=0)
print(f"validation runs in the epoch: {len(runs.run_sizes)}")
print(f"cache cleared in on_validation_epoch_end held {runs.run_sizes} batches per run")
print(f"cache cleared in on_train_epoch_end held {runs.epoch_sizes} batches")
assert len(runs.run_sizes) == 2, "with val_check_interval=0.5 validation ran twice in one training epoch"
assert runs.run_sizes == [runs_trainer.num_val_batches[0]] * 2 == [2, 2]
assert runs.epoch_sizes == [4]
