"""The schema of ``data/scenarios.toml`` is declared once (``migration_guide.scenario_schema``) and is what the
loader checks, the harness implements and every cell reads: a kind declared without its implementation (or the
reverse) fails, a value the harness does not implement never runs as another, an unknown key names the closest known
one with the file's line, and every declared setting is read by a cell."""

from __future__ import annotations

import dataclasses
import re

import pytest

from migration_guide import scenario_schema, scenarios
from migration_guide.scenarios import harness, space


def test_every_declared_kind_is_implemented_and_every_implemented_kind_declared():
    assert scenarios.implementation_gaps() == []


def test_a_kind_declared_without_its_implementation_is_named(monkeypatch):
    monkeypatch.setitem(scenario_schema.TRAIN_STEPS, "manual-three-optimizers", "declared, never written")
    monkeypatch.setitem(harness.EVAL_STEPS, "list", lambda loss, key: [loss])
    assert scenarios.implementation_gaps() == [
        "step.eval = 'list': implemented, not declared",
        "step.train = 'manual-three-optimizers': declared, not implemented",
    ]


def test_the_harness_never_runs_an_unimplemented_kind_as_another():
    """Before, an unknown ``step.train`` fell through to the plain automatic step (or to "manual")."""
    with pytest.raises(space.MatrixError, match=r"step\.train = 'manual-three-optimizers': the harness implements"):
        harness.make_base("manual-three-optimizers", "dict")
    with pytest.raises(space.MatrixError, match=r"data\.course = 'rising': the harness implements"):
        harness.make_datasets({**scenario_schema.BASE_SETTINGS["data"], "course": "rising"})


def test_a_value_with_an_unknown_kind_in_the_data_alone_fails_loading(tmp_path):
    """A ``train_step`` value whose ``step`` the schema does not declare: the file does not load, naming its line,
    the axis and value, the kinds there are and the closest one."""
    text = space.MATRIX_FILE.read_text(encoding="utf-8")
    anchor = "[axis.train_step.values]\n"
    injected = (
        'manual-three = { label = "three optimizers", step = { train = "manual-three" }, source = "Lightning #1" }\n'
    )
    path = tmp_path / "scenarios.toml"
    path.write_text(text.replace(anchor, anchor + injected), encoding="utf-8")
    line = text[: text.index(anchor)].count("\n") + 2
    with pytest.raises(space.MatrixError) as raised:
        space.load_space(path)
    kinds = ", ".join(repr(kind) for kind in scenario_schema.TRAIN_STEPS)
    assert str(raised.value).startswith(
        f"{path}:{line}: [axis.train_step] value 'manual-three': step.train = 'manual-three' is not one of {kinds} "
    )
    assert re.search(r"\(did you mean '[\w-]+'\?\)$", str(raised.value))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('title = "3 epochs"\n', 'title = "3 epochs"\ntrainr = { max_epochs = 3 }\n',
         r":\d+: \[scenario\.three_epochs\]: unknown key 'trainr' \(did you mean 'trainer'\?\); known: title, source"),
        ('values = { length = "epochs-3" }', 'values = { lenght = "epochs-3" }',
         r":\d+: \[scenario\.three_epochs\] names an unknown axis value lenght = 'epochs-3' "
         r"\(did you mean 'length'\?\)"),
        ('[axis.calls]\ntitle = "Trainer calls"\n', '[axis.calls]\ntitel = "Trainer calls"\n',
         r":\d+: \[axis\.calls\]: unknown key 'titel' \(did you mean 'title'\?\)"),
        ('data = { kind = "map", course = "not-monotone" }', 'data = { kind = "map", cours = "not-monotone" }',
         r"\[axis\.dataset\] value 'not-monotone': unknown key 'data\.cours' \(did you mean 'course'\?\)"),
        ('weighting = "batch"\n', 'weighting = "batches"\n',
         r"\[recipe\.\w+\]: weighting = 'batches' is not one of 'batch', 'batch_max', 'sample', 'predictions', 'calls' "
         r"\(did you mean 'batch'\?\)"),
    ],
)  # fmt: skip
def test_an_unknown_key_or_value_names_the_file_line_table_and_the_closest(tmp_path, old, new, message):
    text = space.MATRIX_FILE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "scenarios.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(space.MatrixError, match=message) as raised:
        space.load_space(path)
    assert str(raised.value).startswith(f"{path}:")


