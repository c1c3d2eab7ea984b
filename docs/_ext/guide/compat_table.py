"""Sphinx extension: the compatibility pages, rendered from the data files ``nox -s record`` wrote.

Every cell comes from ``data/compat/<version>.json`` (written by :mod:`migration_guide.compat` with that release
installed) -- for the release this build runs, its probe records come from this build's probes
(:func:`with_this_builds_probes`); nothing about a release's behaviour is typed here. Directives:

``.. compat-table::``
    old pattern x declared release: *works*, *warns (deprecated)*, *raises <type>* or *silently ignored*, each
    cell a link to the executed example that fixes the pattern (its registry ``example``), followed by the
    captured error and warning texts of every pattern, one drop-down per pattern.
``.. compat-received:: <version>``
    for each pattern of the ``:patterns:`` option (registry ids, space-separated): how often the old hook ran on
    ``<version>``, a summary of what it received (entries, keys, values) and the deprecation warnings' text.
``.. compat-equivalence::``
    per-epoch mean losses of the old ``training_epoch_end(outputs)`` and of both replacements on every release,
    and whether they are identical to the old hook on the reference release (compared here, float for float).
``.. compat-examples::``
    replacement example x ``[matrix]`` release: passed or failed (with the error's last line).

A declared release without a data file, or a data file written under another ``matrix.toml``, is a build warning
(an error under ``-W``) naming the file.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

from build_mechanics import current_app, preview
from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from lightning_migrate import registry
from lightning_migrate.records import PROBE_OUTCOMES
from migration_guide import compat

logger = logging.getLogger(__name__)


def outcome_label(record: dict[str, Any]) -> str:
    """The text of one probe record in a list: its outcome's word (:data:`lightning_migrate.records.PROBE_OUTCOMES`:
    ``works``, ``warns (deprecated)``, ``silently ignored``), or for an error the type raised and when."""
    if record["outcome"] == "error":
        steps = record["training_steps"]
        return f"raises ``{record['error_type']}`` (during {record['failed_during']}, after {steps} training steps)"
    return PROBE_OUTCOMES[record["outcome"]]


def _short_label(record: dict[str, Any]) -> str:
    """The text of one compatibility-table cell: the outcome's word, or ``raises`` and the error type."""
    if record["outcome"] == "error":
        return f"{PROBE_OUTCOMES['error']} {record['error_type']}"
    return PROBE_OUTCOMES[record["outcome"]]


