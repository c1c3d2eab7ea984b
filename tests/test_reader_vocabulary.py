"""Reader pages speak to the reader: no word of how the site is built, and no maintenance lines in their code.

Every built page except the contributing page (which is about the build) is read as a reader sees it -- the text of
its ``<article>``, code and printed output included -- and checked for the phrases of :data:`BUILD_WORDS`: how the
site is built, and how its recipes are proven in the build's own words (cells, axes, the scenario matrix, records,
data files, "in one process", "checked by N cells"). A failure names the page, the line of its HTML file and the
phrase, with the text around it. A word a reader uses in its ordinary sense (a notebook's code cell, a plot's axes,
a callback that records) is told apart by :data:`ORDINARY` and by phrases narrow enough to leave it alone; the
fixture tests show both on a page with each phrase injected. What the build does is the contributing page's subject
(docs/contributing.md).
"""

from __future__ import annotations

import html
import re
import sys

import pytest
from builds import GALLERY_SCRIPTS, ROOT

sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from browser._util import GALLERY_PAGES, WRITTEN_PAGES  # noqa: E402

#: Phrases that speak of the build, the tests or the project's tools, not to a reader; each a regular expression
#: (case-insensitive) and what it stands for.
BUILD_WORDS: dict[str, str] = {
    r"\bthis build\b": "this build",
    r"\bthe build\b": "the build (ran, fails, of this page)",
    r"\bevery build\b": "at every build",
    r"\b(?:page|site) was built\b": "when this page/site was built",
    r"\bbuilds this page\b": "the Lightning that builds this page",
    r"\bsite builds\b": "while the site builds",
    r"\bone build to\b": "from one build to the next",
    r"\bsite's build\b": "the site's build",
    r"\bkernel that built\b": "the kernel that built this page",
    r"\bnox\s+-s\b": "a nox session",
    r"\bdata/compat\b": "the recorded data files",
    r"\ba test fails\b": "a test fails when",
    r"\bthe tests (?:of this site )?run\b": "the tests run",
    r"\bdoc-test\b": "the doc-test build",
    r"\bthe probes\b": "the probes",
    r"\bsphinx-build\b": "sphinx-build",
    r"\bCI=": "CI=true",
    r"\b\d+ cells in [\d.]+ s\b": "a timing of the build",
    r"\brunning time of the script\b": "a timing of the build",
    r"\bis out of date\b": "this page is out of date",
    r"#\s*noqa:(?!\s*LM\d)": "a linter's noqa comment",
    # how the recipes are proven, in the build's own words: a reader reads "works with", "runs", "configurations"
    r"\bscenario[- ]matri(?:x|ces)\b": "the scenario matrix",
    r"\bmatrix (?:cells?|file|rows?|columns?)\b": "the matrix's cells",
    r"\bcells?\b": "cells (a run of the matrix, an entry of a record)",
    r"\b(?:the|its|each|every|other|two|\d+) ax(?:is|es)\b|\baxis values?\b": "axes (of the matrix)",
    r"\b(?:probe|committed|recorded) records?\b|\bthe records\b|\brecords? of (?:this|the) build\b": "records",
    r"(?<![\w.-])(?!pyproject\.toml)[\w-]+\.toml\b": "a data file (.toml)",
    r"(?<![\w/.-])data/[\w./-]+": "a data file (data/...)",
    r"\bin one process\b": "in one process",
    r"\bchecked by \d+\b": "checked by N (cells)",
    r"\bthat built (?:this|it)\b": "the Lightning that built this page",
}
#: Where a phrase of :data:`BUILD_WORDS` is a reader's ordinary word, not the build's: a match inside a match of the
#: context pattern is not a finding. A notebook's "code cell" or "the cells below" is what a reader of a notebook page
#: reads; a cell of the matrix or of a record is not.
ORDINARY: dict[str, str] = {
    # a notebook's cells, by name, or anywhere on a line that speaks of notebooks (the checker reads them)
    r"\bcells?\b": r"\b(?:code|notebook|next|previous|first|last|this|that) cells?\b|\bcells? (?:below|above|magic)\b"
    r"|^.*\b(?:notebooks?|ipynb|IPython|Jupyter)\b.*$",
}
#: Pages about the build itself.
BUILD_PAGES = {"contributing"}


def rule_codes() -> list[str]:
    from lightning_migrate.checker import RULES

    return sorted(RULES)


#: Every page a reader reads: the hand-written pages, the gallery's pages and section indexes, the checker's rule
#: pages (:func:`test_every_reader_page_is_checked` compares this list with the built site).
READER_PAGES = sorted(
    {
        *(page for page in WRITTEN_PAGES if page not in BUILD_PAGES),
        *GALLERY_PAGES,
        "examples/index",
        *(f"examples/{script.parts[0]}/index" for script in GALLERY_SCRIPTS),
        *(f"checker/rules/{code}" for code in rule_codes()),
    }
)


def built_reader_pages(site) -> list[str]:
    """Every page of the built site with an article, except :data:`BUILD_PAGES` (docnames, sorted)."""
    pages = []
    for path in sorted(site.outdir.rglob("*.html")):
        docname = path.relative_to(site.outdir).with_suffix("").as_posix()
        if docname.startswith(("_", ".")) or docname in BUILD_PAGES | {"search", "genindex", "404"}:
            continue
        pages.append(docname)
    return pages


