"""Observations of what the old ``training_epoch_end(outputs)`` contract kept, recorded on the releases that had it.

The site says what Lightning 1.x did with the outputs of ``training_step``: what the list held, when it was let go,
what each DDP process held. Those are history claims; they come from runs, recorded here on each ``[legacy]``
release of ``data/compat/matrix.toml`` (``nox -s legacy``, into the ``observations`` of
``data/compat/<release>.json``; ``docs/_ext/guide/claims.py`` checks the claims that cite them).

Each observation is one record ``{"pattern": <observation id>, ...fields}``; a model is a linear layer on 4
features, 4 training batches of 2 samples per epoch (``probes`` sizes), no validation, one process unless the
observation says otherwise:

``training-epoch-end-outputs-lifetime``
    2 epochs; in ``training_epoch_end`` the module takes weak references to every tensor of the list (the loss and
    an extra key of each entry), then notes how many are still alive at each later hook: ``alive_in_hook`` (in
    ``training_epoch_end``), ``alive_after`` (hook name -> count, in the order of the first epoch's hooks after it,
    the next epoch's ``on_train_epoch_start`` included) and ``freed_at``: the first of those hooks that found none
    alive.
``training-epoch-end-outputs-contents``
    1 epoch; what the list handed to ``training_epoch_end`` held against what ``training_step`` returned:
    ``entries``, ``batches``, ``loss_is_returned_tensor``, ``loss_shares_storage`` (the returned loss's),
    ``loss_requires_grad`` and ``extra_is_returned_tensor`` (an extra key, a detached tensor, as returned).
``outputs-kept-without-training-epoch-end``
    1 epoch of a module without ``training_epoch_end``: how many of the extra tensors ``training_step`` returned are
    alive at ``on_train_epoch_end`` (``alive_at_epoch_end``, of ``batches``).
``training-step-returning-a-tensor``
    1 epoch whose ``training_step`` returns the bare loss tensor: each entry of the ``training_epoch_end`` list --
    ``entry_type`` (class name), ``entry_keys`` (a dict's keys), ``loss_requires_grad``.
``validation-step-returning-none``
    one ``trainer.validate`` over 4 batches whose ``validation_step`` returns ``None`` for batch 1 and its loss
    otherwise: ``entries`` of the ``validation_epoch_end`` list, of ``batches``.
``stageless-hook-calls``
    when the stage-less hooks ran: a module defining ``on_epoch_start`` and ``on_epoch_end`` and a callback defining
    those and ``on_batch_start`` and ``on_batch_end``, both defining every stage's epoch hooks (the callback its batch
    hooks too), in four runs of their own Trainer (default sanity check, 2 validation batches): ``fit`` (2
    epochs), ``validate``, ``test`` and ``predict``. Per run, ``calls``: every call of those hooks in order, each
    ``[owner, hook, stage]`` (``LightningModule`` or ``Callback``; ``trainer.state.stage``: ``train``,
    ``sanity_check``, ``validate``, ``test``, ``predict``), or ``error``: what the release raised
    (``Type: message``, first line).
``ddp-training-epoch-end-outputs``
    1 epoch with ``ddp_fork`` on 2 CPU processes over 12 numbered samples in batches of 2: per rank, the entries of
    its ``training_epoch_end`` list and the sample numbers they came from; ``ranks_share_samples``. Recorded as
    ``{"skipped": reason}`` on a release without the ``ddp_fork`` strategy.
"""

from __future__ import annotations

import json
import os
import tempfile
import weakref
from typing import Any

from migration_guide import probes

BATCHES = probes.TRAIN_BATCHES


def _module_class(pl):
    import torch
    from torch.utils.data import DataLoader

    class Net(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(probes.FEATURES, 1)

        def training_step(self, batch, batch_idx):
            return {"loss": self.layer(batch).pow(2).mean(), "extra": self.layer(batch).detach()}

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self):
            data = torch.randn(BATCHES * probes.BATCH_SIZE, probes.FEATURES)
            return DataLoader(data, batch_size=probes.BATCH_SIZE)

    return Net


