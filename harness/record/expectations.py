"""The reviewed expectations file: the deviations of recorded functions a project has accepted.

A JSON file in the user's repository (`harness-expectations.json` beside the rootdir's
pyproject.toml or pytest.ini, or where `[tool.harness] expectations = "PATH"` in pyproject.toml
says), sorted and stable so that a diff reviews well:

    {"schema": "harness.expectations/1",
     "expected": [
      {"function": "recorded.mylib.ops.clipped_relu", "points": "*",
       "expect": "function,graph:OperatorNotAllowedInGraphError",
       "reason": "a Python if on a tensor; accepted under TensorFlow 2.21.0"}]}

`function` is a case id (a glob), `points` "*" or a list of point labels, `expect` a deviation
as `--expect` spells it (MODES:OUTCOME), `reason` why. A point an entry covers that deviates so is
an xfail; one that no longer does is an xpass. `--harness-accept` writes the file from a run:
an entry for each new deviation, none for a function that now passes, and the reasons someone
wrote kept. Importing this imports no TensorFlow.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re
from pathlib import Path
from typing import Optional, Sequence

__all__ = ["FILE_NAME", "SCHEMA", "Entry", "ExpectationsError", "accept", "accept_into", "find",
           "load", "stale", "write"]

FILE_NAME = "harness-expectations.json"
SCHEMA = "harness.expectations/1"
_ACCEPTED = "accepted from a run under TensorFlow"


class ExpectationsError(ValueError):
    """The file cannot be used; the message names the file, the line and what to do."""


@dataclasses.dataclass(frozen=True)
class Entry:
    function: str
    points: tuple = ("*",)
    expect: str = ""
    reason: str = ""

    def covers(self, case_id: str, label: str) -> bool:
        return fnmatch.fnmatchcase(case_id, self.function) and (
            self.points == ("*",) or label in self.points)

    def as_json(self) -> dict:
        return {"function": self.function,
                "points": "*" if self.points == ("*",) else list(self.points),
                "expect": self.expect, "reason": self.reason}


def find(start: Path) -> Optional[Path]:
    """The expectations file for a project at `start` or above: where pyproject.toml's
    `[tool.harness] expectations` says, else FILE_NAME in the first folder holding one."""
    for folder in [start, *start.parents]:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            named = _from_pyproject(pyproject)
            if named:
                return folder / named
        if (folder / FILE_NAME).is_file():
            return folder / FILE_NAME
    return None


def _from_pyproject(path: Path) -> Optional[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        import tomllib  # noqa: PLC0415 - Python 3.11

        return (tomllib.loads(text).get("tool", {}).get("harness", {}) or {}).get("expectations")
    except ImportError:  # Python 3.10: the one key, read plainly
        table = re.search(r"^\[tool\.harness\]\s*$(.*?)(^\[|\Z)", text, re.M | re.S)
        found = table and re.search(r'^\s*expectations\s*=\s*"([^"]+)"', table.group(1), re.M)
        return found.group(1) if found else None
    except ValueError:  # a pyproject.toml TOML cannot read: not ours to refuse
        return None


def _line_of(text: str, needle: str) -> int:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def load(path: Path) -> list[Entry]:
    """The entries of an expectations file.

    Raises:
      ExpectationsError: it cannot be read, is not JSON of this schema, or an entry lacks what it
        needs or spells its deviation wrongly; the message names the line.
    """
    from harness.checking import InputError, parse_expect  # noqa: PLC0415 - no TensorFlow

    how = f"fix it, or write it again with --harness-accept"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ExpectationsError(f"{path}: cannot read it ({e.strerror or e})") from None
    try:
        data = json.loads(text)
    except ValueError as e:
        line = getattr(e, "lineno", 1)
        raise ExpectationsError(f"{path}:{line}: not JSON ({str(e).split(': line')[0]}); "
                                f"{how}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ExpectationsError(f"{path}:1: not an expectations file (schema {SCHEMA}); {how}")
    entries = []
    for item in data.get("expected") or []:
        line = _line_of(text, json.dumps(item.get("function"))) if isinstance(item, dict) else 1
        where = f"{path}:{line}"
        if not isinstance(item, dict) or not isinstance(item.get("function"), str) \
                or not isinstance(item.get("expect"), str) or not item.get("reason"):
            raise ExpectationsError(f"{where}: an entry needs \"function\", \"expect\" and "
                                    f"\"reason\"; {how}")
        points = item.get("points", "*")
        if points != "*" and not (isinstance(points, list)
                                  and all(isinstance(p, str) for p in points)):
            raise ExpectationsError(f"{where}: \"points\" is \"*\" or a list of point labels; "
                                    f"{how}")
        try:
            parse_expect(item["expect"])
        except InputError as e:
            raise ExpectationsError(f"{where}: {str(e).removeprefix('--expect ')}") from None
        entries.append(Entry(item["function"], ("*",) if points == "*" else tuple(points),
                             item["expect"], str(item["reason"])))
    return entries


def expectations_for(entries: Sequence[Entry], case_id: str, labels: Sequence[str]) -> list:
    """(modes, outcome, reason, points) of every entry covering the case: points () for all."""
    from harness.checking import parse_expect  # noqa: PLC0415

    found = []
    for entry in entries:
        covered = tuple(label for label in labels if entry.covers(case_id, label))
        if covered:
            modes, outcome, _ = parse_expect(entry.expect)
            found.append((modes, outcome, entry.reason,
                          () if len(covered) == len(labels) else covered))
    return found


def stale(entries: Sequence[Entry], case_ids: Sequence[str]) -> list[Entry]:
    """The entries naming no function the run replayed."""
    return [e for e in entries if not any(fnmatch.fnmatchcase(c, e.function) for c in case_ids)]


def deviations(result: dict) -> list[str]:
    """The deviations of a failing point as `--expect` spells them: the judge's "undeclared" (modes
    raising, by exception class; modes whose values differ, a bad gradient, an unused custom
    gradient; oracles whose values differ). A report older than that field gives the modes
    raising and the oracles differing only. Empty where nothing can declare the failure (a
    declared deviation that happened otherwise, values differing only with upstream weights)."""
    if "undeclared" in result:  # the judge's own spelling, every kind it can declare
        return list(result["undeclared"])
    raising: dict = {}
    for mode, measured in (result.get("modes") or {}).items():
        if measured.get("status") == "error" and measured.get("error_type"):
            raising.setdefault(measured["error_type"], []).append(mode)
    found = [f"{','.join(modes)}:{kind}" for kind, modes in sorted(raising.items())]
    found += [f"{name}:values differ" for name, oracle in sorted((result.get("oracles")
                                                                 or {}).items())
              if oracle.get("status") == "differ"]
    return found


def accept(entries: Sequence[Entry], results: Sequence[dict],
           tf_version: str) -> tuple[list[Entry], list[str], list[str]]:
    """(the entries the run says, the lines saying what changed, the points it cannot declare).

    A failing point's deviations become entries (its function's points, or "*" where every
    point deviates alike), keeping the reason of an entry that said the same before; an entry
    whose function now passes at every point it covers goes; the rest stay (a stale one too: the
    run did not call its function, so says nothing of it)."""
    by_case: dict = {}
    for r in results:
        by_case.setdefault(r["case"], []).append(r)
    def passes(entry: Entry) -> bool:  # every point it covers passes now (or passes declared)
        covered = [r for r in results if entry.covers(r["case"], r["point"])]
        return bool(covered) and all(r["verdict"] in ("pass", "xpass") for r in covered)

    kept = [e for e in entries if not passes(e)]
    undeclarable, new = [], []
    for case_id, points in sorted(by_case.items()):
        wanted: dict = {}
        for r in points:
            if r["verdict"] != "fail":  # an xfail's deviations are declared already
                continue
            said = deviations(r)
            if not said:
                undeclarable.append(f"{case_id}[{r['point']}]")
            for expect in said:
                wanted.setdefault(expect, []).append(r["point"])
        for expect, labels in sorted(wanted.items()):
            if any(e.expect == expect and all(e.covers(case_id, p) for p in labels)
                   for e in kept):
                continue
            every = len(labels) == len(points)
            first = next(r for r in points if r["point"] == labels[0])
            reason = (f"{(first.get('reason') or '').splitlines()[0][:160]} ({_ACCEPTED} "
                      f"{tf_version})")
            new.append(Entry(case_id, ("*",) if every else tuple(sorted(labels)), expect, reason))
    after = sorted(kept + new, key=lambda e: (e.function, e.expect, e.points))
    gone = [e for e in entries if e not in kept]
    changes = ([f"+ {e.function} {e.expect}" for e in new]
               + [f"- {e.function} {e.expect}" for e in gone])
    return after, changes, undeclarable


def write(path: Path, entries: Sequence[Entry]) -> None:
    """The file, sorted and indented, written whole."""
    data = {"schema": SCHEMA, "expected": [e.as_json() for e in
                                          sorted(entries, key=lambda e: (e.function, e.expect,
                                                                         e.points))]}
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    temporary.replace(path)


def accept_into(path: Path, results: Sequence[dict],
                tf_version: str) -> tuple[list[str], list[str]]:
    """Writes the file at `path` from the run's results (`accept`), keeping what it held: (the
    lines saying what changed, the points whose failure no entry can declare)."""
    entries = load(path) if path.is_file() else []
    after, changes, undeclarable = accept(entries, results, tf_version)
    write(path, after)
    return changes + [f"not written, since no expectation declares how it fails (a declared "
                      f"deviation that happened otherwise, or values that differ with upstream "
                      f"weights only): {p}" for p in undeclarable], undeclarable
