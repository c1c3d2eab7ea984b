"""Benchmark: the checker over a large real tree (the installed ``torch`` package) vs. parsing every file with libcst.

Prints, from one run: the number of ``.py`` files, the checker's files per second (the byte prefilter, ast and then
libcst only on files that may contain a hook, worker processes across the cores; and the same in one process), the
baseline's (read and ``libcst.parse_module`` every file, one process), their ratio (goal: at least 10), and the load
average of the machine at the start and end (other processes share the cores). File discovery is not timed.

Usage::

    python benchmarks/checker_speed.py [--tree PATH] [--jobs N] [--limit N]

``--limit`` checks only the first N files (sorted) on both sides: quicker, the same comparison.

It prints the large-file figure: ``check_source`` on one generated 10,000-line file in which every class has old
hooks (143 classes, 429 findings: ``training_epoch_end`` and ``validation_epoch_end`` reading ``outputs``, a
required ``dataloader_idx``), checking and fixing (the opt-in rewrites included), each the least processor time of
three runs, next to that of three plain ``libcst.parse_module`` runs of the same bytes (goal: checking within 2x).

It also prints the single-file figure: the command on one changed file of a made-up project of ``--project-files``
files (2,000 by default) under a ``pyproject.toml`` -- what pre-commit runs -- whose class derives from a
LightningModule two files away and whose hook name other files mention, so the base chain and the caller search
both cross the project. The figure is the median wall time of five in-process runs of the command's ``main``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import statistics
import tempfile
import time
from pathlib import Path

import libcst

from lightning_migrate.checker import check_source
from lightning_migrate.checker.cli import discover, run_checks
from lightning_migrate.checker.cli import main as checker_main
from lightning_migrate.checker.resolve import Project


def torch_tree() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("torch is not installed: pass --tree")
    return Path(spec.origin).parent


def baseline(files: list[Path]) -> tuple[float, int]:
    """Seconds to read and libcst-parse every file in this process; and how many failed to parse."""
    failed = 0
    start = time.perf_counter()
    for path in files:
        try:
            libcst.parse_module(path.read_bytes())
        except Exception:  # noqa: BLE001 - a file libcst cannot parse still cost its time
            failed += 1
    return time.perf_counter() - start, failed


def run_checker(tree: Path, files: list[Path], jobs: int) -> tuple[float, int, int]:
    """Seconds for the checker on ``files`` (building the project index included), files past the prefilter,
    findings."""
    start = time.perf_counter()
    absolute = [path.resolve() for path in files]
    reports = run_checks(absolute, Project(absolute, [tree.resolve()]), jobs=jobs)
    seconds = time.perf_counter() - start
    return seconds, sum(report.parsed for report in reports), sum(len(report.findings) for report in reports)


def single_file_in_project(n_files: int) -> tuple[float, int]:
    """Median seconds of ``lightning-migrate <one file>`` in a made-up project of ``n_files`` files, and the exit
    code (1: the cross-file finding was made)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname = 'made-up'\n")
        package = root / "src" / "app"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "base.py").write_text(
            "import lightning.pytorch as pl\n\n\nclass Base(pl.LightningModule):\n    pass\n"
        )
        (package / "middle.py").write_text("from app.base import Base\n\n\nclass Middle(Base):\n    pass\n")
        for i in range(n_files - 4):
            body = (
                f"def helper_{i}(x):\n    return x + {i}\n\n\nclass Thing{i}:\n    def on_validation_epoch_end(self):\n"
            )
            (package / f"module_{i}.py").write_text(body + "        return None\n")
        changed = package / "changed.py"
        changed.write_text(
            "from app.middle import Middle\n\n\nclass Model(Middle):\n"
            "    def validation_epoch_end(self, outputs):\n        pass\n"
        )
        times, code = [], 0
        for _ in range(5):
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                code = checker_main(["--jobs", "1", str(changed)])
            times.append(time.perf_counter() - start)
        return statistics.median(times), code


