"""Sphinx extension: the site search finds the fix of a pasted error, whatever the reader's class is called.

Lightning quotes the reader's own class in its errors (``... `MyNet` implements this method``,
``MyNet.on_train_epoch_end() missing 1 required positional argument: 'outputs'``), and Sphinx's search keeps only
the pages that hold every term of a query (``performTermsSearch`` in its ``searchtools.js``): a class name that is
on no page of the site finds nothing, and an index entry matches only a query it contains, class name included.
This uses two of Sphinx's documented search hooks:

* the query splitter: the English search language (:meth:`~sphinx.application.Sphinx.add_search_language`) with
  its one JavaScript hook, ``js_splitter_code``: ``docs/_static/symptom_search.js`` after ``SYMPTOM_SHAPES``, every
  wording of every symptom of :func:`guide.symptom_index.collect` as its words (the class names left open) and its
  fix pages, and ``HOOK_TOPICS`` (:func:`topics`, from the registry alone). A query that holds a whole wording, or a
  run of one (with any names where the class names were) that is at least half of it (Sphinx's own rule for index
  entries) or four words or more through a hook's name (an error's first sentence, its tail), names that symptom and
  is split into the words that matched: the reader's class name and anything pasted around the error are no longer
  required terms. A query that holds no such run but names an old hook of the registry (``training_epoch_end``,
  ``validation epoch end``) or a cache name of :data:`~lightning_migrate.registry.CACHE_IDIOMS`
  (``self.training_step_outputs``) names that hook's fix pages, the patterns whose signatures and replacement share
  most words with the query first. Whatever it names, the words kept are those the search index knows (a class
  name is on no page), of three letters or more, held by the fix pages it names, and together found on a page
  (each word that still finds one with those before it, in query order): a word the pages do not hold never empties
  the list. A query that names nothing is split as Sphinx splits it, with the same words kept (the ``LitClassifier``
  of ``LitClassifier.training_step(`` is on no page);
* the scorer, ``html_search_scorer`` (``docs/_static/search_scorer.js``): a page that fixes the symptom or the hook
  the query matched ranks first, in the order of :attr:`~guide.symptom_index.Symptom.fixes` or of the match.

Sphinx writes both into ``_static/language_data.js``, which only the search page loads, at every build (a no-op
rebuild included). The splitter reads the loaded index (``Search._index``, which Sphinx's ``searchtools.js`` sets in
``Search.setIndex`` before it runs any query; tests/test_search_idioms.py fails when it no longer does) and stops
with an error naming it when the index has no ``terms``. The cache names are indexed on their fix pages by
:mod:`guide.symptom_index` (a ``keywords`` meta entry, which Sphinx's index builder adds to the page's words, and a
main index entry).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.search.en import SearchEnglish

from guide import symptom_index
from lightning_migrate import registry

#: The query splitter: a ``splitQuery`` function as Sphinx's ``searchtools.js`` expects it, reading
#: ``SYMPTOM_SHAPES``.
SPLITTER = Path(__file__).resolve().parents[2] / "_static" / "symptom_search.js"
#: A word as Sphinx's search splits text (``searchtools.js``: letters, numbers and ``_``), lowercased.
WORD = re.compile(r"\w+")


def wording_words(wording: symptom_index.Wording) -> list[str | None]:
    """The lowercased words of a wording as the search splits them, ``None`` for each word that is a class name."""
    names = {name.lower() for name in wording.class_names}
    return [None if word in names else word for word in WORD.findall(wording.text.lower())]


def shapes(symptoms: list[symptom_index.Symptom]) -> list[dict[str, Any]]:
    """``SYMPTOM_SHAPES``: per symptom, ``{"fixes": [docname, ...], "wordings": [[word or None, ...], ...]}``."""
    return [
        {
            "fixes": [docname for _, docname in symptom.fixes],
            "wordings": [wording_words(w) for w in symptom.distinct_wordings()],
        }
        for symptom in symptoms
    ]


def topics() -> list[dict[str, Any]]:
    """``HOOK_TOPICS``: per registry pattern, in registry order, ``{"fixes": [example], "hook": old hook name,
    "idioms": [cache name, ...], "words": [...]}``: ``words`` are the lowercased words of the pattern's owner, old
    and new signatures and replacement, without duplicates (the hook and the idioms included)."""
    found = []
    for pattern in registry.PATTERNS:
        idioms = [idiom.lower() for idiom in registry.idioms(pattern.id)]
        text = " ".join(
            [pattern.owner, pattern.old_signature, pattern.new_signature or "", pattern.replacement, *idioms]
        )
        words = list(dict.fromkeys(WORD.findall(text.lower())))
        found.append({"fixes": [pattern.example], "hook": pattern.hook.lower(), "idioms": idioms, "words": words})
    return found


class SearchEnglishSymptoms(SearchEnglish):
    """Sphinx's English search language, with :data:`SPLITTER`, :attr:`shapes_json` and :attr:`topics_json` as the
    query splitter."""

    #: ``SYMPTOM_SHAPES`` as JSON, set at ``write-started`` (before the HTML builder makes its search language).
    shapes_json = "[]"
    #: ``HOOK_TOPICS`` as JSON (:func:`topics`).
    topics_json = json.dumps(topics(), separators=(",", ":"))

    @property
    def js_splitter_code(self) -> str:  # type: ignore[override]
        return (
            f"const SYMPTOM_SHAPES = {self.shapes_json};\nconst HOOK_TOPICS = {self.topics_json};\n"
            f"{SPLITTER.read_text(encoding='utf-8')}"
        )


def _on_write_started(app: Sphinx, builder: Any) -> None:
    if builder.format != "html":
        return
    probed, printed = symptom_index.cached_collect(app)
    SearchEnglishSymptoms.shapes_json = json.dumps(shapes(probed + printed), separators=(",", ":"))


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("guide.symptom_index")
    app.add_search_language(SearchEnglishSymptoms)
    app.connect("write-started", _on_write_started)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
