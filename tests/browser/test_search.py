"""A reader pastes an error or warning text into the site search: the page that fixes it is in the first three
results, at a desktop width and at a phone width.

The texts are the build's own: every error and warning the probes recorded (the fix page is the registry
pattern's ``example``) and every ``Name: text`` line an example printed (the fix page is that example), as the
symptom index lists them. The search is Sphinx's own, run by Chromium on the built ``searchindex.js``; nothing of
it is re-implemented here. The landing page quotes the common errors beside their old signatures.
"""

from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qs, quote_plus, urlsplit

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from lightning_migrate import registry

from ._util import SCREENSHOT_DIR, WAIT, WIDTHS, click, open_page, search_results, set_width

#: What Sphinx's search page says once it has listed every result.
FINISHED = ("Search finished", "did not match")
#: The best rank the fix page of a pasted text may have, counting from 1.
TOP = 3


@pytest.fixture(params=WIDTHS, ids=lambda width: f"{width}px")
def width(request, browser):
    """Each test at every width of :data:`WIDTHS`; the window goes back to 1280x900 afterwards."""
    set_width(browser, request.param)
    yield request.param
    browser.set_window_size(1280, 900)


def record_cases(site) -> list[tuple[str, str]]:
    """``(text, fix docname)`` for every error and warning text of the build's probe records."""
    document = json.loads((site.outdir / ".doctrees" / "probe-records.json").read_text(encoding="utf-8"))
    cases = []
    for record in document["records"]:
        example = registry.get(record["pattern"]).example
        if record.get("error_type"):
            cases.append((f"{record['error_type']}: {record['error_message']}", example))
        cases.extend((f"{w['category']}: {w['message']}", example) for w in record.get("warnings") or [])
    return cases


def printed_cases(site) -> list[tuple[str, str]]:
    """``(text, docname)`` for every line the symptom index lists under "What the examples print"."""
    page = site.page("reference/symptoms")
    section = page[page.index('id="symptoms-examples"') :]
    [listing] = re.findall(r'<ul class="symptom-index">(.*?)</ul>', section, flags=re.S)[:1]
    cases = []
    for item in re.findall(r"<li>(.*?)</li>", listing, flags=re.S):
        [text] = re.findall(r"<pre>(.*?)</pre>", item, flags=re.S)
        [href] = re.findall(r'Fix: <a class="reference internal" href="\.\./([^"#]+)\.html"', item)
        cases.append((html.unescape(re.sub(r"<[^>]+>", "", text)).strip(), href))
    return cases


def rank(found: list[str], docname: str) -> int | None:
    """1-based position of ``docname``'s page among the result paths, ``None`` if absent."""
    return found.index(f"{docname}.html") + 1 if f"{docname}.html" in found else None


def test_every_symptom_text_ranks_its_fix_page_in_the_top_three(site, browser, base_url, width):
    cases = record_cases(site) + printed_cases(site)
    assert len(record_cases(site)) >= 10 and len(printed_cases(site)) >= 10
    misses = []
    for text, docname in cases:
        found = search_results(browser, base_url, quote_plus(text))
        position = rank(found, docname)
        if position is None or position > TOP:
            misses.append(f"{docname} at {position} of {found[:5]} for {text!r}")
    assert misses == [], f"{len(misses)} of {len(cases)} texts at {width}px:\n" + "\n".join(misses)


#: A call qualified by a class name in a recorded text: ``MyCallback.on_train_epoch_end(``.
QUALIFIED_CALL = re.compile(r"\b[A-Za-z_]\w*\.(?=[A-Za-z_]\w*\()")


def test_a_pasted_error_naming_the_readers_own_class_ranks_its_fix_page_in_the_top_three(
    site, browser, base_url, width
):
    """Readers paste their traceback, whose class name is theirs, on no page of the site
    (docs/_ext/build_mechanics/search_splitter.py).

    Without its class name, a module's and a callback's ``on_train_epoch_end() missing ... 'outputs'`` are the same
    text: either pattern's fix page answers it.
    """
    fixes: dict[str, set[str]] = {}
    for text, docname in record_cases(site):
        if QUALIFIED_CALL.search(text):
            fixes.setdefault(QUALIFIED_CALL.sub("ReadersOwnClassifier.", text), set()).add(docname)
    assert len(fixes) >= 10
    misses = []
    for text, docnames in fixes.items():
        found = search_results(browser, base_url, quote_plus(text))
        positions = [rank(found, docname) for docname in docnames]
        if not any(position is not None and position <= TOP for position in positions):
            misses.append(f"{sorted(docnames)} at {positions} of {found[:5]} for {text!r}")
    assert misses == [], f"{len(misses)} of {len(fixes)} texts at {width}px:\n" + "\n".join(misses)


