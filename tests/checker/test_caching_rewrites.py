"""The opt-in caching rewrites (``--unsafe-fixes``): input and expected output pairs, refusals whose marker says
why, and look-alikes left alone. What the rewritten code computes is checked by running it:
``test_rewrite_equivalence.py``."""

from __future__ import annotations

import ast
import textwrap

import pytest

from lightning_migrate.checker import RewriteError, check_source, proven, rewrite_source

from ._util import fix, fix_exact


@pytest.fixture
def unproven(monkeypatch):
    """No shape proven by the scenario matrix: every caching rewrite is of the opt-in (``unsafe``) tier, as a shape
    no row runs is."""
    monkeypatch.setattr(proven, "shapes", lambda: frozenset())


PAIRS = [
    (
        "validation: the class's own step caches before each return but None; __init__ with super(); a decorated hook, "
        "docstring, early return",
        '''\
import lightning.pytorch as pl
import torch


class LitModel(pl.LightningModule):
    def __init__(self, lr=0.1):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, 1)

    def validation_step(self, batch, batch_idx):
        loss = self.layer(batch).mean()
        if batch_idx == 0:
            return None
        return {"val_loss": loss}

    @torch.no_grad()
    def validation_epoch_end(self, outs):
        """Average the batches."""
        if not outs:
            return
        self.log("val_loss", torch.stack([o["val_loss"] for o in outs]).mean())
''',
        '''\
from collections import defaultdict

import lightning.pytorch as pl
import torch


class LitModel(pl.LightningModule):
    def __init__(self, lr=0.1):
        super().__init__()
        self.validation_step_outputs = defaultdict(list)  # dataloader_idx -> what its batches returned
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, 1)

    def validation_step(self, batch, batch_idx):
        loss = self.layer(batch).mean()
        if batch_idx == 0:
            return None
        output = {"val_loss": loss}
        self.validation_step_outputs[0].append(output)
        return output

    def on_validation_epoch_start(self):
        self.validation_step_outputs.clear()  # nothing left over from a run that stopped half-way

    @torch.no_grad()
    def on_validation_epoch_end(self):
        """Average the batches."""
        # one list per dataloader, as in the old outputs
        outs = [self.validation_step_outputs[idx] for idx in range(len(self.trainer.num_val_batches))]
        if len(outs) == 1:
            outs = outs[0]
        self.validation_step_outputs.clear()
        if not outs:
            return
        self.log("val_loss", torch.stack([o["val_loss"] for o in outs]).mean())
''',
    ),
    (
        "test: the class's own step with dataloader_idx appends to its dataloader's list",
        '''\
"""A module with several test dataloaders and an on_test_batch_end of its own."""
from collections import defaultdict

import pytorch_lightning as pl


class LitModel(pl.LightningModule):
    def test_step(self, batch, batch_idx, dataloader_idx=0):
        return batch.sum()

    def on_test_batch_end(self, out, batch, batch_idx, loader_idx=0):
        self.last = out

    def test_epoch_end(self, outputs):
        for i, per_loader in enumerate(outputs):
            self.log(f"test_{i}", sum(per_loader))
''',
        '''\
"""A module with several test dataloaders and an on_test_batch_end of its own."""
from collections import defaultdict

import pytorch_lightning as pl


class LitModel(pl.LightningModule):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.test_step_outputs = defaultdict(list)  # dataloader_idx -> what its batches returned

    def test_step(self, batch, batch_idx, dataloader_idx=0):
        output = batch.sum()
        if output is not None:  # as in the old outputs: no None
            self.test_step_outputs[dataloader_idx].append(output)
        return output

    def on_test_batch_end(self, out, batch, batch_idx, loader_idx=0):
        self.last = out

    def on_test_epoch_start(self):
        self.test_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def on_test_epoch_end(self):
        # one list per dataloader, as in the old outputs
        outputs = [self.test_step_outputs[idx] for idx in range(len(self.trainer.num_test_batches))]
        if len(outputs) == 1:
            outputs = outputs[0]
        self.test_step_outputs.clear()
        for i, per_loader in enumerate(outputs):
            self.log(f"test_{i}", sum(per_loader))
''',
    ),
    (
        "several test dataloaders, the step inherited from a base of the project: the class's own batch-end hook "
        "caches, its parameter names kept",
        '''\
"""A module with several test dataloaders and an on_test_batch_end of its own."""
from collections import defaultdict

import pytorch_lightning as pl


class Base(pl.LightningModule):
    def test_step(self, batch, batch_idx, dataloader_idx=0):
        return batch.sum()


class LitModel(Base):
    def on_test_batch_end(self, out, batch, batch_idx, loader_idx=0):
        self.last = out

    def test_epoch_end(self, outputs):
        for i, per_loader in enumerate(outputs):
            self.log(f"test_{i}", sum(per_loader))
''',
        '''\
"""A module with several test dataloaders and an on_test_batch_end of its own."""
from collections import defaultdict

import pytorch_lightning as pl


class Base(pl.LightningModule):
    def test_step(self, batch, batch_idx, dataloader_idx=0):
        return batch.sum()


class LitModel(Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.test_step_outputs = defaultdict(list)  # dataloader_idx -> what its batches returned

    def on_test_batch_end(self, out, batch, batch_idx, loader_idx=0):
        if out is not None:  # as in the old outputs: no None
            self.test_step_outputs[loader_idx].append(out)
        self.last = out

    def on_test_epoch_start(self):
        self.test_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def on_test_epoch_end(self):
        # one list per dataloader, as in the old outputs
        outputs = [self.test_step_outputs[idx] for idx in range(len(self.trainer.num_test_batches))]
        if len(outputs) == 1:
            outputs = outputs[0]
        self.test_step_outputs.clear()
        for i, per_loader in enumerate(outputs):
            self.log(f"test_{i}", sum(per_loader))
''',
    ),
    (
        "training: no __init__, a step that may return None, another key holding the graph",
        """\
import torch
from pytorch_lightning import LightningModule


class LitModel(LightningModule):
    def training_step(self, batch, batch_idx):
        loss = self.layer(batch).sum()
        if not torch.isfinite(loss):
            return None  # skip this batch
        return {"loss": loss, "preds": self.layer(batch)}

    def training_epoch_end(self, outputs):
        self.log("train_loss_epoch", torch.stack([o["loss"] for o in outputs]).mean())
""",
        """\
import torch
from pytorch_lightning import LightningModule
from pytorch_lightning.utilities.memory import recursive_detach


class LitModel(LightningModule):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.training_step_outputs = []  # what each step returned, until the epoch ends

    def training_step(self, batch, batch_idx):
        self.training_step_outputs.append(None)  # this step's entry, None until it returns a value
        loss = self.layer(batch).sum()
        if not torch.isfinite(loss):
            return None  # skip this batch
        output = {"loss": loss, "preds": self.layer(batch)}
        self.training_step_outputs[-1] = recursive_detach(output)
        return output

    def on_train_epoch_start(self):
        self.training_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def on_train_epoch_end(self):
        if not self.training_step_outputs:  # no step ran this epoch
            return
        outputs = [out for out in self.training_step_outputs if out is not None]
        if self.automatic_optimization:  # the loss divided by accumulate_grad_batches, as in the old outputs
            outputs = [{**out, "loss": out["loss"] / self.trainer.accumulate_grad_batches} for out in outputs]
        self.training_step_outputs.clear()
        self.log("train_loss_epoch", torch.stack([o["loss"] for o in outputs]).mean())
""",
    ),
    (
        "a callback, with a module of the project defining training_epoch_end (1.4 passed the callback outputs)",
        """\
import pytorch_lightning as pl


class LossHistory(pl.Callback):
    def __init__(self):
        super().__init__()
        self.history = []

    def on_train_epoch_end(self, trainer, pl_module, outputs):
        self.history.append(float(sum(o["loss"] for o in outputs)))


class Model(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return batch.sum()

    def training_epoch_end(self, outputs):
        self.n = len(outputs)
""",
        """\
import pytorch_lightning as pl
from pytorch_lightning.utilities.memory import recursive_detach


class LossHistory(pl.Callback):
    def __init__(self):
        super().__init__()
        self.training_step_outputs = []  # what each batch returned, until the epoch ends
        self.history = []

    def on_train_epoch_start(self, trainer, pl_module):
        self.training_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if outputs:  # as in the old outputs: no None
            cached = recursive_detach(outputs)
            if "loss" in cached:  # the loss whole, as in the old outputs
                cached["loss"] = cached["loss"] * trainer.accumulate_grad_batches
            self.training_step_outputs.append(cached)

    def on_train_epoch_end(self, trainer, pl_module):
        outputs = list(self.training_step_outputs)
        self.training_step_outputs.clear()
        self.history.append(float(sum(o["loss"] for o in outputs)))


class Model(pl.LightningModule):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.training_step_outputs = []  # what each step returned, until the epoch ends

    def training_step(self, batch, batch_idx):
        self.training_step_outputs.append(None)  # this step's entry, None until it returns a value
        output = batch.sum()
        if output is not None:  # as in the old outputs: no None
            entry = output if isinstance(output, dict) else {"loss": output}  # as in the old outputs: a dict
            self.training_step_outputs[-1] = recursive_detach(entry)
        return output

    def on_train_epoch_start(self):
        self.training_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def on_train_epoch_end(self):
        if not self.training_step_outputs:  # no step ran this epoch
            return
        outputs = [out for out in self.training_step_outputs if out]  # as in the old outputs: no empty ones
        if self.automatic_optimization:  # the loss divided by accumulate_grad_batches, as in the old outputs
            outputs = [{**out, "loss": out["loss"] / self.trainer.accumulate_grad_batches} for out in outputs]
        self.training_step_outputs.clear()
        self.n = len(outputs)
""",
    ),
    (
        "training: several returns (a bare loss, an expression), an early bare return",
        """\
import pytorch_lightning as pl
import torch


class TwoLosses(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        if batch is None:
            return
        if batch_idx % 2:
            loss = self.layer(batch).abs().mean()
            return loss
        return self.layer(batch).pow(2).mean()

    def training_epoch_end(self, outputs):
        self.log("mean", torch.stack([o["loss"] for o in outputs]).mean())
""",
        """\
import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities.memory import recursive_detach


class TwoLosses(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.training_step_outputs = []  # what each step returned, until the epoch ends
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        self.training_step_outputs.append(None)  # this step's entry, None until it returns a value
        if batch is None:
            return
        if batch_idx % 2:
            loss = self.layer(batch).abs().mean()
            if loss is not None:  # as in the old outputs: no None
                entry = loss if isinstance(loss, dict) else {"loss": loss}  # as in the old outputs: a dict
                self.training_step_outputs[-1] = recursive_detach(entry)
            return loss
        output = self.layer(batch).pow(2).mean()
        if output is not None:  # as in the old outputs: no None
            entry = output if isinstance(output, dict) else {"loss": output}  # as in the old outputs: a dict
            self.training_step_outputs[-1] = recursive_detach(entry)
        return output

    def on_train_epoch_start(self):
        self.training_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def on_train_epoch_end(self):
        if not self.training_step_outputs:  # no step ran this epoch
            return
        outputs = [out for out in self.training_step_outputs if out]  # as in the old outputs: no empty ones
        if self.automatic_optimization:  # the loss divided by accumulate_grad_batches, as in the old outputs
            outputs = [{**out, "loss": out["loss"] / self.trainer.accumulate_grad_batches} for out in outputs]
        self.training_step_outputs.clear()
        self.log("mean", torch.stack([o["loss"] for o in outputs]).mean())
""",
    ),
    (
        "training, 1.4's on_train_epoch_end(self, outputs): the loss whole; names the step uses are not reused",
        """\
import pytorch_lightning as pl


class Whole(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        output = self.layer(batch).sum()
        out = output * 2
        return {"loss": out}

    def on_train_epoch_end(self, outputs):
        self.total = sum(o["loss"] for o in outputs)
""",
        """\
import pytorch_lightning as pl
from pytorch_lightning.utilities.memory import recursive_detach


class Whole(pl.LightningModule):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.training_step_outputs = []  # what each step returned, until the epoch ends

    def training_step(self, batch, batch_idx):
        self.training_step_outputs.append(None)  # this step's entry, None until it returns a value
        output = self.layer(batch).sum()
        out = output * 2
        step_output = {"loss": out}
        self.training_step_outputs[-1] = recursive_detach(step_output)
        return step_output

    def on_train_epoch_start(self):
        self.training_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def on_train_epoch_end(self):
        outputs = [out for out in self.training_step_outputs if out is not None]  # the loss whole, as in the old list
        self.training_step_outputs.clear()
        self.total = sum(o["loss"] for o in outputs)
""",
    ),
    (
        "training, the step inherited from a Lightning class: a step of the class's own calls it and caches",
        """\
import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class TrainingEpochMean(BoringModel):
    def training_epoch_end(self, outputs):
        self.log("train_loss_epoch_mean", torch.stack([x["loss"] for x in outputs]).mean())
""",
        """\
import torch
from lightning.pytorch.demos.boring_classes import BoringModel
from lightning.pytorch.utilities.memory import recursive_detach


class TrainingEpochMean(BoringModel):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.training_step_outputs = []  # what each step returned, until the epoch ends

    def on_train_epoch_start(self):
        self.training_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def training_step(self, *args, **kwargs):
        self.training_step_outputs.append(None)  # this step's entry, None until it returns a value
        output = super().training_step(*args, **kwargs)
        if output is not None:  # as in the old outputs: no None
            entry = output if isinstance(output, dict) else {"loss": output}  # as in the old outputs: a dict
            self.training_step_outputs[-1] = recursive_detach(entry)
        return output

    def on_train_epoch_end(self):
        if not self.training_step_outputs:  # no step ran this epoch
            return
        outputs = [out for out in self.training_step_outputs if out]  # as in the old outputs: no empty ones
        if self.automatic_optimization:  # the loss divided by accumulate_grad_batches, as in the old outputs
            outputs = [{**out, "loss": out["loss"] / self.trainer.accumulate_grad_batches} for out in outputs]
        self.training_step_outputs.clear()
        self.log("train_loss_epoch_mean", torch.stack([x["loss"] for x in outputs]).mean())
""",
    ),
    (
        "predict: one list per dataloader always, every prediction kept",
        """\
import lightning.pytorch as pl


class Predictor(pl.LightningModule):
    def on_predict_epoch_end(self, results):
        self.all = [p for loader in results for p in loader]
""",
        """\
from collections import defaultdict

import lightning.pytorch as pl


class Predictor(pl.LightningModule):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.predict_step_outputs = defaultdict(list)  # dataloader_idx -> what its batches returned

    def on_predict_epoch_start(self):
        self.predict_step_outputs.clear()  # nothing left over from a run that stopped half-way

    def on_predict_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        self.predict_step_outputs[dataloader_idx].append(outputs)  # as in the old outputs: None included

    def on_predict_epoch_end(self):
        # one list per dataloader, as in the old outputs
        results = [self.predict_step_outputs[idx] for idx in range(len(self.trainer.num_predict_batches))]
        self.predict_step_outputs.clear()
        self.all = [p for loader in results for p in loader]
""",
    ),
]