def _fit(pl, model, epochs: int, callbacks=(), **kwargs) -> None:
    arguments = probes._trainer_kwargs(pl)
    arguments.update(max_epochs=epochs, limit_val_batches=0, callbacks=list(callbacks), **kwargs)
    pl.Trainer(**arguments).fit(model)


def lifetime(pl) -> dict[str, Any]:
    """``training-epoch-end-outputs-lifetime`` (see the module docstring)."""
    net: Any = _module_class(pl)  # a class of the release under test: its type is known at run time only
    seen: list[tuple[str, int, int | None]] = []

    class Observed(net):
        refs: list = []

        def alive(self):
            return sum(ref() is not None for ref in self.refs) if self.refs else None

        def training_epoch_end(self, outputs):
            self.refs = [weakref.ref(entry[key]) for entry in outputs for key in ("loss", "extra")]
            seen.append(("training_epoch_end", self.current_epoch, self.alive()))

        def on_train_epoch_end(self, *args):
            seen.append(("LightningModule.on_train_epoch_end", self.current_epoch, self.alive()))

        def on_train_epoch_start(self):
            seen.append(("LightningModule.on_train_epoch_start", self.current_epoch, self.alive()))

    class Watcher(pl.Callback):
        def on_train_epoch_end(self, trainer, pl_module, *args):
            seen.append(("Callback.on_train_epoch_end", pl_module.current_epoch, pl_module.alive()))

        def on_train_epoch_start(self, trainer, pl_module):
            seen.append(("Callback.on_train_epoch_start", pl_module.current_epoch, pl_module.alive()))

    _fit(pl, Observed(), 2, [Watcher()])
    first = next(i for i, (hook, epoch, _) in enumerate(seen) if hook == "training_epoch_end" and epoch == 0)
    later = [(hook if epoch == 0 else f"next epoch: {hook}", alive) for hook, epoch, alive in seen[first + 1 :]]
    later = later[: next(i for i, (hook, _) in enumerate(later) if hook == "next epoch: training_epoch_end")]
    return {
        "alive_in_hook": seen[first][2],
        "alive_after": dict(later),
        "freed_at": next((hook for hook, alive in later if alive == 0), None),
    }


def contents(pl) -> dict[str, Any]:
    """``training-epoch-end-outputs-contents`` (see the module docstring)."""
    net: Any = _module_class(pl)  # a class of the release under test: its type is known at run time only

    class Compared(net):
        def __init__(self):
            super().__init__()
            self.returned, self.found = [], {}

        def training_step(self, batch, batch_idx):
            output = super().training_step(batch, batch_idx)
            self.returned.append(output)
            return output

        def training_epoch_end(self, outputs):
            pairs = list(zip(outputs, self.returned[-len(outputs) :], strict=True))
            self.found = {
                "entries": len(outputs),
                "batches": BATCHES,
                "loss_is_returned_tensor": any(kept["loss"] is given["loss"] for kept, given in pairs),
                "loss_shares_storage": any(
                    kept["loss"].untyped_storage().data_ptr() == given["loss"].untyped_storage().data_ptr()
                    for kept, given in pairs
                ),
                "loss_requires_grad": any(kept["loss"].requires_grad for kept, _ in pairs),
                "extra_is_returned_tensor": all(kept["extra"] is given["extra"] for kept, given in pairs),
            }

    model = Compared()
    _fit(pl, model, 1)
    return model.found


