"""Helpers shared by the browser tests: serving the built site, loading pages, reading what a reader sees."""

from __future__ import annotations

import contextlib
import http.server
import os
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

from builds import GALLERY_SCRIPTS, GENERATED
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from lightning_migrate.checker import RULES

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
SCREENSHOT_DIR = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "artifacts" / "screenshots"))
LIGHTNING = metadata.version("lightning")
GALLERY_PAGES = [f"examples/{script.with_suffix('').as_posix()}" for script in GALLERY_SCRIPTS]
#: The checker's rule pages: the build writes one per rule of the checker's registry (docs/_ext/guide/checker_rules).
RULE_PAGES = sorted(f"checker/rules/{code}" for code in RULES)
#: Hand-written pages: the reST and MyST sources committed under docs/ (what a build writes there left out), and
#: the rule pages.
WRITTEN_PAGES = sorted(
    [
        path.relative_to(ROOT / "docs").with_suffix("").as_posix()
        for path in [*(ROOT / "docs").rglob("*.rst"), *(ROOT / "docs").rglob("*.md")]
        if not path.relative_to(ROOT / "docs").parts[0].startswith("_")
        and not any(path.is_relative_to(ROOT / generated) for generated in GENERATED)
        and "jupyter_execute" not in path.parts
    ]
    + RULE_PAGES
)
WAIT = 30  # seconds: an upper bound for a page's scripts on a loaded 2-core machine, not a timing check
#: Seconds between two checks of a wait (``WebDriverWait``'s ``poll_frequency``; selenium's default is 0.5 s): a text
#: pasted into the search box and its results took 0.57 s per search with the default, 0.29 s with this.
POLL = 0.05
#: The widths every layout check runs at, in CSS pixels: a desktop window and a phone.
WIDTHS = (1400, 390)


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Serves ``directory`` under ``prefix``; anything missing gets ``404.html`` with status 404."""

    prefix = "/"

    def __init__(self, *args, directory: str, **kwargs):
        super().__init__(*args, directory=directory, **kwargs)

    def translate_path(self, path: str) -> str:
        url_path = unquote(urlsplit(path).path)
        if not url_path.startswith(self.prefix):
            return str(Path(self.directory) / "__outside_the_site__")
        return super().translate_path("/" + url_path[len(self.prefix) :])

    def send_error(self, code, message=None, explain=None):
        not_found = Path(self.directory) / "404.html"
        if code != 404 or not not_found.is_file():
            super().send_error(code, message, explain)
            return
        body = not_found.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format, *args):  # keep pytest's output clean
        pass


def wait(browser, ignoring: tuple[type[Exception], ...] = ()) -> WebDriverWait:
    """A wait of at most :data:`WAIT` seconds that checks its condition every :data:`POLL` seconds, reading again
    when a check raises one of ``ignoring``."""
    return WebDriverWait(browser, WAIT, poll_frequency=POLL, ignored_exceptions=ignoring)


def open_page(browser, url: str) -> list[dict]:
    """Load ``url`` with a fresh console; return the console entries of level SEVERE it produced."""
    browser.get_log("browser")  # drop what earlier pages logged
    browser.get(url)
    wait(browser).until(lambda d: d.execute_script("return document.readyState") == "complete")
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def click(browser, element) -> None:
    """Scroll ``element`` to the middle of the window, then click it as a user would."""
    browser.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", element)
    element.click()


def broken_images(browser) -> list[str]:
    return browser.execute_script(
        "return Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)"
    )


def unloaded_stylesheets(browser) -> list[str]:
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('link[rel=stylesheet]')).filter(l => !l.sheet).map(l => l.href)"
    )


def fetch(browser, url: str) -> dict:
    """``fetch`` ``url`` from inside the page: ``{"status", "type", "text"}``."""
    return browser.execute_async_script(
        """
        const [url, done] = arguments;
        fetch(url).then(async r => done({status: r.status, type: r.headers.get('Content-Type'), text: await r.text()}))
                  .catch(e => done({status: 0, type: null, text: String(e)}));
        """,
        url,
    )


def visible_code(tab_set) -> str:
    return "\n".join(block.text for block in tab_set.find_elements(By.CSS_SELECTOR, "pre") if block.is_displayed())


def results_shown(browser, first: int | None = None) -> bool:
    """Whether the search page shows its results: Sphinx's search adds them one by one, best first (each with a
    summary it fetches from the result's page, unless :func:`without_search_summaries` blocks it), then says "Search
    finished, found N pages ..." (or "did not match"). ``first``: enough once the first ``first`` results are there
    -- the ones a test reads, which the results after them never reorder (with the summaries, about 0.2 s where the
    whole list took up to 1.4 s)."""
    if first is not None and len(browser.find_elements(By.CSS_SELECTOR, "#search-results ul.search li a")) >= first:
        return True
    text = browser.find_element(By.ID, "search-results").text
    return any(phrase in text for phrase in ("Search finished", "did not match"))


def search_results(browser, base_url: str, query: str, first: int | None = None) -> list[str]:
    """The result paths of ``query`` on the search page, in order (``examples/x.html``): all of them, or at least the
    first ``first`` (:func:`results_shown`)."""
    open_page(browser, f"{base_url}search.html?q={query}")
    wait(browser).until(lambda d: results_shown(d, first))
    links = browser.find_elements(By.CSS_SELECTOR, "#search-results ul.search li a")
    return [urlsplit(link.get_attribute("href")).path.removeprefix(urlsplit(base_url).path) for link in links]


@contextlib.contextmanager
def without_search_summaries(browser, base_url: str, site) -> Iterator[None]:
    """While the block runs, the browser fetches no page of ``site`` but the landing page and the search page: the
    search lists its results with no summary under them.

    Sphinx's search places each result in the list in the order of its score, then fetches the result's page to
    write a summary under it (``_displayItem`` in ``searchtools.js``); the summaries never reorder the results, and
    fetching and parsing the results' pages took about half of a search's time. Blocked through the DevTools command
    ``Network.setBlockedURLs`` (sent with selenium's ``execute_cdp_cmd``), one search of the search page took 0.18 s
    where it took 0.29-0.37 s with the summaries (60 searches on this project's 2-core machine)."""
    pages = sorted(path.relative_to(site.outdir).as_posix() for path in site.outdir.rglob("*.html"))
    blocked = [f"{base_url}{page}" for page in pages if page not in {"index.html", "search.html"}]
    assert len(blocked) > 20, f"only {len(blocked)} pages under {site.outdir}"
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": blocked})
    try:
        yield
    finally:
        browser.get("about:blank")  # the last results page is gone: no blocked request of it is logged later
        browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        browser.execute_cdp_cmd("Network.disable", {})


def set_width(browser, width: int, height: int = 900) -> None:
    """Make the page's layout viewport ``width`` x ``height`` CSS pixels, until :func:`reset_width`: Chromium's
    device metrics override (the DevTools command ``Emulation.setDeviceMetricsOverride``, sent with selenium's
    ``execute_cdp_cmd``), in effect when the command returns and across the pages loaded after it. Resizing the
    window instead is applied asynchronously and had to be read until it settled: a width and its reset took 0.17 s
    that way, 0.08 s with the override.

    Raises:
        AssertionError: the viewport is not ``width`` pixels wide after it.
    """
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    inner = browser.execute_script("return [window.innerWidth, window.innerHeight]")
    assert inner == [width, height], (
        f"the window's viewport is {inner[0]} x {inner[1]} CSS pixels, not {width} x {height}"
    )


def reset_width(browser) -> None:
    """End :func:`set_width`: the viewport is the window's again (1280 x 900, as the ``browser`` fixture opens it)."""
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
