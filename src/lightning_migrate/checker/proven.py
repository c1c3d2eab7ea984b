"""The rewrite shapes the scenario matrix proves: the ``proven`` tier of the caching rewrites.

A caching rewrite (:mod:`.rules._caching`) writes one of a few shapes (:attr:`~.base.Fix.shape`:
``training-epoch-end``, ``validation-epoch-end/per-dataloader``, ...). A shape is *proven* when

* a row of the scenario matrix (``data/scenarios.toml``, a recipe with ``transform = "lightning-migrate"``) runs a
  file of ``data/rewrites`` whose rewrite writes that shape -- the build runs the row in every configuration the
  matrix generates, and fails on any cell that does not behave as the row declares; and
* a 1.x release recorded what that file computed before the rewrite (``data/compat/<version>.json``, under
  ``"rewrites"``, for the file's current bytes): the equivalence test compares the rewritten file on the installed
  Lightning with it. The reference release of ``data/compat/matrix.toml`` (1.9.5) is taken where it ran the old
  code, else the newest 1.x release that did (an ``outputs`` hook 1.5 removed ran on 1.4.9 only).

``python -m migration_guide.record_proven`` reads the rows and the records as data and writes
``src/lightning_migrate/data/proven_rewrites.json`` (the checker reads it without the source tree at hand);
``tests/checker/test_proven.py`` fails when the file is not what the rows and records give. Nothing here is typed.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

#: Where the record lives inside the package (shipped with it as package data).
RECORD = Path(__file__).resolve().parents[1] / "data" / "proven_rewrites.json"


def load() -> dict[str, Any]:
    """The recorded proven shapes: ``{"reference": version, "shapes": {shape: [{"recipe", "page", "compared_with"},
    ...]}}`` (:func:`.record_proven.record`)."""
    text = resources.files("lightning_migrate").joinpath("data", "proven_rewrites.json").read_text(encoding="utf-8")
    return json.loads(text)


@functools.cache
def shapes() -> frozenset[str]:
    """The shapes plain ``--fix`` applies (the ``proven`` tier)."""
    return frozenset(load()["shapes"])


def proving_rows(shape: str) -> list[str]:
    """The matrix rows (recipe ids) that prove ``shape``; empty when none does."""
    return [row["recipe"] for row in load()["shapes"].get(shape, [])]


def stageless() -> dict[str, Any]:
    """Where the newest 1.x release that ran them called the stage-less hooks: ``{"release": version, "hooks":
    {owner: {hook: {"hooks": [stage hooks], "position": "after" | "before"}}}}`` (:func:`.record_proven.stageless`),
    or ``{}`` when no release recorded it."""
    return load().get("stageless", {})
