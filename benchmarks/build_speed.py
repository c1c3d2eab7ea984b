"""Build-speed figures of the site, measured as ratios within one run.

Usage: ``python benchmarks/build_speed.py [--repeats N] [--keep DIR] [-- SPHINX_ARGS...]`` (``nox -s bench``).

For each repeat, in a fresh copy of the tree:

1. **plain**: the gallery scripts run one after the other in one plain Python process (this interpreter),
   each through :func:`runpy.run_path` in a fresh namespace with its own directory as working directory --
   what the examples cost with no Sphinx around them -- then the scenario matrix
   (``python -m migration_guide.scenarios``, the same command the build runs: the named scenarios and the
   generated covering set, on loky workers, one per core);
2. **clean**: ``sphinx-build`` of the whole site with ``CI=true`` (every example, MyST notebook and probe
   executed);
3. **no-op**: ``sphinx-build`` again in the same build directory, nothing changed (a developer's rebuild, so
   without ``CI=true``: CI re-executes everything by design).

The three runs are interleaved and the minimum of each over the repeats is kept, so machine load hits every
side alike. The matrix's share is printed twice: its wall time in the plain run, and the seconds it reports inside
the clean build (where it runs beside the examples), with the mean cost of a cell in one process and under DDP.
Then one example is edited and rebuilt: the script reports which examples sphinx-gallery re-ran
(from its ``.md5`` files) and fails if it is not exactly the edited one. Both sides run with the same
environment, so thread settings (``OMP_NUM_THREADS``) cannot favour either. The goals (clean <= 1.25 x plain,
no-op <= 10 % of clean) are printed next to the figures; the exit code is non-zero only when the build fails
or the edit re-ran the wrong examples -- speed is reported, never a reason to fail.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IGNORED = shutil.ignore_patterns(
    ".git", ".nox", ".venv", "_build", "__pycache__", "*.egg-info", ".pytest_cache", ".ruff_cache",
    "jupyter_execute", ".jupyter_cache", "lightning_logs", "examples", "sg_execution_times.rst",
)  # fmt: skip
CLEAN_GOAL, NOOP_GOAL = 1.25, 0.10
#: The scenario matrix as the build runs it (docs/_ext/scenario_matrix.py), counted in the plain figure.
MATRIX_COMMAND = [sys.executable, "-m", "migration_guide.scenarios"]

#: Runs every gallery script given on the command line in this one process, like sphinx-gallery would:
#: fresh ``__main__`` namespace, working directory = the script's directory, matplotlib on Agg, figures closed.
PLAIN_RUNNER = """
import os, runpy, sys
import matplotlib
matplotlib.use("agg")
import matplotlib.pyplot as plt
for script in sys.argv[1:]:
    os.chdir(os.path.dirname(script))
    runpy.run_path(script, run_name="__main__")
    plt.close("all")
"""


def gallery_scripts(tree: Path) -> list[Path]:
    """The gallery scripts sphinx-gallery executes (``gallery/**/*.py`` but ``__init__``/``conftest``), sorted."""
    return sorted(p for p in (tree / "gallery").rglob("*.py") if p.name not in {"__init__.py", "conftest.py"})


def fresh_tree(workdir: Path, name: str) -> Path:
    """A copy of the project's sources without any build output, at ``workdir / name``."""
    tree = workdir / name
    shutil.copytree(ROOT, tree, ignore=IGNORED)
    return tree


