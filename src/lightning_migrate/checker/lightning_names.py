"""The public names of each module of an installed Lightning release, recorded by importing them; and the names a
later release removed, with the module each moved to, where it did.

``python -m lightning_migrate.checker.lightning_names record --output FILE`` runs in one release's environment
(the 1.x releases are installed in environments of their own, as ``nox -s legacy`` installs them): it imports
every module of ``pytorch_lightning`` (a module that does not import there -- an optional dependency missing -- is
listed under ``"failed"``) and writes, per module, each public name it binds with its *home*: the module that
defines it (``obj.__module__`` for a class or a function), or the module itself for a value assigned there
(``EPOCH_OUTPUT = List[STEP_OUTPUT]``). A name is public when it is in the module's ``__all__``, or is a class or
function of the package, or is assigned in the module's own source; an imported third-party name (``torch``,
``Optional``) is not the module's.

``python -m lightning_migrate.checker.lightning_names compare OLD NEW`` writes
``src/lightning_migrate/data/removed_names.json``: for every ``(module, name)`` of the old record that the new one
does not have, the replacement (:func:`compare`) or ``null``, and the modules the new release no longer has. LM009
reads it. Nothing here is typed: the lists come from the releases. The records this table was made from: 1.9.5
imported in an environment of its own (``pytorch-lightning==1.9.5`` over the pinned torch, as ``nox -s legacy``
installs it), 2.6.6 as installed, with ``--also`` the 1.9.5 record; both records are kept in
``src/lightning_migrate/data/lightning_names/`` (not shipped: the table is).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import pkgutil
import sys
import warnings
from pathlib import Path
from typing import Any

#: The package recorded: the name 1.x code imports.
PACKAGE = "pytorch_lightning"
#: The packages a release's objects may be defined in (1.9 ships ``lightning_fabric`` inside its wheel).
FAMILY = ("pytorch_lightning", "lightning_fabric", "lightning_lite", "lightning")
#: Where the checker's table lives inside the package (shipped with it as package data).
TABLE = Path(__file__).resolve().parents[1] / "data" / "removed_names.json"


def _assigned(module: Any) -> set[str]:
    """The names the module's own source assigns at its top level (``X = ...``, ``X: T = ...``)."""
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return set()
    found: set[str] = set()
    for statement in ast.parse(source).body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def _public(module: Any) -> dict[str, str]:
    """``{name: home}`` of the module's public names (see the module docstring)."""
    listed = set(getattr(module, "__all__", ()) or ())
    assigned = _assigned(module)
    names: dict[str, str] = {}
    for name, value in vars(module).items():
        if name.startswith("_") or inspect.ismodule(value):
            continue
        home = getattr(value, "__module__", None) if inspect.isclass(value) or inspect.isfunction(value) else None
        ours = isinstance(home, str) and home.split(".")[0] in FAMILY
        if name in listed or ours or name in assigned:
            names[name] = home if isinstance(home, str) and name not in assigned else module.__name__
    return dict(sorted(names.items()))


def record(package: str = PACKAGE, also: tuple[str, ...] = ()) -> dict[str, Any]:
    """Import every module of ``package`` and read its public names; ``also``: more module names to try (an older
    release's, which a newer one may still provide without a file of its own -- the modules 2.x keeps importable
    for old code and checkpoints); one that does not import is simply not recorded.

    Returns:
        ``{"package", "version", "modules": {module: {name: home}}, "failed": [module, ...]}``.

    Raises:
        ImportError: ``package`` is not installed.
    """
    root = importlib.import_module(package)
    failed: list[str] = []
    modules: dict[str, dict[str, str]] = {package: _public(root)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(root.__path__, package + ".", onerror=failed.append):
            try:
                module = importlib.import_module(info.name)
            except Exception:  # an optional dependency this environment does not have
                failed.append(info.name)
                continue
            modules[info.name] = _public(module)
        for name in also:
            if name in modules or _private(name):
                continue
            try:
                modules[name] = _public(importlib.import_module(name))
            except Exception:  # not there: what the comparison is for
                continue
    return {
        "package": package,
        "version": getattr(root, "__version__", "?"),
        "modules": dict(sorted(modules.items())),
        "failed": sorted(set(failed)),
    }


def compare(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The names of ``old`` that ``new`` does not bind, each with its replacement (see the module docstring).

    The replacement of a class or function is where ``new`` binds the same name with the same home (the same
    definition): the home itself, else the nearest package above the old module or above the home that exports
    it. A value assigned in the old module (``EPOCH_OUTPUT``) has none. Private modules (a part starting with
    ``_``) and the modules ``new`` failed to import are left out.

    Returns:
        ``{"package", "old", "new", "removed": {module: {name: replacement module or None}}, "modules_removed":
        [module, ...]}``.
    """
    homes: dict[str, list[tuple[str, str]]] = {}
    for module, names in new["modules"].items():
        if not _private(module):
            for name, home in names.items():
                homes.setdefault(name, []).append((module, home))
    removed: dict[str, dict[str, str | None]] = {}
    for module, names in old["modules"].items():
        if module in new["failed"] or _private(module):
            continue
        kept = new["modules"].get(module, {})
        for name, home in names.items():
            if name in kept:
                continue
            same = [
                m
                for m, h in homes.get(name, ())
                if h == home != module and (m == home or _within(module, m) or _within(home, m))
            ]
            best = max(same, key=lambda m: (m == home, len(m.split("."))), default=None)
            removed.setdefault(module, {})[name] = best
    gone = sorted(m for m in old["modules"] if m not in new["modules"] and m not in new["failed"] and not _private(m))
    return {
        "package": old["package"],
        "old": old["version"],
        "new": new["version"],
        "removed": removed,
        "modules_removed": gone,
    }


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def _within(module: str, package: str) -> bool:
    """Whether ``package`` is ``module``'s package or one above it."""
    return module.startswith(package + ".")


def load() -> dict[str, Any]:
    """The table LM009 reads (:func:`compare`'s output)."""
    from importlib import resources

    text = resources.files("lightning_migrate").joinpath("data", "removed_names.json").read_text(encoding="utf-8")
    return json.loads(text)


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record the installed release's names")
    rec.add_argument("--output", "-o", type=Path, required=True)
    rec.add_argument("--also", type=Path, help="an older release's record: try importing its modules too")
    cmp = sub.add_parser("compare", help="write the table of removed names from two records")
    cmp.add_argument("old", type=Path)
    cmp.add_argument("new", type=Path)
    cmp.add_argument("--output", "-o", type=Path, default=TABLE)
    args = parser.parse_args(argv)
    if args.command == "record":
        also = tuple(json.loads(args.also.read_text(encoding="utf-8"))["modules"]) if args.also else ()
        _write(args.output, record(also=also))
    else:
        old, new = (json.loads(p.read_text(encoding="utf-8")) for p in (args.old, args.new))
        _write(args.output, compare(old, new))
    return 0


if __name__ == "__main__":
    sys.exit(main())
