"""Sessions of the migration guide.

``nox -s docs`` builds the site; ``nox`` (the default sessions) is the test command CI runs.
Arguments after ``--`` pass through to ``sphinx-build`` (``docs``, ``doctest``) or ``pytest`` (``tests``).
"""

import os

import nox

nox.options.default_venv_backend = "virtualenv"  # pip finds the local CPU wheel of torch; uv does not
nox.options.sessions = ["lint", "doctest", "tests"]
nox.options.error_on_missing_interpreters = True

PYTHON = "3.11"
# -T: a failing MyST notebook shows its failing cell, not only its path
SPHINX = ("sphinx-build", "-T", "-W", "--keep-going", "-c", ".")


def install_build(session):
    """Install the site's pinned build environment (requirements.txt) into the session."""
    session.install("-r", "requirements.txt")


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


@nox.session(python=PYTHON)
def bench_checker(session):
    """Print the checker's speed over the installed torch package next to parsing every file with libcst."""
    install_build(session)
    session.install(".")
    session.run("python", "benchmarks/checker_speed.py", *session.posargs)
