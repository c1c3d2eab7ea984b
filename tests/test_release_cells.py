"""Every recipe on every declared 2.x release: the release's cells meet each value of each recipe's domain at least
once, in cells expected to hold, with one multi-process cell per value and recipe; a cell that does not behave names
the release, the recipe and the scenario. And the pages use only what each release has."""

from __future__ import annotations

import collections
import json
import os
import textwrap

import pytest

from migration_guide import compat, release_api, scenarios
from migration_guide.scenarios import releases

#: The releases other than the build's own (the build runs the whole matrix on it).
OTHERS = [v for v, e in compat.load_matrix()["versions"].items() if e["group"] == "matrix" and v != "2.6.6"]


@pytest.fixture(scope="module")
def space():
    return scenarios.load_space()


@pytest.mark.parametrize("release", OTHERS)
def test_the_release_cells_meet_every_value_of_every_recipes_domain(space, release):
    cells = releases.release_cells(space, release)
    recipes = {r.id: r for r in space.recipes}
    assert {rid for rid, _ in cells} == set(recipes)
    for recipe in space.recipes:
        mine = [s for rid, s in cells if rid == recipe.id]
        met = {item for s in mine for item in s.values.items()}
        targets = releases.targets(space, recipe)
        assert set(targets) <= met, (recipe.id, set(targets) - met)
        assert all(recipe.expected(s) == "holds" for s in mine), recipe.id  # a value is proven where it holds
        multi = [t for t in targets if t[0] == releases.MULTI_PROCESS and space.axes["strategy"].values[t[1]].settings]
        assert sum(s.distributed for s in mine) == len(multi), recipe.id  # one cell per DDP value, no more
        # as few cells as the axis with the most values of the domain needs, within a few
        widest = max(collections.Counter(axis for axis, _ in targets).values())
        assert widest <= len(mine) <= widest + 2, (recipe.id, len(mine), widest)
    assert releases.release_cells(space, release) == cells  # generated, deterministic
    assert len({s.id for _, s in cells}) == len(cells)


def test_two_releases_meet_the_values_in_other_combinations(space):
    first, second = (releases.release_cells(space, release) for release in ("2.0.9", "2.2.5"))
    assert len(first) == len(second) or abs(len(first) - len(second)) < 10
    assert [s.values for _, s in first] != [s.values for _, s in second]


def test_a_cell_that_does_not_behave_names_the_release_the_recipe_and_the_scenario(tmp_path, monkeypatch):
    """A recipe without the empty-outputs guard, on a small space: its cell with a skipped batch fails, named."""
    from test_scenarios import OLD_HOOK_PAGE, small_project

    monkeypatch.setenv("PYTHONWARNINGS", "ignore")
    # set, then removed: the test's end removes what check_release sets (a delenv of a variable that is not set
    # restores nothing, and it reached a site build later in the same worker, whose cells torch then warned in)
    before = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "")
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    project = small_project(tmp_path, OLD_HOOK_PAGE.replace(", outputs):", "):"))
    small = scenarios.load_space(project / "matrix.toml")
    cells = releases.release_cells(small, "2.0.9")
    assert [s.values["train_step"] for _, s in cells].count("none-batch-1") == 1
    lines, count, _, record = releases.check_release("2.0.9", jobs=1, space=small, root=project)
    assert count == len(cells) == 2
    # on 2.0.9 a resumed run fails in torch.load's weights_only default (torch 2.6+) whatever the recipe: the cells
    # restore the default that release was written against
    assert os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] == "1"
    monkeypatch.undo()
    assert os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD") == before  # nothing leaks into the worker's later tests
    [line] = lines
    failing = next(s.id for _, s in cells if s.values["train_step"] == "none-batch-1")
    assert line.startswith(f"Lightning 2.0.9: r × {failing}: expected holds, got raises: KeyError: 'loss'")
    # the release's record keeps each cell's outcome, and that the recipe did not behave there
    [recipe] = small.recipes
    assert record == {
        "r": {
            "cells": releases.cells_digest(small, recipe, "2.0.9"),
            "runs": {
                s.id.removeprefix("release-2.0.9-r-"): ("raises" if s.id == failing else "holds") for _, s in cells
            },
            "as_declared": False,
        }
    }
    assert releases.checked_on(small, {"2.0.9": {"scenario_cells": record}}) == {"r": []}
    held = {"r": {**record["r"], "as_declared": True}}
    assert releases.checked_on(small, {"2.0.9": {"scenario_cells": held}, "2.2.5": {}}) == {"r": ["2.0.9"]}