@pytest.mark.parametrize(("source", "expected"), [p[1:] for p in PAIRS], ids=[p[0] for p in PAIRS])
def test_pair(source, expected):
    assert rewrite_source(source) == expected
    assert fix(source, unsafe_fixes=True) == expected
    ast.parse(expected)  # every expected output is Python


@pytest.mark.parametrize(("source", "expected"), [p[1:] for p in PAIRS], ids=[p[0] for p in PAIRS])
def test_the_rewrite_is_done_once(source, expected):
    assert rewrite_source(expected) == expected
    assert check_source(expected.encode()).findings == []


@pytest.mark.parametrize("source", [p[1] for p in PAIRS], ids=[p[0] for p in PAIRS])
def test_without_the_option_a_marker_says_what_the_rewrite_would_risk(source, unproven):
    fixed = fix(source)
    markers = [line.strip() for line in fixed.splitlines() if "# lightning-migrate:" in line]
    assert markers and all(" unsafe fix, " in m and "`--unsafe-fixes` applies it" in m for m in markers), markers
    assert fix(fixed) == fixed


MODULE = """\
import lightning.pytorch as pl


class M(pl.LightningModule):
    def validation_step(self, batch, batch_idx):
        return batch.sum()

    def validation_epoch_end(self, outputs):
        self.total = sum(outputs)
"""

