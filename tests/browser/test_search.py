"""A reader pastes their error or warning into the site search: the page that fixes it is the first result, at a
desktop width and at a phone width, in a site built once and in the same site rebuilt with nothing changed.

The texts are every wording Lightning recorded for the old hooks -- the probe records of the site's own release and
of every 2.x release of ``data/compat/matrix.toml`` -- and every ``Name: text`` line an example printed, each with
the class names of the code that ran replaced by a reader's own (:data:`READERS_CLASS`), which is on no page of the
site. The fix page of a recorded text is its registry pattern's ``example``; a module's and a callback's text may be
the same once the class name is the reader's, and then either page fixes it. A printed line that is no recorded
text is fixed on the page that printed it. The cases are derived here, independently of the site's extension.

The search is Sphinx's own, run by Chromium on the built site; the text is pasted into the sidebar's search box
(opened from the navigation drawer on a phone) and submitted, as a reader does.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait
from test_site import script_outputs

from lightning_migrate import compat, registry

from ._util import SCREENSHOT_DIR, WAIT, WIDTHS, click, open_page, set_width

#: The class name a reader's code uses: on no page of the site.
READERS_CLASS = "ReadersOwnNet"
#: A printed error or warning line (an independent copy of the symptom index's rule).
SYMPTOM_LINE = re.compile(r"^\s*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Warning|Exception|Interrupt): .+)$", re.M)


@pytest.fixture(params=WIDTHS, ids=lambda width: f"{width}px")
def width(request, browser):
    """Each test at every width of :data:`WIDTHS`; the window goes back to 1280x900 afterwards."""
    set_width(browser, request.param)
    yield request.param
    browser.set_window_size(1280, 900)


def renamed(text: str, names: set[str]) -> str:
    """``text`` with every whole-word name of ``names`` replaced by :data:`READERS_CLASS`."""
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.]){re.escape(name)}(?!\w)", READERS_CLASS, text)
    return text


def probe_documents(site) -> Iterator[tuple[str, dict]]:
    """``(release, probe document)``: the site's own records, then every recorded 2.x release."""
    document = json.loads((site.outdir / ".doctrees" / "probe-records.json").read_text(encoding="utf-8"))
    yield document["lightning"]["version"], document
    matrix = compat.load_matrix()
    for version, entry in matrix["versions"].items():
        if entry["group"] == "matrix":
            yield version, json.loads(compat.data_path(version).read_text(encoding="utf-8"))["probes"]


def recorded_cases(site) -> dict[str, list[str]]:
    """``{pasted text: [fix docname, ...]}`` for every error and warning text of the probe records."""
    cases: dict[str, list[str]] = {}
    for _, document in probe_documents(site):
        for record in document["records"]:
            pattern = registry.get(record["pattern"])
            texts = [f"{record['error_type']}: {record['error_message']}"] if record.get("error_type") else []
            texts += [f"{w['category']}: {w['message']}" for w in record.get("warnings") or []]
            for text in texts:
                fixes = cases.setdefault(renamed(text, {pattern.probe_class}), [])
                if pattern.example not in fixes:
                    fixes.append(pattern.example)
    return cases


def printed_cases(site, recorded: dict[str, list[str]]) -> dict[str, list[str]]:
    """``{pasted text: [docname]}`` for every line an example printed that is no recorded text."""
    cases: dict[str, list[str]] = {}
    gallery = Path(site.tree, "gallery")
    for script in sorted(gallery.rglob("*.py")):
        docname = "examples/" + script.relative_to(gallery).with_suffix("").as_posix()
        tree = ast.parse(script.read_text(encoding="utf-8"))
        names = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
        for line in SYMPTOM_LINE.findall("\n".join(script_outputs(site.page(docname)))):
            text = renamed(line.strip(), names)
            if text not in recorded:
                cases.setdefault(text, [docname])
    return cases


def all_cases(site) -> dict[str, list[str]]:
    recorded = recorded_cases(site)
    return recorded | printed_cases(site, recorded)


def paste_into_search(browser, base_url: str, text: str) -> list[str]:
    """On the landing page, paste ``text`` into the sidebar's search box (opening the navigation drawer when the
    window is too narrow to show it) and press Enter; return the result paths in order (``examples/x.html``)."""
    open_page(browser, f"{base_url}index.html")
    box = browser.find_element(By.CSS_SELECTOR, "input.sidebar-search")
    if not box.is_displayed():
        click(browser, browser.find_element(By.CSS_SELECTOR, "label.nav-overlay-icon"))
        WebDriverWait(browser, WAIT).until(lambda d: box.is_displayed())
    box.click()
    browser.execute_script("arguments[0].value = arguments[1]", box, text)  # what a paste puts in the box
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
    # A text box drops the line breaks of what is pasted into it (HTML's value sanitization of <input type=text>).
    sent = text.replace("\r", "").replace("\n", "")
    assert parse_qs(urlsplit(browser.current_url).query)["q"] == [sent], "the pasted text did not reach the search"
    links = browser.find_elements(By.CSS_SELECTOR, "#search-results ul.search li a")
    return [urlsplit(link.get_attribute("href")).path.removeprefix(urlsplit(base_url).path) for link in links]


def misses(browser, base_url: str, cases: dict[str, list[str]]) -> list[str]:
    """Each case whose first results are not its fix pages (one fix: the first result; two: the first two)."""
    found_wrong = []
    for text, fixes in cases.items():
        found = paste_into_search(browser, base_url, text)
        first = [path.removesuffix(".html") for path in found[: len(fixes)]]
        if sorted(first) != sorted(fixes):
            found_wrong.append(f"{fixes} not first in {found[:4]} for {text!r}")
    return found_wrong


