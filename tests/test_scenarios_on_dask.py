"""Outgrowing one machine: the scenario matrix and the exploration run their cells on a Dask scheduler's workers
(``--scheduler ADDRESS`` or ``GUIDE_DASK_SCHEDULER``; joblib's ``dask`` backend), here a ``LocalCluster`` of two
worker processes on this machine: the same results as at home, each cell in a worker, and a clear error for workers
that cannot run the cells."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import dask  # requirements-test.txt installs it (requirements-dask.txt): a missing install fails, never skips
import distributed
import pytest
from builds import ROOT
from test_scenarios import CALLBACK_PAGE, OLD_HOOK_PAGE, small_project

from migration_guide import scenarios


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes of one thread each, allowed to start processes (the DDP cells fork their ranks)."""
    with dask.config.set({"distributed.worker.daemon": False}):
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as local:
            yield local


def where(recipe, scenario, root, declared) -> dict:
    """A stand-in for a cell: which process ran it."""
    return {"pid": os.getpid(), "scenario": scenario.id}


def test_the_matrix_runs_its_cells_on_the_schedulers_workers_with_the_same_results(cluster, tmp_path):
    """The command the build runs, given the scheduler through the environment: a single-process and a DDP cell of
    the callback-side recipe, and the same cells at home."""
    output = tmp_path / "dask.json"
    command = [sys.executable, "-m", "migration_guide.scenarios", "--recipe", "ddp_dataset_mean", "--named-only"]
    command += ["--scenario", "defaults", "--scenario", "ddp_odd_dataset"]
    path = os.pathsep.join([str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = dict(os.environ, PYTHONPATH=path, GUIDE_DASK_SCHEDULER=cluster.scheduler_address)
    run = subprocess.run([*command, "--output", str(output)], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"on the Dask scheduler {cluster.scheduler_address}" in run.stdout
    home = tmp_path / "home.json"
    env.pop("GUIDE_DASK_SCHEDULER")
    subprocess.run([*command, "--jobs", "1", "--output", str(home)], env=env, capture_output=True, check=True)
    on_dask, at_home = (json.loads(path.read_text(encoding="utf-8"))["cells"] for path in (output, home))
    keep = ("recipe", "scenario", "outcome", "expected", "detail", "relative_error")
    assert [{k: c.get(k) for k in keep} for c in on_dask] == [{k: c.get(k) for k in keep} for c in at_home]
    assert [c["outcome"] for c in on_dask] == ["holds", "holds"]


def test_each_cell_runs_in_a_worker_and_the_results_keep_their_order(cluster):
    loaded = scenarios.load_space()
    recipe = loaded.recipes[0]
    cells = [(recipe, scenario) for scenario in loaded.scenarios[:6]]
    results = scenarios.run_cells(cells, scheduler=cluster.scheduler_address, run=where)
    assert [r["scenario"] for r in results] == [s.id for _, s in cells]
    pids = {r["pid"] for r in results}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_the_exploration_runs_on_the_scheduler_and_finds_what_it_finds_at_home(cluster, tmp_path):
    from migration_guide.scenarios import explore

    project = small_project(tmp_path, OLD_HOOK_PAGE.replace(", outputs):", "):"))
    small = scenarios.load_space(project / "matrix.toml")
    out = io.StringIO()
    ran, found = explore.explore(small, project, 0.001, 3, 1, out=out, scheduler=cluster.scheduler_address)
    assert (ran, found) == (4, 3), out.getvalue()  # as at home (test_scenarios: seed 3, one batch of four)
    assert "expected holds, got raises: KeyError: 'loss'" in out.getvalue()


def test_workers_that_cannot_run_the_cells_are_refused_naming_why(tmp_path):
    """Several threads in a worker would run cells side by side in one process (warning filters, seeds and standard
    output are the process's); a daemonic worker cannot start a DDP cell's processes."""
    project = small_project(tmp_path, CALLBACK_PAGE)
    small = scenarios.load_space(project / "matrix.toml")
    cells = [(small.recipes[0], small.scenarios[0])]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as two:
        with pytest.raises(
            scenarios.MatrixError, match=r"must run one cell at a time \(start them with --nthreads 1\)"
        ):
            scenarios.run_cells(cells, project, scheduler=two.scheduler_address, run=where)
    loaded = scenarios.load_space()
    ddp = [(loaded.recipes[0], next(s for s in loaded.scenarios if s.id == "ddp_odd_dataset"))]
    with dask.config.set({"distributed.worker.daemon": True}):  # dask's default (the module's cluster sets False)
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as daemonic:
            with pytest.raises(scenarios.MatrixError, match=r"DASK_DISTRIBUTED__WORKER__DAEMON=False"):
                scenarios.run_cells(ddp, scheduler=daemonic.scheduler_address, run=where)
