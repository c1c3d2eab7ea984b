"""A gallery page's notebook download, as a reader gets it: the Markdown links lead to the hosted pages.

At a desktop and a phone width, the reader finds the page's "Download Jupyter notebook" button, the browser fetches
the notebook it links, and the "What to do instead" cell of the old-pattern notebook must link the callback-side
page by its hosted address (``html_baseurl``, read from the page's canonical link). The link is then followed on the
served copy of the site, and the cell's Markdown is shown as HTML (markdown-it, CommonMark as Jupyter reads it)
for a screenshot in ``$SCREENSHOT_DIR``.
"""

from __future__ import annotations

import html
import json
from urllib.parse import quote

import pytest
from markdown_it import MarkdownIt
from selenium.webdriver.common.by import By

from ._util import SCREENSHOT_DIR, WIDTHS, fetch, open_page, reset_width, set_width

PAGE = "examples/core/old_outputs_hooks"
TARGET = "examples/core/callback_side_caching"
MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])


@pytest.fixture
def width(browser, request):
    """The window at ``request.param`` CSS pixels wide; 1280x900 again afterwards, as the other tests expect."""
    set_width(browser, request.param)
    yield request.param
    reset_width(browser)


def notebook_link(browser):
    """The page's "Download Jupyter notebook" link; it must be visible at the current width."""
    link = browser.find_element(By.CSS_SELECTOR, ".sphx-glr-download-jupyter a.download")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", link)
    assert link.is_displayed()
    assert link.get_attribute("href").endswith("/old_outputs_hooks.ipynb")
    return link


def markdown_links(source: str) -> list[str]:
    return [
        child.attrGet("href")
        for token in MARKDOWN.parse(source)
        for child in token.children or ()
        if child.type == "link_open"
    ]


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
def test_what_to_do_instead_cell_links_the_hosted_callback_side_page(browser, base_url, width):
    assert open_page(browser, f"{base_url}{PAGE}.html") == []
    canonical = browser.find_element(By.CSS_SELECTOR, 'link[rel="canonical"]').get_attribute("href")
    assert canonical.endswith(f"/{PAGE}.html"), canonical
    site_url = canonical.removesuffix(f"{PAGE}.html")  # html_baseurl, as the build wrote it
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    link = notebook_link(browser)
    assert browser.save_screenshot(str(SCREENSHOT_DIR / f"notebook-download-{width}.png"))

    response = fetch(browser, link.get_attribute("href"))
    assert response["status"] == 200
    cells = [
        "".join(cell["source"]) for cell in json.loads(response["text"])["cells"] if cell["cell_type"] == "markdown"
    ]
    [cell] = [source for source in cells if "What to do instead" in source]
    assert f"{site_url}{TARGET}.html" in markdown_links(cell), cell

    # The hosted address, followed on the served copy of the site, is the callback-side page.
    assert open_page(browser, f"{base_url}{TARGET}.html") == []
    assert browser.find_element(By.CSS_SELECTOR, "article h1").text.startswith("Callback-side caching")

    # What the reader's Jupyter shows: the cell rendered from its Markdown, with a link named after the page.
    rendered = f"<!doctype html><meta charset=utf-8><title>cell</title><body>{MARKDOWN.render(cell)}</body>"
    browser.get("data:text/html;charset=utf-8," + quote(rendered))
    anchor = browser.find_element(By.CSS_SELECTOR, f'a[href="{html.escape(site_url + TARGET)}.html"]')
    assert anchor.text == "Callback-side caching"
    assert ":doc:" not in browser.find_element(By.TAG_NAME, "body").text
    assert browser.save_screenshot(str(SCREENSHOT_DIR / f"notebook-what-to-do-instead-{width}.png"))
