"""Every recipe on every declared release: the smallest set of cells that meets each value of each recipe's domain.

The build runs the whole matrix on its own release (the named scenarios and a covering set of every pair of values).
The other 2.x releases of ``data/compat/matrix.toml`` run in their own environments (``nox -s matrix``), where time
counts, so each runs :func:`release_cells`: for every recipe, cells expected to hold (no constraint, stage, domain or
declared trap excludes them) that together meet every *target* of the recipe -- a value of an axis whose stages hold
the recipe's stage, inside the recipe's domain -- at least once. A cell carries as many targets as combine (greedy);
each value of a multi-process axis is met by one cell of its own per recipe, and never added to a cell for another
target. Generated, deterministic: the same file and release give the same cells; the release's name orders the
targets, so two releases meet the values in different combinations.

Targets a cell turns out not to reach when it runs (a crash cell whose fit ends before the crash, ``in_run``) are met
again by a cell of their own (:func:`rerun_cells`). ``python -m migration_guide.compat --version V --scenario-cells``
runs them against the same ground truth as the build and fails naming the release, the recipe and the scenario.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

from .space import RECIPE_AXIS, ROOT, Recipe, Scenario, Space, allowed, trap_cells

#: Axis values that start processes: the most expensive cells, added to no cell but their own target's.
MULTI_PROCESS = "strategy"


def targets(space: Space, recipe: Recipe, release: str | None = None) -> list[tuple[str, str]]:
    """``(axis, value)`` the release must meet for ``recipe``: each value of each axis whose stages hold the recipe's
    stage, that some cell expected to hold can take (:func:`.space.allowed` with ``traps=False`` for the pair)."""
    found = []
    for axis in space.axes.values():
        if recipe.stage not in axis.stages:
            continue
        for value in axis.values:
            if allowed(space, {RECIPE_AXIS: recipe.id, axis.id: value}, traps=False, release=release) and _complete(
                space, recipe, {axis.id: value}, release
            ):
                found.append((axis.id, value))
    return found


def _ok(space: Space, recipe: Recipe, values: dict[str, str], release: str | None = None) -> bool:
    return allowed(space, {RECIPE_AXIS: recipe.id, **values}, traps=False, release=release)


def _complete(space: Space, recipe: Recipe, fixed: dict[str, str], release: str | None = None) -> dict[str, str] | None:
    """A whole cell (a value of every axis) expected to hold that has ``fixed``: the defaults, or, when they do not
    combine with ``fixed``, the first change of one and then of two other axes (in file order) that does; ``None``
    when none does."""
    base = {**space.defaults(), **fixed}
    if _ok(space, recipe, base, release):
        return base
    free = [axis for axis in space.axes if axis not in fixed]
    for depth in (1, 2):
        for axes in itertools.combinations(free, depth):
            for choice in itertools.product(*(space.axes[a].values for a in axes)):
                candidate = {**base, **dict(zip(axes, choice, strict=True))}
                if _ok(space, recipe, candidate, release):
                    return candidate
    return None


def _order(release: str, recipe: str, items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``items`` in an order of their own for ``release`` and ``recipe`` (a hash, so the same every time)."""

    def key(item: tuple[str, str]) -> str:
        return hashlib.sha256(f"{release}|{recipe}|{item[0]}={item[1]}".encode()).hexdigest()

    return sorted(items, key=key)


def recipe_cells(space: Space, recipe: Recipe, release: str, todo: list[tuple[str, str]]) -> list[dict[str, str]]:
    """Cells (each a value of every axis) that meet every target of ``todo`` for ``recipe``: a cell opens with the
    first target left (a multi-process value first: each gets its own cell), completed from the defaults
    (:func:`_complete`), and takes every further single-process target that still combines with it."""
    left = _order(release, recipe.id, list(todo))
    left.sort(key=lambda item: item[0] != MULTI_PROCESS)  # the multi-process values open the first cells
    cells = []
    while left:
        first = left.pop(0)
        values = _complete(space, recipe, dict([first]), release)
        if values is None:  # cannot happen for a target of targets(): it was completed there
            raise ValueError(f"{recipe.id}: no cell expected to hold has {first[0]} = {first[1]!r}")
        fixed = {first[0]}
        for item in list(left):
            axis, value = item
            if axis in fixed or axis == MULTI_PROCESS:
                continue
            candidate = {**values, axis: value}
            if _ok(space, recipe, candidate, release):
                values = candidate
                fixed.add(axis)
                left.remove(item)
        left = [item for item in left if values.get(item[0]) != item[1]]  # met, by a target or by the completion
        cells.append(values)
    return cells


