"""The built site in a real browser: headless Debian Chromium driven by Selenium, over HTTP on 127.0.0.1.

The site of the ``site`` fixture (one full build per test session) is served by a local HTTP server under the
path the build was configured for (the path of its ``html_baseurl``: ``/`` for a local build), and a missing path
gets the site's ``404.html`` with status 404, as GitHub Pages and Read the Docs do. The browser is Debian's
``chromium`` with ``chromedriver`` (``.ci/run`` installs both); nothing here downloads a browser. Set
``CHROMIUM`` / ``CHROMEDRIVER`` to use other binaries, and ``SCREENSHOT_DIR`` to choose where the screenshots go
(default: ``artifacts/screenshots``).
"""

from __future__ import annotations

import json
import re
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from ._util import (
    GALLERY_PAGES,
    GALLERY_SCRIPTS,
    LIGHTNING,
    ROOT,
    SCREENSHOT_DIR,
    WAIT,
    WRITTEN_PAGES,
    broken_images,
    click,
    fetch,
    open_page,
    search_results,
    unloaded_stylesheets,
    visible_code,
    wait,
)


@pytest.mark.parametrize("docname", [*WRITTEN_PAGES, *GALLERY_PAGES])
def test_page_loads_without_console_errors_or_broken_images(browser, base_url, docname):
    errors = open_page(browser, f"{base_url}{docname}.html")
    assert errors == [], f"{docname}: console errors {errors}"
    assert broken_images(browser) == []
    assert unloaded_stylesheets(browser) == []
    assert browser.find_element(By.CSS_SELECTOR, "article h1").text.strip()


@pytest.mark.parametrize("docname", GALLERY_PAGES)
def test_gallery_page_names_the_lightning_that_produced_it_and_what_to_install(browser, base_url, docname):
    open_page(browser, f"{base_url}{docname}.html")
    note = browser.find_element(By.CSS_SELECTOR, "p.lightning-version").text
    assert f"what Lightning {LIGHTNING} printed" in note
    install = browser.find_element(By.XPATH, "//p[contains(@class, 'example-install')]/following-sibling::div[1]//pre")
    assert install.is_displayed()
    assert install.text.startswith("$ pip install ") and f"lightning=={LIGHTNING}" in install.text.split()


def test_reference_row_anchor_targets_its_row(browser, base_url):
    from lightning_migrate import registry

    pattern = registry.PATTERNS[-1]  # the last row: reaching it needs the anchor, not the top of the page
    open_page(browser, f"{base_url}reference/hooks.html#{pattern.id}")
    row = browser.execute_script("return document.querySelector(':target').closest('tr')")
    assert pattern.old_signature in row.text
    in_view = "const r = arguments[0].getBoundingClientRect(); return 0 <= r.top && r.top < window.innerHeight"
    wait(browser).until(lambda d: d.execute_script(in_view, row))  # scrolling may be smooth


def test_new_tab_shows_the_replacement_and_syncs_across_the_page(browser, base_url):
    assert open_page(browser, f"{base_url}index.html") == []
    browser.execute_script("localStorage.clear(); sessionStorage.clear()")
    browser.refresh()
    tab_sets = browser.find_elements(By.CSS_SELECTOR, "article .sd-tab-set")
    assert len(tab_sets) >= 2
    # before any click: the new code, the module's replacement for a module, the callback's for a callback
    assert "class LossCachingModel(" in visible_code(tab_sets[0])
    assert "class EpochLossCallback(pl.Callback):" in visible_code(tab_sets[1])
    for tab_set in tab_sets:
        assert not re.search(r"(?<!\w)outputs\)", visible_code(tab_set))  # no old signature (a cache name may end so)

    first = tab_sets[0]
    click(browser, first.find_element(By.CSS_SELECTOR, 'label[data-sync-id="callback"]'))
    source = (ROOT / "gallery/core/callback_side_caching.py").read_text(encoding="utf-8")
    for tab_set in tab_sets:  # the choice is now the callback-side replacement in every tab set
        code = visible_code(tab_set)
        assert "class EpochLossCallback(pl.Callback):" in code
        assert "def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):" in code
        assert "outputs)" not in code.replace("outputs, batch, batch_idx)", "")  # no old `outputs` signature
        for line in code.splitlines():  # the tab shows the example's own code, line for line
            assert line in source, line

    click(browser, tab_sets[1].find_element(By.CSS_SELECTOR, 'label[data-sync-id="module"]'))
    assert "class LossCachingModel(BoringModel):" in visible_code(tab_sets[0])
    assert "class CacheReader(pl.Callback):" in visible_code(tab_sets[1])


def copy_with_button(browser, block) -> str:
    """Click the copy button of the code ``block`` (a ``div.highlight``); return what it put on the clipboard."""
    ActionChains(browser).move_to_element(block).perform()  # the button shows on hover
    click(browser, block.find_element(By.CSS_SELECTOR, "button.copybtn"))
    return browser.execute_async_script(
        "const done = arguments[0]; navigator.clipboard.readText().then(done).catch(e => done('ERROR ' + e))"
    )


