"""The Python warnings the build accepts, each with its reason; every other warning is an error.

The list itself -- :class:`Declared`, :data:`DECLARED`, :data:`IN_SCENARIO_CELLS` -- is
:mod:`migration_guide.declared_warnings`, the one place a warning may be declared, re-exported here; this module
applies it. Everything that runs code for the site reads it:

- ``conf.py`` sets :data:`PYTHONWARNINGS <os.environ>` to :func:`pythonwarnings` (``error`` first, then one
  ``ignore`` entry per declared warning), so every Python process the build starts inherits the filters:
  sphinx-gallery's ``parallel`` workers, the myst-nb notebook kernel, the probes
  (``docs/_ext/guide/probe_records.py``) and the scenario matrix (``docs/_ext/guide/scenario_matrix.py``);
- :func:`strict_warnings` is a sphinx-gallery ``reset_modules`` entry: it installs the same filters around each
  example, also when examples run in the Sphinx process (``-j 1``), and turns Lightning's informational log down;
- ``tests/test_notebooks.py`` runs the downloaded notebooks in a kernel started with :func:`pythonwarnings`.

:data:`IN_SCENARIO_CELLS` is the part of the list accepted only inside the cells of the scenario matrix
(``src/migration_guide/scenarios``; it imports them with ``space.declared_warnings()``): Lightning's advice about a
configuration the matrix runs on purpose (several ranks during ``trainer.validate()``, a resumed mid-epoch
checkpoint). Outside those cells -- every example, notebook and probe -- they fail the build like any other warning.

A reader's own run has none of these filters: the downloads start with :func:`reader_lines`, which turn down what a
reader's run would print beside the point (``build_mechanics/reader_downloads.py``).

A warning raised under these filters is an exception (Python's documented ``error`` action), with a traceback
naming the file and line that raised it, so the example, notebook or probe fails and the build with it. Code that
shows a warning on purpose catches it with :class:`warnings.catch_warnings` (``record=True`` and
``simplefilter("always")``), which overrides these filters inside its block.

Why each warning is accepted, its witness, and the syntax a declared message keeps to are told in
:mod:`migration_guide.declared_warnings`.
"""

from __future__ import annotations

import builtins
import logging
import re
import warnings
from typing import Any

from migration_guide.declared_warnings import (  # the list (src/ is on sys.path wherever the build runs)
    DECLARED,
    IN_SCENARIO_CELLS,
    LIGHTNING_ON_TORCH,
    Declared,
    witnessed,
)

__all__ = [
    "DECLARED", "IN_SCENARIO_CELLS", "LIGHTNING_ON_TORCH", "LIGHTNING_LOGGERS", "Declared", "install_filters",
    "pythonwarnings", "quiet_lightning", "reader_lines", "strict_warnings", "witnessed",
]  # fmt: skip


#: Lightning's loggers whose INFO records ("GPU available: ...", the LitLogger tip, "`Trainer.fit` stopped: ...")
#: are turned down to WARNING in every example: they describe the build machine, not the lesson.
LIGHTNING_LOGGERS = ("lightning.pytorch", "lightning.fabric")


def _pattern(message: str) -> str:
    """``message`` as the start of a :func:`warnings.filterwarnings` pattern: its regex metacharacters escaped
    (spaces left as they are, for the reader), for a raw string literal (``message`` holds no double quote)."""
    if '"' in message:
        raise ValueError(f"declared warning {message!r}: the downloads' first cell cannot quote a double quote")
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", message)


def reader_lines() -> list[str]:
    """The lines a downloaded example starts with (``build_mechanics.reader_downloads``), so that a reader's run shows
    what its page shows: Lightning's informational log turned down (as :func:`quiet_lightning` does), and the
    declared warnings that a reader's run would print, although they say nothing about the example -- Lightning's
    tips for larger runs (its ``PossibleUserWarning``: more dataloader workers, a logging interval longer than the
    epoch) and torch's deprecations of APIs Lightning itself calls (:data:`LIGHTNING_ON_TORCH`).
    The warnings an example shows on purpose, it catches itself.
    """
    loggers = ", ".join(f'"{name}"' for name in LIGHTNING_LOGGERS)
    return [
        "import logging",
        "import warnings",
        "",
        "from lightning.pytorch.utilities import disable_possible_user_warnings",
        "",
        f"for name in ({loggers}):  # no INFO lines: devices, processes started, why fit stopped",
        "    logging.getLogger(name).setLevel(logging.WARNING)",
        "disable_possible_user_warnings()  # Lightning's tips for larger runs: more workers, a longer logging interval",
        "# torch's deprecations of APIs that Lightning itself calls:",
        *(
            f'warnings.filterwarnings("ignore", r"{_pattern(entry.message)}", {entry.category})'
            for entry in LIGHTNING_ON_TORCH
        ),
    ]


def _check(entry: Declared) -> None:
    if any(char in entry.message for char in ",:"):
        raise ValueError(f"declared warning {entry.message!r}: PYTHONWARNINGS cannot hold ',' or ':' in a message")
    category = getattr(builtins, entry.category, None)
    if not (isinstance(category, type) and issubclass(category, Warning)):
        raise ValueError(f"declared warning {entry.message!r}: {entry.category!r} is not a built-in warning class")


def pythonwarnings() -> str:
    """The ``PYTHONWARNINGS`` value: ``error``, then ``ignore:<message>:<category>`` per declared warning.

    Python applies the entries in order, a later one taking precedence, so a declared warning is ignored and
    every other warning raises.

    Raises:
        ValueError: a declared message holds ``,`` or ``:``, or its category is not a built-in warning class.
    """
    for entry in DECLARED:
        _check(entry)
    return ",".join(["error", *(f"ignore:{entry.message}:{entry.category}" for entry in DECLARED)])


def install_filters() -> None:
    """Apply the same filters in this process: every warning an error, the declared ones ignored."""
    warnings.simplefilter("error")
    for entry in DECLARED:
        _check(entry)
        warnings.filterwarnings("ignore", message=_pattern(entry.message), category=getattr(builtins, entry.category))


def quiet_lightning() -> None:
    """Turn Lightning's loggers (:data:`LIGHTNING_LOGGERS`) down to WARNING, after Lightning set them to INFO.

    Lightning sets its logger's level to INFO when it is first imported, so it is imported first. Imported here,
    before sphinx-gallery redirects the example's output, its log handler writes to the worker's own standard
    error: what Lightning logs never lands on whichever example a worker happened to run first.
    """
    import lightning.pytorch  # noqa: F401

    for name in LIGHTNING_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


_around_example: list[warnings.catch_warnings] = []


def strict_warnings(gallery_conf: dict[str, Any], fname: str, when: str) -> None:
    """A sphinx-gallery ``reset_modules`` entry (``reset_modules_order = "both"``).

    Before an example: save the process's warning filters, :func:`install_filters`, :func:`quiet_lightning`.
    After it: restore the saved filters, so Sphinx's own process (``-j 1``) goes on with the filters it had.
    """
    while _around_example:  # an example whose "after" call never came
        _around_example.pop().__exit__(None, None, None)
    if when == "before":
        saved = warnings.catch_warnings()
        saved.__enter__()
        _around_example.append(saved)
        install_filters()
        quiet_lightning()
