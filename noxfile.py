"""Sessions of the migration guide.

``nox -s docs`` builds the site; ``nox`` (the default sessions) is the test command CI runs.
Arguments after ``--`` pass through to ``sphinx-build`` (``docs``, ``doctest``) or ``pytest`` (``tests``).
"""

import os

import nox

nox.options.default_venv_backend = "virtualenv"  # pip finds the local CPU wheel of torch; uv does not
nox.options.sessions = ["lint", "doctest", "tests", "legacy", "matrix"]
nox.options.error_on_missing_interpreters = True
# A second `nox -s docs` reuses its environment (pip only checks the pins), so a rebuild stays a rebuild: a new
# environment would make Sphinx rewrite every page. A fresh clone, as in CI, still gets new environments.
nox.options.reuse_venv = "yes"

PYTHON = "3.11"
# -T: a failing MyST notebook shows its failing cell, not only its path; -j auto: read and write pages on every core
SPHINX = ("sphinx-build", "-T", "-W", "--keep-going", "-j", "auto", "-c", ".")


#: The requirements file of the build environment: requirements.txt, or requirements-hosted.txt in the hosted
#: builds (the GitHub Pages workflow sets BUILD_REQUIREMENTS), which adds PyTorch's CPU index for torch.
BUILD_REQUIREMENTS = os.environ.get("BUILD_REQUIREMENTS", "requirements.txt")


def install_build(session):
    """Install the site's pinned build environment (:data:`BUILD_REQUIREMENTS`) into the session."""
    session.install("-r", BUILD_REQUIREMENTS)


@nox.session(python=PYTHON)
def docs(session):
    """Build the HTML site into _build/html, executing every example."""
    install_build(session)
    session.run(*SPHINX, "-b", "html", "docs", "_build/html", *session.posargs)


@nox.session(python=PYTHON)
def doctest(session):
    """The doc-test session: the doctest builder, with every example executed; any error or warning fails."""
    install_build(session)
    env = {"CI": os.environ.get("CI", "true")}  # never reuse cached example results here
    session.run(*SPHINX, "-b", "doctest", "docs", "_build/doctest", *session.posargs, env=env)


@nox.session(python=PYTHON)
def tests(session):
    """pytest: build the site from a copy of the tree, run every notebook, mutation-test the examples."""
    install_build(session)
    session.install("-r", "requirements-test.txt")
    session.install(".")  # the lightning_migrate package and its lightning-migrate command
    session.run("pytest", *session.posargs)


@nox.session(python=PYTHON)
def lint(session):
    """ruff over the whole project, gallery included."""
    session.install("ruff==0.17.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHON)
def bench(session):
    """Print build figures: clean build vs bare script run, their ratio, and the no-op rebuild."""
    install_build(session)
    session.run("python", "benchmarks/build_speed.py", *session.posargs)


# -- Old and 2.x Lightning releases: data/compat/<version>.json, rendered by docs/_ext/compat_table.py ------------
def _compat_matrix():
    """The declared releases (data/compat/matrix.toml), read without importing the project."""
    import tomllib

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "compat", "matrix.toml"), "rb") as file:
        return tomllib.load(file)


COMPAT = _compat_matrix()


def install_lightning_release(session, entry):
    """torch's CPU wheel first, then the release's ``pins`` with torch held, then ``after`` without dependencies.

    ``after`` is for pins that contradict torch 2.13's metadata (1.4.9 is pinned with setuptools<70, torch declares
    setuptools>=77): resolved together, pip would replace torch by an older CUDA build instead.
    """
    session.install("torch==2.13.0")
    session.install("torch==2.13.0", *entry["pins"])
    if entry.get("after"):
        session.install("--no-deps", *entry["after"])


def record_release(session, group, version):
    """Install ``version`` in the session's own environment and write data/compat/<version>.json."""
    install_lightning_release(session, COMPAT[group][version])
    src = os.path.abspath("src")  # the project's code runs from the tree: its data files are written there
    session.run("python", "-m", "lightning_migrate.compat", "--version", version, env={"PYTHONPATH": src})


@nox.session(python=PYTHON)
@nox.parametrize("version", list(COMPAT["legacy"]))
def legacy(session, version):
    """The old patterns on 1.x: what each old hook received, Lightning's deprecation warnings, the equivalence."""
    record_release(session, "legacy", version)


@nox.session(python=PYTHON)
@nox.parametrize("version", list(COMPAT["matrix"]))
def matrix(session, version):
    """The replacement examples and the old patterns on the declared 2.x releases (run after `legacy`)."""
    record_release(session, "matrix", version)


@nox.session(python=PYTHON)
def bench_checker(session):
    """Print the checker's speed over the installed torch package next to parsing every file with libcst."""
    install_build(session)
    session.install(".")
    session.run("python", "benchmarks/checker_speed.py", *session.posargs)


@nox.session(python=PYTHON)
def corpus(session):
    """Precision, recall and --fix --unsafe-fixes figures of the checker on hand-labelled public repositories (not a
    default session: the checkouts are fetched separately). ``nox -s corpus -- DIR [DIR ...]``; see
    data/corpus/labels.toml."""
    session.install(".")
    labels = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "corpus", "labels.toml")
    session.run("python", "-m", "lightning_migrate.checker.corpus", "--labels", labels, *session.posargs)
