"""Sphinx extension: sphinx-gallery's ``parallel`` workers, started only by builds that execute an example.

``conf.py`` sets sphinx-gallery's documented ``parallel`` option to ``True`` (as many joblib workers as Sphinx's
``-j``): each worker imports torch and Lightning once, then runs one example after another, and on two cores the
examples of a section run side by side. Measured on the project's 2-core machine: on a quiet machine, examples
run serially made a clean build 6.0 s slower (9.0 s; measured before this rewrite, with workers forked from a
preloaded forkserver); a preloaded forkserver in place of loky's fresh workers saved 0.3 s of CPU of the
workers' 15.9 s (psutil, one build each), so it is gone. On a loaded machine (load average 4 to 6), serial
examples cost 5-6 s less CPU (29-32 s against 35-38 s) and the wall times of three interleaved pairs did not
settle which is faster.

sphinx-gallery 0.22 hands *every* example to the workers, also those it will not run because their checksum is
current, so a rebuild that executes nothing would still start them: a no-op rebuild took 3.2 s with ``parallel``
always on, 1.9 s with this extension (three runs each, same tree).

At ``builder-inited``, before sphinx-gallery's own handler (priority 500) generates the gallery, this extension
turns ``parallel`` off when sphinx-gallery will execute no example, deciding that with sphinx-gallery's own
rules and functions: a script under ``examples_dirs`` not matched by ``ignore_pattern`` runs when
``executable_script`` says so (``filename_pattern``, ``plot_gallery``) and either ``run_stale_examples`` is on or
its text's checksum (``get_md5sum``) differs from the one sphinx-gallery wrote after the last run. A CI build
(``CI=true``) turns ``run_stale_examples`` on first. Both switches are made after the HTML builder hashed the
configuration, so a build that runs examples and one that does not never rewrite each other's pages.

``tests/test_build_extensions.py`` fails if sphinx-gallery's handler stops running after this one. The one-line
upstream change that makes this extension unnecessary: in ``sphinx_gallery.gen_rst.generate_dir_rst``, hand the
workers only the examples that will run, generating the others' pages in the main process.
"""

from __future__ import annotations

import gc
import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from build_mechanics.execution_mode import forced_execution

#: Runs before sphinx-gallery's ``builder-inited`` handler, which is connected at Sphinx's default, 500.
PRIORITY = 400


def examples_to_run(app: Sphinx) -> list[Path]:
    """The gallery scripts sphinx-gallery will execute in this build, by its own rules (see the module docstring)."""
    from sphinx_gallery.gen_rst import executable_script
    from sphinx_gallery.utils import get_md5sum

    conf = app.config.sphinx_gallery_conf
    srcdir = Path(app.srcdir)
    scripts = []
    dirs = [[d] if isinstance(d, str) else d for d in (conf["examples_dirs"], conf["gallery_dirs"])]  # as it does
    for examples_dir, gallery_dir in zip(*dirs, strict=True):
        source_root, target_root = (srcdir / examples_dir).resolve(), srcdir / gallery_dir
        for script in sorted(source_root.rglob("*.py")):
            if re.search(conf["ignore_pattern"], str(script)) or not executable_script(script, conf):
                continue
            checksum = target_root / script.relative_to(source_root).with_suffix(".py.md5")
            stale = not checksum.is_file() or checksum.read_text() != get_md5sum(script, mode="t")
            if conf["run_stale_examples"] or stale:
                scripts.append(script)
    return scripts


def freeze_survivors(gallery_conf: dict[str, Any], fname: str, when: str) -> None:
    """A sphinx-gallery ``reset_modules`` entry: collect, then move every surviving object to the permanent generation.

    sphinx-gallery runs ``gc.collect()`` before each example; in a worker that has imported torch and Lightning,
    each of those walks their whole heap again and finds nothing. Run just before it, this makes each collection
    walk only what the previous example left (:func:`gc.freeze`); an example's own garbage is still collected.
    Measured with ``nox -s bench``: a clean build's CPU time went from 39.2 s to 34.3 s. Only before an example
    (``when == "before"``): after it, its globals are still referenced and would be frozen for good.
    """
    if when != "before":
        return
    gc.collect()
    gc.freeze()


def _configure(app: Sphinx) -> None:
    conf = app.config.sphinx_gallery_conf
    if forced_execution():
        conf["run_stale_examples"] = True
    if conf["parallel"] and not examples_to_run(app):
        conf["parallel"] = False


def setup(app: Sphinx) -> dict[str, Any]:
    """List after ``sphinx_gallery.gen_gallery`` in ``extensions``."""
    app.connect("builder-inited", _configure, priority=PRIORITY)
    return {"version": "2", "parallel_read_safe": True, "parallel_write_safe": True}
