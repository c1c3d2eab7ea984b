"""The command over folder trees: findings, exit codes, --diff / --fix, cross-file base classes and bad input."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lightning_migrate.checker.cli import main

from ._util import unwrapped

BASE = """\
import lightning.pytorch as pl


class Base(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return batch
"""
CHILD = """\
from .base import Base as Parent


class Child(Parent):
    def training_epoch_end(self, outputs):
        pass
"""
GRANDCHILD = """\
from project.models.child import Child


class GrandChild(Child):
    def validation_epoch_end(self, outputs):
        self.n = len(outputs)
"""
CALLBACK = """\
import lightning as L


class Cb(L.Callback):
    def on_train_epoch_end(self, trainer, pl_module, outputs):
        pass
"""
CLEAN = """\
import lightning.pytorch as pl


class Fine(pl.LightningModule):
    def on_train_epoch_end(self):
        pass


class Unrelated:
    def training_epoch_end(self, outputs):
        pass
"""


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write(
        tmp_path,
        {
            "project/__init__.py": "",
            "project/models/__init__.py": "",
            "project/models/base.py": BASE,
            "project/models/child.py": CHILD,
            "project/grand.py": GRANDCHILD,
            "project/callbacks.py": CALLBACK,
            "project/clean.py": CLEAN,
            ".venv/lib/site.py": CHILD,  # skipped folder
        },
    )


def run(args: list[str], capsys) -> tuple[int, list[str], str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def test_findings_across_files_and_exit_code_1(tree, capsys):
    code, lines, err = run(["--jobs", "1", tree / "project"], capsys)
    assert code == 1
    found = [line.split(" ")[0] + " " + line.split(" ")[1] for line in lines]
    assert found == [
        f"{tree}/project/callbacks.py:5:9: LM002",
        f"{tree}/project/grand.py:5:9: LM001",
        f"{tree}/project/models/child.py:5:9: LM001",
    ]
    assert all(line.endswith(".html") for line in lines)
    summary = (
        "3 findings in 3 files (7 files checked); 1 proven fix, 2 safe fixes, 0 unsafe fixes (--unsafe-fixes), 0 manual"
    )
    assert summary in err


def test_clean_tree_exits_0(tree, capsys):
    code, lines, err = run([tree / "project" / "clean.py", tree / "project" / "models" / "base.py"], capsys)
    assert (code, lines) == (0, [])
    assert "0 findings (2 files checked)" in err


def test_diff_writes_nothing_and_fix_writes(tree, capsys):
    child = tree / "project" / "models" / "child.py"
    code, lines, _ = run(["--diff", tree / "project"], capsys)
    assert code == 1
    assert f"--- a/{child.as_posix()}" in lines
    assert "-    def training_epoch_end(self, outputs):" in lines
    assert "+    def on_train_epoch_end(self):" in lines
    assert child.read_text() == CHILD

    code, _, err = run(["--fix", tree / "project"], capsys)
    assert code == 1
    assert "changed 3 files" in err
    assert child.read_text() == CHILD.replace("training_epoch_end(self, outputs)", "on_train_epoch_end(self)")
    grand = (tree / "project" / "grand.py").read_text()
    assert "# lightning-migrate:" not in grand  # the proven caching rewrite is applied by plain --fix
    assert "def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):" in grand

    # second run: nothing left to find, nothing is written again
    code, lines, err = run(["--fix", tree / "project"], capsys)
    assert (code, lines) == (0, [])
    assert "changed 0 files" in err
    assert (tree / "project" / "grand.py").read_text() == grand


def test_select_and_usage_errors(tree, capsys):
    code, lines, _ = run(["--select", "LM002", tree / "project"], capsys)
    assert code == 1 and len(lines) == 1 and " LM002 " in lines[0]
    assert run(["--select", "LM999", tree], capsys)[0] == 2
    assert run([], capsys)[0] == 2
    assert run(["--no-such-flag", tree], capsys)[0] == 2
    assert run(["--fix", "--diff", tree], capsys)[0] == 2
    code, _, err = run([tree / "missing"], capsys)
    assert code == 2 and "missing: no such file or folder" in err


def test_parallel_run_matches_serial(tmp_path, capsys):
    files = {f"pkg/m{i}.py": CALLBACK if i % 7 == 0 else CLEAN for i in range(300)}
    write(tmp_path, files)
    serial = run(["--jobs", "1", tmp_path], capsys)
    parallel = run(["--jobs", "2", tmp_path], capsys)
    assert serial[:2] == parallel[:2]
    assert serial[0] == 1 and len(serial[1]) == len(range(0, 300, 7))


# -- bad input ---------------------------------------------------------------------------------------------------


def test_syntax_error_is_reported_and_the_run_goes_on(tree, capsys):
    write(tree, {"project/broken.py": "def on_train_epoch_end(self:\n    pass\n"})
    code, lines, err = run(["--fix", tree / "project"], capsys)
    assert code == 1  # findings read as findings; the file that could not be read is counted apart
    assert err.strip().endswith("; 1 file could not be read (not checked)")
    assert f"{tree}/project/broken.py:1:" in err and "syntax error, file skipped" in err
    assert len(lines) == 3  # the other files were checked (and fixed)
    assert (tree / "project" / "broken.py").read_text() == "def on_train_epoch_end(self:\n    pass\n"


def test_latin1_file_with_cookie_is_fixed_in_latin1(tmp_path, capsys):
    source = "# -*- coding: latin-1 -*-\n" + CALLBACK.replace("pass", 'print("caf\u00e9")')
    path = tmp_path / "latin.py"
    path.write_bytes(source.encode("latin-1"))
    code, lines, _ = run(["--fix", path], capsys)
    assert code == 1 and len(lines) == 1
    data = path.read_bytes()
    assert b"caf\xe9" in data  # still latin-1, not UTF-8
    assert data.decode("latin-1") == source.replace("pl_module, outputs)", "pl_module)")


def test_latin1_file_without_cookie_is_reported_and_skipped(tmp_path, capsys):
    path = tmp_path / "latin.py"
    original = CALLBACK.replace("pass", 'print("caf\u00e9")').encode("latin-1")
    path.write_bytes(original)
    write(tmp_path, {"ok.py": CALLBACK})
    code, lines, err = run(["--fix", tmp_path], capsys)
    assert code == 1
    assert f"{path}" in err and "cannot decode" in err
    assert len(lines) == 1 and "ok.py" in lines[0]
    assert path.read_bytes() == original


def test_crlf_newlines_are_kept(tmp_path, capsys):
    path = tmp_path / "crlf.py"
    path.write_bytes(CALLBACK.replace("\n", "\r\n").encode())
    assert run(["--fix", path], capsys)[0] == 1
    data = path.read_bytes()
    assert b"def on_train_epoch_end(self, trainer, pl_module):\r\n" in data
    assert b"\n" not in data.replace(b"\r\n", b"")


def test_empty_file_is_clean(tmp_path, capsys):
    (tmp_path / "empty.py").write_bytes(b"")
    assert run([tmp_path / "empty.py"], capsys)[0] == 0


def test_symlink_loops_are_reported_not_followed(tmp_path, capsys):
    write(tmp_path, {"pkg/mod.py": CALLBACK})
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg", target_is_directory=True)  # folder loop
    (tmp_path / "pkg" / "self.py").symlink_to(tmp_path / "pkg" / "self.py")  # file loop
    code, lines, err = run([tmp_path], capsys)
    assert code == 1
    assert len(lines) == 1 and "mod.py" in lines[0]
    assert "self.py: cannot read" in err


def test_fix_keeps_file_mode_and_a_symlinked_file_stays_a_link(tmp_path, capsys):
    target = write(tmp_path, {"real/cb.py": CALLBACK}) / "real" / "cb.py"
    target.chmod(0o640)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    assert run(["--fix", link], capsys)[0] == 1
    assert link.is_symlink()
    assert "pl_module):" in target.read_text()
    assert target.stat().st_mode & 0o777 == 0o640


def test_console_script_entry_point(tree):
    """``python -m lightning_migrate.checker`` is what the ``lightning-migrate`` script runs."""
    proc = subprocess.run(
        [sys.executable, "-m", "lightning_migrate.checker", str(tree / "project" / "callbacks.py")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")},
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert " LM002 " in proc.stdout
    assert textwrap.dedent(proc.stderr).strip().startswith("1 finding in 1 file")


def test_base_re_exported_by_a_package_init_and_a_src_layout(tmp_path, capsys):
    write(
        tmp_path,
        {
            "src/lib/__init__.py": "from .core import Base\n",
            "src/lib/core.py": "from pytorch_lightning.core.lightning import LightningModule as LM\n\nclass Base(LM):\n"
            "    pass\n",
            "scripts/train.py": "from lib import Base\n\n\nclass Mine(Base):\n"
            "    def on_epoch_end(self):\n        pass\n",
        },
    )
    code, lines, _ = run([tmp_path], capsys)
    assert code == 1
    # the import itself is one too: the old module is gone in 2.x (LM009)
    assert sorted(line.split(" ")[:2] for line in lines) == [
        [f"{tmp_path}/scripts/train.py:5:9:", "LM006"],
        [f"{tmp_path}/src/lib/core.py:1:1:", "LM009"],
    ]
    assert all("possible" not in line for line in lines)


def test_subclass_cycle_does_not_hang(tmp_path, capsys):
    write(
        tmp_path,
        {
            "a.py": "from b import B\n\n\nclass A(B):\n    def training_step(self, batch, i):\n        pass\n\n"
            "    def on_epoch_end(self):\n        pass\n",
            "b.py": "from a import A\n\n\nclass B(A):\n    pass\n",
        },
    )
    code, lines, _ = run([tmp_path], capsys)
    assert code == 0 and lines == []


CALLED_ELSEWHERE = """\
import lightning.pytorch as pl


class M(pl.LightningModule):
    def test_epoch_end(self, outputs):
        self.done = True

    def on_train_end(self):
        self.test_epoch_end(None)
"""


def test_a_hook_called_by_name_is_not_renamed_safely(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(CALLED_ELSEWHERE, encoding="utf-8")
    assert main(["--fix", str(path)]) == 1
    fixed = unwrapped(path.read_text(encoding="utf-8"))
    # Renaming would leave `self.test_epoch_end(None)` calling nothing: only the marker comment is added.
    assert "def test_epoch_end(self, outputs):" in fixed
    assert "# lightning-migrate: LM001 manual fix, `test_epoch_end` is used at line 9 of this file" in fixed
    assert "[safe fix]" not in capsys.readouterr().out


def test_a_read_only_file_is_reported_and_left_unchanged(tmp_path, capsys):
    path = tmp_path / "ro.py"
    path.write_text(CALLED_ELSEWHERE.replace("self.test_epoch_end(None)", "pass"), encoding="utf-8")
    before = path.read_bytes()
    path.chmod(0o444)
    assert main(["--fix", str(path)]) == 1  # the finding; the file not written is counted apart
    assert path.read_bytes() == before
    err = capsys.readouterr().err
    assert "read-only" in err and err.strip().endswith("; changed 0 files; 1 other error")


def test_a_fifo_is_reported_not_read(tmp_path, capsys):
    os.mkfifo(tmp_path / "pipe.py")
    assert main([str(tmp_path)]) == 2
    assert "pipe.py: cannot read: not a regular file" in capsys.readouterr().err


@pytest.mark.parametrize("jobs", ["-3", "0", "100000"])
def test_any_job_count_runs_within_the_cores(tmp_path, jobs):
    (tmp_path / "m.py").write_text(CALLED_ELSEWHERE, encoding="utf-8")
    assert main(["--jobs", jobs, str(tmp_path)]) == 1


def test_an_empty_select_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "m.py").write_text(CALLED_ELSEWHERE, encoding="utf-8")
    assert main(["--select", ",", str(tmp_path)]) == 2
    assert "--select names no rule" in capsys.readouterr().err


def test_a_symlink_in_a_folder_pointing_outside_it_is_not_rewritten(tmp_path, capsys):
    outside = write(tmp_path, {"elsewhere/cb.py": CALLBACK}) / "elsewhere" / "cb.py"
    inside = write(tmp_path, {"repo/pyproject.toml": "", "repo/real.py": CALLBACK}) / "repo"
    (inside / "link.py").symlink_to(outside)
    (inside / "near.py").symlink_to(inside / "real.py")  # inside the folder: the file is checked once, fixed
    code, lines, err = run(["--fix", inside], capsys)
    assert code == 1
    assert outside.read_text(encoding="utf-8") == textwrap.dedent(CALLBACK)
    assert f"error: {inside / 'link.py'}: a symlink to {outside}, outside the checked folders: not rewritten" in err
    assert any(line.startswith(f"{inside / 'link.py'}:") for line in lines)  # still checked and reported
    assert "pl_module):" in (inside / "real.py").read_text(encoding="utf-8")


def test_unsafe_fixes_without_fix_or_diff_is_a_usage_error(tree, capsys):
    code, lines, err = run(["--unsafe-fixes", tree], capsys)
    assert (code, lines) == (2, [])
    assert "lightning-migrate: error: --unsafe-fixes applies fixes: give it with --fix or --diff" in err


def test_the_summary_counts_what_was_read_not_words_of_the_error(tmp_path, capsys):
    """A file whose name holds the words of another error ("cell skipped", "fix refused") is counted by what
    happened to it: not read."""
    write(tmp_path, {"cell skipped.py": "def f(:\n", "fix refused/x.py": "def g(:\n"})
    code, lines, err = run([tmp_path], capsys)
    assert (code, lines) == (2, [])
    assert err.strip().endswith("0 findings (0 files checked); 2 files could not be read (not checked)"), err


def test_a_reader_that_stops_reading_early_gets_no_traceback(tmp_path):
    """``lightning-migrate src | head``: the pipe closes before the findings end (here about 150 KB of them, more than
    a pipe holds); the command stops quietly, exit code 1, with nothing on standard error."""
    body = "".join(
        f"class Net{n}(pl.LightningModule):\n    def training_epoch_end(self, outputs):\n        pass\n\n\n"
        for n in range(600)
    )
    (tmp_path / "many.py").write_text("import lightning.pytorch as pl\n\n\n" + body, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src")]))
    process = subprocess.Popen(
        [sys.executable, "-m", "lightning_migrate.checker", str(tmp_path / "many.py")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()  # what `head -1` does after its line
    error = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1
    assert b"LM001" in first and error == "", error


def test_fix_and_diff_say_which_fixes_they_applied(tmp_path, capsys):
    """With ``--fix`` each finding says whether its fix went into the file (``[safe fix applied]``) or not
    (``[unsafe fix not applied]`` without ``--unsafe-fixes``); with ``--diff``, whether it is in the diff; a plain
    run says what is offered (``[safe fix]``)."""
    source = (
        "from pytorch_lightning.loggers import LightningLoggerBase\n"
        "from pytorch_lightning.core.lightning import LightningModule\n\n\n"
        "def is_logger(x):\n    return isinstance(x, LightningLoggerBase)\n"
    )
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")

    def tags(*options):
        assert main([*options, str(path)]) == 1
        out, err = capsys.readouterr()
        lines = (err if "--diff" in options else out).splitlines()
        return [re.search(r"\[([a-z ]+)\] http", line)[1] for line in lines if ": LM009 " in line]

    assert tags() == ["unsafe fix", "safe fix"]
    assert tags("--diff") == ["unsafe fix not applied", "safe fix in the diff"]
    assert tags("--diff", "--unsafe-fixes") == ["unsafe fix in the diff", "safe fix in the diff"]
    assert tags("--fix") == ["unsafe fix not applied", "safe fix applied"]
    assert "from pytorch_lightning import LightningModule" in path.read_text(encoding="utf-8")


def test_version(capsys):
    from lightning_migrate import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"lightning-migrate {__version__}\n"
