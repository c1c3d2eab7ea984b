"""Sphinx extension: run the scenario matrix (:mod:`migration_guide.scenarios`) at every build and render it.

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
  (what it works with and not, short, then folded: its domain in detail, the cells that do not hold and why), the
  axes with the source of each value, the values that cannot combine, and the named scenarios. The page speaks
  the reader's words: a cell is a *run*, an axis a *setting*, a scenario a *configuration*.
* ``.. recipe-domain:: <recipe id> [<recipe id> ...]`` renders the box a recipe's page shows before the reader
  copies it: "Works with" (Lightning's features, :data:`READER_WORDS`), "Not with" and the page to use instead,
  and, folded in a dropdown, every setting proven by this build's cells and a link to them.
  In a downloaded notebook (pandoc, ``docs/_ext/notebook_links.lua``) the box becomes a link to the recipe's
  section of the reference page.

Config values: ``scenario_matrix_file`` (the matrix file) and ``scenario_matrix_root`` (the tree whose pages the
recipes are taken from); both default to this project's.
"""

from __future__ import annotations

import functools
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

from migration_guide import scenarios
from migration_guide.scenarios import progress

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
    schemas = [package.parent / name for name in ("scenario_schema.py", "data_schema.py")]
    files = [matrix_file, scenarios.space.DECLARED_WARNINGS_FILE, *schemas, *sorted(package.glob("*.py"))]
    kept = scenarios.kept_covering_set_file(space)
    files += [kept] if kept.exists() else []
    files += sorted({root / r.page for r in space.recipes})
    if any(r.transform for r in space.recipes):  # the code that runs is what the checker's rewrite makes
        files += checker_files()
    return recorded_run.inputs_key(files, ("lightning", "torch", "covertable"))


def checker_files() -> list[Path]:
    """What a recipe with ``transform = "lightning-migrate"`` runs besides its page: the checker's code and the data
    it reads (the installed package, ``src/lightning_migrate``), every file.

    Raises:
        ExtensionError: the package is not where the checkout keeps it (a key without it would reuse old results).
    """
    import lightning_migrate

    package = Path(lightning_migrate.__file__).parent
    files = sorted(path for pattern in ("*.py", "data/**/*.json") for path in package.glob(pattern))
    files += sorted((package / "checker").rglob("*.py"))
    if not any(path.parent.name == "checker" for path in files):
        raise ExtensionError(f"the checker's code is not in {package / 'checker'}: the matrix's key would miss it")
    return files


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
        "migration_guide.scenarios",
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
        f"the scenario matrix failed (data/scenarios.toml, src/migration_guide/scenarios/; exit code {code}):\n{detail}"
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
    """The results document of this build (see :func:`migration_guide.scenarios.run_matrix`)."""
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


#: The axis of what the scenario's ``training_step`` returns: a recipe that defines its own ``training_step``
#: (``own_step`` in the results, ``targets`` in the matrix file) replaces that step, so its box says nothing of it.
SCENARIO_STEP_AXIS = "train_step"


class Results:
    """The results document, indexed for rendering; ``releases``: the other releases' records of the recipes' runs
    (:func:`release_records`), ``{release: its data/compat JSON}``, and ``checked``: ``{recipe id: [release, ...]}``,
    the releases where the recipe's current runs were recorded, every one as declared."""

    def __init__(
        self,
        document: dict[str, Any],
        releases: dict[str, dict[str, Any]] | None = None,
        checked: dict[str, list[str]] | None = None,
    ):
        self.document = document
        self.releases = releases or {}
        self.checked = checked or {}
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
        """The axes that can change what ``recipe_id`` computes (an axis's ``stages``); for a recipe whose own
        ``training_step`` computes its loss (``own_step``), not :data:`SCENARIO_STEP_AXIS`: its runs ran the recipe's
        step, not the one that axis describes."""
        recipe = self.recipes[recipe_id]
        skipped = SCENARIO_STEP_AXIS if recipe.get("own_step") else None
        return [a["id"] for a in self.document["axes"] if recipe["stage"] in a["stages"] and a["id"] != skipped]


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
    if docname:
        return f":doc:`{recipe['title']} </{docname}>`"
    if recipe["page"].startswith("data/rewrites/"):  # old code whose rewrite runs: what the checker writes
        return f"{recipe['title']}, as ``lightning-migrate --fix`` writes it"
    return f"{recipe['title']} (``{recipe['page']}``)"