def load_all(directive: SphinxDirective, warn: bool = False) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The matrix definition and the data file of every declared release that has one.

    With ``warn``, a build warning names every declared release without a data file and every stale data file.
    """
    matrix = compat.load_matrix()
    directive.env.note_dependency(str(compat.MATRIX_FILE))
    data: dict[str, dict[str, Any]] = {}
    for version in matrix["versions"]:
        path = compat.data_path(version)
        if not path.is_file():
            if warn:
                logger.warning(f"{path}: missing; run `nox -s record`", location=directive.get_location())
            continue
        directive.env.note_dependency(str(path))
        item = json.loads(path.read_text(encoding="utf-8"))
        if warn and item.get("matrix_sha256") != matrix["sha256"]:
            logger.warning(
                f"{path}: written under an older {compat.MATRIX_FILE.name}; run `nox -s record`",
                location=directive.get_location(),
            )
        data[version] = with_this_builds_probes(directive, version, item)
    return matrix, data


def with_this_builds_probes(directive: SphinxDirective, version: str, item: dict[str, Any]) -> dict[str, Any]:
    """The data of ``version`` with, for the release this build runs (the installed Lightning), the probe records
    of this build (:mod:`guide.probe_records`) instead of the committed ones: its column shows what the installed
    release does now, as the examples and the reference table do. Other releases, a build without the probe
    extension, and a preview (:mod:`build_mechanics.preview`: it runs no probe) keep the committed records."""
    if (
        version != metadata.version("lightning")
        or "guide.probe_records" not in current_app.get().extensions
        or preview.active()
    ):
        return item
    from guide import probe_records

    build = probe_records.records(current_app.get())  # notes the records file as a dependency of the page
    return {**item, "probes": {**item["probes"], "records": build["records"]}}


def _records(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {record["pattern"]: record for record in item["probes"]["records"]}


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line.strip() else "" for line in text.splitlines())


def _literal(text: str, spaces: int) -> list[str]:
    """A plain-text code block (no markup is interpreted, nothing highlighted) holding ``text``."""
    return ["", " " * spaces + ".. code-block:: text", "", _indent(text, spaces + 3), ""]


def _version_header(version: str, item: dict[str, Any]) -> str:
    return f"{item['probes']['lightning']['distribution']} {version}"


class CompatTable(SphinxDirective):
    """``.. compat-table::`` -- old pattern x release, then the captured texts.

    Every outcome cell links to the executed example that shows the fix: the pattern's ``example`` field in
    :mod:`lightning_migrate.registry`. The table is marked ``compat-table`` (``site.css``: every release column
    fits at desktop width; on a phone the old-pattern column stays in place while the releases scroll under it).
    """

    def run(self) -> list[nodes.Node]:
        matrix, data = load_all(self, warn=True)
        self.env.note_dependency(registry.__file__)  # re-read when a pattern's fix (its ``example``) changes
        versions = [v for v in matrix["versions"] if v in data]
        built_with = metadata.version("lightning")
        lines = [
            ".. rst-class:: compat-scroll-cue",
            "",
            "Scroll the table sideways for every release; the old pattern stays in place.",
            "",
            ".. list-table::",
            "   :header-rows: 1",
            "   :stub-columns: 1",
            "   :class: compat-table",
            "",
        ]
        lines.append("   * - Old pattern (each outcome links to its fix)")
        for version in versions:
            own = " (the examples' release)" if version == built_with else ""
            lines.append(f"     - {_version_header(version, data[version])}{own}")
        for pattern in registry.PATTERNS:
            lines.append(f"   * - ``{pattern.owner}.{pattern.old_signature}``")
            for version in versions:
                record = _records(data[version]).get(pattern.id)
                if record is None:
                    lines.append("     - not probed")
                    continue
                lines.append(f"     - :doc:`{_short_label(record)} </{pattern.example}>`")
        table = self.parse_text_to_nodes("\n".join(lines))
        lines = [".. rubric:: What Lightning said", ""]
        for pattern in registry.PATTERNS:
            texts = []
            for version in versions:
                record = _records(data[version]).get(pattern.id)
                if record is None:
                    continue
                if record["error_message"] is not None:
                    texts.append((version, record, f"{record['error_type']}: {record['error_message']}"))
                for warning in record["warnings"]:
                    texts.append((version, record, f"{warning['category']}: {warning['message']}"))
            if not texts:
                continue
            lines += [f".. dropdown:: ``{pattern.owner}.{pattern.old_signature}``", ""]
            for version, record, text in texts:
                lines.append(f"   **{_version_header(version, data[version])}**: {outcome_label(record)}")
                lines += _literal(text, 3)
        said = nodes.container(classes=["compat-texts"])  # from the recorded runs: the guard leaves it
        said += self.parse_text_to_nodes("\n".join(lines))
        return [*table, said]


class CompatReceived(SphinxDirective):
    """``.. compat-received:: [<version>]`` -- what the old hooks received on one release, and the warnings.

    Without a version: the newest declared release on which none of the ``:patterns:`` was removed yet
    (:func:`migration_guide.compat.newest_release_before_removal`), so the page types no release number.
    """

    optional_arguments = 1
    option_spec = {"patterns": directives.unchanged_required, "brief": directives.flag}

    def run(self) -> list[nodes.Node]:
        matrix, data = load_all(self)
        self.env.note_dependency(registry.__file__)
        try:
            version = (
                self.arguments[0]
                if self.arguments
                else compat.newest_release_before_removal(self.options["patterns"].split(), matrix)
            )
        except (KeyError, ValueError) as error:
            raise self.error(str(error)) from None
        if version not in data:
            raise self.error(f"no data file for {version}")
        records = _records(data[version])
        if "brief" in self.options:
            brief = nodes.container(classes=["compat-received"])  # from the recorded runs: the guard leaves it
            brief += self.parse_text_to_nodes("\n".join(self._brief(version, data[version], records)))
            return [brief]
        lines: list[str] = []
        for pattern_id in self.options["patterns"].split():
            pattern = registry.get(pattern_id)
            record = records[pattern_id]
            lines += [
                f".. rubric:: ``{pattern.owner}.{pattern.old_signature}`` on {_version_header(version, data[version])}",
                "",
                f"Outcome: **{outcome_label(record)}**; the hook ran {record['hook_calls']} time(s) in "
                f"{data[version]['probes']['lightning']['distribution']} {version}; "
                f"{record['training_steps']} training steps. Its first call received:",
                "",
                ".. code-block:: json",
                "",
                _indent(json.dumps(record["received"], indent=1), 3),
                "",
            ]
            if record["warnings"]:
                lines.append("Lightning warned:")
                for warning in record["warnings"]:
                    lines += _literal(f"{warning['category']}: {warning['message']}", 0)
            else:
                lines += ["Lightning emitted no deprecation warning.", ""]
            if record["error_message"] is not None:
                lines.append("Lightning raised:")
                lines += _literal(f"{record['error_type']}: {record['error_message']}", 0)
        rendered = nodes.container(classes=["from-records"])  # every sentence here says what a record holds
        rendered += self.parse_text_to_nodes("\n".join(lines))
        return [rendered]

    def _brief(self, version: str, data: dict[str, Any], records: dict[str, dict[str, Any]]) -> list[str]:
        """With ``:brief:``: one table row per pattern -- its outcome, calls, training steps, entries received."""
        release = f"{data['probes']['lightning']['distribution']} {version}"
        lines = [".. list-table::", "   :header-rows: 1", "   :class: stack-on-phone", "", "   * - Old hook"]
        lines.append(f"     - On {release}")
        lines += ["     - Calls", "     - Training steps", "     - ``outputs`` at its first call"]
        for pattern_id in self.options["patterns"].split():
            pattern = registry.get(pattern_id)
            record = records[pattern_id]
            received = record["received"]
            lines += [
                f"   * - ``{pattern.owner}.{pattern.old_signature}``",
                f"     - {outcome_label(record)}",
                f"     - {record['hook_calls']}",
                f"     - {record['training_steps']}",
                f"     - {_entries(received)}",
            ]
        return [*lines, ""]


def _entries(received: dict[str, Any] | None) -> str:
    """What a hook's ``outputs`` was, in words: ``"a list of 4 entries"``, ``"an empty list"`` or ``"nothing"``."""
    if not received:
        return "nothing"
    return f"a list of {received['len']} entries" if received["len"] else "an empty list"


