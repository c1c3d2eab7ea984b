"""Declaring the schema of a data file once, and checking a file against it: the keys of each table, their types,
the closed sets of values (*kinds*), what each means, and the defaults.

The data files' schemas are declared with :class:`Key`: ``data/scenarios.toml``'s in
:mod:`migration_guide.scenario_schema`, ``data/compat/matrix.toml``'s in :mod:`migration_guide.compat_schema`
(the claims file's is :mod:`migration_guide.claim_schema`). The loaders check a file with :func:`problems`, whose
messages name the file, the line of the table (:class:`Lines`), the table and the key, and the closest known key
for an unknown one; :func:`markdown` renders a schema for ``docs/contributing.md``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any


def did_you_mean(name: Any, known: Any) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known`` to ``name``, or ``""``."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_keys(table: dict[str, Any], known: Any) -> list[str]:
    """Each key of ``table`` not in ``known``, worded with its closest known key."""
    return [f"{key!r}{did_you_mean(key, known)}" for key in table if key not in known]


#: TOML's names of the Python types a key may hold.
TYPE_NAMES = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "a list", dict: "a table"}


@dataclass(frozen=True)
class Key:
    """One key of a table: what it holds (``doc``), the TOML types it may have, whether it is required, its default.

    ``choices``: a closed set of values, each with what it means (a *kind*: the code that reads the file has one
    implementation per value; :func:`kinds` lists them). ``keys``: the value is a table with these keys.
    ``named``: a table whose keys the file chooses (ids), each value as described. ``items``: a list, each item as
    described. ``prefix``: characters a value may start with before its choice (``"+fit"``).
    """

    doc: str
    types: tuple[type, ...] = ()
    required: bool = False
    default: Any = None
    choices: Mapping[Any, str] | None = None
    keys: Mapping[str, Key] | None = None
    named: Key | None = None
    items: Key | None = None
    prefix: str = ""

    def type_words(self) -> str:
        return " or ".join(TYPE_NAMES[kind] for kind in self.types)


def _is(value: Any, kind: type) -> bool:
    """``isinstance`` in TOML's terms: a boolean is not an integer, an integer is a number."""
    if kind is bool or isinstance(value, bool):
        return type(value) is kind
    if kind is float:
        return isinstance(value, (int, float))
    return isinstance(value, kind)


def _choice(value: Any, key: Key) -> Any:
    return value.lstrip(key.prefix) if key.prefix and isinstance(value, str) else value


def _in_choices(value: Any, choices: Mapping[Any, str]) -> bool:
    return any(type(value) is type(choice) and value == choice for choice in choices)


def problems(value: Any, key: Key, where: str, name: str = "") -> list[str]:
    """What is wrong with ``value`` under ``key``, one line each, ``[]`` when nothing is: ``where`` names the file,
    line and table (``data/scenarios.toml:120: [axis.calls]``), ``name`` the dotted key inside it."""
    label = f"{where}: {name}" if name else where
    if key.types and not any(_is(value, kind) for kind in key.types):
        return [f"{label} must be {key.type_words()}, not {value!r}"]
    if key.choices is not None:
        choice = _choice(value, key)
        if not _in_choices(choice, key.choices):
            known = ", ".join(repr(c) for c in key.choices)
            return [f"{label} = {value!r} is not one of {known}{did_you_mean(choice, key.choices)}"]
    found: list[str] = []
    if key.keys is not None and isinstance(value, dict):
        found += table_problems(value, key.keys, where, name)
    if key.named is not None and isinstance(value, dict):
        for item_name, item in value.items():
            found += problems(item, key.named, where, f"{name}.{item_name}" if name else str(item_name))
    if key.items is not None and isinstance(value, list):
        for index, item in enumerate(value):
            found += problems(item, key.items, where, f"{name}[{index}]")
    return found


