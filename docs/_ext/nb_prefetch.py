"""Sphinx extension: start executing the MyST notebooks a build will read before sphinx-gallery runs the examples.

myst-nb executes a notebook when Sphinx reads its page, which comes after sphinx-gallery has executed every
example at ``builder-inited``: one after the other, although the notebook's kernel is a separate process that
could use the machine's second core. This extension starts each notebook's execution in a background thread
at ``builder-inited``, before the examples run, with myst-nb's own reader and jupyter-cache's own executor (the
calls myst-nb makes itself), and stores the executed notebook in the jupyter-cache that myst-nb reads with
``nb_execution_mode = "cache"``. When Sphinx reads the page, myst-nb finds the result there.

Which notebooks: those the environment never read or whose source changed since, and whose code cells the
cache holds no execution of; in CI (``CI=true``) every one, so a CI build executes every notebook afresh. A
failed execution fails the build at ``env-before-read-docs`` with the notebook's path and the traceback.

The kernels run at a lower priority (:data:`KERNEL_NICENESS`), as the probes do: the examples come first, and
a kernel takes the CPU they leave, finishing before Sphinx reads its page.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

from build_mode import forced_execution
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.matching import Matcher

logger = logging.getLogger(__name__)


def _notebook_sources(app: Sphinx, force: bool) -> list[Path]:
    """The ``.md`` sources of ``app.srcdir`` that this build will read (all of them when ``force``)."""
    excluded = Matcher(app.config.exclude_patterns)
    sources = []
    for path in sorted(Path(app.srcdir).rglob("*.md")):
        relative = path.relative_to(app.srcdir).as_posix()
        if excluded(relative):
            continue
        read_at = app.env.all_docs.get(relative.removesuffix(".md"))  # microseconds, as Sphinx records it
        if force or read_at is None or path.stat().st_mtime_ns // 1000 > read_at:
            sources.append(path)
    return sources


def _execute(app: Sphinx, path: Path, errors: dict[str, str], force: bool) -> None:
    """Execute the notebook ``path`` and cache it where myst-nb looks; failures go to ``errors[str(path)]``.

    Unless ``force``, a notebook the cache already holds an execution of (jupyter-cache's match on its code
    cells, the test myst-nb makes itself) is left alone: a re-read after ``-E`` or a configuration change
    then reuses that execution, as myst-nb alone would.
    """
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from jupyter_cache.executors.utils import single_nb_execution
    from myst_nb.core.read import create_nb_reader

    nb_config = app.env.mystnb_config
    text = path.read_text(encoding="utf-8")
    reader = create_nb_reader(str(path), app.env.myst_config, nb_config, text)
    if reader is None:  # plain Markdown, not a notebook
        return
    notebook = reader.read(text)
    cache = get_cache(nb_config.execution_cache_path)
    if not force:
        try:
            cache.match_cache_notebook(notebook)
        except KeyError:  # no execution of these code cells in the cache
            pass
        else:
            return
    result = single_nb_execution(
        notebook,
        cwd=str(path.parent),
        allow_errors=nb_config.execution_allow_errors,
        timeout=nb_config.execution_timeout,
        meta_override=True,
        kernel_manager_class=_low_priority_kernel_manager(),
    )
    if result.err is not None:
        errors[str(path)] = f"{type(result.err).__name__}\n{result.exc_string}"
        return
    record = cache.add_nb_to_project(str(path), read_data=reader.read_fmt)
    bundle = CacheBundleIn(notebook, record.uri, data={"execution_seconds": result.time})
    cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)


#: Scheduling priority of the notebook kernels (``nice``), as for the probe process: the forkserver's imports and
#: the examples come first; a kernel, needed only when Sphinx reads its page, takes the CPU they leave.
KERNEL_NICENESS = 10


def _lower_this_threads_priority() -> None:
    """Lower the calling thread's scheduling priority, and so that of the processes it starts (the kernel).

    On Linux, niceness belongs to each thread and a child process inherits its creating thread's
    (``setpriority(2)``, ``PRIO_PROCESS`` with a thread ID); the rest of Sphinx keeps its own.
    Elsewhere nothing changes.
    """
    if sys.platform == "linux":
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, os.getpriority(os.PRIO_PROCESS, thread) + KERNEL_NICENESS)


def _low_priority_kernel_manager() -> type:
    """jupyter_client's ``AsyncKernelManager``, with the kernel's whole session lowered to :data:`KERNEL_NICENESS`.

    jupyter_client starts every kernel in a session of its own (``start_new_session=True`` in
    ``jupyter_client/launcher.py``). Where Linux groups the scheduling of each session (``autogroup``,
    ``/proc/sys/kernel/sched_autogroup_enabled``, on by default), a process's own niceness then counts only
    against the processes of its session: measured on the project's machine, a kernel at nice 10 still took
    a whole core from the two example workers, which shared the other. This manager also sets the niceness of
    the kernel's session (``/proc/<pid>/autogroup``, ``sched(7)``) once the kernel is started, in the method
    jupyter_client documents for launching kernels differently. Where that file does not exist or cannot be
    written, the kernel keeps the niceness it inherited.
    """
    from jupyter_client import AsyncKernelManager

    class LowPriorityKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            await super()._async_launch_kernel(kernel_cmd, **kw)
            process = getattr(self.provisioner, "process", None)
            if process is not None:
                try:
                    Path(f"/proc/{process.pid}/autogroup").write_text(str(KERNEL_NICENESS))
                except OSError:
                    pass

    return LowPriorityKernelManager


def _run(app: Sphinx, path: Path, errors: dict[str, str], force: bool) -> None:
    try:
        _lower_this_threads_priority()
        _execute(app, path, errors, force)
    except Exception as err:  # noqa: BLE001 - reported, with the path, when the build joins the thread
        errors[str(path)] = f"{type(err).__name__}: {err}"


def _on_builder_inited(app: Sphinx) -> None:
    if app.config.nb_execution_mode != "cache":
        return
    # myst-nb and myst-parser build their configuration at builder-inited too (priority 500); build it now.
    from myst_nb.sphinx_ext import create_mystnb_config
    from myst_parser.sphinx_ext.main import create_myst_config

    create_myst_config(app)
    create_mystnb_config(app)
    force = forced_execution()
    errors: dict[str, str] = {}
    threads = []
    for path in _notebook_sources(app, force):
        unless_cached = "" if force else ", unless the cache holds its execution"
        logger.info(f"executing notebook {path.relative_to(app.srcdir)} in the background{unless_cached} [nb_prefetch]")
        thread = threading.Thread(target=_run, args=(app, path, errors, force), name=f"nb_prefetch {path.name}")
        thread.start()
        threads.append(thread)
    app._nb_prefetch = (threads, errors)  # type: ignore[attr-defined]


def _on_env_before_read_docs(app: Sphinx, env: Any, docnames: list[str]) -> None:
    threads, errors = getattr(app, "_nb_prefetch", ((), {}))
    app._nb_prefetch = ((), {})  # type: ignore[attr-defined]
    for thread in threads:
        thread.join()
    if errors:
        report = "\n".join(f"{path}: executing the notebook failed: {error}" for path, error in errors.items())
        raise ExtensionError(report)


def setup(app: Sphinx) -> dict[str, Any]:
    # Before the probes (priority 400), whose start waits for the forkserver's imports, and before
    # sphinx-gallery's builder-inited handler (priority 500) executes the examples: the kernel starts first.
    app.connect("builder-inited", _on_builder_inited, priority=350)
    app.connect("env-before-read-docs", _on_env_before_read_docs)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