class CompatEquivalence(SphinxDirective):
    """``.. compat-equivalence::`` -- per-epoch mean loss of every variant on every release."""

    def run(self) -> list[nodes.Node]:
        matrix, data = load_all(self)
        reference_version = matrix["reference"]
        if reference_version not in data:
            raise self.error(f"no data file for the reference release {reference_version}")
        reference = data[reference_version]["equivalence"]["variants"]["old"]
        names = {"old": "training_epoch_end(outputs)", "callback": "callback-side", "module": "module-side"}
        lines = [".. list-table::", "   :header-rows: 1", "   :class: stack-on-phone", ""]
        epochs = len(reference)
        lines.append("   * - Release")
        lines.append("     - Variant")
        lines += [f"     - epoch {epoch} mean loss" for epoch in range(epochs)]
        lines.append(f"     - identical to the old hook on {reference_version}")
        for version in matrix["versions"]:
            if version not in data:
                continue
            for variant, values in data[version]["equivalence"]["variants"].items():
                lines.append(f"   * - {_version_header(version, data[version])}")
                lines.append(f"     - {names[variant]}")
                lines += [f"     - ``{epoch['mean']!r}``" for epoch in values]
                same = values == reference  # every batch loss of every epoch, float for float
                lines.append(f"     - {'yes' if same else '**no**'}")
        return self.parse_text_to_nodes("\n".join(lines))


def example_page(app: Any, script: str) -> str:
    """The docname of the gallery page of ``script`` (a path from the repository root, ``gallery/core/x.py``), by
    sphinx-gallery's ``examples_dirs`` and ``gallery_dirs``.

    Raises:
        ValueError: ``script`` is in no gallery directory.
    """
    conf = app.config.sphinx_gallery_conf
    path = (compat.ROOT / script).resolve()
    for source, target in zip(conf["examples_dirs"], conf["gallery_dirs"], strict=True):
        root = (Path(app.srcdir) / source).resolve()
        if path.is_relative_to(root):
            return f"{target}/{path.relative_to(root).with_suffix('').as_posix()}"
    raise ValueError(f"{script} is in no gallery directory")


class CompatExamples(SphinxDirective):
    """``.. compat-examples::`` -- replacement example x ``[matrix]`` release: passed or failed."""

    def run(self) -> list[nodes.Node]:
        matrix, data = load_all(self)
        versions = [v for v, entry in matrix["versions"].items() if entry["group"] == "matrix" and v in data]
        lines = [".. list-table::", "   :header-rows: 1", "   :class: stack-on-phone", "", "   * - Example"]
        lines += [f"     - {_version_header(v, data[v])}" for v in versions]
        for script in matrix["scripts"]:
            try:
                page = example_page(current_app.get(), script)
            except ValueError as err:
                raise self.error(f"{compat.MATRIX_FILE}: {err}") from None
            lines.append(f"   * - :doc:`/{page}`")
            for version in versions:
                runs = {ex["script"]: ex for ex in data[version].get("examples", [])}
                ex = runs.get(script)
                if ex is None:
                    lines.append("     - not run")
                elif ex["passed"]:
                    lines.append("     - passed")
                else:
                    lines.append(f"     - **failed** (exit {ex['returncode']})")
        return self.parse_text_to_nodes("\n".join(lines))


def setup(app: Sphinx) -> dict[str, Any]:
    current_app.remember(app)
    app.add_directive("compat-table", CompatTable)
    app.add_directive("compat-received", CompatReceived)
    app.add_directive("compat-equivalence", CompatEquivalence)
    app.add_directive("compat-examples", CompatExamples)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
