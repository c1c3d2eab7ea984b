"""Every markdown cell of every downloaded notebook is Markdown, and its links lead to pages of the hosted site.

sphinx-gallery writes a notebook next to each example (``docs/examples/<section>/<name>.ipynb``) and copies it
into the HTML output for download (``_build/html/_downloads/<hash>/<name>.ipynb``). Its text blocks are rST;
pandoc converts them (``sphinx_gallery_conf["pypandoc"]`` in conf.py, with the Lua filter
``docs/_ext/build_mechanics/notebook_links.lua``). These tests read what a reader downloads: no rST markup may be left
in a markdown cell, and every link must be absolute, under the site's ``html_baseurl`` (read from the built pages'
canonical link), to a page the build wrote.
"""

from __future__ import annotations

import os
import re
import runpy
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pypandoc
import pytest
from build_mechanics.notebook_baseurl import pandoc_metadata_args, pass_baseurl
from builds import GALLERY_CONF, GALLERY_EXTENSIONS, GALLERY_SCRIPTS, ROOT, project, sphinx_build
from markdown_it import MarkdownIt

#: rST left in a markdown cell, searched in the cell's text outside fenced code: (what it is, pattern).
RST_MARKUP = (
    ("an rST role", re.compile(r":\w+(?::\w+)?:`")),
    ("rST double backticks", re.compile(r"``")),
    ("an rST directive or label", re.compile(r"^\s*\.\. (?:[\w-]+::|_[\w -]+:)", re.M)),
    ("an rST link", re.compile(r"`[^`]+<[^>]+>`__?")),
)
#: ``--`` standing for a dash in prose (Sphinx prints an en dash for it; pandoc's ``smart`` reader does the same).
DASH = re.compile(r"--")
#: A :doc: role with its explicit title and absolute target, as gallery text writes it.
DOC_ROLE = re.compile(r":doc:`[^`<]+<(/[^>`]+)>`")

#: GitHub-flavoured Markdown as Jupyter renders it: CommonMark with tables and strikethrough.
MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def site_baseurl(site) -> str:
    """The build's ``html_baseurl``, from the canonical link Sphinx writes into every page."""
    canonical = re.search(r'<link rel="canonical" href="([^"]+)index\.html"', site.page("index"))
    assert canonical, "index.html has no canonical link: html_baseurl is not set"
    return canonical.group(1)


def downloaded_notebooks(site) -> list[Path]:
    """The notebooks a reader downloads from the HTML output, and sphinx-gallery's copies next to the pages."""
    downloads = sorted(site.outdir.rglob("*.ipynb"))
    generated = sorted((site.tree / "docs" / "examples").rglob("*.ipynb"))
    assert sorted(p.name for p in downloads) == sorted(p.name for p in generated)
    assert len(generated) == len(GALLERY_SCRIPTS)
    return [*downloads, *generated]


def markdown_cells(path: Path) -> list[tuple[int, str]]:
    """``(cell index, source)`` of every markdown cell of the notebook at ``path``."""
    notebook = nbformat.read(path, as_version=4)
    return [(index, cell.source) for index, cell in enumerate(notebook.cells) if cell.cell_type == "markdown"]


def problems_in_cell(source: str) -> list[str]:
    """What in one markdown cell is not Markdown: rST markup, ``--`` dashes in prose, raw HTML from pandoc."""
    tokens = MARKDOWN.parse(source)
    lines = source.split("\n")
    for token in tokens:  # fenced and indented code may show anything
        if token.type in ("fence", "code_block") and token.map:
            for line in range(*token.map):
                lines[line] = ""
    outside_code = "\n".join(lines)
    found = [
        f"{what} in {line_of(outside_code, match.start())!r}"
        for what, pattern in RST_MARKUP
        for match in pattern.finditer(outside_code)
    ]
    for token in tokens:
        if token.type in ("html_block", "html_inline"):
            found.append(f"raw HTML (no Markdown form): {token.content.strip()!r}")
        for child in token.children or ():
            if child.type == "text" and DASH.search(child.content):
                found.append(f"'--' as a dash in prose: {child.content!r}")
            if child.type == "html_inline":
                found.append(f"raw HTML (no Markdown form): {child.content!r}")
    return list(dict.fromkeys(found))  # each problem of a line once


