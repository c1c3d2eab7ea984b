"""
Detach what you cache in training
=================================

This page trains the same module twice -- caching with and without ``.detach()`` in ``training_step`` -- and
measures what the cache keeps alive at epoch end: graph nodes and the tensors they saved for backward.

:claim:`Outputs-loss-detached-other-keys-not`; a list the module fills in ``training_step`` is the module's own, and
:claim:`undetached-cache-keeps-graph`.
"""

# %%
# The module
# ----------
# Each step caches the loss and a per-sample confidence (the largest softmax probability), for an epoch-end
# summary, and returns both. ``detach`` chooses between the two versions.
import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class CachingModel(BoringModel):
    def __init__(self, detach):
        super().__init__()
        self.detach = detach
        self.losses, self.confidences = [], []

    def training_step(self, batch, batch_idx):
        predictions = self(batch)
        loss = self.loss(predictions)
        confidence = predictions.softmax(dim=1).amax(dim=1)
        if self.detach:
            self.losses.append(loss.detach())
            self.confidences.append(confidence.detach())
        else:
            self.losses.append(loss)
            self.confidences.append(confidence)
        return {"loss": loss, "confidence": confidence}  # the loss as computed, for the optimizer step

    def on_train_epoch_end(self):
        self.at_epoch_end = footprint(self.losses + self.confidences, exclude=list(self.parameters()))
        try:
            self.epoch_confidence = torch.cat(self.confidences).numpy()
        except RuntimeError as err:
            self.numpy_error = err
        self.losses.clear()
        self.confidences.clear()


# %%
# Measuring what a cache keeps alive
# ----------------------------------
# Walk the autograd graph from every cached tensor (``grad_fn`` and its ``next_functions``), count the
# nodes, and add up the bytes of the tensors those nodes saved for backward (their ``_saved_*``
# attributes), leaving out those that cannot be read. Storages are counted once each; the model's
# own parameters are left out.


def storage_bytes(tensors):
    """Bytes of the distinct storages behind ``tensors`` (deduplicated by storage ``data_ptr``)."""
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
    return sum(storages.values())


def footprint(cached, exclude):
    """Counts (tensors, requiring grad, with a ``grad_fn``, graph nodes) and bytes (saved, cached) of a cache."""
    excluded = {p.untyped_storage().data_ptr() for p in exclude}
    excluded |= {t.untyped_storage().data_ptr() for t in cached}
    nodes, saved, stack = set(), [], [t.grad_fn for t in cached if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or node in nodes:
            continue
        nodes.add(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
        for name in dir(node):
            if not name.startswith("_saved_"):
                continue
            try:
                value = getattr(node, name)
            except RuntimeError:  # one that cannot be read: left out
                continue
            if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() not in excluded:
                saved.append(value)
    return {
        "tensors": len(cached),
        "requires_grad": sum(t.requires_grad for t in cached),
        "with_grad_fn": sum(t.grad_fn is not None for t in cached),
        "nodes": len(nodes),
        "saved_bytes": storage_bytes(saved),
        "cached_bytes": storage_bytes(cached),
    }


class OutputsSeen(pl.Callback):
    """For each batch, notes ``requires_grad`` of each value of ``outputs``, by key."""

    def __init__(self):
        self.requires_grad = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.requires_grad.append({key: value.requires_grad for key, value in outputs.items()})


def train(detach):
    pl.seed_everything(0)
    model = CachingModel(detach)
    model.outputs_seen = OutputsSeen()
    trainer = pl.Trainer(
        max_epochs=1,
        callbacks=[model.outputs_seen],
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, DataLoader(RandomDataset(32, 256), batch_size=32))
    return model


undetached, detached = train(detach=False), train(detach=True)

# %%
# What each cache held at epoch end
# ---------------------------------
for label, model in (("without .detach()", undetached), ("with .detach()   ", detached)):
    print(f"{label}: {model.at_epoch_end}")
print(f"outputs in on_train_batch_end, requires grad: {undetached.outputs_seen.requires_grad[0]}")

# %%
# The symptom
# -----------
# Besides the memory: scikit-learn and plotting code take NumPy arrays. The run above handed the undetached cache
# to NumPy at epoch end; the error it raised is printed below (asserted further down).
print(f"{type(undetached.numpy_error).__name__}: {undetached.numpy_error}")

# %%
# The conclusion, asserted
# ------------------------
# :claim:`Undetached-cache-keeps-graph` (the confidence branch never took part in the loss).
# :claim:`Detach-copies-nothing`. :claim:`Outputs-loss-detached-other-keys-not`:
# a callback that caches the confidence needs ``.detach()`` too
# (:doc:`Extra keys of outputs keep their autograd graph </examples/caching/outputs_keep_graph>`).
steps = 256 // 32
before, after = undetached.at_epoch_end, detached.at_epoch_end
assert before["tensors"] == after["tensors"] == 2 * steps
assert (
    before["requires_grad"] == before["with_grad_fn"] == 2 * steps and before["nodes"] > 0 and before["saved_bytes"] > 0
), "every undetached cached tensor keeps graph nodes and tensors saved for backward until the cache is cleared"
assert after["requires_grad"] == after["with_grad_fn"] == after["nodes"] == after["saved_bytes"] == 0
assert after["cached_bytes"] == before["cached_bytes"], ".detach() keeps the same storages, without a graph"
assert undetached.outputs_seen.requires_grad == [{"loss": False, "confidence": True}] * steps, (
    "on_train_batch_end receives the loss detached and the other keys as returned"
)
assert isinstance(undetached.numpy_error, RuntimeError) and not hasattr(detached, "numpy_error")
assert detached.epoch_confidence.shape == (256,)
