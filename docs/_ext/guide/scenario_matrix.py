"""Sphinx extension: run the scenario matrix (:mod:`lightning_migrate.scenarios`) at every build and render it.

At ``builder-inited`` the matrix starts in its own Python process (Lightning is never imported into Sphinx), beside
the gallery examples (``build_mechanics.recorded_run``); at ``env-before-read-docs`` the build waits for it. While it
runs, its progress -- cells done out of the total and an estimate of the time left, at most every 10 seconds --
appears on the build's console as status lines. A cell whose outcome is not the one
``data/scenarios.toml`` declares fails the build with an error naming the recipe, the scenario and what happened.

The results live in one stable file, ``<doctreedir>/scenario-matrix.json``, written atomically by the matrix
process and re-used by a later build only when nothing it depends on changed (the matrix file, the harness, every
recipe page, the warnings the cells accept, the checker when a recipe runs its rewrite, the installed Lightning,
torch and covertable -- their hash is stored beside it) and the build is not a CI build (``CI=true`` always runs it;
in a test run, a build takes the results an earlier build of the same run made from the same inputs:
``build_mechanics.run_cache``). The
generated covering set is kept in the doctree folder too, by a key of what it depends on. The pages that render
results note a dependency on the results file, so they are re-read whenever the results change.

* ``.. scenario-matrix::`` renders the reference page: a summary table of the recipes, one section per recipe
  (its domain, the cells that do not hold and why), the axes with the source of each value, the values that
  cannot combine, and the named scenarios.
* ``.. recipe-domain:: <recipe id> [<recipe id> ...]`` renders the box a recipe's page shows before the reader
  copies it: what the recipe works with (proven by this build's cells), what not, and the page to use instead.
  In a downloaded notebook (pandoc, ``docs/_ext/notebook_links.lua``) the box becomes a link to the recipe's
  section of the reference page.

Config values: ``scenario_matrix_file`` (the matrix file) and ``scenario_matrix_root`` (the tree whose pages the
recipes are taken from); both default to this project's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from build_mechanics import current_app, recorded_run, run_cache
from docutils import nodes
from docutils.parsers.rst import Parser as RSTParser
from docutils.parsers.rst import directives
from docutils.parsers.rst.states import RSTState
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, new_document

from lightning_migrate import scenarios
from lightning_migrate.scenarios import progress

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[3]
#: The recorder's name (``build_mechanics.recorded_run``): its results are ``scenario-matrix.json`` in the build's
#: doctree directory.
NAME = "scenario-matrix"
RESULTS = f"{NAME}.json"
#: The matrix's progress lines, passed on to the build's console while it runs.
PROGRESS = progress.PREFIX
SYMBOLS = {"holds": "✓", "differs": "≠", "raises": "✗", "not applicable": "·"}
#: How a source that is not a URL is linked: "Lightning #NNNN" and "owner/repo #NNNN" (GitHub redirects an issue
#: number to its pull request when it is one).
ISSUE = re.compile(r"^(?:(Lightning)|([\w.-]+/[\w.-]+)) #(\d+)$")


def _matrix_file(app: Sphinx) -> Path:
    return Path(app.config.scenario_matrix_file or scenarios.MATRIX_FILE)


def _root(app: Sphinx) -> Path:
    return Path(app.config.scenario_matrix_root or ROOT)


def inputs_key(matrix_file: Path = scenarios.MATRIX_FILE, root: Path = ROOT) -> str:
    """Hash of everything the matrix's results depend on (see the module docstring)."""
    space = scenarios.load_space(matrix_file)
    package = Path(scenarios.__file__).parent
    files = [matrix_file, scenarios.space.DECLARED_WARNINGS_FILE, *sorted(package.glob("*.py"))]
    files += sorted({root / r.page for r in space.recipes})
    if any(r.transform for r in space.recipes):  # the code that runs is what the checker's rewrite makes
        files += sorted((package.parent / "checker").rglob("*.py"))
    return recorded_run.inputs_key(files, ("lightning", "torch", "covertable"))


