"""Sphinx builds for the tests: the whole site from a copy of the tree, and small fixture projects.

Every build runs ``sphinx-build -T -W --keep-going`` (a warning is a failure, and every failure is reported) with the
Python that runs the tests, ``CI=true`` unless asked otherwise (nothing an earlier build made is reused, except the
runs :mod:`build_mechanics.run_cache` keeps for this test run) and ``PYTHONHASHSEED=0``.

A fixture project (:func:`project`) is a folder of a few pages, and gallery scripts when asked, whose ``conf.py``
reads the guide's own ``conf.py`` first -- its settings, its warning filters, its paths to the extensions -- and
then the lines the test gives (at least ``extensions``: only what the test is about, so it builds in seconds).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from build_mechanics import site_build

ROOT = Path(__file__).resolve().parents[1]
#: What a build writes into the source tree (git-ignored): a copy of the tree never carries them.
GENERATED = site_build.GENERATED
#: The gallery scripts, relative to ``gallery/``: every one is an executed example with a page and a notebook.
GALLERY_SCRIPTS = sorted(p.relative_to(ROOT / "gallery") for p in (ROOT / "gallery").rglob("*.py"))

#: The extensions a fixture project's gallery needs as the guide runs it: sphinx-gallery, its workers, and the
#: notebooks' links (sphinx-gallery writes every notebook, converting its text with the guide's pandoc filters).
GALLERY_EXTENSIONS = (
    "sphinx_gallery.gen_gallery",
    "build_mechanics.example_workers",
    "build_mechanics.notebook_baseurl",
)
#: The lines of a fixture project's ``conf.py`` that make its own ``gallery/`` folder the gallery (one section).
GALLERY_CONF = """
sphinx_gallery_conf = {
    **sphinx_gallery_conf,
    "examples_dirs": ["gallery"],
    "gallery_dirs": ["examples"],
    "subsection_order": None,
    "default_thumb_file": None,
}
"""


@dataclass
class Build:
    """A finished ``sphinx-build`` run: its tree, output directory, exit code and combined output, and the paths of
    the Python environment it ran in and its interpreter when that is not the tests' own (a recorded build of
    ``nox -s docs``)."""

    tree: Path
    outdir: Path
    returncode: int
    output: str
    python: tuple[str, ...] = ()
    executable: str = sys.executable

    def page(self, docname: str) -> str:
        """The HTML of ``docname`` (e.g. ``examples/core/module_side_caching``); fails the test if missing."""
        path = self.outdir / f"{docname}.html"
        assert path.is_file(), f"{docname}.html was not built"
        return path.read_text(encoding="utf-8")


def source_files() -> list[str]:
    """The project's files as a fresh clone of this tree would hold them, once committed: what git tracks plus what
    it does not ignore (relative paths; :func:`build_mechanics.site_build.source_files`)."""
    return site_build.source_files(ROOT)


def copy_tree(destination: Path) -> Path:
    """Copy the project's sources (no generated output, nothing git ignores) to ``destination``; return it."""
    return site_build.copy_tree(ROOT, destination)


def sphinx_build(tree: Path, builder: str = "html", *args: str, source: str = "docs", ci: bool = True) -> Build:
    """Build ``tree``'s site (sources in ``tree/source``, ``conf.py`` in ``tree``) with ``builder`` into
    ``tree/_build/<builder>``; return the :class:`Build` (never raises on a failed build)."""
    outdir = tree / "_build" / builder
    # CI and PYTHONWARNINGS are the build's own (conf.py sets the warning filters of the processes it starts)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTHONWARNINGS")} | {"PYTHONHASHSEED": "0"}
    if ci:
        env["CI"] = "true"
    command = [sys.executable, "-m", "sphinx", *site_build.SPHINX, "-b", builder]
    proc = subprocess.run(
        [*command, source, str(outdir), *args], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    return Build(tree, outdir, proc.returncode, proc.stdout + proc.stderr)


def project(root: Path, files: dict[str, str], conf: str, guide_conf: Path = ROOT / "conf.py") -> Path:
    """Write a fixture project into ``root``: ``files`` (path relative to ``root`` -> text) and a ``conf.py`` that
    runs ``guide_conf`` (the guide's, or a copied tree's) and then ``conf``. Build it with
    ``sphinx_build(root, ..., source=".")``. Returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    guide = guide_conf.resolve()
    static = guide.parent / "docs"
    (root / "conf.py").write_text(
        "# A fixture project: the guide's own configuration, then the settings of the test.\n"
        "import runpy\n\n"
        f"globals().update({{k: v for k, v in runpy.run_path({str(guide)!r}).items() if not k.startswith('__')}})\n"
        f"templates_path = [{str(static / '_templates')!r}]\n"
        f"html_static_path = [{str(static / '_static')!r}]\n"
        f"html_favicon = {str(static / '_static' / 'favicon.svg')!r}\n"
        f"{conf}\n",
        encoding="utf-8",
    )
    return root


def example_stubs() -> dict[str, str]:
    """One stub page per registry pattern's ``example`` (``examples/core/x.rst``: a title naming the example), and
    an ``index.rst`` whose toctree lists them: the pages the probe records' link check needs in a fixture project.
    A test adds its own page to the toctree with ``index.rst``'s last line."""
    from lightning_migrate import registry

    examples = sorted({pattern.example for pattern in registry.PATTERNS})
    files = {f"{docname}.rst": f"{docname}\n{'=' * len(docname)}\n" for docname in examples}
    files["index.rst"] = "Site\n====\n\n.. toctree::\n\n" + "".join(f"   {docname}\n" for docname in examples)
    return files


def source_snapshot(tree: Path) -> dict[str, bytes]:
    """Every file of ``tree`` except build output and generated gallery pages, by relative path."""
    snapshot = {}
    for path in sorted(tree.rglob("*")):
        relative = path.relative_to(tree).as_posix()
        if path.is_file() and not relative.startswith(("_build/", *GENERATED)) and "__pycache__" not in relative:
            snapshot[relative] = path.read_bytes()
    return snapshot
