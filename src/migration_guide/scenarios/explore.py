"""Exploration: many more scenarios than the build runs, drawn at random, for a time budget.

``python -m migration_guide.scenarios.explore --minutes N --seed S`` (``nox -s explore -- --minutes N --seed S``)
draws allowed cells at random (:func:`.space.random_cells`: every parameter uniformly, the recipe included; the
same seed draws the same cells), runs them in batches on every core as the build runs its cells, and prints each
cell that does not behave as the matrix file declares, with the ``[scenario.*]`` table that adds it as a named
scenario -- then the recipe's page can be fixed, or its domain narrowed, with the reason. It stops launching
batches when the budget is spent. Exit code 0: every cell behaved as declared; 1: some did not; 2: the matrix file
is malformed.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

from . import (
    MATRIX_FILE,
    ROOT,
    SCHEDULER_VARIABLE,
    MatrixError,
    failures,
    load_space,
    random_cells,
    run_cells,
    scenario_table,
)
from .progress import INTERVAL, duration


def explore(
    space,
    root: Path,
    minutes: float,
    seed: int,
    jobs: int | None,
    out=sys.stdout,
    clock=time.monotonic,
    scheduler: str | None = None,
) -> tuple[int, int]:
    """Run random cells for ``minutes``; print every unexpected cell with its table, and a progress line (cells
    run, findings, the time spent and the budget left) at most every :data:`.progress.INTERVAL` seconds of
    ``clock`` and after the last batch. ``scheduler``: run the cells on that Dask scheduler's workers
    (:func:`migration_guide.scenarios.on_dask`), four per worker in each batch. Returns (cells, findings)."""
    by_id = {r.id: r for r in space.recipes}
    draws = random_cells(space, seed)
    started = clock()
    deadline = started + minutes * 60
    # a batch is small, but the workers are reused from batch to batch
    jobs = jobs or (_workers(scheduler) if scheduler else os.cpu_count() or 1)
    batch = 4 * jobs
    ran = found = 0
    last = started
    pages = {r.id: r.page for r in space.recipes}
    while clock() < deadline:
        cells = [(by_id[rid], scenario) for rid, scenario in itertools.islice(draws, batch)]
        results = run_cells(cells, root, jobs, declared=space.warnings, scheduler=scheduler)
        ran += len(results)
        document = {"recipes": [{"id": rid, "page": page} for rid, page in pages.items()], "cells": results}
        scenarios = {scenario.id: scenario for _, scenario in cells}
        for line, cell in _unexpected(document):
            found += 1
            scenario = scenarios[cell["scenario"]]
            print(f"explore: {line}", file=out)
            print(f"  add to {MATRIX_FILE.name}:\n" + _indent(scenario_table(scenario, space)), file=out)
        now = clock()
        if now - last >= INTERVAL or now >= deadline:
            last = now
            left = f"{duration(deadline - now)} of the budget left" if now < deadline else "budget spent"
            print(f"explore: {ran} cells, {found} not as declared, {duration(now - started)} so far, {left}",
                  file=out, flush=True)  # fmt: skip
    return ran, found


def _workers(address: str) -> int:
    """How many workers the Dask scheduler at ``address`` has."""
    from distributed import Client

    with Client(address) as client:
        return max(1, len(client.nthreads()))


def random_cells_from(space, seed: int):
    from .space import random_cells

    return random_cells(space, seed)


def _unexpected(document: dict) -> list[tuple[str, dict]]:
    """``(failure line, cell)`` of each cell :func:`failures` names, except a cell its run found outside its
    scenario (``in_run``: a drawn configuration that never reaches the recipe's stage says nothing about the recipe,
    whatever the matrix file declares for those values)."""
    found = []
    for cell in document["cells"]:
        if cell.get("in_run"):  # the drawn configuration never reaches what the recipe is about: nothing learned
            continue
        lines = failures({**document, "cells": [cell]})
        if lines:
            found.append((lines[0], cell))
    return found


def _indent(text: str) -> str:
    return "".join(f"    {line}\n" for line in text.splitlines())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m migration_guide.scenarios.explore", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="time budget (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draws (default: %(default)s)")
    parser.add_argument("--jobs", type=int, help="worker processes (default: one per core)")
    parser.add_argument(
        "--scheduler",
        default=os.environ.get(SCHEDULER_VARIABLE) or None,
        help=f"run the cells on this Dask scheduler's workers (default: ${SCHEDULER_VARIABLE}, else here)",
    )
    parser.add_argument("--matrix", type=Path, default=MATRIX_FILE, help="the matrix file (default: %(default)s)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree whose recipe pages run")
    args = parser.parse_args(argv)
    try:
        space = load_space(args.matrix)
        ran, found = explore(space, args.root.resolve(), args.minutes, args.seed, args.jobs, scheduler=args.scheduler)
    except MatrixError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"explore: seed {args.seed}, {args.minutes:g} minutes: {ran} cells, {found} not as declared")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