def kept_without_hook(pl) -> dict[str, Any]:
    """``outputs-kept-without-training-epoch-end`` (see the module docstring)."""
    net: Any = _module_class(pl)  # a class of the release under test: its type is known at run time only

    class Plain(net):
        def __init__(self):
            super().__init__()
            self.refs, self.alive = [], None

        def training_step(self, batch, batch_idx):
            output = super().training_step(batch, batch_idx)
            self.refs.append(weakref.ref(output["extra"]))
            return output

        def on_train_epoch_end(self, *args):
            self.alive = sum(ref() is not None for ref in self.refs)

    model = Plain()
    _fit(pl, model, 1)
    return {"alive_at_epoch_end": model.alive, "batches": BATCHES}


def bare_tensor(pl) -> dict[str, Any]:
    """``training-step-returning-a-tensor`` (see the module docstring)."""
    net: Any = _module_class(pl)  # a class of the release under test: its type is known at run time only

    class ReturnsTensor(net):
        def training_step(self, batch, batch_idx):
            return super().training_step(batch, batch_idx)["loss"]

        def training_epoch_end(self, outputs):
            first = outputs[0]
            self.found = {
                "entries": len(outputs),
                "entry_type": type(first).__name__,
                "entry_keys": sorted(first) if isinstance(first, dict) else None,
                "loss_requires_grad": (first["loss"] if isinstance(first, dict) else first).requires_grad,
            }

    model = ReturnsTensor()
    _fit(pl, model, 1)
    return model.found


def none_in_validation(pl) -> dict[str, Any]:
    """``validation-step-returning-none`` (see the module docstring)."""
    import torch
    from torch.utils.data import DataLoader

    net: Any = _module_class(pl)  # a class of the release under test: its type is known at run time only

    class SkipsOne(net):
        def validation_step(self, batch, batch_idx):
            return None if batch_idx == 1 else self.layer(batch).pow(2).mean()

        def validation_epoch_end(self, outputs):
            self.entries = len(outputs)

        def val_dataloader(self):
            data = torch.randn(BATCHES * probes.BATCH_SIZE, probes.FEATURES)
            return DataLoader(data, batch_size=probes.BATCH_SIZE)

    model = SkipsOne()
    arguments = probes._trainer_kwargs(pl)
    pl.Trainer(**arguments).validate(model)
    return {"entries": model.entries, "batches": BATCHES}


#: The stage-less hooks ``stageless-hook-calls`` defines, per owner, and the stage hooks it records beside them.
STAGELESS = {"LightningModule": ("on_epoch_start", "on_epoch_end"), "Callback": ("on_epoch", "on_batch")}
STAGES = ("train", "validation", "test", "predict")


