"""Sphinx extension: every gallery page records the Trainer configuration of each of its runs, as it ran.

A claim whose evidence is a page's ``assert`` says in its ``scope`` what configuration that page ran in
(``docs/_ext/guide/claims.py`` compares the two). The page's code is the reader's, so nothing is added to it: the
recorder is a Lightning callback that Lightning itself adds to every ``Trainer()`` of the build's examples, through its
documented entry-point group ``lightning.pytorch.callbacks_factory`` (:mod:`migration_guide.run_configurations`).

- At ``builder-inited``, before sphinx-gallery starts its workers (priority 400 < 500), the environment variable
  :data:`migration_guide.run_configurations.DIRECTORY` names :func:`directory` (``<doctrees>/run-configurations``):
  the workers, and the processes a ``ddp_fork`` example forks, inherit it.
- :func:`record_runs`, a sphinx-gallery ``reset_modules`` entry, puts :data:`ENTRY_POINT` (a ``*.dist-info`` folder:
  the entry point's metadata, seen by ``importlib.metadata`` only where it is on ``sys.path``) on the example
  process's path before each example, and empties the page's record: a page that ran records the runs of that run.

A page sphinx-gallery does not run in a build (its checksum is current) keeps the record of the run that made its
checksum. ``tests/test_claims.py`` builds a fixture project and reads what its page recorded.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from migration_guide import run_configurations

#: The folder holding the entry point's metadata (``guide_run_recorder-1.dist-info``).
ENTRY_POINT = Path(__file__).resolve().parent / "run_recorder"
#: Runs before sphinx-gallery's ``builder-inited`` handler (500), which starts the workers.
PRIORITY = 400


def directory(app: Sphinx) -> Path:
    """Where the pages' run records are written in this build: ``<doctrees>/run-configurations``."""
    return Path(app.doctreedir) / "run-configurations"


def record_runs(gallery_conf: dict[str, Any], fname: str, when: str) -> None:
    """A sphinx-gallery ``reset_modules`` entry: before an example, the recorder's entry point on the path and the
    page's record emptied (see the module docstring)."""
    if when != "before" or not fname:
        return
    if str(ENTRY_POINT) not in sys.path:
        sys.path.append(str(ENTRY_POINT))
    folder = os.environ.get(run_configurations.DIRECTORY)
    if folder:
        run_configurations.start_page(Path(folder), Path(fname).name)


def _name_the_folder(app: Sphinx) -> None:
    folder = directory(app)
    folder.mkdir(parents=True, exist_ok=True)
    os.environ[run_configurations.DIRECTORY] = str(folder)
    os.environ[run_configurations.PROJECT] = str(Path(app.confdir).resolve())


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", _name_the_folder, priority=PRIORITY)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
