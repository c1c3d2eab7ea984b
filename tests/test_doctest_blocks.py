"""The pages' doctest blocks run and pass: Sphinx's doctest builder on a fixture project holding exactly those blocks.

The site's build (HTML) renders a ``.. doctest::`` block without running it; the doctest builder runs it. Rather
than a second whole-site build with that builder, every block of ``sphinx.ext.doctest`` (``doctest``, ``testcode``,
``testoutput``, ``testsetup``, ``testcleanup``) of every committed page is copied, in page order, into one page of a
fixture project per source page and run there (seconds).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from builds import ROOT, project, source_files, sphinx_build

#: The directives of sphinx.ext.doctest whose blocks run.
DIRECTIVES = ("doctest", "testcode", "testoutput", "testsetup", "testcleanup")
DIRECTIVE = re.compile(rf"^(?P<indent>[ \t]*)\.\. (?:{'|'.join(DIRECTIVES)})::")


def doctest_blocks(text: str) -> list[str]:
    """Every sphinx.ext.doctest directive of the reST ``text`` with its options and body, dedented, in order."""
    lines = text.splitlines()
    blocks, index = [], 0
    while index < len(lines):
        match = DIRECTIVE.match(lines[index])
        if not match:
            index += 1
            continue
        indent = len(match["indent"].expandtabs())
        block = [lines[index]]
        index += 1
        while index < len(lines) and (
            not lines[index].strip() or len(lines[index].expandtabs()) - len(lines[index].lstrip()) > indent
        ):
            block.append(lines[index])
            index += 1
        blocks.append(textwrap.dedent("\n".join(block)).strip() + "\n")
    return blocks


PAGES = {
    name: blocks
    for name in source_files()
    if name.startswith("docs/") and name.endswith(".rst")
    for blocks in [doctest_blocks((ROOT / name).read_text(encoding="utf-8"))]
    if blocks
}


def run_blocks(tmp_path: Path, blocks: list[str]):
    """The doctest builder's run of ``blocks`` as the one page of a fixture project (the guide's configuration,
    ``sphinx.ext.doctest`` alone)."""
    page = "Doctest blocks\n==============\n\n" + "\n".join(blocks)
    root = project(tmp_path / "project", {"index.rst": page}, 'extensions = ["sphinx.ext.doctest"]')
    return sphinx_build(root, "doctest", source=".")


def test_the_checker_page_has_doctest_blocks():
    assert "docs/checker/cli.rst" in PAGES, sorted(PAGES)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_doctest_block_of_the_page_passes(tmp_path, name):
    blocks = PAGES[name]
    build = run_blocks(tmp_path, blocks)
    assert build.returncode == 0, build.output[-4000:]
    # every example (each `>>>` line) ran: the builder counts one test per example
    examples = sum(line.lstrip().startswith(">>> ") for block in blocks for line in block.splitlines())
    summary = (build.outdir / "output.txt").read_text(encoding="utf-8")
    assert re.search(rf"^\s*{examples} tests?$", summary, flags=re.M), summary
    assert re.search(r"^\s*0 failures in tests$", summary, flags=re.M), summary


def test_a_wrong_expected_output_fails(tmp_path):
    """The check can fail: the checker page's blocks with one expected output changed fail the doctest build."""
    blocks = PAGES["docs/checker/cli.rst"]
    changed = [re.sub(r"'LM001'", "'LM999'", block, count=1) for block in blocks]
    assert changed != blocks
    build = run_blocks(tmp_path, changed)
    assert build.returncode != 0
    summary = (build.outdir / "output.txt").read_text(encoding="utf-8")
    assert re.search(r"^\s*1 failure in tests$", summary, flags=re.M), summary
