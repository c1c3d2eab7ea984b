"""Sphinx extension: run the registry's probes on the Lightning the build uses, once per build.

At ``builder-inited`` this runs ``python -m lightning_migrate.probes`` in a fresh process (so Lightning is never
imported into Sphinx itself) and keeps the JSON next to the build's doctrees. Other extensions read the records
with :func:`records`; nothing on the site states Lightning's behaviour without going through them.

The result is reused by later builds in the same build directory only when nothing it depends on changed (the
registry, the probes, the installed Lightning and torch) and the build is not a CI build (``CI=true`` always
re-runs the probes: in CI they count as executing examples).

The probe process starts at ``builder-inited`` before sphinx-gallery executes the examples in the Sphinx process
and is waited for at ``env-before-read-docs``, so on a multi-core machine the two run side by side instead of one
after the other (the probes' own Lightning import alone is seconds of CPU).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

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


def start_probes(output: Path) -> subprocess.Popen:
    """Start running every probe in a subprocess that writes its JSON to ``output``; :func:`finish_probes` waits."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    return subprocess.Popen(
        [sys.executable, "-m", "lightning_migrate.probes", "--output", str(output)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


def finish_probes(proc: subprocess.Popen) -> None:
    """Wait for the probe process started by :func:`start_probes`.

    Raises:
        ExtensionError: the probe process failed; the message carries the end of its output.
    """
    out, _ = proc.communicate()
    if proc.returncode != 0:
        tail = "\n".join(out.splitlines()[-30:])
        raise ExtensionError(f"the Lightning probes failed (src/lightning_migrate/probes.py):\n{tail}")


def run_probes(output: Path) -> None:
    """Run every probe in a subprocess and write its JSON to ``output`` (:func:`start_probes`, then wait)."""
    finish_probes(start_probes(output))


def _on_builder_inited(app: Sphinx) -> None:
    output = Path(app.doctreedir) / f"probe-records-{cache_key()}.json"
    force = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
    if force or not output.exists():
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
