"""Layout in Chromium at a desktop width and a phone width: tables fit, identifiers stay whole, code scrolls.

Every check runs at each width of ``WIDTHS`` (1400 and 390 CSS pixels) unless it is about one of them: the
compatibility table shows every release at 1400 px and scrolls under a sticky first column at 390 px; no word
of a table cell or of the page's table of contents is split over two lines; a ``pre`` wider than its box
scrolls, with a visible scrollbar; the memory page's first figure is within its first screen and a half; the
gallery cards hold their titles and show a figure of the example or the guide's own picture. Screenshots of
the pages go to ``SCREENSHOT_DIR`` (``layout-<page>-<width>.png``).
"""

from __future__ import annotations

from importlib import resources
from urllib.parse import urljoin, urlsplit

import pytest
from build_mechanics import identifier_breaks
from PIL import Image, ImageChops

from lightning_migrate import registry
from migration_guide import compat

from ._util import (
    GALLERY_PAGES,
    ROOT,
    RULE_PAGES,
    SCREENSHOT_DIR,
    WIDTHS,
    WRITTEN_PAGES,
    fetch,
    open_page,
    reset_width,
    set_width,
)

COMPAT = "reference/compatibility"
MEMORY = "examples/performance/retained_memory"
SCREENSHOT_PAGES = [COMPAT, MEMORY, RULE_PAGES[0], "examples/index"]


@pytest.fixture(params=WIDTHS, ids=lambda width: f"{width}px")
def width(request, browser):
    """The window at each width of ``WIDTHS``; put back to 1280 x 900 afterwards (other tests assume it)."""
    set_width(browser, request.param)
    yield request.param
    reset_width(browser)


@pytest.fixture
def desktop(browser):
    set_width(browser, 1400)
    yield 1400
    reset_width(browser)


@pytest.fixture
def phone(browser):
    set_width(browser, 390)
    yield 390
    reset_width(browser)


def released_versions() -> list[str]:
    """The releases of ``data/compat/matrix.toml`` that have a data file: the table's columns, in order."""
    return [version for version in compat.load_matrix()["versions"] if compat.data_path(version).is_file()]


# -- the compatibility table ----------------------------------------------------------------------------------

HEADER_RECTS = """
const table = document.querySelector('table.compat-table');
const wrapper = table.closest('.table-wrapper') || table.parentElement;
return {
  viewport: document.documentElement.clientWidth,
  wrapper: wrapper.getBoundingClientRect().toJSON(),
  headers: Array.from(table.querySelectorAll('thead th'))
    .map(th => [th.innerText, th.getBoundingClientRect().toJSON()]),
};
"""


def test_compat_table_shows_every_release_at_desktop_width(browser, base_url, desktop):
    open_page(browser, f"{base_url}{COMPAT}.html")
    layout = browser.execute_script(HEADER_RECTS)
    headers = layout["headers"]
    assert len(headers) == 1 + len(released_versions()), [text for text, _ in headers]
    for (text, rect), version in zip(headers[1:], released_versions(), strict=True):
        assert version in text
        # inside the window and inside the table's scroll box: seen without scrolling anything sideways
        assert 0 <= rect["left"] and rect["right"] <= layout["viewport"], (text, rect, layout["viewport"])
        assert rect["right"] <= layout["wrapper"]["right"] + 0.5, (text, rect, layout["wrapper"])
    assert not browser.execute_script("return document.querySelector('p.compat-scroll-cue').checkVisibility()"), (
        "the scroll cue shows although nothing scrolls"
    )


STICKY = """
const table = document.querySelector('table.compat-table');
const wrapper = table.closest('.table-wrapper');
const firstCell = table.querySelector('tbody th, tbody td');
const lastHeader = table.querySelector('thead th:last-child');
const before = {cell: firstCell.getBoundingClientRect().left, last: lastHeader.getBoundingClientRect().left};
wrapper.scrollLeft = wrapper.scrollWidth;
const after = {cell: firstCell.getBoundingClientRect().left, last: lastHeader.getBoundingClientRect().left,
               lastRight: lastHeader.getBoundingClientRect().right};
const cue = document.querySelector('p.compat-scroll-cue');
const cueRect = cue.getBoundingClientRect();
const result = {before, after, scrolled: wrapper.scrollLeft, overflows: wrapper.scrollWidth > wrapper.clientWidth,
                cueVisible: cue.checkVisibility(), cueRect: cueRect.toJSON(), cueText: cue.innerText,
                cueAboveTable: cueRect.bottom <= table.getBoundingClientRect().top,
                viewport: document.documentElement.clientWidth};
wrapper.scrollLeft = 0;
return result;
"""


def test_compat_table_scrolls_under_a_sticky_first_column_on_a_phone(browser, base_url, phone):
    open_page(browser, f"{base_url}{COMPAT}.html")
    state = browser.execute_script(STICKY)
    assert state["overflows"], "the table fits a phone: the sticky column and the cue are not exercised"
    assert state["cueVisible"] and state["cueAboveTable"], state
    assert 0 <= state["cueRect"]["left"] and state["cueRect"]["right"] <= state["viewport"], state["cueRect"]
    assert "Scroll the table sideways" in state["cueText"]
    assert state["scrolled"] > 0
    assert state["after"]["last"] < state["before"]["last"], "the release columns did not move"
    assert state["after"]["cell"] == state["before"]["cell"], "the old-pattern column scrolled away"
    assert state["after"]["lastRight"] <= state["viewport"], "the last release cannot be scrolled into view"