def _on_builder_inited(app: Sphinx) -> None:
    folder = Path(app.doctreedir)
    matrix_file, root = _matrix_file(app), _root(app)
    try:
        key = inputs_key(matrix_file, root)
    except (scenarios.MatrixError, OSError) as error:
        raise ExtensionError(str(error)) from None
    app.env.scenario_matrix_results = str(folder / RESULTS)  # type: ignore[attr-defined]
    # the covering set is kept beside the results, or in this test run's folder of kept runs, where pytest's check
    # of the covering set reads it back instead of generating it again (about 200 s)
    cache = run_cache.directory() or folder
    run = recorded_run.start(
        NAME,
        folder,
        key,
        "lightning_migrate.scenarios",
        lambda output: [
            "--output",
            str(output),
            "--matrix",
            str(matrix_file),
            "--root",
            str(root),
            "--cache",
            str(cache),
        ],
        cwd=root,
        progress=PROGRESS,  # cells done / total and the time left, every 10 s, on the build's console
    )
    if run.reused == "kept":
        logger.info("scenario matrix: run by an earlier build of this test run from the same inputs")
    elif run.process is not None:
        logger.info("running the scenario matrix (data/scenarios.toml) ...")
    app._scenario_matrix = run  # type: ignore[attr-defined]


def failure(run: recorded_run.Run, code: int, printed: str) -> str:
    """The build's error for a failed matrix: each ``recipe × scenario`` line it printed (page included), else the
    end of its output."""
    lines = [line.removeprefix("scenario matrix: ") for line in printed.splitlines() if " × " in line]
    detail = "\n".join(f"  {line}" for line in lines) or "\n".join(printed.splitlines()[-30:])
    return (
        f"the scenario matrix failed (data/scenarios.toml, src/lightning_migrate/scenarios/; exit code {code}):\n"
        f"{detail}"
    )


def _finish(app: Sphinx, *args: Any) -> None:
    """Wait for the matrix process started at ``builder-inited``; fail the build on an unexpected cell."""
    run = getattr(app, "_scenario_matrix", None)
    app._scenario_matrix = None  # type: ignore[attr-defined]
    recorded_run.finish(run, failure)
    if run is not None and run.process is not None:
        summary = [line for line in recorded_run.tail(run.log).splitlines() if line.startswith("scenario matrix: ")]
        logger.info(summary[-1] if summary else "scenario matrix: done")


def matrix_results(app: Sphinx) -> dict[str, Any]:
    """The results document of this build (see :func:`lightning_migrate.scenarios.run_matrix`)."""
    _finish(app)
    return json.loads(Path(app.env.scenario_matrix_results).read_text(encoding="utf-8"))  # type: ignore[attr-defined]


def recipe_anchor(recipe_id: str) -> str:
    """The HTML id of a recipe's section on the reference page (``notebook_links.lua`` builds the same)."""
    return "recipe-" + recipe_id.replace("_", "-")


def source_link(source: str) -> str:
    """An rST link for a value's source: a URL, or an issue of Lightning or of another GitHub repository."""
    if source.startswith(("http://", "https://")):
        return f"`docs <{source}>`__"
    match = ISSUE.match(source)
    if match:
        repo = "Lightning-AI/pytorch-lightning" if match[1] else match[2]
        return f"`{source} <https://github.com/{repo}/issues/{match[3]}>`__"
    return source


def _sources(text: str) -> str:
    return ", ".join(source_link(part.strip()) for part in text.split(";"))


