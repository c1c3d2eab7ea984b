"""Witnesses of the warnings the site's build declares: small runs that record every warning they emit.

The build accepts a few warnings, each declared with its reason (:mod:`migration_guide.declared_warnings`);
every other warning fails it. A declared warning is a claim about Lightning (or torch, ipykernel): "this run emits
this warning". Each declaration names its *witness*, one of :data:`WITNESSES`, and the build runs them all in one
process (``python -m migration_guide.warning_witnesses --output FILE``) and fails when a declared warning is not
among what its witness recorded: a warning that stopped being emitted must not keep hiding anything.

Each witness runs under ``warnings.simplefilter("always")`` and records ``{"category": [class names of the
warning's category and its bases], "message": str}`` per warning, in the order emitted. Warnings emitted in the
processes of a multi-process run are recorded by a callback in each process (:class:`RecordWarnings`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from migration_guide import probes


def _entry(category: type, message: str) -> dict[str, Any]:
    names = [klass.__name__ for klass in category.__mro__ if issubclass(klass, Warning)]
    return {"category": names, "message": message}


def _quiet_trainer(pl, **kwargs):
    arguments = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False}
    arguments.update(enable_model_summary=False, **kwargs)
    return pl.Trainer(**arguments)


def fit(pl) -> None:
    """One epoch of one training batch, logged by a ``CSVLogger`` (fewer batches than ``log_every_n_steps``), no
    validation."""
    from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
    from lightning.pytorch.loggers import CSVLogger
    from torch.utils.data import DataLoader

    trainer = pl.Trainer(
        max_epochs=1,
        limit_val_batches=0,
        logger=CSVLogger(os.getcwd()),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(BoringModel(), DataLoader(RandomDataset(32, 8), 8))


def fit_with_step_returning_none(pl) -> None:
    """One epoch of two batches whose ``training_step`` returns ``None`` for batch 1."""
    from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
    from torch.utils.data import DataLoader

    class SkipsBatchOne(BoringModel):
        def training_step(self, batch, batch_idx):
            return None if batch_idx == 1 else super().training_step(batch, batch_idx)

    trainer = _quiet_trainer(pl, max_epochs=1, limit_val_batches=0)
    trainer.fit(SkipsBatchOne(), DataLoader(RandomDataset(32, 16), 8))


def every_stage_on_eight_cpus(pl) -> None:
    """``fit`` (training and validation), ``test`` and ``predict`` with ``num_workers=0`` loaders, on a machine
    that shows the process 8 CPUs (``os.sched_getaffinity`` and ``os.cpu_count``, patched for this run): what
    Lightning says about the loaders' workers on a machine with more than two CPUs per device."""
    from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
    from torch.utils.data import DataLoader

    with mock.patch("os.sched_getaffinity", return_value=set(range(8)), create=True):
        with mock.patch("os.cpu_count", return_value=8):
            trainer = _quiet_trainer(pl, max_epochs=1, num_sanity_val_steps=0)
            model, loader = BoringModel(), DataLoader(RandomDataset(32, 8), 8)
            trainer.fit(model, loader, loader)
            trainer.test(model, loader, verbose=False)
            trainer.predict(model, loader)


class RecordWarnings:
    """A callback factory: records, in every process of a run, the warnings emitted between ``setup`` and
    ``teardown`` into ``<folder>/<pid>.json`` (each process of ``ddp_fork`` has its own)."""

    @staticmethod
    def make(pl, folder: Path):
        class Recorder(pl.Callback):
            def setup(self, trainer, pl_module, stage):
                self.catcher = warnings.catch_warnings(record=True)
                self.caught = self.catcher.__enter__()
                warnings.simplefilter("always")

            def teardown(self, trainer, pl_module, stage):
                self.catcher.__exit__(None, None, None)
                entries = [_entry(w.category, str(w.message)) for w in self.caught]
                path = folder / f"{os.getpid()}-{stage}.json"
                path.write_text(json.dumps(entries), encoding="utf-8")

        return Recorder()


