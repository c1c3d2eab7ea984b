"""The schema of ``data/claims.toml``, declared once: the keys of a claim, the axes of its scope, the kinds of
evidence and their keys.

The claims extension (``docs/_ext/guide/claims.py``: the loader, the checks, the rendering) and the runner of the
cells the claims cite (:mod:`migration_guide.claim_cells`) read the file through these declarations; each evidence
kind declared here is implemented there by one class, and ``tests/test_claims.py`` fails when a kind is declared
and not implemented, or the reverse.

A claim (``[claim.<id>]``):

``text``
    the wording, reStructuredText inline markup, in the reader's voice: the release and the configuration are not
    repeated in it, the page prints them as a small marker beside it (:func:`scope_words`), linking to the claim's
    evidence. ``{lightning}``, ``{torch}`` and ``{torchmetrics}`` print the installed release; ``{field}`` prints a
    value the claim's evidence compares with its record (``{error_type}``, ``{received.len}``; ``{field#2}`` the
    second evidence's), so the words follow the record.
``scope``
    the configuration the evidence ran in, one value per axis of :data:`SCOPE_AXES` (``{ processes = 1 }``,
    ``{ strategy = "ddp_fork", processes = 2 }``, ``{ optimization = "manual" }``, ``{ dataloaders = 1 }``: how many
    loaders the stage's evaluation loop had, or ``"varies"``), or a list of values that the evidence ran each of
    (``processes = [1, 2]``); the releases come from the evidence itself. The build compares it with the configuration
    each piece of evidence recorded (``docs/_ext/guide/claims.py``: ``configuration_problems``).
``checked``
    the earlier form of ``scope``: a phrase of the wording (``"in one process"``); the phrases of
    :data:`LEGACY_CHECKED` are read as their scope, so a block appended in that form still loads.
``general``
    ``true`` for a claim about every scenario of the scenario matrix (evidence: ``matrix``, ``scenarios = "all"``).
``about``
    the library whose behaviour the claim states, when it is not Lightning's (one of :data:`ABOUT`: ``"torch"``,
    ``"torchmetrics"``): the marker names that library's installed release beside Lightning's.
``evidence``
    a list of inline tables, each told apart by its first key (:data:`EVIDENCE_KINDS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# the data files' one "did you mean", re-exported for the claims extension
from .data_schema import did_you_mean as did_you_mean
from .data_schema import unknown_keys as unknown_keys

#: The keys of a claim's table, each with what it holds.
CLAIM_KEYS = {
    "text": "the wording (reStructuredText inline markup), in the reader's voice",
    "scope": "the configuration the evidence ran in: a table of SCOPE_AXES values (a list: each of them)",
    "checked": "the earlier form of scope: a phrase of the wording (see LEGACY_CHECKED)",
    "general": "true for a claim about every scenario of the scenario matrix",
    "about": "the library whose behaviour it states, when not Lightning's: one of ABOUT",
    "evidence": "a list of evidence tables",
}
#: The libraries a claim may be about besides Lightning (its ``about``), each a package the build installs.
ABOUT = ("torch", "torchmetrics")

#: The axes of a claim's configuration: each with the type of its value and how the marker words it.
SCOPE_AXES: dict[str, tuple[type, str]] = {
    "processes": (int, "{value} process(es)"),
    "strategy": (str, "{value}"),
    "optimization": (str, "{value} optimization"),
    "stage": (str, "trainer.{value}"),
    "precision": (str, "precision {value}"),
    "return_predictions": (bool, "return_predictions={value}"),
    "accumulate_grad_batches": (int, "accumulate_grad_batches={value}"),
    "dataloaders": (int, "{value} validation, test, predict or evaluation dataloader(s)"),
    "trainer": (str, "{value}"),
    "module": (str, "{value}"),
}
#: The ``dataloaders`` of a run whose count of loaders changes between epochs and calls (reloaded every epoch).
VARYING = "varies"
#: The loop whose dataloaders a run's ``dataloaders`` counts, by its stage (no stage: "evaluation").
LOADER_STAGES = {"fit": "validation", "validate": "validation", "test": "test", "predict": "predict"}
#: Values an axis may hold, where the set is closed.
SCOPE_VALUES = {
    "optimization": ("automatic", "manual"),
    "stage": ("fit", "validate", "test", "predict"),
    "strategy": ("ddp_fork", "ddp_spawn", "ddp"),
    "trainer": ("Trainer() defaults",),
}

#: The phrases of the earlier ``checked`` key, each read as its scope.
LEGACY_CHECKED: dict[str, dict[str, Any]] = {
    "in one process": {"processes": 1},
    "with a single process": {"processes": 1},
    "with ``ddp_fork`` on 2 CPU processes": {"strategy": "ddp_fork", "processes": 2},
    "with ``ddp_fork`` on 3 CPU processes": {"strategy": "ddp_fork", "processes": 3},
    "with 2 DDP processes": {"processes": 2},
    "on 2 CPU processes": {"processes": 2},
    "by default": {"processes": 1, "trainer": "Trainer() defaults"},
}


@dataclass(frozen=True)
class KindSpec:
    """One kind of evidence: its first key, the keys it needs and may have, whether its target may be a list of
    patterns, and whether it ran on this build's installed packages (``on_build``) or is a recorded or cited fact."""

    key: str
    required: tuple[str, ...]
    optional: tuple[str, ...]
    doc: str
    patterns: bool = False
    on_build: bool = True

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key, *self.required, *self.optional)