TRAINING = """\
import lightning.pytorch as pl
import torch


class T(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return {"loss": batch.sum()}

    def training_epoch_end(self, outputs):
        self.total = sum(o["loss"] for o in outputs)
"""

REFUSED = {
    "a step-end hook reshapes each output": (
        MODULE + "\n    def validation_step_end(self, out):\n        return out * 2\n",
        "`validation_step_end` reshapes each step's output, and the rewrite caches what the step returns",
    ),
    "the cache's name is taken": (
        MODULE.replace("return batch.sum()", "self.validation_step_outputs = None\n        return batch.sum()"),
        "the class already uses `self.validation_step_outputs`",
    ),
    "several optimizers": (
        MODULE.replace("validation", "training").replace("batch_idx):", "batch_idx, optimizer_idx):", 1),
        "`training_step` takes optimizer_idx beyond `batch, batch_idx` (several optimizers, or truncated "
        "back-propagation): the rewrite is made for a step of those two",
    ),
    "another method calls training_step": (
        TRAINING.replace(
            "    def training_epoch_end",
            "    def validation_step(self, batch, batch_idx):\n"
            "        return self.training_step(batch, batch_idx)\n\n    def training_epoch_end",
        ),
        "`training_step` is used at line 10 of this file: what it returns there would be cached too",
    ),
    "a return inside try": (
        TRAINING.replace(
            '        return {"loss": batch.sum()}',
            '        try:\n            return {"loss": batch.sum()}\n'
            "        except RuntimeError:\n            return None",
        ),
        "`training_step` returns inside a `try`: the added lines would run under its `except`",
    ),
    "a return on the line of its if": (
        TRAINING.replace(
            '        return {"loss": batch.sum()}', "        if batch_idx: return batch.sum()\n        return None"
        ),
        "`training_step` returns on the line of a compound statement: put the `return` on a line of its own",
    ),
    "a decorated training_step": (
        TRAINING.replace("    def training_step", "    @some_decorator\n    def training_step"),
        "`training_step` is decorated: a decorator may change what it returns",
    ),
    "an optimizer that calls its closure several times": (
        TRAINING + "\n    def configure_optimizers(self):\n        return torch.optim.LBFGS(self.parameters())\n",
        "an optimizer that calls its closure several times a step (LBFGS) runs `training_step` more than once a batch",
    ),
    "an optimizer of the project's own that takes a closure": (
        TRAINING
        + "\n\nclass TwoStep(torch.optim.SGD):\n    def step(self, closure=None):\n        closure()\n"
        + "        closure()\n        return super().step()\n",
        "an optimizer of the project's own calls the closure of its `step` more than once (or in a loop): "
        "`training_step` runs more than once a batch",
    ),
    "a subclass in the same snippet overrides the step (no project around it)": (
        TRAINING + "\n\nclass Sub(T):\n    def training_step(self, batch, batch_idx):\n        return batch.mean()\n",
        "a subclass defines `training_step` of its own, over the rewritten class's",
    ),
    "a training_step that yields": (
        TRAINING.replace('        return {"loss": batch.sum()}', "        yield batch"),
        "`training_step` is a generator",
    ),
    "a name the rewrite imports means something else here": (
        MODULE.replace(
            "def validation_step(self, batch, batch_idx)", "def validation_step(self, batch, batch_idx, i=0)"
        )
        + "\n\ndef defaultdict(x):\n    return x\n",
        "`defaultdict` is another name in this file",
    ),
    "the class already defines the new hook": (
        MODULE + "\n    def on_validation_epoch_end(self):\n        pass\n",
        "merge into the existing on_validation_epoch_end",
    ),
    "a callback whose project has no module that made 1.4 collect outputs": (
        "import pytorch_lightning as pl\n\n\nclass C(pl.Callback):\n"
        "    def on_train_epoch_end(self, trainer, pl_module, outputs):\n        self.n = len(outputs)\n",
        "no LightningModule of this project defines `training_epoch_end` or `on_train_epoch_end(self, outputs)`, and a "
        "callback's caching rewrite is made for a project where one does",
    ),
    "a parameter 1.4 did not pass (only one named outputs)": (
        "import pytorch_lightning as pl\n\n\nclass M(pl.LightningModule):\n"
        "    def on_train_epoch_end(self, outs):\n        self.n = len(outs)\n",
        "its last parameter is `outs`, not `outputs` as in the old signature `on_train_epoch_end(self, outputs)`, the "
        "one signature the caching rewrite is made for",
    ),
}


