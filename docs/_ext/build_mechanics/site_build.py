"""The real site built once per test run: a build that records what it built, and the check that it is current.

``python docs/_ext/build_mechanics/site_build.py OUTDIR [SPHINX OPTION ...]`` (from the project's root; ``nox -s docs``,
``nox -s doctest`` and ``nox -s tests`` run it) builds the site with the one command of every build of the site
(:data:`SPHINX`: ``-T -W --keep-going -j auto -b html -c . docs OUTDIR``), prints Sphinx's output as it comes, and
then writes the build's *record* beside the output directory (:func:`record_path`, ``_build/html.build.json``,
outside the published folder): the exit code, the whole output, the options given after ``OUTDIR``, whether the
build executed everything (``CI``), the build's Python environment, and the hash of every source file as the build
started (:func:`source_hashes`: what git tracks plus what it does not ignore, as a fresh clone holds them once
committed).

The tests read the site from such a build when it is *usable* (:func:`usable`): it exited 0, it was built with no
extra option (a hosted build's ``-D html_baseurl=...`` is another site), and every source file is the one it built.
A build started in any other way (a hand-run ``sphinx-build``) into the same folder removes the record when it starts
(this module is also the Sphinx extension that does so, :func:`setup`), so a half-written or foreign output is never
taken for a recorded one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

#: Every build of the real site: a failing MyST notebook shows its failing cell (-T), a warning is an error and
#: every error is reported (-W --keep-going), pages are read and written on every core (-j auto), conf.py at the
#: root (-c .). Followed by ``-b BUILDER SOURCE OUTDIR``.
SPHINX = ("-T", "-W", "--keep-going", "-j", "auto", "-c", ".")
#: Generated or tool-owned paths that a copy of a tree that is not a git checkout leaves out.
IGNORED = (
    ".git",
    ".nox",
    ".venv",
    "_build",
    "__pycache__",
    "*.egg-info",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
    "jupyter_execute",
    ".jupyter_cache",
    "lightning_logs",
    "artifacts",
    "build",
)
#: What a build writes into the source tree (git-ignored): a copy of the tree never carries them.
GENERATED = ("docs/examples", "docs/sg_execution_times.rst", "docs/checker/rules", "docs/jupyter_execute")
#: The version of the record's layout; a record of another version is not usable.
RECORD_VERSION = 2


def source_files(root: Path) -> list[str]:
    """The project's source files under ``root`` (relative POSIX paths, sorted), as a fresh clone would hold them
    once committed: what git tracks plus what it does not ignore. Outside a git checkout (a source archive, or git
    missing): every file but those :data:`IGNORED` and :data:`GENERATED` name."""
    try:
        listing = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root, capture_output=True
        )
    except OSError:  # no git
        listing = None
    if listing is not None and listing.returncode == 0:
        names = {name for name in listing.stdout.decode().split("\0") if name}
        return sorted(name for name in names if (root / name).is_file())
    ignore = shutil.ignore_patterns(*IGNORED)
    found = []
    for folder, subfolders, files in os.walk(root):
        relative = Path(folder).relative_to(root)
        subfolders[:] = sorted(set(subfolders) - ignore(folder, subfolders))
        subfolders[:] = [name for name in subfolders if (relative / name).as_posix() not in GENERATED]
        for name in sorted(set(files) - ignore(folder, files)):
            if (relative / name).as_posix() not in GENERATED:
                found.append((relative / name).as_posix())
    return sorted(found)


def source_hashes(root: Path) -> dict[str, str]:
    """``{relative path: sha256 of its bytes}`` of every :func:`source_files` file of ``root`` (about 0.1 s)."""
    return {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in source_files(root)}


def copy_tree(root: Path, destination: Path) -> Path:
    """Copy ``root``'s :func:`source_files` (no generated output, nothing git ignores) to ``destination``, modification
    times kept; return ``destination``."""
    for name in source_files(root):
        (destination / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, destination / name)
    for generated in GENERATED:
        path = destination / generated
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    return destination


def sync_tree(root: Path, destination: Path) -> Path:
    """Make ``destination`` hold ``root``'s :func:`source_files` as they are: copy each new or changed file
    (modification times kept, so a build of ``destination`` sees an unchanged file as unchanged) and remove each file
    that is no longer a source file, leaving :data:`GENERATED` and ``_build`` alone. Returns ``destination``."""
    names = source_files(root)
    wanted = set(names)
    for name in names:
        source, target = root / name, destination / name
        if target.is_file() and target.stat().st_size == source.stat().st_size:
            if target.read_bytes() == source.read_bytes():
                continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    if destination.is_dir():
        for path in sorted(destination.rglob("*")):
            relative = path.relative_to(destination).as_posix()
            keep = relative.startswith(("_build/", *(f"{g}/" for g in GENERATED))) or relative in GENERATED
            if path.is_file() and not keep and relative not in wanted and "__pycache__" not in relative:
                path.unlink()
    return destination


def record_path(outdir: Path) -> Path:
    """Where the record of a build into ``outdir`` is kept: ``<outdir>.build.json`` beside it (never inside the
    published folder; it names the build machine's paths)."""
    outdir = Path(outdir)
    return outdir.with_name(f"{outdir.name}.build.json")


@dataclass
class Record:
    """A recorded build of the site: its tree (the project root it ran in), output directory, exit code, Sphinx's
    whole output, the options given after the output directory, whether it executed everything (``ci``), its
    Python environment's paths and interpreter (``executable``), the source hashes as it started, when it ended
    (Unix time) and how long it took (s).
    """

    tree: Path
    outdir: Path
    returncode: int
    output: str
    options: list[str]
    ci: bool
    python: list[str]
    executable: str
    sources: dict[str, str]
    finished: float
    seconds: float


def read_record(outdir: Path) -> Record | None:
    """The record of the build into ``outdir``, or ``None`` when there is none or it is of another layout."""
    path = record_path(outdir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("version") != RECORD_VERSION:
        return None
    data.pop("version")
    return Record(**{**data, "tree": Path(data["tree"]), "outdir": Path(data["outdir"])})


#: Folders of source files the site's build never reads: a change there leaves a build usable (a test edited after
#: ``nox -s docs`` reads that build, instead of building the site again).
NOT_READ_BY_THE_BUILD = ("tests/",)


def stale_sources(record: Record, root: Path) -> list[str]:
    """The source files of ``root`` that differ from those ``record`` built: changed, added or removed (sorted),
    outside :data:`NOT_READ_BY_THE_BUILD`."""
    now = source_hashes(root)
    names = now.keys() | record.sources.keys()
    return sorted(
        name
        for name in names
        if now.get(name) != record.sources.get(name) and not name.startswith(NOT_READ_BY_THE_BUILD)
    )


def usable(outdir: Path, root: Path) -> tuple[Record | None, str]:
    """The record of the build into ``outdir`` if the tests may read that build as the site of ``root``'s sources,
    and why not otherwise.

    Returns:
        ``(record, "")`` when the build exited 0, was given no option after its output directory, ran in ``root``
        and every source file is the one it built; else ``(None, reason)``, the reason naming up to five of the
        changed files.
    """
    outdir, root = Path(outdir).resolve(), Path(root).resolve()
    record = read_record(outdir)
    if record is None:
        if outdir.is_dir():
            return None, f"{outdir} holds no record of a completed build (build_mechanics.site_build writes one)"
        return None, f"{outdir} does not exist"
    if record.returncode != 0:
        return None, f"the build into {outdir} failed (exit code {record.returncode})"
    if record.options:
        return None, f"the build into {outdir} was given {' '.join(record.options)}: not the site as tested"
    if record.tree.resolve() != root:
        return None, f"{outdir} was built from {record.tree}, not {root}"
    if not (outdir / "index.html").is_file():
        return None, f"{outdir} has no index.html"
    changed = stale_sources(record, root)
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        return None, f"the sources changed since the build into {outdir}: {shown}"
    return record, ""


def build(outdir: Path, options: list[str], root: Path | None = None, echo=None) -> Record:
    """Build the site of ``root`` (the current directory by default) into ``outdir`` with :data:`SPHINX` and
    ``options``, with this Python; write and return its :class:`Record`.

    Sphinx's standard output and error are merged and passed to ``echo`` line by line as they come (by default
    written to this process's standard output). The record is removed first, so an interrupted build leaves none.
    """
    from build_mechanics.execution_mode import forced_execution  # here: this file also runs as a script

    root = Path.cwd() if root is None else Path(root)
    outdir = (root / outdir).resolve()
    record_path(outdir).unlink(missing_ok=True)
    sources = source_hashes(root)
    started = time.time()
    command = [sys.executable, "-m", "sphinx", *SPHINX, "-b", "html", "docs", str(outdir), *options]
    lines = []
    with subprocess.Popen(
        command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    ) as proc:
        assert proc.stdout is not None  # stdout=PIPE
        for line in proc.stdout:
            lines.append(line)
            if echo is None:
                sys.stdout.write(line)
                sys.stdout.flush()
            else:
                echo(line)
    record = Record(
        tree=root.resolve(),
        outdir=outdir,
        returncode=proc.returncode,
        output="".join(lines),
        options=list(options),
        ci=forced_execution(),
        python=sorted({sys.prefix, sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}),
        executable=sys.executable,
        sources=sources,
        finished=time.time(),
        seconds=round(time.time() - started, 1),
    )
    data = {"version": RECORD_VERSION, **record.__dict__, "tree": str(record.tree), "outdir": str(record.outdir)}
    path = record_path(outdir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return record


def _forget_record(app) -> None:
    """builder-inited: the output directory is being rewritten; its record no longer describes it."""
    record_path(Path(app.outdir)).unlink(missing_ok=True)


def setup(app):
    """The extension: any build of the site removes the record of its output directory when it starts (the runner,
    :func:`build`, writes a new one when the build ends)."""
    app.connect("builder-inited", _forget_record)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str] | None = None) -> int:
    """``site_build.py OUTDIR [SPHINX OPTION ...]``: :func:`build`; returns Sphinx's exit code."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python docs/_ext/build_mechanics/site_build.py OUTDIR [SPHINX OPTION ...]", file=sys.stderr)
        return 2
    record = build(Path(args[0]), args[1:])
    print(f"site_build: {record.outdir} built in {record.seconds:.0f} s (exit code {record.returncode})")
    return record.returncode


if __name__ == "__main__":
    # run as a script (the noxfile does, so that no PYTHONPATH reaches the build's processes): docs/_ext importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