def line_of(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return text[start : end if end >= 0 else None].strip()


def links_in_cell(source: str) -> list[str]:
    """The ``href`` of every Markdown link of a cell (inline, reference and autolinks alike), then the ``src`` of
    every image."""
    children = [child for token in MARKDOWN.parse(source) for child in token.children or ()]
    return [child.attrGet("href") for child in children if child.type == "link_open"] + [
        child.attrGet("src") for child in children if child.type == "image"
    ]


def test_every_markdown_cell_is_markdown(site):
    problems = [
        f"{path.relative_to(site.tree)} cell {index}: {problem}"
        for path in downloaded_notebooks(site)
        for index, source in markdown_cells(path)
        for problem in problems_in_cell(source)
    ]
    assert problems == [], "\n".join(problems)


def test_every_link_is_absolute_into_the_site_and_its_page_exists(site):
    baseurl = site_baseurl(site)
    problems = []
    for path in downloaded_notebooks(site):
        for index, source in markdown_cells(path):
            for href in links_in_cell(source):
                where = f"{path.relative_to(site.tree)} cell {index}: link {href!r}"
                if not href.startswith(baseurl):
                    problems.append(f"{where} is not under html_baseurl {baseurl}")
                    continue
                page = href.removeprefix(baseurl).split("#")[0] or "index.html"
                if not (site.outdir / page).is_file():
                    problems.append(f"{where}: the build has no {page}")
    assert problems == [], "\n".join(problems)


def test_the_title_is_the_only_level_1_heading(site):
    """Each text block is converted alone; its sections must still rank below the page's title, as on the page."""
    problems = []
    for path in downloaded_notebooks(site):
        levels = [
            (index, token.tag)
            for index, source in markdown_cells(path)
            for token in MARKDOWN.parse(source)
            if token.type == "heading_open"
        ]
        first_markdown = next(index for index, _ in markdown_cells(path))  # the title
        if not levels or levels[0] != (first_markdown, "h1") or [tag for _, tag in levels].count("h1") != 1:
            problems.append(f"{path.relative_to(site.tree)}: headings (cell, tag) {levels}")
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("script", GALLERY_SCRIPTS, ids=str)
def test_every_doc_role_of_the_script_is_a_link_in_its_notebook(site, script):
    """Each ``:doc:`` of the script's text is a link in the notebook (a role dropped or kept as code fails)."""
    baseurl = site_baseurl(site)
    targets = sorted(set(DOC_ROLE.findall((ROOT / "gallery" / script).read_text(encoding="utf-8"))))
    notebook = site.tree / "docs" / "examples" / script.with_suffix(".ipynb")
    links = {href for _, source in markdown_cells(notebook) for href in links_in_cell(source)}
    missing = [target for target in targets if f"{baseurl}{target.removeprefix('/')}.html" not in links]
    assert missing == [], f"{script.with_suffix('.ipynb')}: no link to {missing} (links: {sorted(links)})"


def test_the_what_to_do_instead_cell_links_the_callback_side_page(site):
    """The issue's example: the old-pattern notebook tells the reader where to go, with working links."""
    baseurl = site_baseurl(site)
    notebook = site.tree / "docs" / "examples" / "core" / "old_outputs_hooks.ipynb"
    cells = [source for _, source in markdown_cells(notebook) if "What to do instead" in source]
    assert len(cells) == 1, cells
    assert f"[Callback-side caching]({baseurl}examples/core/callback_side_caching.html)" in cells[0]
    assert f"[Module-side caching]({baseurl}examples/core/module_side_caching.html)" in cells[0]


# -- The filter on its own: what pandoc makes of one text block, with the build's own pandoc arguments ----------


@pytest.fixture(scope="module")
def pandoc_options():
    """conf.py's ``sphinx_gallery_conf["pypandoc"]``, plus the metadata that
    docs/_ext/build_mechanics/notebook_baseurl.py adds."""
    environ = dict(os.environ)
    try:
        options = runpy.run_path(str(ROOT / "conf.py"))["sphinx_gallery_conf"]["pypandoc"]
    finally:  # conf.py sets PYTHONWARNINGS and OMP_NUM_THREADS for the build's processes, not for the tests'
        os.environ.clear()
        os.environ.update(environ)
    extra_args = [*options["extra_args"], *pandoc_metadata_args("https://example.org/guide/")]
    return {**options, "extra_args": extra_args}


def convert(text: str, options: dict) -> str:
    """What sphinx-gallery does with one text block (``to="md"``, ``format="rst"``, the configured options)."""
    return pypandoc.convert_text(text, to="md", format="rst", **options)


def test_filter_shows_a_root_image_from_the_hosted_site_and_rejects_a_relative_one(pandoc_options):
    markdown = convert(".. image:: /examples/performance/images/plot_001.png\n   :alt: the plot\n", pandoc_options)
    assert markdown.strip() == "![the plot](https://example.org/guide/_images/plot_001.png)"
    with pytest.raises(RuntimeError, match="image 'images/plot_001.png' in a gallery text block"):
        convert(".. image:: images/plot_001.png\n", pandoc_options)


def test_filter_links_doc_roles_and_keeps_python_roles_as_code(pandoc_options):
    markdown = convert(
        "See :doc:`the callback side </examples/core/callback_side_caching>` -- timed with "
        ":func:`time.process_time` on :class:`~torch.nn.Module` and ``x``.\n",
        pandoc_options,
    )
    assert markdown.strip() == (
        "See [the callback side](https://example.org/guide/examples/core/callback_side_caching.html) – timed with "
        "`time.process_time()` on `Module` and `x`."
    )


def test_reader_ranks_a_section_below_the_title_in_a_block_of_its_own(pandoc_options):
    markdown = convert("Section\n-------\n\nText.\n\nPart\n~~~~\n\nMore.\n", pandoc_options)
    assert markdown.strip() == "## Section\n\nText.\n\n### Part\n\nMore."


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        (":doc:`callback_side_caching`", "give the link its text"),
        (":doc:`the recipe <callback_side_caching>`", "write the target from the site's root"),
        (":ref:`see below <validate-before-fit>`", "Sphinx resolves labels after the notebooks are written"),
        (":download:`data.csv`", "this role has no Markdown form here"),
    ],
)
def test_filter_rejects_what_it_cannot_link_and_says_why(pandoc_options, text, cause):
    with pytest.raises(RuntimeError) as error:
        convert(f"Read {text} first.\n", pandoc_options)
    assert text in str(error.value)
    assert cause in str(error.value)