@pytest.fixture
def landing_page_with_clipboard(browser, base_url):
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(base_url))
    browser.execute_cdp_cmd("Browser.grantPermissions", {"origin": origin, "permissions": ["clipboardReadWrite"]})
    assert open_page(browser, f"{base_url}index.html") == []
    browser.execute_script("localStorage.clear(); sessionStorage.clear()")  # no tab choice from other tests
    browser.refresh()
    return browser


def test_copy_button_copies_the_code_of_the_visible_tab(landing_page_with_clipboard):
    browser = landing_page_with_clipboard
    tab_code = browser.find_elements(By.CSS_SELECTOR, "article .sd-tab-set div.highlight")
    block = next(b for b in tab_code if b.is_displayed())
    copied = copy_with_button(browser, block)
    assert copied.startswith("class LossCachingModel(")  # the tab open at first: the module's new code
    assert copied.strip() == block.find_element(By.CSS_SELECTOR, "pre").text.strip()


def test_copy_button_leaves_the_shell_prompts_out(landing_page_with_clipboard):
    browser = landing_page_with_clipboard
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    command = f"pip install git+{project['urls']['Repository']}@v{project['version']}"
    blocks = browser.find_elements(By.CSS_SELECTOR, "article div.highlight-console")
    block = next(b for b in blocks if command in b.find_element(By.CSS_SELECTOR, "pre").text)
    assert block.find_element(By.CSS_SELECTOR, "pre").text == f"$ {command}"
    copied = copy_with_button(browser, block)
    assert copied.strip().splitlines() == [command]


def test_search_for_training_epoch_end_finds_the_reference_and_the_examples(browser, base_url):
    found = search_results(browser, base_url, "training_epoch_end")
    assert "reference/hooks.html" in found
    assert "examples/core/old_outputs_hooks.html" in found
    assert "examples/core/module_side_caching.html" in found


@pytest.mark.parametrize("script", GALLERY_SCRIPTS, ids=str)
def test_download_links_return_the_script_and_the_notebook(browser, base_url, script):
    open_page(browser, f"{base_url}examples/{script.with_suffix('').as_posix()}.html")
    links = {
        Path(urlsplit(a.get_attribute("href")).path).suffix: a.get_attribute("href")
        for a in browser.find_elements(By.CSS_SELECTOR, ".sphx-glr-download a.download")
    }
    assert {".py", ".ipynb"} <= set(links)
    for link in links.values():
        assert fetch(browser, link)["status"] == 200, link
    python = fetch(browser, links[".py"])
    assert python["status"] == 200
    # the script as written, with one cell for the reader after its title (what to install, Lightning's log down)
    source = (ROOT / "gallery" / script).read_text(encoding="utf-8")
    reader_cell = r"\n# %%\n# To install what this example ran on: pip install [^\n]+\n(?:.*\n)+?\n(?=# %%)"
    cell = re.search(reader_cell, python["text"])
    assert cell and python["text"].startswith(source[: source.index('"""', 3) + 3] + "\n"), python["text"][:600]
    title_end = source.index('"""', 3) + 3
    if not source[title_end:].lstrip("\n").startswith("# %%"):  # code right after the title: a cell of its own
        source = f"{source[: title_end + 1]}\n# %%{source[title_end + 1 :]}"
    assert python["text"][: cell.start()] + python["text"][cell.end() - 1 :] == source
    notebook = fetch(browser, links[".ipynb"])
    assert notebook["status"] == 200
    cells = json.loads(notebook["text"])["cells"]
    assert any('print(f"Lightning {lightning.__version__}")' in "".join(c["source"]) for c in cells)


def test_missing_page_gets_the_styled_404_page(browser, base_url):
    missing = f"{base_url}no/such/deep/page.html"
    with pytest.raises(urllib.error.HTTPError) as response:
        urllib.request.urlopen(missing, timeout=WAIT)  # noqa: S310 - our own local server
    assert response.value.code == 404
    errors = open_page(browser, missing)
    assert [e for e in errors if "no/such/deep/page.html" not in e["message"]] == []
    assert "Page not found" in browser.find_element(By.CSS_SELECTOR, "article").text
    assert unloaded_stylesheets(browser) == []
    assert broken_images(browser) == []
    click(browser, browser.find_element(By.LINK_TEXT, "Go to the start page"))
    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "article .sd-tab-set"))
    assert browser.current_url.rstrip("/") == base_url.rstrip("/") or browser.current_url.endswith("index.html")


def background_luminance(browser) -> float:
    rgb = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(v) for v in re.findall(r"\d+", rgb)[:3])
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def test_landing_page_screenshots_light_and_dark(browser, base_url):
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    luminance = {}
    for theme in ("light", "dark"):
        open_page(browser, f"{base_url}index.html")
        browser.execute_script("localStorage.setItem('theme', arguments[0])", theme)
        browser.refresh()
        wait(browser).until(lambda d, t=theme: d.execute_script("return document.body.dataset.theme") == t)
        luminance[theme] = background_luminance(browser)
        path = SCREENSHOT_DIR / f"landing-{theme}.png"
        assert browser.save_screenshot(str(path))
        assert path.read_bytes().startswith(b"\x89PNG")
    assert luminance["dark"] < 60 < 200 < luminance["light"]
