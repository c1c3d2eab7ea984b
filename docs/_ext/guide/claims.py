"""Sphinx extension: claims -- what the site says about Lightning, torch and torchmetrics, bound to the run that
proves it.

A *claim* is one statement about how Lightning (or torch, torchmetrics) behaves, kept as data in
``data/claims.toml`` (the config value ``claims_file``): an id, its wording, the configuration its evidence ran in,
and its evidence. Pages never type such a statement: they render it with the role ``:claim:`id``` (MyST:
``{claim}`id```), which prints the wording; the gallery's downloaded notebooks print the same wording
(``docs/_ext/build_mechanics/notebook_links.lua`` reads the file :func:`write_notebook_texts` writes).

Its keys, the axes of its ``scope`` and the kinds of evidence are declared once, in
:mod:`migration_guide.claim_schema`; each kind is one class here (:data:`IMPLEMENTATIONS`: how it is described,
checked, which runs and releases it rests on, which values a wording may print from it). Evidence, one or more per
claim (each an inline table of the TOML file, told apart by its first key):

``assert = "gallery/x.py", message = "..."``
    an ``assert`` statement at the top level of that page (a gallery script, or a code cell of a MyST notebook)
    whose message is exactly this text, found in the page's syntax tree -- so the reader's code is never
    instrumented -- and the page ran to its end: sphinx-gallery's checksum of a passing run matches the script
    (sphinx-gallery writes it only after every block ran), or myst-nb's execution of the notebook succeeded. A
    top-level assert of a page that ran has passed. A build asked not to run a gallery page (``plot_gallery`` off,
    or a ``filename_pattern`` it does not match) does not check that page's asserts, and says so.
``probe = "<pattern id>", field = "outcome", equals = "ignored"``
    a field of the probe record this build made on the installed Lightning (:mod:`guide.probe_records`).
``recorded = "1.4.9", pattern = "<pattern id>", field = "received.len", equals = 0``
    a field of a recorded run of an old or 2.x release (``data/compat/<release>.json``; ``section =
    "observations"`` reads the release's observations instead of its probe records).
``matrix = "<recipe id>", scenarios = "all" | ["<scenario id>", ...]``
    cells of the scenario matrix of this build that hold (:func:`matrix_outcomes` reads its results); with
    ``outcome = "raises"`` or ``"differs"``, cells with that outcome (the matrix itself checks what a raising
    cell's error says and that the outcome is the one ``data/scenarios.toml`` declares).
``cell = "<recipe id>", values = { <axis> = <value>, ... }, outcome = "raises", match = "..."``
    a cell the scenario matrix does not run -- a combination a constraint of ``data/scenarios.toml`` excludes, or
    one outside the recipe's domain -- run by this build with the matrix's harness on the installed release
    (:mod:`migration_guide.claim_cells`; ``scenario = "<named scenario id>"`` instead of ``values``): its outcome
    (``holds``, ``differs``, ``raises``), with ``match`` a text its detail (the error as raised) must contain and
    ``warns`` a text one of the warnings it emitted must contain. The reason a constraint or a domain gives is then
    a claim, proven by running what it excludes.
``changelog = "<pattern id>", field = "removed_in", equals = "1.8"``
    a release fact of the registry, which cites Lightning's CHANGELOG (``src/lightning_migrate/registry.py``).
``default = "num_sanity_val_steps", equals = 2``
    what a ``Trainer()`` of the installed release holds (the probes record it: ``trainer_defaults``).

A probe, recorded or changelog evidence may name several patterns (a list: each must agree), and may compare several
fields at once with ``fields = { outcome = "error", error_type = "RuntimeError" }`` instead of ``field`` and
``equals``.

Wording rules, checked when the file is read. A claim is in the reader's voice: its ``scope`` (the configuration)
and the releases of its evidence are printed as a small marker beside the wording, linking to its row of the claims
table, instead of a qualifier in every sentence. Its words follow its evidence: an exception's class name, or a
count its evidence compares, is a placeholder (``{error_type}``, ``{received.len}``, ``{hook_calls#2}``) filled
from the value the build checks against the record, never typed; a class name no evidence checks is refused. A
claim without a configuration (no ``scope``) is refused, unless ``general`` or from the changelog alone; a wording
that quantifies over configurations ("always", "never", "whatever", "any ..." -- not "every batch") needs evidence
of several runs (matrix cells, several probes or recorded runs, several pages). The earlier form -- ``checked``, a
phrase of the wording, and the release named in it -- still loads
(:data:`migration_guide.claim_schema.LEGACY_CHECKED`); ``python -m migration_guide.claim_schema --migrate
data/claims.toml`` rewrites such blocks.

The build fails (a warning, and ``-W``) when a claim's evidence is missing, did not run, or disagrees, when a page
uses an unknown claim, and when a claim is used on no page. ``.. claims-table::`` lists every claim with where it
was checked and where it is used.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from build_mechanics import current_app
from docutils import nodes
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole

from migration_guide import claim_schema

logger = logging.getLogger(__name__)

#: The kinds of evidence (declared in :data:`migration_guide.claim_schema.EVIDENCE_KINDS`).
KINDS = tuple(claim_schema.EVIDENCE_KINDS)
#: The placeholders a wording may use, each the installed version of a distribution.
PLACEHOLDERS = {"lightning": ("lightning", "pytorch-lightning"), "torch": ("torch",), "torchmetrics": ("torchmetrics",)}
#: A placeholder of a wording: a version (:data:`PLACEHOLDERS`) or a value the evidence compares (``{error_type}``,
#: ``{received.len}``, ``{hook_calls#2}``: the second evidence's).
PLACEHOLDER = re.compile(r"\{([\w.]+)(?:#(\d+))?\}")
ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
#: File name, in the build's doctree directory, of the rendered wordings the notebooks' pandoc filter reads.
NOTEBOOK_TEXTS = "claims-notebook.tsv"
#: Words that quantify over configurations: a wording holding one (not followed by a noun of one run,
#: :data:`WITHIN_RUN`) needs evidence of several runs.
UNIVERSAL = re.compile(r"\b(?:every|always|never|any|whatever|whichever)\b", re.I)
#: Nouns that a run itself enumerates ("every batch", "any other key"): quantifying over them needs no other run.
WITHIN_RUN = re.compile(
    r"^(?:\W*\w+\W+){0,2}?\W*(?:batch|batches|step|steps|epoch|epochs|sample|samples|prediction|predictions|entry|"
    r"entries|loader|loaders|dataloader|dataloaders|rank|ranks|validation|key|keys|element|elements|tensor|tensors|"
    r"dictionary|dictionaries)\b",
    re.I,
)
#: An exception's class name typed in a wording.
ERROR_NAME = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b")


class ClaimsError(ValueError):
    """The claims file is malformed; the message names the file, the line and the cause."""


class NoConfiguration(LookupError):
    """A piece of evidence recorded no configuration to compare with its claim's scope; the message says why."""


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence: its kind (:data:`KINDS`), what it names (a page, a pattern, a release, a recipe, a
    ``Trainer`` attribute) and the other fields of its table. Each kind is one subclass (:data:`IMPLEMENTATIONS`)."""

    kind: str
    target: str
    fields: dict[str, Any]
    #: The project's root, where a page's path starts (the folder above the claims file's ``data/``).
    root: Path = Path(".")

    def describe(self) -> str:
        """One line of plain text: what this evidence is."""
        raise NotImplementedError

    def check(self, sources: Sources, ran: Any) -> str | None:
        """Why the evidence does not hold in this build (``None``: it holds)."""
        raise NotImplementedError

    def runs(self) -> set[str]:
        """The distinct runs this evidence rests on (a page, a probe of a pattern, a cell, a recorded run)."""
        raise NotImplementedError

    def releases(self) -> list[str]:
        """The recorded releases it ran on (empty for this build's installed release or a cited fact)."""
        return []

    def files(self) -> list[Path]:
        """The project's files its check and its printed values read (a page, a release's record): a page that
        prints the claim depends on them, so a change of one re-reads the page and re-checks the claim."""
        return []

    def values(self) -> dict[str, Any]:
        """The values it compares with its record, each a ``{name}`` a wording may print."""
        return dict(self.fields.get("fields", {}))

    def bounds(self) -> dict[str, tuple[str, Any]]:
        """The bounds it checks (``{name: (operator, number)}``: an assert's ``ratio >= 100``), each a ``{name}`` a
        wording may print only after the words of its inequality (:data:`BOUND_WORDS`)."""
        return {}

    def configurations(self, sources: Sources) -> list[dict[str, Any]] | None:
        """The configuration of each run it rests on (:mod:`migration_guide.run_configurations`: one value per
        axis, with ``release`` and ``run``, what names the run); ``None`` for a cited fact, which ran in none.

        Raises:
            NoConfiguration: the evidence recorded none (the message says why).
        """
        raise NotImplementedError

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Raise :class:`ClaimsError` for a malformed table of this kind."""


#: Every kind of evidence with the class that implements it.
IMPLEMENTATIONS: dict[str, type[Evidence]] = {}


def implements(kind: str) -> Any:
    """Class decorator: the class implements the evidence kind ``kind`` of the schema."""

    def register(cls: type[Evidence]) -> type[Evidence]:
        IMPLEMENTATIONS[kind] = cls
        return cls

    return register


def _values_described(f: dict[str, Any]) -> str:
    return ", ".join(f"{name} = {value!r}" for name, value in f.get("fields", {}).items())


@implements("assert")
class AssertEvidence(Evidence):
    """A top-level ``assert`` of an executed page with this message (see the module docstring)."""

    def describe(self) -> str:
        return f'the assert "{self.fields["message"]}" of {self.target}'

    def check(self, sources: Sources, ran: Any) -> str | None:
        path = sources.root / self.target
        if not path.is_file():
            return f"{self.target} does not exist"
        if self.fields["message"] not in page_assert_messages(path):
            return f'{self.target} has no top-level assert with the message "{self.fields["message"]}"'
        return ran(self.target)

    def runs(self) -> set[str]:
        return {f"page {self.target}"}

    def files(self) -> list[Path]:
        return [self.root / self.target]

    def values(self) -> dict[str, Any]:
        """The numbers the assert compares a variable of the page with (``assert loss_bytes == 512, ...``: ``{
        "loss_bytes": 512}``): the value the page computed, as its run checked it, which a wording prints as
        ``{loss_bytes}`` (:func:`assert_values`)."""
        path = self.root / self.target
        return assert_values(path, self.fields["message"]) if path.is_file() else {}

    def bounds(self) -> dict[str, tuple[str, Any]]:
        """The bounds the assert puts on a variable of the page (``assert ratio >= 100, ...``: ``{"ratio": (">=",
        100)}``, :func:`assert_bounds`): a wording prints ``at least {ratio}``, never ``{ratio}`` as its value."""
        path = self.root / self.target
        return assert_bounds(path, self.fields["message"]) if path.is_file() else {}

    def configurations(self, sources: Sources) -> list[dict[str, Any]] | None:
        """The page's runs that started before its assert (the assert's verdict rests on them), as the page
        recorded them while it ran; a page that ran no ``Trainer`` before the assert ran in its own one process."""
        recorded = sources.page_runs(self.target)
        if recorded is None:
            raise NoConfiguration(
                f"{self.target} recorded no run configuration in this build (it did not run since the recorder "
                "existed: build with CI=true)"
            )
        line = page_assert_lines(sources.root / self.target).get(self.fields["message"], 0)
        before = [run for run in recorded if run["line"] < line]
        release = sources.versions["lightning"]
        if not before:
            return [{"processes": 1, "release": release, "run": f"{self.target} (no Trainer)"}]
        return [{**run, "release": release, "run": f"{self.target}:{run['line']} {run['stage']}"} for run in before]


@implements("probe")
class ProbeEvidence(Evidence):
    """A field of this build's probe record of one or several patterns."""

    def describe(self) -> str:
        return f"the recorded runs of {self.target} on the installed Lightning ({_values_described(self.fields)})"

    def check(self, sources: Sources, ran: Any) -> str | None:
        return _compare_all(sources.probes()["records"], self.target, self.fields["fields"], "probe {pattern}")

    def runs(self) -> set[str]:
        return {f"probe {pattern}" for pattern in self.target.split()}

    def configurations(self, sources: Sources) -> list[dict[str, Any]] | None:
        found = []
        for pattern in self.target.split():
            record = _record(sources.probes()["records"], pattern)
            if "configuration" not in record:
                raise NoConfiguration(f"the probe record of {pattern} holds no configuration")
            found.append(
                {**record["configuration"], "release": sources.versions["lightning"], "run": f"probe {pattern}"}
            )
        return found