def table_problems(table: dict[str, Any], keys: Mapping[str, Key], where: str, name: str = "") -> list[str]:
    """:func:`problems` of each key of ``table``, every unknown key (with the closest known one) and every missing
    required key."""
    prefix = f"{name}." if name else ""
    found = [
        f"{where}: unknown key {prefix + key!r}{did_you_mean(key, keys)}; known: {', '.join(keys)}"
        for key in table
        if key not in keys
    ]
    missing = [k for k, spec in keys.items() if spec.required and k not in table]
    if missing:
        found.append(f"{where} lacks {sorted(prefix + k for k in missing)}")
    for k, v in table.items():
        if k in keys:
            found += problems(v, keys[k], where, prefix + k)
    return found


def defaults(keys: Mapping[str, Key]) -> dict[str, Any]:
    """A table of every key's default (a nested table's, its keys' defaults), for keys that have one."""
    made: dict[str, Any] = {}
    for name, key in keys.items():
        if key.keys is not None:
            made[name] = defaults(key.keys)
        elif key.default is not None or not key.required:
            made[name] = key.default
    return made


def kinds(keys: Mapping[str, Key], path: str = "") -> Iterator[tuple[str, Key]]:
    """``(dotted path, key)`` of every key with ``choices`` under ``keys``, nested tables, lists and named tables
    included (a list's or a named table's items under the list's path)."""
    for name, key in keys.items():
        here = f"{path}.{name}" if path else name
        for spec in _inner(key):
            if spec.choices is not None:
                yield here, spec
            if spec.keys is not None:
                yield from kinds(spec.keys, here)


def _inner(key: Key) -> Iterator[Key]:
    yield key
    for nested in (key.items, key.named):
        if nested is not None:
            yield from _inner(nested)


class Lines:
    """The line of a table (or of one key inside it) in a TOML text, for error messages: ``[axis.calls]`` is the
    line of that header, ``[[recipe.r.outside]]`` with ``nth`` the nth such header; ``key`` a line starting with
    ``key =`` after the header (an inline table of the file's own key, ``fit = { ... }``)."""

    def __init__(self, text: str, path: Any):
        self.lines = text.splitlines()
        self.path = path

    def line(self, header: str, nth: int = 0, key: str | None = None) -> int | None:
        pattern = re.compile(rf"^\s*{re.escape(header)}\s*(#.*)?$")
        starts = [number for number, text in enumerate(self.lines) if pattern.match(text)]
        if len(starts) <= nth:
            parent, _, last = header.strip("[]").rpartition(".")
            if parent and header.startswith("[") and not header.startswith("[["):  # an inline table of its parent
                return self.line(f"[{parent}]", key=last)
            return None
        start = starts[nth]
        if key is None:
            return start + 1
        bare = re.compile(rf"^\s*(\"{re.escape(key)}\"|{re.escape(key)})\s*=")
        for number in range(start + 1, len(self.lines)):
            text = self.lines[number]
            if text.startswith("[") and number > start:
                break
            if bare.match(text):
                return number + 1
        return start + 1

    def where(self, header: str, nth: int = 0, key: str | None = None, label: str | None = None) -> str:
        """``<file>:<line>: <label>`` (``label`` defaults to ``header``)."""
        number = self.line(header, nth, key)
        place = f"{self.path}:{number}" if number else f"{self.path}"
        return f"{place}: {label or header}"


def markdown(
    keys: Mapping[str, Key], level: int = 0, nested: bool = True, heading: Callable[[str], str] = lambda n: f"`{n}`"
) -> str:
    """The schema as a nested Markdown list: each key with its types, whether it is required, its default and what it
    holds; each choice with what it means; with ``nested``, the keys of a nested table under it."""
    lines: list[str] = []
    pad = "  " * level
    for name, key in keys.items():
        facts = [key.type_words()] if key.types else []
        if key.required:
            facts.append("required")
        if key.default not in (None, [], {}) and key.keys is None:
            facts.append(f"default `{_toml(key.default)}`")
        head = f"{pad}- {heading(name)}" + (f" ({', '.join(facts)})" if facts else "")
        lines.append(f"{head}: {key.doc}")
        for spec in _inner(key):
            if spec.choices is not None:
                for choice, meaning in spec.choices.items():
                    lines.append(f"{pad}  - `{_toml(choice)}`: {meaning}")
            if spec.keys is not None and nested:
                lines.append(markdown(spec.keys, level + 1))
    return "\n".join(line for line in lines if line)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)
