"""LM001's merge: ``training_epoch_end`` beside the module's own ``on_train_epoch_end`` becomes one hook, the old
body first (Lightning 1.x ran ``training_epoch_end`` before ``on_train_epoch_end``: the order its record keeps).

Pairs of input and expected output, then the look-alikes the merge leaves to a marker, each with its reason."""

from __future__ import annotations

import json
import textwrap

import pytest

from lightning_migrate.checker import check_source, proven
from lightning_migrate.checker.base import PROVEN
from migration_guide import compat

from ._util import run, unwrapped, write

BESIDE = """\
import torch
import pytorch_lightning as pl


class Model(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        loss = self(batch).sum()
        self.losses.append(loss.detach())
        return loss

    # the epoch's mean
    def training_epoch_end(self, outputs):
        \"\"\"What the epoch gave.\"\"\"
        self.epoch_mean = torch.stack(self.losses).mean()  # made here
        self.losses.clear()

    def on_train_epoch_end(self):
        \"\"\"Log it.\"\"\"
        self.log("epoch_mean", self.epoch_mean)
"""

MERGED = """\
import torch
import pytorch_lightning as pl


class Model(pl.LightningModule):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.train_batches_this_epoch = 0  # the batches trained this epoch, counted in on_train_batch_end

    def training_step(self, batch, batch_idx):
        loss = self(batch).sum()
        self.losses.append(loss.detach())
        return loss

    def on_train_epoch_start(self):
        self.train_batches_this_epoch = 0

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.train_batches_this_epoch += 1

    def on_train_epoch_end(self):
        \"\"\"Log it.\"\"\"
        # the epoch's mean
        # What the epoch gave.
        if self.train_batches_this_epoch:  # a batch was trained this epoch
            self.epoch_mean = torch.stack(self.losses).mean()  # made here
            self.losses.clear()
        self.log("epoch_mean", self.epoch_mean)
"""


def fixed(source: str) -> tuple[list[tuple[str, str | None]], str]:
    result = check_source(textwrap.dedent(source).encode(), fix=True)
    return [(f.code, f.tier) for f in result.findings], (result.new_source or b"").decode()


def test_the_1x_record_ran_training_epoch_end_before_the_modules_on_train_epoch_end():
    """The order the merge writes is the recorded one: on the reference release, the hooks that ran after
    ``training_epoch_end`` (in their order) hold the module's ``on_train_epoch_end``."""
    reference = compat.load_matrix()["reference"]
    data = json.loads(compat.data_path(reference).read_text(encoding="utf-8"))
    [lifetime] = [o for o in data["observations"] if o["pattern"] == "training-epoch-end-outputs-lifetime"]
    assert list(lifetime["alive_after"])[:2] == ["Callback.on_train_epoch_end", "LightningModule.on_train_epoch_end"]


def test_plain_fix_merges_the_old_body_at_the_head_of_the_existing_hook():
    assert "training-epoch-end/merged" in proven.shapes()
    assert proven.proving_rows("training-epoch-end/merged") == ["rewrite_training_epoch_end_merged"]
    findings, new = fixed(BESIDE)
    assert findings == [("LM001", PROVEN)]
    assert new == MERGED
    compile(new, "merged.py", "exec")
    assert check_source(new.encode()).findings == []


@pytest.mark.parametrize(
    ("old_body", "own_body", "expected"),
    [
        ("pass", 'self.log("x", 1.0)', 'self.log("x", 1.0)'),  # an empty old body leaves nothing behind
        ("self.n = 1", "pass", "self.n = 1"),  # the hook's lone `pass` goes when code comes in
        ("...", "pass", "pass"),
    ],
    ids=["old pass", "own pass", "both empty"],
)
def test_empty_bodies_add_no_statement(old_body, own_body, expected):
    source = f"""\
import pytorch_lightning as pl


class Model(pl.LightningModule):
    def training_epoch_end(self, outputs):
        {old_body}

    def on_train_epoch_end(self):
        {own_body}
"""
    findings, new = fixed(source)
    assert findings == [("LM001", PROVEN)]
    if old_body == "self.n = 1":  # code moved in runs only in an epoch that trained a batch
        expected = "if self.train_batches_this_epoch:  # a batch was trained this epoch\n            self.n = 1"
    assert new.endswith(f"\n    def on_train_epoch_end(self):\n        {expected}\n")
    assert ("train_batches_this_epoch" in new) == (old_body == "self.n = 1")  # nothing to skip: no count


REFUSED = {
    "the old body returns": (
        "if self.skip:\n            return\n        self.n = 1",
        "returns, yields or awaits: the code of `on_train_epoch_end` after it could be skipped",
    ),
    "a shared local name": ("x = 1\n        self.n = x", "both methods use the local name `x`"),
    "the old body calls its base's": (
        "super().training_epoch_end(outputs)",
        None,  # reads outputs: the caching rewrite's case, which refuses the existing hook
    ),
    "locals()": ("print(locals())", None),
}