class Results:
    """The results document, indexed for rendering."""

    def __init__(self, document: dict[str, Any]):
        self.document = document
        self.recipes = {r["id"]: r for r in document["recipes"]}
        self.scenarios = {s["id"]: s for s in document["scenarios"]}
        self.axes = {a["id"]: a for a in document["axes"]}
        self.labels = {a["id"]: {v["id"]: v["label"] for v in a["values"]} for a in document["axes"]}

    def cells(self, recipe_id: str) -> list[dict[str, Any]]:
        return [c for c in self.document["cells"] if c["recipe"] == recipe_id]

    def proven(self, recipe_id: str, stage_axes: list[str]) -> dict[str, dict[str, int]]:
        """``{axis: {value: cells that held with it}}`` for ``recipe_id``."""
        counts: dict[str, dict[str, int]] = {axis: {} for axis in stage_axes}
        for cell in self.cells(recipe_id):
            if cell["outcome"] != "holds":
                continue
            values = self.scenarios[cell["scenario"]]["values"]
            for axis in stage_axes:
                counts[axis][values[axis]] = counts[axis].get(values[axis], 0) + 1
        return counts

    def runs(self, recipe_id: str) -> set[str]:
        """The values of the calls axis that run the stage of ``recipe_id`` (as the matrix file declares them)."""
        return set(self.document["stage_calls"].get(self.recipes[recipe_id]["stage"], ()))

    def stage_axes(self, recipe_id: str) -> list[str]:
        """The axes that can change what ``recipe_id`` computes (an axis's ``stages``)."""
        stage = self.recipes[recipe_id]["stage"]
        return [a["id"] for a in self.document["axes"] if stage in a["stages"]]


def page_docname(page: str) -> str | None:
    """The docname of a recipe's page: ``gallery/core/x.py`` -> ``examples/core/x`` (where sphinx-gallery puts a
    gallery script's page), ``docs/x.md`` -> ``x``; ``None`` for a file that is not a page (``data/rewrites/``)."""
    if page.startswith("docs/"):
        return str(Path(page).relative_to("docs").with_suffix(""))
    if page.startswith("gallery/"):
        return "examples/" + page.removeprefix("gallery/").removesuffix(".py")
    return None


def _recipe_link(recipe: dict[str, Any]) -> str:
    docname = page_docname(recipe["page"])
    return f":doc:`{recipe['title']} </{docname}>`" if docname else f"{recipe['title']} (``{recipe['page']}``)"


def held_cells(results: Results, recipe_ids: list[str]) -> int:
    """How many cells of ``recipe_ids`` held in this build."""
    return sum(c["outcome"] == "holds" for rid in recipe_ids for c in results.cells(rid))