def test_reader_rejects_a_heading_underline_outside_the_gallery_convention(pandoc_options):
    with pytest.raises(RuntimeError, match=r"the heading 'A heading' is underlined with '\*'; gallery pages use"):
        convert("A heading\n*********\n\nText.\n", pandoc_options)


def test_the_extension_passes_the_configured_html_baseurl(pandoc_options):
    from sphinx.errors import ConfigError

    config = SimpleNamespace(
        html_baseurl="https://example.org/other/", sphinx_gallery_conf={"pypandoc": {"extra_args": ["--to=gfm"]}}
    )
    pass_baseurl(None, config)
    assert config.sphinx_gallery_conf["pypandoc"]["extra_args"] == [
        "--to=gfm",
        "--metadata=html_baseurl:https://example.org/other/",
    ]
    config.html_baseurl = "/migrate/"
    with pytest.raises(ConfigError, match="html_baseurl must be an absolute http.s. address, got '/migrate/'"):
        pass_baseurl(None, config)


def test_a_relative_doc_target_fails_the_build_and_names_the_role(tmp_path):
    """A fixture gallery with the guide's notebook conversion: a ``:doc:`` that is not written from the site's root
    fails the build, naming the role and the script. Nothing runs: sphinx-gallery writes every script's notebook."""
    script = '''"""
Old hooks
=========

Read :doc:`callback_side_caching` instead.
"""

print("never run")
'''
    files = {
        "index.rst": "Site\n====\n\n.. toctree::\n\n   examples/index\n",
        "gallery/README.txt": "Gallery\n=======\n",
        "gallery/old_outputs_hooks.py": script,
    }
    conf = f"extensions = {list(GALLERY_EXTENSIONS)!r}\n{GALLERY_CONF}"
    tree = project(tmp_path, files, conf)
    build = sphinx_build(tree, "html", "-D", "sphinx_gallery_conf.filename_pattern=^$", source=".")
    assert build.returncode != 0
    assert ":doc:`callback_side_caching` in a gallery text block" in build.output
    assert "old_outputs_hooks.py" in build.output
