"""Sessions of the migration guide.

``nox -s docs`` builds the site; ``nox`` (the default sessions) is the test command CI runs; ``nox -s record``
rewrites the committed records of the old and 2.x releases (``data/compat/*.json``) on purpose.
Arguments after ``--`` pass through to ``sphinx-build`` (``docs``, ``doctest``) or ``pytest`` (``tests``).
"""

import functools
import os
import shutil
import sys
import time
from pathlib import Path

import nox

nox.options.default_venv_backend = "virtualenv"  # pip finds the local CPU wheel of torch; uv does not
# The releases first, then the tests (the doc-test build, then pytest on it, in one environment): each release
# session removes its environment when it ends (remove_environment), so one environment with torch exists at a time.
nox.options.sessions = ["lint", "mypy", "legacy", "matrix", "tests"]
nox.options.error_on_missing_interpreters = True
# A second `nox -s docs` reuses its environment (pip only checks the pins), so a rebuild stays a rebuild: a new
# environment would make Sphinx rewrite every page. A fresh clone, as in CI, still gets new environments.
nox.options.reuse_venv = "yes"

PYTHON = "3.11"
ROOT = Path(__file__).resolve().parent
#: Whether this run re-executes everything (CI sets CI=true): then the tests session builds the site afresh.
EXECUTE_ALL = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


HOSTED_REQUIREMENTS = "requirements-hosted.txt"


def index_options() -> list[str]:
    """The index options of requirements-hosted.txt (PyTorch's CPU index, written there once), as pip options."""
    lines = (ROOT / HOSTED_REQUIREMENTS).read_text(encoding="utf-8").splitlines()
    return [word for line in lines if line.startswith("--") for word in line.split("#")[0].split()]


@functools.cache
def local_cpu_torch() -> str | None:
    """Where pip, as configured here (``pip config list``: find-links folders and ``file://`` indexes, e.g. a CI
    machine's wheel cache), finds torch's CPU wheel of the pin (``torch-<version>+cpu-*.whl``); ``None`` when it
    does not (a user's machine), or when pip cannot say."""
    import subprocess

    version = torch_pin().removeprefix("torch==")
    try:
        listing = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    places = []
    for line in listing.splitlines():
        name, _, value = line.partition("=")
        if name.endswith(("find-links", "extra-index-url", "index-url")):
            for place in value.strip("'\"").split():
                folder = Path(place.removeprefix("file://"))
                if place.startswith("file://") or not place.startswith(("http://", "https://")):
                    places += [folder, folder / "torch"]
    for folder in places:
        if folder.is_dir() and any(folder.glob(f"torch-{version}+cpu-*.whl")):
            return str(folder)
    return None


def build_requirements() -> str:
    """The requirements file of the build environment: ``BUILD_REQUIREMENTS`` when set (the hosted builds set
    requirements-hosted.txt); else requirements.txt where pip takes torch's CPU build anyway -- off Linux, where
    PyPI's torch wheels are the CPU build, or where pip finds the CPU wheel of the pin on this machine
    (:func:`local_cpu_torch`: no index is asked, so a machine without network access stays offline); else, on Linux,
    requirements-hosted.txt, whose PyTorch CPU index gives the CPU build where PyPI's is the CUDA build (gigabytes of
    GPU libraries the examples never use)."""
    if os.environ.get("BUILD_REQUIREMENTS"):
        return os.environ["BUILD_REQUIREMENTS"]
    if not sys.platform.startswith("linux") or local_cpu_torch():
        return "requirements.txt"
    return HOSTED_REQUIREMENTS


#: Dask, pinned: the scenario matrix and the exploration run their cells on a Dask scheduler's workers when given
#: its address (``GUIDE_DASK_SCHEDULER``, or ``nox -s explore -- --scheduler ADDRESS``).
DASK_REQUIREMENTS = "requirements-dask.txt"
SCHEDULER_VARIABLE = "GUIDE_DASK_SCHEDULER"