@pytest.mark.parametrize(("source", "why"), REFUSED.values(), ids=REFUSED.keys())
def test_a_rewrite_that_cannot_be_proven_is_refused_and_the_marker_says_why(source, why):
    fixed = fix(source, unsafe_fixes=True)
    assert why in fixed
    assert "manual fix" in fixed and "_outputs.append" not in fixed
    with pytest.raises(RewriteError, match=r"<string>:\d+: LM00\d cannot be rewritten"):
        rewrite_source(source)


LOOK_ALIKES = {
    "already migrated": """\
import lightning.pytorch as pl


class M(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.validation_step_outputs = []

    def validation_step(self, batch, batch_idx):
        loss = batch.sum()
        self.validation_step_outputs.append(loss)
        return loss

    def on_validation_epoch_end(self):
        self.log("val", sum(self.validation_step_outputs))
        self.validation_step_outputs.clear()
""",
    "training already migrated: the module appends in training_step": """\
import lightning.pytorch as pl
import torch


class M(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.training_step_outputs = []

    def training_step(self, batch, batch_idx):
        loss = batch.sum()
        self.training_step_outputs.append(loss.detach())
        return loss

    def on_train_epoch_end(self):
        self.log("loss", torch.stack(self.training_step_outputs).mean())
        self.training_step_outputs.clear()
""",
    "a plain class with the old names": """\
class Loop:
    def validation_epoch_end(self, outputs):
        return sum(outputs)

    def on_train_epoch_end(self, trainer, pl_module, outputs):
        return outputs
""",
    "a callback hook whose outputs has a default": """\
from pytorch_lightning import Callback


class C(Callback):
    def on_train_epoch_end(self, trainer, pl_module, outputs=None):
        self.seen = outputs
""",
}


