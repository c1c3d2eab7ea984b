"""Where the project's checkout keeps what the repository-only tools read: one place for the whole package.

The release runs (:mod:`migration_guide.compat`), the scenario matrix (:mod:`migration_guide.scenarios`) and the
rewrite-equivalence runs (:mod:`migration_guide.rewrite_equivalence`) read the checkout's data files
(``data/compat``, ``data/scenarios.toml``, ``data/rewrites``), never the docs tree (the build's list of accepted
warnings is :mod:`migration_guide.declared_warnings`, imported); they run from the checkout (``PYTHONPATH=src``, as
the noxfile and the build run them), never from an installed ``lightning-migrate``, whose checker needs none of this.
Every path into the checkout is made here, from this file's place in ``src/lightning_migrate``, instead of in each
module.
"""

from __future__ import annotations

from pathlib import Path

#: The checkout's root: ``src/migration_guide/source_tree.py`` is two folders below it.
ROOT = Path(__file__).resolve().parents[2]
#: The checkout's data files.
DATA = ROOT / "data"