def domain_lines(
    results: Results, recipe_id: str, indent: str = "", held: int | None = None, traps: bool = True
) -> list[str]:
    """rST lines of a recipe's domain: what it works with (proven by this build's cells -- ``held`` of them, by
    default the recipe's own), what not and why, and (``traps``) what inside it does not hold on purpose. A value
    inside the domain that no cell held with (it did not run, or only in cells that do not hold on purpose) is named
    as such."""
    recipe = results.recipes[recipe_id]
    axes = results.stage_axes(recipe_id)
    proven = results.proven(recipe_id, axes)
    outside = {(o["axis"], v): o for o in recipe["outside"] for v in o["values"]}
    if traps:  # a value that a trap of its own names (one axis) is said below, not among what the recipe works with
        outside.update(
            {
                (axis, v): d
                for d in recipe.get("declared", [])
                if len(d["values"]) == 1
                for axis, vs in d["values"].items()
                for v in vs
            }
        )
    held = held_cells(results, [recipe_id]) if held is None else held
    lightning = results.document["lightning"]
    lines = [f"{indent}**Works with** (checked by {held} cells that hold on Lightning {lightning}):", ""]
    whole = []  # axes whose every value is inside the domain and held in some cell: named together, one line
    for axis in axes:
        relevant = [
            v["id"] for v in results.axes[axis]["values"] if axis != "calls" or v["id"] in results.runs(recipe_id)
        ]
        inside = [v for v in relevant if (axis, v) not in outside]
        missing = [v for v in inside if not proven[axis].get(v)]
        if not inside:
            continue
        if inside == relevant and not missing:
            whole.append(results.axes[axis]["title"])
            continue
        shown = "every value" if inside == relevant else "; ".join(results.labels[axis][v] for v in inside)
        unproven = "; ".join(results.labels[axis][v] for v in missing)
        gap = f" (no cell that holds ran with: {unproven})" if missing else ""
        lines.append(f"{indent}- {results.axes[axis]['title']}: {shown}{gap}")
    if whole:
        others = "Every value of the other axes" if len(lines) > 2 else "Every value of each axis"
        lines.append(f"{indent}- {others}: {'; '.join(title[0].lower() + title[1:] for title in whole)}")
    lines.append("")
    if recipe["outside"]:
        lines += [f"{indent}**Not with**, and what to use instead:", ""]
        for entry in recipe["outside"]:
            labels = "; ".join(results.labels[entry["axis"]][v] for v in entry["values"])
            title = results.axes[entry["axis"]]["title"]
            lines.append(f"{indent}- {title}: {labels} -- {entry['reason'].rstrip('.')}. Use :doc:`/{entry['see']}`.")
        lines.append("")
    met = {(c.get("declared") or {}).get("reason") for c in results.cells(recipe_id) if c["outcome"] != "holds"}
    kept = [d for d in recipe.get("declared", []) if d["reason"] in met] if traps else []
    if kept:
        lines += [f"{indent}**Does not hold, on purpose** (the cells that show it are in the scenario matrix):", ""]
        for entry in kept:
            if entry["scenario"]:
                where = f"*{results.scenarios[entry['scenario']]['title']}*"
            else:  # every axis named, with any of its values
                where = "; ".join(
                    f"{results.axes[axis]['title']}: {' or '.join(results.labels[axis][v] for v in values)}"
                    for axis, values in entry["values"].items()
                )
            verb = "an error" if entry["outcome"] == "raises" else "another value"
            reason = entry["reason"].rstrip(".")
            lines.append(f"{indent}- {where} -- {verb}: {reason}. See :doc:`/{entry['see']}`.")
        lines.append("")
    return lines


class ScenarioMatrix(SphinxDirective):
    """``.. scenario-matrix::``: the reference page of the matrix (see the module docstring). Its sections are
    rST sections (``-`` and ``~`` underlines, below the page title), each recipe's with the label
    ``recipe-<id>``."""

    def run(self) -> list[nodes.Node]:
        document = matrix_results(current_app.get())
        self.env.note_dependency(self.env.scenario_matrix_results)  # type: ignore[attr-defined]
        self.env.note_dependency(str(_matrix_file(current_app.get())))
        results = Results(document)
        lines = summary_lines(results)
        lines += ["Each recipe's domain", "--------------------", ""]
        for rid in results.recipes:
            lines += recipe_lines(results, rid)
        lines += space_lines(results)
        return self.parse_text_to_nodes("\n".join(lines), allow_section_headings=True)


def summary_lines(results: Results) -> list[str]:
    document = results.document
    cells = document["cells"]
    counts = {o: sum(c["outcome"] == o for c in cells) for o in scenarios.OUTCOMES}
    named = [s for s in document["scenarios"] if not s["generated"]]
    values = sum(len(a["values"]) for a in document["axes"])
    traps = document["covering"].get("traps", 0)
    lines = [
        ".. rst-class:: from-records",  # counted from the results
        "",
        f"{len(cells)} cells, run on Lightning {document['lightning']} (torch {document['torch']}) -- "
        f"{counts['holds']} hold, "
        f"{counts['differs']} differ, {counts['raises']} raise, {counts['not applicable']} do not apply. They "
        f"are the {len(named)} named scenarios below for every recipe, {document['covering']['cells'] - traps} "
        f"generated cells holding every pair of values of the {len(document['axes'])} axes ({values} values) and "
        "the recipes, where a recipe's domain, its declared traps and the constraints allow, and "
        f"{traps} cells that each show a trap a recipe declares and no named scenario shows.",
        "",
        ".. list-table:: Cells per recipe: " + ", ".join(f"{s} {o}" for o, s in SYMBOLS.items()),
        "   :header-rows: 1",
        "   :stub-columns: 1",
        "   :class: stack-on-phone",
        "",
        "   * - Recipe",
    ]
    lines += [f"     - {symbol}" for symbol in SYMBOLS.values()]
    for rid, recipe in results.recipes.items():
        mine = results.cells(rid)
        lines.append(f"   * - :ref:`{_plain(recipe['title'])} <{recipe_anchor(rid)}>`")
        lines += [f"     - {sum(c['outcome'] == o for c in mine)}" for o in SYMBOLS]
    return [*lines, ""]


