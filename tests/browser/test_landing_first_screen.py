"""The landing page answers on its first screen, and the checker's page starts with what to run.

A reader who lands on the site sees the replacement before anything else: the "30-second answer" tabs open on the
new code (the ``:selected:`` tab of each tab set), and the first line of that code is inside the window, at a desktop
window of 1400 x 900 and on a 390 px phone (900 px tall, the browser's own height at that width, and 844, a common
phone's). The checker's page opens with the install command (``.. project-install::``, the repository's address from
``pyproject.toml``) and one command to run.
"""

from __future__ import annotations

import tomllib

import pytest
from selenium.webdriver.common.by import By

from ._util import ROOT, SCREENSHOT_DIR, open_page, reset_width, set_width

#: (width, height) of the windows the first screen is measured in, in CSS pixels.
SCREENS = ((1400, 900), (390, 900), (390, 844))


@pytest.fixture(params=SCREENS, ids=lambda screen: f"{screen[0]}x{screen[1]}")
def screen(request, browser):
    set_width(browser, *request.param)
    yield request.param
    reset_width(browser)


def test_the_answer_opens_on_the_new_code_within_the_first_screen(site, browser, base_url, screen):
    open_page(browser, f"{base_url}index.html")
    browser.execute_script("localStorage.clear(); sessionStorage.clear()")  # no tab chosen on an earlier visit
    open_page(browser, f"{base_url}index.html")
    tab_set = browser.find_element(By.CSS_SELECTOR, "article .sd-tab-set")
    checked = tab_set.find_element(By.CSS_SELECTOR, ":scope > input:checked + label")
    assert checked.text.startswith("New"), checked.text
    [code] = [pre for pre in tab_set.find_elements(By.CSS_SELECTOR, "pre") if pre.is_displayed()]
    first_line = code.text.splitlines()[0]
    assert first_line.startswith("class ") and "Old" not in checked.text
    bottom = browser.execute_script(
        "const r = document.createRange(); const pre = arguments[0];"
        "const text = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT).nextNode();"
        "r.setStart(text, 0); r.setEnd(text, text.length); return r.getBoundingClientRect().bottom",
        code,
    )
    height = browser.execute_script("return window.innerHeight")
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT_DIR / f"landing-first-screen-{screen[0]}x{screen[1]}.png"))
    assert 0 < bottom <= height, f"the new code's first line ends at y = {bottom:.0f} px, the window is {height} px"
    print(f"{screen[0]}x{screen[1]}: the new code's first line ends at y = {bottom:.0f} px")


def test_the_checker_page_starts_with_the_install_line_and_a_command(site, browser, base_url):
    set_width(browser, 390)
    try:
        open_page(browser, f"{base_url}checker/index.html")
        blocks = browser.find_elements(By.CSS_SELECTOR, "article div.highlight-console pre")
        project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        install = f"$ pip install git+{project['urls']['Repository']}@v{project['version']}"
        assert [block.text for block in blocks[:2]] == [install, "$ lightning-migrate src/"]
        heading = browser.find_element(By.CSS_SELECTOR, "article h1")
        first_text = browser.find_element(By.CSS_SELECTOR, "article section > p")
        # the commands come before the description of the checker, inside the first screen
        assert blocks[1].location["y"] < browser.execute_script("return window.innerHeight")
        assert heading.location["y"] < blocks[0].location["y"]
        assert first_text.location["y"] < blocks[0].location["y"]  # the one line saying what they do
        assert first_text.text.startswith("Install")
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SCREENSHOT_DIR / "checker-first-screen-390px.png"))
    finally:
        reset_width(browser)
