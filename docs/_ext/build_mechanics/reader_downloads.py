"""Sphinx extension: the downloaded script and notebook of every example start with its title, then one short cell
for the reader: what to install, and Lightning's log and notices turned down as on the page.

sphinx-gallery offers each example as a ``.py`` script (its source, copied) and a ``.ipynb`` notebook. On the site
the examples run with Lightning's informational log turned down and the build's declared warnings ignored
(:mod:`build_mechanics.declared_warnings`); a reader's Jupyter or Python has neither. sphinx-gallery's
``first_notebook_cell`` would put a cell above the notebook's title, and nothing in the script. So at
``build-finished`` this rewrites the two downloads Sphinx copied into ``_downloads/`` for every gallery page (found
through the environment's ``dlfiles``): after the title -- the notebook's first Markdown cell, the script's module
docstring -- comes :func:`reader_cell`: a comment with the ``pip install`` line of the packages the script imports,
at the versions ``requirements.txt`` pins, and this project from its repository at its release tag when the script
imports or runs it (:func:`install_line`), and
:func:`build_mechanics.declared_warnings.reader_lines`. The sources sphinx-gallery works from are not touched.
The notebook also loses the empty code cells sphinx-gallery leaves where a page's hidden checks stand
(:func:`without_blank_code_cells`). Sphinx copies the downloads again at every build, so this runs at every build; a
download that already has the cell is left as it is.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from build_mechanics import declared_warnings, project_links

#: The pinned build environment: every example runs on exactly these versions.
REQUIREMENTS = Path(__file__).resolve().parents[3] / "requirements.txt"
#: The first line of the reader's cell (how a download is recognised as done).
FIRST_LINE = "# To install what this example ran on:"


def pins(requirements: str) -> dict[str, str]:
    """``{normalized distribution name: "name==version"}`` of the ``name==version`` lines of a requirements file."""
    found = {}
    for line in requirements.splitlines():
        match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        if match:
            found[re.sub(r"[-_.]+", "-", match[1]).lower()] = f"{match[1]}=={match[2]}"
    return found


def imported_modules(source: str) -> list[str]:
    """The top-level modules a script imports or runs as a program (``[sys.executable, "-m", "package.module",
    ...]``: a ``"-m"`` string followed by the module's name in a list or tuple), in the order it first names them
    (relative imports left out)."""
    found: dict[str, None] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(dict.fromkeys(alias.name.split(".")[0] for alias in node.names))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found[node.module.split(".")[0]] = None
        elif isinstance(node, (ast.List, ast.Tuple)):
            strings = [e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else None for e in node.elts]
            run = [module for flag, module in zip(strings, strings[1:], strict=False) if flag == "-m" and module]
            found.update(dict.fromkeys(module.split(".")[0] for module in run))
    return list(found)


@functools.cache
def _packages_distributions() -> dict[str, list[str]]:
    """:func:`importlib.metadata.packages_distributions`, read once per process: it reads the file list of every
    installed distribution (0.07 s each time on the build's environment), and the installed packages do not change
    during a build. The build asks for it once per example page and once per download (108 times)."""
    return metadata.packages_distributions()


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def install_line(source: str, requirements: str, own: tuple[str, str] | None = None) -> str:
    """``pip install torch==<pin> lightning==<pin> ...``: the pins of every third-party package ``source`` imports,
    in the order of ``requirements`` (torch first there: its pinned CPU build before what depends on it); with
    ``own = (distribution name, requirement)`` -- this project's, whose pages may run it -- the project's
    requirement last when the script imports or runs it.

    Raises:
        LookupError: the script imports a third-party module whose distribution ``requirements`` does not pin.
    """
    pinned, distributions = pins(requirements), _packages_distributions()
    line: dict[str, None] = {}
    needs_own = False
    for module in imported_modules(source):
        if module in sys.stdlib_module_names:
            continue
        names = [_normalized(name) for name in distributions.get(module, [module])]
        if own and _normalized(own[0]) in names:
            needs_own = True
            continue
        found = [pinned[name] for name in names if name in pinned]
        if not found:
            raise LookupError(f"it imports {module}, which {REQUIREMENTS.name} does not pin")
        line[found[0]] = None
    chosen = [pin for pin in pinned.values() if pin in line]
    return "pip install " + " ".join([*chosen, *([own[1]] if own and needs_own else [])])


def example_install_line(source: str) -> str:
    """:func:`install_line` of an example's script: ``requirements.txt``'s pins, and this project at its release tag
    (``pyproject.toml``) when the script imports or runs it -- what its page and its downloads say to install."""
    own = (project_links.project()["name"], project_links.install_requirement())
    return install_line(source, REQUIREMENTS.read_text(encoding="utf-8"), own)


def reader_cell(source: str) -> str:
    """The reader's first cell for the example whose script is ``source`` (see the module docstring)."""
    return "\n".join([f"{FIRST_LINE} {example_install_line(source)}", *declared_warnings.reader_lines()])


def script_with_cell(script: str, cell: str) -> str:
    """``script`` with ``cell`` as a ``# %%`` cell right after its module docstring (unchanged when it has it).

    Raises:
        ValueError: the script does not start with a module docstring (its title).
    """
    if FIRST_LINE in script:
        return script
    tree = ast.parse(script)
    first = tree.body[0] if tree.body else None
    if not (
        isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    ):
        raise ValueError("the script does not start with its title (a module docstring)")
    lines = script.splitlines(keepends=True)
    head, rest = "".join(lines[: first.end_lineno]), "".join(lines[first.end_lineno :])
    if not rest.lstrip("\n").startswith("# %%"):  # a page whose code follows its title: that code stays a cell
        rest = f"\n# %%{rest}"  # of its own, as in the notebook, not the end of the reader's cell
    return f"{head}\n# %%\n{cell}\n{rest}"


def notebook_with_cell(notebook: dict[str, Any], cell: str) -> dict[str, Any]:
    """``notebook`` (nbformat 4 JSON) with ``cell`` as a code cell right after its first Markdown cell (its title).

    Raises:
        ValueError: the notebook has no Markdown cell.
    """
    cells = notebook["cells"]
    if any(c["cell_type"] == "code" and "".join(c["source"]).startswith(FIRST_LINE) for c in cells):
        return notebook
    title = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"), None)
    if title is None:
        raise ValueError("the notebook has no title cell (Markdown)")
    code = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": cell}
    return {**notebook, "cells": [*cells[: title + 1], code, *cells[title + 1 :]]}


def without_blank_code_cells(notebook: dict[str, Any]) -> dict[str, Any]:
    """``notebook`` (nbformat 4 JSON) without its code cells of whitespace only: where a page's hidden check stood
    (sphinx-gallery's ``sphinx_gallery_start_ignore`` block, which it leaves out of the notebook's code), the notebook
    showed an empty cell (7 of the site's notebooks had 1 to 3)."""
    cells = [c for c in notebook["cells"] if c["cell_type"] != "code" or "".join(c["source"]).strip()]
    return {**notebook, "cells": cells}


def gallery_downloads(app: Sphinx) -> list[tuple[Path, Path]]:
    """``(source in the build's source tree, copy in _downloads/)`` of every gallery page's script and notebook."""
    prefixes = tuple(f"{d}/" for d in app.config.sphinx_gallery_conf.get("gallery_dirs", []))
    found = []
    for source, (_, destination) in app.env.dlfiles.items():
        relative = Path(source).as_posix()
        if relative.startswith(prefixes) and relative.endswith((".py", ".ipynb")):
            found.append((Path(app.srcdir, source), Path(app.outdir, "_downloads", destination)))
    return sorted(found)


def _on_build_finished(app: Sphinx, exception: BaseException | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for source, download in gallery_downloads(app):
        script = source.with_suffix(".py").read_text(encoding="utf-8")
        try:
            cell = reader_cell(script)
            if download.suffix == ".py":
                download.write_text(script_with_cell(download.read_text(encoding="utf-8"), cell), encoding="utf-8")
            else:
                notebook = without_blank_code_cells(
                    notebook_with_cell(json.loads(download.read_text(encoding="utf-8")), cell)
                )
                download.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        except (LookupError, ValueError) as err:
            raise ExtensionError(f"{source}: {err}") from None


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("build-finished", _on_build_finished)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
