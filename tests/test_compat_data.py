"""The compatibility data (data/compat/*.json) is complete, fresh and says what the runs recorded.

The data files are written by ``nox -s record`` (src/migration_guide/compat.py), one per
release declared in data/compat/matrix.toml; the site's compatibility page renders them. These tests fail when a
declared release has no data file, when a data file was written under another matrix definition or misses a
registry pattern, and when what was recorded contradicts the changelog facts of the registry or the equivalence.
"""

from __future__ import annotations

import html
import json
import re

import pytest

from lightning_migrate import registry
from lightning_migrate.records import PROBE_OUTCOMES
from migration_guide import compat, equivalence, probes

MATRIX = compat.load_matrix()
VERSIONS = list(MATRIX["versions"])


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2])


def _data(version: str) -> dict:
    path = compat.data_path(version)
    assert path.is_file(), f"{path} is missing: run `nox -s record`"
    return json.loads(path.read_text(encoding="utf-8"))


def _records(version: str) -> dict[str, dict]:
    return {record["pattern"]: record for record in _data(version)["probes"]["records"]}


def test_matrix_declares_the_releases_the_guide_needs():
    groups = {version: entry["group"] for version, entry in MATRIX["versions"].items()}
    legacy = [v for v, g in groups.items() if g == "legacy"]
    matrix = sorted((v for v, g in groups.items() if g == "matrix"), key=_release)
    assert any(_release(v) < (1, 5) for v in legacy), "no release that still calls the `outputs` hooks"
    assert _release(MATRIX["reference"]) < (2, 0), "the reference must still run training_epoch_end"
    assert len(matrix) >= 3 and _release(matrix[0]) == (2, 0), f"need the oldest 2.x, a middle and the latest: {matrix}"


@pytest.mark.parametrize("version", VERSIONS)
def test_data_file_is_fresh_and_complete(version):
    data = _data(version)
    assert data["version"] == version
    assert data["probes"]["lightning"]["version"] == version, "written in an environment with another Lightning"
    assert data["matrix_sha256"] == MATRIX["sha256"], (
        f"{compat.data_path(version)} is older than {compat.MATRIX_FILE}: run `nox -s record`"
    )
    assert data["probes"]["schema"] == probes.SCHEMA
    assert set(_records(version)) == set(registry.BY_ID), "data file does not cover exactly the registry's patterns"


@pytest.mark.parametrize("version", VERSIONS)
def test_outcomes_agree_with_the_changelog(version):
    """Between deprecation and removal an old shape runs; once removed it is never simply called."""
    records = _records(version)
    for pattern in registry.PATTERNS:
        record = records[pattern.id]
        assert record["outcome"] in PROBE_OUTCOMES
        if record["outcome"] == "error":
            assert record["error_type"] and record["error_message"] and record["failed_during"]
        else:
            assert record["error_type"] is None and record["error_message"] is None
        if _release(version) >= _release(pattern.removed_in):
            assert record["outcome"] in {"error", "ignored"}, f"{pattern.id} still runs on {version}"
        elif pattern.deprecated_in and _release(version) >= _release(pattern.deprecated_in):
            assert record["outcome"] == "called_with_warning", f"{pattern.id}: no deprecation warning on {version}"
            assert any(pattern.hook in w["message"] for w in record["warnings"])
        else:
            assert record["outcome"] == "called", f"{pattern.id} on {version}: {record['outcome']}"


def test_legacy_outputs_hooks_received_the_epoch_outputs():
    """On the oldest legacy release the three old shapes got one entry per training batch, with the loss."""
    oldest = min((v for v in VERSIONS if MATRIX["versions"][v]["group"] == "legacy"), key=_release)
    records = _records(oldest)
    for pattern_id in ("callback-on-train-epoch-end-outputs", "module-on-train-epoch-end-outputs"):
        record = records[pattern_id]
        assert record["outcome"] == "called_with_warning"
        assert record["hook_calls"] == probes.EPOCHS
        assert "outputs" in " ".join(w["message"] for w in record["warnings"])
        assert record["received"] is not None
    received = records["training-epoch-end"]["received"]
    assert received["len"] == probes.TRAIN_BATCHES
    losses = [item["loss"] for item in received["items"]]
    assert all(loss["tensor"] == [] and not loss["requires_grad"] for loss in losses)
    assert len({loss["value"] for loss in losses}) == probes.TRAIN_BATCHES, "four batches, four different losses"


