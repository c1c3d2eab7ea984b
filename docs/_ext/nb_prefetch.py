"""Sphinx extension: start executing the MyST notebooks a build will read before sphinx-gallery runs the examples.

myst-nb executes a notebook when Sphinx reads its page, which comes after sphinx-gallery has executed every
example at ``builder-inited``: one after the other, although the notebook's kernel is a separate process that
could use the machine's second core. This extension starts each notebook's execution in a background thread
at ``builder-inited``, before the examples run, with myst-nb's own reader and jupyter-cache's own executor (the
calls myst-nb makes itself), and stores the executed notebook in the jupyter-cache that myst-nb reads with
``nb_execution_mode = "cache"``. When Sphinx reads the page, myst-nb finds the result there.

Which notebooks: those the environment never read or whose source changed since, and in CI (``CI=true``) every
one, so a CI build executes every notebook afresh. A failed execution fails the build at
``env-before-read-docs`` with the notebook's path and the traceback.
"""

from __future__ import annotations

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


def _execute(app: Sphinx, path: Path, errors: dict[str, str]) -> None:
    """Execute the notebook ``path`` and cache it where myst-nb looks; failures go to ``errors[str(path)]``."""
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
    result = single_nb_execution(
        notebook,
        cwd=str(path.parent),
        allow_errors=nb_config.execution_allow_errors,
        timeout=nb_config.execution_timeout,
        meta_override=True,
    )
    if result.err is not None:
        errors[str(path)] = f"{type(result.err).__name__}\n{result.exc_string}"
        return
    cache = get_cache(nb_config.execution_cache_path)
    record = cache.add_nb_to_project(str(path), read_data=reader.read_fmt)
    bundle = CacheBundleIn(notebook, record.uri, data={"execution_seconds": result.time})
    cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)


def _run(app: Sphinx, path: Path, errors: dict[str, str]) -> None:
    try:
        _execute(app, path, errors)
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
        logger.info(f"executing notebook {path.relative_to(app.srcdir)} in the background [nb_prefetch]")
        thread = threading.Thread(target=_run, args=(app, path, errors), name=f"nb_prefetch {path.name}")
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
