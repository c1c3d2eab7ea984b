"""
Extra keys of ``outputs`` keep their autograd graph
===================================================

This page compares, key by key, the ``outputs`` a callback receives with what ``training_step`` returned, measures
what a callback that caches an extra key keeps alive, and shows the fix: ``.detach()``.

:claim:`Extra-keys-as-returned`: a callback that caches such a tensor keeps every batch's graph alive until it
clears the cache.
"""

# %%
# A module that returns more than the loss
# ----------------------------------------
# ``training_step`` returns the loss and each sample's confidence (its largest softmax probability), for a
# callback that summarises the epoch.
import lightning
import lightning.pytorch as pl
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader

print(f"Lightning {lightning.__version__}")


class ConfidenceModel(BoringModel):
    def training_step(self, batch, batch_idx):
        predictions = self(batch)
        confidence = predictions.softmax(dim=1).amax(dim=1)
        return {"loss": self.loss(predictions), "confidence": confidence}


def make_trainer(callbacks):
    return pl.Trainer(
        max_epochs=1,
        limit_val_batches=0,
        callbacks=callbacks,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


loader = DataLoader(RandomDataset(32, 64), batch_size=8)

# %%
# What ``on_train_batch_end`` receives
# ------------------------------------
# A subclass of the module keeps what ``training_step`` returned (a check, not part of the module), and a
# callback compares it, key by key, with what it receives.


class KeepsReturned(ConfidenceModel):
    def training_step(self, batch, batch_idx):
        self.returned = super().training_step(batch, batch_idx)
        return self.returned


class CompareWithReturned(pl.Callback):
    def __init__(self):
        self.seen = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.seen.append(
            {
                key: (value is pl_module.returned[key], type(value.grad_fn).__name__, value.requires_grad)
                for key, value in outputs.items()
            }
        )


compare = CompareWithReturned()
make_trainer([compare]).fit(KeepsReturned(), loader)
print("key: (the tensor training_step returned?, grad_fn, requires_grad)")
print(compare.seen[0])

# %%
# The output above compares both keys with what ``training_step`` returned: :claim:`extra-keys-as-returned`.
assert len(compare.seen) == 8 and all(
    seen["confidence"] == (True, "AmaxBackward0", True) and seen["loss"] == (False, "NoneType", False)
    for seen in compare.seen
), "outputs holds the returned confidence itself, graph attached, and a detached copy of the loss"

# %%
# The symptom: a cache that keeps the graphs
# ------------------------------------------
# The callback caches ``outputs["confidence"]`` as it comes and logs the epoch's mean confidence. A check that
# runs before it at epoch end measures the cache: how many cached tensors still have a ``grad_fn``, how many
# graph nodes are reachable from them, and the bytes of the tensors those nodes saved for a backward pass that
# never comes. It reads a node's saved tensors from its attributes whose names start with ``_saved_``, as
# PyTorch's tutorial on hooks for saved tensors does, and counts only those it can read.


class ConfidenceCallback(pl.Callback):
    def __init__(self):
        self.confidences = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.confidences.append(outputs["confidence"])

    def on_train_epoch_end(self, trainer, pl_module):
        pl_module.log("mean_confidence", torch.cat(self.confidences).mean())
        self.confidences.clear()


def graph_kept(tensors):
    """``(tensors with a grad_fn, graph nodes reachable, bytes saved for backward)`` of a list of tensors."""
    nodes, saved, stack = set(), {}, [t.grad_fn for t in tensors if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or node in nodes:
            continue
        nodes.add(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
        for name in dir(node):
            if name.startswith("_saved_"):
                try:
                    value = getattr(node, name)
                except RuntimeError:  # one that cannot be read: left out
                    continue
                if isinstance(value, torch.Tensor):
                    saved[value.untyped_storage().data_ptr()] = value.untyped_storage().nbytes()
    return sum(t.grad_fn is not None for t in tensors), len(nodes), sum(saved.values())


class MeasureCache(pl.Callback):
    def __init__(self, recipe):
        self.recipe = recipe

    def on_train_epoch_end(self, trainer, pl_module):
        self.cached = len(self.recipe.confidences)
        self.with_grad_fn, self.nodes, self.saved_bytes = graph_kept(self.recipe.confidences)


def measure(recipe):
    torch.manual_seed(0)
    measured = MeasureCache(recipe)
    make_trainer([measured, recipe]).fit(ConfidenceModel(), loader)
    print(
        f"{type(recipe).__name__}: {measured.cached} cached tensors, {measured.with_grad_fn} with a grad_fn, "
        f"{measured.nodes} graph nodes, {measured.saved_bytes} bytes saved for backward"
    )
    return measured


naive = measure(ConfidenceCallback())

# %%
# Every cached tensor has a graph, as the output above counts: :claim:`undetached-cache-keeps-graph`; here the
# callback's epoch-end hook clears the cache.
# :doc:`Detach what you cache in training </examples/caching/detach_cached_tensors>` measures the same mistake in a
# module's own cache.
assert naive.cached == naive.with_grad_fn == 8 and naive.nodes > 0 and naive.saved_bytes > 0, (
    "each cached confidence keeps its graph nodes and the tensors they saved"
)

# %%
# The cause
# ---------
# :claim:`Outputs-loss-detached-other-keys-not`. The graph of ``confidence`` did not take part in the loss, and
# what its nodes saved is still there at epoch end, as the output above measures.
#
# The fix
# -------
# Detach what you cache.


class DetachedConfidenceCallback(pl.Callback):
    def __init__(self):
        self.confidences = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.confidences.append(outputs["confidence"].detach())

    def on_train_epoch_end(self, trainer, pl_module):
        pl_module.log("mean_confidence", torch.cat(self.confidences).mean())
        self.confidences.clear()


fixed = measure(DetachedConfidenceCallback())

# %%
# What the fix delivers
# ---------------------
# The same 8 tensors, no graph: no ``grad_fn``, no node, no saved byte.
assert fixed.cached == 8 and (fixed.with_grad_fn, fixed.nodes, fixed.saved_bytes) == (0, 0, 0)