#: How a Lightning user names a setting in a "works with" list: for each axis, phrases, each standing for the values
#: of that axis it names (a recipe works with the phrase when one of them is inside its domain and a run held with
#: it). A value named by no phrase here is said by its label; ``None`` leaves the value out of the short list (it is
#: in the detail below it).
READER_WORDS: dict[str, list[tuple[str | None, set[str]]]] = {
    "calls": [
        (
            "validate, test or predict before or after fit",
            {"validate", "validate-fit", "fit-validate", "test", "test-fit-test", "predict", "predict-fit-predict"},
        ),
        ("fit twice", {"fit-twice"}),
        ("a run that crashes and is run again", {"crash-rerun"}),
        ("resuming from a mid-epoch checkpoint", {"resume-mid-epoch"}),
        ("restarting from ``last.ckpt``", {"restart-last"}),
    ],
    "train_step": [
        ("a ``training_step`` that returns a tensor or ``None``", {"tensor", "none-batch-1"}),
        ("manual optimization", {"manual", "manual-nothing", "manual-no-loss", "manual-two-optimizers"}),
    ],
    "eval_step": [("a ``validation_step`` or ``test_step`` that returns a tensor or ``None``", {"tensor", "none"})],
    "dataset": [
        ("a smaller last batch", {"uneven"}),
        ("iterable datasets", {"iterable"}),
        ("a validation loss that rises and falls", {"not-monotone"}),
        ("a dataset that does not divide evenly between processes", {"remainder-1"}),
    ],
    "source": [("a ``LightningDataModule``", {"datamodule"})],
    "train_loaders": [("two training dataloaders", {"2"})],
    "eval_loaders": [("several dataloaders", {"2"}), ("``reload_dataloaders_every_n_epochs``", {"varies"})],
    "strategy": [("DDP", {"ddp-2", "ddp-3"}), ("DDP with your own split", {"ddp-2-own-split", "ddp-3-own-split"})],
    "accumulation": [("gradient accumulation", {"fixed-3", "scheduled"})],
    "val_schedule": [
        ("``val_check_interval``", {"interval-0.5", "interval-2"}),
        ("``check_val_every_n_epoch``", {"every-2-epochs"}),
    ],  # fmt: skip
    "sanity": [("any ``num_sanity_val_steps``", {"off", "all"})],
    "limits": [("``limit_*_batches``", {"int", "fraction"})],
    "length": [(None, {"epochs-3"}), ("``max_steps``", {"max-steps-7"}), ("``fast_dev_run``", {"fast-dev-run"})],
    "precision": [("bf16-mixed", {"bf16-mixed"})],
    "callbacks": [
        ("``ModelCheckpoint`` and ``EarlyStopping``", {"monitoring"}),
        ("``ReduceLROnPlateau``", {"plateau"}),
        ("a ``BasePredictionWriter``", {"prediction-writer"}),
    ],  # fmt: skip
    "shuffle": [("shuffled data", {"on"})],
}


def release_records(app: Sphinx, document: dict[str, Any]) -> Results:
    """The results of this build with the records of the other declared 2.x releases (``data/compat/<release>.json``,
    their recipes' runs, :func:`migration_guide.scenarios.releases.checked_on`): each record file is noted as a
    dependency of the page, which is re-read when it changes."""
    from migration_guide import compat

    texts = {}
    for version, entry in compat.load_matrix()["versions"].items():
        path = compat.data_path(version)
        if entry["group"] == "matrix" and version != document["lightning"] and path.is_file():
            app.env.note_dependency(str(path))
            texts[version] = path.read_text(encoding="utf-8")
    records = {version: json.loads(text) for version, text in texts.items()}
    matrix_file = _matrix_file(app)
    checked = _checked_on(matrix_file, matrix_file.read_text(encoding="utf-8"), tuple(texts.items())) if texts else {}
    return Results(document, records, {recipe: list(found) for recipe, found in checked.items()})


@functools.lru_cache(maxsize=4)
def _checked_on(matrix_file: Path, matrix_text: str, records: tuple[tuple[str, str], ...]) -> dict[str, list[str]]:
    """:func:`migration_guide.scenarios.releases.checked_on` of the matrix file and the record texts ``(release,
    JSON text)``, computed once per process for the same texts: it generates every recipe's cells for every release,
    and each page that shows a recipe asks for it (32 times in a build, about half of a build's reading before)."""
    from migration_guide.scenarios import releases

    space = scenarios.load_space(matrix_file)
    return releases.checked_on(space, {version: json.loads(text) for version, text in records})