def test_a_scenario_starts_from_the_schemas_defaults():
    assert space.BASE_SETTINGS == scenario_schema.BASE_SETTINGS
    assert space.BASE_SETTINGS["step"] == {"train": "loss-dict", "eval": "dict"}
    assert set(space.BASE_SETTINGS) == set(scenario_schema.SETTINGS)
    assert set(space.BASE_SETTINGS["data"]) == set(scenario_schema.DATA)


class Reads(dict):
    """A scenario's settings that note every key a cell reads (``data.kind``), nested tables included."""

    def __init__(self, settings: dict, log: set, prefix: str = ""):
        super().__init__(
            {k: Reads(v, log, f"{prefix}{k}.") if k in ("data", "step") else v for k, v in settings.items()}
        )
        self.log, self.prefix = log, prefix

    def __getitem__(self, key):
        self.log.add(self.prefix + key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.log.add(self.prefix + key)
        return super().get(key, default)


def test_a_cell_reads_every_declared_setting_and_no_other():
    """A declared setting that no cell reads would load and do nothing; a setting read but not declared would
    never be set by the file. One cell that fits, tests and predicts reads them all."""
    loaded = space.load_space()
    recipe = next(r for r in loaded.recipes if r.id == "callback_side")
    scenario = loaded.scenario("reads", {}, "reads", runs=["fit", "test", "predict"])
    log: set[str] = set()
    watched = dataclasses.replace(scenario, settings=Reads(scenario.settings, log))
    result = scenarios.cell_result(recipe, watched, declared_warnings=loaded.warnings)
    assert result["outcome"] == "holds", result
    declared = set(scenario_schema.SETTINGS)
    declared |= {f"{table}.{key}" for table in ("data", "step") for key in scenario_schema.SETTINGS[table].keys}
    assert declared - log == set(), "declared, never read by a cell"
    assert log - declared == set(), "read by a cell, not declared"


def test_the_schema_prints_every_table_and_kind():
    text = scenario_schema.document()
    for kind in (*scenario_schema.TRAIN_STEPS, *scenario_schema.CALLBACKS, *scenario_schema.WEIGHTINGS):
        assert f'`"{kind}"`' in text, kind
    assert "`[[recipe.<id>.declared]]`" in text and "- `match` (a string):" in text


def test_the_matrix_loads_from_a_checkout_without_the_docs_tree(tmp_path):
    """The scenario package imports the accepted warnings (``migration_guide.declared_warnings``); it read them
    from ``docs/_ext`` by path before, and failed where the docs tree was not beside it."""
    import shutil
    import subprocess
    import sys

    from builds import ROOT

    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "data", tmp_path / "data")
    code = "from migration_guide.scenarios import load_space; print(len(load_space().warnings))"
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "src")},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (run.returncode, run.stdout.strip()) == (0, str(len(space.declared_warnings()))), run.stderr
    assert not (tmp_path / "docs").exists()


def test_the_contributing_page_renders_each_schema_from_its_declaration(tmp_path):
    """``data-schema`` on a one-page MyST project, as ``docs/contributing.md`` uses it: every kind of the declaration
    is on the page, as code, with its meaning; a module that declares no schema fails the build naming it."""
    from builds import project, sphinx_build

    page = (
        "# Schemas\n\n````{dropdown} data/scenarios.toml\n```{data-schema} migration_guide.scenario_schema\n```\n"
        "````\n\n```{data-schema} migration_guide.compat_schema\n```\n"
    )
    conf = 'extensions = ["myst_nb", "sphinx_design", "build_mechanics.data_schemas"]\nnb_execution_mode = "off"\n'
    tree = project(tmp_path / "ok", {"index.md": page}, conf)
    build = sphinx_build(tree, source=".")
    assert build.returncode == 0, build.output[-3000:]
    html = (build.outdir / "index.html").read_text(encoding="utf-8")
    for kind in scenario_schema.TRAIN_STEPS:
        assert f'<span class="pre">&quot;{kind}&quot;</span></code>: ' in html, kind
    assert "manual optimization with two optimizers; returns" in html  # a kind's meaning
    assert '<span class="pre">&quot;old-and-replacements&quot;</span>' in html  # the compat schema
    broken = project(
        tmp_path / "broken", {"index.md": "# S\n\n```{data-schema} lightning_migrate.registry\n```\n"}, conf
    )
    failed = sphinx_build(broken, source=".")
    assert failed.returncode != 0
    assert "data-schema: lightning_migrate.registry declares no schema" in failed.output
