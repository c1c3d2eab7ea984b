"""The Python warnings the build accepts, each with its reason; every other warning is an error.

This list is the one place a warning may be declared. Everything that runs code for the site reads it:

- ``conf.py`` sets :data:`PYTHONWARNINGS <os.environ>` to :func:`pythonwarnings` (``error`` first, then one
  ``ignore`` entry per declared warning), so every Python process the build starts inherits the filters:
  sphinx-gallery's ``parallel`` workers, the myst-nb notebook kernel, the probes
  (``docs/_ext/guide/probe_records.py``) and the scenario matrix (``docs/_ext/guide/scenario_matrix.py``);
- :func:`strict_warnings` is a sphinx-gallery ``reset_modules`` entry: it installs the same filters around each
  example, also when examples run in the Sphinx process (``-j 1``), and turns Lightning's informational log down;
- ``tests/test_notebooks.py`` runs the downloaded notebooks in a kernel started with :func:`pythonwarnings`.

:data:`IN_SCENARIO_CELLS` is the part of the list accepted only inside the cells of the scenario matrix
(``src/lightning_migrate/scenarios``; it reads them with ``space.declared_warnings()``): Lightning's advice about a
configuration the matrix runs on purpose (several ranks during ``trainer.validate()``, a resumed mid-epoch
checkpoint). Outside those cells -- every example, notebook and probe -- they fail the build like any other warning.

A reader's own run has none of these filters: the downloads start with :func:`reader_lines`, which turn down what a
reader's run would print beside the point (``build_mechanics/reader_downloads.py``).

A warning raised under these filters is an exception (Python's documented ``error`` action), with a traceback
naming the file and line that raised it, so the example, notebook or probe fails and the build with it. Code that
shows a warning on purpose catches it with :class:`warnings.catch_warnings` (``record=True`` and
``simplefilter("always")``), which overrides these filters inside its block.

A declared warning is a claim about what Lightning (or torch, ipykernel) emits, so it carries its evidence:
:attr:`Declared.witness` names a small run of :mod:`lightning_migrate.warning_witnesses` that emits it. The build
runs every witness on the installed packages (``docs/_ext/guide/warning_witnesses.py``) and fails when a declared
warning is no longer among what its witness emitted: a warning that stopped being emitted is not kept declared.

Python's ``-W``/``PYTHONWARNINGS`` syntax matches a message by its literal start, case-insensitively, and splits
entries at commas and fields at colons, so :attr:`Declared.message` holds neither; :attr:`Declared.category`
is a built-in warning class, so starting a Python process imports nothing for it.
"""

from __future__ import annotations

import builtins
import logging
import re
import warnings
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Declared:
    """One accepted warning: the start of its message, its built-in category, why it is accepted, and the witness
    (a name of :data:`lightning_migrate.warning_witnesses.WITNESSES`) whose run emits it -- required in
    :data:`DECLARED`; an entry of :data:`IN_SCENARIO_CELLS` without one is emitted by the matrix cells that run its
    configuration, and no witness checks that it still is (:func:`witnessed`)."""

    message: str
    category: str
    reason: str
    witness: str = ""


#: torch's deprecations of APIs that Lightning itself calls: a reader's own run would print them too
#: (:func:`reader_lines`).
LIGHTNING_ON_TORCH: tuple[Declared, ...] = (
    Declared(
        message="`isinstance(treespec",
        category="FutureWarning",
        reason=(
            "Lightning calls a torch.utils._pytree API that the pinned torch deprecates, on every fit; it says nothing "
            "about this guide. The one-line fix is Lightning's: lightning/pytorch/utilities/_pytree.py builds its "
            "leaf spec with torch's deprecated LeafSpec()."
        ),
        witness="fit",
    ),
    Declared(
        message="torch.distributed.nn.functional.all_gather is deprecated",
        category="Warning",
        reason=(
            "Lightning's all_gather (lightning/fabric/utilities/distributed.py) calls a torch API that the pinned "
            "torch deprecates; the DDP pages and scenarios gather per-rank caches through it."
        ),
        witness="ddp-on-two-processes",
    ),
)