def test_a_release_is_named_for_a_recipe_only_while_its_record_holds_the_current_cells(space):
    """A record of other cells (the recipe's domain changed since) names no release: the digest of the cells the
    file generates now differs; the committed records of 2.0.9 and 2.2.5 hold every recipe's current cells."""
    recipe = next(r for r in space.recipes if r.id == "callback_side")
    digest = releases.cells_digest(space, recipe, "2.0.9")
    assert digest != releases.cells_digest(space, recipe, "2.2.5")  # the release orders the values
    record = {"callback_side": {"cells": digest, "runs": {"1": "holds"}, "as_declared": True}}
    assert releases.checked_on(space, {"2.0.9": {"scenario_cells": record}})["callback_side"] == ["2.0.9"]
    stale = {"callback_side": {**record["callback_side"], "cells": "0" * 16}}
    assert releases.checked_on(space, {"2.0.9": {"scenario_cells": stale}})["callback_side"] == []
    committed = {v: json.loads(compat.data_path(v).read_text(encoding="utf-8")) for v in OTHERS}
    checked = releases.checked_on(space, committed)
    assert {rid: found for rid, found in checked.items() if found != OTHERS} == {}, "record them: nox -s record"
    for version in OTHERS:
        runs = sum(len(e["runs"]) for e in committed[version]["scenario_cells"].values())
        assert runs >= len(releases.release_cells(space, version))


def test_a_page_that_uses_what_the_release_lacks_is_named(tmp_path):
    page = tmp_path / "gallery" / "p.py"
    page.parent.mkdir()
    page.write_text(
        textwrap.dedent(
            """
            import lightning.pytorch as pl
            from lightning.pytorch import Trainer
            from lightning.pytorch.callbacks import ModelCheckpoint
            from lightning.pytorch.demos.boring_classes import BoringModel, NoSuchModel

            class M(BoringModel):
                def training_step(self, batch, batch_idx):
                    self.log("x", 1.0, on_epoch=True, sideways=True)

            pl.seed_everything(0)
            trainer = Trainer(max_epochs=1, max_wall_time=3)
            checkpoint = ModelCheckpoint(monitor="x", every_n_epochs=1, keep_best=True)
            other = pl.Trainer(devices=1)
            trainer.fit(M(), ckpt_path=None, datamodule=None, resume=True)
            """
        ),
        encoding="utf-8",
    )
    (tmp_path / "docs").mkdir()
    lines = [line.split(": ", 1)[1] for line in release_api.problems(tmp_path)]
    import lightning

    version = lightning.__version__
    assert lines == [
        "from lightning.pytorch.demos.boring_classes import NoSuchModel: "
        "lightning.pytorch.demos.boring_classes has no 'NoSuchModel'",
        f"LightningModule.log(sideways=...): Lightning {version} has no such argument",
        f"Trainer(max_wall_time=...): Lightning {version} has no such argument",
        f"ModelCheckpoint(keep_best=...): Lightning {version} has no such argument",
        f"Trainer.fit(resume=...): Lightning {version} has no such argument",
    ]


def test_the_pages_use_only_what_the_build_release_has():
    assert release_api.problems() == []