def install_build(session):
    """Install the site's pinned build environment (:func:`build_requirements`) into the session: the pins and this
    project itself, whose ``lightning-migrate`` command the pages run; and Dask when ``GUIDE_DASK_SCHEDULER`` names
    a scheduler for the scenario matrix. torch first (:func:`install_torch`); the rest by
    :func:`install_beside_torch`."""
    requirements = build_requirements_once()
    if requirements == HOSTED_REQUIREMENTS:
        session.install("-r", requirements)  # PyTorch's CPU index, written in the file: pip reads it
    else:
        install_torch(session)
        install_beside_torch(session, "-r", requirements)
    if os.environ.get(SCHEDULER_VARIABLE):
        install_beside_torch(session, "-r", DASK_REQUIREMENTS)


def install_torch(session, index: list[str] | None = None) -> None:
    """Install the pinned torch's CPU build into the session: from PyTorch's CPU index (``index``, the options of
    requirements-hosted.txt) with pip; else, where pip's configuration holds the CPU wheel of the pin
    (:func:`local_cpu_torch`) and uv is beside nox, with uv from that folder (``--find-links``), the pin's local
    version ``+cpu`` named so that no index's CUDA build can meet it; else with pip, which finds that wheel itself.

    uv unpacks the wheel once into its cache and links it into each environment after that. Measured on this
    project's 2-core machine, the pinned torch and its dependencies into a new environment, bytecode compiled: 17.8 s
    with pip, 7.8 s with uv the first time and 5.5 s the next (``uv pip install --compile-bytecode``); a default
    ``nox`` run makes six environments with torch."""
    uv, folder = shutil.which("uv"), local_cpu_torch()
    if index or uv is None or folder is None:
        session.install(*(index or []), torch_pin())
        return
    python = str(Path(session.bin) / "python")
    pin = f"{torch_pin()}+cpu"
    command = (uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python, "--find-links", folder, pin)
    session.run_install(*command, external=True)


def install_beside_torch(session, *args: str) -> None:
    """Install ``args`` into the session's environment, where pip has installed torch's CPU wheel: with uv where
    this machine has it beside nox (``pip install "nox[uv]"``, as .ci/run does) and torch needs no index of its
    own (not requirements-hosted.txt), else with pip (``session.install``); an install command either way
    (``session.run_install``: ``nox --install-only`` runs it).

    uv takes the installed CPU build of the pinned torch as meeting the pin (it never sees the local wheel, so it
    must not install torch) and fetches the rest in parallel. Measured on this project's 2-core machine, each into a new
    environment holding torch, with an empty download cache: lightning 2.0.9 and the matrix's pins, 27 s with pip
    and 2 s with uv; the same packages and versions installed (``pip list``, for lightning 2.2.5).

    ``--compile-bytecode`` writes the ``.pyc`` files at install, as pip does: uv leaves them out, and where
    ``PYTHONDONTWRITEBYTECODE`` is set (this machine sets it) no interpreter writes them later, so every process
    compiled lightning again. Measured on 9 downloaded notebooks run one after another (tests/test_notebooks.py):
    58.1 s with an environment uv left uncompiled, 42.8 s with the same environment compiled."""
    uv = shutil.which("uv")
    if uv is None or build_requirements_once() == HOSTED_REQUIREMENTS:
        session.install(*args)
        return
    python = str(Path(session.bin) / "python")
    session.run_install(uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python, *args, external=True)


def requirement_pin(name: str) -> str:
    """The ``name==<version>`` line of requirements.txt, its one place.

    Raises:
        ValueError: requirements.txt pins no ``name``.
    """
    path = ROOT / "requirements.txt"
    for line in path.read_text(encoding="utf-8").splitlines():
        requirement = line.split("#")[0].strip()
        if requirement.startswith(f"{name}==") and len(requirement) > len(f"{name}=="):
            return requirement
    raise ValueError(f"{path}: no `{name}==<version>` line")


def torch_pin() -> str:
    """The torch requirement of requirements.txt (``torch==<version>``, the CPU wheel)."""
    return requirement_pin("torch")