CELL_LINKS = """
return Array.from(document.querySelectorAll('table.compat-table tbody tr')).map(row => ({
  pattern: row.cells[0].innerText,
  links: Array.from(row.querySelectorAll('td')).map(td => (td.querySelector('a') || {}).href || null),
}));
"""


def test_every_compat_cell_links_to_its_patterns_fix(browser, base_url, desktop):
    open_page(browser, f"{base_url}{COMPAT}.html")
    rows = browser.execute_script(CELL_LINKS)
    assert len(rows) == len(registry.PATTERNS)
    targets = set()
    for row, pattern in zip(rows, registry.PATTERNS, strict=True):
        assert row["pattern"].replace("\n", "").replace(" ", "") == (
            f"{pattern.owner}.{pattern.old_signature}".replace(" ", "")
        )
        assert len(row["links"]) == len(released_versions())
        for href in row["links"]:
            assert href is not None, f"{pattern.id}: a cell without a link"
            # the fix is the registry's own target for this pattern, read there (never a copy)
            assert urlsplit(href).path == urlsplit(urljoin(base_url, f"{pattern.example}.html")).path, (
                pattern.id,
                href,
            )
            targets.add(href)
    for href in sorted(targets):
        response = fetch(browser, href)
        assert response["status"] == 200, (href, response["status"])
        assert "<article" in response["text"], href


# -- identifiers, code blocks ---------------------------------------------------------------------------------

#: For every word (letters and digits: ``_ . ( ,`` and spaces are where a break may fall) of every text node in
#: a table or in the page's table of contents: the words laid out on more than one line.
BROKEN_WORDS = """
const roots = Array.from(document.querySelectorAll('article table, .toc-tree'));
const broken = [];
for (const root of roots) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.data.matchAll(/[A-Za-z0-9]+/g)) {
      if (match[0].length < 2) continue;
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const lines = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
      const end = match.index + match[0].length;
      if (lines.size > 1) broken.push(node.data.slice(Math.max(0, match.index - 15), end + 15));
    }
  }
}
return broken;
"""


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        (
            '<span class="pre">Callback.on_train_epoch_end(self,</span>',
            '<span class="pre">Callback.<wbr>on_<wbr>train_<wbr>epoch_<wbr>end(<wbr>self,</span>',
        ),
        ('<span class="pre">0.1867980659008026</span>', '<span class="pre">0.1867980659008026</span>'),
        (
            '<span class="pre">gallery/core/module_side_caching.py</span>',
            '<span class="pre">gallery/<wbr>core/<wbr>module_<wbr>side_<wbr>caching.<wbr>py</span>',
        ),
        ('<span class="pre">self)</span>', '<span class="pre">self)</span>'),
        (
            '<div class="sphx-glr-thumbnail-title">validation_epoch_end becomes x</div>',
            '<div class="sphx-glr-thumbnail-title">validation_<wbr>epoch_<wbr>end becomes x</div>',
        ),
        ("<pre>on_train_epoch_end(self, outputs)</pre>", "<pre>on_train_epoch_end(self, outputs)</pre>"),
        ("<p>see on_train_epoch_end.</p>", "<p>see on_train_epoch_end.</p>"),
    ],
)
def test_word_breaks_are_added_after_separators_of_inline_code_only(html, expected):
    assert identifier_breaks.add_word_breaks(html) == expected


@pytest.mark.parametrize("docname", [*WRITTEN_PAGES, *GALLERY_PAGES])
def test_no_word_breaks_inside_tables_or_the_page_contents(browser, base_url, docname, width):
    open_page(browser, f"{base_url}{docname}.html")
    broken = browser.execute_script(BROKEN_WORDS)
    assert broken == [], f"{docname} at {width}px: words split over two lines in {broken[:10]}"


#: Every ``pre`` of the article wider than its box: whether it scrolls sideways, and shows a scrollbar.
OVERFLOWING_PRE = """
return Array.from(document.querySelectorAll('article pre')).filter(pre => pre.checkVisibility())
  .filter(pre => pre.scrollWidth > pre.clientWidth + 1).map(pre => {
    const style = getComputedStyle(pre);
    pre.scrollLeft = 40;
    const scrolled = pre.scrollLeft;
    pre.scrollLeft = 0;
    return {text: pre.innerText.slice(0, 60), overflowX: style.overflowX, scrolled,
            scrollbarWidth: style.scrollbarWidth, scrollbarHeight: pre.offsetHeight - pre.clientHeight
              - parseFloat(style.borderTopWidth) - parseFloat(style.borderBottomWidth)};
  });
"""


