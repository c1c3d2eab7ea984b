"""Sphinx extension: splits search queries so that a pasted error naming the reader's own class finds its fix.

A traceback line names the reader's class before the hook: ``TypeError: LitClassifier.training_epoch_end() missing 1
required positional argument: 'outputs'``. Sphinx's search keeps only the pages that hold every term of a query
(``performTermsSearch`` in its ``searchtools.js``), so a class name that is on no page of this site finds nothing.
This registers, with Sphinx's documented :meth:`~sphinx.application.Sphinx.add_search_language`, the English search
language with its one documented JavaScript hook, ``js_splitter_code``, set to ``docs/_static/search_splitter.js``:
Sphinx's own splitter, after leaving out the name that qualifies a call (``LitClassifier.`` before
``training_epoch_end(``). Indexing is unchanged; only queries are split this way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.search.en import SearchEnglish

#: The query splitter, a ``splitQuery`` function as Sphinx's ``searchtools.js`` expects it.
SPLITTER = Path(__file__).resolve().parents[2] / "_static" / "search_splitter.js"


class SearchEnglishPastedErrors(SearchEnglish):
    """Sphinx's English search language, with :data:`SPLITTER` as the query splitter."""

    js_splitter_code = SPLITTER.read_text(encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_search_language(SearchEnglishPastedErrors)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
