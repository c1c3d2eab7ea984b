"""Sphinx extension: inline code breaks only between the parts of an identifier, never inside a word.

Sphinx writes every word of an inline literal as ``<span class="pre">word</span>``. A long identifier such as
``Callback.on_train_epoch_end(self, trainer, pl_module, outputs)`` in a narrow table cell or in furo's "On this
page" sidebar can then only overflow, or -- with ``overflow-wrap: anywhere`` -- break anywhere ("se lf"). This
extension puts a ``<wbr>`` (an optional line break, no character) after every ``_``, ``.``, ``/``, ``(`` and ``,``
inside those spans and in the titles of the gallery's cards, in the page body and in its table of contents; ``site.css``
turns ``overflow-wrap: anywhere`` off there. The change is made on the written HTML (Sphinx's ``html-page-context``
event), after the search index has read the document, so the index, the copied text and every builder other than
HTML see the identifier unchanged.
"""

from __future__ import annotations

import re
from typing import Any

from sphinx.application import Sphinx

#: One inline-code word as Sphinx's HTML writer emits it (its text is HTML-escaped: no ``<`` inside).
PRE_SPAN = re.compile(r'(<span class="pre">)([^<]*)(</span>)')
#: A gallery card's title (sphinx-gallery writes it as plain text, its identifiers without markup).
CARD_TITLE = re.compile(r'(<div class="sphx-glr-thumbnail-title">)([^<]*)(</div>)')
#: Where an identifier may break: after ``_``, ``(``, ``,`` or the ``/`` of a file path, and after a ``.`` that a
#: name follows (never inside a number such as ``0.18``).
BREAK_AT = re.compile(r"(?<=[_(,/])(?=.)|(?<=\.)(?=[A-Za-z_])")


def add_word_breaks(fragment: str) -> str:
    """``fragment`` (HTML) with ``<wbr>`` after each ``_ . / ( ,`` inside an inline-code word or a card title."""
    for element in (PRE_SPAN, CARD_TITLE):
        fragment = element.sub(lambda m: m.group(1) + BREAK_AT.sub("<wbr>", m.group(2)) + m.group(3), fragment)
    return fragment


def on_page_context(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree) -> None:
    for key in ("body", "toc"):
        if isinstance(context.get(key), str):
            context[key] = add_word_breaks(context[key])


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", on_page_context)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