def checked_releases(results: Results, recipe_id: str) -> list[str]:
    """The releases ``recipe_id`` ran and held on: each other release whose record holds its current runs, all as
    declared (:attr:`Results.checked`), and this build's (whose runs fail the build when one does not behave), if a
    run of it held here; oldest first."""
    found = list(results.checked.get(recipe_id, []))
    if held_cells(results, [recipe_id]):
        found.append(results.document["lightning"])
    return sorted(set(found), key=lambda v: tuple(int(part) for part in v.split(".") if part.isdigit()))


def checked_line(results: Results, recipe_id: str, indent: str = "") -> list[str]:
    """ "Checked on Lightning 2.0.9, 2.2.5 and 2.6.6." (:func:`checked_releases`), or nothing."""
    found = checked_releases(results, recipe_id)
    if not found:
        return []
    said = found[0] if len(found) == 1 else f"{', '.join(found[:-1])} and {found[-1]}"
    return [f"{indent}**Checked on** Lightning {said}.", ""]


def held_cells(results: Results, recipe_ids: list[str]) -> int:
    """How many runs of ``recipe_ids`` held in this build."""
    return sum(c["outcome"] == "holds" for rid in recipe_ids for c in results.cells(rid))


def _outside(results: Results, recipe_id: str, traps: bool) -> dict[tuple[str, str], dict[str, Any]]:
    """``{(axis, value): entry}`` of the values outside ``recipe_id``'s domain, and (``traps``) of the values a trap of
    its own names (one axis): those are said among what it does not work with."""
    recipe = results.recipes[recipe_id]
    outside = {(o["axis"], v): o for o in recipe["outside"] for v in o["values"]}
    if traps:
        outside.update(
            {
                (axis, v): d
                for d in recipe.get("declared", [])
                if len(d["values"]) == 1
                for axis, vs in d["values"].items()
                for v in vs
            }
        )
    return outside


def _relevant(results: Results, recipe_id: str, axis: str) -> list[str]:
    return [v["id"] for v in results.axes[axis]["values"] if axis != "calls" or v["id"] in results.runs(recipe_id)]


def works_with(results: Results, recipe_id: str, traps: bool = True) -> list[str]:
    """What ``recipe_id`` works with, in a Lightning user's words (:data:`READER_WORDS`): every value inside the
    recipe's domain that is not the axis's default and held in a run of this build, said by the phrase that stands
    for it when every value of the phrase (that runs the recipe's stage) is such a value, else by its own label --
    so that "works with" never names what "not with" names too."""
    proven = results.proven(recipe_id, results.stage_axes(recipe_id))
    outside = _outside(results, recipe_id, traps)
    phrases: list[str] = []
    for axis in results.stage_axes(recipe_id):
        default = results.axes[axis]["default"]
        relevant = _relevant(results, recipe_id, axis)
        works = {v for v in relevant if v != default and (axis, v) not in outside and proven[axis].get(v)}
        named: dict[str, str | None] = {
            v: phrase
            for phrase, values in READER_WORDS.get(axis, [])
            if (values & set(relevant)) <= works
            for v in values
        }
        for value in relevant:
            if value not in works:
                continue
            phrase = named[value] if value in named else results.labels[axis].get(value)
            if phrase and phrase not in phrases:
                phrases.append(phrase)
    return phrases


def _also_with(results: Results, recipe: dict[str, Any], entry: dict[str, Any]) -> str:
    """ ", also with ..." when the page of the outside ``entry`` is the one that holds where another outside value of
    the recipe comes with it (the recipe's ``together``), in a Lightning user's words; else ``""``."""
    others: dict[str, list[str]] = {}
    for together in recipe.get("together", []):
        values = together["values"]
        if together["see"] == entry["see"] and values.get(entry["axis"]) in entry["values"]:
            for axis, value in values.items():
                if axis != entry["axis"] and value not in others.setdefault(axis, []):
                    others[axis].append(value)
    if not others:
        return ""
    return ", also with " + " or ".join(
        _reader_words(results, axis, values, exact=True).replace("; ", " or ") for axis, values in others.items()
    )


def _gap_of(recipe: dict[str, Any], values: dict[str, list[str]]) -> dict[str, Any] | None:
    """The declared gap (the recipe's ``gaps``) that covers every combination of ``values``, or ``None``."""
    for gap in recipe.get("gaps", []):
        if all(axis in values and set(values[axis]) <= set(gap["values"][axis]) for axis in gap["values"]):
            return gap
    return None


