"""Sphinx extension: the search index keeps every page's index entries when a rebuild does not rewrite the page.

Sphinx's HTML search index holds the entries of ``.. index::`` directives (and of :class:`sphinx.addnodes.index`
nodes) as ``indexentries``, which its search scores far above a full-text match. A rebuild loses the entries of
every page it does not rewrite: the builder reloads the previous ``searchindex.js`` for those pages, and
:meth:`sphinx.search.IndexBuilder.load` restores their words and titles but not their index entries (the
environment that would hold them is saved before the pages are written). Reported upstream as
sphinx-doc/sphinx#12599 ("'indexentries' section missing results from search index following non-fresh project
rebuild", open; seen on Sphinx 9.0.4: a second ``nox -s docs`` with nothing changed dropped all 39 entries of this
site). The one-line upstream fix: ``IndexBuilder.load`` restores ``_index_entries`` from ``frozen['indexentries']``.

Until then, this feeds those pages to the search index again, through the builder's public
:meth:`~sphinx.builders.html.StandaloneHTMLBuilder.index_page` with the resolved doctree
(:meth:`~sphinx.environment.BuildEnvironment.get_and_resolve_doctree`), as writing them would: at
``html-collect-pages``, which the HTML builder emits after writing the pages and before it writes the search index.
Only pages that hold an index entry (noted when each page is read) and that this build did not write are fed; a
fresh build feeds none.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx


def _note_index_entries(app: Sphinx, doctree: nodes.document) -> None:
    """At ``doctree-read`` (late, after the extensions that add index nodes): remember a page that holds one."""
    pages = app.env.pages_with_index_entries  # type: ignore[attr-defined]
    if any(node["entries"] for node in doctree.findall(addnodes.index)):
        pages.add(app.env.docname)
    else:
        pages.discard(app.env.docname)


def _init_env(app: Sphinx, env: Any, docnames: list[str]) -> None:
    if not hasattr(env, "pages_with_index_entries"):
        env.pages_with_index_entries = set()


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    getattr(env, "pages_with_index_entries", set()).discard(docname)


def _merge(app: Sphinx, env: Any, docnames: set[str], other: Any) -> None:
    env.pages_with_index_entries |= getattr(other, "pages_with_index_entries", set()) & set(docnames)


def _start_writing(app: Sphinx, builder: Any) -> None:
    app._pages_written = set()  # type: ignore[attr-defined]


def _note_written(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    written = getattr(app, "_pages_written", None)
    if written is not None:
        written.add(docname)


def pages_to_feed(app: Sphinx) -> list[str]:
    """The pages that hold an index entry, still exist, and were not written by this build (sorted)."""
    pages = getattr(app.env, "pages_with_index_entries", set())
    written = getattr(app, "_pages_written", set())
    return sorted(page for page in pages if page in app.env.all_docs and page not in written)


def _feed_unwritten_pages(app: Sphinx) -> list:
    builder = app.builder
    if getattr(builder, "indexer", None) is None:  # not an HTML builder with a search index
        return []
    for docname in pages_to_feed(app):
        doctree = app.env.get_and_resolve_doctree(docname, builder, tags=app.tags)
        title = app.env.longtitles.get(docname)
        builder.index_page(docname, doctree, title.astext() if title else "")
    return []


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("env-before-read-docs", _init_env)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("doctree-read", _note_index_entries, priority=900)
    app.connect("write-started", _start_writing)
    app.connect("doctree-resolved", _note_written)
    app.connect("html-collect-pages", _feed_unwritten_pages)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
