"""The one mechanism of the build's recorders (``build_mechanics.recorded_run``): hash the inputs, start the process,
wait, keep the document -- on a tiny recorder module, not Lightning."""

from __future__ import annotations

import json
import logging

import pytest
from build_mechanics import recorded_run, run_cache
from sphinx.errors import ExtensionError

#: A recorder: writes {"count": N} to --output, prints progress lines, fails or writes to stderr on request.
RECORDER = """
import argparse, json, sys, time
parser = argparse.ArgumentParser()
parser.add_argument("--output")
parser.add_argument("--count", type=int, default=3)
parser.add_argument("--fail", action="store_true")
parser.add_argument("--stderr", action="store_true")
args = parser.parse_args()
for done in range(1, args.count + 1):
    print(f"tiny: progress {done} / {args.count}", flush=True)
    print("tiny: something else", flush=True)
    time.sleep(0.3)
if args.stderr:
    print("a warning", file=sys.stderr)
with open(args.output, "w") as handle:
    json.dump({"count": args.count}, handle)
sys.exit(1 if args.fail else 0)
"""


@pytest.fixture
def recorder(tmp_path, monkeypatch):
    """``start(folder, *args, **options)``: the tiny recorder module ``tiny_recorder`` started with ``args``."""
    package = tmp_path / "modules"
    package.mkdir()
    (package / "tiny_recorder.py").write_text(RECORDER, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(package))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("GUIDE_RUN_CACHE", str(tmp_path / "kept"))

    def start(folder, key, *args, **options):
        return recorded_run.start(
            "tiny", folder, key, "tiny_recorder", lambda out: ["--output", str(out), *args], **options
        )

    return start


def test_the_key_hashes_names_contents_versions_and_extras(tmp_path):
    one, two = tmp_path / "one.py", tmp_path / "two.py"
    one.write_text("a = 1\n")
    two.write_text("b = 2\n")
    key = recorded_run.inputs_key([one, two], ["sphinx"])
    assert len(key) == 64 and key == recorded_run.inputs_key([one, two], ["sphinx"])
    assert key != recorded_run.inputs_key([two, one], ["sphinx"])  # order counts
    assert key != recorded_run.inputs_key([one, two], ["sphinx", "no-such-distribution"])  # "absent" counts
    assert key != recorded_run.inputs_key([one, two], ["sphinx"], "PYTHONWARNINGS=error")
    one.write_text("a = 2\n")
    assert key != recorded_run.inputs_key([one, two], ["sphinx"])


def test_a_run_is_installed_then_reused_while_its_key_holds(tmp_path, recorder, caplog):
    folder = tmp_path / "doctrees"
    run = recorder(folder, "key-1", "--count", "3", progress="tiny: progress")
    assert run.process is not None and run.reused == ""
    with caplog.at_level(logging.INFO):
        assert recorded_run.finish(run, recorded_run.default_failure("the tiny recorder", "tiny.py")) is True
    assert json.loads(run.document.read_text()) == {"count": 3}
    assert run.key_file.read_text() == "key-1" and not run.new.exists()
    # the progress lines, and only they, reached the build's log as they came
    relayed = [record.getMessage() for record in caplog.records if record.name.endswith("recorded_run")]
    assert relayed == ["tiny: progress 1 / 3", "tiny: progress 2 / 3", "tiny: progress 3 / 3"]

    again = recorder(folder, "key-1", "--count", "5")
    assert again.process is None and again.reused == "current"
    assert recorded_run.finish(again, recorded_run.default_failure("the tiny recorder", "tiny.py")) is False

    # another build of this test run (another doctree folder) with the same inputs copies the kept run
    other = recorder(tmp_path / "other", "key-1", "--count", "5")
    assert other.process is None and other.reused == "kept"
    assert recorded_run.finish(other, recorded_run.default_failure("the tiny recorder", "tiny.py")) is True
    assert json.loads(other.document.read_text()) == {"count": 3}


def test_a_ci_build_runs_again(tmp_path, recorder, monkeypatch):
    folder = tmp_path / "doctrees"
    recorded_run.finish(recorder(folder, "key-1", "--count", "1"), recorded_run.default_failure("t", "t.py"))
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("GUIDE_RUN_CACHE")
    run = recorder(folder, "key-1", "--count", "2")
    assert run.process is not None
    assert recorded_run.finish(run, recorded_run.default_failure("t", "t.py")) is True
    assert json.loads(run.document.read_text()) == {"count": 2}


def test_a_failed_run_raises_with_its_output_and_is_not_marked_current(tmp_path, recorder):
    folder = tmp_path / "doctrees"
    run = recorder(folder, "key-1", "--count", "1", "--fail")
    with pytest.raises(ExtensionError) as raised:
        recorded_run.finish(run, recorded_run.default_failure("the tiny recorder", "tiny.py"))
    assert str(raised.value).startswith("the tiny recorder failed (exit code 1) (tiny.py):\n")
    assert "tiny: progress 1 / 1" in str(raised.value)
    assert not run.key_file.exists() and not run.document.exists() and not run.new.exists()
    assert run_cache.lookup("tiny", "key-1", tmp_path / "copy.json") is False  # a failed run is not kept


def test_a_strict_recorder_fails_on_anything_written_to_standard_error(tmp_path, recorder):
    run = recorder(tmp_path / "doctrees", "key-1", "--count", "1", "--stderr", strict=True)
    with pytest.raises(ExtensionError) as raised:
        recorded_run.finish(run, recorded_run.default_failure("the tiny recorder", "tiny.py"))
    assert str(raised.value) == "the tiny recorder wrote to standard error (tiny.py):\na warning"
    # not strict: the same run passes, its standard error in its log
    run = recorder(tmp_path / "lenient", "key-1", "--count", "1", "--stderr")
    assert recorded_run.finish(run, recorded_run.default_failure("the tiny recorder", "tiny.py")) is True
    assert "a warning" in run.log.read_text()


def test_nothing_to_finish():
    assert recorded_run.finish(None, recorded_run.default_failure("t", "t.py")) is False