@pytest.mark.parametrize(("old_body", "reason"), REFUSED.values(), ids=REFUSED.keys())
def test_a_merge_that_could_change_what_runs_leaves_a_marker(old_body, reason):
    source = f"""\
import pytorch_lightning as pl


class Model(pl.LightningModule):
    def training_epoch_end(self, outputs):
        {old_body}

    def on_train_epoch_end(self):
        x = 2
        self.log("x", float(x))
"""
    findings, new = fixed(source)
    assert findings == [("LM001", "manual")]
    assert "def training_epoch_end(self, outputs):" in new
    assert "lightning-migrate: LM001 manual fix, merge into the existing on_train_epoch_end" in new
    if reason is not None:
        assert reason in unwrapped(new)


def test_validation_epoch_end_beside_its_hook_is_left_to_a_marker():
    """Only the training hooks' order is recorded: an evaluation stage's pair stays manual."""
    source = """\
import pytorch_lightning as pl


class Model(pl.LightningModule):
    def validation_epoch_end(self, outputs):
        self.n = 1

    def on_validation_epoch_end(self):
        self.log("n", float(self.n))
"""
    findings, new = fixed(source)
    assert findings == [("LM001", "manual")]
    assert "1.x's order of the two hooks is not recorded for this stage" in unwrapped(new)


def test_a_subclass_that_defines_either_hook_keeps_the_merge_manual(tmp_path, capsys):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "base.py": """\
                import pytorch_lightning as pl


                class Base(pl.LightningModule):
                    def training_epoch_end(self, outputs):
                        self.n = 1

                    def on_train_epoch_end(self):
                        self.log("n", float(self.n))
                """,
            "child.py": """\
                from base import Base


                class Child(Base):
                    def on_train_epoch_end(self):
                        self.log("m", 2.0)
                """,
        },
    )
    assert run(["--fix", tmp_path], capsys)[0] == 1
    text = unwrapped((tmp_path / "base.py").read_text())
    assert "def training_epoch_end(self, outputs):" in text
    assert "a subclass defines `on_train_epoch_end`, which decides which of the two runs" in text


def test_a_project_callback_that_may_read_the_module_keeps_the_merge_opt_in(tmp_path, capsys):
    """1.x ran the old body before every callback's ``on_train_epoch_end``; the merged hook runs after them."""
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "model.py": BESIDE,
            "cb.py": """\
                import pytorch_lightning as pl


                class Show(pl.Callback):
                    def on_train_epoch_end(self, trainer, pl_module):
                        print(pl_module.epoch_mean)
                """,
        },
    )
    code, lines, _ = run(["--fix", tmp_path], capsys)
    text = unwrapped((tmp_path / "model.py").read_text())
    assert code == 1 and "def training_epoch_end(self, outputs):" in text
    assert "LM001 unsafe fix, merge into `on_train_epoch_end`: the project's callback `Show` (cb.py) defines" in text
    assert [line for line in lines if "[unsafe fix not applied]" in line]


def test_where_the_count_cannot_be_added_the_merge_is_opt_in_and_says_why():
    """The moved code must be skipped in an epoch that trains no batch, as 1.9.5 skipped ``training_epoch_end``: where
    the count cannot be added (here the class binds ``on_train_batch_end`` to another callable), the merge is
    opt-in and its marker says why."""
    source = BESIDE.replace("    def training_step", "    on_train_batch_end = print\n\n    def training_step")
    findings, new = fixed(source)
    assert findings == [("LM001", "unsafe")]
    assert "merge into `on_train_epoch_end` without the count of the epoch's batches that guards the moved code" in new
    assert "the class binds `on_train_batch_end` at line 6 other than with a `def`" in new


def test_a_one_line_method_is_merged_and_the_old_methods_words_are_kept():
    """A one-line ``def`` on either side is merged (it stopped the whole run with an ``AssertionError``); the old
    method's docstring becomes comments above its code, and its last comment stays below it."""
    source = """\
import pytorch_lightning as pl


class Model(pl.LightningModule):
    def training_epoch_end(self, outputs):
        \"\"\"Reset the epoch cache.\"\"\"
        self.x = 1
        # TODO: more
    def on_train_epoch_end(self): self.y = 2


class Short(pl.LightningModule):
    def training_epoch_end(self, outputs): self.x = 1
    def on_train_epoch_end(self):
        self.y = 2
"""
    findings, new = fixed(source)
    assert findings == [("LM001", PROVEN), ("LM001", PROVEN)]
    merged = (
        "    def on_train_epoch_end(self):\n"
        "{docstring}"
        "        if self.train_batches_this_epoch:  # a batch was trained this epoch\n"
        "            self.x = 1\n"
        "{todo}"
        "        self.y = 2\n"
    )
    assert merged.format(docstring="        # Reset the epoch cache.\n", todo="            # TODO: more\n") in new
    assert new.endswith(merged.format(docstring="", todo=""))
    compile(new, "merged.py", "exec")
