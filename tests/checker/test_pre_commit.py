"""The shipped ``.pre-commit-hooks.yaml``, run by pre-commit itself (``pre-commit try-repo``) in a new git repository:
pre-commit passes one file name, and the hook still resolves the file's base class in another file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: One worker runs both tests (``--dist loadgroup``), so the hook's environment is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("pre-commit-home")

ROOT = Path(__file__).resolve().parents[2]
BASE = "import lightning.pytorch as pl\n\n\nclass Base(pl.LightningModule):\n    pass\n"
CHILD = "from app.base import Base\n\n\nclass Child(Base):\n    def training_epoch_end(self, outputs):\n        pass\n"


def git(*args: str, cwd: Path) -> None:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")  # the hook's environment is built once for these tests


def try_repo(hook: str, repo: Path, home: Path) -> subprocess.CompletedProcess:
    pre_commit = shutil.which("pre-commit", path=os.path.dirname(sys.executable)) or shutil.which("pre-commit")
    assert pre_commit, "pre-commit is in requirements-test.txt"
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    return subprocess.run(
        [pre_commit, "try-repo", str(ROOT), hook, "--files", "src/app/child.py", "--verbose"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def make_repo(path: Path) -> Path:
    (path / "src" / "app").mkdir(parents=True)
    (path / "src" / "app" / "__init__.py").write_text("")
    (path / "src" / "app" / "base.py").write_text(BASE)
    (path / "src" / "app" / "child.py").write_text(CHILD)
    git("init", "-q", cwd=path)
    git("add", "-A", cwd=path)
    git("commit", "-qm", "start", cwd=path)
    return path


def test_the_report_hook_finds_a_cross_file_subclass(tmp_path, pre_commit_home):
    repo = make_repo(tmp_path / "user-project")
    proc = try_repo("lightning-migrate", repo, pre_commit_home)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "src/app/child.py:5:9: LM001" in proc.stdout, proc.stdout
    assert "possible" not in proc.stdout  # the base in base.py was resolved, not guessed
    assert (repo / "src" / "app" / "child.py").read_text() == CHILD


def test_the_fix_hook_rewrites_the_file(tmp_path, pre_commit_home):
    repo = make_repo(tmp_path / "user-project")
    proc = try_repo("lightning-migrate-fix", repo, pre_commit_home)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "def on_train_epoch_end(self):" in (repo / "src" / "app" / "child.py").read_text()
    assert try_repo("lightning-migrate", repo, pre_commit_home).returncode == 0
