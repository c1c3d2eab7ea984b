"""The install command and the pre-commit entry a reader copies, in Chromium at a desktop and a phone width: they
name the repository and the release tag of pyproject.toml, the copy button copies the command without its prompt,
and a line longer than the window scrolls inside its block. Screenshots: ``install-<page>-<width>px.png``."""

from __future__ import annotations

import tomllib

import pytest

from ._util import ROOT, SCREENSHOT_DIR, WIDTHS, open_page, reset_width, set_width

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
COMMAND = f"pip install git+{PROJECT['urls']['Repository']}@v{PROJECT['version']}"


@pytest.fixture(params=WIDTHS, ids=lambda width: f"{width}px")
def width(request, browser):
    set_width(browser, request.param)
    yield request.param
    reset_width(browser)


BLOCKS = """
return Array.from(document.querySelectorAll('article div.highlight pre')).map(pre => {
  const copy = pre.cloneNode(true);
  copy.querySelectorAll('.gp, .go, .linenos').forEach(node => node.remove());  // what copybutton leaves out
  const button = pre.parentElement.querySelector('button.copybtn');
  return {text: pre.innerText, copied: copy.innerText.trim(), button: !!button,
          overflow: pre.scrollWidth - pre.clientWidth,
          scrolls: ['auto', 'scroll'].includes(getComputedStyle(pre).overflowX),
          visible: pre.checkVisibility()};
});
"""


@pytest.mark.parametrize("docname", ["index", "checker/cli"])
def test_the_install_command_is_the_repository_at_its_release(browser, base_url, docname, width):
    open_page(browser, f"{base_url}{docname}.html")
    blocks = [block for block in browser.execute_script(BLOCKS) if COMMAND in block["text"]]
    assert len(blocks) == 1, f"{docname}: {len(blocks)} blocks hold {COMMAND!r}"
    [block] = blocks
    assert block["visible"] and block["button"] and block["copied"] == COMMAND, block
    assert block["overflow"] <= 0 or block["scrolls"], block
    browser.execute_script(
        "Array.from(document.querySelectorAll('article pre')).find(p => p.innerText.includes(arguments[0]))"
        ".scrollIntoView({block: 'center'})",
        COMMAND,
    )
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT_DIR / f"install-{docname.replace('/', '-')}-{width}px.png"))


def test_the_pre_commit_entry_names_the_repository_and_the_tag(browser, base_url, width):
    open_page(browser, f"{base_url}checker/cli.html")
    [block] = [block for block in browser.execute_script(BLOCKS) if block["text"].startswith("repos:")]
    assert f"repo: {PROJECT['urls']['Repository']}" in block["text"]
    assert f"rev: v{PROJECT['version']}" in block["text"]
    assert block["overflow"] <= 0 or block["scrolls"], block
