"""What the project records from running Lightning: one outcome vocabulary, one atomic write, one drift check.

Three recorders run Lightning and write what it did as JSON: the probes (:mod:`migration_guide.probes`, one
record per registry pattern), the release recorder (:mod:`migration_guide.compat`, ``data/compat/<version>.json``)
and the scenario matrix (:mod:`migration_guide.scenarios`, one cell per recipe and scenario). They write through
:func:`write_record`, and the pages word their outcomes with :data:`PROBE_OUTCOMES` and :data:`CELL_OUTCOMES`.

A record that is committed (``data/compat/*.json``) is compared with a new run by :func:`differences`: outcomes,
texts and counts exactly, measured floats within :data:`RELATIVE_TOLERANCE` or :data:`ABSOLUTE_TOLERANCE` (as
:func:`math.isclose` compares) -- float rounding differs between processors, so the last digits of a loss are the
machine's, not Lightning's.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import secrets
from pathlib import Path
from typing import Any

#: What Lightning did with an old hook shape when the probes ran it (a probe record's ``outcome``), and how every
#: page words it: the compatibility table's cells, the reference table and the checker's rule pages.
PROBE_OUTCOMES = {
    "called": "works",
    "called_with_warning": "warns (deprecated)",
    "ignored": "silently ignored",
    "error": "raises",
}
#: What a recipe did in a scenario of the matrix (a cell's ``outcome``), and the symbol the matrix page shows.
CELL_OUTCOMES = {"holds": "✓", "differs": "≠", "raises": "✗", "not applicable": "·"}

#: Two measured values agree when they differ by at most this fraction of the larger. Differences between
#: processors stay below 1e-7 relative on the recorded losses (float32 training over 12 steps); a changed batch,
#: seed, learning rate or hook changes them by 1e-3 or more.
RELATIVE_TOLERANCE = 1e-5
#: Two measured values also agree when they differ by at most this much, whatever their size (``abs_tol`` of
#: :func:`math.isclose`). A relative tolerance alone fails near 0: a prediction of -0.00199 is a sum of products of
#: weights and inputs of order 1, and its rounding error is that of its terms (float32: 1.2e-7 at 1.0), not 1e-5 of
#: its own small size -- another machine recorded it 1.03e-5 relative (2e-8 absolute) apart. The recorded losses and
#: predictions lie between 0.002 and 1.6 (median 0.37), so the floor is the relative tolerance at their scale,
#: 1e-5 x 1 (eight float32 units at 1.0); a changed seed, batch or learning rate moves them by 1e-3 or more.
ABSOLUTE_TOLERANCE = 1e-6
#: A value written with at least this many decimals (a loss rounded to 6, a printed ``0.903014``) also agrees within
#: one unit of its last digit: the rounding of a value a hair's breadth apart can flip that digit. Shorter decimals
#: (a version such as ``1.5`` in a message, a 0.5) are not measurements and compare exactly.
MEASURED_DECIMALS = 4

#: A decimal number inside a text that looks measured (:data:`MEASURED_DECIMALS`); other numbers compare exactly.
_MEASURED = re.compile(rf"-?\d+\.\d{{{MEASURED_DECIMALS},}}(?:[eE][-+]?\d+)?")


def write_atomic(path: Path, data: bytes | str) -> bool:
    """Replace ``path``'s content with ``data`` (``str`` is written as UTF-8) so that no reader sees half a file.

    The data goes to a temporary file in the same folder, which then replaces ``path`` (:func:`os.replace`, atomic
    on POSIX and Windows). An existing file keeps its permission bits; a symlink is resolved, so the link stays a
    link; a new file gets the permissions of the process's umask. The folder is created when missing.

    Returns:
        ``True`` when the content changed (or the file is new), ``False`` when ``path`` already held ``data``
        (then nothing is written and the file's modification time stays).

    Raises:
        PermissionError: ``path`` exists and is read-only; it is not rewritten.
        OSError: the folder or the temporary file cannot be written; ``path`` is left as it was.
    """
    content = data.encode("utf-8") if isinstance(data, str) else data
    target = Path(path).resolve()
    exists = target.is_file()
    if exists:
        if target.read_bytes() == content:
            return False
        if not target.stat().st_mode & 0o222:
            raise PermissionError(errno.EACCES, "the file is read-only; not rewritten", str(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # 0o666 & ~umask, as open() would
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        if exists:
            os.chmod(tmp, target.stat().st_mode & 0o7777)
        os.replace(tmp, target)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    return True


def dumps(document: Any) -> str:
    """A record as it is stored: JSON, one-space indent, keys in the recorder's order, a final newline."""
    return json.dumps(document, indent=1, default=str) + "\n"


def write_record(path: Path, document: Any) -> bool:
    """Write a recorder's JSON ``document`` to ``path`` atomically (:func:`write_atomic` of :func:`dumps`).

    Returns:
        ``True`` when the stored content changed.
    """
    return write_atomic(path, dumps(document))


def read_record(path: Path) -> Any:
    """The JSON document stored at ``path``.

    Raises:
        FileNotFoundError: no record there.
        ValueError: the file is not JSON; the message names the file, line and column.
    """
    text = Path(path).read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}:{error.lineno}:{error.colno}: not a JSON record: {error.msg}") from None