#: Every kind of evidence. For probe, recorded and changelog evidence, ``field`` and ``equals`` may be replaced by
#: ``fields``, a table of field -> value, all compared.
EVIDENCE_KINDS: dict[str, KindSpec] = {
    spec.key: spec
    for spec in (
        KindSpec("assert", ("message",), (), "a top-level assert of an executed page, with this message"),
        KindSpec("probe", ("field", "equals"), ("fields",), "this build's probe record of a pattern", patterns=True),
        KindSpec(
            "recorded",
            ("pattern", "field", "equals"),
            ("fields", "section"),
            "a recorded run of a release (data/compat/<release>.json)",
            patterns=True,
            on_build=False,
        ),
        KindSpec("matrix", ("scenarios",), ("outcome",), "cells of this build's scenario matrix"),
        KindSpec(
            "cell",
            ("outcome",),
            ("values", "scenario", "match", "warns", "error_type"),
            "a cell the matrix leaves out, run by this build",
        ),
        KindSpec(
            "changelog",
            ("field", "equals"),
            ("fields",),
            "a release fact of the registry (Lightning's CHANGELOG)",
            patterns=True,
            on_build=False,
        ),
        KindSpec("default", ("equals",), (), "what a Trainer() of the installed release holds"),
    )
}
#: Keys that replace ``field`` and ``equals``.
FIELDS_KEYS = ("field", "equals")


def kind_of(table: dict[str, Any]) -> list[str]:
    """The evidence kinds ``table`` names (one for a well-formed table)."""
    return [key for key in table if key in EVIDENCE_KINDS]


def scope_problems(scope: Any) -> list[str]:
    """What is wrong with a ``scope`` table: unknown axes (with the closest), values of the wrong type or outside
    :data:`SCOPE_VALUES`."""
    if not isinstance(scope, dict):
        return ["scope is a table of axis = value, e.g. { processes = 1 }"]
    problems = [f"unknown scope axis {key}; known: {', '.join(SCOPE_AXES)}" for key in unknown_keys(scope, SCOPE_AXES)]
    for axis, given in scope.items():
        if axis not in SCOPE_AXES:
            continue
        kind = SCOPE_AXES[axis][0]
        if isinstance(given, list) and len(given) < 2:
            problems.append(f"scope {axis}: a list names several values, each of which the evidence ran; got {given!r}")
        for value in given if isinstance(given, list) else [given]:
            if axis == "dataloaders" and value == VARYING:
                continue  # a count that changes between epochs and calls
            if type(value) is not kind:
                problems.append(f"scope {axis} is a {kind.__name__} or a list of them, got {value!r}")
            elif axis in SCOPE_VALUES and value not in SCOPE_VALUES[axis]:
                problems.append(f"scope {axis} is one of {', '.join(SCOPE_VALUES[axis])}; got {value!r}")
    return problems


