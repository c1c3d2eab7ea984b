"""Each rule's rewrite of a registry pattern's old signature gives the registry's new signature: the registry is the
one source of hook facts, for the checker as for the tables and the probes."""

from __future__ import annotations

import ast

import pytest

from lightning_migrate import registry
from lightning_migrate.checker import check_source, proven
from lightning_migrate.checker.base import PROVEN, UNSAFE
from lightning_migrate.checker.rules._rename import COUNTED


def _class_with(pattern: registry.OldPattern) -> str:
    base = "pl.LightningModule" if pattern.owner == "LightningModule" else "pl.Callback"
    params = pattern.old_signature.partition("(")[2].rpartition(")")[0].split(", ")
    # a body that only passes its input on (what LM005 removes safely); the others do not read their parameters
    body = f"return {params[-1]}" if pattern.new_signature is None else "pass"
    head = f'import lightning.pytorch as pl\n\n\nclass Old({base}):\n    """Old."""\n\n'
    return head + f"    def {pattern.old_signature}:\n        {body}\n"


def _signature(source: bytes) -> str | None:
    """The one method of class ``Old``, as ``name(a, b, c=0)`` (the registry's spelling); ``None``: no method."""
    [cls] = [node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)]
    methods = [item for item in cls.body if isinstance(item, ast.FunctionDef)]
    if not methods:
        return None
    [method] = methods
    args = method.args.args
    defaults = [None] * (len(args) - len(method.args.defaults)) + method.args.defaults
    parts = [arg.arg + (f"={ast.unparse(d)}" if d is not None else "") for arg, d in zip(args, defaults, strict=True)]
    return f"{method.name}({', '.join(parts)})"


def _signatures(source: bytes) -> list[str]:
    """Every method of class ``Old``, as :func:`_signature` spells one."""
    [cls] = [node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)]
    found = []
    for item in cls.body:
        if isinstance(item, ast.FunctionDef):
            found.append(f"{item.name}({', '.join(arg.arg for arg in item.args.args)})")
    return found


@pytest.mark.parametrize("pattern", registry.PATTERNS, ids=[p.id for p in registry.PATTERNS])
def test_the_rewrite_of_the_old_signature_is_the_new_signature(pattern):
    result = check_source(_class_with(pattern).encode(), fix=True, unsafe_fixes=True)
    [finding] = result.findings
    assert pattern.id in finding.pattern_ids
    if finding.tier == "manual":
        # manual: the registry gives no one-to-one rewrite the checker may apply (the stage is a choice)
        assert "manual fix" in result.new_source.decode()
        return
    shape = finding.fix.shape
    if shape is not None and (shape.endswith("/stage-hooks") or shape in COUNTED.values()):
        # a stage-less epoch hook: called from every stage hook a 1.x release called it beside, the registry's
        # new signature (the training stage's) among them; a renamed training_epoch_end beside the two hooks that
        # count the epoch's batches
        assert pattern.new_signature in _signatures(result.new_source)
        return
    assert _signature(result.new_source) == pattern.new_signature


def test_most_patterns_have_a_safe_rewrite():
    tiers = {p.id: check_source(_class_with(p).encode()).findings[0].tier for p in registry.PATTERNS}
    # renaming a hook Lightning stopped calling makes its code run again: never safe; proven where a matrix row
    # proves the rename, opt-in otherwise
    for pid in ("callback-on-batch-end", "callback-on-batch-start"):
        assert tiers[pid] == (PROVEN if f"{pid}/rename" in proven.shapes() else UNSAFE), pid
    # the stage-less epoch hooks: called from the stage hooks, proven where a matrix row proves the shape
    epoch = ["callback-on-epoch-end", "callback-on-epoch-start", "module-on-epoch-end", "module-on-epoch-start"]
    for pid in epoch:
        assert tiers[pid] == (PROVEN if f"{pid}/stage-hooks" in proven.shapes() else UNSAFE), pid
    assert [pid for pid, tier in tiers.items() if tier == "manual"] == []