def floats_agree(a: float, b: float, written: tuple[str, str] | None = None) -> bool:
    """Whether two measured values agree: within :data:`RELATIVE_TOLERANCE` of the larger or within
    :data:`ABSOLUTE_TOLERANCE` (:func:`math.isclose`'s rule), or within one unit of the last digit of their written
    form (``written``, default ``repr``) when it has :data:`MEASURED_DECIMALS` or more decimals. Two NaNs agree; a NaN
    and a number do not."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    unit = max(_last_digit(text) for text in (written or (repr(a), repr(b))))
    if math.isclose(a, b, rel_tol=RELATIVE_TOLERANCE, abs_tol=ABSOLUTE_TOLERANCE):
        return True
    # (1 + 1e-9): the difference of two written decimals is itself rounded to binary (0.029775 - 0.029774 > 1e-6)
    return abs(a - b) <= unit * (1 + 1e-9)


def _last_digit(number: str) -> float:
    """One unit of the last digit of a written decimal when it has :data:`MEASURED_DECIMALS` or more decimals
    (``"0.903014"`` -> 1e-6, ``"2.5e-05"`` -> 0), else 0 (compared relatively only)."""
    mantissa, _, exponent = number.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals) if decimals >= MEASURED_DECIMALS else 0.0


def _texts_agree(a: str, b: str) -> bool:
    """Whether two texts are the same apart from the last digits of the measured numbers in them."""
    if a == b:
        return True
    if _MEASURED.split(a) != _MEASURED.split(b):
        return False
    pairs = zip(_MEASURED.findall(a), _MEASURED.findall(b), strict=True)
    return all(floats_agree(float(x), float(y), written=(x, y)) for x, y in pairs)


def differences(recorded: Any, committed: Any, where: str = "") -> list[str]:
    """What differs between a new record and the committed one, one line per difference: ``path: committed ->
    recorded`` (``path`` in JSON-pointer style, e.g. ``/probes/records/3/outcome``).

    Floats compare with :func:`floats_agree`, and so do the decimal numbers inside strings (a printed loss);
    everything else -- outcomes, messages, counts, booleans, keys, list lengths -- compares exactly. An empty list
    means the records agree.
    """
    if isinstance(recorded, bool) or isinstance(committed, bool) or recorded is None or committed is None:
        same = type(recorded) is type(committed) and recorded == committed
    elif isinstance(recorded, float) or isinstance(committed, float):
        numbers = all(isinstance(v, int | float) for v in (recorded, committed))
        same = numbers and floats_agree(float(recorded), float(committed))
    elif isinstance(recorded, str) and isinstance(committed, str):
        same = _texts_agree(recorded, committed)
    elif isinstance(recorded, dict) and isinstance(committed, dict):
        lines = [f"{where}/{key}: {_short(committed[key])} -> (missing)" for key in committed if key not in recorded]
        lines += [f"{where}/{key}: (missing) -> {_short(recorded[key])}" for key in recorded if key not in committed]
        for key in committed:
            if key in recorded:
                lines += differences(recorded[key], committed[key], f"{where}/{key}")
        return lines
    elif isinstance(recorded, list) and isinstance(committed, list):
        if len(recorded) != len(committed):
            return [f"{where}: {len(committed)} items -> {len(recorded)} items"]
        pairs = enumerate(zip(recorded, committed, strict=True))
        return [line for i, (r, c) in pairs for line in differences(r, c, f"{where}/{i}")]
    else:
        same = type(recorded) is type(committed) and recorded == committed
    return [] if same else [f"{where or '/'}: {_short(committed)} -> {_short(recorded)}"]


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
