"""Which TensorFlow builds a `--versions` names, in which order they lie, and their dates. Pure.

A build is a release of the pin table ("2.16.2") or a tf-nightly build ("2.23.0.dev20261026").
`--versions` is a comma list of:

- a release of the pin table: `2.16.2`;
- `all`: every release of the pin table;
- a range `A..B`: the releases of the pin table from A to B, both included, where a bound is a
  minor release (`2.16`: any patch of it) or a release (`2.16.2`);
- `nightly`: the newest tf-nightly build the package index has for this Python;
- a tf-nightly build by its version: `2.22.0.dev20260601`.

Order: PEP 440's, which is also the order of TensorFlow's history as a user meets it. A nightly
`2.22.0.devDATE` is built from master after the r2.21 branch was cut, so it lies after every 2.21.x
release and before 2.22.0 and its release candidates; nightlies of one version lie by date. (A fix
cherry-picked into a patch release is seen there in this order, not where it landed on master.)
"""

from __future__ import annotations

import re
from typing import Mapping, Optional, Sequence

__all__ = ["NIGHTLY", "BuildsError", "column", "date_of", "expand", "is_nightly", "order_key",
           "sorted_builds"]

NIGHTLY = "nightly"

_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_PRE = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:rc(\d+)|\.dev(\d{8})(\d*))")
_MINOR = re.compile(r"(\d+)\.(\d+)")


class BuildsError(ValueError):
    """A `--versions` (or `--good`/`--bad`) text that names no build; the message says what to
    write instead."""


def is_nightly(version: str) -> bool:
    """Whether `version` is a tf-nightly build's version: "2.22.0.dev20260601"."""
    match = _PRE.fullmatch(version)
    return bool(match and match.group(5))


def order_key(version: str) -> tuple:
    """The sort key of a release ("2.16.2"), a release candidate ("2.22.0rc0") or a nightly
    ("2.22.0.dev20260601") in PEP 440's order: dev builds, then candidates, then the release."""
    match = _RELEASE.fullmatch(version)
    if match:
        return (*map(int, match.groups()), 2, 0)
    match = _PRE.fullmatch(version)
    if not match:
        raise BuildsError(f"not a TensorFlow version: {version!r}; write a release such as 2.16.2 "
                          "or a nightly such as 2.22.0.dev20260601")
    release = tuple(int(p) for p in match.groups()[:3])
    if match.group(4) is not None:
        return (*release, 1, int(match.group(4)))
    return (*release, 0, int(match.group(5) + (match.group(6) or "")))


def sorted_builds(versions: Sequence[str]) -> list[str]:
    """`versions` without repeats, in order (`order_key`)."""
    return sorted(set(versions), key=order_key)


def date_of(version: str, released: Mapping[str, str]) -> Optional[str]:
    """A build's date as YYYY-MM-DD: a nightly's from its version, a release's from `released`
    (the pin table's release dates); None when unknown."""
    match = _PRE.fullmatch(version)
    if match and match.group(5):
        day = match.group(5)
        return f"{day[:4]}-{day[4:6]}-{day[6:]}"
    return released.get(version)


def column(version: str) -> str:
    """The version as the build's `tf.__version__` spells it, which names its column in the
    matrix: "2.23.0-dev20261026" for the nightly 2.23.0.dev20261026, a release as it is."""
    match = _PRE.fullmatch(version)
    if match and match.group(5):
        return f"{'.'.join(match.groups()[:3])}-dev{match.group(5)}{match.group(6) or ''}"
    return version


def _bound(text: str, releases: Sequence[str], upper: bool) -> tuple:
    """A range bound's sort key: a release's own, or a minor's lowest (upper: highest)."""
    if _RELEASE.fullmatch(text):
        if text not in releases:
            raise BuildsError(f"the range bound {text} is not a release of the pin table "
                              f"({', '.join(releases)}); give one of them or a minor such as 2.16")
        return order_key(text)
    match = _MINOR.fullmatch(text)
    if not match:
        raise BuildsError(f"the range bound {text!r} is neither a release nor a minor release; "
                          "write a range as 2.16..2.21 or 2.16.2..2.21.0")
    major, minor = map(int, match.groups())
    return (major, minor, 10**9, 0, 0) if upper else (major, minor, -1, 0, 0)


def _range(text: str, releases: Sequence[str]) -> list[str]:
    low, _, high = (part.strip() for part in text.partition(".."))
    first, last = _bound(low, releases, upper=False), _bound(high, releases, upper=True)
    chosen = [r for r in releases if first <= order_key(r) <= last]
    if not chosen:
        raise BuildsError(f"the range {text} holds no release of the pin table "
                          f"({', '.join(releases)}); write its older end first, e.g. 2.16..2.21")
    return chosen


def expand(text: str, releases: Sequence[str]) -> list[str]:
    """The builds a `--versions` text names, in the order given, each once: releases, nightly
    versions and the word `nightly` (resolved later, from the package index).

    Args:
      text: the comma list (see the module's docstring).
      releases: the releases of the pin table, oldest first.

    Raises:
      BuildsError: an item names nothing: an unknown release, a malformed version or range, an
        empty list.
    """
    found: list[str] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item == "all":
            names = list(releases)
        elif ".." in item:
            names = _range(item, releases)
        elif item == NIGHTLY or is_nightly(item):
            names = [item]
        elif item in releases:
            names = [item]
        elif _RELEASE.fullmatch(item) or _MINOR.fullmatch(item):
            raise BuildsError(f"no pins for TensorFlow {item!r}; known releases: "
                              f"{', '.join(releases)}. Pick one of those (or a range such as "
                              "2.16..2.21), or add a measured row to PINS in "
                              "harness/matrix/pins.py")
        else:
            raise BuildsError(f"{item!r} is not a TensorFlow version; give releases (2.16.2), "
                              "all, a range (2.16..2.21), nightly or a nightly build "
                              "(2.22.0.dev20260601), joined by commas")
        found += [name for name in names if name not in found]
    if not found:
        raise BuildsError("--versions is empty; give a comma list such as 2.16.2,2.21.0")
    return found
