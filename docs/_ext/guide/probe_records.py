"""Sphinx extension: run the registry's probes on the Lightning the build uses; pages read one records file.

At ``config-inited`` this starts ``python -m lightning_migrate.probes`` in a separate process (Lightning is never
imported into Sphinx itself, and no example has run in the process that probes it). It runs beside
sphinx-gallery's examples and is waited for at ``env-get-outdated``, before Sphinx reads any page.

The records live in one file, :data:`RECORDS` in the build's doctree directory; :data:`KEY` beside it holds the
:func:`cache_key` of the sources and versions they were made from. A build re-runs the probes when that key
differs or when it is a CI build (``CI=true``: in CI the probes count as executing examples); in a test run, a
build takes the records an earlier build of the same run made from the same inputs (``build_mechanics.run_cache``).
The probes write to a temporary file; it replaces :data:`RECORDS` (atomically,
:func:`lightning_migrate.records.write_atomic`) only when its content differs, so the file's modification time
changes exactly when what the pages state may have changed.

Every page that reads the records depends on that file: :func:`records` notes it as a dependency of the page being
read, and the directives of ``reference_table`` and ``symptom_index`` note it too. Sphinx compares dependency times
before the probes of this build have finished, so when this build replaced the file, ``env-get-outdated`` adds
the pages that depend on it to the pages Sphinx reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from build_mechanics import run_cache
from build_mechanics.execution_mode import forced_execution
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

from lightning_migrate.records import write_atomic

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "src"
EXTENSIONS = ROOT / "docs" / "_ext"
PACKAGE = SRC / "lightning_migrate"
REGISTRY_FILE = Path("src") / "lightning_migrate" / "registry.py"
#: File names, in the build's doctree directory, of the records and of the key they were made with.
RECORDS, KEY = "probe-records.json", "probe-records.key"


def _installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def cache_key() -> str:
    """Hash of everything a probe result depends on: registry and probe sources, Lightning and torch versions."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    for dist in ("lightning", "pytorch-lightning", "torch"):
        digest.update(f"{dist}={_installed(dist)}".encode())
    return digest.hexdigest()[:16]


@dataclass
class ProbeRun:
    """A probe run (:func:`start_probes`): its process (``None`` when this test run's earlier build made the same
    records), where it writes, and the files its output, errors and imported distributions go to."""

    process: subprocess.Popen | None
    output: Path
    log: Path
    errors: Path
    environment: Path
    key: str


def start_probes(output: Path, key: str | None = None) -> ProbeRun:
    """Start ``python -m lightning_migrate.probes`` (this interpreter, ``src`` on its path) writing JSON to ``output``.

    Its standard output goes to ``output`` with the suffix ``.log``, its standard error to the suffix
    ``.stderr``. It inherits this process's environment, so the warning filters ``conf.py`` puts in
    ``PYTHONWARNINGS`` (``docs/_ext/build_mechanics/declared_warnings.py``). :func:`finish_probes` waits for it.
    When an earlier build of this test run made records with the same inputs (``key``, default :func:`cache_key`;
    ``build_mechanics.run_cache``), ``output`` gets those and no process starts.
    """
    key = key or cache_key()
    output.parent.mkdir(parents=True, exist_ok=True)
    log, errors = output.with_suffix(".log"), output.with_suffix(".stderr")
    environment = output.with_suffix(".environment.json")
    if run_cache.lookup("probe-records", key, output):
        return ProbeRun(None, output, log, errors, environment, key)
    path = [str(SRC), str(EXTENSIONS), os.environ.get("PYTHONPATH")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, path)))
    command = run_cache.run_command("lightning_migrate.probes", "--output", str(output), environment=environment)
    with log.open("wb") as sink, errors.open("wb") as error_sink:
        process = subprocess.Popen(command, stdout=sink, stderr=error_sink, env=env)
    return ProbeRun(process, output, log, errors, environment, key)


def finish_probes(run: ProbeRun) -> None:
    """Wait for the probe process started by :func:`start_probes` (nothing to wait for when its records were this
    test run's); keep what it recorded for later builds of this test run.

    Raises:
        ExtensionError: the probe process failed, or wrote to its standard error (a warning, a log record): the
            message carries the end of what it wrote there (a traceback names the file and line).
    """
    if run.process is None:
        return
    code = run.process.wait()
    errors = run.errors.read_text(encoding="utf-8", errors="replace") if run.errors.exists() else ""
    if code != 0 or errors.strip():
        text = errors or (run.log.read_text(encoding="utf-8", errors="replace") if run.log.exists() else "")
        tail = "\n".join(text.splitlines()[-30:])
        what = f"failed (exit code {code})" if code != 0 else "wrote to standard error"
        raise ExtensionError(f"the Lightning probes {what} (src/lightning_migrate/probes.py):\n{tail}")
    run_cache.store("probe-records", run.key, run.output, run.environment)


