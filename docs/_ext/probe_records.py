"""Sphinx extension: run the registry's probes on the Lightning the build uses, once per build.

At ``builder-inited`` this runs ``lightning_migrate.probes`` in a separate process (so Lightning is never
imported into Sphinx itself, and no example has run in the process that probes it) and keeps the JSON next to
the build's doctrees. Other extensions read the records with :func:`records`; nothing on the site states
Lightning's behaviour without going through them.

The result is reused by later builds in the same build directory only when nothing it depends on changed (the
registry, the probes, the installed Lightning and torch) and the build is not a CI build (``CI=true`` always
re-runs the probes: in CI they count as executing examples).

The probe process starts at ``builder-inited`` before sphinx-gallery executes the examples and is waited for at
``env-before-read-docs``, so on a multi-core machine the two run side by side instead of one after the other.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing.process
import os
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from build_mode import forced_execution
from example_workers import forkserver_context, start_forkserver
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PACKAGE = SRC / "lightning_migrate"
REGISTRY_FILE = Path("src") / "lightning_migrate" / "registry.py"


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


def _probe_process_main(output: str, log: str) -> None:
    """Body of the probe process: run every probe, its standard output and error going to the file ``log``.

    It runs at a lower scheduling priority (``os.nice``): the examples come first, and the probes, needed only
    when Sphinx starts reading pages, use what the examples leave of the machine's cores.
    """
    os.nice(10)
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    from lightning_migrate import probes

    code = probes.main(["--output", output])
    sys.stdout.flush()
    sys.stderr.flush()
    raise SystemExit(code)


@dataclass
class ProbeRun:
    """A running probe process (:func:`start_probes`) and the file its output goes to."""

    process: multiprocessing.process.BaseProcess
    log: Path


def start_probes(output: Path) -> ProbeRun:
    """Start running every probe in a separate process that writes its JSON to ``output``.

    The process is forked from the build's forkserver (``example_workers``), which has imported Lightning and
    run nothing: each probe sees Lightning as a fresh process would, without paying for its import again.
    :func:`finish_probes` waits for it.
    """
    start_forkserver()
    log = output.with_suffix(".log")
    output.parent.mkdir(parents=True, exist_ok=True)
    process = forkserver_context().Process(
        target=_probe_process_main, args=(str(output), str(log)), name="lightning probes"
    )
    process.start()
    return ProbeRun(process, log)


def finish_probes(run: ProbeRun) -> None:
    """Wait for the probe process started by :func:`start_probes`.

    Raises:
        ExtensionError: the probe process failed; the message carries the end of its output.
    """
    run.process.join()
    if run.process.exitcode != 0:
        text = run.log.read_text(encoding="utf-8", errors="replace") if run.log.exists() else ""
        tail = "\n".join(text.splitlines()[-30:])
        raise ExtensionError(
            f"the Lightning probes failed (src/lightning_migrate/probes.py, exit code {run.process.exitcode}):\n{tail}"
        )


def run_probes(output: Path) -> None:
    """Run every probe in a separate process and write its JSON to ``output`` (:func:`start_probes`, then wait)."""
    finish_probes(start_probes(output))


def _on_builder_inited(app: Sphinx) -> None:
    output = Path(app.doctreedir) / f"probe-records-{cache_key()}.json"
    if forced_execution() or not output.exists():
        logger.info("running the Lightning probes (src/lightning_migrate/probes.py) ...")
        app._probe_process = start_probes(output)  # type: ignore[attr-defined]
    app.env.probe_records_path = str(output)  # type: ignore[attr-defined]


def _on_env_before_read_docs(app: Sphinx, env: Any, docnames: list[str]) -> None:
    proc = getattr(app, "_probe_process", None)
    if proc is not None:
        app._probe_process = None  # type: ignore[attr-defined]
        finish_probes(proc)
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

    Raises:
        ExtensionError: the probes have not run in this build (the extension is not enabled).
    """
    _on_env_before_read_docs(app, app.env, [])  # the probe process, if still running, must have finished
    path = getattr(app.env, "probe_records_path", None)
    if path is None:
        raise ExtensionError("probe_records is not enabled in conf.py")
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
    # Before sphinx-gallery's builder-inited handler (priority 500) executes the examples: both run at once.
    app.connect("builder-inited", _on_builder_inited, priority=400)
    app.connect("env-before-read-docs", _on_env_before_read_docs)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