#: Every warning the build accepts. Anything else an example, notebook or probe emits fails the build.
DECLARED: tuple[Declared, ...] = (
    *LIGHTNING_ON_TORCH,
    *(
        Declared(
            message=f"The '{loader}' does not have many workers",
            category="UserWarning",  # Lightning's PossibleUserWarning is a subclass
            reason=(
                "Lightning suggests more DataLoader workers only on machines with more than two CPUs per device: the "
                "examples' toy datasets need none, and a page must not change with the machine that built it."
            ),
            witness="every-stage-on-eight-cpus",
        )
        for loader in ("train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader")
    ),
    Declared(
        message="For consistency across implementations",
        category="PendingDeprecationWarning",
        reason=(
            "ipykernel warns about its own IPythonKernel.do_shutdown when the notebook kernel shuts down "
            "(ipykernel/kernelbase.py), after the last cell ran: nothing a notebook of this guide does."
        ),
        witness="notebook-kernel-shutdown",
    ),
    # The scenario matrix (data/scenarios.toml) runs, on purpose, the configurations Lightning warns about; the
    # cells compare what each recipe logs with a ground truth, so these warnings are facts of the scenario.
    Declared(
        message="The number of training batches (",
        category="UserWarning",
        reason=(
            "The examples and the scenario matrix train on a few batches, fewer than Trainer's log_every_n_steps; "
            "their epoch-level values are logged at epoch end whatever that interval."
        ),
        witness="fit",
    ),
    Declared(
        message="It is recommended to use `self.log('",
        category="UserWarning",
        reason=(
            "The DDP scenarios, ddp_per_rank_caches.py and ddp_training_epoch_mean.py log per-rank values without "
            "sync_dist on purpose: that per-rank difference is what they show (ddp_per_rank_caches.py captures the "
            "warning and prints it)."
        ),
        witness="ddp-on-two-processes",
    ),
    Declared(
        message="`training_step` returned `None`",
        category="UserWarning",
        reason=(
            "The step_returns_none scenario and empty_outputs.py return None from training_step on purpose, to show "
            "what a callback receives then (the example captures the warning and prints it)."
        ),
        witness="fit-with-a-step-returning-none",
    ),
)

#: Warnings accepted inside the scenario matrix's cells only (see the module docstring): never in
#: :func:`pythonwarnings`, so an example, a notebook or a probe that emits one fails the build.
IN_SCENARIO_CELLS: tuple[Declared, ...] = (
    *(
        Declared(
            message=f"Using `DistributedSampler` with the dataloaders. During `trainer.{call}()`",
            category="UserWarning",
            reason=(
                f"The DDP scenarios run trainer.{call}() on several ranks on purpose: what each rank's cache holds is "
                "what they check."
            ),
            witness="ddp-on-two-processes" if call == "test" else "",
        )
        for call in ("validate", "test", "predict")
    ),
    Declared(
        message="Checkpoint directory ",
        category="UserWarning",
        reason=(
            "A run resumed from a checkpoint writes its checkpoints where the interrupted run wrote them, as a resumed "
            "job does."
        ),
    ),
    Declared(
        message="You're resuming from a checkpoint that ended before the epoch ended",
        category="UserWarning",
        reason=(
            "The resumed scenarios resume from a mid-epoch checkpoint on purpose (Lightning #16362): Lightning warns, "
            "then restarts the loader."
        ),
    ),
    Declared(
        message="Found ",
        category="UserWarning",
        reason=(
            "A run that crashed during an evaluation left the module in eval mode; Lightning warns when the re-run's "
            "fit starts (the crashed-and-re-run scenarios)."
        ),
    ),
    Declared(
        message="Couldn't infer the batch indices fetched from your dataloader",
        category="UserWarning",
        reason=(
            "An iterable dataset has no sampler whose indices Lightning could hand a prediction writer (the "
            "iterable-dataset scenarios), nor has a batch sampler a framework's strategy put in after Lightning "
            "prepared the loader (NVIDIA-BioNeMo/bionemo-recipes #482's scenario)."
        ),
    ),
)


def witnessed() -> tuple[Declared, ...]:
    """Every declared warning that names a witness: all of :data:`DECLARED`, and the entries of
    :data:`IN_SCENARIO_CELLS` that have one (``docs/_ext/guide/warning_witnesses.py`` runs them all)."""
    return (*DECLARED, *(entry for entry in IN_SCENARIO_CELLS if entry.witness))


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