def test_a_trap_declared_for_some_releases_applies_on_those_only(tmp_path):
    """Lightning changed between releases: a declaration with ``releases`` is the expected outcome there, and the
    release's cells keep clear of it there only."""
    from test_scenarios import AXIS, CALLBACK_PAGE, RECIPE

    trap = (
        '[[recipe.r.declared]]\nvalues = { shuffle = "on" }\noutcome = "differs"\nreason = "r"\nsee = "index"\n'
        'releases = ["2.0.9"]\n'
    )
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "page.py").write_text(CALLBACK_PAGE, encoding="utf-8")
    (tmp_path / "matrix.toml").write_text(AXIS + RECIPE + trap, encoding="utf-8")
    small = scenarios.load_space(tmp_path / "matrix.toml")
    [recipe] = small.recipes
    shuffled = small.scenario("s", {"shuffle": "on"})
    assert recipe.expected(shuffled, "2.0.9") == "differs"
    assert recipe.expected(shuffled, "2.2.5") == "holds"
    on_old = {s.values["shuffle"] for _, s in releases.release_cells(small, "2.0.9")}
    on_new = {s.values["shuffle"] for _, s in releases.release_cells(small, "2.2.5")}
    assert (on_old, on_new) == ({"off"}, {"off", "on"})
    bad = (tmp_path / "matrix.toml").read_text(encoding="utf-8").replace('releases = ["2.0.9"]', 'releases = "2.0.9"')
    (tmp_path / "bad.toml").write_text(bad, encoding="utf-8")
    with pytest.raises(scenarios.MatrixError, match=r"\[recipe\.r\] declared 1: releases must be a list"):
        scenarios.load_space(tmp_path / "bad.toml")


def test_an_evaluation_that_ran_fewer_batches_is_compared_over_those():
    """Lightning 2.0.9 and 2.2.5 finish, first thing after a resume from a mid-epoch checkpoint, the validation the
    checkpoint interrupted: one batch of two (found by the release cells; 2.6.6 does not). The ground truth counts
    the batches each run evaluated (rank 0's), so that run's value is its one batch's mean, not the set's."""
    import torch
    from lightning.pytorch.demos.boring_classes import BoringModel

    from migration_guide.scenarios import harness, truth

    loaded = scenarios.load_space()
    recipe = next(r for r in loaded.recipes if r.id == "validation")
    scenario = loaded.scenario("t", {})
    datasets = harness.make_datasets(scenario.data)
    model = BoringModel()
    entry = {"weights": model.state_dict(), "datasets": ["val"], "trainer": 1, "fn": "fit"}

    def value(record_entry) -> float:
        [values], _ = truth.ground_truth(recipe, scenario, {"validation": [record_entry]}, datasets, harness.SKIPPED)
        return next(iter(values.values()))

    batch = scenario.data["batch_size"]
    with torch.no_grad():
        first = ((model(datasets["val"].data[:batch]) - 1) ** 2).mean().item()
    assert value({**entry, "batches": {0: 1}}) == pytest.approx(first, rel=1e-6)
    assert value(entry) == value({**entry, "batches": {0: 3}}) != pytest.approx(first, rel=1e-3)


def test_a_trap_of_some_releases_has_its_cell_there_and_not_in_the_build(space):
    """The traps declared with ``releases`` (Lightning 2.0.9 and 2.2.5 apply a GradientAccumulationScheduler's
    factor in the epoch a run resumes in; 2.6.6 does not) get a cell in those releases' sessions, none in the build."""
    specific = {(r.id, n) for r in space.recipes for n, d in enumerate(r.declared, 1) if d.releases}
    assert {rid for rid, _ in specific} == {
        "naive_callback",
        "rewrite_training_epoch_end",
        "rewrite_training_step_returns_loss",
    }
    for release, shown in (("2.0.9", True), ("2.2.5", True), ("2.6.6", False)):
        cells = {(rid, int(s.id.rsplit("-", 1)[1])) for rid, s in scenarios.trap_cells(space, release)}
        assert (specific <= cells) if shown else not (specific & cells), release
        recipes = {r.id: r for r in space.recipes}
        for rid, scenario in scenarios.trap_cells(space, release):
            if (rid, int(scenario.id.rsplit("-", 1)[1])) in specific:
                assert recipes[rid].expected(scenario, release) == "differs"
