"""The ``proven`` tier: a caching rewrite of a shape the scenario matrix proves is applied by plain ``--fix``.

The commonest project -- a module whose ``training_epoch_end`` and ``validation_epoch_end`` log epoch means of their
``outputs``, and a callback whose ``on_train_epoch_end(trainer, pl_module, outputs)`` prints the epoch's mean loss
-- is fixed with plain ``--fix`` and run on the installed Lightning; what it logs is compared with the same means
computed in a plain PyTorch loop over the same batches and weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from lightning_migrate.checker import check_source, proven
from lightning_migrate.checker.base import MARKER, PROVEN, UNSAFE
from migration_guide import record_proven

from ._util import run, write

COMMON_PROJECT = """\
import pytorch_lightning as pl
import torch


class LitModel(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        loss = self(batch).pow(2).mean()
        return {"loss": loss}

    def training_epoch_end(self, outputs):
        self.log("train_epoch_mean", torch.stack([o["loss"] for o in outputs]).mean())

    def validation_step(self, batch, batch_idx):
        return {"val_loss": self(batch).pow(2).mean()}

    def validation_epoch_end(self, outputs):
        self.log("val_epoch_mean", torch.stack([o["val_loss"] for o in outputs]).mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class EpochMeanPrinter(pl.Callback):
    def __init__(self):
        self.means = []

    def on_train_epoch_end(self, trainer, pl_module, outputs):
        self.means.append(torch.stack([o["loss"] for o in outputs]).mean().item())
"""

#: Runs the fixed project on the installed Lightning and, beside it, the plain PyTorch loop; prints both as JSON.
RUNNER = """\
import csv, json, sys, tempfile
from pathlib import Path

import pytorch_lightning as pl
import torch
from pytorch_lightning.loggers import CSVLogger
from torch.utils.data import DataLoader

sys.path.insert(0, sys.argv[1])
from model import EpochMeanPrinter, LitModel

EPOCHS = 3
torch.manual_seed(0)
train, val = torch.randn(24, 4), torch.randn(12, 4)
model = LitModel()
initial = {k: v.clone() for k, v in model.state_dict().items()}
printer = EpochMeanPrinter()
logger = CSVLogger(tempfile.mkdtemp(), name="", version="")
trainer = pl.Trainer(
    max_epochs=EPOCHS, callbacks=[printer], logger=logger, num_sanity_val_steps=0, enable_progress_bar=False,
    enable_model_summary=False, enable_checkpointing=False, accelerator="cpu", devices=1,
)
trainer.fit(model, DataLoader(train, batch_size=6), DataLoader(val, batch_size=5))
with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    rows = list(csv.DictReader(file))
logged = {
    key: [float(row[key]) for row in rows if row.get(key)] for key in ("train_epoch_mean", "val_epoch_mean")
}

# the ground truth: the same module's layer, trained by hand
layer = torch.nn.Linear(4, 1)
layer.load_state_dict({k.removeprefix("layer."): v for k, v in initial.items()})
optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
truth = {"train_epoch_mean": [], "val_epoch_mean": []}
for _ in range(EPOCHS):
    losses = []
    for batch in DataLoader(train, batch_size=6):
        optimizer.zero_grad()
        loss = layer(batch).pow(2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    truth["train_epoch_mean"].append(sum(losses) / len(losses))
    with torch.no_grad():
        val_losses = [layer(batch).pow(2).mean().item() for batch in DataLoader(val, batch_size=5)]
    truth["val_epoch_mean"].append(sum(val_losses) / len(val_losses))
print(json.dumps({"logged": logged, "printed": printer.means, "truth": truth}))
"""


def test_the_record_is_what_the_matrix_rows_and_the_1x_records_give():
    assert proven.load() == record_proven.record()
    assert "training-epoch-end" in proven.shapes()
    assert proven.proving_rows("training-epoch-end")  # a row of data/scenarios.toml runs it


def test_plain_fix_makes_the_commonest_project_log_the_old_epoch_means(tmp_path, capsys):
    project = write(tmp_path / "project", {"model.py": COMMON_PROJECT, "pyproject.toml": ""})
    code, out, err = run(["--fix", project / "model.py"], capsys)
    assert code == 1, err  # findings: the convention of a linter's --fix
    summary = err.strip().splitlines()[-1]
    assert summary.startswith("3 findings in 1 file"), summary
    assert "3 proven fixes, 0 safe fixes, 0 unsafe fixes (--unsafe-fixes), 0 manual; changed 1 file" in summary
    assert all("[proven fix applied]" in line for line in out), out
    fixed = (project / "model.py").read_text(encoding="utf-8")
    assert MARKER not in fixed
    assert check_source(fixed.encode()).findings == []
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER, encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [sys.executable, str(runner), str(project)], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    truth = result["truth"]
    for key in ("train_epoch_mean", "val_epoch_mean"):
        assert len(result["logged"][key]) == 3, result
        assert result["logged"][key] == pytest.approx(truth[key], rel=1e-5), key
    assert result["printed"] == pytest.approx(truth["train_epoch_mean"], rel=1e-5)


def test_a_shape_no_row_proves_stays_unsafe_with_a_two_line_marker(monkeypatch):
    monkeypatch.setattr(proven, "shapes", lambda: frozenset())
    source = textwrap.dedent(COMMON_PROJECT).encode()
    result = check_source(source, fix=True)
    assert [f.tier for f in result.findings] == [UNSAFE, UNSAFE, UNSAFE]
    lines = result.new_source.decode().splitlines()
    markers = [i for i, line in enumerate(lines) if MARKER in line]
    assert len(markers) == 3
    for i in markers:
        assert lines[i].strip().startswith(f"# {MARKER} LM00"), lines[i]
        assert "unsafe fix" in lines[i] and "`--unsafe-fixes` applies it" in lines[i]
        assert lines[i + 1].strip().startswith("#   https://"), lines[i + 1]
        assert lines[i + 2].strip().startswith("def "), lines[i + 2]  # two lines, then the hook
    # with the shapes proven again, the same file is fixed and the markers go
    monkeypatch.setattr(proven, "shapes", lambda: frozenset(proven.load()["shapes"]))
    again = check_source(result.new_source, fix=True)
    assert [f.tier for f in again.findings] == [PROVEN, PROVEN, PROVEN]
    assert MARKER not in again.new_source.decode()
