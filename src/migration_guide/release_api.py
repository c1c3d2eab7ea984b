"""Whether the pages use only what a Lightning release has: names imported from Lightning, and the keyword arguments
given to Lightning's classes and functions, checked against the installed release.

The guide's pages claim Lightning 2.x from its oldest declared release (``data/compat/matrix.toml``); the build runs
them on its own release only. ``python -m migration_guide.compat --version V --check --pages`` (``nox -s matrix``)
runs :func:`problems` in each 2.x release's environment: every gallery script and the code cells of every MyST
notebook under ``docs/`` are read (never run: ``ast``), and

* each ``from lightning.x import y`` / ``import lightning.x`` must import, and ``y`` be there;
* each call of a name imported from Lightning (``Trainer(...)``, ``ModelCheckpoint(...)``, ``pl.Trainer(...)``)
  must give only keyword arguments its signature on the release has (a signature with ``**kwargs`` takes any);
* each ``trainer.fit/validate/test/predict(...)`` (a name bound by ``= Trainer(...)``, or called ``trainer``) and
  each ``self.log(...)`` / ``self.log_dict(...)`` / ``pl_module.log(...)`` likewise.

A line names the page, the line, the call and the argument the release lacks. It is a static check: what the
examples' code computes is proven by running it (the build, and the recipes' cells on every release:
:mod:`migration_guide.scenarios.releases`).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from typing import Any

from .source_tree import ROOT

#: The methods of a Trainer a page calls with keyword arguments.
TRAINER_METHODS = ("fit", "validate", "test", "predict")
#: The LightningModule methods a page's steps and callbacks call on the module.
MODULE_METHODS = ("log", "log_dict")


def pages(root: Path = ROOT) -> list[Path]:
    """Every gallery script and MyST notebook of the site (``gallery/**/*.py``, ``docs/**/*.md`` with code cells)."""
    found = sorted((root / "gallery").rglob("*.py"))
    found += sorted(p for p in (root / "docs").rglob("*.md") if "```{code-cell}" in p.read_text(encoding="utf-8"))
    return found


def source(page: Path) -> str:
    """The page's Python: a script as it is, a notebook's code cells (other lines blanked, so lines stay the page's)."""
    from .scenarios.harness import page_source

    return page_source(page)


def _resolve(module: str, name: str | None) -> tuple[Any, str | None]:
    """``(object, None)``, or ``(None, why)`` when the installed release lacks it."""
    try:
        imported = importlib.import_module(module)
    except ImportError as error:
        return None, f"no module {module} ({error})"
    if name is None:
        return imported, None
    if hasattr(imported, name):
        return getattr(imported, name), None
    try:
        return importlib.import_module(f"{module}.{name}"), None
    except ImportError:
        return None, f"{module} has no {name!r}"


def _accepts(target: Any, keyword: str) -> bool | None:
    """Whether ``target`` (a class or function) takes ``keyword``; ``None`` when its signature cannot be read."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    parameters = signature.parameters.values()
    return keyword in signature.parameters or any(p.kind is p.VAR_KEYWORD for p in parameters)


def page_problems(page: Path, root: Path = ROOT) -> list[str]:
    """What ``page`` uses that the installed Lightning lacks, one line each (``page:line: ...``)."""
    import lightning.pytorch as pl

    text = source(page)
    tree = ast.parse(text, filename=str(page))
    where = page.relative_to(root) if page.is_relative_to(root) else page
    lines: list[str] = []
    bound: dict[str, Any] = {}  # names bound to Lightning objects: imported names and module aliases
    trainers = {"trainer"}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.split(".")[0] in ("lightning", "pytorch_lightning")
        ):
            for alias in node.names:
                found, why = _resolve(node.module, alias.name)
                if why:
                    lines.append(f"{where}:{node.lineno}: from {node.module} import {alias.name}: {why}")
                else:
                    bound[alias.asname or alias.name] = found
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("lightning", "pytorch_lightning"):
                    found, why = _resolve(alias.name, None)
                    if why:
                        lines.append(f"{where}:{node.lineno}: import {alias.name}: {why}")
                    elif alias.asname:
                        bound[alias.asname] = found
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            called = _called(node.value.func, bound)
            if called is pl.Trainer:
                trainers.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not any(k.arg for k in node.keywords):
            continue
        target, label = _target(node.func, bound, trainers, pl)
        if target is None:
            continue
        for keyword in (k.arg for k in node.keywords if k.arg):
            if _accepts(target, keyword) is False:
                lines.append(
                    f"{where}:{node.lineno}: {label}({keyword}=...): Lightning {pl.__version__} has no such argument"
                )
    return sorted(lines, key=lambda line: int(line.split(":")[1]))  # in the page's order


def _called(func: ast.expr, bound: dict[str, Any]) -> Any:
    """The Lightning object a call's function names: an imported name, or an attribute of an imported module."""
    if isinstance(func, ast.Name):
        return bound.get(func.id)
    if isinstance(func, ast.Attribute):
        owner = _called(func.value, bound)
        return getattr(owner, func.attr, None) if inspect.ismodule(owner) or inspect.isclass(owner) else None
    return None


def _target(func: ast.expr, bound: dict[str, Any], trainers: set[str], pl: Any) -> tuple[Any, str]:
    called = _called(func, bound)
    if called is not None and (inspect.isclass(called) or inspect.isfunction(called)):
        return called, ast.unparse(func)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        owner = func.value.id
        if owner in trainers and func.attr in TRAINER_METHODS:
            return getattr(pl.Trainer, func.attr), f"Trainer.{func.attr}"
        if owner in ("self", "pl_module", "module", "model") and func.attr in MODULE_METHODS:
            return getattr(pl.LightningModule, func.attr), f"LightningModule.{func.attr}"
    return None, ""


def problems(root: Path = ROOT) -> list[str]:
    """:func:`page_problems` of every page of :func:`pages`."""
    return [line for page in pages(root) for line in page_problems(page, root)]
