"""Shared fixtures: the whole site, built once per test run, and this test run's kept Lightning runs.

The real site is built once (:func:`site`), from a copy of the tree without any generated file, and every test
that reads built pages, notebooks or browser output shares that build -- with pytest-xdist, the workers share it
too. Each extension's behaviour is tested on a small fixture project (``builds.project``) instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from build_mechanics import declared_warnings, run_cache
from builds import Build, copy_tree, sphinx_build
from filelock import FileLock


def pytest_configure(config):
    """One directory of kept Lightning runs (the probes, the scenario matrix) for every build of this test run,
    unless the caller gave one (``nox`` gives the doc-test session and pytest the same: see noxfile.py).

    The warnings the build accepts (``build_mechanics.declared_warnings``, each with its reason) are ignored here
    too: the tests that run Lightning in this process (the scenario harness) see the build's filters, not a list
    of their own."""
    for entry in declared_warnings.DECLARED:
        config.addinivalue_line("filterwarnings", f"ignore:{re.escape(entry.message)}:{entry.category}")
    if not run_cache.directory() and not hasattr(config, "workerinput"):  # xdist workers inherit the controller's
        folder = tempfile.mkdtemp(prefix="guide-run-cache-")
        os.environ[run_cache.VARIABLE] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def pytest_collection_modifyitems(config, items):
    """The tests that need the whole site run after those that do not (a stable sort: the order is otherwise
    pytest's), so that with pytest-xdist the other workers test the checker, the extensions and the matrix while
    one worker builds the site."""
    items.sort(key=lambda item: "site" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Build:
    """The whole site, built once per test run from a fresh copy of the tree (every example executed).

    The first pytest-xdist worker to ask builds it; the others wait for that build and read the same one.
    """
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's base folder, which every worker's own folder is in
    summary = shared / "site.json"
    with FileLock(str(shared / "site.lock")):
        if not summary.is_file():
            tree = copy_tree(shared / "site")
            build = sphinx_build(tree)
            summary.write_text(json.dumps({"returncode": build.returncode, "output": build.output}), "utf-8")
        recorded = json.loads(summary.read_text(encoding="utf-8"))
    tree = shared / "site"
    build = Build(tree, tree / "_build" / "html", recorded["returncode"], recorded["output"])
    assert build.returncode == 0, build.output[-6000:]
    return build


def rebuild(build: Build, destination: Path) -> Build:
    """Build ``build``'s tree again into a copy of its output directory (doctrees included), with nothing changed
    and without ``CI`` (nothing cached is re-executed): what a second ``nox -s docs`` does to the first one's output.
    Returns the :class:`Build` of the copy (never raises on a failed build)."""
    outdir = destination / build.outdir.name
    shutil.copytree(build.outdir, outdir)  # modification times kept: the pages are up to date
    # CI and PYTHONWARNINGS are the build's own (a test that imported the site's conf.py set PYTHONWARNINGS here)
    env = {key: value for key, value in os.environ.items() if key not in ("CI", "PYTHONWARNINGS")}
    env |= {"PYTHONHASHSEED": "0"}
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
