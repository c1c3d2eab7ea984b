"""The Trainer configuration a run really ran in, read off the ``Trainer`` and the module, and recorded as it ran.

A claim of ``data/claims.toml`` names the configuration its evidence ran in (its ``scope``); the build compares that
with what each piece of evidence recorded here. A *run* is one call of ``trainer.fit``, ``validate``, ``test`` or
``predict``; its configuration (:func:`configuration`) is one value per axis of :data:`AXES`:

``processes``
    ``trainer.world_size``: how many processes ran it;
``strategy``
    ``None`` in one process without a distributed strategy; for a ``DDPStrategy``, ``"ddp_fork"`` when its launcher
    forks (the launcher's public ``is_interactive_compatible``: of Lightning's launchers, only the forking one works
    in Jupyter), ``"ddp_spawn"`` in a spawned worker, ``"ddp"`` otherwise (a parent that spawned or started scripts
    reads as ``"ddp"``). Read from the launcher, not from the process: the build's examples run in worker processes
    of their own (a process-type test read the process that started a ``ddp_fork`` run inside one as ``"ddp"``);
``precision``
    ``str(trainer.precision)`` (``"32-true"``; ``"32"`` on 1.x, which held an int);
``optimization``
    ``"automatic"`` or ``"manual"``: the module's ``automatic_optimization``;
``stage``
    the Trainer call (``fit``, ``validate``, ``test``, ``predict``);
``accumulate_grad_batches``
    ``trainer.accumulate_grad_batches`` as the run starts;
``dataloaders``
    how many dataloaders the run's evaluation loop had (:func:`dataloaders`): validation's for ``fit`` and
    ``validate``, test's, predict's -- the loaders whose batches carry a ``dataloader_idx`` (training's are combined
    into one batch); ``None`` when the run set up none (a ``fit`` without validation, a run refused before its loaders
    were made);
``return_predictions``
    in a ``predict`` run, what the ``Trainer.predict`` call asked for, or the loop's ``return_predictions``; else
    ``None``.

The gallery's pages are recorded without touching their code: :func:`callbacks` is a factory of Lightning's
documented entry-point group ``lightning.pytorch.callbacks_factory`` (Lightning calls it in every ``Trainer()`` and
adds what it returns to the trainer's callbacks). Only the build's example processes see the entry point: its
metadata lives in ``docs/_ext/build_mechanics/run_recorder`` (a ``*.dist-info`` folder that
:mod:`build_mechanics.run_records` puts on ``sys.path`` before each example), never in this package's own
metadata, so an installed ``lightning-migrate`` adds nothing to a user's Trainer. The factory returns a
:class:`RunRecorder` only when :data:`DIRECTORY` names a folder. The recorder appends one JSON line per run to
``<folder>/<page>.jsonl`` (``page``: the gallery script's path from the project's root, found on the call stack,
with ``line``: the line of the page's top-level statement that started the run), in rank 0, when the run ends
(``teardown``: its loaders are made by then, which ``setup`` comes before) or at ``on_exception`` (a run refused
before ``setup`` -- Lightning checks a module before it calls ``setup`` -- or after; a ``ddp_fork`` worker that
refuses a call is heard of in the process that started it).

The probes record the same configuration in each record (:func:`configuration`, called on their own Trainer).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import traceback
from pathlib import Path
from typing import Any

from migration_guide import source_tree

#: The axes of a run's configuration, in the order a claim's scope marker prints them.
AXES = (
    "processes",
    "strategy",
    "precision",
    "optimization",
    "stage",
    "accumulate_grad_batches",
    "return_predictions",
    "dataloaders",
)
#: The environment variable naming the folder the recorder writes to (unset: no recorder).
DIRECTORY = "GUIDE_RUN_CONFIGURATIONS"
#: The environment variable naming the project whose ``gallery`` folder holds the pages (unset: this checkout).
PROJECT = "GUIDE_RUN_PROJECT"


def project_root() -> Path:
    """The root of the project being built: a page is a ``.py`` file under its ``gallery`` folder."""
    return Path(os.environ.get(PROJECT) or source_tree.ROOT).resolve()


def _strategy(trainer: Any) -> str | None:
    strategy: Any = getattr(trainer, "strategy", None) or getattr(trainer, "training_type_plugin", None)
    if not any("DDP" in cls.__name__ for cls in type(strategy).__mro__):  # a framework's subclass of DDPStrategy too
        return None
    launcher = getattr(strategy, "launcher", None)
    if launcher is not None and launcher.is_interactive_compatible:
        return "ddp_fork"  # of Lightning's launchers, the one that forks is the one that works in Jupyter
    return "ddp_spawn" if type(multiprocessing.current_process()).__name__ == "SpawnProcess" else "ddp"


def requested_return_predictions() -> bool | None:
    """The ``return_predictions`` the page passed to ``Trainer.predict``, read from that call's frame on the stack
    (``None``: no ``predict`` call is running, or it passed none). A ``predict`` refused before the loop is set up
    (``ddp_fork`` with ``return_predictions=True``) leaves no other trace of it."""
    import inspect

    for info in inspect.stack(0):
        local = info.frame.f_locals
        if (
            info.function == "predict"
            and "return_predictions" in local
            and type(local.get("self")).__name__ == "Trainer"
        ):
            return local["return_predictions"]
    return None


#: The ``Trainer`` property that lists, one entry per dataloader, the batches of each stage's evaluation loop (public on
#: every release the project records, 1.4.9 to 2.x).
LOADER_BATCHES = {
    "fit": "num_val_batches",
    "validate": "num_val_batches",
    "test": "num_test_batches",
    "predict": "num_predict_batches",
}


def dataloaders(trainer: Any, stage: str) -> int | None:
    """How many dataloaders the evaluation loop of a ``stage`` run had (:data:`LOADER_BATCHES`: its list holds one
    entry per loader once the loop made them); ``None`` when it made none yet, or holds none (a ``fit`` whose
    validation never ran). Read when the run ends or fails: the loaders are made after ``setup``."""
    name = LOADER_BATCHES.get(stage)
    counts = getattr(trainer, name, None) if name else None
    return len(counts) if isinstance(counts, list | tuple) and counts else None


def configuration(trainer: Any, module: Any, stage: str) -> dict[str, Any]:
    """The configuration of the run ``trainer`` is making of ``module`` in ``stage`` (see the module docstring).

    Read with public attributes only, which every release the project records has (1.4.9 to 2.x); in a ``predict``
    run, ``return_predictions`` is the loop's, or what the call asked for (:func:`requested_return_predictions`).
    """
    predict_loop = getattr(trainer, "predict_loop", None)
    asked = requested_return_predictions() if stage == "predict" else None
    return {
        "processes": int(trainer.world_size),
        "strategy": _strategy(trainer),
        "precision": str(trainer.precision),
        "optimization": "automatic" if module is None or module.automatic_optimization else "manual",
        "stage": stage,
        "accumulate_grad_batches": int(trainer.accumulate_grad_batches)
        if isinstance(trainer.accumulate_grad_batches, int)
        else None,
        "return_predictions": bool(asked)
        if asked is not None
        else bool(predict_loop.return_predictions)
        if stage == "predict" and predict_loop is not None and predict_loop.return_predictions is not None
        else None,
        "dataloaders": dataloaders(trainer, stage),
    }


def page_frame(stack: list[traceback.FrameSummary] | None = None) -> tuple[str, int] | None:
    """``(page, line)``: the gallery script on the call stack (its path from the project's root) and the line of its
    outermost frame -- the page's top-level statement that started the run; ``None`` when no page is on the stack."""
    root = project_root()
    for frame in stack if stack is not None else traceback.extract_stack():
        path = Path(frame.filename).resolve()
        if path.suffix == ".py" and path.is_relative_to(root / "gallery"):
            return path.relative_to(root).as_posix(), int(frame.lineno or 0)
    return None


def record_path(directory: Path, page: str) -> Path:
    """Where the runs of ``page`` (``gallery/x/y.py``) are recorded under ``directory``."""
    return directory / f"{page}.jsonl"


def read(directory: Path, page: str) -> list[dict[str, Any]] | None:
    """The recorded runs of ``page``, in the order they ran; ``None`` when the page recorded none (it did not run
    since the recorder existed, or ran no Trainer: then it writes an empty file)."""
    path = record_path(directory, page)
    if not path.is_file():
        return None
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def start_page(directory: Path, name: str) -> None:
    """Before a page runs: its record (found by the script's file name, unique in the gallery) starts empty."""
    root = project_root()
    for script in (root / "gallery").rglob(name):
        path = record_path(directory, script.relative_to(root).as_posix())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")


def _recorder_class() -> type:
    try:
        from lightning.pytorch import Callback
    except ImportError:  # pragma: no cover - the 1.x package
        from pytorch_lightning import Callback

    class RunRecorder(Callback):
        """Appends the configuration of each run of a gallery page to its record (see the module docstring)."""

        def __init__(self, directory: Path) -> None:
            self.directory = directory

        def _record(self, trainer: Any, module: Any, stage: str) -> None:
            where = page_frame()
            if where is None or getattr(trainer, "global_rank", 0) != 0:
                return
            page, line = where
            entry = {"page": page, "line": line, **configuration(trainer, module, stage)}
            path = record_path(self.directory, page)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry) + "\n")

        def teardown(self, trainer: Any, pl_module: Any, stage: Any) -> None:
            self._record(trainer, pl_module, str(getattr(stage, "value", stage)))  # a TrainerFn on 2.x

        def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
            # a run that failed, before setup or after: in this process, or in the workers (the process that started
            # them hears of it here too, so a run the workers had set up is recorded twice, the same configuration)
            self._record(trainer, pl_module, str(trainer.state.fn.value))

    return RunRecorder


