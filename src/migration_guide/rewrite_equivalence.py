"""What the epoch-end code of each rewrite shape (``data/rewrites/*.py``) computes, on the installed Lightning.

The checker's caching rewrites (``lightning-migrate --fix --unsafe-fixes``) promise the values the old hook
received on Lightning 1.x. This module runs a shape's classes -- as written (on a 1.x release) or rewritten by
:func:`lightning_migrate.checker.rewrite_source` (on the build's release) -- in a few Trainer configurations over
the same seeded data and the same seeded initial weights, and records what the epoch-end code computed: every value
it logs (``self.log``, in order) and the attributes it keeps (:data:`KEPT`: ``epoch_predictions``, and
``epoch_calls`` and ``batch_calls``, what a hook of no one stage saw at each call).

``nox -s legacy`` records the shapes as written on each 1.x release (:func:`record`, stored under ``"rewrites"`` in
``data/compat/<version>.json`` by :mod:`migration_guide.compat`); ``tests/checker/test_rewrite_equivalence.py``
runs the rewritten shapes on the installed Lightning and compares.

The classes' ``BoringModel`` is bound to :func:`base_module`, the same module on every release (Lightning 1.4 has no
``demos`` package): ``BoringModel``'s layer, loss, steps and optimizer, with a variant that skips a training batch.
Any other name a shape imports from ``lightning.pytorch`` comes from the installed Lightning's package of the same
path (``pytorch_lightning`` on 1.x).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import logging
import tempfile
import warnings
from pathlib import Path
from typing import Any

from . import source_tree

ROOT = source_tree.ROOT  # the checkout (the tests read it through this module)
SHAPES_DIR = source_tree.DATA / "rewrites"
SEED, FEATURES, BATCH_SIZE = 7, 32, 8
#: The attributes a run keeps of the shape's objects: predictions, or what a hook saw at each call.
KEPT = ("epoch_predictions", "epoch_calls", "batch_calls")
#: Relative tolerance of a comparison across releases and machines: the same float32 operations in the same order,
#: but processors may round the last digit differently.
REL_TOL = 1e-5

#: The configurations each stage runs: Trainer arguments, the methods called, the data (samples per loader) and
#: the base module's variant.
CONFIGS: dict[str, dict[str, dict[str, Any]]] = {
    "train": {
        "fit": {},
        "accumulate_3": {"trainer": {"accumulate_grad_batches": 3}},
        "step_returns_none": {"base": "skips-batch-1"},
        "max_steps_mid_epoch": {"trainer": {"max_steps": 7, "max_epochs": 3}},
        "epoch_without_batches": {"base": "skips-epoch-1", "trainer": {"max_epochs": 3}},
    },
    "validation": {
        "fit": {},
        "val_twice_per_epoch": {"trainer": {"val_check_interval": 0.5}},
        "validate_then_fit": {"runs": ["validate", "fit"]},
        "two_val_dataloaders": {"data": {"val": [16, 24]}},
    },
    "test": {"test": {"runs": ["test"]}, "two_test_dataloaders": {"runs": ["test"], "data": {"test": [16, 24]}}},
    "predict": {
        "predict": {"runs": ["predict"]},
        "two_predict_dataloaders": {"runs": ["predict"], "data": {"predict": [16, 24]}},
        "predict_no_return": {"runs": ["predict"], "predict_kwargs": {"return_predictions": False}},
    },
    # hooks of no one stage (``on_epoch_end``): every Trainer call, validation inside training, a fit cut short
    "every": {
        "fit": {},
        "val_twice_per_epoch": {"trainer": {"val_check_interval": 0.5}},
        "validate_fit_test_predict": {"runs": ["validate", "fit", "test", "predict"]},
        "max_steps_mid_epoch": {"trainer": {"max_steps": 7, "max_epochs": 3}},
    },
}
DATA = {"train": [40], "val": [24], "test": [24], "predict": [20]}


def shapes() -> list[Path]:
    """The shape files, sorted."""
    return sorted(SHAPES_DIR.glob("*.py"))


def stage_of(path: Path) -> str:
    """The stage a shape's docstring names (``Stage: train.``)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    for stage in CONFIGS:
        if f"Stage: {stage}." in doc:
            return stage
    raise ValueError(f"{path}: the docstring names no stage (one of {', '.join(CONFIGS)})")