@pytest.mark.parametrize("source", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_look_alikes_are_left_alone(source):
    assert rewrite_source(source) == source
    assert fix(source, unsafe_fixes=True) == source


def test_a_hook_parameter_named_like_the_cache_is_not_the_cache():
    source = MODULE.replace("outputs", "validation_step_outputs")
    rewritten = rewrite_source(source)
    assert "validation_step_outputs = [self.validation_step_outputs[idx] for idx in range(" in rewritten


def test_a_call_of_the_hook_in_another_class_does_not_block_the_rewrite():
    source = MODULE + (
        "\n\nclass Other(pl.LightningModule):\n    def test_epoch_end(self, outputs):\n"
        "        self.validation_epoch_end(outputs)\n\n    def validation_epoch_end(self, outputs):\n        pass\n"
    )
    fixed = fix(source, unsafe_fixes=True)
    assert "        self.validation_step_outputs[0].append(output)\n" in fixed  # class M's step caches
    assert "manual fix, `validation_epoch_end` is used at line 14 of this file" in fixed  # class Other's own call


def test_the_rewrite_keeps_the_file_s_newlines_and_encoding():
    source = textwrap.dedent(MODULE).replace("\n", "\r\n").encode()
    result = check_source(source, fix=True, unsafe_fixes=True)
    assert b"\r\n" in result.new_source and b"\n" not in result.new_source.replace(b"\r\n", b"")


MARKED = """\
import lightning.pytorch as pl
import torch


class LitModel(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return batch.sum()

    def training_epoch_end(self, outputs):
        self.log("loss", torch.stack([o["loss"] for o in outputs]).mean())

    def validation_epoch_end(self, outputs):
        self.log("val", torch.stack(outputs).mean())

    def on_epoch_end(self):
        self.log("epochs", 1.0)
"""


def test_an_applied_rewrite_removes_the_marker_an_earlier_fix_left_and_keeps_the_others(unproven):
    """``--fix`` marks the opt-in rewrites it did not apply (and LM006's hook, which has no automatic fix); ``--fix
    --unsafe-fixes`` then applies the rewrites and removes their markers, which said they were not applied, and
    leaves LM006's marker."""
    marked = fix(MARKED)
    assert marked.count("# lightning-migrate: LM001 unsafe fix") == 2
    assert marked.count("# lightning-migrate: LM006") == 1
    rewritten = fix(marked, unsafe_fixes=True)
    assert "# lightning-migrate: LM001" not in rewritten
    assert rewritten.count("# lightning-migrate: LM006") == 1
    assert "def on_train_epoch_end(self):" in rewritten and "def on_validation_epoch_end(self):" in rewritten
    assert rewritten == fix(MARKED, unsafe_fixes=True)  # as if the first --fix had not run


HOOK = """

class Cached(pl.LightningModule):
    def validation_epoch_end(self, outputs):
        self.log("val", torch.stack([o["x"] for o in outputs]).mean())
"""


@pytest.mark.parametrize(
    "head",
    [
        "import lightning.pytorch as pl\nimport torch\n",
        "import os\nimport sys\n\nimport lightning.pytorch as pl\nimport torch\n",
        "import os\nfrom pathlib import Path\n\nimport lightning.pytorch as pl\nimport torch\n",
        "from abc import ABC\nfrom typing import Any\n\nimport lightning.pytorch as pl\nimport torch\n",
        "import lightning.pytorch as pl\nimport torch\nfrom torch import nn\n\nfrom . import data\n",
        "import os\n\nimport lightning.pytorch as pl\nimport torch\nfrom lightning.pytorch import callbacks\n",
        '"""A module."""\n\nfrom __future__ import annotations\n\n# third party\nimport lightning.pytorch as pl\n'
        "import torch\n",
    ],
)
def test_an_added_import_is_where_isort_puts_it(head):
    """The imports a rewrite adds (``from collections import defaultdict``, Lightning's ``recursive_detach``) go
    where isort sorts them, so a project that checks its imports with isort or ruff's ``I`` rules stays clean after
    ``--fix``."""
    import isort

    for hook, added in ((HOOK, "from collections import defaultdict\n"), (TRAINING_HOOK, "import recursive_detach\n")):
        source = head + hook
        assert isort.check_code(source, profile="black")
        fixed = fix(source, unsafe_fixes=True)
        assert added in fixed
        assert isort.check_code(fixed, profile="black", show_diff=True), fixed


TRAINING_HOOK = """

class Trained(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return batch.sum()

    def training_epoch_end(self, outputs):
        self.log("train", torch.stack([o["loss"] for o in outputs]).mean())
"""


def test_a_marker_is_two_lines_and_goes_whole_when_its_fix_is_applied(unproven):
    """A marker is two lines: the rule and the reason, then the link alone on its line; a second ``--fix`` leaves it
    as it is, and ``--unsafe-fixes`` removes both lines."""
    from lightning_migrate.checker.base import MARKER_CONTINUATION, docs_url

    source = PAIRS[0][1]
    marked = fix_exact(source)
    comments = [line.strip() for line in marked.splitlines() if line.strip().startswith("#")]
    comments = [line for line in comments if "lightning-migrate" in line or line.startswith(MARKER_CONTINUATION)]
    assert len(comments) == 2, comments
    assert comments[0].startswith("# lightning-migrate: LM001 unsafe fix, module-side caching in ")
    assert comments[0].endswith("a shape no row of the scenario matrix proves; `--unsafe-fixes` applies it:")
    assert comments[1] == MARKER_CONTINUATION + docs_url() + "checker/rules/LM001.html"
    assert fix_exact(marked) == marked
    rewritten = fix_exact(marked, unsafe_fixes=True)
    assert rewritten == fix_exact(source, unsafe_fixes=True)
    assert "lightning-migrate" not in rewritten and MARKER_CONTINUATION not in rewritten


BOTH_HOOKS = """

class Both(pl.LightningModule):
    def validation_epoch_end(self, outputs):
        self.log("val", torch.stack([o["x"] for o in outputs]).mean())

    def training_step(self, batch, batch_idx):
        return batch.sum()

    def training_epoch_end(self, outputs):
        self.log("train", torch.stack([o["loss"] for o in outputs]).mean())
"""


def test_an_added_import_never_goes_above_what_makes_its_package_importable():
    """A ``sys.path`` set-up before the Lightning import (a vendored copy, a Kaggle dataset) ends an import block:
    ``recursive_detach`` goes after the Lightning import, ``defaultdict`` into the standard library's block, each
    to its own place."""
    head = (
        "import os\nimport sys\n\nimport torch\n\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), 'v'))\n\n"
        "import pytorch_lightning as pl  # noqa: E402\n"
    )
    fixed = fix(head + BOTH_HOOKS, unsafe_fixes=True)
    lines = fixed.splitlines()
    assert lines.index("from collections import defaultdict") < lines.index("import torch")
    assert lines.index("import pytorch_lightning as pl  # noqa: E402") + 1 == lines.index(
        "from pytorch_lightning.utilities.memory import recursive_detach"
    )


def test_a_lightning_imported_in_a_try_gets_no_unconditional_import():
    source = (
        "try:\n    import lightning.pytorch as pl\nexcept ImportError:\n    import pytorch_lightning as pl\n"
        "import torch\n" + TRAINING_HOOK
    )
    fixed = fix(source, unsafe_fixes=True)
    assert "import recursive_detach" not in fixed
    assert "is imported only in a `try` or an `if` here: import `recursive_detach` the same way" in fixed


def test_a_comment_of_the_users_below_a_marker_stays_when_the_marker_goes(unproven):
    marked = fix_exact(PAIRS[0][1])
    lines = marked.splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if "checker/rules/LM001.html" in line)
    lines.insert(last + 1, "    #   TODO(ana): also log the std\n")
    rewritten = fix_exact("".join(lines), unsafe_fixes=True)
    assert "    #   TODO(ana): also log the std\n" in rewritten
    assert "lightning-migrate" not in rewritten and "checker/rules" not in rewritten