def findings(page_html: str, docname: str) -> list[str]:
    """``<docname>.html:<line>: <phrase>: ...<text>...`` for each phrase of :data:`BUILD_WORDS` in the article.

    A link to the contributing page is left out: its title names the build, and it is where the build is explained.
    """
    start = page_html.index("<article")
    article = page_html[start : page_html.index("</article>")]
    article = re.sub(r'<a [^>]*href="[^"]*contributing\.html[^"]*"[^>]*>.*?</a>', "", article, flags=re.S)
    first_line = page_html[:start].count("\n") + 1
    found = []
    for offset, line in enumerate(article.split("\n")):
        text = html.unescape(re.sub(r"<[^>]+>", "", line))
        for pattern, phrase in BUILD_WORDS.items():
            ordinary = (
                [m.span() for m in re.finditer(ORDINARY[pattern], text, flags=re.I)] if pattern in ORDINARY else []
            )
            for match in re.finditer(pattern, text, flags=re.I):
                if any(start <= match.start() and match.end() <= end for start, end in ordinary):
                    continue
                around = text[max(0, match.start() - 50) : match.end() + 50].strip()
                found.append(f"{docname}.html:{first_line + offset}: {phrase}: ...{around}...")
    return found


def test_the_phrases_are_found_where_they_are_and_not_elsewhere():
    page = (
        "<html>\n<body>\n<article>\n<p>Every example ran when <em>this build</em> ran.</p>\n"
        '<pre>raise AssertionError("this page is out of date")  # noqa: BLE001</pre>\n'
        '<p>See <a href="contributing.html">how the build works</a>; <code># noqa: LM001</code>.</p>\n'
        "<p>It builds a dictionary; the site is built on Lightning.</p>\n</article>\n</body>\n</html>\n"
    )
    assert findings(page, "x") == [
        "x.html:4: this build: ...Every example ran when this build ran....",
        'x.html:5: this page is out of date: ...raise AssertionError("this page is out of date")  # noqa: BLE001...',
        'x.html:5: a linter\'s noqa comment: ...raise AssertionError("this page is out of date")  # noqa: BLE001...',
    ]


#: A page as a reader would see one, with each kind of build word injected in its prose (one phrase a line), and
#: the same words in a reader's ordinary use, which must pass.
INJECTED = {
    "Checked by 36 cells that hold on Lightning 2.6.6.": [
        "cells (a run of the matrix, an entry of a record)",
        "checked by N (cells)",
    ],
    'Every cell: <a href="../reference/scenarios.html#recipe-x">the scenario matrix</a>.': [
        "cells (a run of the matrix, an entry of a record)",
        "the scenario matrix",
    ],
    "The space, the recipes and their domains are declared in <code>data/scenarios.toml</code>.": [
        "a data file (.toml)",
        "a data file (data/...)",
    ],
    "Every value of the other axes: precision; processes.": ["axes (of the matrix)"],
    "Each axis value comes from a report.": ["axes (of the matrix)"],
    "The column shows the committed record, never the probe records.": ["records", "records"],
    "On Lightning 2.6.6, in one process, the hook is never called.": ["in one process"],
    "A claims.toml entry names it.": ["a data file (.toml)"],
    "The Lightning that built this page.": ["the Lightning that built this page"],
    "The matrix cells hold.": ["the matrix's cells", "cells (a run of the matrix, an entry of a record)"],
}
ORDINARY_USE = [
    "Run the code cell below, then the cells below it, in your notebook.",
    "A finding there is notebook.ipynb:cell N:line:col; a cell that starts with a cell magic is skipped.",
    '<pre>figure, axes = plt.subplots(1, 2)\nax.grid(axis="x")</pre>',
    "Retained bytes on log-log axes, one line per approach.",
    "This page records every hook call; a callback records the batch.",
    "Configure the checker in <code>pyproject.toml</code>.",
    "It runs in one epoch, on one process group.",
    "See https://lightning.ai/docs/pytorch/stable/data/iterables.html for several loaders.",
]


def article(*paragraphs: str) -> str:
    return (
        "<html>\n<body>\n<article>\n" + "".join(f"<p>{p}</p>\n" for p in paragraphs) + "</article>\n</body>\n</html>\n"
    )


@pytest.mark.parametrize("sentence", sorted(INJECTED), ids=range(len(INJECTED)))
def test_an_injected_build_word_is_found_with_its_page_line_and_phrase(sentence):
    page = article("The fix comes first.", sentence)
    found = findings(page, "examples/x/y")
    assert sorted(line.split(": ")[1] for line in found) == sorted(INJECTED[sentence])
    assert all(line.startswith("examples/x/y.html:5: ") for line in found), found


def test_the_same_words_in_a_readers_ordinary_use_pass():
    assert findings(article(*ORDINARY_USE), "examples/x/y") == []
    # the ordinary use of a word does not hide the build's use of it on the same line
    assert findings(article("Run the code cell below: 36 cells hold."), "x") == [
        "x.html:4: cells (a run of the matrix, an entry of a record): ...Run the code cell below: 36 cells hold...."
    ]


def test_every_reader_page_is_checked(site):
    assert built_reader_pages(site) == READER_PAGES


@pytest.mark.parametrize("docname", READER_PAGES)
def test_reader_page_speaks_to_the_reader(site, docname):
    found = findings(site.page(docname), docname)
    assert found == [], f"{len(found)} phrases of the build on {docname}:\n" + "\n".join(found)
