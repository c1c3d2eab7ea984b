"""Shapes met in real repositories (the hand-labelled corpus, ``data/corpus/labels.toml``), each written here in
our own words as an input and what the checker must make of it."""

from __future__ import annotations

import textwrap

import pytest

from lightning_migrate.checker import check_source

from ._util import codes, fix

# -- parameters with a default: Lightning calls the hook without them, so the hook works as it is ----------------

DEFAULTED = {
    "module epoch end, unused=None": """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def on_validation_epoch_end(self, unused=None):
                self.log("v", 1.0)
        """,
    "callback epoch end, keyword default": """
        from pytorch_lightning import Callback

        class C(Callback):
            def on_train_epoch_end(self, trainer, pl_module, log_dict=None):
                print(log_dict)
        """,
    "callback epoch end, keyword-only default": """
        from pytorch_lightning import Callback

        class C(Callback):
            def on_test_epoch_end(self, trainer, pl_module, *, verbose=False):
                pass
        """,
    "module batch start, unused=0": """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def on_train_batch_start(self, batch, batch_idx, unused=0):
                return None
        """,
    "callback batch end, dataloader_idx=0": """
        import pytorch_lightning as pl

        class C(pl.Callback):
            def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
                pass
        """,
}


@pytest.mark.parametrize("source", DEFAULTED.values(), ids=DEFAULTED.keys())
def test_a_parameter_with_a_default_is_not_a_finding(source):
    assert codes(source) == []
    assert fix(source) == textwrap.dedent(source)


def test_only_the_parameter_without_a_default_is_dropped():
    source = """
    from pytorch_lightning import Callback

    class C(Callback):
        def on_train_epoch_end(self, trainer, pl_module, outputs, unused=None):
            pass
    """
    assert [code for code, _, _ in codes(source)] == ["LM002"]
    assert "def on_train_epoch_end(self, trainer, pl_module, unused=None):" in fix(source)
