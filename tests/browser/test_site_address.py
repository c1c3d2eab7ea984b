"""html_baseurl, the site's one address setting, in a browser: the 404 page served from the root, at both widths.

A local build's ``html_baseurl`` is the address of README's server command (``http.server`` on port 8000, the site
at the root); the ``base_url`` fixture serves the build under the path its canonical links name, so these tests
see the site as that command serves it.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from selenium.webdriver.common.by import By

from ._util import (
    SCREENSHOT_DIR,
    WIDTHS,
    broken_images,
    click,
    open_page,
    reset_width,
    set_width,
    unloaded_stylesheets,
    wait,
)


@pytest.fixture
def width(request, browser):
    set_width(browser, request.param)
    yield request.param
    reset_width(browser)


def html_baseurl(site) -> str:
    return re.search(r'<link rel="canonical" href="([^"]+)index\.html"', site.page("index")).group(1)


def test_a_local_build_is_made_for_the_readme_server(site, base_url):
    assert html_baseurl(site) == "http://127.0.0.1:8000/"
    assert urlsplit(base_url).path == "/"


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
def test_missing_page_at_any_depth_is_styled_and_links_home(browser, base_url, width):
    missing = f"{base_url}no/such/deep/page.html"
    errors = open_page(browser, missing)
    assert [e for e in errors if "no/such/deep/page.html" not in e["message"]] == []
    assert unloaded_stylesheets(browser) == [] and broken_images(browser) == []
    article = browser.find_element(By.CSS_SELECTOR, "article")
    assert "Page not found" in article.text
    # furo's layout applied: the article is laid out inside the window, not as unstyled full-width text
    assert browser.execute_script("return getComputedStyle(document.body).fontFamily") != "Times New Roman"
    assert browser.execute_script("return arguments[0].getBoundingClientRect().right", article) <= width
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT_DIR / f"404-{width}.png"))
    click(browser, browser.find_element(By.LINK_TEXT, "the table of removed and changed hooks"))
    wait(browser).until(lambda d: d.current_url == f"{base_url}reference/hooks.html")
    assert browser.find_element(By.CSS_SELECTOR, "article h1").text.startswith("Removed and changed hooks")


def test_rule_pages_link_findings_to_the_built_site(site):
    page = site.page("checker/rules/LM001")
    links = set(re.findall(r"https?://[^\s\"<>]+/checker/rules/LM\d+\.html", page))
    assert links and all(link.startswith(html_baseurl(site)) for link in links), links
