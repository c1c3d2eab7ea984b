"""What a reader sees in output blocks: the example's own output, no Lightning banner, no warning, no machine path.

At a desktop width and a phone width, every hand-written and gallery page is loaded in Chromium, and the text of
its output blocks (sphinx-gallery's captured output, myst-nb's cell outputs) is read as displayed.
"""

from __future__ import annotations

import re
import sys
import sysconfig
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from ._util import GALLERY_PAGES, ROOT, SCREENSHOT_DIR, WIDTHS, WRITTEN_PAGES, open_page, reset_width, set_width

#: Output blocks of sphinx-gallery (``sphx-glr-script-out``) and myst-nb (``cell_output``).
OUTPUT_BLOCKS = ".sphx-glr-script-out pre, .cell_output pre"
#: Lines that are noise: Lightning's informational log, and Python's display of a warning (``path:line: XWarning:``).
NOISE = re.compile(r"GPU available|TPU available|litlogger|`Trainer\.\w+` stopped|^\S+:\d+: \w*Warning:", re.M)
#: ``[the body's text, [each output block's text]]``, as displayed (``textContent``), given the blocks' selector.
READ_TEXT = """
return [document.body.textContent,
        Array.from(document.querySelectorAll(arguments[0])).map(block => block.textContent)];
"""


def machine_paths(site) -> list[str]:
    """The build machine's absolute paths: the build tree, the project, the Python environment, the home folder."""
    paths = {
        str(site.tree.resolve()),
        str(ROOT),
        sysconfig.get_paths()["purelib"],
        sys.prefix,
        str(Path.home()),
        "/root",
        *site.python,  # the environment the build ran in, when not this one (a recorded build)
    }
    return sorted(path for path in paths if len(path) > 1)


@pytest.fixture
def width(browser, request):
    """The window at ``request.param`` CSS pixels; restored to 1280x900 afterwards, as the other tests expect."""
    set_width(browser, request.param)
    yield request.param
    reset_width(browser)


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
def test_no_page_shows_banners_warnings_or_machine_paths(browser, base_url, site, width):
    paths = machine_paths(site)
    found, blocks_seen = [], 0
    for page in [*WRITTEN_PAGES, *GALLERY_PAGES]:
        open_page(browser, f"{base_url}{page}.html")
        # One script reads the page's text and its output blocks' (one WebDriver call per block took 0.25 s a page)
        body, blocks = browser.execute_script(READ_TEXT, OUTPUT_BLOCKS)
        found += [f"{page}: shows {path}" for path in paths if path in body]
        blocks_seen += len(blocks)
        for text in blocks:
            found += [f"{page}: {match.group(0)!r} in an output block" for match in NOISE.finditer(text)]
    assert blocks_seen > len(GALLERY_PAGES), "too few output blocks were read: the selectors miss them"
    assert not found, f"at {width} px:\n" + "\n".join(found[:40])


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
def test_module_side_caching_screenshot(browser, base_url, width):
    """The page whose training output used to open with Lightning's banners: the output of its fit, as a reader
    sees it (the block that reports epoch 0), with the code that printed it."""
    open_page(browser, f"{base_url}examples/core/module_side_caching.html")
    blocks = browser.find_elements(By.CSS_SELECTOR, OUTPUT_BLOCKS)
    block = next(b for b in blocks if "epoch 0" in b.get_attribute("textContent"))
    browser.execute_script("arguments[0].scrollIntoView({block: 'end', behavior: 'instant'})", block)
    text = block.get_attribute("textContent")
    assert text.lstrip().startswith("epoch 0"), text  # the example's own first line, no banner above it
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT_DIR / f"module-side-caching-output-{width}.png"))
