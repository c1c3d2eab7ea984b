"""A static checker for the removed epoch-end and batch hooks of PyTorch Lightning, with safe automatic fixes.

``lightning-migrate PATH ...`` (see :mod:`lightning_migrate.checker.cli`) reports every old hook shape of
:mod:`lightning_migrate.registry` found in Lightning classes; ``--diff`` / ``--fix`` rewrite the safe cases.
"""

from lightning_migrate.checker import rules  # noqa: F401 - registers every rule
from lightning_migrate.checker.core import RULES, Finding, Result, check_source, docs_url

__all__ = ["RULES", "Finding", "Result", "check_source", "docs_url"]
