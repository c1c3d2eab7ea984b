"""Record what one Lightning release does with the old patterns and the replacements: ``data/compat/<version>.json``.

Run inside an environment where that release is installed, one session per release declared in
``data/compat/matrix.toml``. ``nox -s legacy`` and ``nox -s matrix`` (default sessions) check that the release
still does what its committed record says::

    python -m migration_guide.compat --version 1.9.5 --check

write the run's record under ``_build/compat/`` and fail, naming the file and every difference, when it differs
from ``data/compat/1.9.5.json`` (:func:`lightning_migrate.records.differences`: outcomes, texts and counts exactly,
measured floats within :func:`lightning_migrate.records.floats_agree`). ``nox -s record`` writes new records
on purpose::

    python -m migration_guide.compat --version 1.9.5

The data file holds, for the installed release:

``probes``
    :func:`migration_guide.probes.probe_all` -- every registry pattern's outcome, error, warnings and what the
    old hook received.
``equivalence``
    :func:`migration_guide.equivalence.run` for the variants the matrix asks for (``old-and-replacements``: the
    old ``training_epoch_end(outputs)`` and both replacements, asserted identical in this process;
    ``replacements``: both replacements, asserted identical to each other and -- exactly, float for float -- to
    the old hook's values on the reference release read from its data file; ``old``: the old hook only).
``observations``
    for ``[legacy]`` releases: :func:`migration_guide.observations.observe_all` -- what the old
    ``training_epoch_end(outputs)`` list held, when it was let go, what each DDP process held.
``rewrites``
    for ``[legacy]`` releases: :func:`migration_guide.rewrite_equivalence.record` -- each rewrite shape of
    ``data/rewrites`` as written, in each configuration of its stage: what its epoch-end code logged, or the error;
    ``tests/checker/test_rewrite_equivalence.py`` compares the checker's rewrite of each shape on the build's
    release with these records.
``hooks``
    for ``[legacy]`` releases: :func:`lightning_migrate.hook_names.hook_classes` -- the methods of its hook classes;
    :mod:`migration_guide.removed_hooks` keeps those the build's release lacks for the checker (LM007).
``examples``
    for ``[matrix]`` releases: each replacement example of ``[examples] scripts`` run with this Python in an empty
    directory -- ``passed``, the return code, what it printed and, on failure, the last line of its error output.
``scenario_cells``
    with ``--scenario-cells`` (the 2.x releases other than the build's own): every recipe of
    ``data/scenarios.toml`` in the release's cells (:mod:`migration_guide.scenarios.releases`), by recipe: a digest
    of the cells, each cell's outcome, and whether all behaved as declared
    (:func:`migration_guide.scenarios.releases.cell_record`). Each recipe's page names the releases whose record
    holds its current cells, all as declared.
``matrix_sha256``
    SHA-256 of ``matrix.toml`` when the file was written; a different hash means the data file is stale.

Nothing time-dependent is stored, so re-running on an unchanged matrix on the same machine rewrites the same bytes
(another processor may round the losses' last digits differently: the check allows for that, a record keeps them).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from lightning_migrate import hook_names, records
from migration_guide import equivalence, observations, probes, rewrite_equivalence
from migration_guide.compat_schema import GROUPS, read
from migration_guide.data_schema import Lines, did_you_mean
from migration_guide.source_tree import DATA, ROOT

COMPAT_DIR = DATA / "compat"
#: Where ``--check`` writes a run's record (beside the build's output, never committed).
CHECK_DIR = ROOT / "_build" / "compat"
MATRIX_FILE = COMPAT_DIR / "matrix.toml"
#: The implementation of each ``equivalence`` kind (:data:`migration_guide.compat_schema.EQUIVALENCE`): the
#: variants its run compares.
EQUIVALENCE_MODES = {
    "old": ("old",),
    "old-and-replacements": ("old", "callback", "module"),
    "replacements": ("callback", "module"),
}


def load_matrix(path: Path = MATRIX_FILE) -> dict[str, Any]:
    """Parse the matrix definition, checked against its schema (:mod:`migration_guide.compat_schema`).

    Returns:
        ``{"sha256": hex digest of the file, "versions": {version: {"group": "legacy"|"matrix", "pins": [...],
        "after": [...] (installed last, without dependencies), "equivalence": mode}}, "reference": version,
        "scripts": [path, ...]}``.

    Raises:
        ValueError: naming the file, the line and table, and the cause, when the file departs from its schema (an
            unknown key names the closest known one) or the reference is not a declared release.
    """
    raw = path.read_bytes()
    data = read(path)
    lines = Lines(raw.decode("utf-8"), path)
    versions: dict[str, Any] = {}
    for group in GROUPS:
        for version, entry in data[group].items():
            versions[version] = {
                "group": group,
                "pins": list(entry["pins"]),
                "after": list(entry.get("after", [])),
                "equivalence": entry["equivalence"],
            }
    reference = data["equivalence"]["reference"]
    if reference not in versions:
        raise ValueError(
            f"{lines.where('[equivalence]')}: reference {reference!r} is not a declared version"
            f"{did_you_mean(reference, versions)}"
        )
    return {
        "sha256": hashlib.sha256(raw).hexdigest(),
        "versions": versions,
        "reference": reference,
        "scripts": list(data.get("examples", {}).get("scripts", [])),
    }


def release_key(version: str) -> tuple[int, ...]:
    """``"1.4.9"`` -> ``(1, 4, 9)``, ``"1.5"`` -> ``(1, 5)``: releases in order."""
    return tuple(int(part) for part in version.split("."))


def newest_release_before_removal(pattern_ids: list[str], matrix: dict[str, Any]) -> str:
    """The newest release of ``matrix`` (:func:`load_matrix`) older than the release that removed any of the
    registry patterns ``pattern_ids`` (their ``removed_in``): the release where they all still ran.

    Raises:
        KeyError: an id the registry does not know.
        ValueError: no declared release is that old.
    """
    from lightning_migrate import registry

    removed = min(release_key(registry.get(pattern_id).removed_in) for pattern_id in pattern_ids)
    older = [version for version in matrix["versions"] if release_key(version) < removed]
    if not older:
        raise ValueError(f"{MATRIX_FILE} declares no release before the removal of {' '.join(pattern_ids)}")
    return max(older, key=release_key)


def data_path(version: str, folder: Path = COMPAT_DIR) -> Path:
    """Where the data file of ``version`` lives (the committed record by default)."""
    return folder / f"{version}.json"


def run_example(script: Path) -> dict[str, Any]:
    """Run one gallery script with this Python in an empty temporary directory; record whether it passed."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp,
            env=dict(os.environ, MPLBACKEND="Agg"),
            capture_output=True,
            text=True,
            check=False,
        )
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    return {
        "script": script.relative_to(ROOT).as_posix(),
        "passed": proc.returncode == 0,
        "returncode": proc.returncode,
        "stdout": proc.stdout.splitlines(),
        "error": errors[-1] if proc.returncode != 0 and errors else None,
    }