def base_module(pl, variant: str = "boring"):
    """A ``LightningModule`` class that does what ``lightning.pytorch.demos.BoringModel`` does, on any release (its
    optimizer without the learning-rate scheduler, which Lightning 1.4 rejects with torch 2):
    ``variant="skips-batch-1"`` returns ``None`` from ``training_step`` for batch 1 (a step that skips a batch);
    ``variant="skips-epoch-1"`` returns ``-1`` from ``on_train_batch_start`` in epoch 1 (an epoch without a batch)."""
    import torch

    class BoringModel(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(FEATURES, 2)

        def forward(self, x):
            return self.layer(x)

        def loss(self, preds, labels=None):
            return torch.nn.functional.mse_loss(preds, torch.ones_like(preds) if labels is None else labels)

        def step(self, batch):
            return self.loss(self(batch))

        def on_train_batch_start(self, batch, batch_idx, *args):  # 1.4 passes dataloader_idx too
            if variant == "skips-epoch-1" and self.current_epoch == 1:
                return -1
            return None

        def training_step(self, batch, batch_idx):
            if variant == "skips-batch-1" and batch_idx == 1:
                return None
            return {"loss": self.step(batch)}

        def validation_step(self, batch, batch_idx):
            return {"x": self.step(batch)}

        def test_step(self, batch, batch_idx):
            return {"y": self.step(batch)}

        def predict_step(self, batch, batch_idx, dataloader_idx=0):
            return self(batch)

        def configure_optimizers(self):  # no scheduler: Lightning 1.4 rejects torch 2's schedulers
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return BoringModel


def load(source: str, filename: str, pl, variant: str = "boring") -> dict[str, Any]:
    """The names a shape's ``source`` defines, executed with ``BoringModel`` bound to :func:`base_module` and its
    ``lightning.pytorch`` imports bound to the installed Lightning's modules of the same path."""
    tree = ast.parse(source, filename)
    namespace: dict[str, Any] = {"__name__": f"shape_{Path(filename).stem}"}
    body = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[:2] == ["lightning", "pytorch"]:
            for alias in node.names:
                if alias.name == "BoringModel":
                    value = base_module(pl, variant)
                else:
                    module = importlib.import_module(pl.__name__ + (node.module or "")[len("lightning.pytorch") :])
                    value = getattr(module, alias.name)
                namespace[alias.asname or alias.name] = value
        elif isinstance(node, ast.Import) and any(a.name.startswith("lightning") for a in node.names):
            for alias in node.names:
                namespace[alias.asname or alias.name.split(".")[0]] = pl
        else:
            body.append(node)
    exec(compile(ast.Module(body, type_ignores=[]), filename, "exec"), namespace)  # noqa: S102 - the shape files
    return namespace


def classes(namespace: dict[str, Any], pl, variant: str = "boring") -> tuple[type, list[type]]:
    """The shape's module class (the base module when it defines none) and its callback classes, in file order."""
    defined = [v for v in namespace.values() if isinstance(v, type) and v.__module__ == namespace["__name__"]]
    modules = [c for c in defined if issubclass(c, pl.LightningModule)]
    callbacks = [c for c in defined if issubclass(c, pl.Callback)]
    return (modules[0] if modules else base_module(pl, variant)), callbacks


def _loaders(samples: list[int], seed: int):
    import torch
    from torch.utils.data import DataLoader

    return [
        DataLoader(torch.randn(n, FEATURES, generator=torch.Generator().manual_seed(seed + i)), batch_size=BATCH_SIZE)
        for i, n in enumerate(samples)
    ]


def _floats(value: Any) -> list | float | str | None:
    import torch

    if isinstance(value, list | tuple):
        return [_floats(item) for item in value]
    if isinstance(value, torch.Tensor):
        return [float(v) for v in value.detach().flatten()] if value.numel() != 1 else float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):  # a stage's name, as a hook saw it
        return value
    return None