def stageless_calls(pl) -> dict[str, Any]:
    """``stageless-hook-calls`` (see the module docstring)."""
    import torch
    from torch.utils.data import DataLoader

    calls: list[list[str]] = []

    def recorder(owner: str, hook: str):
        def hook_method(self, *args, **kwargs):
            trainer = self.trainer if owner == "LightningModule" else args[0]
            calls.append([owner, hook, trainer.state.stage.value if trainer.state.stage is not None else "none"])

        hook_method.__name__ = hook
        return hook_method

    epoch_hooks = [f"on_{stage}_epoch_{end}" for stage in STAGES for end in ("start", "end")]
    batch_hooks = [f"on_{stage}_batch_{end}" for stage in STAGES for end in ("start", "end")]
    module_hooks = {h: recorder("LightningModule", h) for h in (*STAGELESS["LightningModule"], *epoch_hooks)}
    callback_names = [f"{kind}_{end}" for kind in STAGELESS["Callback"] for end in ("start", "end")]
    callback_hooks = {h: recorder("Callback", h) for h in (*callback_names, *epoch_hooks, *batch_hooks)}
    net: Any = _module_class(pl)  # a class of the release under test: its type is known at run time only

    def loader():
        return DataLoader(torch.randn(probes.EVAL_BATCHES * probes.BATCH_SIZE, probes.FEATURES), batch_size=2)

    evaluation = {
        "validation_step": lambda self, batch, batch_idx: self.layer(batch).pow(2).mean(),
        "test_step": lambda self, batch, batch_idx: self.layer(batch).pow(2).mean(),
        "predict_step": lambda self, batch, batch_idx, dataloader_idx=0: self.layer(batch),
        "val_dataloader": lambda self: loader(),
        "test_dataloader": lambda self: loader(),
        "predict_dataloader": lambda self: loader(),
    }
    module_class = type("Observed", (net,), {**evaluation, **module_hooks})
    callback_class = type("Watcher", (pl.Callback,), callback_hooks)
    runs: dict[str, Any] = {}
    for run in ("fit", "validate", "test", "predict"):
        calls.clear()
        arguments = probes._trainer_kwargs(pl)
        arguments.update(max_epochs=2, callbacks=[callback_class()])
        try:
            getattr(pl.Trainer(**arguments), run)(module_class())
        except Exception as error:  # noqa: BLE001 - what the release raises is the record
            runs[run] = {"error": f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"}
            continue
        runs[run] = {"calls": [list(call) for call in calls]}
    return {"runs": runs}


def ddp_outputs(pl) -> dict[str, Any]:
    """``training-step-returning-a-tensor``
        1 epoch whose ``training_step`` returns the bare loss tensor: each entry of the ``training_epoch_end`` list --
        ``entry_type`` (class name), ``entry_keys`` (a dict's keys), ``loss_requires_grad``.
    ``validation-step-returning-none``
        one ``trainer.validate`` over 4 batches whose ``validation_step`` returns ``None`` for batch 1 and its loss
        otherwise: ``entries`` of the ``validation_epoch_end`` list, of ``batches``.
    ``ddp-training-epoch-end-outputs`` (see the module docstring)."""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    registry = getattr(getattr(pl, "strategies", None), "StrategyRegistry", None)
    if registry is None or "ddp_fork" not in registry.available_strategies():
        return {"skipped": "this release has no ddp_fork strategy"}
    folder = tempfile.mkdtemp()

    class PerRank(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(probes.FEATURES, 1)

        def training_step(self, batch, batch_idx):
            features, numbers = batch
            return {"loss": self.layer(features).pow(2).mean(), "numbers": numbers}

        def training_epoch_end(self, outputs):
            numbers = sorted(int(n) for entry in outputs for n in entry["numbers"])
            with open(os.path.join(folder, f"{self.global_rank}.json"), "w", encoding="utf-8") as file:
                json.dump({"entries": len(outputs), "samples": numbers}, file)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self):
            data = TensorDataset(torch.randn(12, probes.FEATURES), torch.arange(12))
            return DataLoader(data, batch_size=2)

    _fit(pl, PerRank(), 1, strategy="ddp_fork", devices=2, accelerator="cpu")
    ranks = {}
    for rank in range(2):
        with open(os.path.join(folder, f"{rank}.json"), encoding="utf-8") as file:
            ranks[str(rank)] = json.load(file)
    shared = set(ranks["0"]["samples"]) & set(ranks["1"]["samples"])
    return {"world_size": 2, "samples": 12, "per_rank": ranks, "ranks_share_samples": bool(shared)}


OBSERVATIONS = {
    "training-epoch-end-outputs-lifetime": lifetime,
    "training-epoch-end-outputs-contents": contents,
    "outputs-kept-without-training-epoch-end": kept_without_hook,
    "training-step-returning-a-tensor": bare_tensor,
    "validation-step-returning-none": none_in_validation,
    "ddp-training-epoch-end-outputs": ddp_outputs,
    "stageless-hook-calls": stageless_calls,
}


def observe_all() -> list[dict[str, Any]]:
    """Every observation on the installed Lightning (one that still has ``training_epoch_end``), seeded."""
    import torch

    pl, _, _ = probes.import_lightning()
    records = []
    for name, observe in OBSERVATIONS.items():
        torch.manual_seed(0)
        records.append({"pattern": name, **observe(pl)})
    return records
