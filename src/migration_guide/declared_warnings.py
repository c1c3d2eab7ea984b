"""The Python warnings the build accepts, each with its reason and its witness: the one list.

Every other warning is an error in the build. This module holds the list only; how it is applied -- the
``PYTHONWARNINGS`` every process of the build inherits, the filters around each example, the first cell of a
download -- is ``docs/_ext/build_mechanics/declared_warnings.py`` (which re-exports these names), and the scenario
matrix's cells ignore :data:`IN_SCENARIO_CELLS` (:func:`migration_guide.scenarios.space.declared_warnings`): the
list is imported by both, never read by its path.

:data:`IN_SCENARIO_CELLS` is the part of the list accepted only inside the cells of the scenario matrix: Lightning's
advice about a configuration the matrix runs on purpose (several ranks during ``trainer.validate()``, a resumed
mid-epoch checkpoint). Outside those cells -- every example, notebook and probe -- they fail the build like any other
warning.

A declared warning is a claim about what Lightning (or torch, ipykernel) emits, so it carries its evidence:
:attr:`Declared.witness` names a small run of :mod:`migration_guide.warning_witnesses` that emits it. The build
runs every witness on the installed packages (``docs/_ext/guide/warning_witnesses.py``) and fails when a declared
warning is no longer among what its witness emitted: a warning that stopped being emitted is not kept declared.

Python's ``-W``/``PYTHONWARNINGS`` syntax matches a message by its literal start, case-insensitively, and splits
entries at commas and fields at colons, so :attr:`Declared.message` holds neither; :attr:`Declared.category`
is a built-in warning class, so starting a Python process imports nothing for it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Declared:
    """One accepted warning: the start of its message, its built-in category, why it is accepted, and the witness
    (a name of :data:`migration_guide.warning_witnesses.WITNESSES`) whose run emits it -- required in
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