def test_a_string_that_names_the_step_does_not_withhold_the_training_rewrite():
    """``"training_step"`` as text (a log group's name, as lightning-bolts' ``TrainingDataMonitor`` has it) calls
    nothing: the rewrite is made. A call of the step by other code withholds it (``REFUSED``)."""
    source = TRAINING + '\n\nGROUP_NAME = "training_step"\n'
    assert "self.training_step_outputs[-1] = recursive_detach(output)" in fix(source)


def test_the_rewritten_step_returns_and_computes_what_it_did():
    """The training rewrite adds lines before each ``return`` of ``training_step``: called alone (no trainer, as a
    unit test of a project calls it) on the same weights and batches, the rewritten step returns what the old one
    returned -- the same tensors, the early ``None`` -- and keeps one entry per call: ``None`` for the call that
    returned ``None``, each other output detached."""
    import torch

    source = next(p[1] for p in PAIRS if p[0].startswith("training: several returns"))
    rewritten = rewrite_source(source)
    assert rewritten != source
    steps = []
    for text in (source, rewritten):
        namespace: dict = {}
        exec(compile(text, "<pair>", "exec"), namespace)  # noqa: S102 - the pair's own module
        torch.manual_seed(0)
        model = namespace["TwoLosses"]()
        batches = [None, torch.randn(3, 4), torch.randn(3, 4)]
        steps.append((model, [model.training_step(batch, i) for i, batch in enumerate(batches)]))
    (_, old), (model, new) = steps
    assert old[0] is None and new[0] is None
    for before, after in zip(old[1:], new[1:], strict=True):
        assert torch.equal(before, after) and after.requires_grad
    first, *entries = model.training_step_outputs
    assert first is None and [entry["loss"].requires_grad for entry in entries] == [False, False]
    assert [float(entry["loss"]) for entry in entries] == [float(v.detach()) for v in new[1:]]