def _plain(title: str) -> str:
    """A title without its inline-literal markup, for the text of a link (which cannot nest markup)."""
    return title.replace("``", "")


def _heading(text: str, underline: str) -> list[str]:
    return [text, underline * len(text), ""]


def recipe_lines(results: Results, rid: str) -> list[str]:
    """The section of one recipe: its page, its domain, and the cells that do not hold on purpose."""
    recipe = results.recipes[rid]
    lines = [f".. _{recipe_anchor(rid)}:", "", *_heading(recipe["title"], "~")]
    lines += [f"Page: {_recipe_link(recipe)}. Stage: {recipe['stage']}.", ""]
    lines += domain_lines(results, rid, traps=False)  # the cells that do not hold are listed below, one by one
    odd = [c for c in results.cells(rid) if c["outcome"] in ("differs", "raises")]
    if odd:
        lines += ["**Does not hold, on purpose** (a trap kept as evidence):", ""]
        defaults = {a["id"]: a["default"] for a in results.document["axes"]}
        for cell in odd:
            scenario = results.scenarios[cell["scenario"]]
            declared = cell.get("declared") or {}
            values = ", ".join(f"{a}={v}" for a, v in scenario["values"].items() if v != defaults[a]) or "defaults"
            name = f"generated scenario {scenario['id']}" if scenario["generated"] else _plain(scenario["title"])
            lines += ["- .. rst-class:: from-records", ""]  # the cell's outcome, from this build's results
            lines.append(f"  *{name}* {cell['outcome']}:")
            lines += ["", "  .. code-block:: none", ""]  # site.css wraps these long single lines
            lines += [f"     {values}", f"     {cell['detail'].strip().splitlines()[-1]}", ""]
            if declared.get("reason"):
                lines.append(f"  {declared['reason'].rstrip('.')}. Use :doc:`/{declared['see']}`.")
            lines.append("")
    return lines


def space_lines(results: Results) -> list[str]:
    """The axes (one table each: value, cells that ran with it, source), the constraints, the named scenarios."""
    document = results.document
    ran: dict[tuple[str, str], int] = {}
    for cell in document["cells"]:
        if cell["outcome"] != "not applicable":
            for axis, value in results.scenarios[cell["scenario"]]["values"].items():
                ran[(axis, value)] = ran.get((axis, value), 0) + 1
    lines = [
        *_heading("The space", "-"),
        "Each axis is a dimension of the space; each value comes from the report or the documentation linked "
        "beside it. *Cells* counts the cells that ran with the value.",
        "",
    ]
    for axis in document["axes"]:
        lines += [
            f".. list-table:: {axis['title']} (matters to: {', '.join(axis['stages'])})",
            "   :header-rows: 1",
            "   :widths: 60 15 25",
            "   :class: stack-on-phone",
            "",
            "   * - Value",
            "     - Cells",
            "     - Source",
        ]
        for value in axis["values"]:
            default = " (default)" if value["id"] == axis["default"] else ""
            lines += [
                f"   * - {value['label']}{default}",
                f"     - {ran.get((axis['id'], value['id']), 0)}",
                f"     - {_sources(value['source'])}",
            ]
        lines.append("")
    lines += [*_heading("Values that cannot combine", "~")]
    for constraint in document["constraints"]:
        parts = [
            f"{results.axes[a]['title']}: {', '.join(results.labels[a][v] for v in values)}"
            for a, values in constraint["values"].items()
        ]
        lines.append(f"- {' with '.join(parts)} -- {constraint['reason'].rstrip('.')}.")
    lines += ["", *_heading("Named scenarios", "~")]
    for number, scenario in enumerate((s for s in document["scenarios"] if not s["generated"]), 1):
        source = f" ({_sources(scenario['source'])})" if scenario.get("source") else ""
        lines.append(f"{number}. {scenario['title']}{source}")
    return [*lines, ""]


