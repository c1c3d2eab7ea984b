"""Helpers of the checker tests: run the checker on a snippet or on a folder tree."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from lightning_migrate.checker import check_source
from lightning_migrate.checker.base import MARKER_CONTINUATION
from lightning_migrate.checker.cli import main


def fix(source: str, **options) -> str:
    """The ``--fix`` output of a snippet (the snippet itself when nothing changes), each marker on one line
    (:func:`unwrapped`); ``options`` go to :func:`check_source` (``unsafe_fixes=True`` for the opt-in rewrites)."""
    return unwrapped(fix_exact(source, **options))


def fix_exact(source: str, **options) -> str:
    """The ``--fix`` output of a snippet as written, markers wrapped."""
    result = check_source(textwrap.dedent(source).encode(), fix=True, **options)
    return (result.new_source or textwrap.dedent(source).encode()).decode()


def unwrapped(text: str) -> str:
    """``text`` with each marker's continuation lines (``#   ...``, :func:`marker_lines`) joined to the line before:
    what a marker says, on one line, whatever the wrapping."""
    return re.sub(rf"\n[ \t]*{re.escape(MARKER_CONTINUATION)}", " ", text)


def codes(source: str, notes: bool = False) -> list[tuple[str, int, bool]]:
    """``(code, line, confident)`` of each finding of a snippet (with ``notes``, the informational ones too)."""
    result = check_source(textwrap.dedent(source).encode(), notes=notes)
    return [(f.code, f.line, f.confident) for f in result.findings]


def write(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: dedented text}`` under ``root``; return ``root``."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content), encoding="utf-8", newline="")
    return root


def run(args, capsys) -> tuple[int, list[str], str]:
    """``lightning-migrate ARGS`` in this process: exit code, standard output lines, standard error."""
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err
