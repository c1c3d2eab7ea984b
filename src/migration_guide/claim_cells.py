"""Cells the scenario matrix does not run, run for the claims that cite them.

The matrix never generates a combination of axis values a constraint of ``data/scenarios.toml`` excludes, and
marks a recipe's cells outside its domain "not applicable" without running them; both give a reason, and a reason
that says what Lightning does there is a claim. Its evidence is that cell, run here: a claim of
``data/claims.toml`` cites ``{ cell = "<recipe id>", values = { <axis> = <value>, ... } }`` (or ``scenario =
"<named scenario id>"`` instead of ``values``), and this module runs each cited cell once with the matrix's own
harness (:func:`migration_guide.scenarios.harness.run_cell`: the recipe's page code, its observers, its ground
truth), ignoring the recipe's domain, and records the cell's outcome, its detail (the error as raised) and every
warning the cell emitted in this process.

``python -m migration_guide.claim_cells --claims data/claims.toml --output FILE`` writes ``{"lightning",
"torch", "cells": [{"recipe", "values", "scenario", "outcome", "detail", "warnings"}]}`` (atomically). The Sphinx
extension ``docs/_ext/guide/claims.py`` starts it at every build whose inputs changed and checks the claims'
expected outcomes against it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tomllib
import warnings
from pathlib import Path
from typing import Any

from lightning_migrate.records import write_atomic
from migration_guide import claim_schema


def cited_cells(claims_file: Path) -> list[dict[str, Any]]:
    """Every distinct cell the claims file cites: ``{"recipe", "values"}`` or ``{"recipe", "scenario"}``, in
    file order."""
    document = tomllib.loads(claims_file.read_text(encoding="utf-8"))
    cells: list[dict[str, Any]] = []
    for table in document.get("claim", {}).values():
        for evidence in table.get("evidence", ()):
            if claim_schema.kind_of(evidence) == ["cell"]:
                cell = {"recipe": evidence["cell"]}
                cell.update({k: evidence[k] for k in ("values", "scenario") if k in evidence})
                if cell not in cells:
                    cells.append(cell)
    return cells


def cell_key(cell: dict[str, Any]) -> str:
    """How a cell is named in the record and in the build's messages."""
    where = cell.get("scenario") or ", ".join(f"{a}={v}" for a, v in sorted(cell.get("values", {}).items()))
    return f"{cell['recipe']} in {where}"


def run_cells(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run each cell with the matrix's harness, outside the recipe's domain too (see the module docstring)."""
    from .scenarios import harness, load_space

    space = load_space()
    recipes = {recipe.id: recipe for recipe in space.recipes}
    named = {scenario.id: scenario for scenario in space.scenarios}
    results = []
    for number, cell in enumerate(cells):
        recipe = dataclasses.replace(recipes[cell["recipe"]], outside=())
        if "scenario" in cell:
            scenario = named[cell["scenario"]]
        else:
            scenario = space.scenario(f"claim-cell-{number}", dict(cell["values"]))
        with harness.quiet(space.warnings), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = harness.run_cell(recipe, scenario)
        entries = [
            {"category": [k.__name__ for k in w.category.__mro__ if issubclass(k, Warning)], "message": str(w.message)}
            for w in caught
        ]
        results.append({**cell, "key": cell_key(cell), **result, "warnings": entries})
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=Path, required=True)
    parser.add_argument("--output", "-o", type=Path, required=True)
    args = parser.parse_args(argv)
    import lightning
    import torch

    cells = run_cells(cited_cells(args.claims))
    document = {"lightning": lightning.__version__, "torch": torch.__version__, "cells": cells}
    write_atomic(args.output, json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