@pytest.mark.parametrize("docname", [MEMORY, *RULE_PAGES])
def test_long_code_scrolls_with_a_visible_scrollbar(browser, base_url, docname, width):
    open_page(browser, f"{base_url}{docname}.html")
    for pre in browser.execute_script(OVERFLOWING_PRE):
        assert pre["overflowX"] in ("auto", "scroll"), pre
        assert pre["scrolled"] > 0, f"cut off, cannot be scrolled: {pre}"
        assert pre["scrollbarWidth"] == "auto" and pre["scrollbarHeight"] > 0, f"no visible scrollbar: {pre}"


def test_memory_page_tables_do_not_wrap(browser, base_url, desktop):
    open_page(browser, f"{base_url}{MEMORY}.html")
    outputs = browser.execute_script(
        """return Array.from(document.querySelectorAll('.sphx-glr-script-out pre')).map(pre => ({
             text: pre.innerText, whiteSpace: getComputedStyle(pre).whiteSpace,
             fits: pre.scrollWidth <= pre.clientWidth}));"""
    )
    tables = [out for out in outputs if "tensor bytes at epoch end" in out["text"] or "B/step" in out["text"]]
    assert len(tables) >= 3, [out["text"][:60] for out in outputs]
    for out in outputs:
        assert out["whiteSpace"] == "pre" and out["fits"], out


# -- the memory page's conclusion, the gallery index ---------------------------------------------------------


def test_memory_page_shows_its_conclusion_plot_first(browser, base_url, width):
    open_page(browser, f"{base_url}{MEMORY}.html")
    first = browser.execute_script(
        """const img = document.querySelector('article img');
           return {src: img.src, top: img.getBoundingClientRect().top + window.scrollY, loaded: img.naturalWidth,
                   screen: window.innerHeight, conclusion: document.querySelector('article section > p').innerText};"""
    )
    assert first["src"].endswith("sphx_glr_retained_memory_001.png") and first["loaded"] > 0, first
    assert first["top"] < 1.5 * first["screen"], f"first figure at {first['top']:.0f}px, screen {first['screen']}px"
    assert first["conclusion"].startswith("The conclusion first"), first["conclusion"]


CARDS = """
return Array.from(document.querySelectorAll('.sphx-glr-thumbcontainer')).map(card => {
  const box = card.getBoundingClientRect();
  const title = card.querySelector('.sphx-glr-thumbnail-title');
  const text = title.getBoundingClientRect();
  return {title: title.innerText, href: card.querySelector('a').href, img: card.querySelector('img').src,
          inside: text.left >= box.left - 0.5 && text.right <= box.right + 0.5 && text.bottom <= box.bottom + 0.5,
          overflows: title.scrollWidth > title.clientWidth + 1};
});
"""


def test_gallery_cards_hold_their_titles(browser, base_url, width):
    open_page(browser, f"{base_url}examples/index.html")
    cards = browser.execute_script(CARDS)
    assert len(cards) == len(GALLERY_PAGES)
    for card in cards:
        assert card["inside"] and not card["overflows"], f"{card['title']!r} leaves its card at {width}px"


def test_gallery_cards_show_a_figure_or_the_guides_picture(site, browser, base_url, desktop):
    """A card shows its example's first figure, or -- for an example that draws none -- the guide's picture."""
    open_page(browser, f"{base_url}examples/index.html")
    default = Image.open(ROOT / "docs" / "_static" / "gallery_thumb.png").convert("RGB")
    placeholder = resources.files("sphinx_gallery") / "_static" / "no_image.png"
    with resources.as_file(placeholder) as path:
        placeholder_pixels = Image.open(path).convert("RGB").resize(default.size)
    figures = 0
    for card in browser.execute_script(CARDS):
        thumb = Image.open(site.outdir / urlsplit(card["img"]).path.removeprefix(urlsplit(base_url).path))
        thumb = thumb.convert("RGB")
        page = site.outdir / urlsplit(card["href"]).path.removeprefix(urlsplit(base_url).path)
        stem = page.stem
        draws_figure = f"sphx_glr_{stem}_001.png" in page.read_text(encoding="utf-8")
        assert ImageChops.difference(thumb.resize(default.size), placeholder_pixels).getbbox() is not None, card
        if draws_figure:
            figures += 1
            assert ImageChops.difference(thumb, default).getbbox() is not None, f"{stem}: its figure is not shown"
        else:
            assert ImageChops.difference(thumb, default).getbbox() is None, f"{stem}: not the guide's picture"
    assert figures >= 1


@pytest.mark.parametrize("docname", SCREENSHOT_PAGES)
def test_layout_screenshots(browser, base_url, docname, width):
    """Screenshots to look at: the top of each page, and the compatibility table itself."""
    open_page(browser, f"{base_url}{docname}.html")
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    name = docname.replace("/", "-")
    assert browser.save_screenshot(str(SCREENSHOT_DIR / f"layout-{name}-{width}.png"))
    if docname == COMPAT:
        browser.execute_script(
            "document.querySelector('table.compat-table').scrollIntoView({block: 'start', behavior: 'instant'})"
        )
        assert browser.save_screenshot(str(SCREENSHOT_DIR / f"layout-{name}-table-{width}.png"))