def test_an_optimizer_of_the_project_that_calls_its_closure_once_does_not_withhold_the_rewrite():
    """A LARS-style ``step(self, closure)`` that calls the closure once, as ``torch.optim.SGD`` does: the step runs
    once a batch, and the rewrite is made (as plain ``--fix`` makes a proven one)."""
    source = TRAINING + (
        "\n\nclass Lars(torch.optim.SGD):\n    def step(self, closure=None):\n        loss = None\n"
        "        if closure is not None:\n            loss = closure()\n        super().step()\n        return loss\n"
    )
    fixed = fix(source, unsafe_fixes=True)
    assert "self.training_step_outputs[-1] = recursive_detach(" in fixed and "lightning-migrate:" not in fixed


EVALUATION_CALLED_BY_TEST = """\
import lightning.pytorch as pl


class LitModel(pl.LightningModule):
    def validation_step(self, batch, batch_idx):
        return {"loss": batch.sum()}

    def test_step(self, batch, batch_idx):
        return self.validation_step(batch, batch_idx)

    def validation_epoch_end(self, outputs):
        self.log("val_loss", sum(o["loss"] for o in outputs))
"""


def test_an_evaluation_step_other_code_calls_leaves_the_caching_to_the_batch_end_hook():
    """``test_step`` calling ``validation_step``: a step that cached would fill the validation cache in a test run,
    so the rewrite caches in ``on_validation_batch_end`` (what Lightning hands it is what the step returned), and
    the step stays as written."""
    fixed = fix(EVALUATION_CALLED_BY_TEST, unsafe_fixes=True)
    assert '    def validation_step(self, batch, batch_idx):\n        return {"loss": batch.sum()}\n' in fixed
    assert "def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):" in fixed
    assert "self.validation_step_outputs[dataloader_idx].append(outputs)" in fixed
    alone = EVALUATION_CALLED_BY_TEST.replace(
        "        return self.validation_step(batch, batch_idx)\n", "        pass\n"
    )
    in_step = fix(alone, unsafe_fixes=True)
    assert "on_validation_batch_end" not in in_step
    assert "        self.validation_step_outputs[0].append(output)\n        return output\n" in in_step


def test_the_rewritten_evaluation_step_returns_what_it_did_and_caches_it_by_dataloader():
    """Called alone on the same batches, the rewritten ``test_step`` returns the very objects the old one returned
    and appends each to its dataloader's list, ``None`` left out (what Lightning 1.x left out of ``outputs``)."""
    import torch

    source = """\
import lightning.pytorch as pl


class Per(pl.LightningModule):
    def test_step(self, batch, batch_idx, dataloader_idx=0):
        if batch is None:
            return None
        return batch * 2

    def test_epoch_end(self, outputs):
        self.seen = outputs
"""
    rewritten = rewrite_source(source)
    assert "self.test_step_outputs[dataloader_idx].append(output)" in rewritten
    namespace: dict = {}
    exec(compile(rewritten, "<pair>", "exec"), namespace)  # noqa: S102 - the pair's own module
    model = namespace["Per"]()
    batches = [(torch.ones(2), 0, 0), (None, 1, 0), (torch.zeros(3), 0, 1)]
    returned = [model.test_step(*call) for call in batches]
    assert returned[1] is None and torch.equal(returned[0], torch.full((2,), 2.0))
    assert dict(model.test_step_outputs) == {0: [returned[0]], 1: [returned[2]]}
    assert model.test_step_outputs[0][0] is returned[0]


