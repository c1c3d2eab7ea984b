"""A reader pastes their error or warning into the site search: the page that fixes it is the first result, at a
desktop width and at a phone width, in a site built once; the same site rebuilt with nothing changed serves the same
search index and scripts, byte for byte (:func:`test_a_rebuild_serves_the_same_search`).

The texts are every wording Lightning recorded for the old hooks -- the probe records of the site's own release and
of every 2.x release of ``data/compat/matrix.toml`` -- and every ``Name: text`` line an example printed, each with
the class names of the code that ran replaced by a reader's own (:data:`READERS_CLASS`), which is on no page of the
site. The fix page of a recorded text is its registry pattern's ``example``; a module's and a callback's text may be
the same once the class name is the reader's, and then either page fixes it. A printed line that is no recorded
text is fixed on the page that printed it. The cases are derived here, independently of the site's extension.

Beyond pasted texts, :func:`phrasings` writes what readers type, in categories (:data:`CATEGORIES`): each old hook
alone, beside a class or callback name of their own, as the ``def`` line of their code, with a few casual words,
spelled as words; each error's first sentence only, its tail from the hook on, the hook called on their class; the
names migrated code gives its cache (``self.validation_step_outputs``, ``all_gather`` beside the hook). Every
expected page is a registry pattern's ``example``, chosen by the pattern's hook or cache name
(:data:`~lightning_migrate.registry.CACHE_IDIOMS`), never typed here; each must be among the first three results.

The search is Sphinx's own, run by Chromium on the built site; the text is pasted into the sidebar's search box
(opened from the navigation drawer on a phone) and submitted, as a reader does, or the search page is opened with
the query, as the search box's form submits it.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from test_site import script_outputs

from lightning_migrate import registry
from migration_guide import compat

from ._util import (
    SCREENSHOT_DIR,
    WIDTHS,
    click,
    open_page,
    reset_width,
    results_shown,
    search_results,
    set_width,
    wait,
    without_search_summaries,
)

#: The class name a reader's code uses: on no page of the site.
READERS_CLASS = "ReadersOwnNet"
#: A printed error or warning line (an independent copy of the symptom index's rule).
SYMPTOM_LINE = re.compile(r"^\s*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Warning|Exception|Interrupt): .+)$", re.M)


@pytest.fixture(params=WIDTHS, ids=lambda width: f"{width}px")
def width(request, browser):
    """Each test at every width of :data:`WIDTHS`; the window goes back to 1280x900 afterwards."""
    set_width(browser, request.param)
    yield request.param
    reset_width(browser)


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


def paste_into_search(browser, base_url: str, text: str, first: int | None = None, again: bool = False) -> list[str]:
    """On the landing page, paste ``text`` into the sidebar's search box (opening the navigation drawer when the
    window is too narrow to show it) and press Enter; return the result paths in order (``examples/x.html``): all
    of them, or at least the first ``first`` (:func:`results_shown`). ``again``: paste into the box of the page the
    window shows (the results of an earlier search), as a reader searching again does, with no landing page loaded
    first."""
    if not again:
        open_page(browser, f"{base_url}index.html")
    box = browser.find_element(By.CSS_SELECTOR, "input.sidebar-search")
    if not box.is_displayed():
        click(browser, browser.find_element(By.CSS_SELECTOR, "label.nav-overlay-icon"))
        wait(browser).until(lambda d: box.is_displayed())
    box.click()
    browser.execute_script("arguments[0].value = arguments[1]", box, text)  # what a paste puts in the box
    browser.execute_script("window.pastedHere = true")  # a mark of this page, which the page Enter loads lacks
    box.send_keys(Keys.ENTER)
    # The page Enter loaded has replaced this one (a search page too, when pasting again). Read while the pages
    # change, the window may answer with an error of the page being left (chromedriver: "Node with given id does not
    # belong to the document"): the wait reads again.
    wait(browser, ignoring=(WebDriverException,)).until(
        lambda d: d.execute_script("return window.pastedHere === undefined")
    )
    wait(browser).until(lambda d: urlsplit(d.current_url).path.endswith("/search.html") and results_shown(d, first))
    # A text box drops the line breaks of what is pasted into it (HTML's value sanitization of <input type=text>).
    sent = text.replace("\r", "").replace("\n", "")
    assert parse_qs(urlsplit(browser.current_url).query)["q"] == [sent], "the pasted text did not reach the search"
    links = browser.find_elements(By.CSS_SELECTOR, "#search-results ul.search li a")
    return [urlsplit(link.get_attribute("href")).path.removeprefix(urlsplit(base_url).path) for link in links]


def misses(browser, base_url: str, site, cases: dict[str, list[str]]) -> list[str]:
    """Each case whose first results are not its fix pages (one fix: the first result; two: the first two): the
    first pasted on the landing page, each next one into the search box of the results it left
    (:func:`paste_into_search`), with the results' summaries not fetched (:func:`without_search_summaries`)."""
    found_wrong = []
    with without_search_summaries(browser, base_url, site):
        for number, (text, fixes) in enumerate(cases.items()):
            found = paste_into_search(browser, base_url, text, first=len(fixes), again=number > 0)
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
    """Every case at the desktop width; on a phone, pasted through the navigation drawer, the first case of each set
    of fix pages (16 of 31 on the landed site): the results come from the same scripts and index at every width,
    the phone adds the drawer and the layout."""
    cases = all_cases(site)
    if width != max(WIDTHS):
        firsts = {tuple(sorted(fixes)): text for text, fixes in reversed(cases.items())}
        cases = {text: cases[text] for text in firsts.values()}
    wrong = misses(browser, base_url, site, cases)
    assert wrong == [], f"{len(wrong)} of {len(cases)} pasted texts at {width}px:\n" + "\n".join(wrong)


