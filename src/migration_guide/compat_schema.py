"""The schema of ``data/compat/matrix.toml``, declared once: the Lightning releases the compatibility table covers,
how each is installed, and what its run is compared with.

:func:`migration_guide.compat.load_matrix` checks the file against :data:`FILE` (an unknown key names the closest
known one, with the file's line), the noxfile installs each release from it (``install_lightning_release``), and
``docs/contributing.md`` renders it (``python -m migration_guide.compat_schema`` prints it). Each kind of
``equivalence`` is implemented by one entry of :data:`migration_guide.compat.EQUIVALENCE_MODES`;
``tests/test_compat_data.py`` fails when the two disagree.

No Lightning is imported here.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from .data_schema import Key, Lines, markdown, problems, unknown_keys

#: What a release's run compares (:data:`migration_guide.compat.EQUIVALENCE_MODES` implements each).
EQUIVALENCE = {
    "old": "the old training_epoch_end(outputs) hook only",
    "old-and-replacements": (
        "the old hook and both replacements, asserted identical in the same process: the reference release's values"
    ),
    "replacements": (
        "both replacements, asserted identical to each other and, float for float, to the old hook's values on the "
        "reference release (read from its record)"
    ),
}
RELEASE = {
    "pins": Key(
        "what pip installs after torch's CPU wheel (torch held at its pin): the release and the pins it needs",
        (list,),
        required=True,
        items=Key("a requirement", (str,)),
    ),
    "after": Key(
        "installed last, without dependencies: pins that contradict the pinned torch's metadata (setuptools<70)",
        (list,),
        default=[],
        items=Key("a requirement", (str,)),
    ),
    "equivalence": Key("what the release's run compares", (str,), required=True, choices=EQUIVALENCE),
}
GROUPS = {
    "legacy": "1.x releases, where the old hooks ran: their probes, observations and rewrites are recorded",
    "matrix": "2.x releases: the replacements and the examples of [examples] run there",
}
REFERENCE = Key("the release whose old hook's values every replacement reproduces", (str,), required=True)
FILE = {
    **{
        group: Key(
            f'``[{group}]``: ``"<release>" = {{ pins, after, equivalence }}``: {meaning}',
            (dict,),
            required=True,
            named=Key("a release", (dict,), keys=RELEASE),
        )
        for group, meaning in GROUPS.items()
    },
    "equivalence": Key("``[equivalence]``", (dict,), required=True, keys={"reference": REFERENCE}),
    "examples": Key(
        "``[examples]``",
        (dict,),
        keys={
            "scripts": Key(
                "replacement examples executed on every [matrix] release (paths from the repository's root)",
                (list,),
                default=[],
                items=Key("a path", (str,)),
            )
        },
    ),
}


def read(path: Path) -> dict[str, Any]:
    """The file at ``path``, parsed and checked against :data:`FILE` (stdlib only: the noxfile reads it so).

    Raises:
        ValueError: the file is not TOML, or departs from its schema: each problem on a line naming the file, the
            line and table, the key, and the closest known key of an unknown one.
    """
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: {err}") from None
    lines = Lines(text, path)
    found = [f"{path}: unknown table {text}; known: {', '.join(FILE)}" for text in unknown_keys(data, FILE)]
    for name, key in FILE.items():
        if name not in data:
            if key.required:
                found.append(f"{path}: missing section [{name}]")
            continue
        if key.named is not None and isinstance(data[name], dict):
            for version, entry in data[name].items():
                found += problems(entry, key.named, lines.where(f"[{name}]", key=version, label=f"[{name}] {version}"))
        else:
            found += problems(data[name], key, lines.where(f"[{name}]"))
    if found:
        raise ValueError("\n".join(found))
    return data


def document() -> str:
    """The schema as Markdown."""
    return markdown(FILE)


if __name__ == "__main__":  # python -m migration_guide.compat_schema
    print(document())