def callbacks() -> list[Any]:
    """The factory of the entry point (see the module docstring): a :class:`RunRecorder` when :data:`DIRECTORY` is
    set, else nothing."""
    directory = os.environ.get(DIRECTORY)
    return [_recorder_class()(Path(directory))] if directory else []


#: What a configuration axis holds when a run does not set it (a ``Trainer()``'s defaults; 1.x named precision "32").
DEFAULTS: dict[str, Any] = {
    "processes": 1,
    "strategy": None,
    "precision": "32-true",
    "optimization": "automatic",
    "stage": None,
    "accumulate_grad_batches": 1,
    "return_predictions": None,
    "dataloaders": None,
}
PRECISION_NAMES = {"32": "32-true", "16": "16-mixed", "bf16": "bf16-mixed", "64": "64-true"}


def value(run: dict[str, Any], axis: str) -> Any:
    """A run's value on ``axis``, its default when the run did not record it (``return_predictions``: ``True`` in a
    ``predict`` run, Lightning's default in one process), precision by its 2.x name."""
    if axis == "return_predictions" and run.get("stage") == "predict" and run.get(axis) is None:
        return True
    found = run.get(axis, DEFAULTS[axis])
    return PRECISION_NAMES.get(str(found), found) if axis == "precision" else found


def default(axis: str) -> Any:
    """What a marker that does not name ``axis`` reads as (``return_predictions``: Lightning's default, ``True``;
    ``dataloaders``: one, the loader a stage has unless given several)."""
    return {"return_predictions": True, "dataloaders": 1}.get(axis, DEFAULTS.get(axis))


