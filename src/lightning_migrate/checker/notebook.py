"""Jupyter notebooks (``.ipynb``) as the checker reads them: their code cells as one Python source, and back.

Read as ruff reads a notebook: the code cells of a Python notebook, in order, joined into one source (so a class
defined in one cell and subclassed in another resolves), with IPython's own syntax left out -- a line magic
(``%matplotlib inline``), a shell line (``!pip install ...``, ``files = !ls``) or a help line (``obj?``) becomes a
comment of the same indentation, and a cell that starts with a cell magic is skipped whole (``%%bash``), unless the
magic runs the cell as Python (``%%time``, ``%%capture``: :data:`PYTHON_CELL_MAGICS`), whose first line is then left
out as a line magic is. Findings are placed as ``cell N`` (the N-th code cell, counting from 1, as ruff and nbQA
count) and the line in that cell. A cell that does not parse on its own (Jupyter runs each cell alone) is reported
and left out; the others are still read. Fixes go back into the cells' sources; outputs, metadata and every other
cell are left as they were.
"""

from __future__ import annotations

import ast
import io
import json
import re
import secrets
import tokenize
from dataclasses import dataclass, field
from typing import Any

#: The cell magics of IPython whose cell below the first line is Python that the kernel runs (``%%time``,
#: ``%%capture out``): the magic line is left out as a line magic is and the rest is read. Any other cell magic
#: (``%%bash``, ``%%writefile``) makes its cell something else, skipped whole. Source: IPython's built-in magics
#: (``%%time``, ``%%timeit``, ``%%capture``, ``%%prun``, ``%%debug``).
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
#: A line IPython reads as a magic, a shell escape or a help request, not as Python.
IPYTHON_LINE = re.compile(r"^\s*(?:[%!?]|[\w.]+\s*\?{1,2}\s*$|[\w.,\s\[\]()*]+=\s*[!%])")


class NotebookError(ValueError):
    """The file is not a notebook the checker can read (not JSON, no cells, not a Python notebook)."""


@dataclass
class Cell:
    """A code cell: its index in the notebook's ``cells``, its number among code cells (1-based), its source
    lines as read (each with its line end), and whether it was read at all (a cell magic is not)."""

    index: int
    number: int
    lines: list[str]
    checked: bool
    #: ``"string"`` or ``"list"``: how the notebook stores the cell's source
    form: str = "list"


@dataclass
class Notebook:
    """A notebook's JSON, its code cells and the Python source the checker reads (``source``)."""

    data: dict[str, Any]
    cells: list[Cell]
    source: str
    #: for each line of ``source`` (1-based index - 1): ``(cell number, line in the cell)``, or ``None`` for the
    #: separators between cells
    places: list[tuple[int, int] | None] = field(default_factory=list)
    token: str = ""
    text: str = ""
    #: the code cells that do not parse on their own, left out of :attr:`source`: ``(cell number, error)``
    broken: list[tuple[int, SyntaxError]] = field(default_factory=list)

    def place(self, line: int) -> tuple[int, int] | None:
        """``(cell number, line in that cell)`` of a line of :attr:`source`."""
        return self.places[line - 1] if 0 < line <= len(self.places) else None


def _source_lines(cell: dict[str, Any], number: int) -> tuple[list[str], str]:
    """A code cell's source lines (each with its line end) and how the notebook stores it (``list`` or ``string``).

    Raises:
        NotebookError: the source is neither a string nor a list of strings (``number``: the code cell's number).
    """
    raw = cell.get("source", "")
    if isinstance(raw, list) and all(isinstance(part, str) for part in raw):
        text, form = "".join(raw), "list"
    elif isinstance(raw, str):
        text, form = raw, "string"
    else:
        raise NotebookError(f"cell {number}: `source` is not a string or a list of strings")
    return _lines(text), form