def collect(version: str, matrix: dict[str, Any], folder: Path = COMPAT_DIR) -> dict[str, Any]:
    """Run probes, equivalence and (for ``[matrix]`` releases) the examples on the installed Lightning.

    ``folder`` holds the records of this run: a ``replacements`` release compares its values, float for float,
    with the reference release's record there (recorded on this machine by the session run before).

    Raises:
        RuntimeError: the installed Lightning is not ``version``, or the reference record is missing.
        AssertionError: the equivalence check failed (see :func:`migration_guide.equivalence.run`).
    """
    entry = matrix["versions"][version]
    _, dist, installed = probes.import_lightning()
    if installed != version:
        raise RuntimeError(f"this environment has {dist} {installed}, not {version}")
    probes._quiet_lightning()
    result: dict[str, Any] = {"version": version, "group": entry["group"], "matrix_sha256": matrix["sha256"]}
    result["probes"] = probes.probe_all()
    variants = EQUIVALENCE_MODES[entry["equivalence"]]
    eq = equivalence.run(variants)
    if entry["equivalence"] == "replacements":
        reference_file = data_path(matrix["reference"], folder)
        if not reference_file.is_file():
            session = "record" if folder == COMPAT_DIR else "legacy"
            raise RuntimeError(f"{reference_file} is missing: run `nox -s {session}` for {matrix['reference']} first")
        reference = records.read_record(reference_file)["equivalence"]["variants"]["old"]
        for variant in variants:
            assert eq["variants"][variant] == reference, (
                f"{variant} on {version} differs from training_epoch_end on {matrix['reference']}:\n"
                f"{eq['variants'][variant]}\n{reference}"
            )
        eq["reference"] = {"version": matrix["reference"], "variant": "old", "identical": True}
    result["equivalence"] = eq
    if entry["group"] == "legacy":
        result["observations"] = observations.observe_all()
        result["rewrites"] = rewrite_equivalence.record()
        result["hooks"] = hook_names.hook_classes()  # the hooks a 1.x release had: LM007 reports those 2.x lacks
    if entry["group"] == "matrix":  # each script in a process of its own, at the same time (6.5 s -> 3.6 s on 2 cores)
        with concurrent.futures.ThreadPoolExecutor() as pool:
            result["examples"] = list(pool.map(run_example, [ROOT / script for script in matrix["scripts"]]))
    return result