def remove_environment(session):
    """Remove the session's environment (:attr:`nox.sessions.Session.env_dir`) when its commands have run.

    Each environment holds torch's CPU wheel, installed: 0.75 GB of 1.0-1.6 GB. The default sessions made seven
    such environments, 8.2 GB in all, and a CI machine with about 4 GB free ran out of disk installing the third
    one. A removed environment is made again by the next run of its session (torch is a local wheel; about 40 s).
    """
    shutil.rmtree(session.env_dir, ignore_errors=True)


_REQUIREMENTS: list[str] = []


def build_requirements_once() -> str:
    """:func:`build_requirements`, asked once per ``nox`` run."""
    if not _REQUIREMENTS:
        _REQUIREMENTS.append(build_requirements())
    return _REQUIREMENTS[0]


_RUN_CACHE = []


def run_cache() -> str:
    """This ``nox`` run's directory of recorded runs (``_build/run-cache/<run>``), created on first use, the
    previous runs' removed: the doc-test session and pytest's builds make the probes and the scenario matrix once
    per set of inputs there (docs/_ext/build_mechanics/run_cache.py), and a new ``nox`` run makes them again."""
    if not _RUN_CACHE:
        parent = ROOT / "_build" / "run-cache"
        if parent.is_dir():
            shutil.rmtree(parent, ignore_errors=True)
        _RUN_CACHE.append(str(parent / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"))
    return _RUN_CACHE[0]


#: The site's build: ``build_mechanics.site_build`` runs ``sphinx-build`` with the one command of every build of the
#: site into this folder, and records it beside it (``_build/html.build.json``) for pytest to read.
SITE = "_build/html"
SITE_BUILD = "docs/_ext/build_mechanics/site_build.py"


def usable_site():
    """``(record, reason)``: whether ``_build/html`` is a recorded, successful build of these sources with no extra
    option (``build_mechanics.site_build.usable``), read without importing Sphinx."""
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    from build_mechanics import site_build

    return site_build.usable(ROOT / SITE, ROOT)


def build_site(session, *options, execute_all: bool):
    """Build the site into ``_build/html`` with the session's Python, Sphinx's output printed as it comes, and record
    it (``build_mechanics.site_build``). ``execute_all``: ``CI=true``, every example, notebook and probe re-executed
    and, with this ``nox`` run's ``GUIDE_RUN_CACHE``, the probes and the scenario matrix kept for pytest's builds."""
    env = {"CI": "true", "GUIDE_RUN_CACHE": run_cache()} if execute_all else {}
    session.run("python", SITE_BUILD, SITE, *options, env=env)


@nox.session(python=PYTHON)
def docs(session):
    """Build the HTML site into _build/html, executing every example that changed (all of them with CI=true)."""
    install_build(session)
    build_site(session, *session.posargs, execute_all=False)


@nox.session(python=PYTHON)
def doctest(session):
    """The doc-test build alone: the site into _build/html with every example executed (CI=true); any error or
    warning fails. ``nox -s tests`` makes the same build when no current one exists, then reads it."""
    install_build(session)
    try:
        build_site(session, *session.posargs, execute_all=True)
    finally:
        remove_environment(session)  # the tests session reads the build from its own environment


@nox.session(python=PYTHON)
def tests(session):
    """The doc-test build, then pytest on it: the real site built once, with every example executed (CI=true),
    into _build/html, unless it already holds a recorded build of these sources and CI is not set (``nox -s docs``
    left one); then pytest reads that build, tests the extensions on small projects and runs every notebook."""
    install_build(session)
    install_beside_torch(session, "-r", "requirements-test.txt")
    record, reason = usable_site()
    if record is not None and not EXECUTE_ALL:
        session.log(f"reading the site's build in {SITE}: every source file is the one it built")
    else:
        session.log(f"building the site into {SITE}: " + ("CI is set" if EXECUTE_ALL else reason))
        build_site(session, execute_all=True)
    # -n auto: one pytest-xdist worker per core; --dist loadgroup: the tests of one xdist_group on one worker (they
    # share an expensive module fixture); GUIDE_SITE_BUILD: the build every test of the site reads
    env = {"GUIDE_RUN_CACHE": run_cache(), "GUIDE_SITE_BUILD": str(ROOT / SITE)}
    session.run("pytest", "-n", "auto", "--dist", "loadgroup", *session.posargs, env=env)


#: Where ``nox -s preview`` keeps its copy of the tree and builds it (never _build/html, never the tree's own
#: generated gallery pages: a later real build would take a preview's pages as current).
PREVIEW = ROOT / "_build" / "preview"


@nox.session(python=PYTHON, default=False)
def preview(session):
    """For writers: every page rendered, nothing executed (no example, notebook, probe, matrix, witness or claim
    check; their places show a "not executed in preview" box), into _build/preview/html; never published.
    Warnings are printed, not errors (a placeholder leaves a reference unresolved). Arguments go to sphinx-build."""
    install_build(session)
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    from build_mechanics import site_build

    tree = site_build.sync_tree(ROOT, PREVIEW / "tree")  # unchanged files keep their times: a rebuild is quick
    outdir = PREVIEW / "html"
    command = ("python", "-m", "sphinx", "-T", "--keep-going", "-j", "auto", "-b", "html", "-c", ".")
    with session.chdir(tree):
        session.run(*command, "docs", str(outdir), *session.posargs, env={"GUIDE_PREVIEW": "1"})
    session.log(f"preview (nothing executed, not for publishing): {outdir}/index.html")


@nox.session(python=PYTHON)
def lint(session):
    """ruff over the whole project, gallery included."""
    session.install("ruff==0.17.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHON)
def mypy(session):
    """mypy over src/lightning_migrate and src/migration_guide (pyproject.toml's [tool.mypy]), with libcst at its pin;
    no torch here."""
    session.install("mypy==2.4.1", requirement_pin("libcst"))
    session.run("mypy")


@nox.session(python=PYTHON)
def bench(session):
    """Print build figures: clean build vs bare script run, their ratio, and the no-op rebuild."""
    install_build(session)
    session.run("python", "benchmarks/build_speed.py", *session.posargs)


# -- Old and 2.x Lightning releases: data/compat/<version>.json, rendered by docs/_ext/compat_table.py ------------
def _compat_matrix():
    """The declared releases (data/compat/matrix.toml), checked against its schema (``compat_schema``: the standard
    library only, so nox imports it without the project's dependencies)."""
    sys.path.insert(0, str(ROOT / "src"))
    from migration_guide import compat_schema

    return compat_schema.read(ROOT / "data" / "compat" / "matrix.toml")


COMPAT = _compat_matrix()


def install_lightning_release(session, entry):
    """torch's CPU wheel first, then the release's ``pins`` with torch held, then ``after`` without dependencies.

    ``after`` is for pins that contradict the pinned torch's metadata (the oldest legacy release is pinned with
    setuptools<70, torch declares setuptools>=77): resolved together, pip would replace torch by an older CUDA
    build instead.
    """
    # torch's CPU build, from PyTorch's CPU index where the build environment needs it (build_requirements)
    index = index_options() if build_requirements_once() == HOSTED_REQUIREMENTS else []
    install_torch(session, index)
    if index:
        session.install(*index, torch_pin(), *entry["pins"])
    else:
        install_beside_torch(session, torch_pin(), *entry["pins"])
    if entry.get("after"):
        install_beside_torch(session, "--no-deps", *entry["after"])


def run_release(session, group, version, *args, extra=()):
    """Install ``version`` in the session's own environment (and the pins ``extra``) and run migration_guide.compat
    there with ``args``."""
    try:
        install_lightning_release(session, COMPAT[group][version])
        if extra:
            install_beside_torch(session, *extra)
        src = str(ROOT / "src")  # the project's code runs from the tree: its records are read and written there
        env = {"PYTHONPATH": src, "OMP_NUM_THREADS": "1"}  # toy models: one intra-op thread, as the build has
        session.run("python", "-m", "migration_guide.compat", "--version", version, *args, env=env)
    finally:
        remove_environment(session)  # one release's environment at a time


@nox.session(python=PYTHON)
@nox.parametrize("version", list(COMPAT["legacy"]))
def legacy(session, version):
    """The old patterns on 1.x: what each old hook received, Lightning's deprecation warnings, the equivalence;
    fails when the run differs from the committed data/compat/<version>.json."""
    run_release(session, "legacy", version, "--check")


@nox.session(python=PYTHON)
@nox.parametrize("version", list(COMPAT["matrix"]))
def matrix(session, version):
    """The replacement examples and the old patterns on the declared 2.x releases (run after `legacy`, whose
    records of this run they compare with); fails when the run differs from the committed record. On a release
    other than the build's own (which runs the whole scenario matrix), every recipe of data/scenarios.toml runs too,
    in the smallest set of cells that meets each value of its domain (``--scenario-cells``); on each, the pages are
    checked for names and arguments the release lacks (``--pages``)."""
    run_release(session, "matrix", version, "--check", "--pages", *scenario_cells(version), extra=cell_pins(version))


def scenario_cells(version: str) -> list[str]:
    """``--scenario-cells`` on a 2.x release other than the build's own (which runs the whole scenario matrix): every
    recipe of data/scenarios.toml in the release's cells, their outcomes part of its record."""
    build = requirement_pin("lightning").removeprefix("lightning==")
    return ["--scenario-cells"] if version in COMPAT["matrix"] and version != build else []


def cell_pins(version: str) -> list[str]:
    """What the recipes' cells need beside Lightning: joblib's workers, the checker (a rewrite's recipe runs its fix),
    matplotlib (a page's import)."""
    return [requirement_pin(name) for name in ("joblib", "libcst", "matplotlib")] if scenario_cells(version) else []


@nox.session(python=PYTHON, default=False)
@nox.parametrize("version", [*COMPAT["legacy"], *COMPAT["matrix"]])
def record(session, version):
    """Rewrite data/compat/<version>.json from a run on that release, on purpose (legacy releases first: the 2.x
    releases compare with the reference release's new record), with the outcomes of the recipes' cells on the 2.x
    releases other than the build's own. Review the diff, then commit it."""
    group = "legacy" if version in COMPAT["legacy"] else "matrix"
    run_release(session, group, version, *scenario_cells(version), extra=cell_pins(version))


@nox.session(python=PYTHON)
def explore(session):
    """Not a default session: draw many more scenarios than the build runs, at random, for a time budget, and print
    every cell that does not behave as data/scenarios.toml declares (``nox -s explore -- --minutes 10 --seed 1``;
    ``-- --scheduler tcp://host:8786`` runs the cells on a Dask scheduler's workers)."""
    install_build(session)
    session.install("-r", DASK_REQUIREMENTS)
    sys.path[:0] = [str(ROOT / "docs" / "_ext"), str(ROOT / "src")]  # the filters, and the list they apply
    from build_mechanics import declared_warnings  # the build's warning filters (conf.py sets the same)

    env = {
        "PYTHONPATH": os.path.abspath("src"),
        "PYTHONWARNINGS": declared_warnings.pythonwarnings(),
        "OMP_NUM_THREADS": "1",
    }
    session.run("python", "-m", "migration_guide.scenarios.explore", *session.posargs, env=env)


@nox.session(python=PYTHON)
def bench_checker(session):
    """Print the checker's speed over the installed torch package next to parsing every file with libcst."""
    install_build(session)
    session.run("python", "benchmarks/checker_speed.py", *session.posargs)


@nox.session(python=PYTHON)
def corpus(session):
    """Precision, recall and --fix --unsafe-fixes figures of the checker on hand-labelled public repositories (not a
    default session: the checkouts are fetched separately). ``nox -s corpus -- DIR [DIR ...]``; see
    data/corpus/labels.toml."""
    session.install(".")
    labels = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "corpus", "labels.toml")
    session.run("python", "-m", "migration_guide.corpus", "--labels", labels, *session.posargs)