def children_cpu() -> float:
    """CPU seconds (user + system) used so far by this process's finished child processes and theirs."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def adopt_orphans() -> None:
    """Make this process the reaper of its orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``).

    A build may leave processes whose parent exits before them (loky's resource tracker, for one). Adopted and
    reaped here (:func:`reap_orphans`), their CPU time is counted by :func:`children_cpu` like the rest of the build's.
    """
    pr_set_child_subreaper = 36  # <linux/prctl.h>
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0) != 0:
        sys.exit(f"prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}")


def reap_orphans() -> None:
    """Wait for every remaining descendant adopted by :func:`adopt_orphans`."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def timed(command: list[str], cwd: Path, env: dict[str, str], label: str) -> tuple[float, float, str]:
    """Run ``command``; return (wall seconds, CPU seconds of it and all its descendants, combined output).

    The wall time ends when ``command`` exits; the CPU time also counts descendants that outlive it.
    Exits with the tail of the output if the command fails.
    """
    cpu, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    reap_orphans()
    cpu = children_cpu() - cpu
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        sys.exit(f"{label} failed (exit {proc.returncode}) in {cwd}:\n{tail}")
    return seconds, cpu, proc.stdout + proc.stderr


def sphinx_command(extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "sphinx", "-T", "-W", "--keep-going", "-j", "auto", "-c", ".", "-b", "html", "docs",
            "_build/html", *extra]  # fmt: skip


def md5_stamps(tree: Path) -> dict[str, int]:
    """``{example: mtime_ns}`` of the ``.md5`` files sphinx-gallery writes after executing an example."""
    return {p.name.removesuffix(".md5"): p.stat().st_mtime_ns for p in (tree / "docs" / "examples").rglob("*.py.md5")}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2, help="plain/clean pairs to run (minimum is kept)")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it (default: a temp dir)")
    parser.add_argument("sphinx_args", nargs="*", help="extra sphinx-build arguments (after --), e.g. -j 1")
    args = parser.parse_args()

    adopt_orphans()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="build-speed-"))
    workdir.mkdir(parents=True, exist_ok=True)
    # Both sides get the same environment; OMP_NUM_THREADS=1 is what conf.py sets for builds (unless set).
    base_env = dict(os.environ, PYTHONHASHSEED="0", MPLBACKEND="agg")
    base_env.setdefault("OMP_NUM_THREADS", "1")
    base_env.pop("CI", None)
    ci_env = dict(base_env, CI="true")
    print(f"python {sys.version.split()[0]} at {sys.executable}; OMP_NUM_THREADS={base_env['OMP_NUM_THREADS']}")
    print(f"sphinx-build extra arguments: {args.sphinx_args or 'none'}")
    print(f"start: {load()}", flush=True)

    plain_runs, clean_runs, noop_runs, matrix_runs = [], [], [], []  # (wall, cpu)
    matrix_in_build = []  # seconds the matrix process reported inside each clean build
    cell_costs: dict[str, list[float]] = {"one process": [], "DDP": []}  # seconds per cell that ran, in the build
    tree = None
    for repeat in range(args.repeats):
        tree = fresh_tree(workdir, f"tree-{repeat}")
        scripts = [str(p) for p in gallery_scripts(tree)]
        wall, cpu, _ = timed([sys.executable, "-c", PLAIN_RUNNER, *scripts], tree, ci_env, "plain run")
        print(f"  repeat {repeat}: plain run of {len(scripts)} scripts {wall:6.1f} s wall {cpu:6.1f} s CPU", flush=True)
        matrix_env = dict(ci_env, PYTHONPATH=str(tree / "src"))
        matrix_wall, matrix_cpu, out = timed(MATRIX_COMMAND, tree, matrix_env, "scenario matrix")
        cells = re.search(r"scenario matrix: (\d+) cells", out)
        matrix_cells = cells[1] if cells else "?"
        print(f"  repeat {repeat}: scenario matrix, {cells[1] if cells else '?'} cells {matrix_wall:6.1f} s wall "
              f"{matrix_cpu:6.1f} s CPU", flush=True)  # fmt: skip
        matrix_runs.append((matrix_wall, matrix_cpu))
        plain_runs.append((wall + matrix_wall, cpu + matrix_cpu))
        wall, cpu, output = timed(sphinx_command(args.sphinx_args), tree, ci_env, "clean build")
        clean_runs.append((wall, cpu))
        in_build = json.loads((tree / "_build" / "html" / ".doctrees" / "scenario-matrix.json").read_text())
        matrix_in_build.append(in_build["seconds"])
        strategy = {s["id"]: s["values"].get("strategy", "single") for s in in_build["scenarios"]}
        for cell in in_build["cells"]:
            if cell["outcome"] != "not applicable":
                kind = "one process" if strategy[cell["scenario"]] == "single" else "DDP"
                cell_costs[kind].append(cell["seconds"])
        executed = re.search(r"executed (\d+) out of (\d+)", output)
        print(f"  repeat {repeat}: clean build (CI=true)  {wall:6.1f} s wall {cpu:6.1f} s CPU  [{executed.group(0)}]")
        if executed is None or int(executed.group(1)) != len(scripts):
            sys.exit(f"the clean build did not execute all {len(scripts)} examples:\n{output[-3000:]}")
        wall, cpu, output = timed(sphinx_command(args.sphinx_args), tree, base_env, "no-op rebuild")
        noop_runs.append((wall, cpu))
        targets = re.search(r"building \[html\]: targets for (\d+) source files", output)
        built = targets[0] if targets else "?"
        print(f"  repeat {repeat}: no-op rebuild         {wall:6.1f} s wall {cpu:6.1f} s CPU  [{built}]")
        if not re.search(r"executed 0 out of 0", output):
            print("  note: the no-op rebuild executed examples")

    assert tree is not None

    # Edit one example (a comment: new content, new md5) and rebuild: only that example may run again.
    edited = gallery_scripts(tree)[0]
    before = md5_stamps(tree)
    edited.write_text(edited.read_text(encoding="utf-8") + "\n# edited by benchmarks/build_speed.py\n")
    edit, edit_cpu, output = timed(sphinx_command(args.sphinx_args), tree, base_env, "rebuild after an edit")
    after = md5_stamps(tree)
    rerun = sorted(name for name, stamp in after.items() if before.get(name) != stamp)
    summary = re.search(r"executed \d+ out of \d+ files?", output)
    print(f"  edited {edited.relative_to(tree)}: rebuild {edit:6.1f} s wall {edit_cpu:6.1f} s CPU, re-ran {rerun}")
    print(f"    sphinx-gallery: {summary.group(0) if summary else '?'}")
    print(f"end: {load()}")

    (plain, plain_cpu), (clean, clean_cpu), (noop, noop_cpu) = min(plain_runs), min(clean_runs), min(noop_runs)
    only_edited = rerun == [edited.name]
    print()
    print(f"                          wall (min of {args.repeats})   CPU")
    print(f"plain run of the scripts  {plain:8.1f} s   {plain_cpu:8.1f} s   (scripts, then the scenario matrix)")
    matrix_wall = min(matrix_runs)[0]
    print(f"  of which the matrix     {matrix_wall:8.1f} s   {min(matrix_runs)[1]:8.1f} s   "
          f"({matrix_wall / plain:.0%} of the plain run, {matrix_cells} cells)")  # fmt: skip
    print(f"scenario matrix, in build {min(matrix_in_build):8.1f} s   (its own clock, beside the examples: "
          f"{min(matrix_in_build) / clean:.0%} of the clean build's wall time)")  # fmt: skip
    for kind, costs in cell_costs.items():
        if costs:
            print(f"  a cell, {kind:11s}   {sum(costs) / len(costs):8.2f} s   (mean of {len(costs)} cells that ran)")
    print(f"clean build (CI=true)     {clean:8.1f} s   {clean_cpu:8.1f} s")
    print(f"no-op rebuild             {noop:8.1f} s   {noop_cpu:8.1f} s")
    verdict = {True: "met", False: "NOT met"}
    print(
        f"ratio clean / plain  {clean / plain:5.3f} wall  {clean_cpu / plain_cpu:5.3f} CPU   goal <= {CLEAN_GOAL}: "
        f"{verdict[clean / plain <= CLEAN_GOAL]}"
    )
    print(
        f"ratio no-op / clean  {noop / clean:5.3f} wall  {noop_cpu / clean_cpu:5.3f} CPU   goal <= {NOOP_GOAL}: "
        f"{verdict[noop / clean <= NOOP_GOAL]}"
    )
    print(f"edit one example     re-ran {len(rerun)} example(s)          goal 1: {verdict[only_edited]}")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if only_edited else 1


if __name__ == "__main__":
    sys.exit(main())
