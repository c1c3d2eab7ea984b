"""Progress of the scenario matrix and of the exploration: cells done / total and the time left, at most every 10 s
of a clock the test drives (no sleep, no Lightning: fake cells and a fake cell runner)."""

from __future__ import annotations

import io

import pytest

from migration_guide.scenarios import explore as explore_module
from migration_guide.scenarios import run_cells
from migration_guide.scenarios.progress import PREFIX, Progress, duration


class Clock:
    """A clock that moves only when a cell runs (``tick`` seconds per cell)."""

    def __init__(self, tick: float):
        self.now, self.tick = 1000.0, tick

    def __call__(self) -> float:
        return self.now


def test_durations_read_as_people_read_them():
    assert [duration(s) for s in (0, 4.4, 59.6, 60, 185, 3599, 3600, 3725)] == [
        "0 s",
        "4 s",
        "1 min 00 s",
        "1 min 00 s",
        "3 min 05 s",
        "59 min 59 s",
        "1 h 00 min",
        "1 h 02 min",
    ]


def test_the_matrix_prints_done_total_and_time_left_every_ten_seconds_at_most():
    clock, lines = Clock(tick=4.0), []
    cells = [(f"recipe-{n % 2}", f"scenario-{n}") for n in range(7)]
    ran = []

    def run(recipe, scenario, root, declared):  # a fake cell: 4 s of the test's clock
        clock.now += clock.tick
        ran.append((recipe, scenario))
        return {"recipe": recipe, "scenario": scenario}

    def progress(total: int) -> Progress:
        return Progress(total, clock=clock, out=lines.append)

    more = [("recipe-9", "generated-1")]  # the covering set, known once the named cells are submitted
    results = run_cells(cells, jobs=1, then=lambda: more, progress=progress, run=run)
    assert results == [{"recipe": r, "scenario": s} for r, s in [*cells, *more]] and ran == [*cells, *more]
    # cells end at 4, 8, 12, ... 32 s: a line once 10 s passed since the last one, and the last cell's
    assert lines == [
        f"{PREFIX}3 / 8 cells, 12 s so far, about 20 s left",
        f"{PREFIX}6 / 8 cells, 24 s so far, about 8 s left",
        f"{PREFIX}8 / 8 cells, 32 s so far, done",
    ]


def test_the_time_left_counts_from_the_first_cell_not_from_the_workers_start():
    """The first cell waits for the workers to start (imports, about 10 s); the cells after it take 0.1 s each. An
    estimate from the mean over all cells said hours; the one from the cells after the first says seconds."""
    clock, lines = Clock(tick=0.0), []
    tracker = Progress(1001, clock=clock, out=lines.append)
    clock.now += 10.0
    tracker.advance()
    assert lines == [f"{PREFIX}1 / 1001 cells, 10 s so far"]  # no estimate from one cell
    for _ in range(100):
        clock.now += 0.1
        tracker.advance()
    assert tracker.line() == "101 / 1001 cells, 20 s so far, about 1 min 30 s left"  # 900 cells of 0.1 s


def test_a_fast_matrix_prints_only_its_last_line():
    clock, lines = Clock(tick=0.5), []
    tracker = Progress(5, clock=clock, out=lines.append)
    for _ in range(5):
        clock.now += clock.tick
        tracker.advance()
    assert lines == [f"{PREFIX}5 / 5 cells, 2 s so far, done"]
    with pytest.raises(ValueError, match="a negative total of cells: -1"):
        Progress(-1)


