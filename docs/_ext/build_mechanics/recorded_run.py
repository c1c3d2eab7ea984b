"""A recorder run beside the build: hash its inputs, start it in a Python process of its own, wait, keep its document.

The guide's recorders -- the probes (``guide.probe_records``), the scenario matrix (``guide.scenario_matrix``), the
declared warnings' witnesses (``guide.warning_witnesses``), the cells the claims cite (``guide.claims``) -- each run
Lightning in a process of their own (Lightning is never imported into Sphinx) and write one JSON document that the
pages read. This module is their one mechanism:

* :func:`inputs_key`: the SHA-256 (64 hex digits) of every file the run reads and the installed versions it runs on;
* :func:`start`: nothing to run when the build directory's document was made from the same key (its ``.key`` file
  beside it; a CI build, ``CI=true``, never reuses it) or when this test run kept a run of the same inputs
  (:mod:`build_mechanics.run_cache`); else start ``python -m MODULE ARGS`` (this interpreter, ``src`` and
  ``docs/_ext`` on its path, the build's environment and warning filters) writing ``<name>.json.new``, its output to
  ``<name>.log``; lines of that output that start with a given prefix (a progress line) are passed on to the build's
  console as they come, as status messages (never warnings: they cannot fail a ``-W`` build);
* :func:`finish`: wait; a failed run (or, for a strict recorder, anything on its standard error) raises
  :class:`sphinx.errors.ExtensionError` with the end of what it printed; a run that succeeded replaces the document
  (atomically, only when its content changed), writes the key and is kept for the later builds of this test run.

Files, in the folder given (the build's doctree directory): ``<name>.json``, ``<name>.key``, ``<name>.log``,
``<name>.stderr`` (strict recorders), ``<name>.environment.json`` (what the run imported, for the run cache).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util import logging

from build_mechanics import run_cache
from build_mechanics.execution_mode import forced_execution
from lightning_migrate.records import write_atomic

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[3]
#: What the process has on its path before anything the build had: the project's code and the build's extensions.
PATH = (ROOT / "src", ROOT / "docs" / "_ext")
#: Seconds between two looks at a running process's output for lines to pass on.
POLL = 0.5


def inputs_key(files: Iterable[Path], distributions: Iterable[str] = (), *extra: str) -> str:
    """The SHA-256 (hex, 64 digits) of each file's name and bytes, in the order given, then ``name=version`` of each
    installed distribution (``absent`` when it is not installed), then ``extra``.

    Raises:
        OSError: a file cannot be read.
    """
    digest = hashlib.sha256()
    for path in files:
        path = Path(path)
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for name in distributions:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "absent"
        digest.update(f"{name}={version}\0".encode())
    for part in extra:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


@dataclass
class Run:
    """A recorder's run in one build (:func:`start`): its name, folder and key, and its process (``None`` when
    nothing had to run: ``reused`` says why, ``"current"`` or ``"kept"``)."""

    name: str
    folder: Path
    key: str
    process: subprocess.Popen | None = None
    reused: str = ""
    strict: bool = False
    relay: threading.Thread | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def document(self) -> Path:
        """What the pages read: ``<folder>/<name>.json``."""
        return self.folder / f"{self.name}.json"

    @property
    def new(self) -> Path:
        """Where the run writes its document, until :func:`finish` installs it."""
        return self.folder / f"{self.name}.json.new"

    @property
    def key_file(self) -> Path:
        return self.folder / f"{self.name}.key"

    @property
    def log(self) -> Path:
        return self.folder / f"{self.name}.log"

    @property
    def errors(self) -> Path:
        return self.folder / f"{self.name}.stderr"

    @property
    def environment(self) -> Path:
        return self.folder / f"{self.name}.environment.json"


def is_current(name: str, folder: Path, key: str) -> bool:
    """Whether ``folder`` holds ``name``'s document made from ``key`` and this build may reuse it (not a CI build)."""
    document, key_file = folder / f"{name}.json", folder / f"{name}.key"
    return (
        not forced_execution()
        and document.exists()
        and key_file.exists()
        and key_file.read_text(encoding="utf-8") == key
    )