def test_the_cases_cover_every_recorded_release_and_the_examples(site):
    """The pasted texts include the 2.0 wording (``Lightning-AI/lightning/pull/16520``), today's
    (``Lightning-AI/pytorch-lightning``), and lines only an example printed."""
    recorded = recorded_cases(site)
    urls = {match for text in recorded for match in re.findall(r"github\.com/[\w-]+/[\w-]+/pull/\d+", text)}
    assert "github.com/Lightning-AI/lightning/pull/16520" in urls
    assert "github.com/Lightning-AI/pytorch-lightning/pull/16520" in urls
    assert all(READERS_CLASS in text for text in recorded if "LitModel" in text or "MyCallback" in text)
    assert len(recorded) >= 15 and len(printed_cases(site, recorded)) >= 8


def test_every_pasted_error_finds_its_fix_first(site, browser, base_url, width):
    cases = all_cases(site)
    wrong = misses(browser, base_url, cases)
    assert wrong == [], f"{len(wrong)} of {len(cases)} pasted texts at {width}px:\n" + "\n".join(wrong)


@pytest.fixture(scope="session")
def rebuilt_base_url(rebuilt_site, serve):
    """The no-op rebuilt site, served as :func:`base_url` serves the clean one."""
    return serve(rebuilt_site)


def test_every_pasted_error_finds_its_fix_first_after_a_rebuild(site, rebuilt_site, browser, rebuilt_base_url, width):
    """The rebuild writes the same search index (its index entries included, sphinx-doc/sphinx#12599) and the same
    splitter data, and the search finds the same fixes."""
    assert (rebuilt_site.outdir / "searchindex.js").read_bytes() == (site.outdir / "searchindex.js").read_bytes()
    language_data = Path("_static", "language_data.js")
    assert (rebuilt_site.outdir / language_data).read_bytes() == (site.outdir / language_data).read_bytes()
    cases = all_cases(site)
    wrong = misses(browser, rebuilt_base_url, cases)
    assert wrong == [], f"{len(wrong)} of {len(cases)} pasted texts at {width}px:\n" + "\n".join(wrong)


#: Ways readers paste an error, beyond the text alone: ``(query, fix docname)``.
PASTED_AROUND = [
    # the end of a traceback
    (
        'Traceback (most recent call last):\n  File "train.py", line 12, in <module>\n    trainer.fit(model)\n'
        "NotImplementedError: Support for `validation_epoch_end` has been removed in v2.0.0. `LitSegmenter` "
        "implements this method. You can use the `on_validation_epoch_end` hook instead. To access outputs, save "
        "them in-memory as instance attributes. You can find migration examples in "
        "https://github.com/Lightning-AI/lightning/pull/16520.",
        "examples/stages/validation_epoch_end",
    ),
    # a class defined inside a function: Python's qualified name
    (
        "TypeError: build.<locals>.PlainCallback.on_predict_epoch_end() missing 1 required positional argument: "
        "'outputs'",
        "examples/stages/predict_epoch_end",
    ),
    # the first sentences only
    (
        "Support for `test_epoch_end` has been removed in v2.0.0. `Mine` implements this method.",
        "examples/stages/test_epoch_end",
    ),
]


@pytest.mark.parametrize(("query", "docname"), PASTED_AROUND, ids=["traceback", "nested-class", "first-sentences"])
def test_an_error_pasted_with_its_surroundings_or_in_part_finds_its_fix_first(site, browser, base_url, query, docname):
    found = paste_into_search(browser, base_url, query)
    assert found[:1] == [f"{docname}.html"], found[:4]


def test_a_word_alone_is_searched_as_sphinx_searches_it(site, browser, base_url):
    """A query that names no recorded symptom (here one word of many) is Sphinx's own search: every page that has
    the word, the fix pages not forced first."""
    found = paste_into_search(browser, base_url, "dataloader_idx")
    assert len(found) >= 5
    scores = browser.execute_script(
        "return Array.from(document.querySelectorAll('#search-results ul.search li a')).map(a => +a.dataset.score)"
    )
    assert max(scores) < 1000


def test_landing_page_quotes_recorded_errors_beside_their_signature(site, browser, base_url, width):
    open_page(browser, f"{base_url}index.html")
    browser.execute_script("localStorage.clear()")  # no highlighted terms left over from an earlier search
    open_page(browser, f"{base_url}index.html")
    listing = browser.find_element(By.CSS_SELECTOR, "article ul.symptom-quotes")
    section = listing.find_element(By.XPATH, "ancestor::section[1]")
    browser.execute_script("arguments[0].scrollIntoView({block: 'start', behavior: 'instant'})", section)
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT_DIR / f"landing-error-quotes-{width}px.png"))
    document = json.loads((site.outdir / ".doctrees" / "probe-records.json").read_text(encoding="utf-8"))
    texts = {f"{r['error_type']}: {r['error_message']}": r["pattern"] for r in document["records"] if r["error_type"]}
    items = listing.find_elements(By.CSS_SELECTOR, ":scope > li")
    assert len(items) >= 5
    heading = browser.find_element(By.XPATH, "//article//h2[contains(., 'The 30-second answer')]")
    for item in items:
        assert item.is_displayed()
        signature = item.find_element(By.CSS_SELECTOR, "code").text
        quote = item.find_element(By.CSS_SELECTOR, "pre").text.strip()
        [pattern] = [p for p in registry.PATTERNS if p.old_signature == signature]
        [full] = [text for text in texts if text.startswith(quote.removesuffix(" ..."))]
        assert registry.get(texts[full]).example == pattern.example
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
