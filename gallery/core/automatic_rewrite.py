"""
Let the checker rewrite an old epoch-end hook
=============================================

``lightning-migrate --fix`` rewrites a module's ``training_epoch_end(self, outputs)`` into caching
code: the module collects what each batch returned, and its ``on_train_epoch_end`` hands the old body the same
list it used to receive. This page runs that rewrite on an old module, trains the rewritten class, and checks its
epoch values against a plain PyTorch computation of what the old ``outputs`` list held.
"""

# %%
# .. recipe-domain:: rewrite_training_epoch_end
#
# The old module
# --------------
# A module written for Lightning 1.x, saved in a file of its project: its ``training_epoch_end`` averages the loss
# of every batch of the epoch. What Lightning 2.x does with it is shown on
# :doc:`The old outputs hooks on Lightning 2.x </examples/core/old_outputs_hooks>`.
import csv
import math
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

OLD_MODULE = """\
import torch
from lightning.pytorch.demos.boring_classes import BoringModel


class TrainingEpochMean(BoringModel):
    def training_epoch_end(self, outputs):
        avg_loss = torch.stack([x["loss"] for x in outputs]).mean()
        self.log("train_loss_epoch_mean", avg_loss)
"""
project = Path(tempfile.mkdtemp())
(project / "old_model.py").write_text(OLD_MODULE)


# %%
# What the rewrite will change
# ----------------------------
# ``--diff`` prints the rewrite without writing it: a *proven* fix, one whose shape gives the values the old code
# gave where it last ran (its box above), so plain ``--fix`` applies it. The checker is
# run here as ``python -m lightning_migrate.checker``, the module behind the ``lightning-migrate`` command.
def lightning_migrate(*args):
    command = [sys.executable, "-m", "lightning_migrate.checker", *args]
    return subprocess.run(command, cwd=project, capture_output=True, text=True)


diff = lightning_migrate("--diff", "old_model.py")
print(diff.stdout + diff.stderr)

# %%
# The module gets a cache, emptied when each epoch starts; a ``training_step`` of its own calls the inherited one and
# appends what it returned, detached, as the module-side recipe does, and skips a step that returned nothing; the
# renamed ``on_train_epoch_end(self)`` takes the cache as ``outputs`` (with the loss divided by
# ``accumulate_grad_batches``), empties it, and runs the old body unchanged.
#
# Apply it
# --------
# ``--fix`` writes the same rewrite into the file. Checked again, the file has nothing left to report.
fixed = lightning_migrate("--fix", "old_model.py")
after = lightning_migrate("old_model.py")
print(after.stderr)

# %%
# Train the rewritten class
# -------------------------
# The class comes from the rewritten file. Three epochs of four batches, seeded; a copy of the initial weights is
# kept for the reference below, and a ``CSVLogger`` writes the module's values to a file.
TrainingEpochMean = runpy.run_path(str(project / "old_model.py"))["TrainingEpochMean"]

EPOCHS = 3
torch.manual_seed(7)
loader = DataLoader(RandomDataset(32, 32), batch_size=8)
model = TrainingEpochMean()
initial_weights = {name: value.clone() for name, value in model.state_dict().items()}

logger = CSVLogger(tempfile.mkdtemp(), name="", version="")  # keeps every logged value, for the check below
trainer = pl.Trainer(
    max_epochs=EPOCHS,
    limit_val_batches=0,
    logger=logger,
    log_every_n_steps=1,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, loader)


# %%
# The reference: what the old ``outputs`` list held
# --------------------------------------------------
# One entry per batch: the loss ``training_step`` returned. A plain loop over the same batches, from the same
# initial weights, with the optimizer and scheduler ``BoringModel.configure_optimizers`` returns, computes those
# losses without Lightning and without the rewritten code.
def plain_loop_epoch_means(model, loader, epochs):
    [optimizer], [scheduler] = model.configure_optimizers()
    means = []
    for _ in range(epochs):
        losses = []
        for batch_idx, batch in enumerate(loader):
            optimizer.zero_grad()
            loss = model.training_step(batch, batch_idx)["loss"]
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        means.append(sum(losses) / len(losses))
    return means


reference_model = BoringModel()
reference_model.load_state_dict(initial_weights)
reference_means = plain_loop_epoch_means(reference_model, loader, EPOCHS)

with open(Path(logger.log_dir, "metrics.csv"), newline="") as file:
    logged = [float(row["train_loss_epoch_mean"]) for row in csv.DictReader(file) if row["train_loss_epoch_mean"]]
for epoch, (seen, expected) in enumerate(zip(logged, reference_means, strict=True)):
    print(f"epoch {epoch}: logged mean {seen:.6f} (plain loop: {expected:.6f})")

# %%
# What the rewrite delivered
# --------------------------
# The checker found one proven rewrite and left no marker, the rewritten file has nothing more to report, the
# rewritten class logged one mean per epoch equal to the plain loop's, and its cache is empty at the end.
assert diff.returncode == 1 and "1 proven fix, 0 safe fixes, 0 unsafe fixes" in diff.stderr, diff.stderr
assert fixed.returncode == 1 and after.returncode == 0, after.stderr
assert len(logged) == EPOCHS
for seen, expected in zip(logged, reference_means, strict=True):
    assert math.isclose(seen, expected, rel_tol=1e-6), "the rewritten hook computes what the old outputs held"
assert model.training_step_outputs == []

# %%
# What the rewrite risks, and where it does not apply
# ---------------------------------------------------
# The rewrite keeps what the old code computed, not what you may want now:
#
# * it keeps **every** output of the epoch in memory until the epoch ends (:doc:`Memory retained by cached outputs
#   </examples/performance/retained_memory>` measures that cost); caching only the loss, as
#   :doc:`module-side caching </examples/core/module_side_caching>` does, costs one number per batch;
# * under gradient accumulation it averages what the old list held: :claim:`old-list-loss-whole-then-divided`
#   (:doc:`gradient accumulation </examples/pitfalls/accumulated_loss_scaled>`);
# * under DDP each rank averages its own batches: :claim:`old-ddp-lists-per-rank`
#   (:doc:`per-rank caches </examples/distributed/ddp_per_rank_caches>`);
# * where the old code raised -- every step returning nothing under manual optimization:
#   :claim:`empty-outputs-for-none-and-manual` -- the rewritten code hands the old body the same empty list;
# * it caches detached outputs, so nothing at epoch end back-propagates through them; and a subclass whose own
#   ``training_step`` leaves out ``super().training_step`` caches nothing;
# * in an epoch in which no step ran, it skips the old body:
#   :claim:`old-training-epoch-end-skipped-without-batches`.
#
# Each shape the checker rewrites -- training, validation, test and predict hooks, several dataloaders, callbacks
# -- has its entry on :doc:`Where each recipe holds </reference/scenarios>`; the box at the top of this page is
# this shape's.