def box_title(titles: list[str]) -> str:
    """The title of a ``recipe-domain`` box over recipes with ``titles``: "Where this holds", then, for several, their
    titles joined by "and", without the page's name they all start with ("Which replacement: the callback" and
    "Which replacement: the module" read "the callback and the module")."""
    if len(titles) < 2:
        return "Where this holds"
    heads = {title.partition(": ")[0] for title in titles}
    if len(heads) == 1 and all(": " in title for title in titles):
        titles = [title.partition(": ")[2] for title in titles]
    return f"Where this holds: {' and '.join(titles)}"


class RecipeDomain(SphinxDirective):
    """``.. recipe-domain:: <recipe id> [...]``: the box "works with / not with, use instead" of those recipes."""

    required_arguments = 1
    optional_arguments = 10
    option_spec = {"class": directives.class_option}

    def run(self) -> list[nodes.Node]:
        document = matrix_results(current_app.get())
        self.env.note_dependency(self.env.scenario_matrix_results)  # type: ignore[attr-defined]
        results = Results(document)
        unknown = [rid for rid in self.arguments if rid not in results.recipes]
        if unknown:
            raise self.error(f"recipe-domain: no recipe {unknown} in {_matrix_file(current_app.get()).name}")
        box = nodes.admonition(classes=["recipe-domain", *self.options.get("class", [])])
        box += nodes.title(text=box_title([results.recipes[rid]["title"] for rid in self.arguments]))
        groups: dict[tuple[str, ...], list[str]] = {}  # recipes with the same domain are shown once, together
        for rid in self.arguments:
            groups.setdefault(tuple(domain_lines(results, rid)[1:]), []).append(rid)
        lines: list[str] = []
        for rids in groups.values():
            if len(groups) > 1:
                lines += [f"*{' and '.join(results.recipes[rid]['title'] for rid in rids)}*", ""]
            lines += domain_lines(results, rids[0], held=held_cells(results, rids))
            if len(rids) == 1:
                lines += [f"Every cell: :ref:`the scenario matrix <{recipe_anchor(rids[0])}>`.", ""]
            else:
                links = [f":ref:`{_plain(results.recipes[rid]['title'])} <{recipe_anchor(rid)}>`" for rid in rids]
                lines += [f"Every cell, in the scenario matrix: {', '.join(links)}.", ""]
        if isinstance(self.state, RSTState):
            self.state.nested_parse(StringList(lines, source=self.get_source_info()[0]), self.content_offset, box)
        else:  # a MyST page, whose nested parse reads Markdown: the box's text is rST (its :doc: and :ref: roles)
            document = new_document(self.get_source_info()[0], self.state.document.settings)
            RSTParser().parse("\n".join(lines), document)
            box.extend(document.children)
        return [box]


def setup(app: Sphinx) -> dict[str, Any]:
    current_app.remember(app)
    app.add_config_value("scenario_matrix_file", "", "env", types=[str])
    app.add_config_value("scenario_matrix_root", "", "env", types=[str])
    # Before sphinx-gallery's builder-inited handler (priority 500) runs the examples: both run at once.
    app.connect("builder-inited", _on_builder_inited, priority=400)
    app.connect("env-before-read-docs", _finish)
    app.add_directive("scenario-matrix", ScenarioMatrix)
    app.add_directive("recipe-domain", RecipeDomain)
    return {"version": "2", "parallel_read_safe": True, "parallel_write_safe": True}
