"""The recorded hook names (``src/lightning_migrate/data/hook_names.json``) are those of the installed Lightning."""

from __future__ import annotations

import importlib.metadata

from lightning_migrate import hook_names


def test_the_record_matches_the_installed_lightning():
    assert hook_names.load() == hook_names.record(), "run: python -m lightning_migrate.hook_names"


def test_the_record_names_the_hooks_the_checker_needs():
    recorded = hook_names.load()
    assert recorded["lightning"]["version"] == importlib.metadata.version(recorded["lightning"]["distribution"])
    module, callback = recorded["LightningModule"], recorded["Callback"]
    assert {"on_train_epoch_end", "on_predict_epoch_end", "training_step"} <= set(module["hooks"])
    assert "training_epoch_end" not in module["names"]  # removed in 2.0
    assert "on_train_epoch_end" in callback["hooks"] and "on_epoch_end" not in callback["names"]
    assert {"eval", "forward", "state_dict"} <= set(module["names"])  # nn.Module's own names count as real
