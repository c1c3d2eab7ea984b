"""Sphinx extension: sphinxext-opengraph's link-preview tags, loaded without matplotlib.

sphinxext-opengraph 0.13 imports its social-card module, and with it ``matplotlib.pyplot``, when it is itself
imported (``sphinxext/opengraph/__init__.py``), whether social cards are enabled or not. This site disables
them (``ogp_social_cards = {"enable": False}`` in ``conf.py``), so that import is about 0.45 s of every Sphinx
start -- a sixth of a no-op rebuild -- spent on nothing. This extension imports sphinxext-opengraph while
``import matplotlib`` fails, which is the case the package handles itself (it then sets
``create_social_card = None``, and prints one line to standard output, which is swallowed here), then sets it up
as usual. The tags it writes are the same.

List ``link_previews`` in ``extensions`` instead of ``sphinxext.opengraph``. With social cards enabled this
extension refuses to load, rather than silently producing none.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import without_matplotlib
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError


def _check_social_cards(app: Sphinx, config: Any) -> None:
    cards = config.ogp_social_cards or {}
    if cards.get("enable", True):
        raise ExtensionError(
            "link_previews loads sphinxext-opengraph without matplotlib, so it cannot draw social cards: "
            "set ogp_social_cards = {'enable': False} in conf.py, or list sphinxext.opengraph in extensions "
            "instead of link_previews"
        )


def setup(app: Sphinx) -> dict[str, Any]:
    with without_matplotlib.unavailable(), contextlib.redirect_stdout(io.StringIO()):
        import sphinxext.opengraph  # noqa: F401 - imported here, without matplotlib; set up just below
    app.setup_extension("sphinxext.opengraph")
    app.connect("config-inited", _check_social_cards)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