def gap_lines(results: Results, recipe_id: str, indent: str = "") -> list[str]:
    """rST lines: each set of values that, together, no recipe of the site holds, and why (the recipe's
    ``gaps``): said as what the reader runs."""
    lines = []
    for gap in results.recipes[recipe_id].get("gaps", []):
        what = " and ".join(
            _reader_words(results, axis, values, exact=True).replace("; ", " or ")
            for axis, values in gap["values"].items()
        )
        lines += [f"{indent}**No recipe here yet** for {what} together: {gap['reason'].rstrip('.')}.", ""]
    return lines


def _not_with(results: Results, recipe_id: str, traps: bool) -> list[tuple[str, str, str]]:
    """``(what, why, page)`` of each thing ``recipe_id`` does not work with: the values outside its domain, and, with
    ``traps``, what inside it gives another value or an error on purpose (a pitfall page's trap) in this build. The
    page of an outside value also says where it holds with another outside value at once (:func:`_also_with`)."""
    recipe = results.recipes[recipe_id]
    entries = []
    for entry in recipe["outside"]:
        labels = "; ".join(results.labels[entry["axis"]][v] for v in entry["values"])
        entries.append((labels, entry["reason"].rstrip(".") + _also_with(results, recipe, entry), entry["see"]))
    met = {(c.get("declared") or {}).get("reason") for c in results.cells(recipe_id) if c["outcome"] != "holds"}
    for entry in [d for d in recipe.get("declared", []) if d["reason"] in met] if traps else []:
        if entry["scenario"]:
            where = f"*{results.scenarios[entry['scenario']]['title']}*"
        else:  # every axis named, with any of its values: one configuration, its settings together
            where = _together(
                [" or ".join(results.labels[axis][v] for v in values) for axis, values in entry["values"].items()]
            )
        verb = "an error" if entry["outcome"] == "raises" else "another value"
        entries.append((where, f"{verb}: {entry['reason'].rstrip('.')}", entry["see"]))
    return entries


def _together(settings: list[str]) -> str:
    """Settings of one configuration, said as such: ``a``, ``a together with b``, ``a together with b and c``."""
    if len(settings) < 2:
        return "".join(settings)
    rest = settings[1:]
    return f"{settings[0]} together with " + (rest[0] if len(rest) == 1 else f"{', '.join(rest[:-1])} and {rest[-1]}")


def _use(results: Results, recipe_id: str, see: str, values: dict[str, list[str]] | None = None) -> str:
    """ "use :doc:`page`", or for a trap whose values no recipe holds (a declared gap) "see :doc:`page`"."""
    recipe = results.recipes[recipe_id]
    return ("see" if values is not None and _gap_of(recipe, values) else "use") + f" :doc:`/{see}`"


def not_with_lines(results: Results, recipe_id: str, indent: str = "", traps: bool = True) -> list[str]:
    """rST list items: what ``recipe_id`` does not work with, why, and the page to use instead (see
    :func:`_not_with`)."""
    items = []
    for (what, why, see), values in zip(_not_with(results, recipe_id, traps), _values_of(results, recipe_id, traps),
                                        strict=True):  # fmt: skip
        use = _use(results, recipe_id, see, values)
        items.append(f"{indent}- {what} -- {why}. {use[0].upper()}{use[1:]}.")
    return items


def _values_of(results: Results, recipe_id: str, traps: bool) -> list[dict[str, list[str]] | None]:
    """Beside each entry of :func:`_not_with`: ``None`` for an outside value, a trap's values (``{}`` for a named
    configuration's)."""
    recipe = results.recipes[recipe_id]
    met = {(c.get("declared") or {}).get("reason") for c in results.cells(recipe_id) if c["outcome"] != "holds"}
    shown = [d for d in recipe.get("declared", []) if d["reason"] in met] if traps else []
    return [None] * len(recipe["outside"]) + [d["values"] or {} for d in shown]


def _reader_words(results: Results, axis: str, values: list[str], exact: bool = False) -> str:
    """``values`` of ``axis`` as a Lightning user says them (:data:`READER_WORDS`, else each value's label);
    ``exact``: a phrase only where every value it stands for is among ``values``."""
    named = {
        v: phrase
        for phrase, vs in READER_WORDS.get(axis, [])
        for v in vs
        if phrase and (not exact or vs <= set(values))
    }
    words: list[str] = []
    for value in values:
        word = named.get(value, results.labels[axis][value])
        if word not in words:
            words.append(word)
    return "; ".join(words)


