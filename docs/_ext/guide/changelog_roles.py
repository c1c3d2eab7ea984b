"""Sphinx extension: roles that print the release that deprecated or removed an old pattern, read from the registry.

Prose never types a release number: ``:deprecated-in:`module-on-train-epoch-end-outputs``` prints that pattern's
:attr:`~lightning_migrate.registry.OldPattern.deprecated_in` (``1.3``), ``:removed-in:`training-epoch-end``` its
:attr:`~lightning_migrate.registry.OldPattern.removed_in` (``2.0``) -- the changelog facts of
``src/lightning_migrate/registry.py``, their one place. An id the registry does not know, or a pattern removed
without a deprecation, is an error naming the page and line. Every page using a role is re-read when the registry
changes.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxRole

from lightning_migrate import registry


class ReleaseRole(SphinxRole):
    """``:deprecated-in:`PATTERN_ID``` / ``:removed-in:`PATTERN_ID```: the release, as plain text."""

    def __init__(self, field: str) -> None:
        super().__init__()
        self.field = field

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        self.env.note_dependency(registry.__file__)
        try:
            release = getattr(registry.get(self.text.strip()), self.field)
        except KeyError as error:
            return [], [self.inliner.reporter.error(f":{self.name}: {error.args[0]}", line=self.lineno)]
        if release is None:
            message = f":{self.name}: {self.text!r} has no {self.field} in the registry (removed without deprecation)"
            return [], [self.inliner.reporter.error(message, line=self.lineno)]
        return [nodes.Text(release)], []


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_role("deprecated-in", ReleaseRole("deprecated_in"))
    app.add_role("removed-in", ReleaseRole("removed_in"))
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
