"""The names Lightning calls on a ``LightningModule`` and a ``Callback``, recorded from the installed Lightning.

The checker needs them without Lightning installed (to tell a misspelt or removed hook, such as
``on_training_epoch_end`` or ``predict_epoch_end``, from a real one), so they are recorded like the probe data:
``python -m lightning_migrate.hook_names --output src/lightning_migrate/data/hook_names.json`` imports Lightning,
reads its classes and writes that file (named, never a default: an installed copy is not rewritten); the tests
check the file against the installed Lightning.
Nothing here is typed by hand.

The JSON holds, per class kind (``"LightningModule"``, ``"Callback"``):

``hooks``
    the methods Lightning's own hook classes define and calls: every public method of ``Callback``; for a module,
    the public methods of ``ModelHooks``, ``DataHooks`` and ``CheckpointHooks`` (``lightning.pytorch.core.hooks``)
    and those ``LightningModule`` defines itself (``training_step``, ``configure_optimizers``, ...);
``names``
    every public attribute name of the class (``nn.Module``'s included): a method of that name overrides something
    real, so it is never reported as a misspelt hook.

and ``classes``: for every ``Callback`` subclass ``lightning.pytorch.callbacks`` exports and every
``LightningModule`` subclass of ``lightning.pytorch.demos`` (the package and its modules), the public methods it
(or a Lightning class between it and ``Callback`` / ``LightningModule``) defines -- a user's subclass renamed onto
one of them would replace it;
``kinds``: for each of those classes, and for ``LightningModule`` and ``Callback`` themselves, which of the two it
is (the checker's resolver tells a user's ``LightningTransformer`` subclass for a module by it).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import pkgutil
from importlib import resources
from pathlib import Path
from typing import Any

from lightning_migrate.records import write_atomic

#: Where the record lives inside the package (shipped with it as package data).
RECORD = Path(__file__).resolve().parent / "data" / "hook_names.json"
KINDS = ("LightningModule", "Callback")


def import_lightning():
    """Return ``(pl, distribution_name, version)`` for the installed Lightning.

    Raises:
        ImportError: neither ``lightning`` nor ``pytorch_lightning`` is importable.
    """
    try:
        pl = importlib.import_module("lightning.pytorch")
        dist = "lightning"
    except ImportError:
        pl = importlib.import_module("pytorch_lightning")
        dist = "pytorch-lightning"
    return pl, dist, pl.__version__


def _public_methods(cls: type) -> list[str]:
    return [name for name, value in vars(cls).items() if not name.startswith("_") and callable(value)]


def _defined_below(cls: type, root: type) -> list[str]:
    """Public methods ``cls`` and its bases up to (not including) ``root`` define."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass is root or not issubclass(klass, root):
            continue
        names.update(_public_methods(klass))
    return sorted(names)


def hook_classes(pl: Any = None) -> dict[str, list[str]]:
    """The public methods of the installed Lightning's hook classes, on any release from 1.4 on (which has no
    ``demos`` package): ``{"LightningModule": ModelHooks, DataHooks and CheckpointHooks, and every ``on_*`` method of
    ``LightningModule``, "Callback": Callback}``, each sorted. A 1.x release's listing, beside the installed one's,
    gives the hooks it had that the installed one lacks.

    Raises:
        ImportError: neither ``lightning`` nor ``pytorch_lightning`` is importable.
    """
    if pl is None:
        pl, _, _ = import_lightning()
    hooks_module = importlib.import_module(f"{pl.__name__}.core.hooks")
    module = {
        name
        for cls in (hooks_module.ModelHooks, hooks_module.DataHooks, hooks_module.CheckpointHooks)
        for name in _public_methods(cls)
    }
    # and every ``on_*`` method a LightningModule has from Lightning's other classes (1.4's ``ModelIO.on_hpc_save``)
    module |= {
        name
        for name in dir(pl.LightningModule)
        if name.startswith("on_") and callable(getattr(pl.LightningModule, name))
    }
    return {"LightningModule": sorted(module), "Callback": sorted(set(_public_methods(pl.Callback)))}


def record() -> dict[str, Any]:
    """Read the hook names off the installed Lightning.

    Raises:
        ImportError: neither ``lightning`` nor ``pytorch_lightning`` is importable.
    """
    pl, dist, version = import_lightning()
    module_hooks = hook_classes(pl)["LightningModule"] + _public_methods(pl.LightningModule)
    classes: dict[str, list[str]] = {}
    kinds = {pl.LightningModule.__name__: pl.LightningModule.__name__, pl.Callback.__name__: pl.Callback.__name__}
    demos = importlib.import_module(f"{pl.__name__}.demos")
    # the demos package and each of its modules (``ManualOptimBoringModel`` is not re-exported by the package)
    demo_modules = [
        demos,
        *(importlib.import_module(f"{demos.__name__}.{m.name}") for m in pkgutil.iter_modules(demos.__path__)),
    ]
    sources = [(pl.callbacks, pl.Callback), *((module, pl.LightningModule) for module in demo_modules)]
    for package, root in sources:
        for name in dir(package):
            value = getattr(package, name)
            if isinstance(value, type) and issubclass(value, root) and value is not root:
                classes[name] = _defined_below(value, root)
                kinds[name] = root.__name__
    return {
        "lightning": {"distribution": dist, "version": version},
        "LightningModule": {
            "hooks": sorted(set(module_hooks)),
            "names": sorted(name for name in dir(pl.LightningModule) if not name.startswith("_")),
        },
        "Callback": {
            "hooks": sorted(set(_public_methods(pl.Callback))),
            "names": sorted(name for name in dir(pl.Callback) if not name.startswith("_")),
        },
        "classes": dict(sorted(classes.items())),
        "kinds": dict(sorted(kinds.items())),
    }


def load() -> dict[str, Any]:
    """The recorded names (see the module docstring for the keys)."""
    text = resources.files("lightning_migrate").joinpath("data", "hook_names.json").read_text(encoding="utf-8")
    return json.loads(text)


@functools.cache
def load_removed() -> dict[str, Any]:
    """The hooks an old release's recorded hook classes had and the installed release's lack, per class kind, with
    the recorded releases that had each: ``{"installed": version, "LightningModule": {name: [releases]},
    "Callback": {...}}`` (``data/removed_hooks.json``, written by ``python -m migration_guide.removed_hooks`` from the
    legacy records)."""
    text = resources.files("lightning_migrate").joinpath("data", "removed_hooks.json").read_text(encoding="utf-8")
    return json.loads(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--output",
        "-o",
        type=Path,
        required=True,  # never the installed package's own file by default: the checker reads it
        help="where to write the record (the checkout's is src/lightning_migrate/data/hook_names.json)",
    )
    args = parser.parse_args(argv)
    write_atomic(args.output, json.dumps(record(), indent=1) + "\n")  # the project's one atomic write
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