def type_into_search(browser, base_url: str, text: str) -> list[str]:
    """On the landing page, type ``text`` into the sidebar's search box (opening the navigation drawer when the
    window is too narrow to show it) and press Enter; return the result paths, as ``search_results`` does."""
    open_page(browser, f"{base_url}index.html")
    box = browser.find_element(By.CSS_SELECTOR, "input.sidebar-search")
    if not box.is_displayed():
        click(browser, browser.find_element(By.CSS_SELECTOR, "label.nav-overlay-icon"))
        WebDriverWait(browser, WAIT).until(lambda d: box.is_displayed())
    box.click()
    box.send_keys(text)
    box.send_keys(Keys.ENTER)
    WebDriverWait(browser, WAIT).until(
        lambda d: (
            urlsplit(d.current_url).path.endswith("/search.html")
            and any(
                phrase in d.find_element(By.ID, "search-results").text
                for phrase in ("Search finished", "did not match")
            )
        )
    )
    assert parse_qs(urlsplit(browser.current_url).query)["q"] == [text], "the typed text did not reach the search"
    links = browser.find_elements(By.CSS_SELECTOR, "#search-results ul.search li a")
    return [urlsplit(link.get_attribute("href")).path.removeprefix(urlsplit(base_url).path) for link in links]


def test_typed_probe_texts_rank_their_fix_page_in_the_top_three(site, browser, base_url, width):
    cases = record_cases(site)
    assert len(cases) >= 10
    misses = []
    for text, docname in cases:
        found = type_into_search(browser, base_url, text)
        position = rank(found, docname)
        if position is None or position > TOP:
            misses.append(f"{docname} at {position} of {found[:5]} for {text!r}")
    assert misses == [], f"{len(misses)} of {len(cases)} typed texts at {width}px:\n" + "\n".join(misses)


def test_landing_page_quotes_recorded_errors_beside_their_signature(site, browser, base_url, width):
    open_page(browser, f"{base_url}index.html")
    browser.execute_script("localStorage.clear()")  # no highlighted terms left over from an earlier search
    open_page(browser, f"{base_url}index.html")
    listing = browser.find_element(By.CSS_SELECTOR, "article ul.symptom-quotes")
    section = listing.find_element(By.XPATH, "ancestor::section[1]")
    browser.execute_script("arguments[0].scrollIntoView({block: 'start', behavior: 'instant'})", section)
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT_DIR / f"landing-error-quotes-{width}px.png"))
    texts = dict((text, docname) for text, docname in record_cases(site))
    items = listing.find_elements(By.CSS_SELECTOR, ":scope > li")
    assert len(items) >= 5
    heading = browser.find_element(By.XPATH, "//article//h2[contains(., 'The 30-second answer')]")
    for item in items:
        assert item.is_displayed()
        signature = item.find_element(By.CSS_SELECTOR, "code").text
        quote = item.find_element(By.CSS_SELECTOR, "pre").text.strip()
        [pattern] = [p for p in registry.PATTERNS if p.old_signature == signature]
        [full] = [text for text, docname in texts.items() if quote.removesuffix(" ...") in text]
        assert full.startswith(quote.removesuffix(" ...")) and texts[full] == pattern.example
        link = item.find_element(By.CSS_SELECTOR, "a.reference.internal")
        assert urlsplit(link.get_attribute("href")).path.endswith(f"/{pattern.example}.html")
        # Quoted near the top: before the first section of answers.
        assert item.location["y"] < heading.location["y"]
        # Nothing wider than the window.
        assert item.rect["x"] + item.rect["width"] <= browser.execute_script("return window.innerWidth")
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")

    first = items[0]
    signature = first.find_element(By.CSS_SELECTOR, "code").text
    click(browser, first.find_element(By.CSS_SELECTOR, "a.reference.internal"))
    WebDriverWait(browser, WAIT).until(lambda d: "index.html" not in d.current_url)
    [pattern] = [p for p in registry.PATTERNS if p.old_signature == signature]
    assert urlsplit(browser.current_url).path.endswith(f"/{pattern.example}.html")
    block = browser.find_element(By.ID, "if-you-saw-this-error")
    assert f"{pattern.owner}.{pattern.old_signature}" in block.get_attribute("textContent")