def _validation_module(step: str, extra: str = "") -> str:
    """A module whose ``validation_step`` is ``step`` (its lines, indented as in the class) and whose
    ``validation_epoch_end`` reads the outputs."""
    return (
        "import pytorch_lightning as pl\n\n\nclass M(pl.LightningModule):\n"
        + step
        + extra
        + "\n    def validation_epoch_end(self, outputs):\n        print(outputs)\n"
    )


@pytest.mark.parametrize(
    "step",
    [
        # with one dataloader Lightning passes no index: the step would append under None
        "    def validation_step(self, batch, batch_idx, dataloader_idx=None):\n        return batch_idx\n",
        "    def validation_step(self, batch, batch_idx, dataloader_idx=0):\n"
        '        dataloader_idx = ["a", "b"][dataloader_idx]\n        return batch_idx\n',
        "    def validation_step(self, batch, batch_idx, dataloader_idx=0):\n"
        "        for dataloader_idx in range(2):\n            pass\n        return batch_idx\n",
    ],
    ids=["index-defaults-to-none", "index-bound-again", "index-a-loop-variable"],
)
def test_a_step_whose_dataloader_index_is_not_the_loaders_caches_in_the_batch_end_hook(step):
    """Found by trying to break the rewrite: the step appended under ``None`` (1.9.5 passed ``[0, 1]``, the rewrite
    ``[]``) or under the name it gave the index. The batch-end hook gets the loader's index from Lightning."""
    source = _validation_module(step)
    fixed = fix(source)  # plain --fix: the batch-end shape is proven
    assert "self.validation_step_outputs[dataloader_idx].append(outputs)" in fixed
    assert step in fixed  # the step as written


def test_a_step_end_that_changes_its_input_in_place_withholds_the_caching_rewrite():
    """Found by trying to break the rewrite: ``step_output["seen"] = True`` in ``validation_step_end`` returned the
    same object, changed; 1.x collected it changed, 2.x never calls the hook. Logging an item of it changes nothing."""
    changed = _validation_module(
        "    def validation_step(self, batch, batch_idx):\n        return {'idx': batch_idx}\n",
        "\n    def validation_step_end(self, step_output):\n        step_output['seen'] = True\n"
        "        return step_output\n",
    )
    [finding] = [f for f in check_source(changed.encode()).findings if f.code == "LM001"]
    assert finding.tier == "manual" and "reshapes each step's output" in finding.fix.description
    logged = changed.replace("step_output['seen'] = True", "self.log('idx', step_output['idx'])")
    [finding] = [f for f in check_source(logged.encode()).findings if f.code == "LM001"]
    assert finding.tier == "proven"
    for call in ("step_output.update(seen=True)", "mark(step_output)", "self.log('i', step_output.pop('idx'))"):
        source = changed.replace("step_output['seen'] = True", call)
        [finding] = [f for f in check_source(source.encode()).findings if f.code == "LM001"]
        assert finding.tier == "manual", call


def test_a_step_defined_twice_caches_in_the_one_the_class_keeps():
    source = _validation_module(
        "    def validation_step(self, batch, batch_idx):\n        return 0\n\n"
        "    def validation_step(self, batch, batch_idx):\n        return batch_idx\n"
    )
    fixed = fix(source)
    first, second = fixed.split("    def validation_step(self, batch, batch_idx):\n")[1:]
    assert first.startswith("        return 0\n")
    assert second.startswith(
        "        if batch_idx is not None:  # as in the old outputs: no None\n"
        "            self.validation_step_outputs[0].append(batch_idx)\n        return batch_idx\n"
    )


@pytest.mark.parametrize(
    "value",
    [
        "(\n            batch_idx,\n            batch_idx + 1,\n        )",
        "(\n            batch_idx\n            + 1\n        )",
        "(  # the index, as an int\n            batch_idx\n        )",
        "(y := batch_idx * 2)",
        "(batch_idx * k for k in range(2))",
        "(batch_idx + 1)",
    ],
    ids=["tuple-over-lines", "sum-over-lines", "comment-inside", "walrus", "generator", "one-line"],
)
def test_a_parenthesized_return_value_keeps_the_parentheses_it_needs(value):
    """Found by trying to break the rewrite: the parentheses were dropped, so a value over several lines (or a ``:=``,
    a generator) made a file that does not parse, and a comment inside them was lost."""
    source = _validation_module(f"    def validation_step(self, batch, batch_idx):\n        return {value}\n")
    fixed = fix(source)
    ast.parse(fixed)
    assert "self.validation_step_outputs[0].append(output)" in fixed
    kept = value if value != "(batch_idx + 1)" else "batch_idx + 1"
    assert f"        output = {kept}\n" in fixed


def test_a_step_that_uses_every_preferred_name_gets_a_numbered_one():
    taken = "        output = step_output = step_output_ = step_output__ = entry = cached = cached_entry = 1\n"
    source = _validation_module(f"    def validation_step(self, batch, batch_idx):\n{taken}        return (1)\n")
    fixed = fix(source)
    assert "        step_output_1 = 1\n" in fixed and "append(step_output_1)" in fixed
    ast.parse(fixed)
