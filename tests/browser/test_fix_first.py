"""Every fix page shows its new code first: the first line of the block a reader copies (the block after the
``fix-label`` line, :mod:`fix_pages`) lies within the top two thirds of the first screen of a 1400 x 900 desktop window
(so that a third of that screen at least shows the new code) and within the first screen of a 390 x 844 phone, below
the old code it replaces (a code block captioned "Before ...").

The pages are the registry's (each pattern's ``example``) and any gallery page that marks a fix block. A screenshot
of each page's first screen goes to ``SCREENSHOT_DIR`` (``fix-first-<page>-<width>.png``), with each position in
the test's output.
"""

from __future__ import annotations

import pytest
from fix_pages import fix_pages

from ._util import SCREENSHOT_DIR, open_page, reset_width, set_width

#: (width, height, screens): the window, in CSS pixels, and how many of its heights the first line may lie within.
#: Measured with the symptoms folded: at most 507 px at 1400 and 680 px at 390 (867 and 1,422 px when three of
#: them were shown open).
WINDOWS = [(1400, 900, 2 / 3), (390, 844, 1)]

FIRST_LINE = """
const label = document.querySelector('p.fix-label');
const block = label && label.nextElementSibling;
const pre = block && block.matches('div[class^="highlight-"]') ? block.querySelector('pre') : null;
if (!pre) return null;
const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
let node = walker.nextNode();
while (node && !node.textContent.trim()) node = walker.nextNode();
const range = document.createRange();
range.setStart(node, 0);
range.setEnd(node, 1);
const line = range.getBoundingClientRect();
const captions = Array.from(document.querySelectorAll('.code-block-caption'));
const old = captions.find(c => c.innerText.trim().startsWith('Before'));
return {
  top: line.top + window.scrollY,
  bottom: line.bottom + window.scrollY,
  text: pre.innerText.split('\\n')[0],
  old: old ? old.getBoundingClientRect().top + window.scrollY : null,
};
"""


@pytest.mark.parametrize("window", WINDOWS, ids=lambda window: f"{window[0]}px")
@pytest.mark.parametrize("docname", fix_pages())
def test_new_code_starts_within_the_first_screens(browser, base_url, docname, window):
    width, height, screens = window
    set_width(browser, width, height)
    try:
        assert open_page(browser, f"{base_url}{docname}.html") == []
        found = browser.execute_script(FIRST_LINE)
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(SCREENSHOT_DIR / f"fix-first-{docname.replace('/', '-')}-{width}.png"))
    finally:
        reset_width(browser)
    assert found is not None, f"{docname}: no code block right after a fix-label line"
    print(f"{docname} at {width}px: new code's first line {found['text']!r} at y = {found['top']:.0f}")
    assert found["text"].strip(), f"{docname}: the fix block starts with an empty line"
    assert found["old"] is not None and found["old"] < found["top"], f"{docname}: no old code above the new code"
    limit = screens * height  # the screen the window stands for, whatever the browser's frame takes of it
    assert found["bottom"] <= limit, (
        f"{docname} at {width}px: the new code's first line ends at y = {found['bottom']:.0f}, below {limit} px "
        f"({screens:.2f} screen(s) of {height} px)"
    )
