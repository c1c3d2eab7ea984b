"""The scenario matrix: every recipe the site recommends, proven across a generated space of Trainer configurations.

``data/scenarios.toml`` declares the space (:mod:`.space`): its axes (each value with the report or documentation
that makes it real), the values that cannot combine, the named scenarios (hand-picked, and one per public report),
and the recipes (rows: the page that shows the recipe, the names it defines, what it reduces and how it weights
batches, and its domain: the axis values it supports). The cells the build runs are

* every named scenario for every recipe, and
* a covering set (:func:`.space.covering_set`): every pair of values of two axes -- the recipe being one of the
  axes -- at least once, where no constraint, stage or domain excludes it, in cells expected to hold; and
* one cell for each trap a recipe declares that no named scenario shows (:func:`.space.trap_cells`).

Each cell runs in :mod:`.harness` (the recipe's own classes, observers beside them) against a ground truth computed
without the recipe (:mod:`.truth`), and is classified ``holds``, ``differs`` (by how much), ``raises`` (what, as
Lightning or Python raised it) or ``not applicable`` (outside the recipe's domain, with the declared reason and the
page of the variant to use, or a scenario that runs no stage of the recipe). A cell inside the domain must hold,
unless the matrix file declares it a trap kept as evidence (``declared``, with its reason and page).

``python -m migration_guide.scenarios --output FILE`` writes the results as JSON (atomically) and exits 1 when a
cell's outcome is not the declared one, naming the recipe, the scenario and what happened. Cells run side by side
in joblib's loky workers (``--jobs``; default: every core), or on the workers of a Dask scheduler (``--scheduler
ADDRESS``, default ``$GUIDE_DASK_SCHEDULER``: :func:`on_dask`, joblib's ``dask`` backend). The Sphinx extension
``docs/_ext/guide/scenario_matrix.py`` runs it at every build and renders ``docs/reference/scenarios.rst`` and each
recipe page's domain box.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import wait
from pathlib import Path
from typing import Any

from lightning_migrate.records import write_atomic

from . import harness as harness_module
from . import space as space_module
from . import truth as truth_module
from .harness import OUTCOMES, REL_TOL, TRANSFORMS, page_definitions, page_source, quiet, run_cell
from .progress import Progress
from .space import (
    MATRIX_FILE,
    ROOT,
    MatrixError,
    Recipe,
    Scenario,
    Space,
    cached_covering_set,
    coverable_pairs,
    covered_pairs,
    covering_set,
    keep_covering_set,
    kept_covering_set_file,
    load_matrix,
    load_space,
    random_cells,
    scenario_table,
    trap_cells,
)
from .truth import reduce as _reduce

__all__ = [
    "MATRIX_FILE", "OUTCOMES", "REL_TOL", "TRANSFORMS", "MatrixError", "Recipe", "Scenario", "Space",
    "cached_covering_set", "coverable_pairs", "covered_pairs", "covering_set", "failures", "keep_covering_set",
    "kept_covering_set_file", "load_matrix",
    "load_space", "main", "page_definitions", "page_source", "random_cells", "run_cells", "run_matrix",
    "scenario_table", "trap_cells", "write_atomic", "_reduce",
]  # fmt: skip


def cell_result(recipe: Recipe, scenario: Scenario, root: Path = ROOT, declared_warnings: tuple = ()) -> dict:
    """Run one cell quietly (:func:`.harness.quiet`, ignoring ``declared_warnings``); the result names the recipe,
    the scenario, the declared outcome, and for a declared trap its reason, page and ``match``. A cell the run finds
    outside the scenario (a crash with no point to happen at) is expected ``not applicable`` where it was declared to
    hold; a declared trap stays expected to fail, so that a trap cell which stops showing its trap fails the run."""
    with quiet(declared_warnings):
        result = run_cell(recipe, scenario, root)
    expected = recipe.expected(scenario)
    if result.get("in_run") and expected == "holds":  # a declared trap must still show, never vanish
        expected = "not applicable"
    result.update(recipe=recipe.id, scenario=scenario.id, expected=expected)
    declared = recipe.declared_for(scenario)
    if declared and result["expected"] == declared.outcome:
        result["declared"] = {"reason": declared.reason, "see": declared.see, "match": declared.match}
    return result


#: Below this many cells, known in advance, :func:`run_cells` starts no worker: two workers' start (a torch and
#: Lightning import each, about 4 s of processor time) outweighs what they save on cells of about 0.2 s (2 cells
#: of a recipe's named scenarios: 30.6 s wall with 2 workers, 8.7 s in-process, on a loaded 2-core machine).
IN_PROCESS_BELOW = 40


def run_cells(
    cells: list[tuple[Recipe, Scenario]],
    root: Path = ROOT,
    jobs: int | None = None,
    then=None,
    declared=(),
    progress: Callable[[int], Progress] | None = None,
    run: Callable[..., dict] = cell_result,
    scheduler: str | None = None,
) -> list:
    """Results of ``cells``, in order, run in ``jobs`` loky worker processes (joblib's reusable executor; ``1``:
    in this process), or with ``scheduler`` on the workers of that Dask scheduler (:func:`on_dask`). ``then``, when
    given, is called once every cell is submitted and returns more cells to run (the build generates the covering set
    while the named cells run). ``declared``: the matrix file's warnings. ``progress``, when given, is called with the
    number of cells known when the first run starts and returns the :class:`.progress.Progress` each finished cell
    advances, whose total grows by the cells ``then`` adds (``main`` prints the matrix's progress so). ``run``: what
    runs one cell, ``run(recipe, scenario, root, declared)`` (default :func:`cell_result`).

    With ``jobs`` unset, one worker per core -- unless every cell is known (no ``then``) and there are fewer than
    :data:`IN_PROCESS_BELOW`: then they run in this process, since a worker costs an import of torch and Lightning
    (about 4 s of processor time) where a cell costs about 0.2 s."""
    if scheduler:
        return on_dask(scheduler, [*cells, *(then() if then else [])], root, declared, progress, run)
    if jobs is None and then is None and len(cells) < IN_PROCESS_BELOW:
        jobs = 1
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1:
        cells = [*cells, *(then() if then else [])]
        tracker = progress(len(cells)) if progress else None
        results = []
        for recipe, scenario in cells:
            results.append(run(recipe, scenario, root, declared))
            if tracker:
                tracker.advance()
        return results
    from joblib.externals.loky import get_reusable_executor

    executor = get_reusable_executor(max_workers=jobs, timeout=60)
    futures = [executor.submit(run, recipe, scenario, root, declared) for recipe, scenario in cells]
    # the clock starts with the first cells: while ``then`` makes the rest, those run, and each counts when it
    # finishes (a callback, not a loop after ``then``: cells that finished while the covering set was generated
    # would all count at once, and the estimate of the time left take them for instant)
    tracker = progress(len(futures)) if progress else None
    lock = threading.Lock()

    def finished(_future) -> None:
        with lock:
            tracker.advance()  # type: ignore[union-attr]  # attached only with a tracker

    if tracker:
        if then:
            tracker.expect_more()
        for future in futures:
            future.add_done_callback(finished)
    if then:
        more = [executor.submit(run, recipe, scenario, root, declared) for recipe, scenario in then()]
        if tracker:
            with lock:
                tracker.extend(len(more))
            for future in more:
                future.add_done_callback(finished)
        futures += more
    wait(futures)
    return [future.result() for future in futures]


#: The environment variable that names a Dask scheduler (``tcp://host:8786``) for the matrix and the exploration:
#: the default of their ``--scheduler``, so that the build's matrix, started by Sphinx, runs there too.
SCHEDULER_VARIABLE = "GUIDE_DASK_SCHEDULER"


def _indexed(index: int, run: Callable[..., dict], *args: Any) -> tuple[int, dict]:
    return index, run(*args)


def _daemonic() -> bool:
    import multiprocessing

    return bool(multiprocessing.current_process().daemon)


def on_dask(
    address: str,
    cells: list[tuple[Recipe, Scenario]],
    root: Path = ROOT,
    declared=(),
    progress: Callable[[int], Progress] | None = None,
    run: Callable[..., dict] = cell_result,
) -> list:
    """Results of ``cells``, in order, run on the workers of the Dask scheduler at ``address``, through joblib's
    ``dask`` backend (``joblib.parallel_config(backend="dask")``); ``progress`` as :func:`run_cells` takes it.

    The workers run the project from a checkout at the same path as ``root`` (the cells read the recipes' pages
    there), with this environment's packages, ``PYTHONPATH`` holding the checkout's ``src``, and the build's warning
    filters (``PYTHONWARNINGS``) when the run is the build's; each runs one cell at a time (``--nthreads 1``: a cell
    sets process-wide state, the warning filters, Lightning's log level, the seeds, standard output), and the
    multi-process cells need workers that may start processes (``DASK_DISTRIBUTED__WORKER__DAEMON=False``).

    Raises:
        MatrixError: a worker runs several threads, or a multi-process cell would run on a daemonic worker.
    """
    import joblib
    from distributed import Client

    results: list[Any] = [None] * len(cells)
    with Client(address) as client:
        threads = {worker: n for worker, n in client.nthreads().items() if n != 1}
        if threads:
            raise MatrixError(
                f"the Dask workers of {address} must run one cell at a time (start them with --nthreads 1): {threads}"
            )
        if any(scenario.distributed for _, scenario in cells) and any(client.run(_daemonic).values()):
            raise MatrixError(
                f"the Dask workers of {address} are daemonic processes, which cannot start the processes of the DDP "
                "cells: start them with DASK_DISTRIBUTED__WORKER__DAEMON=False"
            )
        tracker = progress(len(cells)) if progress else None
        with joblib.parallel_config(backend="dask"):
            parallel = joblib.Parallel(n_jobs=-1, return_as="generator_unordered")
            tasks = (joblib.delayed(_indexed)(i, run, r, s, root, declared) for i, (r, s) in enumerate(cells))
            for index, result in parallel(tasks):
                results[index] = result
                if tracker:
                    tracker.advance()
    return results


def run_matrix(
    space: Space,
    root: Path = ROOT,
    only: set[str] | None = None,
    scenarios: set[str] | None = None,
    jobs: int | None = None,
    cache_dir: Path | None = None,
    covering: bool = True,
    progress: Callable[[int], Progress] | None = None,
    scheduler: str | None = None,
) -> dict[str, Any]:
    """Run the named scenarios for every recipe (or the recipes in ``only``) and the covering set (unless
    ``covering`` is false); ``scenarios`` keeps the cells of those scenario ids only; ``progress``: as
    :func:`run_cells` takes it; ``scheduler``: a Dask scheduler's address, where the cells run
    (:func:`on_dask`). Returns the JSON document the pages are rendered from."""
    import lightning
    import torch

    started = time.perf_counter()
    recipes = [r for r in space.recipes if not only or r.id in only]
    by_id = {r.id: r for r in space.recipes}
    named = [(r, s) for r in recipes for s in space.scenarios if not scenarios or s.id in scenarios]
    generated: list[tuple[Recipe, Scenario]] = []

    def covering_cells() -> list[tuple[Recipe, Scenario]]:
        for rid, scenario in [*cached_covering_set(space, cache_dir), *trap_cells(space)]:
            if (not only or rid in only) and (not scenarios or scenario.id in scenarios):
                generated.append((by_id[rid], scenario))
        return generated

    then = covering_cells if covering else None
    cells = run_cells(named, root, jobs, then=then, declared=space.warnings, progress=progress, scheduler=scheduler)
    shown = [s for s in space.scenarios if not scenarios or s.id in scenarios]
    sent = space_module.referrals_by_recipe(space)
    return {
        "lightning": lightning.__version__,
        "torch": torch.__version__,
        "seconds": round(time.perf_counter() - started, 2),
        "jobs": jobs or os.cpu_count(),
        "axes": [
            {
                "id": axis.id,
                "title": axis.title,
                "stages": list(axis.stages),
                "default": axis.default,
                "values": [{"id": v.id, "label": v.label, "source": v.source} for v in axis.values.values()],
            }
            for axis in space.axes.values()
        ],
        "constraints": [
            {"values": {a: sorted(v) for a, v in c.values.items()}, "reason": c.reason} for c in space.constraints
        ],
        "scenarios": [_scenario_entry(s) for s in [*shown, *(s for _, s in generated)]],
        "recipes": [
            {
                "id": r.id,
                "title": r.title,
                "page": r.page,
                "stage": r.stage,
                "transform": r.transform,
                "own_step": bool(r.targets),  # its own training_step computes its loss: the scenario's is not run
                "outside": [
                    {"axis": o.axis, "values": sorted(o.values), "reason": o.reason, "see": o.see} for o in r.outside
                ],
                "declared": [
                    {
                        "values": {a: [v for v in space.axes[a].values if v in vs] for a, vs in d.values.items()},
                        "scenario": d.scenario,
                        "outcome": d.outcome,
                        "reason": d.reason,
                        "see": d.see,
                    }
                    for d in r.declared
                    if d.here()  # a trap of other releases only is evidence of their sessions, not of this build
                ],
                # two outside values at once: the page that holds there; values no page holds (a declared gap)
                "together": sent[r.id]["together"],
                "gaps": sent[r.id]["gaps"],
            }
            for r in recipes
        ],
        "covering": {
            "cells": len(generated),
            "strength": 2,
            "traps": sum(scenario.id.startswith("trap-") for _, scenario in generated),
        },
        "stage_calls": {
            stage: [c for c in space.axes["calls"].values if space_module.runs_stage(space, c, stage)]
            for stage in space_module.STAGES
        }
        if "calls" in space.axes
        else {},
        "cells": cells,
    }


def _scenario_entry(scenario: Scenario) -> dict[str, Any]:
    return {
        "id": scenario.id,
        "title": scenario.title,
        "source": scenario.source,
        "values": scenario.values,
        "generated": scenario.generated,
    }


def _shows_the_difference(cell: dict[str, Any], declared: dict[str, Any]) -> str | None:
    """A declared difference is one of value, not of count (or its ``match`` is in the detail): ``None`` when the
    cell shows it, else what it lacks."""
    if declared.get("match"):
        return None if declared["match"] in cell["detail"] else f" with {declared['match']!r}"
    return None if cell.get("relative_error") is not None else " in value"


def _shows_the_error(cell: dict[str, Any], declared: dict[str, Any]) -> str | None:
    """A declared error is that error: its ``match`` is in the detail."""
    match = declared.get("match") or ""
    return None if match in cell["detail"] else f" with {match!r}"


#: The implementation of each declared ``outcome`` (a trap's): how a cell shows it.
DECLARED_OUTCOMES: dict[str, Callable[[dict[str, Any], dict[str, Any]], str | None]] = {
    "differs": _shows_the_difference,
    "raises": _shows_the_error,
}


def failures(document: dict[str, Any]) -> list[str]:
    """One line per cell whose outcome is not the declared one.

    A declared ``raises`` must raise an error whose text contains its ``match``; a declared ``differs`` must log as
    many values as expected, with different values (or contain its ``match``) (:data:`DECLARED_OUTCOMES`). Each
    line reads ``recipe × scenario: expected X, got Y: detail [page]``, ``page`` being the recipe's page (with the
    line, for an exception raised there).
    """
    pages = {recipe["id"]: recipe["page"] for recipe in document["recipes"]}
    lines = []
    for cell in document["cells"]:
        where = cell.get("where") or pages[cell["recipe"]]
        head = f"{cell['recipe']} × {cell['scenario']}: expected {cell['expected']}"
        if cell["outcome"] != cell["expected"]:
            lines.append(f"{head}, got {cell['outcome']}: {cell['detail']} [{where}]")
            continue
        declared = cell.get("declared")
        if cell["outcome"] in DECLARED_OUTCOMES and (declared or cell["outcome"] == "differs"):
            lacks = DECLARED_OUTCOMES[cell["outcome"]](cell, declared or {})
            if lacks:
                lines.append(f"{head}{lacks}, got: {cell['detail']} [{where}]")
    return lines


#: Where each kind the schema declares (:func:`migration_guide.scenario_schema.declared_kinds`, by its dotted
#: path) is implemented: one table per kind, keyed by its values, each entry the code that does it.
#: ``tests/test_scenario_schema.py`` fails when the two disagree.
IMPLEMENTATIONS: dict[str, Any] = {
    "axis.stages": space_module.STAGE_RUNS,
    "recipe.stage": space_module.STAGE_RUNS,
    "recipe.weighting": {**truth_module.WEIGHTINGS, "calls": truth_module.stageless_calls},
    "recipe.over_runs": truth_module.OVER_RUNS,
    "recipe.transform": TRANSFORMS,
    "recipe.declared.outcome": DECLARED_OUTCOMES,
    "runs": harness_module.CALLS,
    "resume": harness_module.RESUMES,
    "strategy": harness_module.STRATEGIES,
    "data.kind": harness_module.DATA_KINDS,
    "data.source": harness_module.DATA_SOURCES,
    "data.train_loaders": harness_module.TRAIN_LOADER_COUNTS,
    "data.eval_loaders": harness_module.EVAL_LOADER_COUNTS,
    "data.split": harness_module.SPLITS,
    "data.course": harness_module.COURSES,
    "data.batch_sampler": harness_module.BATCH_SAMPLERS,
    "step.train": harness_module.TRAIN_STEPS,
    "step.eval": harness_module.EVAL_STEPS,
    "callbacks": harness_module.BESIDE,
}


def implementation_gaps() -> list[str]:
    """One line per kind declared in the schema (:func:`migration_guide.scenario_schema.declared_kinds`) without
    its implementation in :data:`IMPLEMENTATIONS`, or implemented without being declared: ``[]`` when they agree."""
    from ..scenario_schema import declared_kinds

    declared = {path: set(key.choices or ()) for path, key in declared_kinds().items()}
    gaps = [
        f"{path}: declared in the schema, no implementation table" for path in declared.keys() - IMPLEMENTATIONS.keys()
    ]
    gaps += [f"{path}: implemented, not declared in the schema" for path in IMPLEMENTATIONS.keys() - declared.keys()]
    for path in sorted(declared.keys() & IMPLEMENTATIONS.keys()):
        implemented = set(IMPLEMENTATIONS[path])
        gaps += [
            f"{path} = {kind!r}: declared, not implemented" for kind in sorted(declared[path] - implemented, key=str)
        ]
        gaps += [
            f"{path} = {kind!r}: implemented, not declared" for kind in sorted(implemented - declared[path], key=str)
        ]
    return gaps


def main(argv: list[str] | None = None) -> int:
    """Command line: run the matrix, write ``--output`` (JSON), exit 1 naming every unexpected cell."""
    parser = argparse.ArgumentParser(prog="python -m migration_guide.scenarios", description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, help="where to write the results (JSON)")
    parser.add_argument("--matrix", type=Path, default=MATRIX_FILE, help="the matrix file (default: %(default)s)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree whose recipe pages run")
    parser.add_argument("--recipe", action="append", help="run only this recipe (repeatable)")
    parser.add_argument("--scenario", action="append", help="run only this scenario id (repeatable)")
    parser.add_argument("--jobs", type=int, help="worker processes (default: one per core)")
    parser.add_argument("--cache", type=Path, help="keep the generated covering set in this folder")
    parser.add_argument("--named-only", action="store_true", help="run the named scenarios, not the covering set")
    parser.add_argument(
        "--keep-covering-set",
        action="store_true",
        help="write the covering set beside the matrix file (its .covering-set.json, read by builds while the "
        "space is the same) and run nothing",
    )
    parser.add_argument(
        "--scheduler",
        default=os.environ.get(SCHEDULER_VARIABLE) or None,
        help=f"run the cells on this Dask scheduler's workers (default: ${SCHEDULER_VARIABLE}, else here)",
    )
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"--root {args.root}: no such folder (the tree whose recipe pages run)")
    try:
        space = load_space(args.matrix)
        unknown = set(args.recipe or ()) - {r.id for r in space.recipes}
        if unknown:
            raise MatrixError(f"{args.matrix}: no recipe {sorted(unknown)}")
        if args.keep_covering_set:
            path, changed = keep_covering_set(space, args.cache)
            print(f"{path}: {'written' if changed else 'unchanged (it already holds the covering set of this space)'}")
            return 0
        document = run_matrix(
            space,
            args.root.resolve(),
            set(args.recipe) if args.recipe else None,
            set(args.scenario) if args.scenario else None,
            args.jobs,
            args.cache,
            covering=not args.named_only,
            progress=Progress,  # cells done / total and the time left, every 10 s, on standard output
            scheduler=args.scheduler,
        )
    except MatrixError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.output:
        write_atomic(args.output, json.dumps(document, indent=1, default=str) + "\n")
    counts = {outcome: sum(c["outcome"] == outcome for c in document["cells"]) for outcome in OUTCOMES}
    scenarios = len(document["scenarios"])
    where = f"the Dask scheduler {args.scheduler}" if args.scheduler else f"{document['jobs']} workers"
    print(
        f"scenario matrix: {len(document['cells'])} cells ({scenarios} scenarios, {document['covering']['cells']} "
        f"generated) in {document['seconds']} s on {where}: {counts}"
    )
    bad = failures(document)
    for line in bad:
        print(f"scenario matrix: {line}", file=sys.stderr)
    return 1 if bad else 0