def _lines(text: str) -> list[str]:
    """``text`` cut after each ``\\n``, ``\\r\\n`` or ``\\r`` only, the ends kept: Python's line ends
    (``str.splitlines`` also cuts at form feeds, ``\\x85`` and U+2028, which are characters of a line)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def _continued_lines(lines: list[str]) -> set[int]:
    """The 1-based lines of a cell that start inside brackets or a multi-line string: a ``%`` or ``!`` there is
    Python (``"%s"\\n    % value``), not IPython. Read with :mod:`tokenize`; a cell it cannot read has none."""
    inside: set[int] = set()
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth = max(depth - 1, 0)
            elif token.type == tokenize.NL and depth:
                inside.add(token.start[0] + 1)
            elif token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return inside


def _language(metadata: Any) -> str | None:
    """The notebook's language (``metadata.language_info.name``, else ``metadata.kernelspec.language``).

    Raises:
        NotebookError: the metadata, one of those two objects, or the name is not of the type nbformat gives it.
    """
    if not isinstance(metadata, dict):
        raise NotebookError("not a notebook: `metadata` is not an object")
    for key, name in (("language_info", "name"), ("kernelspec", "language")):
        section = metadata.get(key, {})
        if not isinstance(section, dict):
            raise NotebookError(f"not a notebook: `metadata.{key}` is not an object")
        value = section.get(name)
        if value is not None and not isinstance(value, str):
            raise NotebookError(f"not a notebook: `metadata.{key}.{name}` is not a string")
        if value:
            return value
    return None


def read(text: str) -> Notebook:
    """Parse a notebook's text.

    Raises:
        NotebookError: not JSON, no ``cells`` list, metadata or a cell's source not of nbformat's types, or the
            notebook's language is not Python.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise NotebookError(f"not a notebook: invalid JSON at line {err.lineno}: {err.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("not a notebook: no `cells` list")
    language = _language(data.get("metadata", {}))
    if language not in (None, "python"):
        raise NotebookError(f"a {language} notebook, not Python")
    token = secrets.token_hex(4)
    cells: list[Cell] = []
    out: list[str] = []
    places: list[tuple[int, int] | None] = []  # each line of the joined code: (cell, line), None for a cell's header
    broken: list[tuple[int, SyntaxError]] = []
    number = 0
    for index, cell in enumerate(data["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        number += 1
        lines, form = _source_lines(cell, number)
        first = next((line for line in lines if line.strip()), "")  # IPython drops a cell's leading blank lines
        magic = re.match(r"\s*%%(\w+)", first)
        checked = magic is None or magic.group(1) in PYTHON_CELL_MAGICS
        cells.append(Cell(index, number, lines, checked, form))
        if not checked:
            continue
        continued = _continued_lines(lines)
        escaped = False  # the line before was IPython's and ended with a backslash: this one continues it
        python = []
        for at, line in enumerate(lines, start=1):
            body = line.rstrip("\r\n")
            if escaped or (at not in continued and IPYTHON_LINE.match(body)):
                escaped = body.endswith("\\")
                indent = body[: len(body) - len(body.lstrip())]
                body = f"{indent}# lightning-migrate-ipython {token} {number} {at}"
            python.append(body + "\n")
        try:  # Jupyter runs each cell on its own: a cell that does not parse alone is reported and left out
            compile("".join(python), f"cell {number}", "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        except (SyntaxError, ValueError) as err:
            cells[-1].checked = False
            broken.append((number, err if isinstance(err, SyntaxError) else SyntaxError(str(err))))
            continue
        out.append(f"# lightning-migrate-cell {token} {number}\n")
        places.append(None)
        out += python
        places += [(number, at) for at in range(1, len(python) + 1)]
    return Notebook(data, cells, "".join(out), places, token, text, broken)


def write(notebook: Notebook, new_source: str) -> str:
    """The notebook's text with its code cells' sources taken from ``new_source`` (the checker's rewrite of
    :attr:`Notebook.source`): each cell's new lines, its IPython lines restored; everything else as it was.

    The JSON is written the way it was read when one of the usual layouts gives back the file byte for byte
    (Jupyter's: ``indent=1``, keys sorted, non-ASCII kept), its CRLF line ends included; a cell whose lines end with
    CRLF keeps them.

    Raises:
        NotebookError: the rewrite lost the boundaries between cells (a bug; nothing is written).
    """
    marker = re.compile(rf"^# lightning-migrate-cell {notebook.token} (\d+)$")
    ipython = re.compile(rf"^\s*# lightning-migrate-ipython {notebook.token} (\d+) (\d+)$")
    by_number = {cell.number: cell for cell in notebook.cells}
    chunks: dict[int, list[str]] = {}
    current = None
    for line in _lines(new_source):
        found = marker.match(line.rstrip("\r\n"))
        if found:
            current = int(found.group(1))
            chunks[current] = []
            continue
        if current is None:
            if line.strip():
                raise NotebookError("the rewrite put code before the first cell")
            continue
        kept = ipython.match(line.rstrip("\r\n"))
        if kept:
            cell = by_number[int(kept.group(1))]
            line = cell.lines[int(kept.group(2)) - 1]
            if not line.endswith("\n"):
                line += "\n"
        chunks[current].append(line)
    if set(chunks) != {cell.number for cell in notebook.cells if cell.checked}:
        raise NotebookError("the rewrite lost the boundaries between cells")
    data = notebook.data
    for number, lines in chunks.items():
        cell = by_number[number]
        if cell.lines and not cell.lines[-1].endswith("\n") and lines and lines[-1].endswith("\n"):
            lines[-1] = lines[-1][:-1]  # the cell's last line had no line end
        lines = _with_line_ends(cell.lines, lines)
        if "".join(lines) == "".join(cell.lines):
            continue
        raw = data["cells"][cell.index]
        raw["source"] = lines if cell.form == "list" else "".join(lines)
    return dump(data, notebook.text)


def _with_line_ends(old: list[str], new: list[str]) -> list[str]:
    """``new`` (a cell's lines as the checker rewrote them, LF line ends) with the line ends of ``old`` (the cell's
    lines as read): a line the fix left as it was keeps its own end, a new line takes the end most of the cell's
    lines have."""
    import difflib

    def bare(line: str) -> str:
        return line.rstrip("\r\n")

    ends = [line[len(bare(line)) :] for line in old if line != bare(line)]
    usual = max(set(ends), key=ends.count) if ends else "\n"
    out = []
    matcher = difflib.SequenceMatcher(None, [bare(line) for line in old], [bare(line) for line in new], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for old_line, new_line in zip(old[i1:i2], new[j1:j2], strict=True):
                end = old_line[len(bare(old_line)) :] or usual  # the cell's last line may have had none
                out.append(bare(old_line) + end if new_line != bare(new_line) else bare(old_line))
        else:
            out += [bare(line) + usual if line != bare(line) else line for line in new[j1:j2]]
    return out


def dump(data: dict[str, Any], original: str) -> str:
    """``data`` as JSON in the layout of ``original`` (see :func:`write`): its line ends (JSON keeps no line end
    inside a string, so every one is the layout's), its indentation (spaces or a tab, or none), the spacing around
    its first colon and after its commas, its ``\\uXXXX`` escapes of non-ASCII characters, its final newline, and
    the order of its keys (:func:`json.loads` keeps it)."""
    newline = "\r\n" if "\r\n" in original else "\n"
    text = original.replace("\r\n", "\n")
    end = "\n" if text.endswith("\n") else ""
    indented = re.search(r"\n([ \t]+)\S", text)
    indent = indented.group(1) if indented else None
    colon = re.search(r'"([ \t]*:[ \t]*)', text)
    between = re.search(r'[^\\]"(,[ \t]?)"', text)  # a comma between a string and the next key or item
    comma = "," if indent is not None or between is None else between.group(1)
    separators = (comma, colon.group(1) if colon else ": ")
    ensure_ascii = text.isascii() and "\\u" in text
    return (json.dumps(data, indent=indent, separators=separators, ensure_ascii=ensure_ascii) + end).replace(
        "\n", newline
    )
