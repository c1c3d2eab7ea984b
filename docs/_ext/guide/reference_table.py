"""Sphinx extension: the ``old-hooks-table`` directive, one table row per old hook shape.

The rows come from :data:`lightning_migrate.registry.PATTERNS` (what the old code looked like, the versions that
deprecated and removed it, the replacement, the executed example) joined with the probe record of the same
pattern from this build (:mod:`probe_records`): the "What Lightning does today" column is derived from what the
installed Lightning actually did when the probe ran it, and shows the captured message. Nothing in that column
is typed by hand.

Usage (in a reST page)::

    .. old-hooks-table::

Each row has the pattern id as its HTML anchor (``reference/hooks.html#<id>``) and as a label
``old-hook-<id>`` for ``:ref:`` from other pages. Every row links its pattern's example page: ``probe_records``
stops the build, naming the pattern and the registry, when one is not a document of the site.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

from guide import probe_records
from lightning_migrate import registry
from migration_guide import probes

REGISTRY_FILE = Path(registry.__file__).resolve()
COLUMNS = (("Old hook or argument", 28), ("Deprecated / removed", 12), ("What Lightning does today", 30))
COLUMNS += (("Replacement", 30),)
#: How a loop or epoch end named in ``failed_during`` reads in a sentence.
PHASES = {
    "setup": "before the first batch",
    "sanity_check": "during the sanity check",
    "sanity_check_epoch_end": "at the end of the sanity check",
    "train": "during training",
    "train_epoch_end": "at the end of the first training epoch",
    "validation": "during validation",
    "validation_epoch_end": "at the end of a validation epoch",
    "test": "during testing",
    "test_epoch_end": "at the end of the test epoch",
    "predict": "during prediction",
    "predict_epoch_end": "at the end of the predict epoch",
}
#: The ``batches`` counters of a record, as nouns.
LOOP_NOUNS = {
    "train": "training batch",
    "sanity_check": "sanity-check batch",
    "validation": "validation batch",
    "test": "test batch",
    "predict": "predict batch",
}


class behaviour_placeholder(nodes.General, nodes.Element):  # noqa: N801 - docutils node naming
    """Stands for the "What Lightning does today" cell of one pattern until the probe records are at hand."""


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}es" if noun.endswith("ch") else f"{count} {noun}s"


def _batches_text(batches: dict[str, int]) -> str:
    """``{"train": 4, "validation": 2}`` -> ``"4 training batches, 2 validation batches"`` (non-zero loops only)."""
    parts = [_plural(count, LOOP_NOUNS.get(loop, f"{loop} batch")) for loop, count in batches.items() if count]
    return ", ".join(parts) if parts else "no batch"


def describe(record: dict[str, Any], stage: str) -> str:
    """One sentence saying what Lightning did with a pattern, derived from its probe ``record`` only.

    ``stage`` is the pattern's stage (``train``, ``validation``, ``test``, ``predict``): an ignored hook is
    reported against the batches of that loop. Examples of the output:
    ``"NotImplementedError before the first batch: nothing ran"``,
    ``"TypeError at the end of the first training epoch, after 4 training steps (a whole epoch)"``,
    ``"Silently ignored: never called, though 4 validation batches ran"``.

    Raises:
        ValueError: the record's ``outcome`` is not one :func:`migration_guide.probes.probe` produces.
    """
    outcome = record["outcome"]
    batches = record.get("batches") or {}
    if outcome == "error":
        failed_during = record["failed_during"]
        text = f"{record['error_type']} {PHASES.get(failed_during, f'during {failed_during}')}"
        if failed_during == "setup":
            return f"{text}: nothing ran"
        steps = record["training_steps"]
        if steps:
            text += f", after {_plural(steps, 'training step')}"
            if failed_during == "train_epoch_end" and steps == probes.TRAIN_BATCHES:
                text += " (a whole epoch)"
            return text
        done = {loop: count for loop, count in batches.items() if count and loop != "sanity_check"}
        return f"{text}, after {_batches_text(done)}" if done else text
    if outcome == "ignored":
        ran = batches.get(stage, 0)
        return f"Silently ignored: never called, though {_plural(ran, LOOP_NOUNS.get(stage, f'{stage} batch'))} ran"
    if outcome == "called":
        return f"Still called ({record['hook_calls']} times), with no warning"
    if outcome == "called_with_warning":
        return f"Called ({record['hook_calls']} times), with a deprecation warning"
    raise ValueError(f"probe record {record.get('pattern')!r}: unknown outcome {outcome!r}")


def _badge(text: str, color: str) -> nodes.inline:
    """A sphinx-design badge (the node its ``bdg-*`` roles make)."""
    return nodes.inline(text, text, classes=["sd-sphinx-override", "sd-badge", f"sd-bg-{color}", f"sd-bg-text-{color}"])


class OldHooksTable(SphinxDirective):
    """``.. old-hooks-table::``: the reference table of every pattern in the registry, in registry order."""

    has_content = False
    required_arguments = 0
    optional_arguments = 0

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(REGISTRY_FILE))
        records_path = getattr(self.env, "probe_records_path", None)
        if records_path is None:
            raise ExtensionError("old-hooks-table needs the probe_records extension (conf.py: extensions)")
        self.env.note_dependency(records_path)  # re-read this page whenever the probes produce new records

        table = nodes.table(classes=["old-hooks-table", "stack-on-phone"])  # build_mechanics/phone_tables.py
        group = nodes.tgroup(cols=len(COLUMNS))
        table += group
        for _, width in COLUMNS:
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        head += self._row([nodes.paragraph(text=title) for title, _ in COLUMNS])
        group += head
        body = nodes.tbody()
        group += body
        for pattern in registry.PATTERNS:
            body += self._pattern_row(pattern)
        return [table]

    def _row(self, cells: list[nodes.Node | list[nodes.Node]]) -> nodes.row:
        row = nodes.row()
        for content in cells:
            entry = nodes.entry()
            entry += content
            row += entry
        return row

    def _pattern_row(self, pattern: registry.OldPattern) -> nodes.row:
        example = pattern.example  # probe_records checked that it is a document of this site
        # The old shape: an anchor + label, the owner and the signature.
        target = nodes.target("", "", ids=[pattern.id], names=[f"old-hook-{pattern.id}"])
        self.state.document.note_explicit_target(target)
        old = nodes.paragraph()
        old += target
        old += nodes.strong(text=pattern.owner)
        old += nodes.Text(f" ({pattern.stage}) ")
        old += nodes.reference("", "#", refuri=f"#{pattern.id}", classes=["old-hook-anchor"])
        signature = nodes.paragraph()
        signature += nodes.literal(text=pattern.old_signature)

        versions = nodes.paragraph()
        if pattern.deprecated_in:
            versions += _badge(f"deprecated {pattern.deprecated_in}", "warning")
            versions += nodes.Text(" ")
        versions += _badge(f"removed {pattern.removed_in}", "danger")

        replacement: list[nodes.Node] = []
        if pattern.new_signature:
            new = nodes.paragraph()
            new += nodes.literal(text=pattern.new_signature)
            replacement.append(new)
        text_nodes, messages = self.state.inline_text(pattern.replacement, self.lineno)
        sentence = nodes.paragraph()
        sentence += text_nodes
        replacement.append(sentence)
        replacement.extend(messages)
        link = nodes.paragraph()
        xref = addnodes.pending_xref(
            "", refdomain="std", reftype="doc", reftarget=f"/{example}", refexplicit=True, refwarn=True
        )
        xref += nodes.inline(text="Executed example", classes=["xref", "std", "std-doc"])
        link += xref
        replacement.append(link)

        behaviour = behaviour_placeholder(pattern_id=pattern.id, stage=pattern.stage)
        row = self._row([[old, signature], [versions], [behaviour], replacement])
        row["classes"].append(f"outcome-{pattern.id}")
        return row


def _fill_behaviour(app: Sphinx, doctree: nodes.document) -> None:
    """Replace every :class:`behaviour_placeholder` with the sentence and message from the probe record."""
    placeholders = list(doctree.findall(behaviour_placeholder))
    if not placeholders:
        return
    document = probe_records.records(app)
    version = document["lightning"]["version"]
    for placeholder in placeholders:
        record = probe_records.record(app, placeholder["pattern_id"])
        cell: list[nodes.Node] = [
            nodes.paragraph(text=describe(record, placeholder["stage"]), classes=[f"outcome-{record['outcome']}"])
        ]
        if record.get("error_message"):
            message = f"{record['error_type']}: {record['error_message']}"
            cell.append(
                nodes.raw(
                    "",
                    '<details class="lightning-message"><summary>'
                    f"What Lightning {html.escape(version)} said</summary>"
                    f"<pre>{html.escape(message, quote=False)}</pre></details>",
                    format="html",
                )
            )
        placeholder.replace_self(cell)


class RecordedOn(SphinxDirective):
    """``.. probe-environment::``: one sentence naming the Lightning and torch the probe records came from."""

    def run(self) -> list[nodes.Node]:
        return [behaviour_placeholder(pattern_id="__environment__")]


def _fill_environment(app: Sphinx, doctree: nodes.document) -> None:
    for placeholder in list(doctree.findall(behaviour_placeholder)):
        if placeholder["pattern_id"] != "__environment__":
            continue
        document = probe_records.records(app)
        text = (
            f"The third column is what {_release(document)} did when each old shape ran on it "
            f"(with torch {document['torch']}, Python {document['python']})."
        )
        placeholder.replace_self(nodes.paragraph(text=text, classes=["probe-environment"]))


class OldHooksSummary(SphinxDirective):
    """``.. old-hooks-summary::``: one paragraph counting what the build's Lightning did with the old shapes."""

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(REGISTRY_FILE))
        records_path = getattr(self.env, "probe_records_path", None)
        if records_path is not None:
            self.env.note_dependency(records_path)
        return [behaviour_placeholder(pattern_id="__summary__")]