#: The settings a reader asks about first, in that order: a recipe's box names what it works with of these first.
FIRST_ASKED = ("strategy", "accumulation", "precision", "callbacks", "calls", "source", "val_schedule", "limits")
#: How many of what a recipe works with its box names before "and N more" (the rest is in its folded detail).
SHOWN = 6


def works_with_first(results: Results, recipe_id: str, traps: bool = True) -> list[str]:
    """:func:`works_with`, the settings of :data:`FIRST_ASKED` first, in that order; the rest as they come."""
    phrases = works_with(results, recipe_id, traps)
    axis_of = {label: axis for axis in results.stage_axes(recipe_id) for label in results.labels[axis].values()}
    axis_of |= {
        phrase: axis for axis in results.stage_axes(recipe_id) for phrase, _ in READER_WORDS.get(axis, []) if phrase
    }
    rank = {axis: position for position, axis in enumerate(FIRST_ASKED)}
    return sorted(phrases, key=lambda phrase: rank.get(axis_of.get(phrase, ""), len(rank)))


def summary_of(results: Results, recipe_id: str, indent: str = "", traps: bool = True) -> list[str]:
    """rST lines, short, in a Lightning user's words: "Not with ... (use ...)" first -- what a reader must know before
    copying -- then the settings no recipe of the site holds together, "Works with" :data:`SHOWN` settings "and N more"
    (:func:`works_with_first`; every one in the folded detail, :func:`works_with_lines`), and the releases checked.
    Why not is in the detail (:func:`not_with_lines`)."""
    lines: list[str] = []
    not_with = _not_with(results, recipe_id, traps)
    recipe = results.recipes[recipe_id]
    # exact: a phrase only where every value it stands for is outside (else "works with" could name it too)
    short = [_reader_words(results, entry["axis"], entry["values"], exact=True) for entry in recipe["outside"]]
    short += [what for what, _, _ in not_with[len(recipe["outside"]) :]]  # the traps, as their configuration says
    also = [_also_with(results, recipe, entry) for entry in recipe["outside"]]
    also += [""] * (len(not_with) - len(recipe["outside"]))
    values = _values_of(results, recipe_id, traps)
    if not_with:
        items = "; ".join(
            f"{what} ({_use(results, recipe_id, see, trap)}{more})"
            for what, (_, _, see), more, trap in zip(short, not_with, also, values, strict=True)
        )
        lines += [f"{indent}**Not with** {items}.", ""]
    lines += gap_lines(results, recipe_id, indent)
    phrases = works_with_first(results, recipe_id, traps)
    if not phrases:
        shown = "the Trainer's defaults"
    elif len(phrases) <= SHOWN + 1:
        shown = _listed(phrases)
    else:
        shown = f"{_listed(phrases[:SHOWN])} and {len(phrases) - SHOWN} more settings (below)"
    lines += [f"{indent}**Works with** {shown}.", ""]
    return [*lines, *checked_line(results, recipe_id, indent)]


def works_with_lines(results: Results, recipe_id: str, indent: str = "", traps: bool = True) -> list[str]:
    """rST lines: every setting ``recipe_id`` works with (:func:`works_with_first`), for its folded detail."""
    phrases = works_with_first(results, recipe_id, traps)
    return [f"{indent}Works with {_listed(phrases)}.", ""] if phrases else []


def _listed(phrases: list[str]) -> str:
    """``phrases`` joined by commas, or by semicolons when one of them holds a comma of its own ("manual
    optimization, returns the loss"), as "Not with" joins its items."""
    return ("; " if any(", " in phrase for phrase in phrases) else ", ").join(phrases)