@implements("recorded")
class RecordedEvidence(Evidence):
    """A field of a recorded run of a release (``data/compat/<release>.json``)."""

    def describe(self) -> str:
        section = self.fields.get("section", "probes")
        return (
            f"the recorded run of {self.target} ({section} {self.fields['pattern']}: {_values_described(self.fields)})"
        )

    def check(self, sources: Sources, ran: Any) -> str | None:
        document = sources.recorded(self.target)
        section = self.fields.get("section", "probes")
        records = document["probes"]["records"] if section == "probes" else document[section]
        what = f"data/compat/{self.target}.json {section} {{pattern}}"
        return _compare_all(records, self.fields["pattern"], self.fields["fields"], what)

    def runs(self) -> set[str]:
        return {f"{self.target} {pattern}" for pattern in self.fields["pattern"].split()}

    def releases(self) -> list[str]:
        return [self.target]

    def torch(self) -> str | None:
        """The torch the recorded release ran with (its record's ``probes.torch``): an old release runs here with the
        build's torch, which its marker names."""
        return _recorded_torch(self.files()[0])

    def files(self) -> list[Path]:
        return [self.root / "data" / "compat" / f"{self.target}.json"]

    def configurations(self, sources: Sources) -> list[dict[str, Any]] | None:
        document = sources.recorded(self.target)
        section = self.fields.get("section", "probes")
        records = document["probes"]["records"] if section == "probes" else document[section]
        return [
            {
                **recorded_configuration(section, pattern, _record(records, pattern), self.fields["fields"]),
                "release": self.target,
                "run": f"{self.target} {section} {pattern}",
            }
            for pattern in self.fields["pattern"].split()
        ]


@implements("matrix")
class MatrixEvidence(Evidence):
    """Cells of this build's scenario matrix."""

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        if not (fields["scenarios"] == "all" or isinstance(fields["scenarios"], list)):
            raise ClaimsError(f'{where}: matrix evidence: scenarios is "all" or a list of scenario ids')

    def describe(self) -> str:
        which = "every scenario" if self.fields["scenarios"] == "all" else ", ".join(self.fields["scenarios"])
        return f"recipe runs: {self.target} {self.fields.get('outcome', 'holds')} in {which}"

    def check(self, sources: Sources, ran: Any) -> str | None:
        outcomes = sources.matrix()
        cells = {s: o for (r, s), o in outcomes.items() if r == self.target and o != "not applicable"}
        if not cells:
            return f"the scenario matrix has no cell of recipe {self.target!r}"
        wanted = cells if self.fields["scenarios"] == "all" else self.fields["scenarios"]
        outcome = self.fields.get("outcome", "holds")
        failing = [f"{s}: {cells.get(s, 'no such cell')}" for s in wanted if cells.get(s) != outcome]
        return f"{self.target} is not '{outcome}' in: {'; '.join(failing)}" if failing else None

    def runs(self) -> set[str]:
        if self.fields["scenarios"] == "all":
            return {f"matrix {self.target} every scenario", f"matrix {self.target} (all)"}
        return {f"matrix {self.target} {scenario}" for scenario in self.fields["scenarios"]}

    def values(self) -> dict[str, Any]:
        scenarios = self.fields["scenarios"]
        return {"scenarios": len(scenarios)} if isinstance(scenarios, list) else {}

    def configurations(self, sources: Sources) -> list[dict[str, Any]] | None:
        from migration_guide import run_configurations

        space = sources.space()
        named = {scenario.id: scenario for scenario in space.scenarios}
        wanted = self.fields["scenarios"]
        if wanted == "all":
            wanted = sorted({s for (r, s), o in sources.matrix().items() if r == self.target and o != "not applicable"})
        release = sources.versions["lightning"]
        return [
            {**run, "release": release, "run": f"matrix {self.target} {sid} {run['stage']}"}
            for sid in wanted
            if sid in named
            for run in run_configurations.scenario_configurations(named[sid])
        ]


@implements("cell")
class CellEvidence(Evidence):
    """A cell the matrix leaves out, run by this build with the matrix's harness."""

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        if ("values" in fields) == ("scenario" in fields):
            raise ClaimsError(
                f"{where}: cell evidence names values = {{ axis = value, ... }} or a scenario, one of them"
            )
        if fields["outcome"] not in ("holds", "differs", "raises"):
            raise ClaimsError(f'{where}: cell evidence: outcome is "holds", "differs" or "raises"')

    def key(self) -> str:
        from migration_guide.claim_cells import cell_key

        return cell_key({"recipe": self.target, **self.fields})

    def describe(self) -> str:
        return f"a run of {self.key()} by the matrix's harness: {self.fields['outcome']}"

    def check(self, sources: Sources, ran: Any) -> str | None:
        f, key = self.fields, self.key()
        result = sources.cells().get(key)
        if result is None:
            return f"the cell {key} did not run in this build"
        if result["outcome"] != f["outcome"]:
            return f"the cell {key} {result['outcome']} ({result['detail']}); the claim needs {f['outcome']!r}"
        if "error_type" in f and error_type(result["detail"]) != f["error_type"]:
            return f"the cell {key} raised {error_type(result['detail'])!r}, the claim needs {f['error_type']!r}"
        if "match" in f:
            if f["match"] not in result["detail"]:
                return f"the cell {key}'s detail does not contain {f['match']!r}: {result['detail']}"
            others = sorted({m for m in sources.messages() if f["match"] in m and m != result["detail"]})
            if others:
                return (
                    f"the cell {key}'s match {f['match']!r} does not identify its error: {len(others)} other recorded "
                    f"message(s) contain it too, e.g. {others[0][:120]!r}"
                )
        if "warns" in f and not any(f["warns"] in w["message"] for w in result["warnings"]):
            seen = "; ".join(w["message"] for w in result["warnings"]) or "none"
            return f"the cell {key} emitted no warning containing {f['warns']!r} (its warnings: {seen})"
        return None

    def runs(self) -> set[str]:
        return {f"cell {self.key()}"}

    def configurations(self, sources: Sources) -> list[dict[str, Any]] | None:
        from migration_guide import run_configurations

        space = sources.space()
        if "scenario" in self.fields:
            scenario = next(s for s in space.scenarios if s.id == self.fields["scenario"])
        else:
            scenario = space.scenario("claim-cell", dict(self.fields["values"]))
        release = sources.versions["lightning"]
        return [
            {**run, "release": release, "run": f"cell {self.key()} {run['stage']}"}
            for run in run_configurations.scenario_configurations(scenario)
        ]

    def values(self) -> dict[str, Any]:
        return {name: self.fields[name] for name in ("outcome", "error_type", "match") if name in self.fields}


