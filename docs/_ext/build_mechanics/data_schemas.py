"""Sphinx extension: a data file's schema on the contributing page, rendered from its one declaration.

The schemas of ``data/scenarios.toml`` and ``data/compat/matrix.toml`` are declared once, in
:mod:`migration_guide.scenario_schema` and :mod:`migration_guide.compat_schema` (the loaders check the files
against them). In a MyST page::

    ```{data-schema} migration_guide.scenario_schema
    ```

renders that module's ``document()`` -- Markdown: every table and key, its type, whether it is required, its default,
what it holds, and every kind of value with what it means -- so the page never repeats the schema by hand. The page is
read again when the module changes (a dependency on its file).
"""

from __future__ import annotations

import importlib

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class DataSchema(SphinxDirective):
    """``data-schema MODULE``: ``MODULE.document()``, parsed as the page's own markup (Markdown in a MyST page)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        try:
            module = importlib.import_module(name)
            text = module.document()
        except (ImportError, AttributeError) as error:
            raise self.error(f"data-schema: {name} declares no schema (a module with document()): {error}") from None
        self.env.note_dependency(module.__file__)
        container = nodes.container(classes=["data-schema"])
        container += self.parse_text_to_nodes(text)
        return [container]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("data-schema", DataSchema)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