def domain_lines(
    results: Results, recipe_id: str, indent: str = "", held: int | None = None, traps: bool = True
) -> list[str]:
    """rST lines of a recipe's domain in detail: each Trainer setting it ran with and the values it holds with
    (proven by this build's runs -- ``held`` of them, by default the recipe's own). A value inside the domain that
    no run held with (it did not run, or only in runs that do not hold on purpose) is named as such."""
    axes = results.stage_axes(recipe_id)
    proven = results.proven(recipe_id, axes)
    outside = _outside(results, recipe_id, traps)
    held = held_cells(results, [recipe_id]) if held is None else held
    lightning = results.document["lightning"]
    lines = [
        f"{indent}{held} runs held on Lightning {lightning}, with these settings (a run holds when it gives the values "
        "of a reference computed without the recipe, from the batches that ran: after a resume, those of the resumed "
        "run):",
        "",
    ]
    whole = []  # settings whose every value is inside the domain and held in some run: named together, one line
    for axis in axes:
        relevant = _relevant(results, recipe_id, axis)
        inside = [v for v in relevant if (axis, v) not in outside]
        missing = [v for v in inside if not proven[axis].get(v)]
        if not inside:
            continue
        if inside == relevant and not missing:
            whole.append(results.axes[axis]["title"])
            continue
        shown = "every value" if inside == relevant else "; ".join(results.labels[axis][v] for v in inside)
        unproven = "; ".join(results.labels[axis][v] for v in missing)
        gap = f" (not run yet with: {unproven})" if missing else ""
        lines.append(f"{indent}- {results.axes[axis]['title']}: {shown}{gap}")
    if whole:
        others = "Every value of" if len(lines) == 2 else "Every value of the others"  # 2: the heading and its blank
        lines.append(f"{indent}- {others}: {'; '.join(title[0].lower() + title[1:] for title in whole)}")
    return [*lines, ""]


#: The class of what the matrix's results write on a page (a recipe's box and the reference page's summaries).
DOMAIN = "recipe-domain"


def _dropdown(title: str, body: list[str], indent: str = "", classes: str = "") -> list[str]:
    """A sphinx-design dropdown, closed, holding ``body`` (rST lines, indented under it)."""
    head = [f"{indent}.. dropdown:: {title}"]
    if classes:
        head.append(f"{indent}   :class-container: {classes}")
    return [*head, "", *(f"{indent}   {line}" if line else "" for line in body), ""]


class ScenarioMatrix(SphinxDirective):
    """``.. scenario-matrix::``: the reference page of the matrix (see the module docstring). Its sections are
    rST sections (``-`` and ``~`` underlines, below the page title), each recipe's with the label
    ``recipe-<id>``: a short summary first, the detail folded in dropdowns."""

    def run(self) -> list[nodes.Node]:
        document = matrix_results(current_app.get())
        self.env.note_dependency(self.env.scenario_matrix_results)  # type: ignore[attr-defined]
        self.env.note_dependency(str(_matrix_file(current_app.get())))
        results = release_records(current_app.get(), document)
        lines = summary_lines(results)
        lines += _heading("Each recipe", "-")
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
        f"{len(cells)} runs on Lightning {document['lightning']} (torch {document['torch']}): "
        f"{counts['holds']} hold, {counts['differs']} give another value and {counts['raises']} an error on purpose "
        f"(each a pitfall a page shows), {counts['not applicable']} are outside a recipe's use.",
        "",
    ]
    how = (
        f"Every recipe runs in the {len(named)} named configurations at the bottom of this page, and in "
        f"{document['covering']['cells'] - traps} generated ones that together pair every value of each of the "
        f"{len(document['axes'])} settings ({values} values) with every value of each other setting and with every "
        f"recipe, where the recipe's use and Lightning allow; {traps} more runs each show a pitfall a recipe declares "
        "that no named configuration shows."
    )
    if results.releases:
        runs = [
            (v, sum(len(e["runs"]) for e in r.get("scenario_cells", {}).values())) for v, r in results.releases.items()
        ]
        said = " and ".join(f"Lightning {v} ({n} runs)" for v, n in runs)
        how += (
            f" Every recipe also ran on {said}, in runs that together meet each value of each of its settings at "
            "least once; each recipe's section names the releases it held on."
        )
    table = [
        ".. list-table:: Runs per recipe: " + ", ".join(f"{s} {o}" for o, s in SYMBOLS.items()),
        "   :header-rows: 1",
        "   :stub-columns: 1",
        "   :widths: 64 9 9 9 9",
        "   :class: stack-on-phone",  # one block per recipe on a phone, as the settings' tables
        "",
        "   * - Recipe",
    ]
    table += [f"     - {symbol}" for symbol in SYMBOLS.values()]
    for rid, recipe in results.recipes.items():
        mine = results.cells(rid)
        table.append(f"   * - :ref:`{_plain(recipe['title'])} <{recipe_anchor(rid)}>`")
        table += [f"     - {sum(c['outcome'] == o for c in mine)}" for o in SYMBOLS]
    lines += _dropdown("How the configurations are chosen, and the runs per recipe", [how, "", *table], classes=DOMAIN)
    return lines


