"""Sphinx extension: the gallery's examples and the probes run in processes forked from one preloaded process.

sphinx-gallery's ``parallel`` option runs the examples of a gallery section in joblib's loky workers. By default
loky starts each worker as a fresh interpreter, which would import torch and Lightning again (about 4.5 s of
CPU each on the project's 2-core machine; ``python -X importtime -c "import lightning.pytorch"``). This
extension gives loky the standard library's *forkserver* start method instead
(https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods) and has the forkserver
import :mod:`example_preload` first: every worker, and the probe process of ``probe_records``, is then a fork
of a process that has imported Lightning once and run nothing.

The forkserver is started while Sphinx is still loading its extensions, so that its imports overlap Sphinx's
own start-up on the second core -- but only when the build will execute something (``CI=true``, or a gallery
script whose source no longer matches the checksum sphinx-gallery stored after its last run). Otherwise it
starts on first use, if ever, and a no-op rebuild pays nothing for it.

Because the forkserver is a separate process, the Sphinx process itself never forks while it holds threads
(myst-nb's notebook execution runs in one) and never imports torch.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import re
from pathlib import Path
from typing import Any

from build_mode import forced_execution
from sphinx.application import Sphinx

#: The module the forkserver imports before it forks a worker (``docs/_ext/example_preload.py``).
PRELOAD = "example_preload"
EXT_DIR = str(Path(__file__).resolve().parent)


def forkserver_context() -> multiprocessing.context.BaseContext:
    """The multiprocessing context whose processes are forked from the preloaded forkserver."""
    return multiprocessing.get_context("forkserver")


def start_forkserver() -> None:
    """Start the preloaded forkserver, unless it is running already.

    Python 3.11's forkserver does not put the parent's ``sys.path`` into effect before it imports its preload
    modules (``multiprocessing.forkserver.main`` receives ``sys_path`` and leaves it unused), and would then
    skip :data:`PRELOAD` silently. ``PYTHONPATH`` names ``docs/_ext`` for the moment the forkserver is started;
    the processes it forks get the parent's ``sys.path`` as usual.
    """
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([EXT_DIR, *filter(None, [saved])])
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved


def stale_examples(app: Sphinx) -> list[Path]:
    """The gallery scripts sphinx-gallery will execute in this build (all of them when ``CI=true``).

    Scripts are chosen by the configuration's ``filename_pattern`` and ``ignore_pattern``. A script runs when
    its text differs from the checksum sphinx-gallery wrote after its last successful run
    (``<gallery_dirs>/<name>.py.md5``: md5 of the text with universal newlines, ``sphinx_gallery.utils``).
    """
    from sphinx_gallery.utils import get_md5sum

    force = forced_execution()
    conf = app.config.sphinx_gallery_conf
    srcdir = Path(app.srcdir)
    stale = []
    for examples_dir, gallery_dir in zip(conf["examples_dirs"], conf["gallery_dirs"], strict=True):
        source_root, target_root = (srcdir / examples_dir).resolve(), srcdir / gallery_dir
        for script in sorted(source_root.rglob("*.py")):
            if re.search(conf["ignore_pattern"], str(script)) or not re.search(conf["filename_pattern"], str(script)):
                continue
            checksum = target_root / script.relative_to(source_root).with_suffix(".py.md5")
            if force or not checksum.is_file() or checksum.read_text() != get_md5sum(script, mode="t"):
                stale.append(script)
    return stale


def _choose_parallel(app: Sphinx) -> None:
    """Turn sphinx-gallery's ``parallel`` on for this build only if it executes examples.

    With ``parallel`` on, sphinx-gallery hands every example to the workers, including those it will not run,
    so a no-op rebuild would start the forkserver for nothing. The switch is made at ``builder-inited``
    (before sphinx-gallery's handler, priority 500), after Sphinx hashed the configuration: a build that runs
    examples and one that does not share one configuration and never rewrite each other's pages.
    """
    stale = app._example_workers_stale  # type: ignore[attr-defined]
    app.config.sphinx_gallery_conf["parallel"] = app.config.example_processes if stale else False
    if stale:  # joblib (0.1 s to import) only when its workers will be used
        from joblib.externals.loky.backend.context import set_start_method as set_loky_start_method

        set_loky_start_method("forkserver", force=True)


def setup(app: Sphinx) -> dict[str, Any]:
    """Configure the forkserver, and start it now if this build will execute examples (loky is configured at
    ``builder-inited``, in builds that use it).

    Must come after ``sphinx_gallery.gen_gallery`` in ``extensions`` (it reads ``sphinx_gallery_conf``).
    The configuration value ``example_processes`` is how many examples run at once.
    """
    app.add_config_value("example_processes", 2, "", types=frozenset({int}))
    multiprocessing.set_forkserver_preload([PRELOAD])
    app._example_workers_stale = stale_examples(app)  # type: ignore[attr-defined]
    if app._example_workers_stale:  # type: ignore[attr-defined]
        start_forkserver()
    app.connect("builder-inited", _choose_parallel, priority=200)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
