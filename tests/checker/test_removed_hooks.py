"""Hooks a recorded 1.x release had and the installed release lacks (``on_pretrain_routine_start``): the checker's
copy of them follows the records, LM007 reports a method of that name, and the installed Lightning never calls it."""

from __future__ import annotations

import json

import pytest

from lightning_migrate.checker.core import rules_for
from lightning_migrate.checker.rules import lm007_unknown_hooks
from migration_guide import removed_hooks

from ._util import codes

CALLBACK_FILE = """\
import lightning.pytorch as pl


class SetupCallback(pl.Callback):
    def on_pretrain_routine_start(self, trainer, pl_module):
        print("make the log folders")


class Plain:
    def on_pretrain_routine_start(self):
        pass
"""


def test_the_checkers_copy_is_the_one_the_records_give():
    shipped = json.loads(removed_hooks.OUTPUT.read_text(encoding="utf-8"))
    assert shipped == removed_hooks.derive(), (
        "run `python -m migration_guide.removed_hooks --output src/lightning_migrate/data/removed_hooks.json`"
    )
    assert "on_pretrain_routine_start" in shipped["Callback"] and "on_train_dataloader" in shipped["LightningModule"]


def test_a_removed_hook_of_a_callback_is_reported_and_a_plain_class_is_not():
    assert codes(CALLBACK_FILE) == [("LM007", 5, True)]


def test_the_message_names_the_releases_that_had_it_and_no_guess():
    from lightning_migrate.checker import check_source

    source = "import lightning.pytorch as pl\n\n\nclass Lit(pl.LightningModule):\n"
    source += "    def on_train_dataloader(self):\n        pass\n"

    [finding] = check_source(source.encode()).findings
    had = " and ".join(lm007_unknown_hooks.removed()["LightningModule"]["on_train_dataloader"])
    assert f"it is a hook of the recorded {had}" in finding.message and "did you mean" not in finding.message


def test_a_name_another_rule_lists_stays_with_that_rule():
    assert [rule.code for rule in rules_for("on_epoch_start", "Callback")] == ["LM006"]


def test_the_installed_lightning_never_calls_them():
    """A module and a callback defining every such name that no other rule lists: a fit, a validate, a test and a
    predict call none of them."""
    # the tests session installs Lightning (requirements.txt), so this runs in CI; a checker-only environment
    # without Lightning can still run the rest of the file
    pl = pytest.importorskip("lightning.pytorch")
    from lightning.pytorch.demos.boring_classes import BoringModel

    names = {
        kind: [name for name in names if rules_for(name, kind) == rules_for("on_pretrain_routine_start", kind)]
        for kind, names in lm007_unknown_hooks.removed().items()
        if kind in ("LightningModule", "Callback")
    }
    assert len(names["LightningModule"]) >= 5 and len(names["Callback"]) >= 5, names
    calls: list[str] = []

    def recorder(name):
        return lambda self, *args, **kwargs: calls.append(name)

    module = type("Module", (BoringModel,), {n: recorder(n) for n in names["LightningModule"]})()
    callback = type("RemovedHooks", (pl.Callback,), {n: recorder(n) for n in names["Callback"]})()
    trainer = pl.Trainer(
        max_epochs=1, limit_train_batches=2, limit_val_batches=1, limit_test_batches=1, limit_predict_batches=1,
        logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        callbacks=[callback],
    )  # fmt: skip
    trainer.fit(module)
    trainer.validate(module)
    trainer.test(module)
    trainer.predict(module)
    assert trainer.global_step == 2 and calls == [], calls


def test_a_mixin_whose_only_old_hook_is_a_removed_one_is_checked_as_its_subclass():
    source = (
        "import lightning.pytorch as pl\n\n\nclass Mixin:\n    def on_pretrain_routine_start(self):\n        pass\n\n\n"
        "class M(Mixin, pl.LightningModule):\n    pass\n"
    )
    assert codes(source) == [("LM007", 5, True)]


def test_a_removed_on_method_of_another_lightning_class_is_recorded():
    """1.4's ``ModelIO.on_hpc_save``: a module's ``on_*`` method from a class other than the hook classes."""
    assert "on_hpc_save" in lm007_unknown_hooks.removed()["LightningModule"]


def test_a_removed_hook_bound_in_the_class_body_is_reported():
    source = (
        "import lightning.pytorch as pl\n\n\ndef log_start(trainer):\n    print(trainer)\n\n\n"
        "class CB(pl.Callback):\n    on_init_start = log_start\n"
    )
    assert codes(source) == [("LM007", 9, True)]
