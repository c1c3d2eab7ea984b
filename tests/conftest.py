"""Shared fixtures: copies of the project tree and Sphinx builds of them.

Every build here runs in a copy of the tree in a temporary directory, with ``CI=true`` (so nothing cached is
reused), ``-W --keep-going`` (a warning is a failure), and the Python that runs the tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Generated or tool-owned paths that a copy of the tree leaves out.
IGNORED = shutil.ignore_patterns(
    ".git",
    ".nox",
    ".venv",
    "_build",
    "__pycache__",
    "*.egg-info",
    ".pytest_cache",
    ".ruff_cache",
    "jupyter_execute",
    ".jupyter_cache",
    "lightning_logs",
)
GENERATED = ("docs/examples", "docs/sg_execution_times.rst", "docs/checker/rules")


@dataclass
class Build:
    """A finished ``sphinx-build`` run: its tree, output directory, exit code and combined output."""

    tree: Path
    outdir: Path
    returncode: int
    output: str

    def page(self, docname: str) -> str:
        """The HTML of ``docname`` (e.g. ``examples/core/module_side_caching``); fails the test if missing."""
        path = self.outdir / f"{docname}.html"
        assert path.is_file(), f"{docname}.html was not built"
        return path.read_text(encoding="utf-8")


def copy_tree(destination: Path) -> Path:
    """Copy the project's sources (no generated output) to ``destination``; return it."""
    shutil.copytree(ROOT, destination, ignore=IGNORED)
    for generated in GENERATED:
        path = destination / generated
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    return destination


def sphinx_build(tree: Path, builder: str = "html", *args: str) -> Build:
    """Build ``tree``'s site with ``builder``; return the :class:`Build` (never raises on a failed build)."""
    outdir = tree / "_build" / builder
    env = dict(os.environ, CI="true", PYTHONHASHSEED="0")
    command = [sys.executable, "-m", "sphinx", "-T", "-W", "--keep-going", "-j", "auto", "-b", builder, "-c", "."]
    proc = subprocess.run(
        [*command, "docs", str(outdir), *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return Build(tree, outdir, proc.returncode, proc.stdout + proc.stderr)


def source_snapshot(tree: Path) -> dict[str, bytes]:
    """Every file of ``tree`` except build output and generated gallery pages, by relative path."""
    snapshot = {}
    for path in sorted(tree.rglob("*")):
        relative = path.relative_to(tree).as_posix()
        if path.is_file() and not relative.startswith(("_build/", *GENERATED)) and "__pycache__" not in relative:
            snapshot[relative] = path.read_bytes()
    return snapshot


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Build:
    """The whole site, built once per test session from a fresh copy of the tree."""
    tree = copy_tree(tmp_path_factory.mktemp("site") / "tree")
    build = sphinx_build(tree)
    assert build.returncode == 0, build.output[-6000:]
    return build


def rebuild(build: Build, destination: Path) -> Build:
    """Build ``build``'s tree again into a copy of its output directory (doctrees included), with nothing changed
    and without ``CI`` (nothing cached is re-executed): what a second ``nox -s docs`` does to the first one's output.
    Returns the :class:`Build` of the copy (never raises on a failed build)."""
    outdir = destination / build.outdir.name
    shutil.copytree(build.outdir, outdir)  # modification times kept: the pages are up to date
    env = {key: value for key, value in os.environ.items() if key != "CI"} | {"PYTHONHASHSEED": "0"}
    command = [sys.executable, "-m", "sphinx", "-T", "-W", "--keep-going", "-j", "auto", "-b", "html", "-c", "."]
    proc = subprocess.run(
        [*command, "-d", str(outdir / ".doctrees"), "docs", str(outdir)],
        cwd=build.tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return Build(build.tree, outdir, proc.returncode, proc.stdout + proc.stderr)


@pytest.fixture(scope="session")
def rebuilt_site(site, tmp_path_factory) -> Build:
    """:func:`site` rebuilt with nothing changed (:func:`rebuild`); ``site`` itself is left as its clean build wrote
    it."""
    build = rebuild(site, tmp_path_factory.mktemp("rebuilt"))
    assert build.returncode == 0, build.output[-6000:]
    assert "targets for 0 source files that are out of date" in build.output, build.output[-6000:]
    return build


GALLERY_SCRIPTS = sorted(p.relative_to(ROOT / "gallery") for p in (ROOT / "gallery").rglob("*.py"))
