"""Sphinx extension: a table marked ``stack-on-phone`` reads as one block per row on a narrow screen.

A table of several wide columns does not fit a phone: its columns shrink to a word each, or it scrolls sideways
and the reader loses which column they are in. A table with the class ``stack-on-phone`` (``:class:`` of
``list-table``, or ``classes`` of a :class:`docutils.nodes.table`) gets, at ``doctree-read``, the text of its
column's header in front of every body cell but the first, in an inline ``cell-label`` element. ``site.css`` hides
the labels where the table has room; on a narrow screen it shows them, hides the header row, and lays each row out
as a block: the first cell as the row's heading, then ``<label>: <cell>`` for each other cell.

A ``stack-on-phone`` table without exactly one header row fails the build (an :class:`sphinx.errors.ExtensionError`
naming the page and line).
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

CLASS = "stack-on-phone"
LABEL_CLASS = "cell-label"


def label_cells(table: nodes.table) -> int:
    """Put each body cell's column header, as an inline ``cell-label``, at the start of the cell (the first column
    excepted). Returns how many cells got a label.

    Raises:
        ValueError: the table does not have exactly one header row.
    """
    group = next(iter(table.findall(nodes.tgroup)))
    heads = [node for node in group.children if isinstance(node, nodes.thead)]
    if len(heads) != 1 or len(heads[0].children) != 1:
        raise ValueError("a stack-on-phone table needs exactly one header row")
    labels = [entry.astext().strip() for entry in heads[0].children[0].children]
    count = 0
    for body in (node for node in group.children if isinstance(node, nodes.tbody)):
        for row in body.children:
            for label, entry in list(zip(labels, row.children, strict=False))[1:]:
                if not label:
                    continue
                inline = nodes.inline(label, label, classes=[LABEL_CLASS])
                first = entry.children[0] if entry.children else None
                if isinstance(first, nodes.paragraph):
                    first.insert(0, inline)
                else:
                    entry.insert(0, nodes.paragraph("", "", inline))
                count += 1
    return count


def _on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    for table in doctree.findall(nodes.table):
        if CLASS not in table["classes"]:
            continue
        try:
            label_cells(table)
        except ValueError as err:
            raise ExtensionError(f"{table.source or app.env.docname}:{table.line}: {err}") from None


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", _on_doctree_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
