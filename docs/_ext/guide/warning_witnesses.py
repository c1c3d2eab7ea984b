"""Sphinx extension: every declared warning is still emitted, by its witness, on the packages this build uses.

``src/migration_guide/declared_warnings.py`` lists the warnings the build accepts; each names a witness, a small
run of :mod:`migration_guide.warning_witnesses` that emits it. At ``config-inited`` this extension starts
``python -m migration_guide.warning_witnesses`` in its own process (Lightning is never imported into Sphinx), beside
the examples; at ``env-check-consistency`` it waits for it and logs a warning -- an error under ``-W`` -- naming
the declaration's file and line for every declared warning its witness did not emit: a warning Lightning stopped
emitting must not stay declared, hiding what a page says about it.

The witnesses' record lives in the build's doctree directory (``warning-witnesses.json``) with the hash of what it
depends on (the witnesses' and the declarations' sources, the installed Lightning, torch, ipykernel and
jupyter_client); a build re-runs them when that hash changed, or always with ``CI=true``; in a test run, a build
takes the record an earlier build of the same run made from the same inputs (``build_mechanics.recorded_run``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from build_mechanics import declared_warnings, recorded_run
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "src"
WITNESS_SOURCE = SRC / "migration_guide" / "warning_witnesses.py"
#: The list of accepted warnings (``build_mechanics.declared_warnings`` re-exports it).
DECLARATIONS = SRC / "migration_guide" / "declared_warnings.py"
#: The recorder's name (``build_mechanics.recorded_run``): its record is ``warning-witnesses.json`` in the doctree
#: directory.
NAME = "warning-witnesses"
RECORD = f"{NAME}.json"
DISTRIBUTIONS = ("lightning", "torch", "ipykernel", "jupyter_client")


def inputs_key() -> str:
    """Hash of what the witnesses' record depends on (see the module docstring)."""
    files = (WITNESS_SOURCE, DECLARATIONS, SRC / "migration_guide" / "probes.py")
    return recorded_run.inputs_key(files, DISTRIBUTIONS)


def emitted(record: list[dict[str, Any]], entry: declared_warnings.Declared) -> bool:
    """Whether ``record`` (one witness's warnings) holds ``entry``: a warning of its category (or a subclass) whose
    message starts with its message, compared as Python's warning filters compare them (case-insensitively)."""
    start = re.compile(re.escape(entry.message), re.I)
    return any(entry.category in item["category"] and start.match(item["message"]) for item in record)


def declaration_line(entry: declared_warnings.Declared) -> int:
    """The line of ``declared_warnings.py`` that declares ``entry``'s message (0 when not found)."""
    probe = entry.message.split("'")[0][:30]
    for number, line in enumerate(DECLARATIONS.read_text(encoding="utf-8").splitlines(), 1):
        if "message=" in line and probe in line:
            return number
    return 0


def unseen(record: dict[str, list[dict[str, Any]]]) -> list[tuple[declared_warnings.Declared, str]]:
    """Each declared warning its witness did not emit, with why."""
    problems = []
    for entry in declared_warnings.witnessed():
        if entry.witness not in record:
            problems.append((entry, f"its witness {entry.witness!r} did not run (known: {', '.join(record)})"))
        elif not emitted(record[entry.witness], entry):
            problems.append(
                (
                    entry,
                    f"its witness {entry.witness!r} no longer emits it on the installed packages: a warning that "
                    "is not emitted is not declared (remove it, and what it was declared for)",
                )
            )
    return problems


def _start(app: Sphinx, config: Any) -> None:
    from migration_guide.warning_witnesses import WITNESSES

    for entry in declared_warnings.witnessed():
        if entry.witness not in WITNESSES:
            raise ExtensionError(
                f"{DECLARATIONS}:{declaration_line(entry)}: declared warning {entry.message!r} names the witness "
                f"{entry.witness!r}; known: {', '.join(WITNESSES)} (src/migration_guide/warning_witnesses.py)"
            )
    run = recorded_run.start(
        NAME,
        Path(app.doctreedir),
        inputs_key(),
        "migration_guide.warning_witnesses",
        lambda out: ["--output", str(out)],
    )
    if run.process is not None:
        logger.info("running the declared warnings' witnesses (src/migration_guide/warning_witnesses.py) ...")
    app._witnesses = run  # type: ignore[attr-defined]


FAILURE = recorded_run.default_failure("the warning witnesses", "src/migration_guide/warning_witnesses.py")


def _finish(app: Sphinx) -> None:
    run = getattr(app, "_witnesses", None)
    app._witnesses = None  # type: ignore[attr-defined]
    recorded_run.finish(run, FAILURE)


def _check(app: Sphinx, env: Any) -> None:
    _finish(app)
    witnessed = json.loads((Path(app.doctreedir) / RECORD).read_text(encoding="utf-8"))
    for entry, reason in unseen(witnessed):
        logger.warning(
            f"declared warning {entry.message!r} ({entry.category}): {reason}",
            location=f"{DECLARATIONS}:{declaration_line(entry)}",
            type="declared-warnings",
        )


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _start)
    app.connect("env-check-consistency", _check)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
