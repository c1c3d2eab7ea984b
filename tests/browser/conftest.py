"""Fixtures of the browser tests: the built site served on 127.0.0.1 and one headless Debian Chromium."""

from __future__ import annotations

import http.server
import re
import threading
from functools import partial
from urllib.parse import urlsplit

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from ._util import CHROMEDRIVER, CHROMIUM, SiteHandler


@pytest.fixture(scope="session")
def serve():
    """``serve(build)``: serve a built site on 127.0.0.1 under the path its ``html_baseurl`` names; returns
    ``http://127.0.0.1:<port><prefix>``. Every server stops at the end of the session."""
    servers = []

    def start(build) -> str:
        canonical = re.search(r'<link rel="canonical" href="([^"]+)"', build.page("index"))
        assert canonical, "index.html has no canonical link: html_baseurl is not set"
        prefix = urlsplit(canonical.group(1)).path.removesuffix("index.html")
        assert prefix.startswith("/") and prefix.endswith("/"), prefix
        handler = type("Handler", (SiteHandler,), {"prefix": prefix})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(build.outdir)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}{prefix}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def base_url(site, serve):
    """``http://127.0.0.1:<port><prefix>``: the built site, served under the path its ``html_baseurl`` names."""
    return serve(site)


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """Headless Debian Chromium, with the browser console log kept for the tests to read."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(120)
    yield driver
    driver.quit()