def release_cells(space: Space, release: str, only: set[str] | None = None) -> list[tuple[str, Scenario]]:
    """``(recipe id, scenario)`` for every recipe (or those in ``only``): :func:`recipe_cells` of all its
    :func:`targets`, the scenarios named ``release-<release>-<recipe>-<n>``."""
    cells = []
    for recipe in space.recipes:
        if only and recipe.id not in only:
            continue
        for number, values in enumerate(recipe_cells(space, recipe, release, targets(space, recipe, release)), 1):
            cells.append((recipe.id, space.scenario(f"release-{release}-{recipe.id}-{number}", values)))
    return cells


def met(cells: list[tuple[str, Scenario]], results: list[dict[str, Any]]) -> dict[str, set]:
    """The targets each recipe's cells reached: every value of a cell that ran the recipe's stage (not one its run
    found outside its scenario, ``in_run``), whatever its outcome (a cell that did not behave is a failure of its
    own)."""
    found: dict[str, set] = {}
    for (rid, scenario), result in zip(cells, results, strict=True):
        if not result.get("in_run"):
            found.setdefault(rid, set()).update(scenario.values.items())
    return found


def rerun_cells(space: Space, release: str, cells: list[tuple[str, Scenario]], results: list[dict[str, Any]]):
    """For each target no cell reached (its cell ran outside its scenario, ``in_run``), a cell of its own: the
    target alone, completed from the defaults. Named ``release-<release>-<recipe>-again-<n>``."""
    done = met(cells, results)
    more = []
    for recipe in space.recipes:
        if recipe.id not in {rid for rid, _ in cells}:
            continue
        missing = [t for t in targets(space, recipe, release) if t not in done.get(recipe.id, set())]
        for number, target in enumerate(missing, 1):
            values = _complete(space, recipe, dict([target]), release)
            if values is not None:
                more.append((recipe.id, space.scenario(f"release-{release}-{recipe.id}-again-{number}", values)))
    return more


def unmet(
    space: Space, cells: list[tuple[str, Scenario]], results: list[dict[str, Any]], release: str | None = None
) -> list[str]:
    """One line per target of a run recipe that no cell reached."""
    done = met(cells, results)
    lines = []
    for recipe in space.recipes:
        if recipe.id not in {rid for rid, _ in cells}:
            continue
        for axis, value in targets(space, recipe, release):
            if (axis, value) not in done.get(recipe.id, set()):
                lines.append(f"{recipe.id}: no cell reached {axis} = {value!r} (each ran outside its scenario)")
    return lines


def cells_digest(space: Space, recipe: Recipe, release: str) -> str:
    """A digest of the cells :func:`release_cells` generates for ``recipe`` on ``release`` (their scenarios'
    values, in order): a release's record of the recipe's runs is the current one while it is unchanged."""
    values = [scenario.values for _, scenario in release_cells(space, release, {recipe.id})]
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:16]


