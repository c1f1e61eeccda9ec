"""Text as it may leave the program: control characters and lone surrogates escaped.

A point label can hold any character a case's argument names hold, and an exception message any
character a file name holds: ESC and CR can repaint a terminal line (a fake PASS), NUL and most
other controls make XML invalid, and a lone surrogate (a file name that is not UTF-8, as
`os.listdir` returns it) cannot be encoded at all. Every text the harness prints or writes passes
through `printable`; JSON escapes them itself.
"""

from __future__ import annotations

import re

__all__ = ["printable"]

# C0 controls but tab (newline apart: see `printable`), DEL, C1 controls and lone surrogates.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff]")
_UNSAFE_BUT_NEWLINE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match) -> str:
    c = match.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def printable(text: str, newlines: bool = False) -> str:
    """`text` with each unsafe character written as a Python escape (`\\x1b`, `\\udcff`); with
    `newlines`, a newline stays one (for a block of lines), else it is escaped too (one line)."""
    return (_UNSAFE_BUT_NEWLINE if newlines else _UNSAFE).sub(_escape, text)
