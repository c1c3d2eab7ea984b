"""Input / expected-output pairs per rule, look-alikes that must stay untouched, and idempotence of ``--fix``."""

from __future__ import annotations

import textwrap

import pytest

from lightning_migrate import hook_names, registry
from lightning_migrate.checker import RULES, check_source, docs_url

from ._util import codes, fix

URL = docs_url() + "checker/rules/"
#: the Lightning release the recorded hook names come from (LM007's marker names it)
VERSION = hook_names.load()["lightning"]["version"]
MISSPELT_MARKER = (
    f"# lightning-migrate: LM007 manual fix, not a hook of Lightning {VERSION}: did you mean on_predict_epoch_end: "
    f"{URL}LM007.html"
)

#: expected markers too long for one line of this file (each is one comment line of the fixed source)
RESHAPED = (
    "# lightning-migrate: LM001 manual fix, the body reads outputs; no caching rewrite: "
    "`test_step_end` reshapes each step's output, and the rewrite caches what the step returns: "
    f"{URL}LM001.html"
)
UNRECORDED_ORDER = (
    "# lightning-migrate: LM001 manual fix, merge into the existing on_test_epoch_end: 1.x's order of the two hooks "
    f"is not recorded for this stage: {URL}LM001.html"
)
#: LM005's marker on a step-end hook whose class does not define the step itself (``{}``: the step)
NOT_OWN_STEP = (
    "# lightning-migrate: LM005 manual fix, move this work into the step or the batch-end hook (the class does not "
    f"define `{{}}` itself): {URL}LM005.html"
)
NOT_OWN_VALIDATION_STEP, NOT_OWN_TEST_STEP = NOT_OWN_STEP.format("validation_step"), NOT_OWN_STEP.format("test_step")
NO_RELEASE = (
    "# lightning-migrate: LM002 manual fix, the body reads outputs; no caching rewrite: no release "
    f"passed it: {URL}LM002.html"
)
ASYNC_MARKER = (
    f"# lightning-migrate: LM008 manual fix, `async def`: a hook written as a coroutine function: {URL}LM008.html"
)

