"""Sphinx extension: every executed gallery page says which Lightning produced the output it shows.

sphinx-gallery reuses an example's captured output until the example's file changes, so the Lightning release
that produced a page's output is not necessarily the one installed for this build. The truth is in the output
itself: every example prints ``Lightning X.Y.Z`` near its top (a house rule the tests check). At ``source-read``
this extension finds that line in the captured output of each generated example page and inserts, just before the
download buttons, a note naming that release (and saying so when it differs from the installed one).

A page that shows captured output without a ``Lightning X.Y.Z`` line gets a build warning naming its script
(``-W`` makes it an error). A page without captured output (the example was not executed, e.g. while iterating
with ``sphinx_gallery_conf.filename_pattern``) is left alone.
"""

from __future__ import annotations

import re
from importlib import metadata
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: The indented output block sphinx-gallery writes after ``.. rst-class:: sphx-glr-script-out``.
OUTPUT_BLOCK = re.compile(r"^\.\. rst-class:: sphx-glr-script-out\n\n(?P<body>(?:[ \t]+.*\n|\n)+)", re.M)
VERSION_LINE = re.compile(r"^\s+Lightning (?P<version>\d+\.\d+\S*)\s*$", re.M)
DOWNLOAD_LABEL = re.compile(r"^\.\. _sphx_glr_download_", re.M)


def installed_lightning() -> str:
    """Version of the ``lightning`` distribution installed for this build (``"absent"`` if none)."""
    try:
        return metadata.version("lightning")
    except metadata.PackageNotFoundError:
        return "absent"


def version_note(source: str) -> str | None:
    """The rST note for one generated gallery page, or ``None`` when the page shows no captured output.

    Raises:
        LookupError: the page shows captured output, but no ``Lightning X.Y.Z`` line in it.
    """
    outputs = [match["body"] for match in OUTPUT_BLOCK.finditer(source)]
    if not outputs:
        return None
    for body in outputs:
        found = VERSION_LINE.search(body)
        if found:
            version = found["version"]
            break
    else:
        raise LookupError("its captured output has no 'Lightning X.Y.Z' line")
    installed = installed_lightning()
    note = f"The output on this page was produced by Lightning {version} when the example ran."
    if version != installed:
        note += f" This build has Lightning {installed} installed: the output was reused from an earlier build."
    return f".. rst-class:: lightning-version\n\n{note}\n\n"


def _on_source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    gallery_dirs = app.config.sphinx_gallery_conf.get("gallery_dirs", [])
    if isinstance(gallery_dirs, str):
        gallery_dirs = [gallery_dirs]
    if not any(docname.startswith(f"{d}/") for d in gallery_dirs) or "sphx_glr_download_" not in source[0]:
        return
    try:
        note = version_note(source[0])
    except LookupError as err:
        logger.warning("gallery page %s: %s (print it near the top of the script)", docname, err, location=docname)
        return
    if note is None:
        return
    position = DOWNLOAD_LABEL.search(source[0]).start()
    source[0] = source[0][:position] + note + source[0][position:]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("source-read", _on_source_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
