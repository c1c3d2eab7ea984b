"""The block a fix page marks as the new code (:mod:`fix_pages`), copied from the built page as a reader copies it,
works in a plain ``LightningModule`` of this test's own, on the installed Lightning.

The block is pasted as a reader pastes it into their project: the line that imports Lightning's ``BoringModel`` as
a stand-in for the reader's module (``# stands in for your own LightningModule``) is left out, and ``BoringModel``
is :class:`PlainModule`, a linear layer with its own ``forward``, ``step``, ``training_step`` and evaluation steps (what
a block that calls "your step" reaches). A block that computes its loss in its own step writes the squared error of
the module's output against ones, under the comment "your loss": :class:`PlainModule`'s ``step`` computes the same,
so one reference serves both kinds of block. Its optimizer has a learning rate of 0, so every batch sees the same
weights and the reference is a plain computation over the same batches: the mean of the batch losses, or every
prediction in order.

Each page's module and callbacks are trained one epoch (with validation), tested and run on a predict loader. What
the recipe logs (:data:`REFERENCES`) or keeps in ``all_predictions`` equals the reference; and every method the
block defines was called by Lightning at least once (a profile hook watches the calls, so the signatures Lightning
inspects are the block's own).
"""

from __future__ import annotations

import ast
import sys

import lightning.pytorch as pl
import pytest
import torch
from fix_pages import copied_blocks, fix_pages
from torch.utils.data import DataLoader

STAND_IN = "# stands in for your own LightningModule"
#: The batches each run sees: (samples, batch size) of the train, validation, test and predict loaders.
LOADERS = {"train": (24, 8), "val": (20, 8), "test": (16, 8), "predict": (12, 4)}


class PlainModule(pl.LightningModule):
    """A reader's own module, not Lightning's demo class: a linear layer, its loss the squared error against ones."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)

    def forward(self, x):
        return self.layer(x)

    def step(self, batch):
        prediction = self(batch)
        return torch.nn.functional.mse_loss(prediction, torch.ones_like(prediction))

    def training_step(self, batch, batch_idx):
        return {"loss": self.step(batch)}

    def validation_step(self, batch, batch_idx):
        return self.step(batch)

    def test_step(self, batch, batch_idx):
        return self.step(batch)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.0)  # the weights stay as they are: a plain reference


def loaders() -> dict[str, DataLoader]:
    generator = torch.Generator().manual_seed(0)
    return {
        name: DataLoader(torch.randn(samples, 32, generator=generator), batch_size=size)
        for name, (samples, size) in LOADERS.items()
    }


def batch_mean(model: PlainModule, loader: DataLoader) -> float:
    with torch.no_grad():
        return torch.stack([model.step(batch) for batch in loader]).mean().item()


#: What a recipe may log, with its reference: the mean of the batch losses of that stage's loader.
REFERENCES = {"train_loss_epoch_mean": "train", "val_loss": "val", "test_loss": "test"}


def paste(block: str) -> dict:
    """The namespace of ``block`` pasted into a project whose module is :class:`PlainModule`."""
    lines = [line for line in block.splitlines() if STAND_IN not in line]
    namespace = {"__name__": "copied_recipe", "BoringModel": PlainModule}
    exec(compile("\n".join(lines), "<copied block>", "exec"), namespace)
    return namespace


def defined_methods(block: str, namespace: dict) -> dict[str, object]:
    """``Class.method`` -> code object, for every method of every class the block defines."""
    methods = {}
    for node in ast.parse(block).body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    methods[f"{node.name}.{item.name}"] = getattr(namespace[node.name], item.name).__code__
    return methods


def run_every_stage(module, callbacks) -> tuple[dict, dict]:
    """Fit one epoch with validation, test and predict; return the metrics logged after each run and the outputs."""
    data = loaders()
    trainer_args = dict(
        max_epochs=1,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer = pl.Trainer(callbacks=callbacks, **trainer_args)
    trainer.fit(module, data["train"], data["val"])
    logged = {name: value.item() for name, value in trainer.callback_metrics.items()}
    trainer = pl.Trainer(callbacks=callbacks, **trainer_args)
    trainer.test(module, data["test"], verbose=False)
    logged |= {name: value.item() for name, value in trainer.callback_metrics.items()}
    trainer = pl.Trainer(callbacks=callbacks, **trainer_args)
    predictions = trainer.predict(module, data["predict"])
    return logged, {"data": data, "predictions": predictions}


@pytest.mark.parametrize("docname", fix_pages())
def test_copied_block_works_in_a_plain_module(site, docname):
    [block, *_] = copied_blocks(site.page(docname)) or [None]
    assert block, f"{docname}: no code block after a fix-label line"
    namespace = paste(block)
    classes = [value for name, value in namespace.items() if isinstance(value, type) and name != "BoringModel"]
    modules = [cls for cls in classes if issubclass(cls, PlainModule)]
    callbacks = [cls() for cls in classes if issubclass(cls, pl.Callback)]
    assert len(modules) <= 1, f"{docname}: the block defines several modules"
    module = modules[0]() if modules else PlainModule()

    called = set()
    methods = defined_methods(block, namespace)
    watched = set(methods.values())

    def profile(frame, event, arg):
        if event == "call" and frame.f_code in watched:
            called.add(frame.f_code)

    sys.setprofile(profile)
    try:
        logged, run = run_every_stage(module, callbacks)
    finally:
        sys.setprofile(None)

    never = sorted(name for name, code in methods.items() if code not in called and not name.endswith(".__init__"))
    assert never == [], f"{docname}: Lightning never called {never}"
    checked = 0
    for metric, stage in REFERENCES.items():
        if metric in logged:
            expected = batch_mean(module, run["data"][stage])
            assert logged[metric] == pytest.approx(expected, rel=1e-6), (docname, metric)
            checked += 1
    for holder in [module, *callbacks]:
        if hasattr(holder, "all_predictions"):
            with torch.no_grad():
                expected = torch.cat([module(batch) for batch in run["data"]["predict"]])
            [kept] = holder.all_predictions  # one tensor for the one predict loader
            assert torch.allclose(kept, expected), (docname, type(holder).__name__)
            checked += 1
    logs_or_keeps = any(f'"{metric}"' in block for metric in REFERENCES) or "all_predictions" in block
    assert checked > 0 or not logs_or_keeps, f"{docname}: the block's value was neither logged nor kept"
