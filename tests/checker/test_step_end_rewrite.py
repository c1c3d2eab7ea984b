"""LM005's rewrite of a step-end hook that does work: its body runs at each ``return`` of the class's own step, as
Lightning 1.x ran it after the step (the step's output kept where the hook returned ``None``), ``proven`` by the
matrix rows ``rewrite_training_step_end``, ``rewrite_validation_step_end`` and ``rewrite_test_step_end``; and the
cases it refuses, each with its reason in the marker."""

from __future__ import annotations

import textwrap

import pytest

from lightning_migrate.checker import check_source, proven
from lightning_migrate.checker.base import MANUAL, PROVEN, UNSAFE

from ._util import fix, unwrapped, write

MODULE = """\
import lightning.pytorch as pl
import torch


class Parts(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
        self.made = []

    def training_step(self, batch, batch_idx):
        if batch_idx == 1:
            return  # skipped
        return {"preds": self.layer(batch)}

    def training_step_end(self, outputs):
        if outputs is None:
            return None
        loss = outputs["preds"].pow(2).mean()
        self.made.append(loss.item())
        return {"loss": loss}

    def validation_step(self, batch, batch_idx):
        out = self.layer(batch).sum()
        return out

    def validation_step_end(self, out):
        self.log("seen", out)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""

REWRITTEN = """\
    def training_step(self, batch, batch_idx):
        if batch_idx == 1:
            step_output = None
            ended = self._training_step_end(step_output)
            return step_output if ended is None else ended  # skipped
        step_output = {"preds": self.layer(batch)}
        ended = self._training_step_end(step_output)
        return step_output if ended is None else ended

    def _training_step_end(self, outputs):
        if outputs is None:
            return None
        loss = outputs["preds"].pow(2).mean()
        self.made.append(loss.item())
        return {"loss": loss}

    def validation_step(self, batch, batch_idx):
        out = self.layer(batch).sum()
        step_output = out
        ended = self._validation_step_end(step_output)
        return step_output if ended is None else ended

    def _validation_step_end(self, out):
        self.log("seen", out)
"""


def _tiers(source: str) -> list[tuple[str, str | None]]:
    result = check_source(textwrap.dedent(source).encode(), select=frozenset({"LM005"}))
    return [(f.message.split("`")[1].split("(")[0], f.tier) for f in result.findings]


def test_each_stage_s_shape_is_proven_by_its_matrix_row():
    for stage in ("training", "validation", "test"):
        assert proven.proving_rows(f"{stage}-step-end/into-step") == [f"rewrite_{stage}_step_end"]


def test_each_return_of_the_step_calls_the_renamed_hook():
    assert _tiers(MODULE) == [("training_step_end", PROVEN), ("validation_step_end", PROVEN)]
    fixed = fix(MODULE)  # plain --fix: both shapes are proven
    assert fixed.split("self.made = []\n\n", 1)[1].split("\n    def configure_optimizers")[0] == REWRITTEN
    assert fix(fixed) == fixed


def test_a_shape_no_row_proves_is_opt_in(monkeypatch):
    monkeypatch.setattr(proven, "shapes", lambda: frozenset({"training-step-end/into-step"}))
    assert _tiers(MODULE) == [("training_step_end", PROVEN), ("validation_step_end", UNSAFE)]
    fixed = fix(MODULE)
    assert "ended = self._training_step_end(step_output)" in fixed
    assert "def validation_step_end(self, out):" in fixed and "_validation_step_end" not in fixed
    assert "moved into `validation_step`, a shape no row of the scenario matrix proves" in fixed
    assert fix(MODULE, unsafe_fixes=True).split("self.made = []\n\n", 1)[1].startswith(REWRITTEN)


def test_the_rewritten_module_trains_on_the_loss_the_hook_made():
    """Run on the installed Lightning: the hook's loss drives the optimizer, the skipped batch (the step returned
    ``None``, and so did the hook) is left out, and the weights are those of a plain loop over the same batches;
    the validation hook, which returns nothing, still sees each step's output."""
    import lightning.pytorch as pl  # a test requirement: a missing Lightning fails here, never skips
    import torch

    namespace: dict = {}
    exec(compile(fix(MODULE, unsafe_fixes=True), "rewritten.py", "exec"), namespace)  # noqa: S102 - our snippet
    torch.manual_seed(0)
    data = torch.randn(12, 4)
    model = namespace["Parts"]()
    reference = torch.nn.Linear(4, 1)
    reference.load_state_dict(model.layer.state_dict())
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    trainer = pl.Trainer(
        max_epochs=1,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader, loader)
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    expected = []
    for batch_idx, batch in enumerate(loader):
        if batch_idx == 1:
            continue
        loss = reference(batch).pow(2).mean()
        expected.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert model.made == pytest.approx(expected, rel=1e-6)
    assert torch.allclose(model.layer.weight, reference.weight, rtol=1e-6)
    with torch.no_grad():  # the renamed validation hook logged each step's output: their mean, at the last weights
        sums = [reference(batch).sum() for batch in loader]
    assert trainer.callback_metrics["seen"].item() == pytest.approx(torch.stack(sums).mean().item(), rel=1e-5)


