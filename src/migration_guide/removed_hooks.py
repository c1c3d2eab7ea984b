"""The hooks a recorded 1.x release had and the build's release lacks, for the checker (LM007).

A ``[legacy]`` release's record (``data/compat/<version>.json``) holds the methods of its hook classes (``hooks``:
:func:`lightning_migrate.hook_names.hook_classes`); the checker's record of the installed release
(``src/lightning_migrate/data/hook_names.json``) holds the hooks it calls. The names in the first and not in the
second -- ``on_pretrain_routine_start``, ``on_init_start`` -- are methods a 2.x Trainer has no hook of that name for.
``python -m migration_guide.removed_hooks --output src/lightning_migrate/data/removed_hooks.json`` writes the copy the
checker ships; ``tests/checker/test_removed_hooks.py`` checks that file against the records.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from lightning_migrate import hook_names
from lightning_migrate.records import write_atomic
from migration_guide import compat

#: The copy the imported package reads (the checker reads it without the repository; the test compares it).
OUTPUT = Path(hook_names.__file__).resolve().parent / "data" / "removed_hooks.json"


def derive() -> dict[str, Any]:
    """``{"installed": version, "LightningModule": {name: [releases]}, "Callback": {...}}``: each hook of a legacy
    release's record that the installed release's record lacks, with the recorded releases that had it, oldest
    first.

    Raises:
        KeyError: a legacy release's record has no ``hooks`` (record it with ``nox -s legacy``).
    """
    installed = hook_names.load()
    legacy = [v for v, entry in compat.load_matrix()["versions"].items() if entry["group"] == "legacy"]
    result: dict[str, Any] = {"installed": installed["lightning"]["version"]}
    for kind in hook_names.KINDS:
        had: dict[str, list[str]] = {}
        for version in sorted(legacy, key=compat.release_key):
            recorded = json.loads(compat.data_path(version).read_text(encoding="utf-8"))["hooks"][kind]
            for name in recorded:
                if name not in installed[kind]["hooks"]:
                    had.setdefault(name, []).append(version)
        result[kind] = dict(sorted(had.items()))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--output",
        type=Path,
        required=True,  # never the installed package's own file by default, as for hook_names
        help="where to write (the checkout's is src/lightning_migrate/data/removed_hooks.json)",
    )
    args = parser.parse_args(argv)
    write_atomic(args.output, json.dumps(derive(), indent=1) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