def search_files(build) -> dict[str, bytes]:
    """What decides the search's results, by path relative to the site: the index and every script (Sphinx's search,
    the splitter in ``language_data.js``, the scorer). The search page itself may differ in a stylesheet's
    cache-busting ``?v=`` (a rebuild adds it to myst-nb's), which changes no result."""
    static = build.outdir / "_static"
    names = ["searchindex.js", *(path.relative_to(build.outdir).as_posix() for path in sorted(static.rglob("*.js")))]
    return {name: (build.outdir / name).read_bytes() for name in names}


def test_a_rebuild_serves_the_same_search(site, rebuilt_site):
    """A rebuild with nothing changed writes the same search index, its index entries included (which Sphinx alone
    drops: sphinx-doc/sphinx#12599), and the same scripts, byte for byte: every search of this file finds on the
    rebuilt site what it finds on the clean one."""
    clean, rebuilt = search_files(site), search_files(rebuilt_site)
    assert {"_static/language_data.js", "_static/search_scorer.js", "_static/searchtools.js"} <= clean.keys()
    assert rebuilt.keys() == clean.keys()
    assert [name for name in clean if rebuilt[name] != clean[name]] == []


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
        # Quoted after the answer: the fix comes first.
        assert item.location["y"] > heading.location["y"]
        # Nothing wider than the window.
        assert item.rect["x"] + item.rect["width"] <= browser.execute_script("return window.innerWidth")
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")

    first = items[0]
    signature = first.find_element(By.CSS_SELECTOR, "code").text
    click(browser, first.find_element(By.CSS_SELECTOR, "a.reference.internal"))
    wait(browser).until(lambda d: "index.html" not in d.current_url)
    [pattern] = [p for p in registry.PATTERNS if p.old_signature == signature]
    assert urlsplit(browser.current_url).path.endswith(f"/{pattern.example}.html")
    block = browser.find_element(By.ID, "if-you-saw-this-error")
    assert f"{pattern.owner}.{pattern.old_signature}" in block.get_attribute("textContent")


# -- What readers type ---------------------------------------------------------------------------------------------

#: Class and callback names of a reader's own code, each on no page of the site (checked against the search index).
READERS_NAMES = ("MyNet", "LitClassifier", "SegmenterModule", "EpochMetricsLogger")
#: The categories of :func:`phrasings`, in the order they are reported.
CATEGORIES = (
    "hook alone",
    "hook and a class name",
    "def line of the old hook",
    "hook and a few words",
    "hook spelled as words",
    "first sentence of the error",
    "error from the hook on",
    "error with the class qualifying the hook",
    "cache name",
    "cache name in code",
    "all_gather beside the hook",
    "outputs beside the hook",
)
#: Casual words around a hook's name (``{hook}`` is replaced).
CASUAL = (
    "how do I replace {hook} in lightning 2",
    "{hook} removed",
    "{hook} not called anymore",
    "{hook} outputs list",
    "migrate {hook} to lightning 2",
)


def hook_patterns() -> dict[str, list[registry.OldPattern]]:
    """``{old hook name: [patterns]}`` in registry order."""
    found: dict[str, list[registry.OldPattern]] = {}
    for pattern in registry.PATTERNS:
        found.setdefault(pattern.hook, []).append(pattern)
    return found


