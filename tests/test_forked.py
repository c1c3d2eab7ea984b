"""A command run by :func:`forked.run_module` reports what ``python -m`` would: exit code, output and errors."""

from __future__ import annotations

import os
import subprocess
import sys

import forked
from builds import ROOT


def test_a_forked_command_gives_the_exit_code_and_output_of_python_dash_m(tmp_path):
    command = [sys.executable, "-m", "migration_guide.scenarios"]
    for argv in (["--help"], ["--no-such-option"]):  # argparse: exit 0 with the usage, exit 2 with the error
        ran = forked.run_module("migration_guide.scenarios", argv, tmp_path / argv[0])
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))  # the tree's code, as pytest's own path has it
        expected = subprocess.run([*command, *argv], env=env, capture_output=True, text=True, check=False)
        assert (ran.returncode, ran.stdout, ran.stderr) == (expected.returncode, expected.stdout, expected.stderr)
    assert ran.returncode == 2 and "unrecognized arguments: --no-such-option" in ran.stderr


def test_a_forked_command_that_raises_exits_1_with_its_traceback(tmp_path):
    ran = forked.run_module("json", ["absent.json"], tmp_path / "out")  # json has no main(): AttributeError
    assert ran.returncode == 1
    assert "Traceback" in ran.stderr and "AttributeError" in ran.stderr and ran.stdout == ""


def test_the_matrix_refuses_a_root_that_is_not_a_folder(tmp_path):
    ran = forked.run_module("migration_guide.scenarios", ["--root", str(tmp_path / "absent")], tmp_path / "out")
    assert ran.returncode == 2
    assert f"--root {tmp_path / 'absent'}: no such folder" in ran.stderr