#: The exception class at the start of a cell's detail ("RuntimeError: ...", "in a DDP worker: lightning.fabric.
#: utilities.exceptions.MisconfigurationException: ...").
_DETAIL_ERROR = re.compile(r"^(?:in an? [^:]*: )?(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*): ")


def error_type(detail: str) -> str | None:
    """The class name of the exception a cell's detail starts with (``None``: the detail names none)."""
    match = _DETAIL_ERROR.match(detail)
    return match[1] if match else None


@implements("changelog")
class ChangelogEvidence(Evidence):
    """A release fact of the registry, which cites Lightning's CHANGELOG."""

    def describe(self) -> str:
        return f"Lightning's CHANGELOG, as the registry cites it ({self.target}: {_values_described(self.fields)})"

    def check(self, sources: Sources, ran: Any) -> str | None:
        from lightning_migrate import registry

        problems = [
            _compare(getattr(registry.get(pattern), name), value, f"registry {pattern}: {name}")
            for pattern in self.target.split()
            for name, value in self.fields["fields"].items()
        ]
        return "; ".join(p for p in problems if p) or None

    def runs(self) -> set[str]:
        return set()  # a cited fact, no run

    def configurations(self, sources: Sources) -> list[dict[str, Any]] | None:
        return None  # a cited fact ran in no configuration

    def releases(self) -> list[str]:
        return [str(v) for k, v in self.fields["fields"].items() if k in ("deprecated_in", "removed_in") and v]


@implements("default")
class DefaultEvidence(Evidence):
    """What a ``Trainer()`` of the installed release holds (the probes record it: ``trainer_defaults``)."""

    def describe(self) -> str:
        return f"a Trainer() of the installed Lightning: {self.target} = {self.fields['equals']!r}"

    def check(self, sources: Sources, ran: Any) -> str | None:
        defaults = sources.probes().get("trainer_defaults", {})
        if self.target not in defaults:
            return f"the probes recorded no Trainer default {self.target!r}"
        return _compare(defaults[self.target], self.fields["equals"], f"Trainer() default {self.target}")

    def runs(self) -> set[str]:
        return {"Trainer()"}

    def configurations(self, sources: Sources) -> list[dict[str, Any]] | None:
        # the probes read a Trainer() built with every default: one process, as this build's probe records say
        defaults = sources.probes().get("trainer_defaults", {})
        return [
            {
                "processes": 1,
                "accumulate_grad_batches": defaults.get("accumulate_grad_batches", 1),
                "release": sources.versions["lightning"],
                "run": "Trainer()",
            }
        ]

    def values(self) -> dict[str, Any]:
        return {self.target: self.fields["equals"]}


@dataclass(frozen=True)
class Claim:
    """One claim of the claims file (see the module docstring)."""

    id: str
    text: str
    checked: str
    general: bool
    evidence: tuple[Evidence, ...]
    line: int = 0
    scope: dict[str, Any] = field(default_factory=dict)
    #: the library whose behaviour it states, when not Lightning's (``claim_schema.ABOUT``)
    about: str | None = None

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.kind for e in self.evidence))

    @property
    def on_build(self) -> bool:
        """Whether some of its evidence ran on this build's installed packages."""
        return any(claim_schema.EVIDENCE_KINDS[e.kind].on_build for e in self.evidence)

    def runs(self) -> set[str]:
        return {run for e in self.evidence for run in e.runs()}

    def releases(self, versions: dict[str, str]) -> list[str]:
        """The releases its evidence ran on: the recorded ones, then this build's Lightning."""
        found = [r for e in self.evidence if e.kind == "recorded" for r in e.releases()]
        if self.on_build:
            found.append(versions["lightning"])
        return sorted(dict.fromkeys(found), key=_release_order)

    def marker(self, versions: dict[str, str]) -> str:
        """The small marker a page prints beside the wording: releases, the torch a recorded release ran with, then
        the configuration."""
        if all(e.kind == "changelog" for e in self.evidence):
            return "Lightning's changelog"
        words = [f"Lightning {', '.join(self.releases(versions))}"] if self.releases(versions) else []
        torches = sorted({t for e in self.evidence if isinstance(e, RecordedEvidence) and (t := e.torch())})
        if self.about == "torch" and self.on_build:
            torches = sorted({*torches, versions["torch"]})  # a torch fact: the torch it ran on
        words += [f"torch {', '.join(torches)}"] if torches else []  # the 1.x releases ran with this torch
        if self.about not in (None, "torch") and self.on_build:
            words.append(f"{self.about} {versions[self.about]}")
        words += ["every scenario"] if self.general else claim_schema.scope_words(self.scope)
        return " · ".join(words)


def _recorded_torch(path: Path) -> str | None:
    """The record's ``probes.torch``, or ``None`` for a record without one (read once per version of the file)."""
    return _torch_of(path, path.stat().st_mtime_ns)


@functools.cache
def _torch_of(path: Path, mtime_ns: int) -> str | None:
    torch = json.loads(path.read_text(encoding="utf-8")).get("probes", {}).get("torch")
    return None if torch is None else str(torch)


def _release_order(release: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in release.split("."))