def ddp_on_two_processes(pl) -> list[dict[str, Any]]:
    """``fit`` then ``test`` with ``ddp_fork`` on 2 CPU processes; the module logs an epoch-level value without
    ``sync_dist`` and calls ``self.all_gather`` at the end of each validation and test epoch. Returns the warnings
    every process recorded."""
    from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
    from torch.utils.data import DataLoader

    class LogsAndGathers(BoringModel):
        def validation_step(self, batch, batch_idx):
            loss = self.step(batch)
            self.log("loss", loss)  # on_epoch in validation, sync_dist left False
            return loss

        def test_step(self, batch, batch_idx):
            return self.validation_step(batch, batch_idx)

        def on_validation_epoch_end(self):
            self.all_gather(self.layer.bias.detach())

        def on_test_epoch_end(self):
            self.on_validation_epoch_end()

    with tempfile.TemporaryDirectory() as folder:
        loader = DataLoader(RandomDataset(32, 16), 4)
        for method in ("fit", "test"):
            trainer = _quiet_trainer(
                pl,
                max_epochs=1,
                num_sanity_val_steps=0,
                strategy="ddp_fork",
                devices=2,
                accelerator="cpu",
                callbacks=[RecordWarnings.make(pl, Path(folder))],
            )
            model = LogsAndGathers()
            if method == "fit":
                trainer.fit(model, loader, loader)
            else:
                trainer.test(model, loader, verbose=False)
        return [entry for path in sorted(Path(folder).glob("*.json")) for entry in json.loads(path.read_text())]


def notebook_kernel_shutdown(pl) -> list[dict[str, Any]]:
    """Start the ``python3`` Jupyter kernel, run one cell and shut the kernel down as nbclient does (a shutdown
    request, not a kill). The kernel is another process: it runs with its warnings shown (``PYTHONWARNINGS=always``),
    and shows them, as it shows anything written to its standard error, in ``stream`` messages on its IOPub
    channel, which are read back here."""
    import builtins
    import re
    import subprocess
    from queue import Empty

    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(
        env=dict(os.environ, PYTHONWARNINGS="always"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    client = manager.client()
    client.start_channels()
    texts = []
    try:
        client.wait_for_ready(timeout=60)
        client.execute("1 + 1")
        manager.shutdown_kernel(now=False)
        with contextlib.suppress(Empty):
            while True:
                message = client.get_iopub_msg(timeout=2)
                if message["msg_type"] == "stream" and message["content"]["name"] == "stderr":
                    texts.append(message["content"]["text"])
    finally:
        client.stop_channels()
        if manager.is_alive():
            manager.shutdown_kernel(now=True)
    # Python shows a warning as "<file>:<line>: <Category>: <message>"
    found = re.findall(r"^\S.*?:\d+: (\w+): (.*)$", "".join(texts), flags=re.M)
    return [_entry(getattr(builtins, name, Warning), message) for name, message in found]


#: name -> run. A run records what it emits itself, or returns the warnings other processes recorded.
WITNESSES: dict[str, Callable[[Any], Any]] = {
    "fit": fit,
    "fit-with-a-step-returning-none": fit_with_step_returning_none,
    "every-stage-on-eight-cpus": every_stage_on_eight_cpus,
    "ddp-on-two-processes": ddp_on_two_processes,
    "notebook-kernel-shutdown": notebook_kernel_shutdown,
}


def run(name: str) -> list[dict[str, Any]]:
    """Run the witness ``name``; return every warning it emitted (see the module docstring).

    Raises:
        KeyError: no witness of that name.
    """
    witness = WITNESSES[name]
    pl, _, _ = probes.import_lightning()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):
            returned = witness(pl)
    recorded = [_entry(w.category, str(w.message)) for w in caught]
    return recorded + list(returned or ())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", "-o", type=Path, required=True)
    parser.add_argument("witnesses", nargs="*", help="names (default: all)")
    args = parser.parse_args(argv)
    probes._quiet_lightning()
    result = {name: run(name) for name in (args.witnesses or WITNESSES)}
    tmp = args.output.with_suffix(args.output.suffix + ".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    tmp.replace(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