def _plain(title: str) -> str:
    """A title without its inline-literal markup, for the text of a link (which cannot nest markup)."""
    return title.replace("``", "")


def _heading(text: str, underline: str) -> list[str]:
    return [text, underline * len(text), ""]


def recipe_lines(results: Results, rid: str) -> list[str]:
    """The section of one recipe: its page, what it works with and not (short), then, folded, every setting it ran
    with and the runs that do not hold on purpose."""
    recipe = results.recipes[rid]
    lines = [f".. _{recipe_anchor(rid)}:", "", *_heading(recipe["title"], "~")]
    lines += [f"Page: {_recipe_link(recipe)}.", ""]
    # where the recipe works, written from the results (the class the typed-sentence guard reads as rendered)
    shown = summary_of(results, rid, traps=False)  # the runs that do not hold are listed below, one by one
    body = [*works_with_lines(results, rid, traps=False), *domain_lines(results, rid, traps=False)]
    why = not_with_lines(results, rid, traps=False)
    if why:
        body += ["Why not:", "", *why, ""]
    odd = [c for c in results.cells(rid) if c["outcome"] in ("differs", "raises")]
    if odd:
        body += [f"Runs that do not hold, on purpose (a pitfall kept as evidence): {len(odd)}", ""]
        defaults = {a["id"]: a["default"] for a in results.document["axes"]}
        for cell in odd:
            scenario = results.scenarios[cell["scenario"]]
            declared = cell.get("declared") or {}
            values = ", ".join(f"{a}={v}" for a, v in scenario["values"].items() if v != defaults[a]) or "defaults"
            name = f"generated configuration {scenario['id']}" if scenario["generated"] else _plain(scenario["title"])
            outcome = {"differs": "gives another value", "raises": "raises"}[cell["outcome"]]
            body += ["- .. rst-class:: from-records", ""]  # the run's outcome, from this build's results
            body.append(f"  *{name}* {outcome}:")
            body += ["", "  .. code-block:: none", ""]  # site.css wraps these long single lines
            body += [f"     {values}", f"     {cell['detail'].strip().splitlines()[-1]}", ""]
            if declared.get("reason"):
                body.append(f"  {declared['reason'].rstrip('.')}. Use :doc:`/{declared['see']}`.")
            body.append("")
    more = f", why not, {len(odd)} runs that do not hold on purpose" if odd else (", why not" if why else "")
    shown += _dropdown(f"Every setting it ran with{more}", [f"Stage: {recipe['stage']}.", "", *body])
    lines += [f".. container:: {DOMAIN}", "", *(f"   {line}" if line else "" for line in shown), ""]
    return lines


def space_lines(results: Results) -> list[str]:
    """The settings (one table each: value, runs with it, source), the values that cannot combine, the named
    configurations; each folded."""
    document = results.document
    ran: dict[tuple[str, str], int] = {}
    for cell in document["cells"]:
        if cell["outcome"] != "not applicable":
            for axis, value in results.scenarios[cell["scenario"]]["values"].items():
                ran[(axis, value)] = ran.get((axis, value), 0) + 1
    lines = [
        *_heading("The settings", "-"),
        "Each setting's values come from a public report or the documentation linked beside them; *Runs* counts "
        "the runs with the value.",
        "",
    ]
    for axis in document["axes"]:
        table = [
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: 60 15 25",
            "   :class: stack-on-phone",
            "",
            "   * - Value",
            "     - Runs",
            "     - Source",
        ]
        for value in axis["values"]:
            default = " (default)" if value["id"] == axis["default"] else ""
            table += [
                f"   * - {value['label']}{default}",
                f"     - {ran.get((axis['id'], value['id']), 0)}",
                f"     - {_sources(value['source'])}",
            ]
        lines += _dropdown(f"{axis['title']} (matters to: {', '.join(axis['stages'])})", table, classes=DOMAIN)
    constraints = []
    for constraint in document["constraints"]:
        parts = [
            f"{results.axes[a]['title']}: {', '.join(results.labels[a][v] for v in values)}"
            for a, values in constraint["values"].items()
        ]
        constraints.append(f"- {' with '.join(parts)} -- {constraint['reason'].rstrip('.')}.")
    lines += _dropdown("Values that cannot combine", constraints, classes=DOMAIN)
    named = []
    for number, scenario in enumerate((s for s in document["scenarios"] if not s["generated"]), 1):
        source = f" ({_sources(scenario['source'])})" if scenario.get("source") else ""
        named.append(f"{number}. {scenario['title']}{source}")
    lines += _dropdown("Named configurations", named, classes=DOMAIN)
    return [*lines, ""]


