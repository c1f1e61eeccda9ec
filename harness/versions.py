"""TensorFlow version ranges such as ">=2.16,<2.19", without third-party parsers.

Expectations and cases name the TensorFlow releases they apply to. The grammar
is a comma-separated list of comparisons, all of which must hold; a version is
compared by its leading numeric release components, so "2.21.0-rc1" and
"2.21.0.dev20261101" both count as 2.21.0.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from typing import Callable

__all__ = ["VersionRange", "parse_range", "release_tuple"]

_OPS: dict[str, Callable[[tuple, tuple], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*(\d+(?:\.\d+)*)\s*$")
_RELEASE = re.compile(r"^\s*(\d+(?:\.\d+)*)")


def release_tuple(version: str) -> tuple[int, ...]:
    """Returns the numeric release of `version`, padded to three components.

    Raises:
      ValueError: `version` does not start with a number.
    """
    match = _RELEASE.match(version)
    if not match:
        raise ValueError(f"not a version number: {version!r}")
    parts = tuple(int(p) for p in match.group(1).split("."))
    return parts + (0,) * (3 - len(parts))


@dataclasses.dataclass(frozen=True)
class VersionRange:
    """A conjunction of version comparisons; the text is kept for messages."""

    text: str
    clauses: tuple[tuple[str, tuple[int, ...]], ...]

    def contains(self, version: str) -> bool:
        release = release_tuple(version)
        return all(_OPS[op](release, bound) for op, bound in self.clauses)

    def __str__(self) -> str:
        return self.text


def parse_range(text: str) -> VersionRange:
    """Parses ">=2.16,<2.19" into a VersionRange.

    Raises:
      ValueError: with the offending clause and an example of a valid range.
    """
    clauses = []
    for clause in text.split(","):
        match = _CLAUSE.match(clause)
        if not match:
            raise ValueError(
                f"bad version clause {clause.strip()!r} in {text!r}: write comparisons "
                "joined by commas, e.g. '>=2.16,<2.19'"
            )
        clauses.append((match.group(1), release_tuple(match.group(2))))
    return VersionRange(text=text.strip(), clauses=tuple(clauses))
