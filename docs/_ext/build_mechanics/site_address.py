"""Sphinx extension: ``html_baseurl`` is the one setting of the site's address; everything else follows from it.

From ``html_baseurl`` (conf.py's default, or ``-D html_baseurl=...`` on the command line, as the hosted builds
pass it) this sets, at ``config-inited``:

* ``notfound_urls_prefix`` (sphinx-notfound-page): the path the 404 page's stylesheets, scripts and links start
  with, since the 404 page is served for a missing path at any depth;
* ``notfound_context``: the 404 page's body, whose two links are absolute for the same reason;
* ``ogp_site_url`` (sphinxext-opengraph): the canonical address in link previews.

The checker's finding links on the rule pages follow it too (``checker_rules``), and so do the links in the
downloaded notebooks. ``html_baseurl`` must be an absolute ``http(s)`` address; a missing trailing slash is added.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError


def site_path(base_url: str) -> str:
    """The path of ``base_url``, starting and ending with ``/`` (``"/"`` for a site at the root of its host).

    Raises:
        ConfigError: ``base_url`` is not an absolute ``http`` or ``https`` address.
    """
    parts = urlsplit(base_url)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise ConfigError(f"html_baseurl must be an absolute http(s) address, got {base_url!r}")
    return parts.path.rstrip("/") + "/"


def not_found_body(prefix: str) -> str:
    """The 404 page's HTML body, its links absolute under the site path ``prefix`` (``/`` or ``/sub/path/``)."""
    return (
        "<h1>Page not found</h1><p>There is no page at this address. "
        f'<a href="{prefix}">Go to the start page</a>, '
        f'or look the hook up in <a href="{prefix}reference/hooks.html">the table of removed and changed hooks</a>.</p>'
    )


def _derive(app: Sphinx, config: Config) -> None:
    if not config.html_baseurl:
        raise ConfigError("html_baseurl is not set: the 404 page, link previews and checker links need it")
    config.html_baseurl = config.html_baseurl.rstrip("/") + "/"
    prefix = site_path(config.html_baseurl)
    config.notfound_urls_prefix = prefix
    config.notfound_context = {"title": "Page not found", "body": not_found_body(prefix)}
    config.ogp_site_url = config.html_baseurl


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("notfound.extension")
    app.setup_extension("sphinxext.opengraph")
    # Before sphinx-notfound-page checks its prefix at config-inited (default priority 500).
    app.connect("config-inited", _derive, priority=100)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
