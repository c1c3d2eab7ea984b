"""Sphinx extension: run the registry's probes on the Lightning the build uses; pages read one records file.

At ``config-inited`` this starts ``python -m migration_guide.probes`` in a separate process (Lightning is never
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

import json
from pathlib import Path
from typing import Any

from build_mechanics import preview, recorded_run
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "src"
EXTENSIONS = ROOT / "docs" / "_ext"
PACKAGE = SRC / "lightning_migrate"
GUIDE = SRC / "migration_guide"  # the probes themselves
REGISTRY_FILE = Path("src") / "lightning_migrate" / "registry.py"
#: The recorder's name: its records are ``probe-records.json`` in the build's doctree directory, the key they were
#: made with ``probe-records.key`` beside it (``build_mechanics.recorded_run``).
NAME = "probe-records"
RECORDS, KEY = f"{NAME}.json", f"{NAME}.key"


def cache_key() -> str:
    """Hash of everything a probe result depends on: registry and probe sources, Lightning and torch versions."""
    return recorded_run.inputs_key(
        sorted([*PACKAGE.glob("*.py"), *GUIDE.glob("*.py")]), ("lightning", "pytorch-lightning", "torch")
    )


#: The probes' failure: the end of what they wrote to standard error (a traceback names the file and line).
FAILURE = recorded_run.default_failure("the Lightning probes", "src/migration_guide/probes.py")


def records_path(app: Sphinx) -> Path:
    """The records file of this build directory (``<doctreedir>/probe-records.json``); the same in every build."""
    return Path(app.doctreedir) / RECORDS


def _start(app: Sphinx, config: Any) -> None:
    """At ``config-inited`` -- before any ``builder-inited`` handler, so before the examples run: start the probes
    unless the records file was made from what :func:`cache_key` hashes today (never reused in CI); anything they
    write to standard error (a warning, a log record) fails the build (``build_mechanics.recorded_run``). A preview
    (``build_mechanics.preview``) starts none."""
    if preview.active():
        app._probe_run = None  # type: ignore[attr-defined]
        return
    run = recorded_run.start(
        NAME,
        records_path(app).parent,
        cache_key(),
        "migration_guide.probes",
        lambda output: ["--output", str(output)],
        strict=True,
    )
    if run.reused == "kept":
        logger.info("probe records: made by an earlier build of this test run from the same inputs")
    elif run.process is not None:
        logger.info("running the Lightning probes (src/migration_guide/probes.py) ...")
    app._probe_run = run  # type: ignore[attr-defined]


def _on_builder_inited(app: Sphinx) -> None:
    app.env.probe_records_path = str(records_path(app))  # type: ignore[attr-defined]


def _finish(app: Sphinx) -> bool:
    """Wait for this build's probes, if any ran; install their records. ``True`` when the records file changed."""
    run = getattr(app, "_probe_run", None)
    app._probe_run = None  # type: ignore[attr-defined]
    changed = recorded_run.finish(run, FAILURE)
    if changed:
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