# (name, source, expected after --fix, expected codes)
PAIRS = [
    (
        "LM001 safe: outputs unused, renamed and dropped",
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def validation_epoch_end(self, outputs):  # keep me
                self.log("x", 1.0)
        """,
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def on_validation_epoch_end(self):  # keep me
                self.log("x", 1.0)
        """,
        ["LM001"],
    ),
    (
        "LM001 manual: outputs read, and a step-end hook reshapes them: one marker saying so",
        """
        from pytorch_lightning import LightningModule as Base

        class M(Base):
            @staticmethod
            def helper():
                return 1

            def test_epoch_end(self, outputs):
                self.mean = sum(outputs) / len(outputs)

            def test_step_end(self, out):
                return out.mean()
        """,
        f"""
        from pytorch_lightning import LightningModule as Base

        class M(Base):
            @staticmethod
            def helper():
                return 1

            {RESHAPED}
            def test_epoch_end(self, outputs):
                self.mean = sum(outputs) / len(outputs)

            {NOT_OWN_TEST_STEP}
            def test_step_end(self, out):
                return out.mean()
        """,
        ["LM001", "LM005"],
    ),
    (
        "LM001 proven: plain --fix applies the caching rewrite of a shape the scenario matrix proves",
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def validation_epoch_end(self, outputs):
                self.n = len(outputs)
        """,
        """
        from collections import defaultdict

        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.validation_step_outputs = defaultdict(list)  # dataloader_idx -> what its batches returned

            def on_validation_epoch_start(self):
                self.validation_step_outputs.clear()  # nothing left over from a run that stopped half-way

            def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
                if outputs is not None:  # as in the old outputs: no None
                    self.validation_step_outputs[dataloader_idx].append(outputs)

            def on_validation_epoch_end(self):
                # one list per dataloader, as in the old outputs
                outputs = [self.validation_step_outputs[idx] for idx in range(len(self.trainer.num_val_batches))]
                if len(outputs) == 1:
                    outputs = outputs[0]
                self.validation_step_outputs.clear()
                self.n = len(outputs)
        """,
        ["LM001"],
    ),
    (
        "LM001 proven: the class already defines the new hook, the old body goes at its head",
        """
        import lightning as L

        class M(L.LightningModule):
            def on_train_epoch_end(self):
                self.log("n", float(self.n))

            def training_epoch_end(self, outputs):
                self.n = 1
        """,
        """
        import lightning as L

        class M(L.LightningModule):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.train_batches_this_epoch = 0  # the batches trained this epoch, counted in on_train_batch_end

            def on_train_epoch_start(self):
                self.train_batches_this_epoch = 0

            def on_train_batch_end(self, outputs, batch, batch_idx):
                self.train_batches_this_epoch += 1

            def on_train_epoch_end(self):
                if self.train_batches_this_epoch:  # a batch was trained this epoch
                    self.n = 1
                self.log("n", float(self.n))
        """,
        ["LM001"],
    ),
    (
        "LM001 manual: an evaluation stage's hook beside the old one, whose order no release recorded",
        """
        import lightning as L

        class M(L.LightningModule):
            def on_test_epoch_end(self):
                pass

            def test_epoch_end(self, outputs):
                pass
        """,
        f"""
        import lightning as L

        class M(L.LightningModule):
            def on_test_epoch_end(self):
                pass

            {UNRECORDED_ORDER}
            def test_epoch_end(self, outputs):
                pass
        """,
        ["LM001"],
    ),
    (
        "LM002 safe: module outputs unused, trailing comma kept",
        """
        import pytorch_lightning as pl

        class M(pl.LightningModule):
            def on_train_epoch_end(
                self,
                outputs,
            ):
                print("done")
        """,
        """
        import pytorch_lightning as pl

        class M(pl.LightningModule):
            def on_train_epoch_end(
                self,
            ):
                print("done")
        """,
        ["LM002"],
    ),
    (
        "LM002 manual: a callback reads a parameter no release passed",
        """
        from lightning.pytorch import Callback

        class C(Callback):
            def on_validation_epoch_end(self, trainer, pl_module, outputs):
                self.n = len(outputs)
        """,
        f"""
        from lightning.pytorch import Callback

        class C(Callback):
            {NO_RELEASE}
            def on_validation_epoch_end(self, trainer, pl_module, outputs):
                self.n = len(outputs)
        """,
        ["LM002"],
    ),
    (
        "LM003 safe: dataloader_idx dropped from a module hook",
        """
        from lightning.pytorch.core import LightningModule

        class M(LightningModule):
            def on_train_batch_start(self, batch, batch_idx, dataloader_idx):
                return None
        """,
        """
        from lightning.pytorch.core import LightningModule

        class M(LightningModule):
            def on_train_batch_start(self, batch, batch_idx):
                return None
        """,
        ["LM003"],
    ),
    (
        "LM003 safe: the 1.5 `unused` parameter dropped from a callback",
        """
        import pytorch_lightning as pl

        class C(pl.callbacks.Callback):
            def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, unused):
                pass
        """,
        """
        import pytorch_lightning as pl

        class C(pl.callbacks.Callback):
            def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
                pass
        """,
        ["LM003"],
    ),
    (
        "LM004 safe: a required dataloader_idx gets a default, annotation kept",
        """
        from lightning.pytorch.callbacks import ModelCheckpoint

        class C(ModelCheckpoint):
            def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx: int):
                pass
        """,
        """
        from lightning.pytorch.callbacks import ModelCheckpoint

        class C(ModelCheckpoint):
            def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx: int = 0):
                pass
        """,
        ["LM004"],
    ),
    (
        "LM005 safe: a pass-through training_step_end removed",
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                return batch

            def training_step_end(self, out):
                return out
        """,
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                return batch
        """,
        ["LM005"],
    ),
    (
        "LM005 safe: a step_end that hands its input on to Lightning's hook is removed (1.x kept the step's output)",
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                return batch

            def training_step_end(self, step_output):
                return super().training_step_end(step_output)

            def validation_step_end(self, *args, **kwargs):
                \"\"\"Kept from the DataParallel days.\"\"\"
                return super().validation_step_end(*args, **kwargs)
        """,
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                return batch
        """,
        ["LM005", "LM005"],
    ),
    (
        "LM005 manual: super() of a step_end reaches a base of the project, or gets other arguments",
        """
        import lightning.pytorch as pl

        class Base(pl.LightningModule):
            def validation_step_end(self, out):
                return out.mean()

        class M(Base):
            def validation_step_end(self, out):
                return super().validation_step_end(out)

            def test_step_end(self, out):
                return super().test_step_end(out * 2)
        """,
        f"""
        import lightning.pytorch as pl

        class Base(pl.LightningModule):
            {NOT_OWN_VALIDATION_STEP}
            def validation_step_end(self, out):
                return out.mean()

        class M(Base):
            {NOT_OWN_VALIDATION_STEP}
            def validation_step_end(self, out):
                return super().validation_step_end(out)

            {NOT_OWN_TEST_STEP}
            def test_step_end(self, out):
                return super().test_step_end(out * 2)
        """,
        ["LM005", "LM005", "LM005"],
    ),
    (
        "LM005 manual: a step_end that does work",
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def validation_step_end(self, out):
                return out.mean()
        """,
        f"""
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            {NOT_OWN_VALIDATION_STEP}
            def validation_step_end(self, out):
                return out.mean()
        """,
        ["LM005"],
    ),
    (
        "LM006 proven: a dead callback hook is renamed to the stage hook the last 1.x release ran it beside",
        """
        import lightning

        class C(lightning.pytorch.Callback):
            def on_batch_start(self, trainer, pl_module):
                trainer.x = 1
        """,
        """
        import lightning

        class C(lightning.pytorch.Callback):
            def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
                trainer.x = 1
        """,
        ["LM006"],
    ),
    (
        "LM006 manual: module on_epoch_end beside a stage hook that returns early",
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def on_train_epoch_end(self):
                if self.skip:
                    return

            def on_epoch_end(self):
                self.count += 1
        """,
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def on_train_epoch_end(self):
                if self.skip:
                    return

            # lightning-migrate: LM006 manual fix, never called: use the stage hooks (the class's """
        + f"""`on_train_epoch_end` has a `return` before its end: call `_on_epoch_end` from it by hand): {URL}LM006.html
            def on_epoch_end(self):
                self.count += 1
        """,
        ["LM006"],
    ),
    (
        "LM007 manual: a misspelt hook Lightning never calls, with the nearest real name",
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def predict_epoch_end(self, outputs):
                self.all = outputs
        """,
        f"""
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            {MISSPELT_MARKER}
            def predict_epoch_end(self, outputs):
                self.all = outputs
        """,
        ["LM007"],
    ),
    (
        "LM008 manual: a hook written async def is never awaited, marked and never made to run",
        """
        import lightning.pytorch as pl

        class C(pl.Callback):
            async def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
                await self.flush()
        """,
        f"""
        import lightning.pytorch as pl

        class C(pl.Callback):
            {ASYNC_MARKER}
            async def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
                await self.flush()
        """,
        ["LM008"],
    ),
    (
        "LM009 safe: an import of a function 2.x moved imports it from its new place",
        """
        from pytorch_lightning.loops.utilities import recursive_detach
        """,
        """
        from pytorch_lightning.utilities.memory import recursive_detach
        """,
        ["LM009"],
    ),
]


@pytest.mark.parametrize(("source", "expected", "expected_codes"), [p[1:] for p in PAIRS], ids=[p[0] for p in PAIRS])
def test_pair(source, expected, expected_codes):
    assert [code for code, _, _ in codes(source)] == expected_codes
    assert fix(source) == textwrap.dedent(expected)


@pytest.mark.parametrize("source", [p[1] for p in PAIRS], ids=[p[0] for p in PAIRS])
def test_fix_is_idempotent(source):
    once = fix(source)
    assert fix(once) == once


def test_every_rule_has_a_pair():
    assert {p[3][0] for p in PAIRS} == set(RULES)


def test_rules_cover_every_registry_pattern():
    covered = {pattern_id for rule in RULES.values() for pattern_id in rule.patterns}
    assert covered == set(registry.BY_ID)


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_example_is_flagged_and_fixed_clean(code):
    rule = RULES[code]
    result = check_source(rule.example.encode(), fix=True, unsafe_fixes=rule.example_unsafe)
    assert [f.code for f in result.findings] == [code]
    assert result.findings[0].url == URL + f"{code}.html"
    if rule.fixable:
        assert check_source(result.new_source).findings == []
    else:  # marked once, still reported
        assert result.new_source.decode().count(f"# lightning-migrate: {code} manual fix") == 1
        assert [f.code for f in check_source(result.new_source).findings] == [code]


@pytest.mark.parametrize("code", sorted(RULES))
def test_a_rule_page_shows_its_example_with_unsafe_fixes_only_when_its_fix_is_opt_in(code):
    """The page runs the example with ``--unsafe-fixes`` when ``example_unsafe``: only where plain ``--fix`` would
    leave it a marker (LM006's rename became proven)."""
    rule = RULES[code]
    [finding] = check_source(rule.example.encode()).findings
    assert rule.example_unsafe == (finding.tier == "unsafe"), finding.tier


LOOK_ALIKES = {
    "plain class": """
        class Trainer:
            def training_epoch_end(self, outputs):
                return outputs
        """,
    "torch module": """
        import torch

        class Net(torch.nn.Module):
            def training_step(self, batch, batch_idx):
                return batch

            def training_epoch_end(self, outputs):
                return outputs
        """,
    "datamodule": """
        import lightning.pytorch as pl

        class Data(pl.LightningDataModule):
            def on_epoch_end(self):
                pass
        """,
    "today's hooks": """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def on_train_epoch_end(self):
                pass

            def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
                pass

        class C(pl.Callback):
            def on_predict_epoch_end(self, trainer, pl_module, *args, **kwargs):
                pass

            def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
                pass
        """,
    "a hook-like helper the class calls itself": """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def shared_epoch_end(self, stage):
                self.log(stage, 1.0)

            def on_validation_epoch_end(self):
                self.shared_epoch_end("val")
        """,
    "a callback method of nn.Module's or Lightning's that is real": """
        from lightning.pytorch.callbacks import Callback

        class C(Callback):
            def on_before_optimizer_step(self, trainer, pl_module, optimizer):
                pass
        """,
    "a function, not a method": """
        import lightning.pytorch as pl

        def training_epoch_end(self, outputs):
            return outputs
        """,
}


@pytest.mark.parametrize("source", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_look_alikes_are_not_flagged(source):
    assert codes(source) == []
    assert fix(source) == textwrap.dedent(source)


def test_unresolved_base_with_training_step_is_a_note_never_rewritten():
    source = """
    from somewhere_else import Base

    class M(Base):
        def training_step(self, batch, batch_idx):
            return batch

        def training_epoch_end(self, outputs):
            pass
    """
    assert codes(source) == []  # not by default
    assert codes(source, notes=True) == [("LM001", 8, False)]
    assert fix(source) == textwrap.dedent(source)
    [finding] = check_source(textwrap.dedent(source).encode(), notes=True).findings
    assert finding.note and finding.fix is None
    assert "note: possible (base class not resolved)" in finding.format("m.py")


def test_unresolved_base_without_training_step_is_not_reported():
    assert codes("from elsewhere import Base\nclass C(Base):\n    def on_epoch_end(self):\n        pass\n") == []


def test_local_subclass_chain_in_one_file():
    source = """
    import lightning.pytorch as pl

    class Base(pl.LightningModule):
        pass

    class Middle(Base):
        pass

    class M(Middle):
        def test_epoch_end(self, outputs):
            pass
    """
    assert codes(source) == [("LM001", 11, True)]