def _line_of(text: str, claim_id: str) -> int:
    """The line of ``[claim.<id>]`` in the TOML text (1-based; 0 when not found)."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() in (f"[claim.{claim_id}]", f'[claim."{claim_id}"]'):
            return number
    return 0


def _evidence(path: Path, line: int, claim_id: str, table: Any) -> Evidence:
    where = f"{path}:{line}: claim {claim_id}"
    if not isinstance(table, dict) or not table:
        raise ClaimsError(f"{where}: each evidence is a table such as {{ assert = ..., message = ... }}")
    kinds = claim_schema.kind_of(table)
    if len(kinds) != 1:
        hint = "".join(claim_schema.did_you_mean(key, KINDS) for key in table if key not in KINDS)[:80]
        raise ClaimsError(f"{where}: an evidence names exactly one of {', '.join(KINDS)}; got {sorted(table)}{hint}")
    kind = kinds[0]
    spec = claim_schema.EVIDENCE_KINDS[kind]
    unknown = claim_schema.unknown_keys(table, spec.keys)
    if unknown:
        raise ClaimsError(f"{where}: {kind} evidence: unknown key {', '.join(unknown)}")
    required = spec.required
    if "fields" in spec.optional and "fields" in table:
        if not isinstance(table["fields"], dict) or not table["fields"] or set(claim_schema.FIELDS_KEYS) & set(table):
            raise ClaimsError(f"{where}: fields is a table of field = value, instead of field and equals")
        required = tuple(name for name in required if name not in claim_schema.FIELDS_KEYS)
    missing = [name for name in required if name not in table]
    if missing:
        raise ClaimsError(f"{where}: {kind} evidence needs {', '.join(missing)}")
    fields = {key: value for key, value in table.items() if key != kind}
    if "fields" in spec.optional and "fields" not in fields:
        fields["fields"] = {fields.pop("field"): fields.pop("equals")}
    implementation = IMPLEMENTATIONS[kind]
    implementation.validate(fields, where)
    target = table[kind]
    if spec.patterns and isinstance(target, list):
        target = " ".join(map(str, target))
    if kind == "recorded" and isinstance(fields["pattern"], list):
        fields["pattern"] = " ".join(map(str, fields["pattern"]))
    return implementation(kind, str(target), fields, path.resolve().parent.parent)


def evidence_values(claim_data: Claim | tuple[Evidence, ...]) -> dict[str, list[tuple[int, Any]]]:
    """``{name: [(evidence number, value), ...]}``: the values the evidence compares, each a ``{name}`` a wording
    may print (numbered from 1 in the claim's order)."""
    evidence = claim_data.evidence if isinstance(claim_data, Claim) else claim_data
    found: dict[str, list[tuple[int, Any]]] = {}
    for number, item in enumerate(evidence, 1):
        for name, value in item.values().items():
            found.setdefault(name, []).append((number, value))
    return found


def evidence_bounds(claim_data: Claim | tuple[Evidence, ...]) -> dict[str, list[tuple[int, tuple[str, Any]]]]:
    """``{name: [(evidence number, (operator, number)), ...]}``: the bounds the evidence checks (an assert's
    ``ratio >= 100``), each a ``{name}`` a wording may print only after the words of its inequality."""
    evidence = claim_data.evidence if isinstance(claim_data, Claim) else claim_data
    found: dict[str, list[tuple[int, tuple[str, Any]]]] = {}
    for number, item in enumerate(evidence, 1):
        for name, bound in item.bounds().items():
            found.setdefault(name, []).append((number, bound))
    return found


def _bound_problem(name: str, text_before: str, bounds: list[tuple[int, tuple[str, Any]]]) -> str | None:
    """Why a ``{name}`` whose value an inequality bounds may not stand after ``text_before`` (``None``: the words
    before it say that inequality, :data:`BOUND_WORDS`)."""
    before = " ".join(re.sub(r"[`*]", "", text_before).lower().split())
    for _, (operator, number) in bounds:
        if not before.endswith(BOUND_WORDS[operator]):
            return (
                f"{{{name}}}: the assert bounds it ({name} {operator} {_format_value(number)}), it does not give its "
                f"value: write '{BOUND_WORDS[operator][0]} {{{name}}}', or assert {name} == the value the page "
                "measured"
            )
    return None


def _value_of(name: str, number: str | None, values: dict[str, list[tuple[int, Any]]], where: str) -> Any:
    if name not in values:
        known = ", ".join(sorted(values)) or "none"
        raise ClaimsError(
            f"{where}: unknown placeholder {{{name}}}{claim_schema.did_you_mean(name, [*PLACEHOLDERS, *values])}; "
            f"versions: {', '.join(PLACEHOLDERS)}; values its evidence compares: {known}"
        )
    candidates = values[name] if number is None else [(n, v) for n, v in values[name] if n == int(number)]
    distinct = {json.dumps(v, sort_keys=True, default=str) for _, v in candidates}
    if not candidates:
        raise ClaimsError(f"{where}: {{{name}#{number}}}: evidence {number} compares no {name}")
    if len(distinct) > 1:
        numbers = ", ".join(f"{{{name}#{n}}}" for n, _ in candidates)
        raise ClaimsError(f"{where}: {{{name}}} has several values in its evidence: name one of {numbers}")
    return candidates[0][1]


def _bound_values(bounds: dict[str, list[tuple[int, tuple[str, Any]]]]) -> dict[str, list[tuple[int, Any]]]:
    """The numbers of :func:`evidence_bounds`, as :func:`evidence_values` gives values."""
    return {name: [(n, bound[1]) for n, bound in pairs] for name, pairs in bounds.items()}


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 1000:
        return f"{value:,}"
    return str(value)


def _outside_placeholders(text: str) -> str:
    return PLACEHOLDER.sub(" ", text)


def _check_wording(where: str, text: str, evidence: tuple[Evidence, ...], legacy: bool) -> None:
    """The rules that bind a wording to its evidence (see the module docstring)."""
    values, bounds = evidence_values(evidence), evidence_bounds(evidence)
    for match in PLACEHOLDER.finditer(text):
        if match[1] in bounds and match[1] not in values:
            problem = _bound_problem(match[1], text[: match.start()], bounds[match[1]])
            if problem:
                raise ClaimsError(f"{where}: {problem}")
            _value_of(match[1], match[2], _bound_values(bounds), where)
        elif match[1] not in PLACEHOLDERS or match[2]:
            _value_of(match[1], match[2], values, where)
    plain = _outside_placeholders(text)
    asserted = " ".join(e.fields["message"] for e in evidence if e.kind == "assert")
    for name in sorted(set(ERROR_NAME.findall(plain))):
        recorded = [n for n, vs in values.items() if any(v == name for _, v in vs)]
        if recorded:
            raise ClaimsError(f"{where}: the wording types {name}, which its evidence records: write {{{recorded[0]}}}")
        if not re.search(rf"\b{name}\b", asserted):
            raise ClaimsError(
                f"{where}: the wording names {name}, which none of its evidence checks (a recorded error_type, "
                "a cell's error_type, or an assert whose message names it)"
            )
    for name, pairs in {**_bound_values(bounds), **values}.items():
        for _, value in pairs:
            if isinstance(value, bool) or not isinstance(value, int) or abs(value) < 2:
                continue
            if re.search(rf"(?<![\w.,]){value:,}(?![\w]|[.,]\d)|(?<![\w.,]){value}(?![\w]|[.,]\d)", plain):
                raise ClaimsError(
                    f"{where}: the wording types the number {value}, which its evidence compares: write {{{name}}}"
                )


def load_claims(path: Path) -> dict[str, Claim]:
    """Read and check the claims file.

    Returns:
        ``{id: Claim}`` in file order.

    Raises:
        ClaimsError: naming the file, the claim's line and the cause: a malformed table or an unknown key (with the
            closest known one), an unknown evidence kind, a wording that does not follow its evidence (a typed
            error name or number its evidence records, an unknown placeholder), a claim without a configuration, a
            claim that quantifies over configurations on the evidence of one run, a ``general`` claim whose
            evidence does not cover every scenario.
    """
    try:
        text = path.read_text(encoding="utf-8")
        document = tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ClaimsError(f"{path}: {error}") from None
    unknown_top = claim_schema.unknown_keys(document, ("claim",))
    if unknown_top:
        raise ClaimsError(f"{path}: unknown table {', '.join(unknown_top)}: claims are [claim.<id>] tables")
    claims: dict[str, Claim] = {}
    for claim_id, table in document.get("claim", {}).items():
        line = _line_of(text, claim_id)
        where = f"{path}:{line}: claim {claim_id}"
        if not ID.match(claim_id):
            raise ClaimsError(f"{where}: an id is lower-case words joined by '-'")
        unknown = claim_schema.unknown_keys(table, claim_schema.CLAIM_KEYS)
        if unknown:
            raise ClaimsError(f"{where}: unknown key {', '.join(unknown)}")
        wording = table.get("text", "")
        if not isinstance(wording, str) or not wording.strip():
            raise ClaimsError(f"{where}: no text")
        evidence = tuple(_evidence(path, line, claim_id, item) for item in table.get("evidence", ()))
        if not evidence:
            raise ClaimsError(f"{where}: no evidence")
        general = bool(table.get("general", False))
        checked = str(table.get("checked", ""))
        changelog_only = all(e.kind == "changelog" for e in evidence)
        if "scope" in table and "checked" in table:
            raise ClaimsError(f"{where}: scope and checked say the same: keep scope")
        scope = table.get("scope", {})
        problems = claim_schema.scope_problems(scope)
        if problems:
            raise ClaimsError(f"{where}: {'; '.join(problems)}")
        legacy = "checked" in table
        on_build = any(claim_schema.EVIDENCE_KINDS[e.kind].on_build for e in evidence)
        if legacy:
            if checked not in claim_schema.LEGACY_CHECKED:
                raise ClaimsError(
                    f"{where}: checked {checked!r} is not a phrase the loader knows: write the configuration as "
                    f"scope = {{ axis = value }} (axes: {', '.join(claim_schema.SCOPE_AXES)})"
                )
            if checked.lower() not in wording.lower():
                raise ClaimsError(f"{where}: the wording names its configuration: {checked!r} is not in its text")
            scope = dict(claim_schema.LEGACY_CHECKED[checked])
            if on_build and not any(f"{{{p}}}" in wording for p in PLACEHOLDERS):
                raise ClaimsError(
                    f"{where}: its evidence ran on this build's release: the wording names it "
                    "({lightning}, {torch} or {torchmetrics})"
                )
            for item in evidence:
                release = next((r for r in item.releases() if str(r) not in wording), None)
                if item.kind == "recorded" and release is not None:
                    raise ClaimsError(f"{where}: the wording names the release of its recorded evidence, {release}")
        if changelog_only:
            for item in evidence:
                release = next((r for r in item.releases() if str(r) not in wording), None)
                if release is not None:
                    raise ClaimsError(f"{where}: the wording names the release of its changelog evidence, {release}")
        _check_wording(where, wording, evidence, legacy)
        about = table.get("about")
        if about is not None and about not in claim_schema.ABOUT:
            raise ClaimsError(f"{where}: about {about!r} is none of {', '.join(claim_schema.ABOUT)}")
        claim_data = Claim(claim_id, wording, checked, general, evidence, line, scope, about)
        if general:
            if not all(
                e.kind == "matrix" and e.fields["scenarios"] == "all" and "outcome" not in e.fields for e in evidence
            ):
                raise ClaimsError(
                    f"{where}: a general claim's evidence covers every scenario: matrix evidence with scenarios = "
                    '"all" only'
                )
        elif changelog_only:
            pass  # a release fact of the changelog ran in no configuration
        elif not scope:
            raise ClaimsError(
                f"{where}: no configuration: scope = {{ axis = value }} names what the evidence ran in "
                f"(axes: {', '.join(claim_schema.SCOPE_AXES)}), or general = true for every scenario of the matrix"
            )
        if not changelog_only and not general:
            universal = _universal_words(wording)
            if universal and len(claim_data.runs()) < 2:
                raise ClaimsError(
                    f"{where}: the wording says {universal[0]!r} of the configurations it covers, on the evidence of "
                    f"one run ({', '.join(sorted(claim_data.runs()))}): narrow it to what that run shows, or add "
                    "evidence of the other configurations (matrix cells, several probes or recorded runs)"
                )
        claims[claim_id] = claim_data
    return claims


def _universal_words(text: str) -> list[str]:
    """The words of ``text`` that quantify over configurations (:data:`UNIVERSAL` not followed by a noun of one run,
    or followed by an axis's values, :func:`_quantified_axes`)."""
    axes = {word for word, _ in _quantified_axes(text)}
    plain = re.sub(r"``[^`]*``", " code ", _outside_placeholders(text))
    return [m[0] for m in UNIVERSAL.finditer(plain) if m[0] in axes or not WITHIN_RUN.match(plain[m.end() :])]


def _quantified_axes(text: str) -> list[tuple[str, str]]:
    """``(word, axis)`` for each quantifier of ``text`` that ranges over an axis's values (:data:`QUANTIFIED_AXES`:
    "any number of dataloaders", "any required ``dataloader_idx``")."""
    plain = _outside_placeholders(text)
    return [
        (m[0], axis)
        for m in UNIVERSAL.finditer(plain)
        for axis, phrase in QUANTIFIED_AXES.items()
        if phrase.match(plain[m.end() :])
    ]


def installed_versions() -> dict[str, str]:
    """The version of each placeholder's distribution (:data:`PLACEHOLDERS`), without importing it."""
    return dict(_installed_versions())


@functools.cache
def _installed_versions() -> dict[str, str]:
    """:func:`installed_versions`, read once per process: each claim directive asks for it (470 times in a build,
    each reading every placeholder distribution's metadata), and the installed packages do not change during a
    build."""
    found = {}
    for name, distributions in PLACEHOLDERS.items():
        for distribution in distributions:
            try:
                found[name] = metadata.version(distribution).split("+")[0]
                break
            except metadata.PackageNotFoundError:
                continue
        else:
            found[name] = f"(no {distributions[0]} installed)"
    return found


def render_text(claim: Claim, versions: dict[str, str]) -> str:
    """The claim's wording with its placeholders replaced: versions by ``versions``, the other ``{name}`` by the
    value its evidence compares with the record (which the build checks: a record that says otherwise fails it)."""
    values = evidence_values(claim)
    bounded = _bound_values(evidence_bounds(claim))

    def fill(match: re.Match[str]) -> str:
        if match[1] in PLACEHOLDERS and not match[2]:
            return versions[match[1]]
        known = values if match[1] in values else bounded  # a bound: the loader checked the words before it
        return _format_value(_value_of(match[1], match[2], known, f"claim {claim.id}"))

    return PLACEHOLDER.sub(fill, claim.text)


# -- Evidence -------------------------------------------------------------------------------------------------------
def top_level_assert_messages(source: str, filename: str) -> set[str]:
    """The messages (string constants) of the ``assert`` statements at the top level of ``source``.

    Raises:
        SyntaxError: ``source`` does not parse.
    """
    tree = ast.parse(source, filename=filename)
    return {
        statement.msg.value
        for statement in tree.body
        if isinstance(statement, ast.Assert)
        and isinstance(statement.msg, ast.Constant)
        and isinstance(statement.msg.value, str)
    }


CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.M | re.S)