def large_file(lines: int = 10_000) -> bytes:
    """A module of ``lines`` lines or more: LightningModule classes, each with three old hooks and plain methods."""
    out = ["import torch", "import lightning.pytorch as pl", ""]
    i = 0
    while len(out) < lines:
        out += [
            f"class Model{i}(pl.LightningModule):",
            "    def __init__(self):",
            "        super().__init__()",
            "        self.layer = torch.nn.Linear(4, 4)",
            "",
            "    def training_step(self, batch, batch_idx):",
            "        loss = self.layer(batch).sum()",
            "        return {'loss': loss}",
            "",
            "    def training_epoch_end(self, outputs):",
            "        self.log('m', torch.stack([o['loss'] for o in outputs]).mean())",
            "",
            "    def validation_step(self, batch, batch_idx):",
            "        return self.layer(batch).sum()",
            "",
            "    def validation_epoch_end(self, outputs):",
            "        self.log('v', sum(outputs))",
            "",
            "    def on_train_batch_end(self, outputs, batch, batch_idx, dataloader_idx):",
            "        pass",
            "",
        ]
        for j in range(8):
            out += [
                f"    def helper_{j}(self, x):",
                f"        y = x + {j}",
                "        for k in range(3):",
                "            y = y * k",
            ]
            out += ["        return y", ""]
        out.append("")
        i += 1
    return ("\n".join(out) + "\n").encode()


def best_of(runs: int, function) -> float:
    """The least processor time (``time.process_time``: this process's own, so other processes sharing the cores
    do not inflate it) of ``runs`` calls of ``function``."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return min(times)


def large_file_figures() -> tuple[int, int, float, float, float]:
    """Lines, findings, and the seconds of a libcst parse, a check and a fix of :func:`large_file`."""
    data = large_file()
    parse = best_of(3, lambda: libcst.parse_module(data))
    check = best_of(3, lambda: check_source(data))
    fix = best_of(3, lambda: check_source(data, fix=True, unsafe_fixes=True))
    return data.count(b"\n"), len(check_source(data).findings), parse, check, fix


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=None, help="folder to scan (default: the installed torch)")
    parser.add_argument("--jobs", type=int, default=0, help="checker worker processes (default: one per core)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N files")
    parser.add_argument("--project-files", type=int, default=2000, help="size of the single-file run's project")
    args = parser.parse_args()
    tree = args.tree or torch_tree()
    load_start = os.getloadavg()

    files, errors = discover([tree])
    files = files[: args.limit] if args.limit else files
    jobs = args.jobs or os.cpu_count() or 1
    checker_seconds, parsed, findings = run_checker(tree, files, jobs)
    serial_seconds, _, _ = run_checker(tree, files, 1)
    baseline_seconds, failed = baseline([path.resolve() for path in files])
    load_end = os.getloadavg()

    n = len(files)
    checker_rate, baseline_rate = n / checker_seconds, n / baseline_seconds
    print(f"tree: {tree} ({n} .py files; {len(errors)} unreadable)")
    print(f"cores: {os.cpu_count()}; load average at start {load_start[0]:.2f}, at end {load_end[0]:.2f}")
    print(
        f"checker:            {checker_seconds:8.2f} s  {checker_rate:9.1f} files/s  "
        f"({jobs} processes; {parsed} files passed the byte prefilter; {findings} findings)"
    )
    print(f"checker, 1 process: {serial_seconds:8.2f} s  {n / serial_seconds:9.1f} files/s")
    print(
        f"libcst every file:  {baseline_seconds:8.2f} s  {baseline_rate:9.1f} files/s  "
        f"(one process; {failed} files libcst could not parse)"
    )
    print(f"ratio: {checker_rate / baseline_rate:.1f}x (goal: >= 10x)")
    lines, found, parse, check, fix = large_file_figures()
    print(
        f"a {lines}-line file with {found} findings (processor time): libcst parse {parse:.2f} s; check {check:.2f} s "
        f"({check / parse:.1f}x, goal <= 2x); fix with the opt-in rewrites {fix:.2f} s ({fix / parse:.1f}x)"
    )
    seconds, code = single_file_in_project(args.project_files)
    print(
        f"one changed file in a {args.project_files}-file project: {seconds:.3f} s (median of 5; exit code {code}, "
        "1 = the cross-file finding was made; goal: well under 1 s)"
    )


if __name__ == "__main__":
    main()