def _release(document: dict[str, Any]) -> str:
    """``"Lightning X.Y.Z"`` (or ``"pytorch-lightning X.Y.Z"``) from a probe document."""
    lightning = document["lightning"]
    name = "Lightning" if lightning["distribution"] == "lightning" else lightning["distribution"]
    return f"{name} {lightning['version']}"


def summary(document: dict[str, Any]) -> str:
    """A sentence counting the probe outcomes of ``document`` (the JSON :func:`probe_records.records` returns).

    "Lightning X.Y.Z, the release the examples run on, stops 9 of the 14 old hook shapes with an error
    (4 of them only after at least one training step) and silently never calls the other 5." -- with the counts and
    version of the records, never typed.
    """
    found = document["records"]
    errors = [r for r in found if r["outcome"] == "error"]
    late = [r for r in errors if r["failed_during"] != "setup" and r["training_steps"] > 0]
    ignored = [r for r in found if r["outcome"] == "ignored"]
    called = [r for r in found if r["outcome"] in ("called", "called_with_warning")]
    parts = [
        f"{_release(document)}, the release the examples run on, "
        f"stops {len(errors)} of the {len(found)} old hook shapes with an error"
    ]
    if late:
        parts.append(f" ({len(late)} of them only after at least one training step)")  # what `late` counts
    if ignored:
        parts.append(f", and silently never calls {len(ignored)}")
    if called:
        parts.append(f", and still calls {len(called)}")
    return "".join(parts) + "."


def _fill_summary(app: Sphinx, doctree: nodes.document) -> None:
    for placeholder in list(doctree.findall(behaviour_placeholder)):
        if placeholder["pattern_id"] != "__summary__":
            continue
        paragraph = nodes.paragraph(classes=["old-hooks-summary"])
        paragraph += nodes.Text(summary(probe_records.records(app)) + " ")
        xref = addnodes.pending_xref(
            "", refdomain="std", reftype="doc", reftarget="/reference/hooks", refexplicit=True, refwarn=True
        )
        xref += nodes.inline(text="Which ones, and when", classes=["xref", "std", "std-doc"])
        paragraph += xref
        paragraph += nodes.Text(".")
        placeholder.replace_self(paragraph)


def _on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    _fill_environment(app, doctree)
    _fill_summary(app, doctree)
    _fill_behaviour(app, doctree)


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("guide.probe_records")
    app.add_node(behaviour_placeholder)
    app.add_directive("old-hooks-table", OldHooksTable)
    app.add_directive("probe-environment", RecordedOn)
    app.add_directive("old-hooks-summary", OldHooksSummary)
    app.connect("doctree-read", _on_doctree_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