def box_title(titles: list[str]) -> str:
    """The title of a ``recipe-domain`` box over recipes with ``titles``: "Where it works", then, for several, their
    titles joined by "and", without the page's name they all start with ("Which replacement: the callback" and
    "Which replacement: the module" read "the callback and the module")."""
    if len(titles) < 2:
        return "Where it works"
    heads = {title.partition(": ")[0] for title in titles}
    if len(heads) == 1 and all(": " in title for title in titles):
        titles = [title.partition(": ")[2] for title in titles]
    return f"Where it works: {' and '.join(titles)}"


class RecipeDomain(SphinxDirective):
    """``.. recipe-domain:: <recipe id> [...]``: the box "works with / not with, use instead" of those recipes, short,
    with every setting the recipe ran with and the link to its runs folded in a dropdown."""

    required_arguments = 1
    optional_arguments = 10
    option_spec = {"class": directives.class_option}

    def run(self) -> list[nodes.Node]:
        document = matrix_results(current_app.get())
        self.env.note_dependency(self.env.scenario_matrix_results)  # type: ignore[attr-defined]
        results = release_records(current_app.get(), document)
        unknown = [rid for rid in self.arguments if rid not in results.recipes]
        if unknown:
            raise self.error(f"recipe-domain: no recipe {unknown} in {_matrix_file(current_app.get()).name}")
        box = nodes.admonition(classes=["recipe-domain", *self.options.get("class", [])])
        box += nodes.title(text=box_title([results.recipes[rid]["title"] for rid in self.arguments]))
        groups: dict[tuple[str, ...], list[str]] = {}  # recipes with the same domain are shown once, together
        for rid in self.arguments:
            key = (*summary_of(results, rid), *domain_lines(results, rid)[1:])
            groups.setdefault(key, []).append(rid)
        lines: list[str] = []
        for rids in groups.values():
            if len(groups) > 1:
                lines += [f"*{' and '.join(results.recipes[rid]['title'] for rid in rids)}*", ""]
            lines += summary_of(results, rids[0])
            held = held_cells(results, rids)
            why = not_with_lines(results, rids[0])
            detail = ["Why not:", "", *why, ""] if why else []
            detail += works_with_lines(results, rids[0])
            detail += domain_lines(results, rids[0], held=held)
            if len(rids) == 1:
                detail += [f"Each run, and what does not hold: :ref:`{_plain(results.recipes[rids[0]]['title'])} "
                           f"<{recipe_anchor(rids[0])}>`.", ""]  # fmt: skip
            else:
                links = [f":ref:`{_plain(results.recipes[rid]['title'])} <{recipe_anchor(rid)}>`" for rid in rids]
                detail += [f"Each run: {', '.join(links)}.", ""]
            title = f"Tested in {held} runs on Lightning {results.document['lightning']}"
            lines += _dropdown(title, detail, classes="recipe-evidence")
        if isinstance(self.state, RSTState):
            self.state.nested_parse(StringList(lines, source=self.get_source_info()[0]), self.content_offset, box)
        else:  # a MyST page, whose nested parse reads Markdown: the box's text is rST (its :doc: and :ref: roles)
            document = new_document(self.get_source_info()[0], self.state.document.settings)
            RSTParser().parse("\n".join(lines), document)
            box.extend(document.children)
        return [box]


def setup(app: Sphinx) -> dict[str, Any]:
    current_app.remember(app)
    app.setup_extension("sphinx_design")  # the detail of a box and of the reference page is folded in its dropdowns
    app.add_config_value("scenario_matrix_file", "", "env", types=[str])
    app.add_config_value("scenario_matrix_root", "", "env", types=[str])
    # Before sphinx-gallery's builder-inited handler (priority 500) runs the examples: both run at once.
    app.connect("builder-inited", _on_builder_inited, priority=400)
    app.connect("env-before-read-docs", _finish)
    app.add_directive("scenario-matrix", ScenarioMatrix)
    app.add_directive("recipe-domain", RecipeDomain)
    return {"version": "2", "parallel_read_safe": True, "parallel_write_safe": True}
