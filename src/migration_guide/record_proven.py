"""``python -m migration_guide.record_proven``: record the shapes the scenario matrix proves
(:mod:`.proven`) from the rows of ``data/scenarios.toml`` and the 1.x records of ``data/compat``, read as data; and
where the newest 1.x release that ran them called the stage-less hooks (:func:`stageless`), which LM006's rewrite
reproduces."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from lightning_migrate.checker.core import check_source
from lightning_migrate.checker.proven import RECORD
from lightning_migrate.records import write_atomic
from migration_guide import compat

#: The transform of the matrix rows that run the checker's rewrites.
TRANSFORM = "lightning-migrate"


def record(root: Path | None = None) -> dict[str, Any]:
    """The proven shapes, from the matrix rows and the 1.x records of the source tree ``root`` (default: this
    checkout).

    Returns:
        ``{"reference": version, "shapes": {shape: [{"recipe", "page", "compared_with"}, ...]}, "stageless":
        {"release": version, "hooks": ...}}``, rows and shapes sorted; ``"stageless"`` is :func:`stageless` of the
        newest 1.x release whose ``stageless-hook-calls`` observation ran (absent when none did).

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
    result: dict[str, Any] = {"reference": reference, "shapes": dict(sorted(shapes.items()))}
    recorded = stageless_record(root)
    if recorded is not None:
        result["stageless"] = recorded
    return result


def _releases(root: Path) -> list[str]:
    """The reference release of ``data/compat/matrix.toml``, then its other ``[legacy]`` releases, newest first."""
    matrix = compat.load_matrix(root / "data" / "compat" / "matrix.toml")
    reference = matrix["reference"]
    legacy = sorted(
        (v for v, entry in matrix["versions"].items() if entry["group"] == "legacy"), key=compat.release_key
    )
    return [reference, *(v for v in reversed(legacy) if v != reference)]


def stageless_record(root: Path | None = None) -> dict[str, Any] | None:
    """``{"release": version, "hooks": stageless(its calls)}`` of the first release of :func:`_releases` whose
    ``stageless-hook-calls`` observation ran (a release that refuses the hooks records the error); ``None`` when
    none did."""
    root = root or compat.ROOT
    for version in _releases(root):
        data = json.loads(compat.data_path(version, root / "data" / "compat").read_text(encoding="utf-8"))
        calls = next((o["runs"] for o in data.get("observations", []) if o["pattern"] == STAGELESS_OBSERVATION), None)
        if calls is not None and all("calls" in run for run in calls.values()):
            return {"release": version, "hooks": stageless(calls)}
    return None


#: The observation of :mod:`migration_guide.observations` that records when the stage-less hooks ran.
STAGELESS_OBSERVATION = "stageless-hook-calls"
#: A stage's own hook: ``on_<stage>_<epoch|batch>_<start|end>``.
STAGE_HOOK = re.compile(r"on_(train|validation|test|predict)_(epoch|batch)_(start|end)")


def stageless(runs: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Which stage hooks each stage-less hook ran beside, read from the calls a release recorded
    (``stageless-hook-calls``: per run, ``[owner, hook, stage]`` in order).

    A stage-less hook ``on_<kind>_<edge>`` of an owner (``on_epoch_end`` of a ``Callback``) pairs with the stage
    hook of the same owner, kind and edge that the owner's calls of that kind show right before each of its calls
    (an ``end``) or right after it (a ``start``). It reproduces with the stage hooks ``S`` when every one of its
    calls pairs so, and every call of each ``S`` in every run is paired: then running its body from each ``S``
    runs it exactly where the release did.

    Returns:
        ``{owner: {hook: {"hooks": [stage hooks, in the stages' order], "position": "after" | "before"}}}``; a hook
        some of whose calls pair with no stage hook, or whose stage hook ran once without it, is left out.
    """
    owners: dict[str, set[str]] = {}
    for run in runs.values():
        for owner, hook, _stage in run["calls"]:
            if STAGE_HOOK.fullmatch(hook) is None:
                owners.setdefault(owner, set()).add(hook)
    order = {stage: i for i, stage in enumerate(("train", "validation", "test", "predict"))}
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for owner, hooks in sorted(owners.items()):
        for hook in sorted(hooks):
            kind, edge = hook.removeprefix("on_").split("_")
            paired: dict[str, int] = {}
            totals: dict[str, int] = {}
            complete = True
            for run in runs.values():
                mine = [h for o, h, _ in run["calls"] if o == owner and (h == hook or _stage_hook(h, kind, edge))]
                for i, name in enumerate(mine):
                    if name != hook:
                        totals[name] = totals.get(name, 0) + 1
                        continue
                    j = i - 1 if edge == "end" else i + 1  # the call an end follows, or a start precedes
                    near = mine[j] if 0 <= j < len(mine) else None
                    if near is None or near == hook:
                        complete = False
                    else:
                        paired[near] = paired.get(near, 0) + 1
            if complete and paired and all(paired[name] == totals[name] for name in paired):
                ordered = sorted(paired, key=lambda name: order[name.split("_")[1]])  # on_<stage>_...
                result.setdefault(owner, {})[hook] = {
                    "hooks": ordered,
                    "position": "after" if edge == "end" else "before",
                }
    return result


def _stage_hook(name: str, kind: str, edge: str) -> bool:
    match = STAGE_HOOK.fullmatch(name)
    return match is not None and match.group(2) == kind and match.group(3) == edge


def _ran(entry: dict[str, Any] | None, digest: str) -> bool:
    """Whether a release's record of a rewrite file is of these bytes and ran the old code at least once."""
    if entry is None or entry.get("sha256") != digest:
        return False
    return any("error" not in run for run in entry.get("runs", {}).values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", "-o", type=Path, default=RECORD, help=f"default: {RECORD}")
    args = parser.parse_args(argv)
    write_atomic(args.output, json.dumps(record(), indent=1) + "\n")  # the project's one atomic write
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
