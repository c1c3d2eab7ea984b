"""Whether this build must execute everything afresh: the one switch conf.py and the extensions share."""

from __future__ import annotations

import os


def forced_execution() -> bool:
    """``True`` when ``CI`` is set to ``1``, ``true`` or ``yes`` (any case), as CI services set it.

    Such a build re-executes every gallery example, every MyST notebook and the probes, reusing no cached
    result; any other build re-executes only what changed.
    """
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}
