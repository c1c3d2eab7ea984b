"""``lightning-migrate``: find the removed epoch-end / batch hooks of Lightning in Python files and notebooks, and
fix them.

Usage::

    lightning-migrate [--diff | --fix] [--unsafe-fixes] [--select LM001,LM002] [--ignore LM006] [--notes]
                      [--output-format text|json|github] [--jobs N] PATH ...

PATH is a file or a folder (searched for ``*.py`` and ``*.ipynb``; ``.git``, virtual environments and caches are
skipped; a notebook is read cell by cell, :mod:`lightning_migrate.checker.notebook`). Base
classes and callers are looked up across the project each PATH belongs to (the nearest folder up with a
``pyproject.toml``, ``setup.cfg``, ``setup.py`` or ``.git``), so checking one file sees the rest of its project.
``# noqa: LM001`` on a hook's ``def`` line silences that rule there.

Exit codes: 0 nothing found; 1 findings (or, with ``--fix``, files changed), even when some file could not be read
(the summary counts those apart); 2 no findings, and a usage error or a file that could not be read, decoded or
parsed (reported with its path and line; the other files are still checked).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import re
import stat
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from lightning_migrate import __version__
from lightning_migrate.checker import notebook
from lightning_migrate.checker.base import MANUAL, PROVEN, SAFE, UNSAFE, Finding
from lightning_migrate.checker.core import PREFILTER, check_source
from lightning_migrate.checker.resolve import Project, project_root
from lightning_migrate.checker.rules import RULES
from lightning_migrate.records import write_atomic  # the project's one atomic write

SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", ".nox", ".tox", "__pycache__", "node_modules", ".eggs"})
#: The error of a file nested more deeply than :mod:`ast` can take (after ``path: ``).
TOO_DEEP = "file too deeply nested to parse, file skipped"
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
    #: how much of the file was read: ``"whole"``, ``"part"`` (a notebook without the cells that do not parse) or
    #: ``"none"`` (an error skipped it)
    read: str = "whole"


#: What a folder is searched for: Python files and Jupyter notebooks.
SUFFIXES = (".py", ".ipynb")


def discover(paths: list[Path], suffixes: tuple[str, ...] = SUFFIXES) -> tuple[list[Path], list[str]]:
    """The files with ``suffixes`` under ``paths`` (each once, symlinked folders not followed; a file named itself
    is taken whatever its name) and the paths that failed."""
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
                    if name.endswith(suffixes):
                        add(Path(folder) / name)
        elif path.exists() or path.is_symlink():
            add(path)
        else:
            errors.append(f"{path}: no such file or folder")
    return files, errors


@dataclass(frozen=True)
class Options:
    """What to do with each file: ``fix`` (``--fix`` / ``--diff``), the opt-in rewrites, the rule codes to run
    (``None``: all) and whether informational findings (``--notes``) are kept."""

    fix: bool = False
    unsafe_fixes: bool = False
    select: frozenset[str] | None = None
    notes: bool = False


_PROJECT: Project | None = None


def _init_worker(project: Project) -> None:
    global _PROJECT
    _PROJECT = project


def check_file(path: Path, options: Options = Options()) -> FileReport:
    """Check one file (reading it; never writing). Errors become ``FileReport.error``: ``path:line: cause``.

    A ``.ipynb`` file is read as a notebook: its findings carry their cell (``Finding.cell``) and the line in it,
    and ``new_source`` is the notebook's new text."""
    report = FileReport(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        report.error = f"{path}: cannot read: {err.strerror or err}"
        report.read = "none"
        return report
    book = None
    if path.suffix == ".ipynb":
        try:
            book = notebook.read(data.decode("utf-8"))
        except UnicodeDecodeError as err:
            report.error = f"{path}: cannot decode as UTF-8, notebook skipped: {err.reason}"
            report.read = "none"
            return report
        except notebook.NotebookError as err:
            if "not Python" not in str(err):  # another language's notebook is simply not ours
                report.error = f"{path}: {err}, file skipped"
                report.read = "none"
            return report
        source = book.source.encode("utf-8")
        if book.broken:
            number, broken = book.broken[0]
            more = f" (and {len(book.broken) - 1} more cells)" if len(book.broken) > 1 else ""
            at = f"{broken.lineno or 0}:{broken.offset or 0}"
            report.error = f"{path}:cell {number}:{at}: syntax error, cell skipped{more}: {broken.msg}"
            report.read = "part"
    else:
        source = data
    if not PREFILTER.search(source):
        if book is not None:
            return report  # each cell was compiled as Jupyter runs it, alone (top-level await allowed)
        try:  # no hook-like text: nothing to report, but a file that does not parse is still an error (exit 2)
            # (compiling to byte code skips building Python AST objects: the quickest full syntax check)
            compile(source, str(path), "exec", dont_inherit=True)
        except SyntaxError as err:
            report.error = _syntax_error(path, err, book)
            report.read = "none"
        except ValueError as err:
            report.error = f"{path}: cannot parse, file skipped: {err}"
            report.read = "none"
        except RecursionError:
            report.error = f"{path}: {TOO_DEEP}"
            report.read = "none"
        return report
    report.parsed = True
    try:
        result = check_source(
            source,
            path,
            _PROJECT,
            fix=options.fix,
            unsafe_fixes=options.unsafe_fixes,
            select=options.select,
            notes=options.notes,
        )
    except SyntaxError as err:
        report.error = _syntax_error(path, err, book)
        report.read = "none"
        return report
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        report.error = (
            f"{path}:{line}: cannot decode as {err.encoding} (declare the file's encoding with a coding cookie), "
            f"file skipped: {err.reason}"
        )
        report.read = "none"
        return report
    except ValueError as err:  # e.g. null bytes
        report.error = f"{path}: cannot parse, file skipped: {err}"
        report.read = "none"
        return report
    except RecursionError:  # Python's parser takes it, but ast (or libcst) runs out of stack
        report.error = f"{path}: {TOO_DEEP}"
        report.read = "none"
        return report
    report.findings = result.findings
    if result.error is not None:
        report.error = f"{path}: {result.error}"
    if book is not None:
        for finding in report.findings:
            finding.cell, finding.line = book.place(finding.line) or (None, finding.line)
    if result.new_source is not None:
        new = result.new_source
        if book is not None:
            try:
                new = notebook.write(book, new.decode("utf-8")).encode("utf-8")
            except notebook.NotebookError as err:
                report.error = f"{path}: fix refused, notebook left unchanged: {err}"
                return report
        if new != data:
            report.old_source, report.new_source = data, new
    return report


def _syntax_error(path: Path, err: SyntaxError, book: notebook.Notebook | None) -> str:
    """``path:line:col: syntax error, file skipped: cause`` (``path:cell N:line:col`` in a notebook)."""
    where = f"{err.lineno or 0}:{err.offset or 0}"
    if book is not None and err.lineno and (place := book.place(err.lineno)) is not None:
        where = f"cell {place[0]}:{place[1]}:{err.offset or 0}"
    return f"{path}:{where}: syntax error, file skipped: {err.msg}"


def _check_chunk(paths, options):
    reports = [check_file(path, options) for path in paths]
    for report in reports:  # Fix objects hold closures: not picklable, not needed by the parent
        for finding in report.findings:
            finding.fix = None
    return reports


def run_checks(files, project, options: Options = Options(), *, jobs=None) -> list[FileReport]:
    """Check ``files`` in ``jobs`` processes (default and at most: one per core; 1: in this process).

    Reports come back in file order.
    """
    cores = os.cpu_count() or 1
    # More workers than cores only adds processes (and memory): never start more than one per core or per chunk.
    jobs = max(1, min(jobs or cores, cores, -(-len(files) // CHUNK)))
    if jobs == 1 or len(files) < 2 * CHUNK:
        _init_worker(project)
        return [check_file(path, options) for path in files]
    chunks = [files[i : i + CHUNK] for i in range(0, len(files), CHUNK)]
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(project,)) as pool:
        results = pool.map(_check_chunk, chunks, [options] * len(chunks))
        return [report for chunk in results for report in chunk]


def unified_diff(report: FileReport) -> bytes:
    """The ``--diff`` patch of one rewritten file, in the file's own bytes (its encoding and line ends), so that
    ``patch -p1`` and ``git apply`` find the lines they change in any encoding. The names are the file system's
    bytes; a name that holds a space ends with a tab, and one that holds a tab, a newline or another control
    character is quoted, as diff and git write them."""
    old, new = (_byte_lines(data or b"") for data in (report.old_source, report.new_source))
    path = report.path
    if path.is_absolute():  # `git apply` and `patch -p1` take paths relative to where they run
        with contextlib.suppress(ValueError):
            path = path.relative_to(Path.cwd())
    names = [_diff_name(f"{side}/{path.as_posix()}") for side in ("a", "b")]
    lines = []
    for line in difflib.diff_bytes(difflib.unified_diff, old, new, names[0], names[1]):
        lines.append(line)
        if not line.endswith(b"\n"):  # the file's last line has no newline: say so, as diff and git do
            lines.append(b"\n\\ No newline at end of file\n")
    return b"".join(lines)


def _write_bytes(data: bytes) -> None:
    """Write ``data`` to standard output as they are; to a text stream with no byte buffer (a caller's
    :class:`io.StringIO`), decoded as UTF-8, any other byte shown as an escape."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(data.decode("utf-8", "backslashreplace"))
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()


def _byte_lines(data: bytes) -> list[bytes]:
    """``data`` cut after each ``\\n`` only (what ``patch`` and ``git apply`` take for line ends)."""
    return re.findall(rb"[^\n]*\n|[^\n]+$", data)


def _diff_name(name: str) -> bytes:
    """A ``---``/``+++`` header's name: quoted with C escapes (git's form, which GNU patch reads) when it holds a
    control character, followed by a tab when it holds a space (where patch's reading of the name ends)."""
    raw = os.fsencode(name)
    if any(byte < 0x20 or byte == 0x7F for byte in raw):
        escapes = {ord("\t"): b"\\t", ord("\n"): b"\\n", ord('"'): b'\\"', ord("\\"): b"\\\\"}
        quoted = b"".join(escapes.get(byte, bytes([byte]) if 0x20 <= byte < 0x7F or byte > 0x7F else b"\\%03o" % byte)
                          for byte in raw)  # fmt: skip
        return b'"' + quoted + b'"'
    return raw + (b"\t" if b" " in raw else b"")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lightning-migrate",
        description="Find the removed epoch-end and batch hooks of PyTorch Lightning; fix the safe cases.",
        epilog="Exit codes: 0 nothing found, 1 findings or changes, with --diff and --fix too (even if some file "
        "could not be read), 2 no findings and a usage error or a file that could not be read.",
    )
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders to check")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--diff",
        action="store_true",
        help="print the fixes as a unified diff, the findings going to standard error; write nothing",
    )
    mode.add_argument(
        "--fix", action="store_true", help="write the fixes (the safe and proven tiers, and the markers of the rest)"
    )
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix / --diff, also apply the opt-in rewrites: caching rewrites of a shape no recipe run proves, "
        "renames that make dead hooks run again",
    )
    parser.add_argument("--rewrite-caching", dest="unsafe_fixes", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--select", help="comma-separated rule codes to run (default: all)")
    parser.add_argument("--ignore", help="comma-separated rule codes not to run")
    parser.add_argument(
        "--notes",
        action="store_true",
        help="also print informational notes (never fixed, never a failure): classes whose base is not resolved, "
        "old shapes a default value makes harmless",
    )
    parser.add_argument(
        "--output-format",
        choices=("text", "json", "github"),
        default="text",
        help="text (path:line:col: CODE message), json (a list of objects) or github (workflow annotations)",
    )
    parser.add_argument("--jobs", "-j", type=int, default=0, help="worker processes (at most one per core)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no summary line")
    parser.add_argument("--list-rules", action="store_true", help="print the rules and exit")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _codes(text: str | None, option: str) -> frozenset[str] | None:
    """The rule codes of ``--select`` / ``--ignore`` (``None`` when not given). Raises ``ValueError`` naming the
    option for an empty list or an unknown code."""
    if text is None:
        return None
    codes = frozenset(code.strip().upper() for code in text.split(",") if code.strip())
    if not codes:
        raise ValueError(f"{option} names no rule")
    unknown = sorted(codes - set(RULES))
    if unknown:
        raise ValueError(f"unknown rule code(s) in {option}: {', '.join(unknown)}")
    return codes


def project_files(paths: list[Path], checked: list[Path]) -> tuple[list[Path], list[Path]]:
    """The files base classes and callers are looked up in, and the roots they are named from.

    Each checked path belongs to the project of its nearest root (:func:`~.resolve.project_root`, as ruff and mypy
    find it), so a run on one file -- what pre-commit does -- still sees the subclass chains and the callers in the
    rest of the project. A path with no root above it is its own project (a folder) or its folder's.
    """
    roots: list[Path] = []
    for path in paths:
        if not path.exists():
            continue
        root = project_root(path.resolve()) or (path.resolve() if path.is_dir() else path.resolve().parent)
        if root not in roots:
            roots.append(root)
    extra: list[Path] = []
    for root in roots:
        extra.extend(discover([root], (".py",))[0])
    seen: set[Path] = set()
    files = []
    for path in [*checked, *extra]:
        if path.suffix != ".py":  # a notebook is not importable: its classes are nobody's bases
            continue
        absolute = path.absolute() if path.is_symlink() else path.resolve()
        if absolute not in seen:
            seen.add(absolute)
            files.append(absolute)
    return files, roots


def _link_outside(path: Path, named: list[Path]) -> Path | None:
    """The target of ``path`` when it is a symlink found in a checked folder that points outside every checked
    folder (a fix must not write there); ``None`` for anything else, a file named on the command line included."""
    if not path.is_symlink() or any(path.absolute() == p.absolute() for p in named):
        return None
    target = path.resolve()
    folders = [p.resolve() for p in named if p.is_dir()]
    return None if any(target.is_relative_to(folder) for folder in folders) else target


def _github(text: str, in_property: bool = False) -> str:
    """Escape ``text`` for a workflow command: its message, or (``in_property``) a ``file=`` / ``title=`` value."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if in_property else text


def main(argv: list[str] | None = None) -> int:
    """The ``lightning-migrate`` command (exit codes: :func:`build_parser`'s description). A reader that stops reading
    early (``lightning-migrate src | head``) ends the output quietly, as Python's documentation advises for
    ``SIGPIPE`` (https://docs.python.org/3/library/signal.html#note-on-sigpipe), with exit code 1; a file being fixed
    is replaced whole or not at all (:func:`lightning_migrate.records.write_atomic`)."""
    try:
        return _main(argv)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush of stdout at exit would fail again
        return 1


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on a usage error already; keep --help at 0
        return int(exc.code or 0)
    if args.list_rules:
        for rule in RULES.values():
            print(f"{rule.code}  {rule.name:38} {rule.title}")
        return 0
    if args.unsafe_fixes and not (args.fix or args.diff):
        parser.print_usage(sys.stderr)
        print("lightning-migrate: error: --unsafe-fixes applies fixes: give it with --fix or --diff", file=sys.stderr)
        return 2
    if not args.paths:
        parser.print_usage(sys.stderr)
        print("lightning-migrate: error: give at least one file or folder", file=sys.stderr)
        return 2
    try:
        select, ignore = _codes(args.select, "--select"), _codes(args.ignore, "--ignore")
    except ValueError as err:
        print(f"lightning-migrate: error: {err}", file=sys.stderr)
        return 2
    if ignore:
        select = frozenset(select or RULES) - ignore

    files, errors = discover(args.paths)
    checked = [f.absolute() if f.is_symlink() else f.resolve() for f in files]
    every_file, roots = project_files(args.paths, files)
    project = Project(every_file, roots)
    by_abs = dict(zip(checked, files, strict=True))
    options = Options(args.fix or args.diff, args.unsafe_fixes, select, args.notes)
    reports = run_checks(checked, project, options, jobs=args.jobs)
    changed = 0
    unreadable = sum(1 for error in errors if "no such file" not in error)  # discover's: files it could not read
    skipped = 0  # files of those given that were not read at all
    in_part = 0  # notebooks read without some cell that does not parse
    counts: Counter[str] = Counter()
    with_findings = 0
    records = []
    # with --diff, standard output is the patch alone (`lightning-migrate --diff . | git apply`)
    out = sys.stderr if args.diff else sys.stdout
    for report in reports:
        shown = by_abs.get(report.path, report.path)
        report.path = shown
        if report.error:
            errors.append(report.error.replace(str(report.path.resolve()), str(shown)))
            if report.read == "part":
                in_part += 1
            elif report.read == "none":
                unreadable += 1
                skipped += 1
            if not report.findings and report.new_source is None:
                continue
        failing = [finding for finding in report.findings if not finding.note]
        with_findings += bool(failing)
        written = False  # whether this file's fixes reached the file (--fix) or the patch (--diff)
        if report.new_source is not None:
            outside = _link_outside(shown, args.paths)
            if outside is not None:
                errors.append(f"{shown}: a symlink to {outside}, outside the checked folders: not rewritten")
            elif args.diff:
                _write_bytes(unified_diff(report))
                written = True
            else:
                try:
                    write_atomic(shown, report.new_source)
                    written = True
                except OSError as err:
                    errors.append(f"{shown}: cannot write, file unchanged: {err.strerror or err}")
            changed += written
        for finding in report.findings:
            if args.output_format == "text":
                done = _applied(finding, options, written) if options.fix else None
                print(finding.format(str(shown), done, args.diff), file=out)
            elif args.output_format == "github":
                level = "notice" if finding.note else "error"
                where = f"line={finding.line},col={finding.col}," if finding.cell is None else ""
                cell = f"cell {finding.cell}, line {finding.line}: " if finding.cell is not None else ""
                print(
                    f"::{level} file={_github(str(shown), True)},{where}"
                    f"title={finding.code}::"
                    + _github(f"{cell}{finding.message} ({finding.tier or 'no'} fix) {finding.url}"),
                    file=out,
                )
            else:
                records.append(
                    {
                        "code": finding.code,
                        "message": finding.message,
                        "filename": str(shown),
                        "cell": finding.cell,
                        "line": finding.line,
                        "column": finding.col,
                        "fix": finding.tier if finding.tier in (SAFE, PROVEN, UNSAFE) else None,
                        "note": finding.note,
                        "patterns": list(finding.pattern_ids),
                        "url": finding.url,
                    }
                )
            if not finding.note:
                counts[finding.tier or MANUAL] += 1
    if args.output_format == "json":
        print(json.dumps(records, indent=2), file=out)
    for error in errors:
        if args.output_format == "github":  # an annotation of the run, beside the findings'
            print(f"::error title=lightning-migrate::{_github(error)}", file=out)
        print(f"error: {error}", file=sys.stderr)
    found = sum(counts.values())
    if not args.quiet:
        checked_files = len(files) - skipped
        line = summary(
            found, with_findings, checked_files, counts, options, changed, unreadable, errors, args.diff, in_part
        )
        print(line, file=sys.stderr)
    return exit_code(found, changed, errors)


def _applied(finding: Finding, options: Options, written: bool) -> bool | None:
    """With ``--fix`` / ``--diff``: whether the finding's fix went into the file (or the patch) -- a safe or proven
    fix, an unsafe one with ``--unsafe-fixes``, when the file's rewrite was written; ``None`` for a finding with no
    fix of those tiers (a marker, or nothing)."""
    if finding.note or finding.tier not in (SAFE, PROVEN, UNSAFE):
        return None
    return written and (finding.tier != UNSAFE or options.unsafe_fixes)


def summary(
    found: int,
    with_findings: int,
    checked: int,
    counts: Counter[str],
    options: Options,
    changed: int,
    unreadable: int,
    errors: list[str],
    diff: bool = False,
    in_part: int = 0,
) -> str:
    """The summary line: the findings (and the files that have them, of the ``checked`` files read), the fixes per
    tier, the files changed, the files that could not be read, the notebooks read without some cell, and the other
    errors, each counted apart so that findings read as findings."""
    plural = "s" * (with_findings != 1)
    where = f" in {with_findings} file{plural}" if found else ""
    parts = [f"{found} finding{'s' * (found != 1)}{where} ({checked} file{'s' * (checked != 1)} checked)"]
    if found:
        fixes = {tier: f"{counts[tier]} {tier} fix{'es' * (counts[tier] != 1)}" for tier in (PROVEN, SAFE, UNSAFE)}
        unsafe = fixes[UNSAFE] + ("" if options.unsafe_fixes else " (--unsafe-fixes)")
        parts.append(f"{fixes[PROVEN]}, {fixes[SAFE]}, {unsafe}, {counts[MANUAL]} manual")
    if options.fix:
        parts.append(f"{'would change' if diff else 'changed'} {changed} file{'s' * (changed != 1)}")
    if unreadable:
        parts.append(f"{unreadable} file{'s' * (unreadable != 1)} could not be read (not checked)")
    if in_part:
        parts.append(f"{in_part} notebook{'s' * (in_part != 1)} read in part (a cell that does not parse skipped)")
    other = len(errors) - unreadable - in_part
    if other:
        parts.append(f"{other} other error{'s' * (other != 1)}")
    return "; ".join(parts)


def exit_code(found: int, changed: int, errors: list[str]) -> int:
    """0: nothing found and no error; 1: findings (or, with ``--fix``, files changed), whether or not some file
    could not be read -- the summary counts those apart; 2: no finding, and a file or path that could not be read,
    parsed or written (a usage error exits 2 before any check)."""
    if found or changed:
        return 1
    return 2 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