def cell_record(
    space: Space, release: str, cells: list[tuple[str, Scenario]], results: list[dict[str, Any]], lines: list[str]
) -> dict[str, dict[str, Any]]:
    """What a release's record keeps of its cells (``data/compat/<release>.json``, ``"scenario_cells"``), by recipe:
    ``{"cells": cells_digest, "runs": {scenario id: outcome}, "as_declared": whether every cell of the recipe behaved
    as declared and every value of its domain was met}``. Outcomes only, compared exactly by ``--check``; about
    12 KB of JSON for a release's 386 cells. ``lines``: :func:`check_release`'s, which name a recipe after
    ``Lightning <release>: ``."""
    by_id = {recipe.id: recipe for recipe in space.recipes}
    failing = {line.split(": ", 1)[1].split(" × ", 1)[0].split(":", 1)[0] for line in lines}
    record: dict[str, dict[str, Any]] = {}
    for (rid, scenario), result in zip(cells, results, strict=True):
        if rid not in record:  # the digest generates the recipe's cells again: once per recipe, not per cell
            record[rid] = {"cells": cells_digest(space, by_id[rid], release), "runs": {}}
        entry = record[rid]
        entry["runs"][scenario.id.removeprefix(f"release-{release}-{rid}-")] = result["outcome"]
    for rid, entry in record.items():
        entry["as_declared"] = rid not in failing
    return record


def checked_on(space: Space, records: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """``{recipe id: [release, ...]}``: the releases whose record (``{release: its data/compat JSON}``) holds the
    recipe's current cells (:func:`cells_digest`), every one as declared; releases in ``records``' order."""
    found: dict[str, list[str]] = {recipe.id: [] for recipe in space.recipes}
    for release, data in records.items():
        kept = data.get("scenario_cells", {})
        for recipe in space.recipes:
            entry = kept.get(recipe.id)
            if entry and entry["as_declared"] and entry["cells"] == cells_digest(space, recipe, release):
                found[recipe.id].append(release)
    return found


def check_release(
    release: str,
    jobs: int | None = None,
    space: Space | None = None,
    only: set[str] | None = None,
    root: Path | None = None,
):
    """Run :func:`release_cells` for ``release`` (then :func:`rerun_cells`) on the installed Lightning, against the
    build's ground truth; return ``(lines, cells, seconds, record)``: one line per cell that does not behave as
    declared and per target no cell reached, each starting ``Lightning <release>:`` and naming the recipe and the
    scenario, the number of cells run, the time taken, and what the release's record keeps (:func:`cell_record`).

    Raises:
        MatrixError: the matrix file or a recipe's page is wrong.
    """
    import os
    import time
    import warnings

    from . import failures, load_space, run_cells
    from .progress import Progress

    # Lightning's and torch's warnings about each other on an older release are not the recipe's, and the build's
    # filters (which make every warning an error) are the build release's: the cells ignore warnings here, in this
    # process and in the workers it starts.
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    warnings.simplefilter("ignore")
    # Every release runs on the build's torch (data/compat/matrix.toml: torch first, held). An older Lightning may
    # load its checkpoints with torch.load's default, which torch 2.6 turned to weights_only=True: a resumed run
    # fails on its own hyperparameters and loop state, whatever the recipe ("Weights only load failed": Lightning
    # 2.0.9 under torch 2.13, measured by these cells; 2.2.5 resumes). torch's documented switch restores the default
    # such a release was written against, for the cells only.
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    started = time.perf_counter()
    space = space or load_space()
    by_id = {recipe.id: recipe for recipe in space.recipes}
    cells = release_cells(space, release, only)
    root = root or ROOT
    # and each trap declared for some releases only, on such a release: the evidence that it still shows
    cells += [
        (rid, scenario)
        for rid, scenario in trap_cells(space, release)
        if (not only or rid in only) and getattr(by_id[rid].declared_for(scenario, release), "releases", None)
    ]
    run = [(by_id[rid], scenario) for rid, scenario in cells]
    results = run_cells(run, root, jobs=jobs, declared=space.warnings, progress=Progress)
    more = rerun_cells(space, release, cells, results)
    if more:
        results += run_cells([(by_id[rid], scenario) for rid, scenario in more], root, jobs, declared=space.warnings)
        cells += more
    document = {"recipes": [{"id": r.id, "page": r.page} for r in space.recipes], "cells": results}
    lines = [f"Lightning {release}: {line}" for line in failures(document) + unmet(space, cells, results, release)]
    return lines, len(cells), time.perf_counter() - started, cell_record(space, release, cells, results, lines)
