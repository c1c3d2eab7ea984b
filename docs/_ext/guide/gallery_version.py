"""Sphinx extension: every executed gallery page says which Lightning produced its output, and what to install to
run it.

sphinx-gallery reuses an example's captured output until the example's file changes, so the Lightning release
that produced a page's output is not necessarily the one installed for this build. The truth is in the output
itself: every example prints ``Lightning X.Y.Z`` near its top (a house rule the tests check). At ``source-read``
this extension finds that line in the captured output of each generated example page and inserts, just before the
download buttons, a note naming that release (and saying so when it differs from the installed one), and the
``pip install`` line of the packages the script imports, at the versions ``requirements.txt`` pins, and this project
when the script runs it (:func:`build_mechanics.reader_downloads.example_install_line`, the line the downloads start
with too).

A page that shows captured output without a ``Lightning X.Y.Z`` line gets a build warning naming its script
(``-W`` makes it an error), and so does a script that imports a package ``requirements.txt`` does not pin. A page
without captured output (the example was not executed, e.g. while iterating with
``sphinx_gallery_conf.filename_pattern``) is left alone.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path
from typing import Any

from build_mechanics import project_links
from build_mechanics.reader_downloads import REQUIREMENTS, example_install_line
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: The indented output block sphinx-gallery writes after ``.. rst-class:: sphx-glr-script-out``.
OUTPUT_BLOCK = re.compile(r"^\.\. rst-class:: sphx-glr-script-out\n\n(?P<body>(?:[ \t]+.*\n|\n)+)", re.M)
VERSION_LINE = re.compile(r"^\s+Lightning (?P<version>\d+\.\d+\S*)\s*$", re.M)
DOWNLOAD_LABEL = re.compile(r"^\.\. _sphx_glr_download_", re.M)
#: What a reader adds to run the downloaded notebook.
NOTEBOOK_FRONT_END = "jupyterlab"


def installed_lightning() -> str:
    """Version of the ``lightning`` distribution installed for this build (``"absent"`` if none)."""
    try:
        return metadata.version("lightning")
    except metadata.PackageNotFoundError:
        return "absent"


def version_note(source: str, script: str = "") -> str | None:
    """The rST note for one generated gallery page, or ``None`` when the page shows no captured output.

    ``script`` is the example's Python source: the note ends with its
    :func:`~build_mechanics.reader_downloads.example_install_line`.

    Raises:
        LookupError: the page shows captured output, but no ``Lightning X.Y.Z`` line in it; or the script imports
            a package ``requirements.txt`` does not pin.
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
        raise LookupError("its captured output has no 'Lightning X.Y.Z' line (print it near the top of the script)")
    installed = installed_lightning()
    note = f"The output on this page is what Lightning {version} printed when the example ran."
    if version != installed:
        note += f" The site now runs Lightning {installed}: this output is from an earlier run."
    text = f".. rst-class:: lightning-version\n\n{note}\n\n"
    if script:
        command = example_install_line(script)
        text += (
            ".. rst-class:: example-install\n\n"
            f"To run it yourself, download it below and install what it runs on (add ``{NOTEBOOK_FRONT_END}`` "
            f"for the notebook):\n\n.. code-block:: console\n\n   $ {command}\n\n"
        )
    return text


def _on_source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    gallery_dirs = app.config.sphinx_gallery_conf.get("gallery_dirs", [])
    if isinstance(gallery_dirs, str):
        gallery_dirs = [gallery_dirs]
    if not any(docname.startswith(f"{d}/") for d in gallery_dirs) or "sphx_glr_download_" not in source[0]:
        return
    script = Path(app.srcdir, docname).with_suffix(".py")
    app.env.note_dependency(str(REQUIREMENTS))
    app.env.note_dependency(str(project_links.PYPROJECT))  # this project's install requirement, when a script runs it
    try:
        note = version_note(source[0], script.read_text(encoding="utf-8") if script.is_file() else "")
    except LookupError as err:
        logger.warning("gallery page %s: %s", docname, err, location=docname)
        return
    if note is None:
        return
    position = DOWNLOAD_LABEL.search(source[0]).start()
    source[0] = source[0][:position] + note + source[0][position:]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("source-read", _on_source_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
