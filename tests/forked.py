"""A command-line module run in a process forked from one that imported it once.

A test that runs ``python -m migration_guide.scenarios`` in a subprocess pays the import of torch and Lightning (about 4
s of processor time) on every run. :func:`run_module` runs the module's ``main(argv)`` instead in a child of
multiprocessing's forkserver, whose preload (:func:`multiprocessing.set_forkserver_preload`, a documented option)
imported torch and Lightning (:data:`PRELOAD`) once for the test process. The child is a new process, as the command's
would be: its exit code and its standard output and error (file descriptors 1 and 2, so that the processes it starts
write there too) are what the command's would be, and nothing it does reaches the test's process.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

#: What the forkserver imports before it forks any command: what the matrix's cells import (its own modules import
#: them only when a cell runs).
PRELOAD = ["torch", "lightning.pytorch"]


def _run_main(module: str, argv: list[str], environ: dict[str, str], stdout: str, stderr: str) -> None:
    """In the child: the command's environment and output files, then ``sys.exit(module.main(argv))``."""
    os.environ.update(environ)
    sys.stdout.flush()
    sys.stderr.flush()
    for path, descriptor in ((stdout, 1), (stderr, 2)):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(opened, descriptor)
        os.close(opened)
    sys.argv = [module, *argv]
    code = importlib.import_module(module).main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


def run_module(
    module: str, argv: list[str], output: Path, environ: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess:
    """``python -m module *argv``, run as ``module.main(argv)`` in a process forked from the forkserver (its preload:
    :data:`PRELOAD` and ``module``), with ``environ`` added to its environment; its output is kept in
    ``output/stdout.txt`` and ``output/stderr.txt`` (``output`` is created). Never raises on a failing command, as
    ``subprocess.run`` with ``check=False``; raises :class:`subprocess.TimeoutExpired` after ``timeout`` seconds
    (the child is killed)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([*PRELOAD, module])  # read when the forkserver starts: this process's first run
    output.mkdir(parents=True, exist_ok=True)
    stdout, stderr = output / "stdout.txt", output / "stderr.txt"
    child = context.Process(target=_run_main, args=(module, argv, environ or {}, str(stdout), str(stderr)))
    child.start()
    child.join(timeout)
    if child.exitcode is None:
        child.kill()
        child.join()
        raise subprocess.TimeoutExpired(["python", "-m", module, *argv], timeout)
    read = lambda path: path.read_text(encoding="utf-8", errors="replace")  # noqa: E731
    return subprocess.CompletedProcess(["python", "-m", module, *argv], child.exitcode, read(stdout), read(stderr))
