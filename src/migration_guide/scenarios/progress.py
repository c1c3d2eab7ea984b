"""Progress of long work: cells done out of the total, with an estimate of the time left, at most every few seconds.

The scenario matrix (:func:`migration_guide.scenarios.run_cells`) and the exploration
(:mod:`migration_guide.scenarios.explore`) report through :class:`Progress`; the build's extension
(``docs/_ext/guide/scenario_matrix.py``) passes the matrix's lines on to Sphinx's console as status messages.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

#: Seconds between two progress lines, at most one line per interval (the last one is always printed).
INTERVAL = 10.0
#: What every progress line of the matrix starts with (the build's extension relays the lines that do).
PREFIX = "scenario matrix: progress "


def duration(seconds: float) -> str:
    """``seconds`` as people read it: ``"45 s"``, ``"3 min 05 s"``, ``"1 h 02 min"``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Progress:
    """Counts finished cells of a known ``total`` and prints ``PREFIX`` lines: ``done / total cells``, the time
    spent, and the time left estimated from the mean time per cell since the first cell finished (none before the
    second: the first cell's time is mostly the workers' start -- imports of torch and Lightning, about 10 s --
    which made the build's first estimate "8 h 11 min" for a matrix that took 76 s).

    A line is printed when a cell finishes at least ``every`` seconds (of ``clock``) after the previous line, and
    when the last cell finishes; never more often. ``clock`` (seconds, monotonic) and ``out`` (called with each line,
    no newline) are injectable for tests; the defaults are :func:`time.monotonic` and this process's standard output,
    flushed.
    """

    def __init__(
        self,
        total: int,
        *,
        label: str = "cells",
        every: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        out: Callable[[str], None] | None = None,
        prefix: str = PREFIX,
    ):
        if total < 0:
            raise ValueError(f"a negative total of {label}: {total}")
        self.total, self.label, self.every, self.clock, self.prefix = total, label, every, clock, prefix
        self.out = out or _print
        self.done = 0
        self.started = clock()
        self.last: float | None = None
        self.first: float | None = None  # when the first cell finished
        self.more = False  # the total grows later (extend): no line says "done" before it does

    def line(self) -> str:
        """The progress line for now (without :attr:`prefix`)."""
        spent = self.clock() - self.started
        text = f"{self.done} / {self.total} {self.label}, {duration(spent)} so far"
        if self.done == self.total and not self.more:
            return f"{text}, done"
        if self.done == self.total:
            return f"{text}, more to come"
        if self.done >= 2 and self.first is not None:
            per_cell = (self.clock() - self.first) / (self.done - 1)
            return f"{text}, about {duration(per_cell * (self.total - self.done))} left"
        return text

    def expect_more(self) -> None:
        """More cells will come (:meth:`extend`): until then, no line says the work is done."""
        self.more = True

    def extend(self, count: int) -> None:
        """``count`` more cells to do, known after the first ones started (the covering set, made while the named
        scenarios' cells run): the time spent keeps counting from the start; no more come after them.

        Raises:
            ValueError: ``count`` is negative.
        """
        if count < 0:
            raise ValueError(f"a negative count of {self.label}: {count}")
        self.total += count
        self.more = False
        if self.done == self.total:  # every cell finished before the last ones were known (none came)
            self.last = self.clock()
            self.out(self.prefix + self.line())

    def advance(self, count: int = 1) -> None:
        """``count`` more cells finished: print a line if one is due (see the class docstring)."""
        if count < 0:
            raise ValueError(f"a negative count of {self.label}: {count}")
        self.done = min(self.total, self.done + count)
        now = self.clock()
        if self.first is None:
            self.first = now
        if (self.done == self.total and not self.more) or now - (
            self.started if self.last is None else self.last
        ) >= self.every:
            self.last = now
            self.out(self.prefix + self.line())


def _print(line: str) -> None:
    print(line, file=sys.stdout, flush=True)
