"""The recorded build of the site (``build_mechanics.site_build``): the tests read it only while it is the build of
the current sources, and any other build into its folder removes its record."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from build_mechanics import site_build
from builds import ROOT

EXT = ROOT / "docs" / "_ext"


def tiny_project(root: Path) -> Path:
    """A project laid out as the guide is (``conf.py`` at the root, pages in ``docs/``), with the recording extension
    and one page."""
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.rst").write_text("Tiny\n====\n\nOne page.\n", encoding="utf-8")
    (root / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\nextensions = ['build_mechanics.site_build']\n", encoding="utf-8"
    )
    return root


def test_a_build_is_usable_until_a_source_changes(tmp_path, monkeypatch):
    root = tiny_project(tmp_path / "project")
    monkeypatch.delenv("CI", raising=False)
    lines = []
    record = site_build.build(Path("_build/html"), [], root=root, echo=lines.append)
    assert record.returncode == 0, record.output
    assert "".join(lines) == record.output and "build succeeded" in record.output
    assert record.sources.keys() == {"conf.py", "docs/index.rst"} and record.ci is False
    assert site_build.record_path(root / "_build" / "html") == root / "_build" / "html.build.json"
    assert site_build.usable(root / "_build" / "html", root) == (site_build.read_record(root / "_build" / "html"), "")

    (root / "tests").mkdir()
    (root / "tests" / "test_new.py").write_text("def test_new(): pass\n", encoding="utf-8")  # the build reads no test
    assert site_build.usable(root / "_build" / "html", root)[1] == ""
    (root / "docs" / "index.rst").write_text("Tiny\n====\n\nTwo pages.\n", encoding="utf-8")
    (root / "docs" / "new.rst").write_text("New\n===\n", encoding="utf-8")
    found, reason = site_build.usable(root / "_build" / "html", root)
    assert found is None
    assert reason.endswith(
        f"the sources changed since the build into {root / '_build' / 'html'}: docs/index.rst, docs/new.rst"
    )


def test_a_build_with_options_or_a_failure_is_not_the_site(tmp_path):
    root = tiny_project(tmp_path / "project")
    record = site_build.build(Path("_build/html"), ["-D", "html_baseurl=https://example.org/"], root=root, echo=str)
    assert record.returncode == 0
    assert "was given -D html_baseurl=https://example.org/" in site_build.usable(root / "_build" / "html", root)[1]

    (root / "docs" / "index.rst").write_text("Tiny\n====\n\n.. no-such-directive::\n", encoding="utf-8")
    record = site_build.build(Path("_build/html"), [], root=root, echo=str)
    assert record.returncode == 1  # -W: the unknown directive's error fails the build
    assert site_build.usable(root / "_build" / "html", root)[1].endswith("failed (exit code 1)")


def test_another_build_into_the_folder_removes_the_record(tmp_path):
    root = tiny_project(tmp_path / "project")
    assert site_build.build(Path("_build/html"), [], root=root, echo=str).returncode == 0
    assert site_build.record_path(root / "_build" / "html").is_file()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONWARNINGS"}
    command = [sys.executable, "-m", "sphinx", "-q", "-b", "html", "-c", ".", "docs", "_build/html"]
    subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)
    assert not site_build.record_path(root / "_build" / "html").exists()
    reason = site_build.usable(root / "_build" / "html", root)[1]
    assert reason.endswith("holds no record of a completed build (build_mechanics.site_build writes one)")


def test_source_files_outside_git_leave_out_generated_and_tool_folders(tmp_path):
    root = tiny_project(tmp_path / "project")
    for name in ("docs/examples/x.rst", "_build/html/index.html", "src/pkg/__pycache__/m.pyc", "src/pkg/m.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x", encoding="utf-8")
    assert site_build.source_files(root) == ["conf.py", "docs/index.rst", "src/pkg/m.py"]


def test_the_tests_read_a_recorded_build_only_when_it_is_current(tmp_path, monkeypatch):
    """conftest's choice: GUIDE_SITE_BUILD names a build that must be usable; ``copy`` builds from a copy."""
    import conftest

    monkeypatch.setenv(conftest.SITE_VARIABLE, "copy")
    assert conftest.given_site() == (None, "GUIDE_SITE_BUILD=copy: the tests build the site from a copy of the tree")
    monkeypatch.setenv(conftest.SITE_VARIABLE, str(tmp_path / "missing"))
    try:
        conftest.given_site()
    except Exception as error:  # pytest.UsageError
        assert f"{tmp_path / 'missing'} does not exist" in str(error)
    else:
        raise AssertionError("a missing build was accepted")
