"""Where the project's checkout keeps what the repository-only tools read: one place for the whole package.

The release runs (:mod:`lightning_migrate.compat`), the scenario matrix (:mod:`lightning_migrate.scenarios`) and the
rewrite-equivalence runs (:mod:`lightning_migrate.rewrite_equivalence`) read the checkout's data files
(``data/compat``, ``data/scenarios.toml``, ``data/rewrites``), never the docs tree (the build's list of accepted
warnings is :mod:`lightning_migrate.declared_warnings`, imported); they run from the checkout (``PYTHONPATH=src``, as
the noxfile and the build run them), never from an installed ``lightning-migrate``, whose checker needs none of this.
Every path into the checkout is made here, from this file's place in ``src/lightning_migrate``, instead of in each
module.
"""

from __future__ import annotations

from pathlib import Path

#: The checkout's root: ``src/lightning_migrate/source_tree.py`` is two folders below it.
ROOT = Path(__file__).resolve().parents[2]
#: The checkout's data files.
DATA = ROOT / "data"