def test_probe_machinery_triggers_no_deprecation():
    """Patterns that run cleanly carry no warning: the probe's own model and callbacks use no deprecated path."""
    for version in VERSIONS:
        for record in _records(version).values():
            if record["outcome"] == "called":
                assert record["warnings"] == [], f"{record['pattern']} on {version}: {record['warnings']}"


def test_old_hook_and_replacements_are_identical():
    torches = {_data(version)["probes"]["torch"] for version in VERSIONS}
    assert len(torches) == 1, f"the releases were compared on different torch versions: {torches}"
    reference = _data(MATRIX["reference"])["equivalence"]["variants"]
    assert set(reference) == {"old", "callback", "module"}
    old = reference["old"]
    assert len(old) == equivalence.EPOCHS and all(e["entries"] == 4 for e in old)
    assert len({e["mean"] for e in old}) == equivalence.EPOCHS, "training must change the loss between epochs"
    for version in VERSIONS:
        variants = _data(version)["equivalence"]["variants"]
        for variant, values in variants.items():
            assert values == old, f"{variant} on {version} differs from training_epoch_end on {MATRIX['reference']}"


@pytest.mark.parametrize("version", [v for v, e in MATRIX["versions"].items() if e["group"] == "matrix"])
def test_replacement_examples_pass_on_every_2x_release(version):
    runs = {ex["script"]: ex for ex in _data(version)["examples"]}
    assert list(runs) == MATRIX["scripts"]
    for script, ex in runs.items():
        assert ex["passed"], f"{script} failed on {version}: {ex['error']}"
        assert ex["stdout"][0] == f"Lightning {version}"


