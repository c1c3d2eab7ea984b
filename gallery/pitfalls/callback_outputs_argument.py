"""
A callback that still asks for ``outputs``
==========================================

``Callback.on_train_epoch_end(self, trainer, pl_module, outputs)`` lost its ``outputs`` argument in
Lightning 1.5. A callback that still declares it trains through the whole first epoch and then fails; one
that gave ``outputs`` a default value never fails -- and never receives anything. The fix collects the
values in ``on_train_batch_end``.
"""

# %%
# The symptom
# -----------
# Two training batches per epoch; a second callback counts the batches that ran.
import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")

train_loader = DataLoader(RandomDataset(32, 16), batch_size=8)


class BatchCounter(pl.Callback):
    def __init__(self):
        self.batches = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.batches += 1


def make_trainer(callbacks):
    return pl.Trainer(
        max_epochs=2,
        limit_val_batches=0,
        callbacks=callbacks,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


class OldCallback(pl.Callback):
    def on_train_epoch_end(self, trainer, pl_module, outputs):
        self.mean = torch.stack([out["loss"] for out in outputs]).mean()


counter = BatchCounter()
trainer = make_trainer([OldCallback(), counter])
try:
    trainer.fit(BoringModel(), train_loader)
except TypeError as err:
    error = err
    print(f"{type(err).__name__}: {err}")
else:
    raise AssertionError("the old callback no longer fails: this page is out of date")
print(f"training batches run before the failure: {counter.batches}; optimizer steps: {trainer.global_step}")

# %%
# Both batches of the first epoch ran; the error came when the epoch ended.
assert isinstance(error, TypeError)
assert counter.batches == trainer.global_step == 2

# %%
# A default value hides the problem
# ---------------------------------
# ``outputs=None`` makes the call valid. The hook now runs at every epoch end -- and always sees ``None``.


class SilentCallback(pl.Callback):
    def __init__(self):
        self.received = []

    def on_train_epoch_end(self, trainer, pl_module, outputs=None):
        self.received.append(outputs)


silent = SilentCallback()
trainer = make_trainer([silent])
trainer.fit(BoringModel(), train_loader)
print(f"outputs received at each epoch end: {silent.received}")
assert silent.received == [None, None]

# %%
# The cause
# ---------
# Lightning calls ``on_train_epoch_end(trainer, pl_module)``: the epoch's outputs are not kept anywhere for
# it. Each batch's output is still passed to ``on_train_batch_end``.
#
# The fix
# -------
# Collect in ``on_train_batch_end``, reduce and clear in ``on_train_epoch_end(trainer, pl_module)``. Lightning
# passes ``outputs["loss"]`` already detached.


class CachingCallback(pl.Callback):
    def __init__(self):
        self.losses = []
        self.epoch_means = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.losses.append(outputs["loss"])

    def on_train_epoch_end(self, trainer, pl_module):
        self.epoch_means.append(torch.stack(self.losses).mean().item())
        self.losses.clear()


# %%
# The reference is the same training as a plain PyTorch loop from the same initial weights, with the
# optimizer and scheduler ``BoringModel.configure_optimizers`` returns.
pl.seed_everything(4, verbose=False)
model = BoringModel()
initial_weights = {name: value.clone() for name, value in model.state_dict().items()}
caching = CachingCallback()
make_trainer([caching]).fit(model, train_loader)

reference_model = BoringModel()
reference_model.load_state_dict(initial_weights)
[optimizer], [scheduler] = reference_model.configure_optimizers()
reference_means = []
for _ in range(2):
    losses = []
    for batch_idx, batch in enumerate(train_loader):
        optimizer.zero_grad()
        loss = reference_model.training_step(batch, batch_idx)["loss"]
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    scheduler.step()
    reference_means.append(torch.stack(losses).mean().item())

for epoch, (mean, expected) in enumerate(zip(caching.epoch_means, reference_means, strict=True)):
    print(f"epoch {epoch}: callback mean {mean:.6f} (plain loop: {expected:.6f})")

# %%
# One mean per epoch over both batches, equal to the plain loop's; the cache is empty afterwards.
assert len(caching.epoch_means) == 2
for mean, expected in zip(caching.epoch_means, reference_means, strict=True):
    assert abs(mean - expected) <= 1e-6 * expected
assert caching.losses == []
