"""Shared fixtures: the whole site, built once per test run, and this test run's kept Lightning runs.

The real site is built once per test run (:func:`site`) and every test that reads built pages, notebooks or browser
output shares that build -- with pytest-xdist, the workers share it too. It is the build ``nox`` made before pytest
(``GUIDE_SITE_BUILD``), or the one ``nox -s docs`` left in ``_build/html`` when every source file is still the one it
built, or else a build from a copy of the tree without any generated file (:func:`given_site`; pytest's first lines
say which). Each extension's behaviour is tested on a small fixture project (``builds.project``) instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

# The tests train toy models in this process, in pytest-xdist's workers, in notebook kernels and in the processes they
# start: one intra-op thread each, as the site's build has (conf.py). With torch's default of one thread per core,
# the workers' threads contend for the two cores: a matrix cell took 0.77 s instead of 0.20 s on a loaded 2-core
# machine (20 cells, cProfile: torch's linear and backward spinning). Set before anything imports torch; the xdist
# workers and every subprocess inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
from build_mechanics import declared_warnings, run_cache, site_build  # noqa: E402
from builds import GENERATED, ROOT, Build, copy_tree, sphinx_build  # noqa: E402
from filelock import FileLock  # noqa: E402


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


#: The environment variable that names the build the tests read as the site (the output directory of a recorded
#: build, :mod:`build_mechanics.site_build`), or ``copy`` to build it from a copy of the tree whatever exists.
SITE_VARIABLE = "GUIDE_SITE_BUILD"
#: The build ``nox -s docs``, ``nox -s doctest`` and ``nox -s tests`` leave: read when it is usable and no build is
#: named.
DEFAULT_BUILD = ROOT / "_build" / "html"


def given_site() -> tuple[site_build.Record | None, str]:
    """The recorded build the tests read as the site, and a sentence saying which build and why.

    ``GUIDE_SITE_BUILD=DIR`` names it: it must be usable (:func:`build_mechanics.site_build.usable`), or every test
    reading the site fails with the reason. ``GUIDE_SITE_BUILD=copy``: none (the site is built from a copy of the
    tree). Unset: ``_build/html`` when it is usable, else none, the sentence saying why it was not used.

    Raises:
        pytest.UsageError: ``GUIDE_SITE_BUILD`` names a build that is not usable.
    """
    value = os.environ.get(SITE_VARIABLE, "").strip()
    if value == "copy":
        return None, f"{SITE_VARIABLE}=copy: the tests build the site from a copy of the tree"
    if value:
        record, reason = site_build.usable(Path(value), ROOT)
        if record is None:
            raise pytest.UsageError(f"{SITE_VARIABLE}={value} cannot be read as the site: {reason}")
        return record, f"the tests read the build {record.outdir} ({SITE_VARIABLE})"
    record, reason = site_build.usable(DEFAULT_BUILD, ROOT)
    if record is None:
        return None, f"not reading {DEFAULT_BUILD.relative_to(ROOT)}: {reason}; the tests build the site from a copy"
    return record, f"the tests read {DEFAULT_BUILD.relative_to(ROOT)}, a complete build of these sources"


def pytest_report_header(config):
    """Which build of the site the tests read (:func:`given_site`), on the first lines of the run."""
    try:
        return f"site: {given_site()[1]}"
    except pytest.UsageError as error:
        return f"site: {error}"


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Build:
    """The whole site (every example executed), built once per test run.

    A recorded build of these sources is read as it is (:func:`given_site`: the one ``nox`` builds before pytest,
    or the one ``nox -s docs`` left in ``_build/html``); nothing the tests do writes into it. Without one, the site
    is built from a fresh copy of the tree: the first pytest-xdist worker to ask builds it; the others wait for
    that build and read the same one.
    """
    try:
        record, _ = given_site()
    except pytest.UsageError as error:
        pytest.fail(str(error), pytrace=False)
    if record is not None:
        python = tuple(record.python)
        return Build(record.tree, record.outdir, record.returncode, record.output, python, record.executable)
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


def generated_state(tree: Path) -> dict[str, tuple[int, int]]:
    """``{relative path: (size, modification time in ns)}`` of the files a build generates in ``tree``'s sources
    (:data:`builds.GENERATED`): what a rebuild must leave as it was."""
    state = {}
    for generated in GENERATED:
        path = tree / generated
        for file in sorted(path.rglob("*")) if path.is_dir() else [path] if path.is_file() else []:
            if file.is_file():
                info = file.stat()
                state[file.relative_to(tree).as_posix()] = (info.st_size, info.st_mtime_ns)
    return state


def rebuild(build: Build, destination: Path) -> Build:
    """Build ``build``'s tree again into a copy of its output directory (doctrees included), with nothing changed
    and without ``CI`` (nothing cached is re-executed), with the Python the build ran in: what a second ``nox -s docs``
    does to the first one's output. (Another environment's extensions put other paths into the configuration, e.g.
    ``html_static_path``, and Sphinx then reads every page again.) Returns the :class:`Build` of the copy (never
    raises on a failed build).

    Raises:
        AssertionError: the rebuild changed a file the build generated in the sources (``docs/examples``, ...),
            which the recorded build the tests read shares.
    """
    outdir = destination / build.outdir.name
    shutil.copytree(build.outdir, outdir)  # modification times kept: the pages are up to date
    before = generated_state(build.tree)
    # CI and PYTHONWARNINGS are the build's own (a test that imported the site's conf.py set PYTHONWARNINGS here)
    env = {key: value for key, value in os.environ.items() if key not in ("CI", "PYTHONWARNINGS")}
    env |= {"PYTHONHASHSEED": "0"}
    command = [build.executable, "-m", "sphinx", *site_build.SPHINX, "-b", "html"]
    proc = subprocess.run(
        [*command, "-d", str(outdir / ".doctrees"), "docs", str(outdir)],
        cwd=build.tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    changed = sorted(name for name, state in generated_state(build.tree).items() ^ before.items())
    # the tree may be the recorded build the whole test run reads: a rebuild must write only into its own copy
    assert not changed, f"the rebuild rewrote the build's generated sources in {build.tree}: {changed[:10]}"
    return Build(build.tree, outdir, proc.returncode, proc.stdout + proc.stderr, build.python, build.executable)


@pytest.fixture(scope="session")
def rebuilt_site(site, tmp_path_factory) -> Build:
    """:func:`site` rebuilt with nothing changed (:func:`rebuild`); ``site`` itself is left as its clean build wrote
    it."""
    build = rebuild(site, tmp_path_factory.mktemp("rebuilt"))
    assert build.returncode == 0, build.output[-6000:]
    assert "targets for 0 source files that are out of date" in build.output, build.output[-6000:]
    return build