def page_assert_messages(path: Path) -> set[str]:
    """Top-level assert messages of a gallery script, or of every code cell of a MyST notebook (``.md``)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return top_level_assert_messages(text, str(path))
    messages: set[str] = set()
    for cell in CODE_CELL.finditer(text):
        body = "\n".join(line for line in cell[1].splitlines() if not line.startswith(("%", "!")))
        messages |= top_level_assert_messages(body, str(path))
    return messages


_ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
               ast.FloorDiv: lambda a, b: a // b, ast.Pow: lambda a, b: a**b}  # fmt: skip


def _number(node: ast.expr, constants: dict[str, int | float]) -> int | float | None:
    """The value of a number literal, a page constant (a top-level ``BATCH = 64``) or arithmetic of them
    (``BATCH * CLASSES * 4 + 4``); ``None`` for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand, constants)
        return None if inner is None else -inner
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _number(node.left, constants), _number(node.right, constants)
        return None if left is None or right is None else _ARITHMETIC[type(node.op)](left, right)
    return None


def _page_constants(tree: ast.Module) -> dict[str, int | float]:
    """The page's number constants: names assigned once, at the top level, a number or arithmetic of numbers."""
    constants: dict[str, int | float] = {}
    assigned: dict[str, int] = {}
    for node in ast.walk(tree):
        for target in getattr(node, "targets", []) + [getattr(node, "target", None)]:
            for name in ast.walk(target) if target is not None else ():
                if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                    assigned[name.id] = assigned.get(name.id, 0) + 1
    for statement in tree.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        target, value = statement.targets[0], statement.value
        pairs = [(target, value)]
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            pairs = list(zip(target.elts, value.elts, strict=True))  # FEATURES, CLASSES, BATCH = 32, 10, 64
        for name, expression in pairs:
            number = _number(expression, constants)
            if isinstance(name, ast.Name) and assigned.get(name.id) == 1 and number is not None:
                constants[name.id] = number
    return constants


#: The comparisons an assert's test may bound a value with, each with its operator read with the name on the left
#: (``100 <= ratio`` is ``ratio >= 100``).
_BOUNDS = {ast.GtE: (">=", "<="), ast.Gt: (">", "<"), ast.LtE: ("<=", ">="), ast.Lt: ("<", ">")}
#: The words a wording puts before a placeholder whose value an inequality bounds: the inequality itself.
BOUND_WORDS = {
    ">=": ("at least", "no less than", "no fewer than", "not less than", "not fewer than"),
    ">": ("more than", "over", "above", "greater than", "larger than"),
    "<=": ("at most", "no more than", "not more than", "up to"),
    "<": ("less than", "fewer than", "under", "below", "smaller than"),
}


