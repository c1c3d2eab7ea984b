"""
Empty ``outputs``: a skipped batch, manual optimization, a validation step that only logs
=========================================================================================

``KeyError: 'loss'`` in a callback's ``on_train_batch_end``: :claim:`empty-outputs-for-none-and-manual`. The fix:
skip the empty ``outputs`` (``if not outputs: return``), below. For ``on_validation_batch_end``,
:claim:`validation-outputs-as-returned` (the last section). Under DDP, returning ``None`` is no way to skip a batch:
:claim:`ddp-refuses-none-training-step`.
"""

# %%
# The fix
# -------
# Skip empty ``outputs``: a batch that returned no loss has no loss to average. An epoch without a single loss
# logs nothing instead of calling ``torch.stack`` on an empty list. This is the
# :doc:`callback-side recipe </examples/core/callback_side_caching>`, which also undoes the scaling of
# :doc:`gradient accumulation </examples/pitfalls/accumulated_loss_scaled>`.
import lightning.pytorch as pl
import torch


class EpochLossCallback(pl.Callback):
    def __init__(self):
        self.batch_losses = []  # this epoch's cache

    def on_train_epoch_start(self, trainer, pl_module):
        self.batch_losses.clear()  # nothing left over from a run that stopped half-way

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if not outputs:  # an empty outputs: nothing to cache for this batch
            return
        self.batch_losses.append(outputs["loss"].detach() * trainer.accumulate_grad_batches)

    def on_train_epoch_end(self, trainer, pl_module):
        if self.batch_losses:
            pl_module.log("train_loss_epoch_mean", torch.stack(self.batch_losses).mean())
            self.batch_losses.clear()


# %%
# .. recipe-domain:: empty_outputs_fix
#
# Three modules a user writes
# ---------------------------
# One skips batch 1 by returning ``None``; two optimize manually, one returning the loss, one returning nothing.
import csv
import math
import tempfile
import warnings
from pathlib import Path

import lightning
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class SkipsBatchOne(BoringModel):
    def training_step(self, batch, batch_idx):
        if batch_idx == 1:  # e.g. a batch with no valid sample
            return None
        return super().training_step(batch, batch_idx)


class ManualOptimization(BoringModel):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        optimizer = self.optimizers()
        loss = self.step(batch)
        optimizer.zero_grad()
        self.manual_backward(loss)
        optimizer.step()
        return loss


class ManualReturnsNothing(ManualOptimization):
    def training_step(self, batch, batch_idx):
        super().training_step(batch, batch_idx)


# %%
# The naive callback and the checks beside it
# -------------------------------------------
# The callback caches ``outputs["loss"]``. Beside it, two small callbacks record what the page compares: the
# ``outputs`` of each ``on_train_batch_end``, and the weights and batch each step is computed with (for a loss
# computed by hand with plain PyTorch). The callbacks list puts them first; the lines printed below include the
# batch the naive callback fails on.


class NaiveEpochLossCallback(pl.Callback):
    def __init__(self):
        self.batch_losses = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.batch_losses.append(outputs["loss"].detach())

    def on_train_epoch_end(self, trainer, pl_module):
        pl_module.log("train_loss_epoch_mean", torch.stack(self.batch_losses).mean())
        self.batch_losses.clear()


class OutputsSeen(pl.Callback):
    def __init__(self):
        self.outputs = []  # (batch_idx, outputs)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.outputs.append((batch_idx, outputs))


class StepInputs(pl.Callback):
    def __init__(self):
        self.steps = []  # (epoch, batch_idx, batch, weights before the step)
        self.global_steps = []  # trainer.global_step before each step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        weights = {name: value.detach().clone() for name, value in pl_module.state_dict().items()}
        self.steps.append((trainer.current_epoch, batch_idx, batch.clone(), weights))
        self.global_steps.append(trainer.global_step)


