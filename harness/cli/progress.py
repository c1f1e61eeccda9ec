"""What the terminal shows while cases run.

Result lines are printed in selection order whatever order workers finish
in, so a log reads the same with one job or eight. On a terminal a live
status line (done/total, elapsed time, the case running last started) sits
below them. Elsewhere (a CI log) the result lines are written plain, and a
run that goes on for long gets a plain progress line on standard error every
PLAIN_EVERY_S seconds from its first case's start (checked when a case starts
or finishes), so that a log which waits on a slow case, or on an early one
that later results are held for, still shows the run is moving; a short run
gets none.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

from harness.printable import printable

__all__ = ["PLAIN_EVERY_S", "Progress"]

PLAIN_EVERY_S = 30.0


class Progress:
    """Prints finished items in order, with a live status line on terminals and a plain progress
    line now and then elsewhere.

    `log` (default: standard error) takes the plain progress lines; `clock` is what the elapsed
    time is read from.
    """

    def __init__(self, total: int, stream: TextIO = sys.stdout, live: Optional[bool] = None, *,
                 log: Optional[TextIO] = None, clock: Callable[[], float] = time.monotonic,
                 every: float = PLAIN_EVERY_S):
        self._total = total
        self._stream = stream
        self._live = stream.isatty() if live is None else live
        self._log = log
        self._clock = clock
        self._every = every
        self._start = clock()
        # When the last plain progress line was written, or the first case started: the workers'
        # start is not progress, and a run of one case has nothing to say until it ends.
        self._said: Optional[float] = None
        self._done = 0
        self._failing: Optional[int] = None  # None: the caller does not say
        self._current = ""
        self._waiting: dict[int, str] = {}
        self._next = 0

    def started(self, name: str) -> None:
        self._current = name
        self._plain()
        self._redraw()

    def finished(self, index: int, text: str, points: int, failing: Optional[int] = None) -> None:
        """Records item `index` (0-based, in selection order) and prints what is now in order;
        `failing`: how many of its points failed, for the progress line."""
        self._done += points
        if failing is not None:
            self._failing = (self._failing or 0) + failing
        self._waiting[index] = text
        self._clear()
        while self._next in self._waiting:
            self._stream.write(printable(self._waiting.pop(self._next), newlines=True) + "\n")
            self._next += 1
        self._stream.flush()
        self._plain()
        self._redraw()

    def close(self) -> None:
        self._clear()
        self._stream.flush()

    def _clear(self) -> None:
        if self._live:
            self._stream.write("\r\033[K")

    def _redraw(self) -> None:
        if not self._live:
            return
        elapsed = self._clock() - self._start
        status = f"[{self._done}/{self._total}] {elapsed:.0f} s  {self._current}"
        self._stream.write("\r\033[K" + printable(status)[:200])
        self._stream.flush()

    def _plain(self) -> None:
        """The plain progress line, where there is no live one and PLAIN_EVERY_S have passed since
        the first case started or the last such line; none once every point has finished."""
        now = self._clock()
        if self._said is None:
            self._said = now
        if self._live or now - self._said < self._every or self._done >= self._total:
            return
        self._said = now
        failing = "" if self._failing is None else f", {self._failing} failing"
        running = f"; last started: {self._current}" if self._current else ""
        log = self._log or sys.stderr
        log.write(printable(f"progress: {self._done}/{self._total} points{failing} in "
                            f"{now - self._start:.0f} s{running}")[:300] + "\n")
        log.flush()
