"""The public names of each module of an installed Lightning release, recorded by importing them; and the names a
later release removed, with the module each moved to, where it did.

``python -m lightning_migrate.checker.lightning_names record --output FILE`` runs in one release's environment
(the 1.x releases are installed in environments of their own, as ``nox -s legacy`` installs them): it imports
every module of ``pytorch_lightning`` (a module that does not import there -- an optional dependency missing -- is
listed under ``"failed"``) and writes, per module, each public name it binds with its *home*: the module that
defines it (``obj.__module__`` for a class or a function), or the module itself for a value assigned there
(``EPOCH_OUTPUT = List[STEP_OUTPUT]``). A name is public when it is in the module's ``__all__``, or is a class or
function of the package, or is assigned in the module's own source; an imported third-party name (``torch``,
``Optional``) is not the module's. With ``--also`` (older records), each module's ``"bound"`` names are those of
an older record's listing of it that the module binds after import without listing them public (``hasattr``:
imported there, as ``pytorch_lightning.utilities.enums`` imports ``LightningEnum``): an import of one works, so
``compare`` counts it kept.

``python -m lightning_migrate.checker.lightning_names compare OLD NEW`` writes
``src/lightning_migrate/data/removed_names.json``: for every ``(module, name)`` of the old record that the new one
does not have, the replacement (:func:`compare`) or ``null``, and the modules the new release no longer has. LM009
reads it, with ``definitions``: for a removed value whose recorded definition uses only names the new release (or
the standard library) still binds, the expression and the imports that make it (``EPOCH_OUTPUT = List[STEP_OUTPUT]``
over 2.x's ``STEP_OUTPUT``); and ``deprecated``: for a removed function that was a deprecation shim of the old
release, the message it emitted when called there (``record`` calls each function whose body starts by calling a
``*deprecation*`` function, with no arguments, in the old release's environment), the replacement that message
names, whether the shim only handed its arguments to that very object, and whether the replacement is a drop-in on
the new release (:func:`drop_in` of the parameters each release records for it). Nothing here is typed: the lists,
the definitions and the messages come from the releases, each record naming the environment it was made in
(``"environment"``; run the module as a script, ``python src/lightning_migrate/checker/lightning_names.py record``,
in an environment without libcst). The records this table was made from: 1.9.5
imported in an environment of its own, of 1.9's time (``pytorch-lightning==1.9.5 torchmetrics==0.11.4
lightning-utilities==0.8.0 requests==2.28.2 "setuptools<81"`` over the pinned torch; ``requests`` lets
``pytorch_lightning.serve`` import), 1.4.9 likewise (``pytorch-lightning==1.4.9 "setuptools<70"`` over the pinned
torch, with ``torchmetrics==0.4.1``: 0.6 no longer has the ``r2score`` that ``pytorch_lightning.metrics.functional``
imports, and 0.5.1 does not import beside today's tqdm; otherwise the same modules and names), 2.6.6 as installed,
with ``--also`` the 1.9.5 and the 1.4.9 records (with only the 1.9.5 one, the same listing); the records are kept in
``src/lightning_migrate/data/lightning_names/`` (not shipped: the table is). Recorded beside torchmetrics 1.9.0
instead, the 1.9.5 listing held the same modules and names.

``compare OLD [OLD ...] NEW`` with several 1.x records (:func:`compare_releases`) adds what only an older one had:
code written for 1.4 imports ``pytorch_lightning.core.lightning``, which 1.9.5 no longer had.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib
import inspect
import json
import pkgutil
import re
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


def _bindings(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """Where each top-level name of a module's source comes from: ``typing.List`` for ``from typing import List``,
    the module's own dotted name plus the name for what it defines or assigns itself."""
    package = module if is_package else module.rpartition(".")[0]
    found: dict[str, str] = {}
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom):
            base = statement.module or ""
            if statement.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - statement.level + 1] + ([base] if base else []))
            for alias in statement.names:
                found[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                found[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[statement.name] = f"{module}.{statement.name}"
        elif isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            found.update({t.id: f"{module}.{t.id}" for t in targets if isinstance(t, ast.Name)})
    return found


def _values(module: Any, names: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The definitions of the public values the module assigns itself (``EPOCH_OUTPUT = List[STEP_OUTPUT]``):
    ``{name: {"expression": source text, "names": {name in it: where it comes from (``typing.List``,
    ``builtins.int``, the module's own ``...types.STEP_OUTPUT``; ``None``: unknown)}}}``."""
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return {}
    tree = ast.parse(source)
    bound = _bindings(tree, module.__name__, hasattr(module, "__path__"))
    found: dict[str, dict[str, Any]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if not isinstance(target, ast.Name) or names.get(target.id) != module.__name__:
            continue
        attribute = vars(module).get(target.id)
        if inspect.isclass(attribute) or inspect.isfunction(attribute) or inspect.ismodule(attribute):
            continue
        free = sorted({n.id for n in ast.walk(value) if isinstance(n, ast.Name)})
        origins = {n: bound.get(n) or (f"builtins.{n}" if hasattr(builtins, n) else None) for n in free}
        found[target.id] = {"expression": ast.get_source_segment(source, value), "names": origins}
    return found


#: A deprecation message's backquoted dotted name (```lightning_fabric.utilities.seed.seed_everything```).
_QUOTED = re.compile(r"`([A-Za-z_][\w.]*)`")


def _parameters(obj: Any) -> list[list[Any]] | None:
    """``[[name, kind, default]]`` of a callable's signature (the default as its ``repr``, ``None`` when it has none;
    annotations left out); ``None`` when it has no signature."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [
        [p.name, p.kind.name, None if p.default is inspect.Parameter.empty else repr(p.default)]
        for p in signature.parameters.values()
    ]


def _resolve(dotted: str) -> Any:
    """The object a dotted name names (a module, or an attribute of the longest module prefix that imports);
    ``None`` when nothing does."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - not a module: try a shorter prefix
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj
    return None


def _parameters_at(dotted: str) -> list[list[Any]] | None:
    obj = _resolve(dotted)
    return None if obj is None or inspect.ismodule(obj) else _parameters(obj)


def _forwarded(function: Any) -> str | None:
    """The name a shim's body forwards every argument to, when the body is only a call of a ``*deprecation*``
    function, imports, and ``return target(*args, **kwargs)`` with the shim's own ``*args, **kwargs``; else
    ``None`` (a shim that does more, such as turning one exception into another)."""
    try:
        tree = ast.parse(inspect.getsource(function).lstrip())
    except (OSError, TypeError, SyntaxError):
        return None
    [node] = tree.body
    if not isinstance(node, ast.FunctionDef):
        return None
    args = node.args
    if args.args or args.posonlyargs or args.kwonlyargs or args.vararg is None or args.kwarg is None:
        return None
    body = [s for s in node.body if not isinstance(s, ast.Import | ast.ImportFrom)]
    if len(body) != 2 or not isinstance(body[0], ast.Expr) or not isinstance(body[1], ast.Return):
        return None
    warn, returned = body[0].value, body[1].value
    if not (isinstance(warn, ast.Call) and "deprecat" in ast.unparse(warn.func).lower()):
        return None
    if not (isinstance(returned, ast.Call) and isinstance(returned.func, ast.Name)):
        return None
    star = [a for a in returned.args if isinstance(a, ast.Starred)]
    if len(returned.args) != 1 or len(star) != 1 or ast.unparse(star[0].value) != args.vararg.arg:
        return None
    if [(k.arg, ast.unparse(k.value)) for k in returned.keywords] != [(None, args.kwarg.arg)]:
        return None
    return returned.func.id


def _deprecated(module: Any, names: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The module's own functions that are deprecation shims, found by calling each one whose body starts with a
    call of a ``*deprecation*`` function, with no arguments, and keeping the deprecation warning it emits first
    (what it does next fails or not; the call runs in the recording process only):
    ``{name: {"message", "replacement": the dotted name the message names instead of the shim's (a module it
    says to import the name from, with the name), or None, "forwards": whether the shim only warns and hands
    every argument to that very object (:func:`_forwarded`), "parameters": the replacement's here}}``."""
    found: dict[str, dict[str, Any]] = {}
    for name, home in names.items():
        function = vars(module).get(name)
        if home != module.__name__ or not inspect.isfunction(function):
            continue
        try:
            first = ast.parse(inspect.getsource(function).lstrip()).body[0]
        except (OSError, TypeError, SyntaxError):
            continue
        if not isinstance(first, ast.FunctionDef) or not first.body:
            continue
        head = first.body[0]
        if not (
            isinstance(head, ast.Expr)
            and isinstance(head.value, ast.Call)
            and "deprecat" in ast.unparse(head.value.func).lower()
        ):
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                function()
            except Exception:  # noqa: BLE001 - the shim warns first; what it calls next is not the point
                pass
        messages = [str(w.message) for w in caught if "deprecat" in w.category.__name__.lower()]
        if not messages:
            continue
        message = messages[0]
        own = f"{module.__name__}.{name}"
        replacement = _first_importable([q for q in _QUOTED.findall(message) if q != own], name)
        target = _resolve(replacement) if replacement else None
        forwarded = _forwarded(function)
        forwards = (
            target is not None
            and forwarded is not None
            and (vars(module).get(forwarded) is target or _local_import_is(function, forwarded, target))
        )
        found[name] = {
            "message": message,
            "replacement": replacement,
            "forwards": forwards,
            "parameters": _parameters(target) if target is not None else None,
        }
    return found


def _first_importable(candidates: list[str], name: str) -> str | None:
    """The first of ``candidates`` (dotted names a message gives) that imports here: a module that binds ``name``
    gives ``module.name``, any other object its own dotted name; ``None`` when none does."""
    for candidate in candidates:
        target = _resolve(candidate)
        if inspect.ismodule(target) and hasattr(target, name):
            return f"{candidate}.{name}"
        if target is not None and not inspect.ismodule(target):
            return candidate
    return None


def _local_import_is(function: Any, name: str, target: Any) -> bool:
    """Whether the shim's body imports ``name`` (``from m import x as name``) and that is ``target``."""
    tree = ast.parse(inspect.getsource(function).lstrip())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _resolve(f"{node.module}.{alias.name}") is target
    return False


#: A message's ``from package import name`` in backquotes (1.9's tombstones say so for the module class).
_QUOTED_IMPORT = re.compile(r"`from ([A-Za-z_][\w.]*) import ([A-Za-z_]\w*)`")


def _tombstones(module: Any) -> dict[str, dict[str, Any]]:
    """The module's own classes and functions that only raise ``NotImplementedError`` (a class from its own
    ``__init__``): what 1.9 left in place of a removed name (``pytorch_lightning._graveyard``), found by calling each
    one with no arguments in the recording process and keeping the message it raises. Keyed by the dotted name the
    message names first whose last part is the name (``pytorch_lightning.loggers.base.LightningLoggerBase``):
    ``{dotted name: {"message", "replacement": the first other name the message names that imports here (a module
    it says to import the name from, with the name; ``from m import n``), or None}}``."""
    found: dict[str, dict[str, Any]] = {}
    for name, value in vars(module).items():
        if getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(value):
            function = vars(value).get("__init__")
        elif inspect.isfunction(value):
            function = value
        else:
            continue
        try:
            tree = ast.parse(inspect.getsource(function).lstrip()) if function is not None else None
        except (OSError, TypeError, SyntaxError):
            continue
        if tree is None or not isinstance(tree.body[0], ast.FunctionDef):
            continue
        body = [s for s in tree.body[0].body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        raised = body[0].exc if len(body) == 1 and isinstance(body[0], ast.Raise) else None
        if not (isinstance(raised, ast.Call) and ast.unparse(raised.func) == "NotImplementedError"):
            continue
        try:
            value()
        except NotImplementedError as error:
            message = str(error)
        except Exception:  # noqa: BLE001 - it takes arguments after all: not a tombstone
            continue
        else:
            continue
        # Lightning's messages abbreviate the package by its documented alias (``import pytorch_lightning as pl``)
        quoted = [_unalias(q) for q in _QUOTED.findall(message)]
        subject = next((q for q in quoted if q.rpartition(".")[2] == name and "." in q), None)
        if subject is None:
            continue
        imports = [f"{_unalias(m)}.{n}" for m, n in _QUOTED_IMPORT.findall(message)]
        replacement = _first_importable(imports + [q for q in quoted if q != subject], name)
        found[subject] = {"message": message, "replacement": replacement}
    return found


def _unalias(dotted: str) -> str:
    """``pl.strategies.DDPStrategy`` -> ``pytorch_lightning.strategies.DDPStrategy``; any other name as it is."""
    return PACKAGE + dotted[2:] if dotted == "pl" or dotted.startswith("pl.") else dotted


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


def record(
    package: str = PACKAGE,
    also: tuple[str, ...] = (),
    replacements: tuple[str, ...] = (),
    names: dict[str, set[str]] | None = None,
) -> dict[str, Any]:
    """Import every module of ``package`` and read its public names; ``also``: more module names to try (an older
    release's, which a newer one may still provide without a file of its own -- the modules 2.x keeps importable
    for old code and checkpoints); one that does not import is simply not recorded. ``replacements``: dotted names
    (an older release's deprecation messages name them) whose parameters to record, ``None`` for one that does not
    import here. ``names``: ``{module: names}`` of older releases' listings: those a module recorded here binds
    without listing them public (``hasattr`` once every module is imported) go under ``"bound"``.

    Returns:
        ``{"package", "version", "modules": {module: {name: home}}, "bound": {module: [name, ...]}, "values",
        "deprecated": {module: {name: shim}} (:func:`_deprecated`), "tombstones": {dotted name: tombstone}
        (:func:`_tombstones`), "replacements": {dotted name: parameters or
        None}, "failed": [module, ...]}``.

    Raises:
        ImportError: ``package`` is not installed.
    """
    root = importlib.import_module(package)
    failed: list[str] = []
    modules: dict[str, dict[str, str]] = {package: _public(root)}
    values: dict[str, dict[str, dict[str, Any]]] = {}
    deprecated: dict[str, dict[str, dict[str, Any]]] = {}
    tombstones: dict[str, dict[str, Any]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(root.__path__, package + ".", onerror=failed.append):
            try:
                module = importlib.import_module(info.name)
            except Exception:  # an optional dependency this environment does not have
                failed.append(info.name)
                continue
            modules[info.name] = _public(module)
            defined = _values(module, modules[info.name])
            if defined:
                values[info.name] = defined
            found = _deprecated(module, modules[info.name])
            if found:
                deprecated[info.name] = found
            tombstones.update(_tombstones(module))
        for name in also:
            if name in modules or _private(name):
                continue
            try:
                modules[name] = _public(importlib.import_module(name))
            except Exception:  # not there: what the comparison is for
                continue
        bound: dict[str, list[str]] = {}
        for name, wanted in (names or {}).items():
            if name in modules:
                module = importlib.import_module(name)  # imported above: the module object itself
                imported = sorted(n for n in wanted if n not in modules[name] and hasattr(module, n))
                if imported:
                    bound[name] = imported
    return {
        "package": package,
        "version": getattr(root, "__version__", "?"),
        "environment": _environment(package),
        "modules": dict(sorted(modules.items())),
        "bound": dict(sorted(bound.items())),
        "values": dict(sorted(values.items())),
        "deprecated": dict(sorted(deprecated.items())),
        "tombstones": dict(sorted(tombstones.items())),
        "replacements": {path: _parameters_at(path) for path in sorted(set(replacements))},
        "failed": sorted(set(failed)),
    }


def _environment(package: str) -> dict[str, str]:
    """The installed versions the record was made with: Python, the package's distribution and every distribution
    it requires (``torchmetrics``, ``lightning-utilities``, ...; not its extras), torch, setuptools, and
    ``requests``, which 1.x's ``pytorch_lightning.serve`` needs to import; one not installed is left out."""
    from importlib import metadata

    dist = {"pytorch_lightning": "pytorch-lightning"}.get(package, package)
    names = {dist, "torch", "requests", "setuptools"}
    for requirement in metadata.requires(dist) or ():
        if "extra ==" in requirement.replace('extra=="', 'extra == "'):
            continue  # an optional extra's (tests, examples)
        names.add(re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0])
    found = {"python": ".".join(map(str, sys.version_info[:3]))}
    for name in sorted(names):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def compare(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The names of ``old`` that ``new`` does not bind, each with its replacement (see the module docstring): a name
    ``new`` binds without listing it public (its ``"bound"``: imported there) is not removed, its import works.

    The replacement of a class or function is where ``new`` binds the same name with the same home (the same
    definition): the home itself, else the nearest package above the old module or above the home that exports
    it. A value assigned in the old module (``EPOCH_OUTPUT``) has none. Private modules (a part starting with
    ``_``) and the modules ``new`` failed to import are left out.

    Returns:
        ``{"package", "old", "new", "removed": {module: {name: replacement module or None}}, "modules_removed":
        [module, ...], "definitions": ..., "deprecated": {module: {name: {"message", "replacement" (``None`` where
        the new release lacks it), "drop_in", "forwards"}}}}``.
    """
    homes: dict[str, list[tuple[str, str]]] = {}
    for module, names in new["modules"].items():
        if not _private(module):
            for name, home in names.items():
                homes.setdefault(name, []).append((module, home))
    removed: dict[str, dict[str, str | None]] = {}
    exported: dict[str, dict[str, str]] = {}
    for module, names in old["modules"].items():
        if module in new["failed"] or _private(module):
            continue
        kept = new["modules"].get(module, {}).keys() | new.get("bound", {}).get(module, ())
        for name, home in names.items():
            if name in kept:
                continue
            same = [
                m
                for m, h in homes.get(name, ())
                if h == home != module and (m == home or _within(module, m) or _within(home, m))
            ]
            best = max(same, key=lambda m: (m == home, len(m.split("."))), default=None)
            if best is None:
                best = _exported(old, new, module, name, home)
                if best is not None:
                    exported.setdefault(module, {})[name] = best
            removed.setdefault(module, {})[name] = best
    gone = sorted(m for m in old["modules"] if m not in new["modules"] and m not in new["failed"] and not _private(m))
    definitions: dict[str, dict[str, dict[str, Any]]] = {}
    for module, names in removed.items():
        for name, replacement in names.items():
            recorded = old.get("values", {}).get(module, {}).get(name)
            if replacement is None and recorded is not None:
                imports = _definable(recorded, new, removed)
                if imports is not None:
                    definitions.setdefault(module, {})[name] = {
                        "expression": recorded["expression"],
                        "imports": imports,
                    }
    deprecated: dict[str, dict[str, dict[str, Any]]] = {}
    for module, names in removed.items():
        for name, replacement in names.items():
            shim = old.get("deprecated", {}).get(module, {}).get(name)
            if replacement is None and shim is not None:
                now = new.get("replacements", {}).get(shim["replacement"]) if shim["replacement"] else None
                deprecated.setdefault(module, {})[name] = {
                    "message": shim["message"],
                    "replacement": shim["replacement"] if now is not None else None,
                    "drop_in": now is not None and drop_in(shim["parameters"], now),
                    "forwards": shim["forwards"],
                }
    return {
        "package": old["package"],
        "old": old["version"],
        "new": new["version"],
        "removed": removed,
        "exported": exported,
        "modules_removed": gone,
        "definitions": definitions,
        "deprecated": deprecated,
    }


def _exported(old: dict[str, Any], new: dict[str, Any], module: str, name: str, home: str) -> str | None:
    """Where ``old`` itself exported the very object ``module.name`` is (another public module binding ``name``
    with the same home: its own module, else a package above that module or above the home) and ``new`` still binds
    ``name``: its home first, else the shallowest such package (``pytorch_lightning`` for 1.4.9's
    ``pytorch_lightning.core.lightning.LightningModule``); ``None`` when there is none. On ``old`` an import from
    there binds the same object, so the fix changes nothing on the release the code was written for; on ``new``
    the name is the one every user of that path gets (another definition, possibly: what the upgrade brings)."""
    places = [
        m
        for m, names in old["modules"].items()
        if m != module
        and not _private(m)
        and names.get(name) == home
        and (m == home or _within(module, m) or _within(home, m))
        and name in new["modules"].get(m, {})
    ]
    return min(places, key=lambda m: (m != home, len(m.split("."))), default=None)


def compare_releases(olds: list[dict[str, Any]], new: dict[str, Any]) -> dict[str, Any]:
    """:func:`compare` of the newest of ``olds`` with ``new``, and what only an older one of ``olds`` had: a user
    upgrading from an older 1.x release imports modules and names the newest 1.x release had already dropped
    (``pytorch_lightning.core.lightning``). Each older record is compared with ``new`` the same way (its
    replacements, definitions and shims by the same standard); a ``(module, name)`` or a module the newest
    comparison already lists keeps that comparison's entry.

    Returns:
        :func:`compare`'s table of the newest, with the older releases' entries merged into ``removed``,
        ``modules_removed``, ``definitions`` and ``deprecated`` (a definition and a shim carry ``"release"``), and
        ``"releases"``: the old versions compared, oldest first; ``"had"``: ``{module: {name: version}}`` for each
        removed name the newest old release did not have, the newest older one that did; ``"modules_had"``:
        ``{module: version}`` likewise for a module.
    """
    newest, *older = sorted(olds, key=lambda record: _version(record["version"]), reverse=True)
    table = compare(newest, new)
    table.update(releases=sorted((r["version"] for r in olds), key=_version), had={}, modules_had={})
    for record in older:
        version, found = record["version"], compare(record, new)
        for module, names in found["removed"].items():
            for name, replacement in names.items():
                if name in table["removed"].get(module, {}):
                    continue
                table["removed"].setdefault(module, {})[name] = replacement
                table["had"].setdefault(module, {})[name] = version
                if name in found["exported"].get(module, {}):
                    table["exported"].setdefault(module, {})[name] = found["exported"][module][name]
                for key in ("definitions", "deprecated"):
                    entry = found[key].get(module, {}).get(name)
                    if entry is not None:
                        table[key].setdefault(module, {})[name] = {**entry, "release": version}
        for module in found["modules_removed"]:
            if module not in table["modules_removed"]:
                table["modules_removed"].append(module)
                table["modules_had"][module] = version
    table["modules_removed"].sort()
    table["namesakes"] = _namesakes(table, {r["version"]: r for r in olds}, new)
    table["tombstones"] = _tombstoned(table, sorted(olds, key=lambda r: _version(r["version"]), reverse=True), new)
    for key in ("removed", "exported", "had", "definitions", "deprecated", "namesakes", "tombstones"):
        table[key] = {module: dict(sorted(names.items())) for module, names in sorted(table[key].items())}
    return table


def _tombstoned(table: dict[str, Any], olds: list[dict[str, Any]], new: dict[str, Any]) -> dict[str, Any]:
    """``{module: {name: {"message", "replacement", "release", "drop_in": False, "forwards": False, "tombstone":
    True}}}``: for each
    removed name with no replacement, shim or definition, the tombstone a 1.x release left in its place
    (:func:`_tombstones`, the newest release's first), found under ``module.name`` or under the name's home in the
    release that had it; ``"replacement"`` is the name the message names where ``new`` binds it, else ``None``.
    Never a drop-in: the message is the lead a marker gives."""
    versions = {r["version"]: r for r in olds}
    found: dict[str, dict[str, Any]] = {}
    for module, names in table["removed"].items():
        for name, replacement in names.items():
            if replacement is not None or name in table["deprecated"].get(module, {}):
                continue
            if name in table["definitions"].get(module, {}):
                continue
            release = table["had"].get(module, {}).get(name, table["old"])
            home = versions[release]["modules"].get(module, {}).get(name)
            subjects = [f"{module}.{name}"] + ([f"{home}.{name}"] if home else [])
            for record in olds:
                stone = next(
                    (record.get("tombstones", {}).get(s) for s in subjects if s in record.get("tombstones", {})), None
                )
                if stone is None:
                    continue
                target = stone["replacement"]
                where, _, short = (target or "").rpartition(".")
                kept = target is not None and short in new["modules"].get(where, {})
                found.setdefault(module, {})[name] = {
                    "message": stone["message"],
                    "replacement": target if kept else None,
                    "release": record["version"],
                    "drop_in": False,
                    "forwards": False,
                    "tombstone": True,
                }
                break
    return found


def _namesakes(table: dict[str, Any], olds: dict[str, dict[str, Any]], new: dict[str, Any]) -> dict[str, Any]:
    """``{module: {name: [home, ...]}}``: for each removed class or function with no replacement, the public
    modules that define a class or function of that name in ``new`` -- another definition than the old release's
    (its home differs), so not shown to be the same object: a lead for the user, never a fix. Values (``log``) are
    left out: a value of the same name is no lead."""
    defined: dict[str, set[str]] = {}
    for module, names in new["modules"].items():
        for name, home in names.items():
            value = name in new.get("values", {}).get(home, {})
            if not _private(home) and not _private(module) and not value:
                defined.setdefault(name, set()).add(home)
    found: dict[str, dict[str, list[str]]] = {}
    for module, names in table["removed"].items():
        for name, replacement in names.items():
            release = table["had"].get(module, {}).get(name, table["old"])
            home = olds[release]["modules"].get(module, {}).get(name)
            homes = sorted(defined.get(name, set()) - {home})
            value = home is not None and name in olds[release].get("values", {}).get(home, {})
            if replacement is None and home is not None and homes and not value:
                found.setdefault(module, {})[name] = homes
    return found


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def drop_in(old: list[list[Any]] | None, new: list[list[Any]] | None) -> bool:
    """Whether a callable of parameters ``new`` takes every call one of parameters ``old`` took, binding each
    argument as it did: ``old``'s parameters come first, the same names, kinds and defaults, and each one ``new``
    adds has a default (or is ``*args`` / ``**kwargs``)."""
    if old is None or new is None or len(new) < len(old) or new[: len(old)] != old:
        return False
    return all(default is not None or kind in ("VAR_POSITIONAL", "VAR_KEYWORD") for _, kind, default in new[len(old) :])


def _definable(
    recorded: dict[str, Any], new: dict[str, Any], removed: dict[str, dict[str, str | None]]
) -> list[list[str]] | None:
    """The ``[module, name]`` imports that make an old value's recorded expression mean on ``new`` what it meant
    (its names from the standard library, the builtins, or the package where ``new`` binds them, moved or not);
    ``None`` when one of its names is bound nowhere ``new`` has it."""
    imports: list[list[str]] = []
    for name, origin in sorted(recorded["names"].items()):
        if origin is None:
            return None
        module, _, attribute = origin.rpartition(".")
        if module == "builtins":
            continue
        if module.split(".")[0] in sys.stdlib_module_names:
            imports.append([module, attribute])
        elif attribute in new["modules"].get(module, {}):
            imports.append([module, attribute])
        elif moved := removed.get(module, {}).get(attribute):
            imports.append([moved, attribute])
        else:
            return None
        if attribute != name:  # imported under another name in the old module: not written that way here
            return None
    return imports


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
    rec.add_argument(
        "--also", type=Path, action="append", default=[], help="an older release's record: try its modules too"
    )
    cmp = sub.add_parser("compare", help="write the table of removed names from the records")
    cmp.add_argument("old", type=Path, nargs="+", help="the 1.x records (the newest is compared first)")
    cmp.add_argument("new", type=Path)
    cmp.add_argument("--output", "-o", type=Path, default=TABLE)
    args = parser.parse_args(argv)
    if args.command == "record":
        olders = [json.loads(path.read_text(encoding="utf-8")) for path in args.also]
        also = tuple(dict.fromkeys(module for older in olders for module in older.get("modules", ())))
        listed: dict[str, set[str]] = {}
        for older in olders:
            for module, old_names in older.get("modules", {}).items():
                listed.setdefault(module, set()).update(old_names)
        wanted = tuple(
            shim["replacement"]
            for older in olders
            for names in older.get("deprecated", {}).values()
            for shim in names.values()
            if shim["replacement"]
        )
        _write(args.output, record(also=also, replacements=wanted, names=listed))
    else:
        olds = [json.loads(p.read_text(encoding="utf-8")) for p in args.old]
        _write(args.output, compare_releases(olds, json.loads(args.new.read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