def test_names_the_step_uses_are_not_taken():
    source = """\
    import lightning.pytorch as pl

    class M(pl.LightningModule):
        def test_step(self, batch, batch_idx):
            step_output, ended = batch, batch_idx
            if ended:
                return step_output
            else:
                raise ValueError(ended)

        def test_step_end(self, out):
            return out * 2
    """
    fixed = fix(source, unsafe_fixes=True)
    assert "step_output_ = step_output\n" in fixed
    assert "ended_ = self._test_step_end(step_output_)" in fixed
    assert "return step_output_ if ended_ is None else ended_" in fixed


REFUSED = {
    "the step inherited": (
        """
        class M(Base):
            def training_step_end(self, out):
                return out * 2
        """,
        "the class does not define `training_step` itself",
    ),
    "a return inside try": (
        """
        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                try:
                    return self(batch)
                except ValueError:
                    return None

            def training_step_end(self, out):
                return out * 2
        """,
        "a `return` of the step is inside a `try` or a `with`",
    ),
    "a return inside with": (
        """
        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                with torch.no_grad():
                    return self(batch)

            def training_step_end(self, out):
                return out * 2
        """,
        "a `return` of the step is inside a `try` or a `with`",
    ),
    "the step can end without a return": (
        """
        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                if batch_idx:
                    return self(batch)

            def training_step_end(self, out):
                return out * 2
        """,
        "`training_step` can end without a `return`",
    ),
    "a one-line if": (
        """
        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                if batch_idx: return None
                return self(batch)

            def training_step_end(self, out):
                return out * 2
        """,
        "a `return` of the step shares its line with its `if` (or `for`, ...)",
    ),
    "the step yields": (
        """
        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                yield self(batch)
                return None

            def training_step_end(self, out):
                return out * 2
        """,
        "`training_step` yields",
    ),
    "the step is called": (
        """
        class M(pl.LightningModule):
            def validation_step(self, batch, batch_idx):
                return self(batch)

            def validation_step_end(self, out):
                return out * 2

            def test_step(self, batch, batch_idx):
                return self.validation_step(batch, batch_idx)
        """,
        "`validation_step` is called",
    ),
    "a subclass overrides the step": (
        """
        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                return self(batch)

            def training_step_end(self, out):
                return out * 2

        class Sub(M):
            def training_step(self, batch, batch_idx):
                return self(batch) + 1
        """,
        "a subclass defines `training_step`",
    ),
    "the epoch-end method reads what the hook returned": (
        """
        class M(pl.LightningModule):
            def test_step(self, batch, batch_idx):
                return self(batch)

            def test_step_end(self, out):
                return out * 2

            def test_epoch_end(self, outputs):
                self.log("mean", torch.stack(outputs).mean())
        """,
        "`test_epoch_end` reads what it returns: fix the two together",
    ),
    "a subclass's epoch-end method reads what the hook returned": (
        """
        class M(pl.LightningModule):
            def validation_step(self, batch, batch_idx):
                return self(batch)

            def validation_step_end(self, out):
                return out * 2

        class Sub(M):
            def validation_epoch_end(self, outputs):
                self.log("mean", torch.stack(outputs).mean())
        """,
        "`validation_epoch_end` reads what it returns: fix the two together",
    ),
    "the hook takes two arguments": (
        """
        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                return self(batch)

            def training_step_end(self, out, extra):
                return out * 2
        """,
        "`training_step_end` does not take the step's output as its one argument",
    ),
}


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_refused_with_the_reason(case):
    body, reason = REFUSED[case]
    source = "import lightning.pytorch as pl\nimport torch\n\nclass Base(pl.LightningModule):\n    pass\n" + (
        textwrap.dedent(body)
    )
    assert [tier for _, tier in _tiers(source)] == [MANUAL]
    fixed = fix(source, unsafe_fixes=True)
    assert f"LM005 manual fix, move this work into the step or the batch-end hook ({reason}" in fixed


def test_a_call_of_the_step_in_another_file_refuses(tmp_path, capsys):
    from ._util import run

    fix_lines = unwrapped
    root = write(
        tmp_path,
        {
            "model.py": """\
            import lightning.pytorch as pl

            class M(pl.LightningModule):
                def training_step(self, batch, batch_idx):
                    return self(batch)

                def training_step_end(self, out):
                    return out * 2
            """,
            "use.py": """\
            from model import M

            def loss(model: M, batch):
                return model.training_step(batch, 0)
            """,
        },
    )
    run([root, "--fix", "--unsafe-fixes", "--select", "LM005"], capsys)
    text = (root / "model.py").read_text(encoding="utf-8")
    assert "move this work into the step or the batch-end hook (`training_step` is called: " in fix_lines(text)
    assert "use.py:4" in fix_lines(text) and "def training_step_end(self, out):" in text
