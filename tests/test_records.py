"""Recorded data cannot drift silently: a run that differs from the committed record fails, naming file and value.

``nox -s legacy`` and ``nox -s matrix`` compare each release's run with ``data/compat/<version>.json``
(:func:`migration_guide.compat.check`); these tests compare a committed record with changed copies of itself.
"""

from __future__ import annotations

import copy
import json
import os
import stat

import pytest

from lightning_migrate import records
from migration_guide import compat

VERSIONS = list(compat.load_matrix()["versions"])


def committed(version: str) -> dict:
    return records.read_record(compat.data_path(version))


def first_loss(record: dict) -> float:
    return record["equivalence"]["variants"]["old"][0]["mean"]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_committed_record_agrees_with_itself(version):
    assert compat.check(committed(version), compat.data_path(version)) == []


def test_a_drifted_outcome_fails_naming_the_file_and_the_value(tmp_path):
    """What the default sessions print when a release no longer does what its record says."""
    record = committed("1.9.5")
    drifted = copy.deepcopy(record)
    drifted["probes"]["records"][0]["outcome"] = "ignored"
    path = tmp_path / "1.9.5.json"
    records.write_record(path, record)
    was = json.dumps(record["probes"]["records"][0]["outcome"])
    assert compat.check(drifted, path) == [f'/probes/records/0/outcome: {was} -> "ignored"']


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda r: r["probes"]["records"][1].update(error_message="another text"), "/probes/records/1/error_message"),
        (
            lambda r: r["probes"]["records"][2].update(hook_calls=r["probes"]["records"][2]["hook_calls"] + 1),
            "/hook_calls",
        ),
        (lambda r: r["probes"]["records"][0]["warnings"].append({"category": "X", "message": "y"}), "/warnings"),
        (lambda r: r["probes"]["records"].pop(), "/probes/records: "),
        (lambda r: r["equivalence"]["variants"]["old"][0].update(mean=first_loss(r) * 1.001), "/0/mean"),
        (lambda r: r["probes"].update(torch="9.9.9"), "/probes/torch"),
    ],
    ids=["message", "count", "warning added", "record missing", "loss off by 0.1%", "torch"],
)
def test_any_real_change_is_a_difference(change, where):
    record = committed("1.9.5")
    drifted = copy.deepcopy(record)
    change(drifted)
    differences = records.differences(drifted, record)
    assert len(differences) == 1 and where in differences[0], differences


def test_float_noise_of_another_processor_is_no_difference():
    """The last digits of a measured loss, a loss rounded to 6 decimals and a loss printed at 6 decimals may flip
    on another machine: within 1e-5 relative, or one unit of the last digit of a measured value, they agree."""
    record = committed("2.6.6")
    noisy = copy.deepcopy(record)
    for epoch in noisy["equivalence"]["variants"]["callback"]:
        epoch["mean"] *= 1 + 3e-7
        epoch["losses"] = [loss * (1 - 2e-7) for loss in epoch["losses"]]
    line = noisy["examples"][0]["stdout"][1]  # "epoch 0: logged mean 0.903014 (plain loop: 0.903014)"
    assert "0.903014" in line
    noisy["examples"][0]["stdout"][1] = line.replace("0.903014", "0.903015")
    assert records.differences(noisy, record) == []
    noisy["examples"][0]["stdout"][1] = line.replace("0.903014", "0.903034")  # 2.2e-5 relative: a real change
    assert len(records.differences(noisy, record)) == 1


def test_a_value_near_zero_agrees_within_the_absolute_floor_and_a_real_change_does_not():
    """A prediction near 0 of the 1.9.5 record, as another machine recorded it: 1.03e-5 relative apart (2e-8
    absolute), more than the relative tolerance alone allows; the absolute floor (math.isclose's abs_tol) accepts it.
    A changed seed or learning rate moves it by 1e-3, and a drift of 1e-5 absolute is still a difference."""
    record = committed("1.9.5")
    runs = record["rewrites"]["callback_on_predict_epoch_end_outputs.py"]["runs"]
    predictions = runs["predict"]["attributes"]["PredictionsCallback.epoch_predictions"][0]
    near_zero = predictions[2]
    assert abs(near_zero) < 0.002, near_zero
    other_machine = near_zero * (1 + 1.03e-5)
    assert abs(other_machine - near_zero) > records.RELATIVE_TOLERANCE * abs(near_zero)  # relative alone: differs

    noisy = copy.deepcopy(record)
    noisy["rewrites"]["callback_on_predict_epoch_end_outputs.py"]["runs"]["predict"]["attributes"][
        "PredictionsCallback.epoch_predictions"
    ][0][2] = other_machine
    assert records.differences(noisy, record) == []
    for changed in (near_zero + 1e-3, near_zero + 1e-5, -near_zero):
        noisy["rewrites"]["callback_on_predict_epoch_end_outputs.py"]["runs"]["predict"]["attributes"][
            "PredictionsCallback.epoch_predictions"
        ][0][2] = changed
        [difference] = records.differences(noisy, record)
        assert difference.startswith("/rewrites/callback_on_predict_epoch_end_outputs.py/runs/predict/"), difference
    assert records.floats_agree(0.0, 5e-7) and not records.floats_agree(0.0, 5e-6)


def test_short_decimals_and_integers_in_texts_compare_exactly():
    """A version in a warning (``v1.5``) or a count is no measurement: one unit of difference is a difference."""
    assert records.differences("deprecated in v1.3, removed in v1.5", "deprecated in v1.3, removed in v1.6")
    assert records.differences("after 4 training steps", "after 5 training steps")
    assert records.differences(0.5, 0.6)
    assert records.differences(True, 1) and records.differences(None, 0)
    assert records.differences("loss 0.1234", "loss 0.1235") == []  # four decimals: measured, one unit apart


def test_write_atomic_replaces_the_file_keeps_its_mode_and_reports_a_change(tmp_path):
    path = tmp_path / "record.json"
    assert records.write_atomic(path, "one\n") is True
    os.chmod(path, 0o640)
    assert records.write_atomic(path, "one\n") is False  # same content: not rewritten
    assert records.write_atomic(path, b"two\n") is True
    assert path.read_text() == "two\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]  # no temporary file left


def test_write_atomic_refuses_a_read_only_file_and_leaves_it(tmp_path):
    path = tmp_path / "record.json"
    path.write_text("kept\n")
    os.chmod(path, 0o444)
    with pytest.raises(PermissionError, match="read-only"):
        records.write_atomic(path, "new\n")
    assert path.read_text() == "kept\n"


def test_a_record_that_is_not_json_is_named_with_its_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n "version": "1.9.5",\n}\n')
    with pytest.raises(ValueError, match=rf"{path}:3:1: not a JSON record"):
        records.read_record(path)