def scope_words(scope: dict[str, Any]) -> list[str]:
    """The marker's words for a scope, one per axis, in :data:`SCOPE_AXES` order (``1 process``, ``ddp_fork``)."""
    words = []
    for axis, (_, template) in SCOPE_AXES.items():
        if axis in scope:
            value = scope[axis]
            given = [str(v) for v in value] if isinstance(value, list) else [str(value)]
            joined = ", ".join(given[:-1]) + " and " + given[-1] if len(given) > 1 else given[0]
            text = template.format(value=joined)
            if axis == "processes":
                text = "1 process" if value == 1 else f"{joined} processes"
            if axis == "dataloaders":  # the loaders of the stage's evaluation loop: "1 validation dataloader"
                stage = LOADER_STAGES.get(str(scope.get("stage")), "evaluation")
                text = f"{joined} {stage} dataloader" + ("" if value == 1 else "s")
                if value == VARYING:
                    text = f"a varying number of {stage} dataloaders"
            words.append(text)
    return words


#: The qualifiers the earlier form repeated in a wording, and what replaces each once the marker prints the scope
#: (:func:`migrate`): the release of this build and "in one process" go, a condition that is the claim's subject
#: (``with ``ddp_fork`` on 2 CPU processes``) stays.
LEGACY_QUALIFIERS = (
    (r"^on (?:torch \{torch\} and )?Lightning \{lightning\}, in one process, ", ""),
    (r"^on Lightning \{lightning\} with torchmetrics \{torchmetrics\}, in one process, ", ""),
    (r"^on torch \{torch\}, in one process, ", ""),
    (r"^with torchmetrics \{torchmetrics\}, in one process, ", ""),
    (r"^Lightning \{lightning\}, in one process, ", "Lightning "),
    (r" \((?:Lightning|torch) \{(?:lightning|torch)\}, in one process\)", ""),
    (r" on Lightning \{lightning\},? in one process,?", ","),
    (r" and Lightning \{lightning\}, ", ", "),
    (r", Lightning \{lightning\} and torchmetrics \{torchmetrics\}, ", ", "),
    (r", Lightning \{lightning\} ", ", Lightning "),
    (r" on Lightning \{lightning\}", ""),
    (r", in one process,", ","),
    (r",? in one process", ""),
)


def migrate(text: str) -> str:
    """The claims file ``text`` with each ``checked = "<phrase>"`` of :data:`LEGACY_CHECKED` written as its
    ``scope`` and the qualifiers the marker now prints (:data:`LEGACY_QUALIFIERS`) taken out of its wording; every
    other line as it was. Read the result: a qualifier left in a sentence reads twice."""
    import re
    import tomllib

    document = tomllib.loads(text)
    lines = text.splitlines(keepends=True)
    current = None
    for index, line in enumerate(lines):
        header = re.match(r"^\[claim\.([\w-]+)\]", line)
        if header:
            current = document["claim"][header[1]]
            continue
        if current is None or "checked" not in current or current["checked"] not in LEGACY_CHECKED:
            continue
        if line.startswith("checked = "):
            scope = LEGACY_CHECKED[current["checked"]]
            values = ", ".join(f"{k} = {_toml(v)}" for k, v in scope.items())
            lines[index] = f"scope = {{ {values} }}\n"
        elif line.startswith("text = "):
            wording = current["text"]
            for pattern, replacement in LEGACY_QUALIFIERS:
                wording = re.sub(pattern, replacement, wording, count=1)
            wording = wording.replace(",,", ",").strip()
            lines[index] = f"text = {_toml(wording)}\n"
    return "".join(lines)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


if __name__ == "__main__":  # python -m migration_guide.claim_schema --migrate data/claims.toml
    import sys
    from pathlib import Path

    if sys.argv[1:2] != ["--migrate"] or len(sys.argv) != 3:
        raise SystemExit("usage: python -m migration_guide.claim_schema --migrate data/claims.toml")
    target = Path(sys.argv[2])
    target.write_text(migrate(target.read_text(encoding="utf-8")), encoding="utf-8")
