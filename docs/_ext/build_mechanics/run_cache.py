"""Runs Lightning's recorders (the probes, the scenario matrix) once per set of inputs in a test run; builds share them.

The probes (``guide.probe_records``) and the scenario matrix (``guide.scenario_matrix``) each run Lightning in a
Python process of their own and write one JSON document. A build re-runs them when their inputs changed, and a CI
build (``CI=true``) always does. A test run builds the site more than once from the same sources in the same
environment: the doc-test session, then pytest's build of the site and its small fixture projects. When the
environment variable :data:`VARIABLE` names a directory (the noxfile gives each ``nox`` run its own, under
``_build/``; pytest makes one per test session when it is unset), a run that succeeded is kept there, and a later
build of the same test run whose inputs are the same copies its document instead of running it again. Same inputs:

- the key the extension computes: the hash of every file the run reads (the project's sources, the matrix file,
  the recipe pages), which a change to any of them changes;
- the Python version, the platform, the warning filters (``PYTHONWARNINGS``: the build's declared warnings) and
  ``OMP_NUM_THREADS``;
- the version of every installed distribution the run imported, recorded by :func:`main` when the run ends and
  compared with this environment's at lookup (the doc-test session's and pytest's environments differ by the test
  tools, which the runs never import).

Only a run that exited 0 is kept. Without :data:`VARIABLE` nothing is kept or looked up: ``nox -s docs`` and a
reader's build behave as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import runpy
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

from lightning_migrate.records import read_record, write_atomic

#: The environment variable naming the directory of this test run's kept runs.
VARIABLE = "GUIDE_RUN_CACHE"


def directory() -> Path | None:
    """The directory :data:`VARIABLE` names, or ``None`` when it is unset or empty (nothing is kept)."""
    value = os.environ.get(VARIABLE, "").strip()
    return Path(value) if value else None


def run_command(module: str, *args: str, environment: Path) -> list[str]:
    """The command running ``python -m module args`` with this interpreter through :func:`main`, which writes the
    distributions the run imported to ``environment`` (JSON) when the run exits 0."""
    return [sys.executable, "-m", "build_mechanics.run_cache", str(environment), module, *args]


def _full_key(name: str, key: str) -> str:
    digest = hashlib.sha256()
    for part in (
        name,
        key,
        sys.version,
        platform.platform(),
        os.environ.get("PYTHONWARNINGS", ""),
        os.environ.get("OMP_NUM_THREADS", ""),
    ):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:32]


def _installed(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def lookup(name: str, key: str, output: Path) -> bool:
    """Copy this test run's kept document of the run ``name`` with inputs ``key`` to ``output``.

    Returns:
        ``True`` when a kept run matched (its imported distributions are installed here in the same versions) and
        ``output`` now holds its document; ``False`` when nothing is kept or nothing matched (``output`` untouched).
    """
    folder = directory()
    if folder is None:
        return False
    prefix = f"{name}-{_full_key(name, key)}-"
    for environment in sorted(folder.glob(f"{prefix}*.environment.json")):
        try:
            imported = read_record(environment)
            document = environment.with_name(environment.name.replace(".environment.json", ".json")).read_bytes()
        except (OSError, ValueError):  # being written by another build, or removed: not a match
            continue
        if all(_installed(dist) == version for dist, version in imported.items()):
            write_atomic(output, document)
            return True
    return False


def store(name: str, key: str, output: Path, environment: Path) -> None:
    """Keep the document at ``output`` of a run that exited 0, with the distributions it imported (``environment``,
    written by :func:`main`), for :func:`lookup` in later builds of this test run. Nothing when no directory is set.

    Raises:
        FileNotFoundError: ``environment`` is missing (the run was not started with :func:`run_command`).
    """
    folder = directory()
    if folder is None:
        return
    imported = environment.read_bytes()
    stem = f"{name}-{_full_key(name, key)}-{hashlib.sha256(imported).hexdigest()[:16]}"
    write_atomic(folder / f"{stem}.json", output.read_bytes())
    write_atomic(folder / f"{stem}.environment.json", imported)  # written last: lookup needs both


def imported_distributions() -> dict[str, str]:
    """``{distribution: version}`` of every installed distribution a module of this process was imported from.

    Modules loaded from elsewhere (the standard library, the project's own ``src/``, which the extension's key
    hashes) are left out: only what lives in this environment's site-packages counts.
    """
    installed = {Path(sysconfig.get_paths()[kind]).resolve() for kind in ("purelib", "platlib")}
    owners = metadata.packages_distributions()
    found: dict[str, str] = {}
    for name, module in list(sys.modules.items()):
        if "." in name or not getattr(module, "__file__", None):
            continue
        path = Path(module.__file__).resolve()
        if not any(path.is_relative_to(root) for root in installed):
            continue
        for dist in owners.get(name, ()):
            version = _installed(dist)
            if version is not None:
                found[dist] = version
    return dict(sorted(found.items()))


def main(argv: list[str] | None = None) -> int:
    """``python -m build_mechanics.run_cache ENVIRONMENT MODULE [ARG ...]``: run ``MODULE`` as ``python -m`` would;
    when it exits 0, write :func:`imported_distributions` to ``ENVIRONMENT`` (JSON). Returns the module's exit code.
    """
    environment, module, *args = sys.argv[1:] if argv is None else argv
    sys.argv = [module, *args]
    code: int | str | None = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        code = exit_.code
    if code in (0, None):
        write_atomic(Path(environment), json.dumps(imported_distributions(), indent=1) + "\n")
        return 0
    if isinstance(code, str):  # sys.exit("message"): Python prints it and exits 1
        print(code, file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
