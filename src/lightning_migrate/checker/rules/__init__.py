"""The rules, one module each, and :data:`RULES`: the one list of them, which the core, the command and the docs
read. Adding a rule is adding its module and one line here; a rule module imports :mod:`..base` (what a rule is
made of) and never the core, so nothing here imports back."""

from __future__ import annotations

from lightning_migrate import registry
from lightning_migrate.checker.base import Rule
from lightning_migrate.checker.rules.lm001_epoch_end_methods import EpochEndMethods
from lightning_migrate.checker.rules.lm002_epoch_end_parameters import EpochEndParameters
from lightning_migrate.checker.rules.lm003_train_batch_dataloader_idx import TrainBatchDataloaderIdx
from lightning_migrate.checker.rules.lm004_eval_batch_dataloader_idx import EvalBatchDataloaderIdx
from lightning_migrate.checker.rules.lm005_step_end import StepEnd
from lightning_migrate.checker.rules.lm006_never_called import NeverCalled
from lightning_migrate.checker.rules.lm007_unknown_hooks import UnknownHooks
from lightning_migrate.checker.rules.lm008_async_hooks import AsyncHooks
from lightning_migrate.checker.rules.lm009_removed_imports import RemovedImports


def _listed(*rules: Rule) -> dict[str, Rule]:
    """``{code: rule}`` in code order. Raises ``ValueError`` for a code listed twice, and ``KeyError`` naming the
    known ids for a registry pattern a rule names that the registry does not hold."""
    listed: dict[str, Rule] = {}
    for rule in rules:
        if rule.code in listed:
            raise ValueError(f"rule code {rule.code} listed twice")
        for pattern_id in rule.patterns:
            registry.get(pattern_id)
        listed[rule.code] = rule
    return listed


#: code -> rule, in code order.
RULES: dict[str, Rule] = _listed(
    EpochEndMethods(),
    EpochEndParameters(),
    TrainBatchDataloaderIdx(),
    EvalBatchDataloaderIdx(),
    StepEnd(),
    NeverCalled(),
    UnknownHooks(),
    AsyncHooks(),
    RemovedImports(),
)
