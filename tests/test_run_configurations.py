"""The configuration a run records (src/migration_guide/run_configurations.py), read off stand-in objects."""

from __future__ import annotations

import multiprocessing

from migration_guide import run_configurations


class ForkLauncher:
    is_interactive_compatible = True  # Lightning's forking launcher: the one that works in Jupyter


class ScriptLauncher:
    is_interactive_compatible = False


class DDPStrategy:
    def __init__(self, launcher):
        self.launcher = launcher


class Trainer:
    def __init__(self, launcher):
        self.strategy = DDPStrategy(launcher)


def strategy_of(forks: bool) -> str | None:
    return run_configurations._strategy(Trainer(ForkLauncher() if forks else ScriptLauncher()))


def test_a_ddp_fork_run_started_inside_a_worker_process_reads_as_ddp_fork():
    """The build's examples run in worker processes of their own: the process that starts a ddp_fork run (and hears
    of a call its workers refused) is not the main process, and still reads ``ddp_fork``."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.map(strategy_of, [True, False]) == ["ddp_fork", "ddp_spawn"]
    assert strategy_of(True) == "ddp_fork" and strategy_of(False) == "ddp"
    assert run_configurations._strategy(object()) is None  # no DDP strategy: one process


class FrameworkStrategy(DDPStrategy):
    """A framework's own strategy, a subclass of Lightning's ``DDPStrategy`` (as on the replaced-batch-sampler page)."""


def test_a_subclass_of_the_ddp_strategy_reads_as_its_launcher_says():
    trainer = Trainer(ForkLauncher())
    trainer.strategy = FrameworkStrategy(ForkLauncher())
    assert run_configurations._strategy(trainer) == "ddp_fork"


class Loaders:
    """The ``Trainer`` properties that list each evaluation loop's batches, one entry per loader."""

    num_val_batches = [4, 2]
    num_test_batches = [3]
    num_predict_batches: list[int] = []


def test_the_number_of_dataloaders_of_a_run_is_its_evaluation_loops():
    """fit and validate count the validation loaders, test and predict their own; a loop that made none gives
    ``None``."""
    counts = {
        stage: run_configurations.dataloaders(Loaders(), stage) for stage in ("fit", "validate", "test", "predict")
    }
    assert counts == {"fit": 2, "validate": 2, "test": 1, "predict": None}
    assert run_configurations.dataloaders(object(), "fit") is None