def test_exploration_prints_its_budget_left_every_ten_seconds_at_most(monkeypatch):
    clock = Clock(tick=3.0)

    def fake_run_cells(cells, root, jobs, declared=(), scheduler=None):
        clock.now += clock.tick * len(cells)
        return [
            {"recipe": recipe.id, "scenario": scenario.id, "outcome": "holds", "expected": "holds"}
            for recipe, scenario in cells
        ]

    class Item:
        def __init__(self, id):
            self.id, self.page = id, f"gallery/{id}.py"

    class Space:
        recipes = [Item("r")]
        warnings = ()

    draws = (("r", Item(f"s{n}")) for n in range(1000))
    monkeypatch.setattr(explore_module, "run_cells", fake_run_cells)
    monkeypatch.setattr(explore_module, "random_cells", lambda space, seed: draws)
    out = io.StringIO()
    ran, found = explore_module.explore(Space(), None, minutes=1, seed=0, jobs=1, out=out, clock=clock)
    # batches of 4 cells, 12 s each: a line after every batch (12 s >= 10 s), the last once the minute is spent
    assert (ran, found) == (20, 0)
    assert out.getvalue().splitlines() == [
        "explore: 4 cells, 0 not as declared, 12 s so far, 48 s of the budget left",
        "explore: 8 cells, 0 not as declared, 24 s so far, 36 s of the budget left",
        "explore: 12 cells, 0 not as declared, 36 s so far, 24 s of the budget left",
        "explore: 16 cells, 0 not as declared, 48 s so far, 12 s of the budget left",
        "explore: 20 cells, 0 not as declared, 1 min 00 s so far, budget spent",
    ]


def _pid(recipe, scenario, root, declared):
    """A fake cell that says which process ran it."""
    import os

    return os.getpid()


def test_a_few_known_cells_run_in_this_process_and_a_matrix_with_more_to_come_in_workers():
    import os

    from migration_guide.scenarios import IN_PROCESS_BELOW

    few = [("recipe", f"scenario-{n}") for n in range(3)]
    assert run_cells(few, run=_pid) == [os.getpid()] * 3  # no worker to start for three cells
    assert run_cells(few, jobs=2, run=_pid)[0] != os.getpid()  # asked for, workers run them
    many = [("recipe", f"scenario-{n}") for n in range(IN_PROCESS_BELOW)]
    assert os.getpid() not in run_cells(many[:1], then=lambda: many[1:], run=_pid)  # a covering set may follow


def _scenario(recipe, scenario, root, declared):
    """A fake cell that returns its scenario, in a worker."""
    return scenario


def test_the_matrix_counts_its_time_from_the_first_cells_while_the_covering_set_is_made():
    """The named scenarios' cells run while the covering set is generated: the time spent counts from them, and the
    total grows by the generated cells (the build printed "1807 / 2228 cells, 19 s so far" when its first line came
    after the covering set)."""
    clock, lines = Clock(tick=0.0), []

    def then():
        clock.now += 30.0  # making the covering set: 30 s of the test's clock while the first cells run
        return [("recipe", "generated")]

    def progress(total: int) -> Progress:
        return Progress(total, clock=clock, out=lines.append)

    results = run_cells([("recipe", "named")], jobs=2, then=then, run=_scenario, progress=progress)
    assert results == ["named", "generated"]
    assert lines[-1] == f"{PREFIX}2 / 2 cells, 30 s so far, done"


def test_cells_count_when_they_finish_even_while_the_covering_set_is_made():
    """Each cell counts when it finishes, also while ``then`` is still making the covering set (about 250 s when it
    is not kept): counted only after ``then``, the cells finished meanwhile came in one burst, and the estimate of the
    time left took them for instant ("19 s left" where 10 min were). No line says "done" before ``then``'s cells are
    known."""
    import time

    clock, lines, made = Clock(tick=0.0), [], []

    def progress(total: int) -> Progress:
        made.append(Progress(total, clock=clock, out=lines.append, every=0.0))
        return made[0]

    def then():
        deadline = time.monotonic() + 60
        while made[0].done < 2 and time.monotonic() < deadline:  # the two named cells finish in the workers
            time.sleep(0.05)
        assert made[0].done == 2, "the named cells were not counted while the covering set was being made"
        assert not [line for line in lines if "done" in line], lines
        return [("recipe", "generated")]

    results = run_cells([("recipe", "a"), ("recipe", "b")], jobs=2, then=then, run=_scenario, progress=progress)
    assert results == ["a", "b", "generated"]
    assert lines[-1] == f"{PREFIX}3 / 3 cells, 0 s so far, done"
    assert f"{PREFIX}2 / 2 cells, 0 s so far, more to come" in lines


def test_counts_are_never_negative():
    tracker = Progress(3, out=[].append)
    with pytest.raises(ValueError, match="a negative count of cells: -1"):
        tracker.advance(-1)
    with pytest.raises(ValueError, match="a negative count of cells: -2"):
        tracker.extend(-2)