def run(source: str, filename: str, config: dict[str, Any], pl) -> dict[str, Any]:
    """Run a shape's classes in one configuration; return ``{"logged": [[name, value], ...], "attributes":
    {name: values}}`` or, when Lightning or the shape raised, ``{"error": "Type: message"}`` (first line)."""
    import torch

    variant = config.get("base", "boring")
    module_class, callback_classes = classes(load(source, filename, pl, variant), pl, variant)
    data = {**DATA, **config.get("data", {})}
    logged: list[list[Any]] = []
    torch.manual_seed(SEED)
    model = module_class()
    original_log = model.log

    def log(name, value, *args, **kwargs):  # an observer beside the shape's code: what it logs, in order
        logged.append([name, _floats(value)])
        return original_log(name, value, *args, **kwargs)

    model.log = log
    callbacks = [cls() for cls in callback_classes]
    from migration_guide.probes import _trainer_kwargs  # quiet CPU arguments, as each release spells them

    kwargs = {**_trainer_kwargs(pl), "max_epochs": 2, **config.get("trainer", {})}
    with tempfile.TemporaryDirectory() as root, _quiet():
        trainer = pl.Trainer(default_root_dir=root, callbacks=callbacks, **kwargs)
        train, val = _loaders(data["train"], SEED)[0], _loaders(data["val"], SEED + 10)
        val = val[0] if len(val) == 1 else val
        try:
            for method in config.get("runs", ["fit"]):
                if method == "fit":
                    trainer.fit(model, train, val)
                elif method == "validate":
                    trainer.validate(model, val)
                elif method == "test":
                    loaders = _loaders(data["test"], SEED + 20)
                    trainer.test(model, loaders[0] if len(loaders) == 1 else loaders)
                elif method == "predict":
                    loaders = _loaders(data["predict"], SEED + 30)
                    trainer.predict(
                        model, loaders[0] if len(loaders) == 1 else loaders, **config.get("predict_kwargs", {})
                    )
        except Exception as err:  # noqa: BLE001 - what Lightning or the shape raised is the record
            return {"error": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"}
    attributes = {
        f"{type(owner).__name__}.{name}": _floats(value)
        for owner in (model, *callbacks)
        for name, value in vars(owner).items()
        if name in KEPT
    }
    return {"logged": logged, "attributes": attributes}


@contextlib.contextmanager
def _quiet():
    """No Lightning banners, warnings or progress output while a shape runs."""
    loggers = [
        logging.getLogger(name) for name in ("lightning", "lightning.pytorch", "pytorch_lightning", "lightning_fabric")
    ]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def record(pl=None) -> dict[str, dict[str, Any]]:
    """Every shape as written, in every configuration of its stage, on the installed Lightning: ``{file name:
    {"sha256": of the file, "runs": {configuration: run result}}}``."""
    import hashlib

    if pl is None:
        from migration_guide.probes import import_lightning

        pl, _, _ = import_lightning()
    records = {}
    for path in shapes():
        source = path.read_text(encoding="utf-8")
        runs = {name: run(source, str(path), config, pl) for name, config in CONFIGS[stage_of(path)].items()}
        records[path.name] = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "runs": runs}
    return records


def _by_name(logged: list[list[Any]]) -> dict[str, list[Any]]:
    by_name: dict[str, list[Any]] = {}
    for name, value in logged:
        by_name.setdefault(name, []).append(value)
    return by_name


def same(old: dict[str, Any], new: dict[str, Any], rel_tol: float = REL_TOL) -> str | None:
    """Why two run results differ (names, order, counts or values beyond ``rel_tol``), or ``None``."""
    import math

    if "error" in old or "error" in new:
        return None if old.get("error") == new.get("error") else f"{old.get('error')} != {new.get('error')}"
    # each name's values in order; the order across names follows the hooks' order, which releases changed (2.x
    # calls a callback's epoch-end hook before the module's, 1.4 after)
    old_by_name, new_by_name = _by_name(old["logged"]), _by_name(new["logged"])
    counts = [sorted((name, len(values)) for name, values in by.items()) for by in (old_by_name, new_by_name)]
    if counts[0] != counts[1]:
        return f"logged values per name: {counts[0]} != {counts[1]}"

    def close(a, b) -> bool:
        if isinstance(a, str) or isinstance(b, str):
            return a == b
        if isinstance(a, list) or isinstance(b, list):
            return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(map(close, a, b))
        return (
            a is None
            and b is None
            or (a is not None and b is not None and math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-9))
        )

    for name, values in old_by_name.items():
        for a, b in zip(values, new_by_name[name], strict=True):
            if not close(a, b):
                return f"{name}: {a} != {b}"
    if set(old["attributes"]) != set(new["attributes"]):
        return f"attributes {sorted(old['attributes'])} != {sorted(new['attributes'])}"
    for name, a in old["attributes"].items():
        if not close(a, new["attributes"][name]):
            return f"{name}: {a} != {new['attributes'][name]}"
    return None
