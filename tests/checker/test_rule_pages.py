"""The rule pages' build step: each rule's example goes through the command, and a drifted example fails."""

from __future__ import annotations

import pytest
from guide import checker_rules  # the Sphinx extension, from docs/_ext/guide
from sphinx.errors import ExtensionError

from lightning_migrate.checker import RULES


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_example_runs_through_the_command(code):
    rule = RULES[code]
    outputs = checker_rules.run_example(code, rule.example, rule.fixable, rule.example_unsafe)
    assert "example.py:" in outputs["check"] and f" {code} " in outputs["check"]
    assert outputs["check"].endswith("$ echo $?\n1")
    assert "--- a/example.py\n+++ b/example.py" in outputs["diff"]


def test_an_example_the_rule_does_not_flag_fails_the_build():
    clean = (
        "import lightning.pytorch as pl\n\n\nclass M(pl.LightningModule):\n"
        "    def on_train_epoch_end(self):\n        pass\n"
    )
    with pytest.raises(ExtensionError, match="LM001: its example is not flagged"):
        checker_rules.run_example("LM001", clean)


def test_an_example_that_fix_cannot_clean_fails_the_build():
    manual = (
        "import lightning.pytorch as pl\n\n\nclass M(pl.LightningModule):\n"
        "    def training_epoch_end(self, outputs, *args):\n        print(outputs)\n"
    )
    with pytest.raises(ExtensionError, match="still has findings after --fix"):
        checker_rules.run_example("LM001", manual)