def pages_of(patterns) -> list[str]:
    """The ``example`` pages of ``patterns``, without duplicates."""
    return list(dict.fromkeys(pattern.example for pattern in patterns))


def recorded_errors(site) -> list[tuple[str, registry.OldPattern]]:
    """``(error text, pattern)`` of every distinct error the probes recorded on the site's release and the recorded
    2.x releases, with the pattern's probe class renamed to :data:`READERS_CLASS`."""
    found: dict[str, registry.OldPattern] = {}
    for _, document in probe_documents(site):
        for record in document["records"]:
            if record.get("error_type"):
                pattern = registry.get(record["pattern"])
                text = renamed(f"{record['error_type']}: {record['error_message']}", {pattern.probe_class})
                found.setdefault(text, pattern)
    return list(found.items())


def phrasings(site) -> list[tuple[str, str, list[str]]]:
    """``(category, query, fix pages)``: what readers type (see the top of the file), each fix page expected among
    the first three results. Derived from the registry and the probe records."""
    cases: list[tuple[str, str, list[str]]] = []
    hooks = hook_patterns()
    for position, (hook, patterns) in enumerate(hooks.items()):
        name = READERS_NAMES[position % len(READERS_NAMES)]
        cases.append(("hook alone", hook, pages_of(patterns)))
        cases.append(("hook and a class name", f"{hook} {name}", pages_of(patterns)))
        cases.append(("hook and a few words", CASUAL[position % len(CASUAL)].format(hook=hook), pages_of(patterns)))
        if not hook.startswith("on_"):  # training_epoch_end, validation_step_end: "training epoch end"
            cases.append(("hook spelled as words", hook.replace("_", " "), pages_of(patterns)))
    for pattern in registry.PATTERNS:
        cases.append(("def line of the old hook", f"def {pattern.old_signature}:", [pattern.example]))
    for text, pattern in recorded_errors(site):
        same = pages_of(hooks[pattern.hook]) if pattern.hook in text else [pattern.example]
        first, _, rest = text.partition(". ")
        if rest:  # an error of several sentences: the first alone
            cases.append(("first sentence of the error", f"{first}.", [pattern.example]))
        tail = text[text.index(pattern.hook) :] if pattern.hook in text else None
        if tail and tail != text:
            cases.append(("error from the hook on", tail, same))
        qualified = re.search(rf"{READERS_CLASS}\.{pattern.hook}\(\)[^.:]*", text)
        if qualified:
            name = READERS_NAMES[len(cases) % len(READERS_NAMES)]
            cases.append(("error with the class qualifying the hook", qualified[0].replace(READERS_CLASS, name), same))
    for pattern_id, idioms in registry.CACHE_IDIOMS.items():
        pattern = registry.get(pattern_id)
        for idiom in idioms:
            fixes = pages_of(p for p in registry.PATTERNS if idiom in registry.idioms(p.id))
            cases.append(("cache name", idiom, fixes))
            cases.append(("cache name in code", f"self.{idiom}.clear()", fixes))
            cases.append(("cache name in code", f"self.{idiom}.append(loss)", fixes))
            cases.append(("cache name in code", f"torch.stack(self.{idiom}).mean()", fixes))
        cases.append(("all_gather beside the hook", f"all_gather {pattern.hook}", pages_of(hooks[pattern.hook])))
    for hook, patterns in hooks.items():
        if any("outputs" in pattern.old_signature for pattern in patterns):
            cases.append(("outputs beside the hook", f"outputs {hook}", pages_of(patterns)))
    unique: dict[str, tuple[str, str, list[str]]] = {}
    for category, query, fixes in cases:
        unique.setdefault(query, (category, query, fixes))
    return list(unique.values())


def search_index(site) -> dict:
    """The built ``searchindex.js`` (``Search.setIndex({...})``) as its JSON."""
    text = (site.outdir / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text.removeprefix("Search.setIndex(").removesuffix(")"))