def start(
    name: str,
    folder: Path,
    key: str,
    module: str,
    args: Callable[[Path], Sequence[str]],
    *,
    cwd: Path | None = None,
    strict: bool = False,
    progress: str | None = None,
    use_kept: bool = True,
) -> Run:
    """Start the recorder ``name`` (``python -m module *args(output)``) unless nothing has to run (module docstring).

    ``args`` is given the path the document must be written to. ``strict``: the process's standard error goes to
    its own file, and anything there fails :func:`finish` (else it is merged into the log). ``progress``: the prefix
    of the output lines passed on to the console while the run goes on. ``use_kept``: look for and keep runs of this
    test run (:mod:`build_mechanics.run_cache`).
    """
    folder = Path(folder)
    run = Run(name, folder, key, strict=strict)
    if is_current(name, folder, key):
        run.reused = "current"
        return run
    folder.mkdir(parents=True, exist_ok=True)
    if use_kept and run_cache.lookup(name, key, run.new):
        run.reused = "kept"
        return run
    path = [*(str(p) for p in PATH), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, path)))
    command = run_cache.run_command(module, *args(run.new), environment=run.environment)
    run.environment.unlink(missing_ok=True)
    with run.log.open("wb") as sink, run.errors.open("wb") if strict else open(os.devnull, "wb") as error_sink:
        run.process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=sink, stderr=error_sink if strict else subprocess.STDOUT
        )
    if progress:
        run.relay = threading.Thread(target=_relay, args=(run, progress), name=f"{name}-progress", daemon=True)
        run.relay.start()
    return run


def _relay(run: Run, prefix: str) -> None:
    """Pass on each complete line of ``run``'s log that starts with ``prefix``, as Sphinx status messages, until the
    process has exited and its log is read to the end (or :attr:`Run.stop` is set)."""
    with run.log.open("r", encoding="utf-8", errors="replace") as log:
        pending = ""
        while True:
            exited = run.process is None or run.process.poll() is not None
            pending += log.read()
            *lines, pending = pending.split("\n")
            for line in lines:
                if line.startswith(prefix):
                    logger.info(line)
            if exited or run.stop.is_set():
                return
            time.sleep(POLL)


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of the text file at ``path`` ("" when it does not exist)."""
    if not path.exists():
        return ""
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def default_failure(title: str, source: str) -> Callable[[Run, int, str], str]:
    """The message of a failed run: ``{title} failed (exit code N) ({source}):`` and the end of what it printed."""

    def message(run: Run, code: int, printed: str) -> str:
        what = f"failed (exit code {code})" if code != 0 else "wrote to standard error"
        return f"{title} {what} ({source}):\n" + "\n".join(printed.splitlines()[-30:])

    return message


def finish(run: Run | None, failure: Callable[[Run, int, str], str]) -> bool:
    """Wait for ``run`` (nothing when it is ``None`` or nothing ran), then install its document (module docstring).

    ``failure(run, exit code, what it printed)`` makes the error's message; what it printed is the standard error of a
    strict recorder that wrote there, else the log.

    Returns:
        ``True`` when the document changed (a page that reads it must be read again), ``False`` otherwise.

    Raises:
        ExtensionError: the process failed, or a strict recorder wrote to its standard error.
    """
    if run is None or run.reused == "current":
        return False
    if run.process is not None:
        code = run.process.wait()
        if run.relay is not None:
            run.relay.join()
        errors = run.errors.read_text(encoding="utf-8", errors="replace") if run.strict and run.errors.exists() else ""
        if code != 0 or errors.strip():
            run.new.unlink(missing_ok=True)
            raise ExtensionError(failure(run, code, errors or tail(run.log, 10_000)))
        run_cache.store(run.name, run.key, run.new, run.environment)
    changed = write_atomic(run.document, run.new.read_bytes())
    run.new.unlink()
    run.key_file.write_text(run.key, encoding="utf-8")
    return changed
