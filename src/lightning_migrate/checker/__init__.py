"""A static checker for the removed epoch-end and batch hooks of PyTorch Lightning, with fixes labelled as ruff
labels them.

``lightning-migrate PATH ...`` (see :mod:`lightning_migrate.checker.cli`) reports every old hook shape of
:mod:`lightning_migrate.registry` found in Lightning classes; ``--diff`` / ``--fix`` rewrite the safe cases, and
``--unsafe-fixes`` the opt-in rewrites too. From Python: :func:`check_source` (one file's bytes) and
:func:`rewrite_source` (every fix applied).
"""

from lightning_migrate.checker.base import Finding, docs_url
from lightning_migrate.checker.core import Result, check_source
from lightning_migrate.checker.rewrite import RewriteError, rewrite_source
from lightning_migrate.checker.rules import RULES

__all__ = ["RULES", "Finding", "Result", "RewriteError", "check_source", "docs_url", "rewrite_source"]
