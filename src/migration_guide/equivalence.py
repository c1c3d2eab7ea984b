"""Per-epoch values of the old ``training_epoch_end(outputs)`` hook and of both replacements, on one seeded run.

The same model (``torch.nn.Linear(32, 2)``, seeded initial weights), the same 32 seeded samples in 4 batches of 8,
plain SGD and 3 epochs are trained once per *variant*, each in a fresh ``Trainer`` in this process:

``old``
    ``training_epoch_end(self, outputs)`` reads the losses from ``outputs`` (Lightning 1.x only; removed in 2.0).
``callback``
    callback-side caching: ``on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)`` appends,
    ``on_train_epoch_end(trainer, pl_module)`` reduces and clears.
``module``
    module-side caching: ``training_step`` appends, ``on_train_epoch_end(self)`` reduces and clears.

A variant's result is one entry per epoch: ``{"entries": int, "losses": [float, ...], "mean": float}`` where the
losses are the batch losses (``float`` of the float32 tensor, so JSON keeps them exactly) and ``mean`` is
``torch.stack(losses).mean().item()``.
"""

from __future__ import annotations

from typing import Any

from migration_guide import probes

EPOCHS, SAMPLES, BATCH_SIZE, FEATURES, SEED = 3, 32, 8, 32, 7
VARIANTS = ("old", "callback", "module")


def _epoch_summary(losses: list[Any]) -> dict[str, Any]:
    import torch

    stacked = torch.stack([loss.detach() for loss in losses])
    return {"entries": len(losses), "losses": [float(v) for v in stacked], "mean": float(stacked.mean())}


def run_variant(variant: str, pl=None) -> list[dict[str, Any]]:
    """Train the seeded model with ``variant``'s way of reading the epoch's losses; return the per-epoch values.

    Raises:
        ValueError: ``variant`` is not one of :data:`VARIANTS`.
        AssertionError: a cache was not cleared at epoch end, or an epoch saw a different number of batches.
    """
    import torch
    from torch.utils.data import DataLoader

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    if pl is None:
        pl, _, _ = probes.import_lightning()
    data = torch.randn(SAMPLES, FEATURES, generator=torch.Generator().manual_seed(SEED))

    class Net(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(FEATURES, 2)
            self.epochs: list[dict[str, Any]] = []

        def training_step(self, batch, batch_idx):
            return {"loss": self.layer(batch).pow(2).mean()}

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self):
            return DataLoader(data, batch_size=BATCH_SIZE)

    class OldHook(Net):
        def training_epoch_end(self, outputs):
            self.epochs.append(_epoch_summary([out["loss"] for out in outputs]))

    class ModuleSide(Net):
        def __init__(self):
            super().__init__()
            self.training_step_losses: list[Any] = []

        def training_step(self, batch, batch_idx):
            output = super().training_step(batch, batch_idx)
            self.training_step_losses.append(output["loss"].detach())
            return output

        def on_train_epoch_end(self):
            self.epochs.append(_epoch_summary(self.training_step_losses))
            self.training_step_losses.clear()

    class CallbackSide(pl.Callback):
        def __init__(self):
            self.batch_losses: list[Any] = []
            self.epochs: list[dict[str, Any]] = []

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.batch_losses.append(outputs["loss"].detach())

        def on_train_epoch_end(self, trainer, pl_module):
            self.epochs.append(_epoch_summary(self.batch_losses))
            self.batch_losses.clear()

    torch.manual_seed(SEED)
    model = {"old": OldHook, "callback": Net, "module": ModuleSide}[variant]()
    callback = CallbackSide() if variant == "callback" else None
    kwargs = probes._trainer_kwargs(pl)
    kwargs["max_epochs"] = EPOCHS
    trainer = pl.Trainer(callbacks=[callback] if callback else [], **kwargs)
    trainer.fit(model)
    epochs = (callback or model).epochs
    assert len(epochs) == EPOCHS, f"{variant}: {len(epochs)} epoch summaries, expected {EPOCHS}"
    assert all(e["entries"] == SAMPLES // BATCH_SIZE for e in epochs), f"{variant}: wrong batch count {epochs}"
    if variant == "module":
        assert model.training_step_losses == [], "module cache not cleared"
    if callback is not None:
        assert callback.batch_losses == [], "callback cache not cleared"
    return epochs


def run(variants: tuple[str, ...]) -> dict[str, Any]:
    """Run ``variants`` in this process and assert they produced identical per-epoch values.

    Returns:
        ``{"epochs", "batches_per_epoch", "seed", "variants": {name: [per-epoch values]}, "identical": True}``.

    Raises:
        AssertionError: two variants differ in any epoch's entries, losses or mean (compared exactly).
    """
    results = {variant: run_variant(variant) for variant in variants}
    first = variants[0]
    for variant in variants[1:]:
        assert results[variant] == results[first], (
            f"{variant} differs from {first}:\n{results[variant]}\n{results[first]}"
        )
    return {
        "epochs": EPOCHS,
        "batches_per_epoch": SAMPLES // BATCH_SIZE,
        "seed": SEED,
        "variants": results,
        "identical": True,
    }
