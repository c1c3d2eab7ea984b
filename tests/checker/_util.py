"""Helpers of the checker tests: run the checker on a snippet or on a folder tree."""

from __future__ import annotations

import textwrap

from lightning_migrate.checker import check_source


def fix(source: str, rewrite_caching: bool = False) -> str:
    """The ``--fix`` output of a snippet (the snippet itself when nothing changes)."""
    result = check_source(textwrap.dedent(source).encode(), fix=True, rewrite_caching=rewrite_caching)
    return (result.new_source or textwrap.dedent(source).encode()).decode()


def codes(source: str, notes: bool = False) -> list[tuple[str, int, bool]]:
    """``(code, line, confident)`` of each finding of a snippet (with ``notes``, the informational ones too)."""
    result = check_source(textwrap.dedent(source).encode(), notes=notes)
    return [(f.code, f.line, f.confident) for f in result.findings]
