"""``lightning-migrate``: find the removed epoch-end / batch hooks of Lightning in Python files, and fix safe cases.

Usage::

    lightning-migrate [--diff | --fix] [--rewrite-caching] [--select LM001,LM002] [--jobs N] PATH ...

PATH is a file or a folder (searched for ``*.py``; ``.git``, virtual environments and caches are skipped).

Exit codes: 0 nothing found; 1 findings (or, with ``--fix``, files changed); 2 a usage error, or a file that could
not be read, decoded or parsed (reported with its path and line; the other files are still checked).
"""

from __future__ import annotations

import argparse
import difflib
import errno
import os
import stat
import sys
import tempfile
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from lightning_migrate.checker.core import MANUAL, PREFILTER, REWRITE, RULES, SAFE, Finding, check_source
from lightning_migrate.checker.resolve import Project

SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", ".nox", ".tox", "__pycache__", "node_modules", ".eggs"})
#: Files per worker task: small enough to balance two cores, large enough to amortise the process round trip.
CHUNK = 64


@dataclass
class FileReport:
    """The outcome of one file: findings, the rewritten bytes (``None``: unchanged) or an error text."""

    path: Path
    findings: list[Finding] = field(default_factory=list)
    new_source: bytes | None = None
    old_source: bytes | None = None
    error: str | None = None
    parsed: bool = False


def discover(paths: list[Path]) -> tuple[list[Path], list[str]]:
    """The ``.py`` files under ``paths`` (each once, symlinked folders not followed) and the paths that failed."""
    files: list[Path] = []
    errors: list[str] = []
    seen: set[Path] = set()

    def add(path: Path) -> None:
        try:
            real = path.resolve(strict=True)
            regular = stat.S_ISREG(real.stat().st_mode)
        except (OSError, RuntimeError) as err:
            errors.append(f"{path}: cannot read: {err.strerror if isinstance(err, OSError) else err}")
            return
        if not regular:  # a FIFO or a device would block the read, or never end
            errors.append(f"{path}: cannot read: not a regular file")
            return
        if real not in seen:
            seen.add(real)
            files.append(path)

    for path in paths:
        if path.is_dir():
            for folder, dirs, names in os.walk(path, onerror=lambda err: errors.append(f"{err.filename}: {err}")):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
                for name in sorted(names):
                    if name.endswith(".py"):
                        add(Path(folder) / name)
        elif path.exists() or path.is_symlink():
            add(path)
        else:
            errors.append(f"{path}: no such file or folder")
    return files, errors


_PROJECT: Project | None = None


def _init_worker(project: Project) -> None:
    global _PROJECT
    _PROJECT = project