def _page_text(site, docname: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", site.page(docname))))


def test_compatibility_page_renders_every_release_and_its_captured_text(site):
    """The site's table comes from the data files: every release, every outcome and every captured message."""
    text = _page_text(site, "reference/compatibility")
    for version in VERSIONS:
        data = _data(version)
        assert f"{data['probes']['lightning']['distribution']} {version}" in text
        for record in data["probes"]["records"]:
            for warning in record["warnings"]:
                assert re.sub(r"\s+", " ", warning["message"]) in text, f"{version}: warning text not on the page"
            if record["error_message"] is not None:
                first_line = record["error_message"].splitlines()[0].strip()
                assert first_line in text, f"{version} {record['pattern']}: error text not on the page"
        assert repr(data["equivalence"]["variants"][next(iter(data["equivalence"]["variants"]))][0]["mean"]) in text
    assert "<strong>no</strong>" not in site.page("reference/compatibility"), "a variant differs from the old hook"


def test_the_recorded_1_4_run_says_what_why_outputs_went_says():
    """docs/explanation/why-outputs-went.rst: 1.4.9 kept the epoch's outputs for a module that asked for them (its
    ``training_epoch_end(outputs)`` or ``on_train_epoch_end(outputs)``); a callback asking alone received ``[]``."""
    records = _records("1.4.9")
    for module_hook in ("training-epoch-end", "module-on-train-epoch-end-outputs"):
        record = records[module_hook]
        per_epoch = record["training_steps"] // record["hook_calls"]
        assert record["received"]["len"] == per_epoch > 0, module_hook
    callback = records["callback-on-train-epoch-end-outputs"]
    assert callback["hook_calls"] > 0
    assert callback["received"] == {"len": 0, "items": []}
    page = (compat.ROOT / "docs" / "explanation" / "why-outputs-went.rst").read_text(encoding="utf-8")
    assert ":patterns: training-epoch-end module-on-train-epoch-end-outputs callback-on-train-epoch-end-outputs" in page


def test_the_column_of_the_installed_release_follows_this_builds_probe_records(tmp_path):
    """A two-extension project (the probes and the compatibility table) whose build finds probe records made from
    today's inputs, one of them changed (a new wording and error type of ``training_epoch_end``'s refusal): the
    column of the installed release shows the changed record, not the committed ``data/compat`` one; the other
    releases keep theirs."""
    import os
    import subprocess
    import sys
    from importlib import metadata

    from builds import ROOT

    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    from guide import probe_records

    installed = metadata.version("lightning")
    committed = _data(installed) if compat.data_path(installed).is_file() else None
    if committed is None:
        pytest.fail(f"no committed record for the installed Lightning {installed}: record it with `nox -s record`")
    build_records = json.loads(json.dumps(committed["probes"]))
    [changed] = [r for r in build_records["records"] if r["pattern"] == "training-epoch-end"]
    changed.update(error_type="RuntimeError", error_message="training_epoch_end is gone: a new wording")
    (tmp_path / "docs").mkdir()
    (tmp_path / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'docs' / '_ext')!r})\nsys.path.insert(0, {str(ROOT / 'src')!r})\n"
        'extensions = ["guide.probe_records", "guide.compat_table"]\n',
        encoding="utf-8",
    )
    (tmp_path / "docs" / "index.rst").write_text("Compat\n======\n\n.. compat-table::\n", encoding="utf-8")
    for example in {pattern.example for pattern in registry.PATTERNS}:  # the pages the table links to
        stub = tmp_path / "docs" / f"{example}.rst"
        stub.parent.mkdir(parents=True, exist_ok=True)
        stub.write_text(":orphan:\n\nExample\n=======\n", encoding="utf-8")
    doctrees = tmp_path / "_build" / "doctrees"
    doctrees.mkdir(parents=True)
    (doctrees / probe_records.RECORDS).write_text(json.dumps(build_records), encoding="utf-8")
    (doctrees / probe_records.KEY).write_text(probe_records.cache_key(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTHONWARNINGS")}
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-q",
        "-c",
        ".",
        "-d",
        str(doctrees),
        "-b",
        "html",
        "docs",
        "_build/html",
    ]
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = html.unescape((tmp_path / "_build" / "html" / "index.html").read_text(encoding="utf-8"))
    text = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    label = r"works|raises \w+|warns \(deprecated\)|silently ignored"
    row = re.search(rf"LightningModule\.training_epoch_end\(self, outputs\)((?: (?:{label}))+)", text)
    assert row, text[:2000]
    labels = re.findall(label, row[1])
    versions = [v for v in compat.load_matrix()["versions"] if compat.data_path(v).is_file()]
    assert len(labels) == len(versions), (labels, versions)
    assert labels[versions.index(installed)] == "raises RuntimeError"  # this build's record, not the committed one
    assert committed_label(installed) == "raises NotImplementedError"
    for version, shown in zip(versions, labels, strict=True):
        if version != installed:
            assert shown == committed_label(version), version


def committed_label(version: str) -> str:
    record = _records(version)["training-epoch-end"]
    return f"raises {record['error_type']}" if record["outcome"] == "error" else PROBE_OUTCOMES[record["outcome"]]


def test_every_declared_equivalence_kind_is_implemented_and_no_other():
    from migration_guide import compat_schema

    assert set(compat_schema.EQUIVALENCE) == set(compat.EQUIVALENCE_MODES)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('"1.9.5" = { pins', '"1.9.5" = { pinz = [], pins',
         r":\d+: \[legacy\] 1\.9\.5: unknown key 'pinz' \(did you mean 'pins'\?\)"),
        ('equivalence = "replacements" }', 'equivalence = "replacement" }',
         r"\[matrix\] 2\.0\.9: equivalence = 'replacement' is not one of 'old', 'old-and-replacements', 'replacements' "
         r"\(did you mean 'replacements'\?\)"),
        ('reference = "1.9.5"', 'reference = "1.9.6"',
         r":\d+: \[equivalence\]: reference '1\.9\.6' is not a declared version \(did you mean '1\.9\.5'\?\)"),
        ("[examples]\n", "[example]\n", r"unknown table 'example' \(did you mean 'examples'\?\)"),
    ],
)  # fmt: skip
def test_a_malformed_release_table_names_the_file_line_and_the_closest_key(tmp_path, old, new, message):
    text = compat.MATRIX_FILE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "matrix.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(ValueError, match=message) as raised:
        compat.load_matrix(path)
    assert str(raised.value).startswith(str(path))