def records_path(app: Sphinx) -> Path:
    """The records file of this build directory (``<doctreedir>/probe-records.json``); the same in every build."""
    return Path(app.doctreedir) / RECORDS


def _start(app: Sphinx, config: Any) -> None:
    """At ``config-inited`` -- before any ``builder-inited`` handler, so before the examples run: start the probes
    unless the records file was made from what :func:`cache_key` hashes today (never reused in CI)."""
    path, key = records_path(app), cache_key()
    key_file = path.with_name(KEY)
    current = path.exists() and key_file.exists() and key_file.read_text(encoding="utf-8") == key
    app._probe_run = None  # type: ignore[attr-defined]
    if forced_execution() or not current:
        run = start_probes(path.with_name(RECORDS + ".new"), key)
        if run.process is None:
            logger.info("probe records: made by an earlier build of this test run from the same inputs")
        else:
            logger.info("running the Lightning probes (src/lightning_migrate/probes.py) ...")
        app._probe_run = (run, key)  # type: ignore[attr-defined]


def _on_builder_inited(app: Sphinx) -> None:
    app.env.probe_records_path = str(records_path(app))  # type: ignore[attr-defined]


def _finish(app: Sphinx) -> bool:
    """Wait for this build's probes, if any ran; install their records. ``True`` when the records file changed."""
    started = getattr(app, "_probe_run", None)
    if started is None:
        return False
    app._probe_run = None  # type: ignore[attr-defined]
    run, key = started
    finish_probes(run)
    path = records_path(app)
    changed = write_atomic(path, run.output.read_bytes())
    run.output.unlink()
    path.with_name(KEY).write_text(key, encoding="utf-8")
    app._probe_records_cache = None  # type: ignore[attr-defined]
    return changed


def _on_env_get_outdated(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """The pages that depend on the records file, when this build has just replaced it (else none)."""
    if not _finish(app):
        return []
    path = records_path(app).resolve()
    return [doc for doc, deps in env.dependencies.items() if any(Path(dep).resolve() == path for dep in deps)]


def _on_env_before_read_docs(app: Sphinx, env: Any, docnames: list[str]) -> None:
    check_example_links(env.found_docs)


def check_example_links(found_docs: set[str]) -> None:
    """Every registry pattern links an example page of this site: the reference table, the symptom index and the
    checker's findings send readers there.

    Raises:
        ExtensionError: naming each pattern whose ``example`` is not a document of the site, and registry.py.
    """
    from lightning_migrate import registry

    broken = [f"  {p.id}: {p.example!r}" for p in registry.PATTERNS if p.example not in found_docs]
    if broken:
        raise ExtensionError(
            "these old patterns link an example that is not a document of this site "
            f"(fix `example` in {REGISTRY_FILE}):\n" + "\n".join(broken)
        )


def records(app: Sphinx) -> dict[str, Any]:
    """The probe document of this build: ``{"lightning": {...}, "torch": ..., "records": [...]}``.

    Called while a page is read, it notes the records file as a dependency of that page.

    Raises:
        ExtensionError: the probes have not run in this build (the extension is not enabled).
    """
    _finish(app)  # the probe process, if still running, must have finished
    path = getattr(app.env, "probe_records_path", None)
    if path is None:
        raise ExtensionError("probe_records is not enabled in conf.py")
    if app.env.docname:  # a page is being read (not resolved at write time): it depends on the records
        app.env.note_dependency(path)
    cached = getattr(app, "_probe_records_cache", None)
    if cached is None or cached[0] != path:
        cached = (path, json.loads(Path(path).read_text(encoding="utf-8")))
        app._probe_records_cache = cached  # type: ignore[attr-defined]
    return cached[1]


def record(app: Sphinx, pattern_id: str) -> dict[str, Any]:
    """The record of one pattern; ``KeyError`` naming the id when the probes did not produce it."""
    for item in records(app)["records"]:
        if item["pattern"] == pattern_id:
            return item
    raise KeyError(f"no probe record for pattern {pattern_id!r}")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _start)
    app.connect("builder-inited", _on_builder_inited)
    app.connect("env-get-outdated", _on_env_get_outdated)
    app.connect("env-before-read-docs", _on_env_before_read_docs)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