def scenario_configurations(scenario: Any) -> list[dict[str, Any]]:
    """The runs of a scenario of the matrix (:class:`migration_guide.scenarios.space.Scenario`), one per Trainer call,
    with the configuration the harness gives it: its ``strategy`` and ``devices``, its Trainer's ``precision`` and
    ``accumulate_grad_batches`` (``None`` under the accumulation scheduler), manual optimization for a manual
    ``train_step``, ``return_predictions=False`` for a distributed ``predict`` (the harness passes it there), and the
    count of evaluation loaders its ``data.eval_loaders`` gives (``"varies"`` where it changes between epochs and
    calls)."""
    trainer = scenario.trainer
    scheduled = "accumulation-scheduler" in scenario.settings.get("callbacks", ())
    base = {
        "processes": scenario.world_size,
        "strategy": scenario.settings["strategy"],
        "precision": str(trainer.get("precision", DEFAULTS["precision"])),
        "optimization": "manual" if scenario.values.get("train_step", "").startswith("manual") else "automatic",
        "accumulate_grad_batches": None if scheduled else int(trainer.get("accumulate_grad_batches", 1)),
        "dataloaders": scenario.data.get("eval_loaders"),  # 1, 2, or "varies" (between epochs and calls)
    }
    return [
        {
            **base,
            "stage": call.lstrip("+"),
            "return_predictions": (not scenario.distributed) if call.lstrip("+") == "predict" else None,
        }
        for call in scenario.runs
    ]


def recorded_configuration(
    section: str, pattern: str, record: dict[str, Any], fields: dict[str, Any]
) -> dict[str, Any]:
    """The configuration of a recorded run of a release (``data/compat/<release>.json``): the ``configuration`` its
    record holds, or, for a record made before the recorder held one, the configuration its recording code gives
    every such run -- the probes' own ``Trainer`` (:func:`migration_guide.probes._trainer_kwargs`: one CPU
    device, automatic optimization, the release's default precision, the pattern's Trainer call), an observation's
    ``world_size`` (``ddp_fork``, as :mod:`migration_guide.observations` runs it), a rewrite run's Trainer
    arguments (:data:`migration_guide.rewrite_equivalence.CONFIGS`, the run the compared fields name) -- marked
    ``declared``: read from the recording code, not from the run."""
    if "configuration" in record:
        return dict(record["configuration"])
    found: dict[str, Any] = {"processes": 1, "strategy": None, "declared": True}
    if section == "probes":
        from lightning_migrate import registry

        found["stage"] = registry.get(pattern).run
        found["dataloaders"] = 1  # the probes' module makes one loader per stage (probes._namespace)
    elif section == "observations" and int(record.get("world_size", 1)) > 1:
        found.update(processes=int(record["world_size"]), strategy="ddp_fork")
    elif section == "rewrites":
        from migration_guide.rewrite_equivalence import CONFIGS

        names = {name.split(".")[1] for name in fields if name.startswith("runs.")}
        runs = {run: config for stage in CONFIGS.values() for run, config in stage.items()}
        if len(names) == 1 and next(iter(names)) in runs:
            config = runs[next(iter(names))]
            found["accumulate_grad_batches"] = int(config.get("trainer", {}).get("accumulate_grad_batches", 1))
            if "return_predictions" in config.get("predict_kwargs", {}):
                found.update(stage="predict", return_predictions=config["predict_kwargs"]["return_predictions"])
    return found