def check_file(path: Path, fix: bool, rewrite_caching: bool, select: frozenset[str] | None) -> FileReport:
    """Check one file (reading it; never writing). Errors become ``FileReport.error``: ``path:line: cause``."""
    report = FileReport(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        report.error = f"{path}: cannot read: {err.strerror or err}"
        return report
    if not PREFILTER.search(data):
        return report
    report.parsed = True
    try:
        result = check_source(data, path, _PROJECT, fix=fix, rewrite_caching=rewrite_caching, select=select)
    except SyntaxError as err:
        report.error = f"{path}:{err.lineno or 0}:{err.offset or 0}: syntax error, file skipped: {err.msg}"
        return report
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        report.error = (
            f"{path}:{line}: cannot decode as {err.encoding} (declare the file's encoding with a coding cookie), "
            f"file skipped: {err.reason}"
        )
        return report
    except ValueError as err:  # e.g. null bytes
        report.error = f"{path}: cannot parse, file skipped: {err}"
        return report
    report.findings = result.findings
    if result.new_source is not None:
        report.old_source, report.new_source = data, result.new_source
    return report


def _check_chunk(paths, fix, rewrite_caching, select):
    reports = [check_file(path, fix, rewrite_caching, select) for path in paths]
    for report in reports:  # Fix objects hold closures: not picklable, not needed by the parent
        for finding in report.findings:
            finding.fix = None
    return reports


def run_checks(files, project, *, fix=False, rewrite_caching=False, select=None, jobs=None) -> list[FileReport]:
    """Check ``files`` in ``jobs`` processes (default and at most: one per core; 1: in this process).

    Reports come back in file order.
    """
    cores = os.cpu_count() or 1
    # More workers than cores only adds processes (and memory): never start more than one per core or per chunk.
    jobs = max(1, min(jobs or cores, cores, -(-len(files) // CHUNK)))
    if jobs == 1 or len(files) < 2 * CHUNK:
        _init_worker(project)
        return [check_file(path, fix, rewrite_caching, select) for path in files]
    chunks = [files[i : i + CHUNK] for i in range(0, len(files), CHUNK)]
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(project,)) as pool:
        n = len(chunks)
        results = pool.map(_check_chunk, chunks, [fix] * n, [rewrite_caching] * n, [select] * n)
        return [report for chunk in results for report in chunk]


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path``'s content with ``data`` atomically (temporary file in the same folder, then rename),
    keeping its permission bits; a symlink is resolved so the link stays a link."""
    target = path.resolve()
    if not target.stat().st_mode & 0o222:
        raise PermissionError(errno.EACCES, "the file is read-only; not rewritten", str(path))
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, target.stat().st_mode & 0o7777)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def unified_diff(report: FileReport) -> str:
    """The ``--diff`` text of one rewritten file (decoded with the file's own encoding)."""
    import libcst as cst

    encoding = cst.parse_module(report.old_source).encoding
    old = report.old_source.decode(encoding).splitlines(keepends=True)
    new = report.new_source.decode(encoding).splitlines(keepends=True)
    name = report.path.as_posix()
    return "".join(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lightning-migrate",
        description="Find the removed epoch-end and batch hooks of PyTorch Lightning; fix the safe cases.",
        epilog="Exit codes: 0 nothing found, 1 findings or changes, 2 usage or I/O error.",
    )
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders to check")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    mode.add_argument("--fix", action="store_true", help="write the fixes (safe tier, and manual markers)")
    parser.add_argument(
        "--rewrite-caching",
        action="store_true",
        help="also rewrite validation/test_epoch_end to module-side caching where provably equivalent",
    )
    parser.add_argument("--select", help="comma-separated rule codes to run (default: all)")
    parser.add_argument("--jobs", "-j", type=int, default=0, help="worker processes (at most one per core)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no summary line")
    parser.add_argument("--list-rules", action="store_true", help="print the rules and exit")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on a usage error already; keep --help at 0
        return int(exc.code or 0)
    from lightning_migrate.checker import rules as _rules  # noqa: F401 - registers every rule

    if args.list_rules:
        for rule in RULES.values():
            print(f"{rule.code}  {rule.name:38} {rule.title}")
        return 0
    if not args.paths:
        parser.print_usage(sys.stderr)
        print("lightning-migrate: error: give at least one file or folder", file=sys.stderr)
        return 2
    select = None
    if args.select:
        select = frozenset(code.strip().upper() for code in args.select.split(",") if code.strip())
        if not select:
            print("lightning-migrate: error: --select names no rule", file=sys.stderr)
            return 2
        unknown = sorted(select - set(RULES))
        if unknown:
            print(f"lightning-migrate: error: unknown rule code(s): {', '.join(unknown)}", file=sys.stderr)
            return 2

    files, errors = discover(args.paths)
    roots = [path.resolve() if path.is_dir() else path.resolve().parent for path in args.paths if path.exists()]
    project_files = [f.absolute() if f.is_symlink() else f.resolve() for f in files]
    project = Project(project_files, roots)
    by_abs = dict(zip(project_files, files, strict=True))
    fix = args.fix or args.diff
    reports = run_checks(
        project_files, project, fix=fix, rewrite_caching=args.rewrite_caching, select=select, jobs=args.jobs
    )
    changed = 0
    counts: Counter[str] = Counter()
    for report in reports:
        shown = by_abs.get(report.path, report.path)
        report.path = shown
        if report.error:
            errors.append(report.error.replace(str(report.path.resolve()), str(shown)))
            continue
        for finding in report.findings:
            print(finding.format(str(shown)))
            counts[finding.tier or MANUAL] += 1
        if report.new_source is not None:
            if args.diff:
                sys.stdout.write(unified_diff(report))
            else:
                try:
                    write_atomic(shown, report.new_source)
                except OSError as err:
                    errors.append(f"{shown}: cannot write, file unchanged: {err.strerror or err}")
                    continue
            changed += 1
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    found = sum(counts.values())
    if not args.quiet:
        verb = "would change" if args.diff else "changed"
        parts = [f"{found} finding{'s' * (found != 1)} in {len(files)} file{'s' * (len(files) != 1)}"]
        if found:
            parts.append(f"{counts[SAFE]} safe fix, {counts[REWRITE]} caching rewrite, {counts[MANUAL]} manual")
        if fix:
            parts.append(f"{verb} {changed} file{'s' * (changed != 1)}")
        if errors:
            parts.append(f"{len(errors)} error{'s' * (len(errors) != 1)}")
        print("; ".join(parts), file=sys.stderr)
    if errors:
        return 2
    return 1 if found or changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