def summary(result: dict[str, Any]) -> str:
    """What the session prints: per pattern its outcome, what the old hook received, the warnings and errors."""
    lines = [f"Lightning {result['version']} ({result['probes']['lightning']['distribution']}):"]
    for record in result["probes"]["records"]:
        lines.append(f"  {record['pattern']}: {record['outcome']}, hook ran {record['hook_calls']} time(s)")
        if record["received"] is not None:
            lines.append(f"    received: {json.dumps(record['received'])}")
        for warning in record["warnings"]:
            lines.append(f"    {warning['category']}: {warning['message']}")
        if record["error_type"] is not None:
            lines.append(f"    {record['error_type']} during {record['failed_during']}: {record['error_message']}")
    for variant, epochs in result["equivalence"]["variants"].items():
        lines.append(f"  per-epoch mean loss, {variant}: {[epoch['mean'] for epoch in epochs]}")
    for observation in result.get("observations", []):
        lines.append(f"  observed {json.dumps(observation)}")
    for shape, recorded in result.get("rewrites", {}).items():
        ran = [name for name, run in recorded["runs"].items() if "error" not in run]
        lines.append(f"  rewrite shape {shape}: ran in {', '.join(ran) or 'no configuration'}")
    for ex in result.get("examples", []):
        lines.append(f"  {ex['script']}: {'passed' if ex['passed'] else 'FAILED: ' + str(ex['error'])}")
    return "\n".join(lines)


def check(result: dict[str, Any], committed: Path) -> list[str]:
    """The differences between a run's record and the committed one (:func:`lightning_migrate.records.differences`),
    one line each; ``[]`` when they agree. A missing committed record is one difference."""
    if not committed.is_file():
        return [f"{committed} is missing: record it with `nox -s record`"]
    return records.differences(result, records.read_record(committed))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True, help="the Lightning release declared in matrix.toml")
    parser.add_argument(
        "--check",
        action="store_true",
        help=f"write the run's record under {CHECK_DIR.relative_to(ROOT)} and exit 1 when it differs from the "
        f"committed one in {COMPAT_DIR.relative_to(ROOT)} (default: record, rewriting the committed file)",
    )
    parser.add_argument(
        "--scenario-cells",
        action="store_true",
        help="also run every recipe of data/scenarios.toml on this release, in the smallest set of cells that meets "
        "each value of its domain (migration_guide.scenarios.releases), against the build's ground truth",
    )
    parser.add_argument("--jobs", type=int, help="worker processes of the scenario cells (default: one per core)")
    parser.add_argument(
        "--pages",
        action="store_true",
        help="check that the pages import and call only what this release has (migration_guide.release_api)",
    )
    args = parser.parse_args(argv)
    matrix = load_matrix()
    if args.version not in matrix["versions"]:
        parser.error(f"{args.version} is not declared in {MATRIX_FILE}")
    folder = CHECK_DIR if args.check else COMPAT_DIR
    result = collect(args.version, matrix, folder)
    lines: list[str] = []
    if args.scenario_cells:  # run before the record is written: its outcomes are part of it
        from migration_guide.scenarios import releases

        lines, cells, seconds, result["scenario_cells"] = releases.check_release(args.version, args.jobs)
        print(
            f"scenario cells on Lightning {args.version}: {cells} cells in {seconds:.0f} s, "
            f"{len(lines)} not as declared"
        )
        for line in lines:
            print(line, file=sys.stderr)
    output = data_path(args.version, folder)
    changed = records.write_record(output, result)
    failed = [ex["script"] for ex in result.get("examples", []) if not ex["passed"]]
    print(summary(result))
    code = 0
    if args.check:
        committed = data_path(args.version)
        drift = check(result, committed)
        if drift:
            print(
                f"{committed.relative_to(ROOT)}: Lightning {args.version} no longer does what its committed record "
                f"says ({len(drift)} differences; floats compared within {records.RELATIVE_TOLERANCE:g} relative or "
                f"{records.ABSOLUTE_TOLERANCE:g} absolute):",
                file=sys.stderr,
            )
            print("\n".join(f"  {line}" for line in drift), file=sys.stderr)
            where = output.relative_to(ROOT)
            print(f"  this run's record: {where}; `nox -s record` writes it to data/compat on purpose", file=sys.stderr)
            code = 1
        else:
            print(f"{committed.relative_to(ROOT)}: this run agrees with the committed record")
    else:
        print(f"wrote {output} ({'changed: commit it' if changed else 'unchanged'})")
    if failed:  # recorded in the data file, and a failure of the session: the guide claims they work here
        print(f"failed on Lightning {args.version}: {', '.join(failed)}", file=sys.stderr)
        code = 1
    if args.pages:
        from migration_guide import release_api

        lacking = release_api.problems()
        print(f"pages on Lightning {args.version}: {len(release_api.pages())} read, {len(lacking)} use what it lacks")
        for line in lacking:
            print(line, file=sys.stderr)
        code = code or (1 if lacking else 0)
    return code or (1 if lines else 0)


if __name__ == "__main__":
    raise SystemExit(main())
