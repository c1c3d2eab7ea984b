"""Sphinx extension: hands ``html_baseurl`` to the notebooks' pandoc filter, so their links lead to the hosted site.

sphinx-gallery writes a notebook next to each example and converts the example's rST text blocks to Markdown
with pandoc (its ``pypandoc`` option, set in conf.py with the Lua filter ``notebook_links.lua``). The filter turns
``:doc:`` roles into absolute links under Sphinx's ``html_baseurl``; at ``config-inited`` this extension hands
pandoc that value, as read from the Sphinx config (conf.py or ``-D html_baseurl=...``), as the document metadata
field ``html_baseurl``.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config

from build_mechanics.site_address import site_path


def pandoc_metadata_args(html_baseurl: str) -> list[str]:
    """The pandoc arguments that give the Lua filter the site's address.

    Args:
        html_baseurl: Sphinx's ``html_baseurl``, e.g. ``https://example.org/migrate/``.

    Raises:
        ConfigError: ``html_baseurl`` is not an absolute http(s) address (``site_address.site_path``); a
            downloaded notebook can only link to the site by its full address.
    """
    site_path(html_baseurl)
    return [f"--metadata=html_baseurl:{html_baseurl}"]


def pass_baseurl(app: Sphinx, config: Config) -> None:
    """Add the ``html_baseurl`` metadata to ``sphinx_gallery_conf["pypandoc"]["extra_args"]``.

    Runs after sphinx-gallery has filled its defaults (its handler has priority 10) and ``site_address`` has
    completed ``html_baseurl`` with its trailing slash (priority 100). When ``pypandoc`` is off
    (``False``: not configured, or sphinx-gallery found no pandoc and warned), nothing is changed.
    """
    pypandoc = config.sphinx_gallery_conf.get("pypandoc")
    if not isinstance(pypandoc, dict):
        return
    extra_args = [*pypandoc.get("extra_args", ()), *pandoc_metadata_args(config.html_baseurl)]
    config.sphinx_gallery_conf["pypandoc"] = {**pypandoc, "extra_args": extra_args}


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the ``config-inited`` handler."""
    app.connect("config-inited", pass_baseurl)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
