"""``python -m lightning_migrate.checker.record_proven``: record the shapes the scenario matrix proves
(:mod:`.proven`) from the rows of ``data/scenarios.toml`` and the 1.x records of ``data/compat``, read as data."""

from __future__ import annotations

import argparse
import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

from lightning_migrate import compat
from lightning_migrate.checker.core import check_source
from lightning_migrate.checker.proven import RECORD

#: The transform of the matrix rows that run the checker's rewrites.
TRANSFORM = "lightning-migrate"


def record(root: Path | None = None) -> dict[str, Any]:
    """The proven shapes, from the matrix rows and the 1.x records of the source tree ``root`` (default: this
    checkout).

    Returns:
        ``{"reference": version, "shapes": {shape: [{"recipe", "page", "compared_with"}, ...]}}``, rows and shapes
        sorted.

    Raises:
        FileNotFoundError: the tree has no ``data/scenarios.toml`` (an installed package: the record is shipped).
        ValueError: a row names a page that does not exist, or whose rewrite writes no shape.
    """
    root = root or compat.ROOT
    matrix = compat.load_matrix(root / "data" / "compat" / "matrix.toml")
    reference = matrix["reference"]
    legacy = sorted(
        (v for v, entry in matrix["versions"].items() if entry["group"] == "legacy"), key=compat.release_key
    )
    order = [reference, *(v for v in reversed(legacy) if v != reference)]
    records = {
        version: json.loads(compat.data_path(version, root / "data" / "compat").read_text(encoding="utf-8")).get(
            "rewrites", {}
        )
        for version in order
    }
    rows = tomllib.loads((root / "data" / "scenarios.toml").read_text(encoding="utf-8")).get("recipe", {})
    shapes: dict[str, list[dict[str, str]]] = {}
    for recipe, row in sorted(rows.items()):
        if row.get("transform") != TRANSFORM:
            continue
        page = root / row["page"]
        if not page.is_file():
            raise ValueError(f"data/scenarios.toml: [recipe.{recipe}] page {row['page']} does not exist")
        data = page.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        compared = next((v for v in order if _ran(records[v].get(page.name), digest)), None)
        if compared is None:
            continue  # no 1.x release recorded what the old code computed: nothing to be equivalent to
        found = {
            f.fix.shape
            for f in check_source(data, fix=True, unsafe_fixes=True).findings
            if f.fix is not None and f.fix.shape
        }
        if not found:
            raise ValueError(f"data/scenarios.toml: [recipe.{recipe}] the rewrite of {row['page']} writes no shape")
        for shape in found:
            shapes.setdefault(shape, []).append({"recipe": recipe, "page": row["page"], "compared_with": compared})
    return {"reference": reference, "shapes": dict(sorted(shapes.items()))}


def _ran(entry: dict[str, Any] | None, digest: str) -> bool:
    """Whether a release's record of a rewrite file is of these bytes and ran the old code at least once."""
    if entry is None or entry.get("sha256") != digest:
        return False
    return any("error" not in run for run in entry.get("runs", {}).values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", "-o", type=Path, default=RECORD, help=f"default: {RECORD}")
    args = parser.parse_args(argv)
    text = json.dumps(record(), indent=1) + "\n"
    tmp = args.output.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