def loss_by_hand(weights, batch):
    """The loss of ``BoringModel`` by hand: a linear layer, then the mean squared error against ones."""
    with torch.no_grad():
        predictions = batch @ weights["layer.weight"].T + weights["layer.bias"]
        return ((predictions - 1) ** 2).mean().item()


def train(module_class, recipe, epochs=2):
    """Fit a seeded ``module_class()`` on 4 batches per epoch; returns the checks' records and the logged epoch
    means, and the error the fit raised (or ``None``)."""
    torch.manual_seed(5)
    module = module_class()
    seen, inputs = OutputsSeen(), StepInputs()
    logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
    trainer = pl.Trainer(
        max_epochs=epochs,
        limit_val_batches=0,
        callbacks=[seen, inputs, recipe],
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            trainer.fit(module, DataLoader(RandomDataset(32, 32), batch_size=8))
        except Exception as err:  # the page prints the exception as it came
            error = err
    for warning in {f"{w.category.__name__}: {w.message}" for w in caught if "returned `None`" in str(w.message)}:
        print(warning)  # the warning's own words about the skipped batch, without the path of its source file
    return seen, inputs, logged_values(logger, "train_loss_epoch_mean"), error


def logged_values(logger, name):
    """Every value of ``name`` the ``CSVLogger`` wrote (none when nothing was logged)."""
    metrics = Path(logger.log_dir, "metrics.csv")
    if not metrics.exists():
        return []
    with open(metrics, newline="") as file:
        return [float(row[name]) for row in csv.DictReader(file) if row.get(name)]


# %%
# The symptom
# -----------
# The skipped batch and manual optimization that returns nothing each stop the training.
symptoms = {}
for module_class in (SkipsBatchOne, ManualReturnsNothing):
    seen, _, _, error = train(module_class, NaiveEpochLossCallback())
    symptoms[module_class.__name__] = seen, error
    print(f"{module_class.__name__}: {type(error).__name__}: {error}")
    print(f"  outputs received before the failure: {seen.outputs}")

# %%
# The two errors printed above, and the ``outputs`` each callback received before it; the check below names the
# batch each one stopped at.
assert all(
    isinstance(error, KeyError)
    and error.args == ("loss",)
    and seen.outputs[-1] == (failing_batch, {})
    and all(outputs for batch_idx, outputs in seen.outputs[:-1])
    for (seen, error), failing_batch in ((symptoms["SkipsBatchOne"], 1), (symptoms["ManualReturnsNothing"], 0))
), "outputs is {} for a step that returned None and under manual optimization returning nothing"

# %%
# The cause
# ---------
# :claim:`None-step-still-steps-optimizer`:
_, skipped, _, _ = train(SkipsBatchOne, pl.Callback())
before = {(epoch, batch_idx): weights for epoch, batch_idx, _, weights in skipped.steps}
unchanged = all(
    torch.equal(before[epoch, 1][name], before[epoch, 2][name]) for epoch in (0, 1) for name in before[epoch, 1]
)
print(f"weights unchanged across the skipped batch: {unchanged}; global_step before each batch: {skipped.global_steps}")
assert unchanged and skipped.global_steps == list(range(8)), (
    "a step that returned None left the weights as they were, and its optimizer step was still counted"
)

# %%
# :claim:`Manual-outputs-loss-detached` -- nothing gives ``{}``, a loss gives ``{"loss": ...}``:
seen, inputs, _, error = train(ManualOptimization, NaiveEpochLossCallback())
manual_outputs = [outputs for _, outputs in seen.outputs]
by_hand = [loss_by_hand(weights, batch) for _, _, batch, weights in inputs.steps]
print(f"manual optimization returning the loss: {manual_outputs[:2]} ...")
print(f"keys: {sorted({key for outputs in manual_outputs for key in outputs})}")
ratios = [outputs["loss"].item() / hand for outputs, hand in zip(manual_outputs, by_hand, strict=True)]
print(f"outputs['loss'] / loss by hand: {[round(ratio, 6) for ratio in ratios]}")
assert error is None and len(manual_outputs) == len(by_hand) == 8
assert all(list(outputs) == ["loss"] and not outputs["loss"].requires_grad for outputs in manual_outputs), (
    "under manual optimization outputs is {'loss': the returned loss, detached}"
)
assert all(math.isclose(ratio, 1, rel_tol=1e-6) for ratio in ratios)

# %%
# The fix, run
# ------------
# ``EpochLossCallback``, from the top of this page. The reference is the mean, per epoch, of the losses computed by
# hand for the batches that returned a loss.


def epoch_means_by_hand(steps, returned_loss):
    per_epoch = {}
    for epoch, batch_idx, batch, weights in steps:
        if returned_loss(batch_idx):
            per_epoch.setdefault(epoch, []).append(loss_by_hand(weights, batch))
    return [sum(losses) / len(losses) for _, losses in sorted(per_epoch.items())]


results = {}
for module_class, returned_loss in (
    (SkipsBatchOne, lambda batch_idx: batch_idx != 1),
    (ManualOptimization, lambda batch_idx: True),
    (ManualReturnsNothing, lambda batch_idx: False),
):
    recipe = EpochLossCallback()
    seen, inputs, logged, error = train(module_class, recipe)
    reference = epoch_means_by_hand(inputs.steps, returned_loss)
    results[module_class.__name__] = logged, reference, error, recipe
    print(f"{module_class.__name__}: logged {logged}, by hand {reference}, error: {error}")

# %%
# What the fix delivers
# ---------------------
# No error; one mean per epoch over the batches that returned a loss, equal to the mean by hand; nothing logged
# when no step returned a loss; an empty cache at the end.
for logged, reference, error, recipe in results.values():
    assert error is None and recipe.batch_losses == []
    assert len(logged) == len(reference)
    assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(logged, reference, strict=True))