def rank_misses(browser, base_url: str, site, cases) -> tuple[list[str], dict[str, list[int]]]:
    """Search each case on the search page; return the cases whose fix pages are not all among the first three
    results, and per category the worst rank (1-based, 0: not among the first three) of each case."""
    wrong, ranks = [], {}
    with without_search_summaries(browser, base_url, site):
        for category, query, fixes in cases:
            found = search_results(browser, base_url, quote(query), first=3)
            found = [path.removesuffix(".html") for path in found]
            positions = [found.index(page) + 1 if page in found[:3] else 0 for page in fixes]
            worst = 0 if 0 in positions else max(positions)
            ranks.setdefault(category, []).append(worst)
            if worst == 0 or worst > 3:
                wrong.append(f"[{category}] {fixes} not in the first three of {found[:5]} for {query!r}")
    return wrong, ranks


def report(ranks: dict[str, list[int]], width: int, label: str) -> str:
    lines = [f"{label}, {width}px: rank of the fix per category (0: not among the first three)"]
    lines += [f"  {category}: {ranks[category]}" for category in CATEGORIES if category in ranks]
    return "\n".join(lines)


def test_the_phrasings_cover_every_hook_and_category_with_names_on_no_page(site):
    cases = phrasings(site)
    assert len(cases) >= 40
    assert {category for category, _, _ in cases} == set(CATEGORIES)
    hooks = {pattern.hook for pattern in registry.PATTERNS}
    assert hooks <= {query for category, query, _ in cases if category == "hook alone"}
    assert {p.example for p in registry.PATTERNS} <= {page for _, _, fixes in cases for page in fixes}
    terms = [*search_index(site)["terms"], *search_index(site)["titleterms"]]
    for name in (*READERS_NAMES, READERS_CLASS):
        assert not [term for term in terms if name.lower() in term], f"{name} is on a page of the site"


def test_what_readers_type_finds_the_fix_among_the_first_three(site, browser, base_url, width):
    """Every phrasing at the desktop width; on a phone the first phrasing of each category (the results come from
    the same scripts and index at every width: the page's layout is what the phone adds)."""
    cases = phrasings(site)
    if width != max(WIDTHS):
        cases = list({category: (category, query, pages) for category, query, pages in reversed(cases)}.values())
    wrong, ranks = rank_misses(browser, base_url, site, cases)
    print(report(ranks, width, f"clean build, {len(cases)} phrasings"))
    assert wrong == [], f"{len(wrong)} of {len(cases)} phrasings at {width}px:\n" + "\n".join(wrong)


def test_a_cache_name_is_indexed_on_its_fix_page_only(site):
    """``validation_step_outputs`` is a word of the search index on the pages of its patterns (their ``keywords``),
    and an index entry there."""
    index = search_index(site)
    for idiom in dict.fromkeys(i for idioms in registry.CACHE_IDIOMS.values() for i in idioms):
        pages = pages_of(p for p in registry.PATTERNS if idiom in registry.idioms(p.id))
        [term] = [term for term in index["terms"] if term.startswith(idiom[: -len("s")])]
        files = index["terms"][term] if isinstance(index["terms"][term], list) else [index["terms"][term]]
        assert {index["docnames"][file] for file in files} >= set(pages), idiom
        entries = index["indexentries"][idiom]
        assert {index["docnames"][file] for file, _, main in entries if main} == set(pages), idiom


#: Queries whose terms include single letters or short pieces of words: an ``i.e.`` of an error, a ``v2.0.0``.
SHORT_PIECES = (
    "RuntimeError: You provided only a single `val_dataloader`, but have included `dataloader_idx` in "
    f"`{READERS_CLASS}.on_validation_batch_end()`. Either remove the argument or give it a default value i.e. "
    "`dataloader_idx=0`.",
    "training_epoch_end MyNet",
    "Support for `validation_epoch_end` has been removed in v2.0.0. i e",
)


@pytest.mark.parametrize("query", SHORT_PIECES, ids=["runtime-error", "hook-and-class", "letters"])
def test_snippets_never_highlight_a_single_letter_inside_a_word(site, browser, base_url, query):
    search_results(browser, base_url, quote(query))
    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#search-results li p.context span.highlighted"))
    marked = browser.execute_script(
        """return Array.from(document.querySelectorAll('#search-results span.highlighted')).map(span => {
             const before = span.previousSibling ? span.previousSibling.textContent.slice(-1) : '';
             const after = span.nextSibling ? span.nextSibling.textContent.slice(0, 1) : '';
             return [before, span.textContent, after];
           })"""
    )
    assert marked
    inside = [m for m in marked if len(m[1]) == 1 and (re.match(r"\w", m[0] or " ") or re.match(r"\w", m[2] or " "))]
    assert inside == [], inside[:10]
    assert all(len(text) > 1 for _, text, _ in marked), sorted({text for _, text, _ in marked})
