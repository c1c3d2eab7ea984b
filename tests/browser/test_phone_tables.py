"""Every table of the site reads at a phone width (390 CSS px) and at a desktop width (1400 CSS px), in Chromium.

On a phone a table either fits its box, or it is the grid that scrolls sideways under a first column that stays in
place (the compatibility table): its text stays at least 12 px and nothing scrolled shows beside the fixed column.
Tables marked ``stack-on-phone`` read one block per row there, each cell after its column's name; at a desktop
width they are plain tables. The printed comparison of "Which replacement" fits the page at both widths.
Screenshots go to ``SCREENSHOT_DIR`` (``tables-<page>-<width>px.png``).
"""

from __future__ import annotations

import pytest

from ._util import GALLERY_PAGES, SCREENSHOT_DIR, WIDTHS, WRITTEN_PAGES, open_page, reset_width, set_width

#: The grids that scroll sideways under a sticky first column on a phone (docs/_static/site.css).
STICKY_GRIDS = ("compat-table",)
#: The smallest text a table cell may have, in CSS pixels.
SMALLEST_TEXT = 12


@pytest.fixture(params=WIDTHS, ids=lambda width: f"{width}px")
def width(request, browser):
    set_width(browser, request.param)
    yield request.param
    reset_width(browser)


def rule_pages(site) -> list[str]:
    return sorted(f"checker/rules/{path.stem}" for path in (site.outdir / "checker" / "rules").glob("*.html"))


TABLES = """
// a table folded in a dropdown is measured as a reader who opens it sees it
document.querySelectorAll('article details').forEach(details => { details.open = true; });
return Array.from(document.querySelectorAll('article table')).map(table => {
  const box = table.closest('.table-wrapper') || table.parentElement;
  const cells = Array.from(table.querySelectorAll('td, th')).filter(cell => cell.checkVisibility());
  return {
    classes: table.className,
    overflow: box.scrollWidth - box.clientWidth,
    smallest: Math.min(...cells.map(cell => parseFloat(getComputedStyle(cell).fontSize))),
    text: table.innerText.slice(0, 60),
  };
});
"""


def test_every_table_fits_or_scrolls_under_a_fixed_column_on_a_phone(site, browser, base_url):
    set_width(browser, 390)
    problems, sticky, seen = [], 0, 0
    for docname in dict.fromkeys([*WRITTEN_PAGES, *GALLERY_PAGES, *rule_pages(site)]):  # WRITTEN_PAGES has the rules
        open_page(browser, f"{base_url}{docname}.html")
        for table in browser.execute_script(TABLES):
            seen += 1
            grid = any(name in table["classes"].split() for name in STICKY_GRIDS)
            sticky += grid
            if table["overflow"] > 1 and not grid:
                problems.append(f"{docname}: {table['overflow']} px wider than its box: {table['text']!r}")
            if table["smallest"] < SMALLEST_TEXT:
                problems.append(f"{docname}: text of {table['smallest']} px: {table['text']!r}")
    reset_width(browser)
    assert seen >= 8 and sticky == len(STICKY_GRIDS)
    assert problems == [], "\n".join(problems)


FIXED_COLUMN = """
const table = document.querySelector(`table.${arguments[0]}`);
const box = table.closest('.table-wrapper');
const rows = Array.from(table.querySelectorAll('tbody tr')).slice(0, 5);
rows[2].scrollIntoView({block: 'center', behavior: 'instant'});  // clear of the page's header bar
box.scrollLeft = box.scrollWidth;
const boxRect = box.getBoundingClientRect();
const gaps = rows.map(row => {
  const first = row.firstElementChild.getBoundingClientRect();
  const y = first.top + first.height / 2;
  // every point from the box's left edge to the fixed cell's right edge belongs to the fixed cell
  const hits = [];
  for (let x = boxRect.left + 0.5; x < first.right - 0.5; x += 2) {
    const cell = document.elementFromPoint(x, y).closest('td, th');
    hits.push(cell === row.firstElementChild);
  }
  return {left: first.left - boxRect.left, covered: hits.every(Boolean)};
});
const scrolled = box.scrollLeft;
return {gaps, scrolled};
"""


@pytest.mark.parametrize(("docname", "grid"), [("reference/compatibility", "compat-table")])
def test_nothing_scrolled_shows_beside_the_fixed_column_on_a_phone(browser, base_url, docname, grid):
    set_width(browser, 390)
    open_page(browser, f"{base_url}{docname}.html")
    state = browser.execute_script(FIXED_COLUMN, grid)
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT_DIR / f"tables-{docname.replace('/', '-')}-scrolled-390px.png"))
    reset_width(browser)
    assert state["scrolled"] > 0, "the grid fits a phone: nothing to check"
    for gap in state["gaps"]:
        assert abs(gap["left"]) <= 0.5 and gap["covered"], state


STACKED = """
const table = document.querySelector('table.stack-on-phone');
table.scrollIntoView({block: 'start', behavior: 'instant'});
const row = table.querySelector('tbody tr');
const labels = Array.from(row.querySelectorAll('span.cell-label'));
return {
  header: table.querySelector('thead').checkVisibility(),
  rowDisplay: getComputedStyle(row).display,
  labels: labels.filter(label => label.checkVisibility()).map(label => label.innerText),
  headers: Array.from(table.querySelectorAll('thead th')).map(th => th.innerText.trim()),
};
"""


@pytest.mark.parametrize("docname", ["reference/hooks", "reference/compatibility", "explanation/why-outputs-went"])
def test_wide_tables_read_one_block_per_row_on_a_phone_and_stay_tables_on_a_desktop(browser, base_url, docname, width):
    open_page(browser, f"{base_url}{docname}.html")
    state = browser.execute_script(STACKED)
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT_DIR / f"tables-{docname.replace('/', '-')}-{width}px.png"))
    if width < 640:
        assert not state["header"] and state["rowDisplay"] == "block", state
        assert state["labels"] == state["headers"][1:], state  # each cell after its column's name
    else:
        assert state["header"] and state["rowDisplay"] == "table-row" and state["labels"] == [], state


OUTPUTS = """
return Array.from(document.querySelectorAll('article .cell_output pre')).map(pre => ({
  overflow: pre.scrollWidth - pre.clientWidth, text: pre.innerText}));
"""


def test_which_replacement_prints_its_comparison_within_the_page(browser, base_url, width):
    open_page(browser, f"{base_url}which-replacement.html")
    outputs = browser.execute_script(OUTPUTS)
    browser.execute_script("document.querySelector('article .cell_output').scrollIntoView()")
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT_DIR / f"tables-which-replacement-{width}px.png"))
    [comparison] = [output for output in outputs if "largest relative difference" in output["text"]]
    assert comparison["overflow"] <= 0, comparison
    assert "Trainer defaults" in comparison["text"] and "accumulate_grad_batches=3" in comparison["text"]


def test_checker_index_lists_rules_by_what_they_find(site, browser, base_url, width):
    from lightning_migrate import registry

    open_page(browser, f"{base_url}checker/index.html")
    table = browser.execute_script(TABLES)[0]
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT_DIR / f"tables-checker-index-{width}px.png"))
    assert table["overflow"] <= 1, table
    text = browser.execute_script("return document.querySelector('article table').innerText")
    assert not [p.id for p in registry.PATTERNS if p.id in text], "the index shows the registry's internal ids"
    assert "LM001" in text
