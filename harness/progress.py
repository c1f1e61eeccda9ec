"""What the terminal shows while cases run.

Result lines are printed in selection order whatever order workers finish
in, so a log reads the same with one job or eight. On a terminal a live
status line (done/total, elapsed time, the case running last started) sits
below them; elsewhere (CI logs) only the plain result lines are written.
"""

from __future__ import annotations

import sys
import time

from harness.printable import printable
from typing import Optional, TextIO

__all__ = ["Progress"]


class Progress:
    """Prints finished items in order, with a live status line on terminals."""

    def __init__(self, total: int, stream: TextIO = sys.stdout, live: Optional[bool] = None):
        self._total = total
        self._stream = stream
        self._live = stream.isatty() if live is None else live
        self._start = time.monotonic()
        self._done = 0
        self._current = ""
        self._waiting: dict[int, str] = {}
        self._next = 0

    def started(self, name: str) -> None:
        self._current = name
        self._redraw()

    def finished(self, index: int, text: str, points: int) -> None:
        """Records item `index` (0-based, in selection order) and prints what is now in order."""
        self._done += points
        self._waiting[index] = text
        self._clear()
        while self._next in self._waiting:
            self._stream.write(printable(self._waiting.pop(self._next), newlines=True) + "\n")
            self._next += 1
        self._stream.flush()
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
        elapsed = time.monotonic() - self._start
        status = f"[{self._done}/{self._total}] {elapsed:.0f} s  {self._current}"
        self._stream.write("\r\033[K" + printable(status)[:200])
        self._stream.flush()