assert len(results["SkipsBatchOne"][0]) == len(results["ManualOptimization"][0]) == 2
assert results["ManualReturnsNothing"][0] == []

# %%
# Validation ``outputs``
# ----------------------
# :claim:`Validation-outputs-as-returned`. Three validation steps a user writes -- one of them ``BoringModel``'s own:
# :claim:`boring-model-validation-step-returns-x` -- and a callback that records what it receives.


class ValidationReturnsLoss(BoringModel):
    def validation_step(self, batch, batch_idx):
        return self.step(batch)


class ValidationOnlyLogs(BoringModel):
    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self.step(batch))


class ValidationOutputsSeen(pl.Callback):
    def __init__(self):
        self.outputs = []

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self.outputs.append(outputs)


pl.seed_everything(6)
fit_loaders = DataLoader(RandomDataset(32, 32), batch_size=8), DataLoader(RandomDataset(32, 16), batch_size=8)


def validate_and_fit(module_class, callback):
    """Fit a seeded ``module_class()`` for one epoch of 4 batches, validating 2 batches (after a sanity check of 2);
    returns the trainer and the error the fit raised (or ``None``)."""
    torch.manual_seed(5)
    trainer = pl.Trainer(
        max_epochs=1,
        callbacks=[callback],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    error = None
    with warnings.catch_warnings(record=True):  # what the reader would see is the error below
        warnings.simplefilter("always")
        try:
            trainer.fit(module_class(), *fit_loaders)
        except Exception as err:  # the page prints the exception as it came
            error = err
    return trainer, error


first_outputs = {}
for module_class in (BoringModel, ValidationReturnsLoss, ValidationOnlyLogs):
    seen = ValidationOutputsSeen()
    validate_and_fit(module_class, seen)
    first_outputs[module_class.__name__] = seen.outputs[0]
    print(f"{module_class.__name__}: outputs of the first validation batch: {seen.outputs[0]!r}")
assert (
    list(first_outputs["BoringModel"]) == ["x"]
    and isinstance(first_outputs["ValidationReturnsLoss"], torch.Tensor)
    and first_outputs["ValidationOnlyLogs"] is None
), "on_validation_batch_end receives what validation_step returned, unwrapped: a dict, a bare tensor, None"

# %%
# The symptom
# -----------
# A callback written for ``BoringModel``'s ``{"x": loss}`` reads ``outputs["x"]``, and skips the sanity check as it
# should. Given the two other steps:


class NaiveValidationCache(pl.Callback):
    def __init__(self):
        self.losses = []

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        if trainer.sanity_checking:
            return
        self.losses.append(outputs["x"].detach())

    def on_validation_epoch_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            pl_module.log("val_loss_0", torch.stack(self.losses).mean())
            self.losses.clear()


validation_symptoms = {}
for module_class in (ValidationReturnsLoss, ValidationOnlyLogs):
    trainer, error = validate_and_fit(module_class, NaiveValidationCache())
    validation_symptoms[module_class.__name__] = trainer, error
    print(f"{module_class.__name__}: {type(error).__name__}: {error}")
    print(f"  training steps taken before the failure: {trainer.global_step}")

# %%
# The output above gives each error: ``outputs["loss"]`` on the bare loss ``validation_step`` returned, and on the
# ``None`` of a step that only logs, and the training steps taken before each: the sanity-check guard also covers the
# failing line.
trainer, error = validation_symptoms["ValidationReturnsLoss"]
assert isinstance(error, IndexError) and trainer.global_step == 4
trainer, error = validation_symptoms["ValidationOnlyLogs"]
assert isinstance(error, TypeError) and "NoneType" in str(error) and trainer.global_step == 4

# %%
# The fix
# -------
# .. recipe-domain:: empty_outputs_validation_fix
#
# Read the loss from a dictionary by its key, take a tensor as it is, and skip a batch that returned nothing. This is
# the callback of :doc:`A callback that owns its cache </examples/caching/callback_owned_cache>`; an epoch whose
# steps returned no loss logs nothing.


class ValidationCache(pl.Callback):
    key = "x"  # where validation_step's dictionary holds the loss

    def __init__(self):
        self.losses = {}  # dataloader_idx -> this validation run's losses

    def on_validation_epoch_start(self, trainer, pl_module):
        self.losses.clear()

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        loss = outputs.get(self.key) if isinstance(outputs, dict) else outputs
        if trainer.sanity_checking or loss is None:
            return
        self.losses.setdefault(dataloader_idx, []).append(loss.detach().clone())  # a detached copy of the loss

    def on_validation_epoch_end(self, trainer, pl_module):
        if trainer.sanity_checking:
            return
        for idx, losses in sorted(self.losses.items()):
            pl_module.log(f"val_loss_{idx}", torch.stack(losses).mean(), add_dataloader_idx=False)
        self.losses.clear()


# %%
# The reference is the trained model's mean validation loss over the 2 batches, computed by hand with the final
# weights, those of the one validation run after training.
fixed = {}
for module_class in (BoringModel, ValidationReturnsLoss, ValidationOnlyLogs):
    recipe = ValidationCache()
    trainer, error = validate_and_fit(module_class, recipe)
    module = trainer.lightning_module
    with torch.no_grad():
        reference = torch.stack([module.step(batch) for batch in fit_loaders[1]])
    logged = trainer.callback_metrics.get("val_loss_0")
    fixed[module_class.__name__] = error, logged, reference.mean(), recipe
    print(f"{module_class.__name__}: error {error}, logged val_loss_0 {logged}, by hand {reference.mean().item():.6f}")

# %%
# What the fix delivers
# ---------------------
# No error with any of the three steps; the mean of the 2 batches' losses, equal to the mean by hand, for the two
# steps that return the loss; nothing logged for the step that only logs (its own ``self.log`` is the value to
# use there); an empty cache at the end.
for name, (error, logged, reference, recipe) in fixed.items():
    assert error is None and recipe.losses == {}
    if name == "ValidationOnlyLogs":
        assert logged is None
    else:
        assert math.isclose(logged.item(), reference.item(), rel_tol=1e-6)
