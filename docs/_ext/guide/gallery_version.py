"""Sphinx extension: every executed gallery page says which Lightning produced its output, and what to install to
run it.

sphinx-gallery reuses an example's captured output until the example's file changes, so the Lightning release
that produced a page's output is not necessarily the one installed for this build. The truth is in the output
itself: every example prints ``Lightning X.Y.Z`` near its top (a house rule the tests check). At ``source-read``
this extension finds that line in the captured output of each generated example page and inserts, just before the
download buttons, a note naming that release (and saying so when it differs from the installed one), and the
``pip install`` line of the packages the script imports, at the versions ``requirements.txt`` pins
(:func:`install_line`; the distribution of an imported module is found with
:func:`importlib.metadata.packages_distributions`).

A page that shows captured output without a ``Lightning X.Y.Z`` line gets a build warning naming its script
(``-W`` makes it an error), and so does a script that imports a package ``requirements.txt`` does not pin. A page
without captured output (the example was not executed, e.g. while iterating with
``sphinx_gallery_conf.filename_pattern``) is left alone.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: The indented output block sphinx-gallery writes after ``.. rst-class:: sphx-glr-script-out``.
OUTPUT_BLOCK = re.compile(r"^\.\. rst-class:: sphx-glr-script-out\n\n(?P<body>(?:[ \t]+.*\n|\n)+)", re.M)
VERSION_LINE = re.compile(r"^\s+Lightning (?P<version>\d+\.\d+\S*)\s*$", re.M)
DOWNLOAD_LABEL = re.compile(r"^\.\. _sphx_glr_download_", re.M)
#: The pinned build environment: every example runs on exactly these versions.
REQUIREMENTS = Path(__file__).resolve().parents[3] / "requirements.txt"
#: What a reader adds to run the downloaded notebook.
NOTEBOOK_FRONT_END = "jupyterlab"


def pins(requirements: str) -> dict[str, str]:
    """``{normalized distribution name: "name==version"}`` of the ``name==version`` lines of a requirements file."""
    found = {}
    for line in requirements.splitlines():
        match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        if match:
            found[re.sub(r"[-_.]+", "-", match[1]).lower()] = f"{match[1]}=={match[2]}"
    return found


def imported_modules(source: str) -> list[str]:
    """The top-level modules a script imports, in the order it first imports them (relative imports left out)."""
    found: dict[str, None] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(dict.fromkeys(alias.name.split(".")[0] for alias in node.names))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found[node.module.split(".")[0]] = None
    return list(found)


def install_line(source: str, requirements: str) -> str:
    """``pip install torch==2.13.0 lightning==2.6.6 ...``: the pins of every third-party package ``source`` imports.

    Raises:
        LookupError: the script imports a third-party module whose distribution ``requirements`` does not pin.
    """
    pinned, distributions = pins(requirements), metadata.packages_distributions()
    line: dict[str, None] = {}
    for module in imported_modules(source):
        if module in sys.stdlib_module_names:
            continue
        names = [re.sub(r"[-_.]+", "-", name).lower() for name in distributions.get(module, [module])]
        found = [pinned[name] for name in names if name in pinned]
        if not found:
            raise LookupError(f"it imports {module}, which {REQUIREMENTS.name} does not pin")
        line[found[0]] = None
    return "pip install " + " ".join(line)


def installed_lightning() -> str:
    """Version of the ``lightning`` distribution installed for this build (``"absent"`` if none)."""
    try:
        return metadata.version("lightning")
    except metadata.PackageNotFoundError:
        return "absent"


def version_note(source: str, script: str = "") -> str | None:
    """The rST note for one generated gallery page, or ``None`` when the page shows no captured output.

    ``script`` is the example's Python source: the note ends with its :func:`install_line`.

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
        command = install_line(script, REQUIREMENTS.read_text(encoding="utf-8"))
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