def _isclose(test: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    """The two compared arguments of an ``isclose`` call (``math.isclose(x, 0.5, rel_tol=...)``,
    ``torch.isclose``, ``numpy.isclose``: an equality to a tolerance); ``None`` for anything else."""
    if not (isinstance(test, ast.Call) and len(test.args) >= 2):
        return None
    name = test.func.attr if isinstance(test.func, ast.Attribute) else getattr(test.func, "id", "")
    return (test.args[0], test.args[1]) if name == "isclose" else None


def assert_comparisons(path: Path, message: str) -> dict[str, tuple[str, int | float]]:
    """``{name: (operator, number)}``: each comparison, in the test of the top-level assert of ``path`` with
    ``message`` (and the operands of an ``and``), of a name with a number -- a literal, a page constant or arithmetic
    of them. ``==`` and an ``isclose`` call (``math.isclose(share, 0.5)``) give ``"=="``: the value the run computed;
    ``>=``, ``>``, ``<=``, ``<`` give that operator, read with the name on the left: a bound the value met. ``!=``,
    ``in``, ``is`` and the rest give nothing: they say what the value is not. ``trainer.global_step == 4`` names
    ``trainer.global_step``; ``rows == [11, 10]`` names ``rows.0`` and ``rows.1``.

    Raises:
        ClaimsError: a name given two different values (``size == 2564 and size == 2565``), or a value and a bound."""
    return dict(_assert_comparisons(path.read_text(encoding="utf-8"), path, message))


@functools.lru_cache(maxsize=256)
def _assert_comparisons(text: str, path: Path, message: str) -> dict[str, tuple[str, int | float]]:
    """:func:`assert_comparisons` of a page's ``text``, parsed once per text and message: the claims ask for each
    asserted page's values and bounds once per claim and wording (1,626 parses in a build before)."""
    tree = ast.parse(text, filename=str(path))
    constants = _page_constants(tree)
    tests = [
        s.test
        for s in tree.body
        if isinstance(s, ast.Assert) and isinstance(s.msg, ast.Constant) and s.msg.value == message
    ]
    found: dict[str, tuple[str, int | float]] = {}
    while tests:
        test = tests.pop()
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            tests += test.values
            continue
        pairs: list[tuple[ast.expr, ast.expr, str, str]] = []
        close = _isclose(test)
        if close is not None:
            pairs.append((*close, "==", "=="))
        elif isinstance(test, ast.Compare):
            operands = [test.left, *test.comparators]
            for op, left, right in zip(test.ops, operands, operands[1:], strict=False):
                if isinstance(op, ast.Eq):
                    pairs.append((left, right, "==", "=="))
                elif type(op) in _BOUNDS:
                    pairs.append((left, right, *_BOUNDS[type(op)]))
        for left, right, as_left, as_right in pairs:
            for name, other, operator in ((left, right, as_left), (right, left, as_right)):
                dotted = _dotted(name)
                if dotted is None or dotted in constants:
                    continue
                numbers = {dotted: _number(other, constants)}
                if isinstance(other, ast.List | ast.Tuple):  # rows == [11, 10]: {rows.0}, {rows.1}
                    numbers = {f"{dotted}.{i}": _number(item, constants) for i, item in enumerate(other.elts)}
                for key, number in numbers.items():
                    if number is None:
                        continue
                    if found.get(key, (operator, number)) != (operator, number):
                        raise ClaimsError(f"{path}: the assert {message!r} compares {key} with two numbers")
                    found[key] = (operator, number)
    return found


def assert_values(path: Path, message: str) -> dict[str, int | float]:
    """The values the top-level assert of ``path`` with ``message`` gives its names by an equality (``x == 512``,
    ``x == BATCH * 2 * 4``, ``a == 4 == b``, ``math.isclose(x, 0.5)``): what the page's run computed, which a wording
    prints as ``{x}`` instead of typing it (:func:`assert_comparisons`; an inequality gives no value).

    Raises:
        ClaimsError: a name compared with two different numbers."""
    return {name: number for name, (op, number) in assert_comparisons(path, message).items() if op == "=="}


def assert_bounds(path: Path, message: str) -> dict[str, tuple[str, int | float]]:
    """The bounds the top-level assert of ``path`` with ``message`` puts on its names (``ratio >= 100``: ``{"ratio":
    (">=", 100)}``): a wording prints one only after the words of its inequality (:data:`BOUND_WORDS`: "at least
    {ratio}"), never as the value itself (:func:`assert_comparisons`)."""
    return {name: bound for name, bound in assert_comparisons(path, message).items() if bound[0] != "=="}


def _dotted(node: ast.expr) -> str | None:
    """``name`` or ``name.attribute...`` of a variable of the page; ``None`` for any other expression."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def page_assert_lines(path: Path) -> dict[str, int]:
    """``{message: line}`` of the top-level asserts of a gallery script (a MyST notebook's: ``{}``, its cells have no
    line of the page's own)."""
    if path.suffix != ".py":
        return {}
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {
        statement.msg.value: statement.lineno
        for statement in tree.body
        if isinstance(statement, ast.Assert)
        and isinstance(statement.msg, ast.Constant)
        and isinstance(statement.msg.value, str)
    }


def recorded_configuration(section: str, pattern: str, record: dict[str, Any], fields: dict[str, Any]) -> dict:
    """:func:`migration_guide.run_configurations.recorded_configuration`."""
    from migration_guide import run_configurations

    return run_configurations.recorded_configuration(section, pattern, record, fields)


#: The axes of a scope that a run records (:data:`migration_guide.run_configurations.AXES`); ``trainer`` and
#: ``module`` name what a claim is about, not a setting of the run, and are not compared.
COMPARED_AXES = ("processes", "strategy", "precision", "optimization", "stage", "accumulate_grad_batches",
                 "return_predictions", "dataloaders")  # fmt: skip
#: Axes whose value a scope must name when every run of its evidence had one other than the default: a marker that
#: says nothing of them reads as the default.
NAMED_WHEN_NOT_DEFAULT = ("processes", "strategy", "precision", "optimization", "accumulate_grad_batches",
                          "return_predictions", "dataloaders")  # fmt: skip
#: Words by which a wording speaks of an axis ("``dataloader_idx``", "several dataloaders"): a wording that does, on a
#: scope that leaves the axis out, needs evidence of several of its values -- else the marker is silent on the one
#: count its evidence ran, and the sentence reads as true of every count.
AXIS_WORDS = {
    "dataloaders": re.compile(
        r"\bdataloader_idx\b|\b(?:validation|test|predict|prediction|evaluation|several|multiple|two|one|each|every|"
        r"per|other|second|first|last)\W+(?:data)?loaders?\b",  # the evaluation loaders, not "a plain DataLoader"
        re.I,
    )
}
#: What a quantifier ranges over when it quantifies an axis's values ("any number of dataloaders", "whatever the
#: loader count", "any required ``dataloader_idx``"): read right after the quantifier (:data:`UNIVERSAL`).
QUANTIFIED_AXES = {
    "dataloaders": re.compile(
        r"^\W*(?:[\w`]+\W+){0,3}?(?:number of (?:data)?loaders|(?:data)?loader counts?|`*dataloader_idx|"
        r"how many (?:data)?loaders)",
        re.I,
    )
}


def _scope_values(scope: dict[str, Any], axis: str) -> list[Any]:
    wanted = scope[axis]
    return list(wanted) if isinstance(wanted, list) else [wanted]


def _in_scope(run: dict[str, Any], scope: dict[str, Any]) -> bool:
    from migration_guide.run_configurations import value

    return all(value(run, axis) in _scope_values(scope, axis) for axis in COMPARED_AXES if axis in scope)


def _describe_runs(runs: list[dict[str, Any]]) -> str:
    from migration_guide.run_configurations import value

    shown = sorted(
        {
            ", ".join(f"{axis}={value(run, axis)}" for axis in COMPARED_AXES if value(run, axis) is not None)
            for run in runs
        }
    )
    return "; ".join(shown[:4]) + (f"; and {len(shown) - 4} more" if len(shown) > 4 else "")


def configuration_problems(
    claim_data: Claim, sources: Sources, kinds: tuple[str, ...] = KINDS, not_run: frozenset[str] = frozenset()
) -> list[str]:
    """Where the claim's scope says more than, or something else than, what its evidence ran (only the evidence of
    ``kinds`` is read), each a sentence naming the evidence and the mismatch:

    - an evidence none of whose runs is in the scope (``processes = 2`` on a page that ran one process);
    - a value of a list (``processes = [1, 2]``) that no evidence ran;
    - an axis the scope leaves out while every run in it had a value other than the default
      (:data:`NAMED_WHEN_NOT_DEFAULT`: a claim resting on ``accumulate_grad_batches=3`` runs says so);
    - a wording that quantifies over configurations ("always", "never", "any ...") resting on one run in scope.

    A general claim (every scenario of the matrix) and a changelog fact are not compared, nor the asserts of the
    pages this build was asked not to run (``not_run``).
    """
    from migration_guide.run_configurations import default, value

    if claim_data.general:
        return []
    problems, in_scope = [], []
    scope = {axis: v for axis, v in claim_data.scope.items() if axis in COMPARED_AXES}
    for item in claim_data.evidence:
        if item.kind not in kinds or (item.kind == "assert" and item.target in not_run):
            continue
        try:
            runs = item.configurations(sources)
        except NoConfiguration as error:
            problems.append(f"{item.kind} evidence: {error}")
            continue
        except (KeyError, FileNotFoundError, StopIteration) as error:
            problems.append(f"{item.kind} evidence: no configuration: {type(error).__name__}: {error}")
            continue
        if runs is None:
            continue
        matched = [run for run in runs if _in_scope(run, scope)]
        if not matched:
            problems.append(
                f"the scope ({' · '.join(claim_schema.scope_words(scope))}) is not what {item.describe()} ran: "
                f"{_describe_runs(runs) or 'no run'}"
            )
        in_scope += matched
    if not in_scope:
        return problems
    for axis in COMPARED_AXES:
        if axis in scope and isinstance(scope[axis], list):
            ran = {value(run, axis) for run in in_scope}
            problems += [
                f"the scope names {axis} {v!r}, which none of its evidence ran" for v in scope[axis] if v not in ran
            ]
    for axis in NAMED_WHEN_NOT_DEFAULT:
        ran = {json.dumps(value(run, axis)) for run in in_scope}
        if axis not in claim_data.scope and len(ran) == 1:
            only = value(in_scope[0], axis)
            if only is not None and only != default(axis):
                problems.append(
                    f"every run of its evidence had {axis} = {only!r}, which the scope does not say: its marker reads "
                    f"as the default ({default(axis)!r}); add {axis} = {json.dumps(only)} to the scope"
                )
    plain = _outside_placeholders(claim_data.text)
    for axis, words in AXIS_WORDS.items():
        counts = {value(run, axis) for run in in_scope} - {None}
        spoken = words.search(plain)
        if spoken and axis not in claim_data.scope and len(counts) < 2:
            ran = f"every run of its evidence had {axis} = {next(iter(counts))!r}" if counts else "no run recorded it"
            problems.append(
                f"the wording speaks of {axis} ({spoken[0]!r}) and its scope does not say how many: {ran}; add "
                f"{axis} = {json.dumps(next(iter(counts), 1))} to the scope (the marker then says it), or evidence "
                "of other counts"
            )
    for word, axis in _quantified_axes(claim_data.text):
        counts = {value(run, axis) for run in in_scope} - {None}
        if len(counts) < 2:
            problems.append(
                f"the wording says {word!r} of the {axis} a run may have, and its evidence ran "
                f"{' and '.join(map(str, sorted(counts))) or 'no recorded count'} only: narrow it to that, or add "
                "evidence of other counts"
            )
    universal = _universal_words(claim_data.text)
    distinct = {(run["release"], run["run"]) for run in in_scope}
    if universal and len(distinct) < 2:
        problems.append(
            f"the wording says {universal[0]!r} of the configurations it covers, and its evidence rests on one run "
            f"({next(iter(distinct))[1]} on {next(iter(distinct))[0]})"
        )
    return problems


def field_value(record: Any, dotted: str) -> Any:
    """``record["a"]["b"]`` for ``"a.b"``; a key that holds dots itself (a hook name such as
    ``"LightningModule.on_train_epoch_end"``) is matched whole, the longest first. ``KeyError`` names the missing
    part."""
    value, parts, start = record, dotted.split("."), 0
    while start < len(parts):
        for end in range(len(parts), start, -1):
            key = ".".join(parts[start:end])
            if isinstance(value, dict) and key in value:
                value, start = value[key], end
                break
            if isinstance(value, list) and end == start + 1 and key.isdigit() and int(key) < len(value):
                value, start = value[int(key)], end  # "items.0": the first item of a recorded list
                break
        else:
            raise KeyError(f"no field {dotted!r} (missing {parts[start]!r})")
    return value


def matrix_outcomes(document: dict[str, Any]) -> dict[tuple[str, str], str]:
    """``{(recipe id, scenario id): outcome}`` of a scenario-matrix results document
    (:func:`migration_guide.scenarios.run_matrix`): the one place that reads its format."""
    return {(cell["recipe"], cell["scenario"]): cell["outcome"] for cell in document["cells"]}


@dataclass
class Sources:
    """Where evidence is read from in this build: the project root, and readers of the build's records."""

    root: Path
    app: Sphinx | None = None
    _cache: dict[str, Any] = field(default_factory=dict)
    #: The folder of the pages' run records (``None``: this build's, :mod:`build_mechanics.run_records`).
    runs_dir: Path | None = None

    @property
    def versions(self) -> dict[str, str]:
        if "versions" not in self._cache:
            self._cache["versions"] = installed_versions()
        return self._cache["versions"]

    def page_runs(self, page: str) -> list[dict[str, Any]] | None:
        """The runs a gallery page recorded as it last ran (:mod:`migration_guide.run_configurations`)."""
        from migration_guide import run_configurations

        folder = self.runs_dir
        if folder is None:
            from build_mechanics import run_records

            folder = run_records.directory(self.app)
        return run_configurations.read(folder, page)

    def space(self) -> Any:
        if "space" not in self._cache:
            from migration_guide import scenarios

            self._cache["space"] = scenarios.load_space()
        return self._cache["space"]

    def probes(self) -> dict[str, Any]:
        if "probes" not in self._cache:
            from guide import probe_records

            self._cache["probes"] = probe_records.records(self.app)
        return self._cache["probes"]

    def recorded(self, release: str) -> dict[str, Any]:
        if release not in self._cache:
            path = self.root / "data" / "compat" / f"{release}.json"
            self._cache[release] = json.loads(path.read_text(encoding="utf-8"))
        return self._cache[release]

    def cells(self) -> dict[str, dict[str, Any]]:
        if "cells" not in self._cache:
            document = json.loads(_finish_cells(self.app).read_text(encoding="utf-8"))
            self._cache["cells"] = {cell["key"]: cell for cell in document["cells"]}
        return self._cache["cells"]

    def messages(self) -> set[str]:
        """Every error message this build recorded: its probes' errors and the details of the cells it ran."""
        if "messages" not in self._cache:
            probes = self.probes().get("records", [])
            found = {r["error_message"] for r in probes if r.get("error_message")}
            found |= {c["detail"] for c in self.cells().values() if c.get("detail")}
            self._cache["messages"] = found
        return self._cache["messages"]

    def matrix(self) -> dict[tuple[str, str], str]:
        if "matrix" not in self._cache:
            from guide import scenario_matrix

            self._cache["matrix"] = matrix_outcomes(scenario_matrix.matrix_results(self.app))
        return self._cache["matrix"]


def _record(records: list[dict[str, Any]] | dict[str, Any], pattern: str) -> dict[str, Any]:
    """The record of ``pattern``: the item of a list whose ``pattern`` it is, or the entry of a table (the
    ``rewrites`` of a release, by script)."""
    if isinstance(records, dict):
        if pattern in records:
            return records[pattern]
        raise KeyError(f"no record of {pattern!r}")
    for item in records:
        if item.get("pattern") == pattern:
            return item
    raise KeyError(f"no record of pattern {pattern!r}")


def _compare(actual: Any, expected: Any, what: str) -> str | None:
    return None if actual == expected else f"{what} is {actual!r}, the claim needs {expected!r}"


def _compare_all(records: list[dict[str, Any]], patterns: str, fields: dict[str, Any], what: str) -> str | None:
    """Every field of every named record against its value; the disagreements, joined (``None``: all agree)."""
    problems = []
    for pattern in patterns.split():
        record = _record(records, pattern)
        for name, value in fields.items():
            problems.append(_compare(field_value(record, name), value, f"{what.format(pattern=pattern)}: {name}"))
    return "; ".join(p for p in problems if p) or None


def check_evidence(evidence: Evidence, sources: Sources, ran: Any) -> str | None:
    """Why ``evidence`` does not hold in this build, or ``None`` when it does (its kind's ``check``).

    ``ran(page)`` says why a page did not run (``None`` when it ran to its end).
    """
    try:
        return evidence.check(sources, ran)
    except (KeyError, FileNotFoundError, AttributeError, SyntaxError) as error:
        return f"{type(error).__name__}: {error}"


# -- Sphinx -------------------------------------------------------------------------------------------------------
class claim(nodes.inline):  # noqa: N801 - docutils node naming
    """A rendered claim: its wording, with the claim's id and a one-line note of where it was checked."""


def _visit_claim_html(translator: Any, node: claim) -> None:
    attributes = {"data-claim": node["claim_id"], "title": node["note"]}
    translator.body.append(translator.starttag(node, "span", "", **attributes))


def _depart_claim_html(translator: Any, node: claim) -> None:
    translator.body.append("</span>")


def claims_path(app: Sphinx) -> Path:
    return Path(app.confdir) / app.config.claims_file


def claims(app: Sphinx) -> dict[str, Claim]:
    """The claims of this build (read once per process; a malformed file stops the build naming its line)."""
    cached = getattr(app, "_claims", None)
    if cached is None:
        from sphinx.errors import ExtensionError

        try:
            cached = load_claims(claims_path(app))
        except ClaimsError as error:
            raise ExtensionError(str(error)) from None
        app._claims = cached  # type: ignore[attr-defined]
    return cached


def note(claim_data: Claim, versions: dict[str, str]) -> str:
    """The tooltip of a rendered claim: where it was checked (with the build's torch, for evidence run by this build,
    where the marker leaves it out), and its evidence."""
    where = claim_data.marker(versions)
    if claim_data.on_build and "torch" not in where and "torch" in versions:
        where += f" (with torch {versions['torch']})"
    evidence = "; ".join(e.describe() for e in claim_data.evidence)
    return (
        f"From {evidence}"
        if all(e.kind == "changelog" for e in claim_data.evidence)
        else f"Checked on {where}: {evidence}"
    )


class claim_marker(nodes.Inline, nodes.TextElement):  # noqa: N801 - docutils node naming
    """The small marker beside a rendered claim -- its releases and configuration -- linking to its row of the
    claims table once every page has been read (:func:`_fill_used_on`)."""


def parse_inline(text: str, settings: Any, source: str) -> list[nodes.Node]:
    """The inline nodes of one line of reStructuredText (the roles of the page's Sphinx work in it)."""
    document = new_document(source, settings)
    Parser().parse(text, document)
    if len(document.children) != 1 or not isinstance(document[0], nodes.paragraph):
        return [nodes.Text(text)]
    return list(document[0].children)


class ClaimRole(SphinxRole):
    """``:claim:`id```: the claim's wording, as :data:`claims` holds it; ``:claim:`Id``` (the id capitalized) when
    the wording starts a sentence: its first letter capitalized."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        claim_id, capital = self.text.strip(), self.text.strip()[:1].isupper()
        claim_id = claim_id[:1].lower() + claim_id[1:]
        known = claims(current_app.get())
        self.env.note_dependency(str(claims_path(current_app.get())))
        if claim_id not in known:
            message = self.inliner.reporter.error(
                f"unknown claim {claim_id!r} (claims are declared in {self.config.claims_file})", line=self.lineno
            )
            return [self.inliner.problematic(self.rawtext, self.rawtext, message)], [message]
        claim_data = known[claim_id]
        for item in claim_data.evidence:
            for path in item.files():
                if path.is_file():
                    self.env.note_dependency(str(path))
        versions = installed_versions()
        usage = self.env.claims_used.setdefault(self.env.docname, {})  # type: ignore[attr-defined]
        usage.setdefault(claim_id, self.lineno)
        node = claim(claim_id=claim_id, note=note(claim_data, versions), classes=["claim"])
        text = render_text(claim_data, versions)
        if capital:  # :claim:`Id` starts a sentence
            text = text[:1].upper() + text[1:]
        node += parse_inline(text, self.inliner.document.settings, f"<claim {claim_id}>")
        marker = claim_data.marker(versions)
        node += claim_marker(marker, marker, claim_id=claim_id, classes=["claim-scope"])
        return [node], []


class used_on_placeholder(nodes.General, nodes.Element):  # noqa: N801 - docutils node naming
    """Where the claims table lists the pages using a claim; filled once every page has been read."""


#: A name in an evidence note that has no break opportunity of its own: a file of the repository
#: (``gallery/core/x.py``) or an identifier (``Callback.on_train_epoch_end``, ``alive_after.LightningModule...``).
CODE = re.compile(r"[\w.-]*[_/][\w./-]*\w")


def _with_names_as_code(text: str) -> list[nodes.Node]:
    """``text`` as inline nodes, its file paths and identifiers as inline code: they break after ``_`` and ``.`` on
    a narrow screen (:mod:`build_mechanics.identifier_breaks`) instead of widening the table."""
    parts: list[nodes.Node] = []
    last = 0
    for match in CODE.finditer(text):
        parts += [nodes.Text(text[last : match.start()]), nodes.literal(match.group(0), match.group(0))]
        last = match.end()
    return [*parts, nodes.Text(text[last:])]


class ClaimsTable(SphinxDirective):
    """``.. claims-table::``: every claim, its wording, where it was checked, its evidence and where it is used."""

    def run(self) -> list[nodes.Node]:
        known = claims(current_app.get())
        self.env.note_dependency(str(claims_path(current_app.get())))
        self.env.claims_table_docs.add(self.env.docname)  # type: ignore[attr-defined]
        versions = installed_versions()
        table = nodes.table(classes=["claims-table", "stack-on-phone"])  # one block per claim on a phone
        group = nodes.tgroup(cols=3)
        table += group
        for width in (45, 35, 20):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        head += self._row([nodes.Text("Claim"), nodes.Text("Checked, and its evidence"), nodes.Text("Used on")])
        body = nodes.tbody()
        group += body
        for claim_id, claim_data in known.items():
            wording = nodes.paragraph("", "", ids=[f"claim-{claim_id}"])
            wording += parse_inline(render_text(claim_data, versions), self.state.document.settings, claim_id)
            evidence = nodes.paragraph("", "", *_with_names_as_code(note(claim_data, versions)))
            body += self._row([wording, evidence, used_on_placeholder(claim_id=claim_id)])
        return [table]

    @staticmethod
    def _row(cells: list[nodes.Node]) -> nodes.row:
        row = nodes.row()
        for content in cells:
            entry = nodes.entry()
            entry += content if isinstance(content, nodes.Element) else nodes.paragraph("", "", content)
            row += entry
        return row


def _fill_used_on(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    tables = sorted(getattr(app.env, "claims_table_docs", ()))
    for marker in list(doctree.findall(claim_marker)):
        text = marker.astext()
        inline = nodes.inline("", "", classes=["claim-scope"])
        inline += nodes.Text(" ")
        if tables:
            uri = app.builder.get_relative_uri(docname, tables[0]) + f"#claim-{marker['claim_id']}"
            inline += nodes.reference("", f"[{text}]", refuri=uri, classes=["claim-evidence"])
        else:
            inline += nodes.Text(f"[{text}]")
        marker.replace_self(inline)
    for placeholder in list(doctree.findall(used_on_placeholder)):
        paragraph = nodes.paragraph()
        pages = sorted(doc for doc, used in app.env.claims_used.items() if placeholder["claim_id"] in used)
        for index, page in enumerate(pages):
            if index:
                paragraph += nodes.Text(", ")
            uri = app.builder.get_relative_uri(docname, page)
            paragraph += nodes.reference("", app.env.titles[page].astext(), refuri=uri)
        placeholder.replace_self(paragraph)


def _init_env(app: Sphinx) -> None:
    if not hasattr(app.env, "claims_used"):
        app.env.claims_used = {}  # type: ignore[attr-defined]  # docname -> {claim id: line}
    if not hasattr(app.env, "claims_table_docs"):
        app.env.claims_table_docs = set()  # type: ignore[attr-defined]  # the pages with a claims table


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    getattr(env, "claims_used", {}).pop(docname, None)
    getattr(env, "claims_table_docs", set()).discard(docname)


def _merge(app: Sphinx, env: Any, docnames: set[str], other: Any) -> None:
    for docname in docnames:
        if docname in getattr(other, "claims_used", {}):
            env.claims_used[docname] = other.claims_used[docname]
    env.claims_table_docs |= getattr(other, "claims_table_docs", set()) & docnames


def page_runs(app: Sphinx) -> Any:
    """A function ``ran(page) -> problem or None`` for this build's gallery scripts and MyST notebooks."""
    root = Path(app.confdir)
    srcdir = Path(app.srcdir)
    gallery = getattr(app.config, "sphinx_gallery_conf", None) or {}
    pairs = list(zip(_as_list(gallery.get("examples_dirs")), _as_list(gallery.get("gallery_dirs")), strict=False))

    not_run: set[str] = set()

    def ran(page: str) -> str | None:
        path = (root / page).resolve()
        for examples_dir, gallery_dir in pairs:
            examples = (srcdir / examples_dir).resolve()
            if path.is_relative_to(examples):
                from sphinx_gallery.gen_rst import executable_script
                from sphinx_gallery.utils import get_md5sum

                if not executable_script(path, gallery):  # plot_gallery off, or not matched by filename_pattern
                    not_run.add(page)
                    return None  # this build was asked not to run the page: its claims are not checked here

                target = srcdir / gallery_dir / path.relative_to(examples)
                checksum = Path(f"{target}.md5")
                if not checksum.is_file() or checksum.read_text() != get_md5sum(path, mode="t"):
                    return f"{page} did not run to its end in this build (no sphinx-gallery checksum of a passing run)"
                return None
        if path.is_relative_to(srcdir) and path.suffix == ".md":
            from myst_nb.sphinx_ import NbMetadataCollector

            docname = path.relative_to(srcdir).with_suffix("").as_posix()
            data = NbMetadataCollector.get_exec_data(app.env, docname) if docname in app.env.all_docs else None
            if not data or not data.get("succeeded"):
                return f"{page} was not executed successfully by myst-nb in this build"
            return None
        return f"{page} is neither a gallery script nor a MyST notebook of this site"

    ran.not_run = not_run  # type: ignore[attr-defined]
    return ran


# -- The cells claims cite (migration_guide.claim_cells), run beside the build ------------------------------------
#: The claims' cells' recorder (:mod:`build_mechanics.recorded_run`): ``<doctrees>/claim-cells.json`` and its files.
CELLS = "claim-cells"
#: What a failed run of the cells says.
CELLS_FAILURE_TITLE = ("the claims' cells", "src/migration_guide/claim_cells.py")


def cells_key(app: Sphinx, cited: list[dict[str, Any]]) -> str:
    """The SHA-256 (64 hex digits) of what the cited cells' results depend on: the runner, the scenario package and
    matrix file, the recipes' pages, the installed Lightning, torch and torchmetrics, and the cells themselves."""
    from build_mechanics import recorded_run

    from migration_guide import claim_cells, scenarios

    root = Path(app.confdir)
    space = scenarios.load_space()
    pages = sorted({root / r.page for r in space.recipes if r.id in {c["recipe"] for c in cited}})
    package = Path(scenarios.__file__).parent
    files = [Path(claim_cells.__file__), scenarios.MATRIX_FILE, *sorted(package.glob("*.py")), *pages]
    if any(r.transform for r in space.recipes if r.id in {c["recipe"] for c in cited}):
        from guide.scenario_matrix import checker_files

        files += checker_files()  # a cited cell of a rewrite runs the checker's rewrite of its page
    cells = json.dumps(cited, sort_keys=True)
    return recorded_run.inputs_key(files, ("lightning", "torch", "torchmetrics"), cells)


def _start_cells(app: Sphinx) -> None:
    """Start running the cells the claims cite (:func:`build_mechanics.recorded_run.start`: nothing runs when this
    build's inputs are those of the last run's document, or this test run kept a run of them)."""
    from build_mechanics import recorded_run

    from migration_guide.claim_cells import cited_cells

    app._claim_cells = None  # type: ignore[attr-defined]
    path = claims_path(app)
    claims(app)  # a malformed file stops the build here, naming its line
    cited = cited_cells(path)
    folder = Path(app.doctreedir)
    if not cited:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{CELLS}.json").write_text(json.dumps({"cells": []}), encoding="utf-8")
        return
    arguments = ("--claims", str(path), "--output")
    run = recorded_run.start(
        CELLS,
        folder,
        cells_key(app, cited),
        "migration_guide.claim_cells",
        lambda output: (*arguments, str(output)),
        cwd=Path(app.confdir),
    )
    if run.process is not None:
        logger.info(f"claims: running the {len(cited)} cell(s) the claims cite (migration_guide.claim_cells) ...")
    app._claim_cells = run  # type: ignore[attr-defined]


def _finish_cells(app: Sphinx) -> Path:
    """Wait for the cells' run started at ``builder-inited`` (:func:`build_mechanics.recorded_run.finish`, which
    raises :class:`sphinx.errors.ExtensionError` with the end of its output when it failed); the path of its
    document."""
    from build_mechanics import recorded_run

    run = getattr(app, "_claim_cells", None)
    if run is not None:
        app._claim_cells = None  # type: ignore[attr-defined]
        recorded_run.finish(run, recorded_run.default_failure(*CELLS_FAILURE_TITLE))
    return Path(app.doctreedir) / f"{CELLS}.json"


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or ())


def verify(app: Sphinx) -> list[tuple[Claim, str]]:
    """Every claim whose evidence does not hold in this build, with the reason; every claim no page uses."""
    known = claims(app)
    sources, ran = Sources(Path(app.confdir), app), page_runs(app)
    problems = []
    for claim_data in known.values():
        for evidence in claim_data.evidence:
            reason = check_evidence(evidence, sources, ran)
            if reason:
                problems.append((claim_data, f"{evidence.kind} evidence: {reason}"))
        reasons = configuration_problems(claim_data, sources, not_run=frozenset(ran.not_run))
        problems += [(claim_data, f"scope: {reason}") for reason in reasons]
    used = {claim_id for usage in app.env.claims_used.values() for claim_id in usage}
    problems += [(c, "no page uses this claim") for c in known.values() if c.id not in used]
    if ran.not_run:
        logger.info(
            f"claims: the evidence on {len(ran.not_run)} page(s) was not checked: this build was asked not to run "
            f"them (plot_gallery, filename_pattern): {', '.join(sorted(ran.not_run))}"
        )
    return problems


def _check(app: Sphinx, env: Any) -> None:
    path = claims_path(app)
    for claim_data, reason in verify(app):
        logger.warning(f"claim {claim_data.id}: {reason}", location=f"{path}:{claim_data.line}", type="claims")


#: The environment variable naming the claims' wordings file for the notebooks' pandoc filter (pandoc inherits it).
#: Not a ``pypandoc`` argument: the path is under the doctree directory, and a configuration value that names it
#: would change with the output's location and make Sphinx rebuild every page.
CLAIMS_FILE_VARIABLE = "GUIDE_CLAIMS_FILE"


def write_notebook_texts(app: Sphinx, config: Any) -> None:
    """Write every claim's rendered wording, one ``id<TAB>text`` line each, for the notebooks' pandoc filter, and
    hand pandoc that file's path (environment variable :data:`CLAIMS_FILE_VARIABLE`); nothing when the gallery has
    no ``pypandoc``."""
    pypandoc = getattr(config, "sphinx_gallery_conf", {}).get("pypandoc")
    if not isinstance(pypandoc, dict):
        return
    versions = installed_versions()
    lines = [
        f"{c.id}\t{' '.join(render_text(c, versions).split())} ({c.marker(versions)})" for c in claims(app).values()
    ]
    target = Path(app.doctreedir) / NOTEBOOK_TEXTS
    target.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    if not target.exists() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")
    os.environ[CLAIMS_FILE_VARIABLE] = str(target)


def setup(app: Sphinx) -> dict[str, Any]:
    current_app.remember(app)
    app.add_config_value("claims_file", "data/claims.toml", "env", types=[str])
    app.add_node(claim, html=(_visit_claim_html, _depart_claim_html))
    app.add_role("claim", ClaimRole())
    app.add_directive("claims-table", ClaimsTable)
    app.connect("config-inited", write_notebook_texts)
    app.connect("builder-inited", _init_env)
    app.connect("builder-inited", _start_cells)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-check-consistency", _check)
    app.connect("doctree-resolved", _fill_used_on)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
