"""Sphinx extension: no "Go to the end to download the full example code" note above an example's title.

sphinx-gallery opens every example page with that note (a ``note`` admonition with the class
``sphx-glr-download-link-note``, linking to the download buttons at the page's end). On a fix page it stands between
the title and the fix, and a search result's snippet, which Sphinx takes from the start of a page's text, showed it
for every example page. Its maintainers hide it with CSS (sphinx-gallery/sphinx-gallery#757); hidden, its text still
reached the snippets. This extension removes the node when a page is read (``doctree-read``: docutils' public node
API, the class sphinx-gallery's template writes), so neither the page nor the search index holds it; the download
buttons at the end stay.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

#: The class sphinx-gallery 0.22 gives the note (``gen_rst.py``'s page template).
NOTE_CLASS = "sphx-glr-download-link-note"


def remove_download_note(app: Sphinx, doctree: nodes.document) -> int:
    """Remove every admonition with :data:`NOTE_CLASS` from ``doctree``; return how many."""
    found = [node for node in doctree.findall(nodes.Admonition) if NOTE_CLASS in node.get("classes", [])]
    for node in found:
        node.parent.remove(node)
    return len(found)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", remove_download_note)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
