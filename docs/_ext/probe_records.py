"""Sphinx extension: run the registry's probes on the Lightning the build uses, once per build.

At ``builder-inited`` this runs ``python -m lightning_migrate.probes`` in a fresh process (so Lightning is never
imported into Sphinx itself) and keeps the JSON next to the build's doctrees. Other extensions read the records
with :func:`records`; nothing on the site states Lightning's behaviour without going through them.

The result is reused by later builds in the same build directory only when nothing it depends on changed (the
registry, the probes, the installed Lightning and torch) and the build is not a CI build (``CI=true`` always
re-runs the probes).
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


def run_probes(output: Path) -> None:
    """Run every probe in a subprocess and write its JSON to ``output``.

    Raises:
        ExtensionError: the probe process failed; the message carries the end of its output.
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(
        [sys.executable, "-m", "lightning_migrate.probes", "--output", str(output)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise ExtensionError(f"the Lightning probes failed (src/lightning_migrate/probes.py):\n{tail}")


def _on_builder_inited(app: Sphinx) -> None:
    output = Path(app.doctreedir) / f"probe-records-{cache_key()}.json"
    force = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
    if force or not output.exists():
        logger.info("running the Lightning probes (src/lightning_migrate/probes.py) ...")
        run_probes(output)
    app.env.probe_records_path = str(output)  # type: ignore[attr-defined]


def records(app: Sphinx) -> dict[str, Any]:
    """The probe document of this build: ``{"lightning": {...}, "torch": ..., "records": [...]}``.

    Raises:
        ExtensionError: the probes have not run in this build (the extension is not enabled).
    """
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
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
