"""The reviewed expectations file: the deviations of recorded functions a project has accepted.

A JSON file in the user's repository (`harness-expectations.json` in the rootdir, or where the
rootdir's pyproject.toml says with `[tool.harness] expectations = "PATH"`; never a file in a
folder above it), sorted and stable so that a diff reviews well:

    {"schema": "harness.expectations/1",
     "expected": [
      {"function": "recorded.mylib.ops.clipped_relu", "points": "*",
       "expect": "function,graph:OperatorNotAllowedInGraphError",
       "reason": "function vs eager: function raises OperatorNotAllowedInGraphError at forward
                  (accepted from a run under TensorFlow 2.21.0)",
       "accepted": {"tensorflow": "2.21.0", "code": "3f2a9c0d1b7e"}}]}

`function` is a case id (a glob), `points` "*" or a list of point labels, `expect` a deviation
as `--expect` spells it (MODES:OUTCOME; the modes are a set, in any order), `reason` why,
`tf_versions` (optional) the TensorFlow releases where the entry applies (">=2.16,<2.20"),
`intended` (optional, a "numeric:surrogate" entry's) the intended surrogate as "module:function",
and
`accepted` (written by --harness-accept) the TensorFlow release and a digest of the function's
code it was accepted under, so that an xpass can say what changed. A point an entry covers that
deviates so is an xfail; one that no longer does is an xpass. An entry listing points covers
those and says nothing of the function's others; two entries covering one mode at one point are
refused. `--harness-accept` writes the file from a run: an entry for each new deviation, of the
whole function (its points are drawn anew by many suites, so which of them deviate may change run
to run), none for a function that now passes, and the reasons someone wrote kept. Importing this
imports no TensorFlow.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import fnmatch
import functools
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Mapping, Optional, Sequence

__all__ = ["FILE_NAME", "SCHEMA", "Entry", "ExpectationsError", "accept", "accept_into",
           "canonical", "expectations_for", "find", "load", "stale", "write", "xpass_cause"]

FILE_NAME = "harness-expectations.json"
SCHEMA = "harness.expectations/1"
_ACCEPTED = "accepted from a run under TensorFlow"
_KEYS = ("function", "points", "expect", "reason", "tf_versions", "intended", "accepted")
_KNOWN = frozenset(_KEYS)
_INTENDED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
                       r":[A-Za-z_][A-Za-z0-9_]*$")
_REASON_LENGTH = 300  # an accepted reason's sentences past this are left out, never cut


class ExpectationsError(ValueError):
    """The file cannot be used; the message names the file, the line and what to do."""


@dataclasses.dataclass(frozen=True)
class Entry:
    function: str
    points: tuple = ("*",)
    expect: str = ""
    reason: str = ""
    tf_versions: Optional[str] = None
    accepted_tf: str = ""  # the TensorFlow release --harness-accept wrote it under
    accepted_code: str = ""  # a digest of the function's code then
    intended: str = ""  # for numeric:surrogate, the intended surrogate as "module:function"
    # Which entry of which file it is: its line is found from these only when a message needs it
    # (finding every entry's line costs a 40,000-entry file a good part of its load).
    index: int = dataclasses.field(default=-1, compare=False)
    source: str = dataclasses.field(default="", compare=False)

    @property
    def line(self) -> int:
        """The line of the file the entry starts on (0 for an entry of no file)."""
        if self.index < 0 or not self.source:
            return 0
        try:
            return _lines_of(self.source, os.stat(self.source).st_mtime_ns)[self.index]
        except (OSError, IndexError, ExpectationsError):
            return 0

    def covers(self, case_id: str, label: str) -> bool:
        return fnmatch.fnmatchcase(case_id, self.function) and (
            self.points == ("*",) or label in self.points)

    def as_json(self) -> dict:
        made = {"function": self.function,
                "points": "*" if self.points == ("*",) else list(self.points),
                "expect": self.expect, "reason": self.reason}
        if self.tf_versions:
            made["tf_versions"] = self.tf_versions
        if self.intended:
            made["intended"] = self.intended
        accepted = {k: v for k, v in (("tensorflow", self.accepted_tf),
                                      ("code", self.accepted_code)) if v}
        if accepted:
            made["accepted"] = accepted
        return made


def find(folder: Path) -> Optional[Path]:
    """The expectations file of the project at `folder` (pytest's rootdir, or replay's current
    folder): where its pyproject.toml's `[tool.harness] expectations` says, else FILE_NAME there;
    never a file in a folder above it, which anyone else may have put there."""
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


@functools.lru_cache(maxsize=4096)
def _parsed(expect: str) -> tuple:
    """parse_expect's (modes, outcome, reason), once per text: a file repeats a few spellings."""
    from harness.checking import parse_expect  # noqa: PLC0415 - no TensorFlow

    return parse_expect(expect)


def canonical(expect: str) -> tuple:
    """(the set of modes, the outcome) an `expect` text declares: `graph,function:X` and
    `function,graph:X` are one expectation."""
    modes, outcome, _ = _parsed(expect)
    return frozenset(modes), outcome


def _spelled(expect: str) -> str:
    """`expect` with its modes in the order the harness lists them (modes, then oracles)."""
    from harness import mode_names, oracle_names  # noqa: PLC0415

    modes, outcome = canonical(expect)
    order = list(mode_names.KNOWN_MODES) + list(oracle_names.ROWS)
    return ",".join(sorted(modes, key=lambda m: order.index(m) if m in order else len(order))) \
        + f":{outcome}"


def _text_of(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ExpectationsError(f"{path}: cannot read it ({e.strerror or e})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise ExpectationsError(f"{path}:{line}: not UTF-8 (byte {raw[e.start]:#04x}); write the "
                                "file as UTF-8, or again with --harness-accept") from None


@functools.lru_cache(maxsize=8)
def _lines_of(source: str, modified: int) -> list[int]:
    """Each entry's line in the file at `source` as it is now (`modified`: its mtime)."""
    text = _text_of(Path(source))
    count = len((json.loads(text) or {}).get("expected") or [])
    return _entry_lines(text, count)


def _entry_lines(text: str, count: int) -> list[int]:
    """The line each of the "expected" array's `count` items starts on, found in one pass: each
    item decoded in place from where the last one ended (a scan of the whole text per entry made
    a 40,000-entry file take minutes)."""
    starts = [m.start() for m in re.finditer("\n", text)] if count else []
    found = re.search(r'"expected"\s*:\s*\[', text)
    lines = []
    if found:
        decoder, at = json.JSONDecoder(), found.end()
        space = re.compile(r"[\s,]*")
        for _ in range(count):
            at = space.match(text, at).end()
            lines.append(bisect.bisect_left(starts, at) + 1)
            try:
                _, at = decoder.raw_decode(text, at)
            except ValueError:
                break
    return lines + [1] * (count - len(lines))


def load(path: Path) -> list[Entry]:
    """The entries of an expectations file.

    Raises:
      ExpectationsError: it cannot be read, is not UTF-8 JSON of this schema, an entry lacks what
        it needs, has a key or a value of a kind the file does not know, spells its deviation
        wrongly, or covers a mode at a point another entry covers; the message names the line.
    """
    text = _text_of(path)
    try:
        data = json.loads(text)
    except ValueError as e:
        line = getattr(e, "lineno", 1)
        raise ExpectationsError(f"{path}:{line}: not JSON ({str(e).split(': line')[0]}); "
                                "fix it, or write it again with --harness-accept") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ExpectationsError(f"{path}:1: not an expectations file (schema {SCHEMA}); fix it, "
                                "or write it again with --harness-accept")
    items = data.get("expected", [])
    if not isinstance(items, list):
        line = _line_of_key(text, "expected")
        raise ExpectationsError(f"{path}:{line}: \"expected\" is a list of entries, not "
                                f"{type(items).__name__ if items is not None else 'null'}; fix "
                                "it, or write it again with --harness-accept")
    entries = []
    for index, item in enumerate(items):
        try:
            entries.append(_entry(item, index, str(path)))
        except _Bad as e:
            line = _entry_lines(text, index + 1)[index]
            raise ExpectationsError(f"{path}:{line}: {e}") from None
    _refuse_overlaps(path, entries)
    return entries


class _Bad(ValueError):
    """What is wrong with one entry; load names its line."""


def _line_of_key(text: str, key: str) -> int:
    found = re.search(rf'"{key}"\s*:', text)
    return text.count("\n", 0, found.start()) + 1 if found else 1


def _entry(item, index: int, source: str) -> Entry:
    """One entry of the file, checked field by field."""
    how = "fix it, or write it again with --harness-accept"
    if not isinstance(item, dict):
        raise _Bad(f"an entry is an object with \"function\", \"expect\" "
                                f"and \"reason\", not {json.dumps(item)[:40]}; {how}")
    if not item.keys() <= _KNOWN:
        unknown = [k for k in item if k not in _KNOWN]
        near = {"point": "points", "tf_version": "tf_versions", "function_id": "function",
                "expected": "expect", "why": "reason"}.get(unknown[0])
        raise _Bad(f"unknown key {unknown[0]!r}"
                                + (f" (did you mean {near!r}?)" if near else "")
                                + f"; an entry's keys are {', '.join(_KEYS)}")
    if not isinstance(item.get("function"), str) or not item["function"] \
            or not isinstance(item.get("expect"), str) \
            or not isinstance(item.get("reason"), str) or not item["reason"].strip():
        raise _Bad(f"an entry needs \"function\", \"expect\" and "
                                f"\"reason\", each a non-empty string; {how}")
    points = item.get("points", "*")
    if points != "*" and not (isinstance(points, list) and points
                              and all(isinstance(p, str) for p in points)):
        raise _Bad(f"\"points\" is \"*\" or a list of point labels; "
                                f"{how}")
    try:
        _parsed(item["expect"])
    except ValueError as e:  # harness.checking.InputError
        raise _Bad(f"{str(e).removeprefix('--expect ')}") from None
    versions = item.get("tf_versions")
    if versions is not None:
        _check_versions(versions)
    intended = item.get("intended", "")
    if intended and (not isinstance(intended, str) or not _INTENDED.match(intended)
                     or _parsed(item["expect"])[1] != "surrogate"):
        raise _Bad("\"intended\" names the intended surrogate of a \"numeric:surrogate\" entry "
                   "as \"module:function\" (called with the function's arguments and dy=, "
                   f"returning their gradients); {how}")
    accepted = item.get("accepted") or {}
    if not isinstance(accepted, dict) or accepted and any(k not in ("tensorflow", "code")
                                             or not isinstance(v, str)
                                             for k, v in accepted.items()):
        raise _Bad(f"\"accepted\" is an object of strings "
                                f"\"tensorflow\" and \"code\", as --harness-accept writes it; "
                                f"{how}")
    return Entry(item["function"], ("*",) if points == "*" else tuple(points), item["expect"],
                 item["reason"], versions, accepted.get("tensorflow", ""),
                 accepted.get("code", ""), intended, index, source)


def _check_versions(versions) -> None:
    from harness.versions import parse_range  # noqa: PLC0415 - no TensorFlow

    try:
        if not isinstance(versions, str):
            raise ValueError(f"{json.dumps(versions)} is not a string")
        parse_range(versions)
    except ValueError as e:
        raise _Bad(f"\"tf_versions\" is a range of TensorFlow releases "
                                f"such as \">=2.16,<2.20\" ({e}); fix it") from None


def _overlap(a: Entry, b: Entry, case_id: str, labels: Optional[Sequence[str]] = None) -> str:
    """The first (mode, point) both entries cover of `case_id` ("" if none): `labels` the
    case's points where known, else the entries' own lists."""
    if a.tf_versions and b.tf_versions and a.tf_versions != b.tf_versions:
        return ""  # ranges that may not meet: the case's check refuses them if they do
    shared = sorted(canonical(a.expect)[0] & canonical(b.expect)[0])
    if not shared:
        return ""
    if labels is None:
        if a.points == ("*",) or b.points == ("*",):
            point = "every point" if a.points == b.points else \
                f"point {(b.points if a.points == ('*',) else a.points)[0]!r}"
        else:
            common = [p for p in a.points if p in b.points]
            if not common:
                return ""
            point = f"point {common[0]!r}"
    else:
        common = [p for p in labels if a.covers(case_id, p) and b.covers(case_id, p)]
        if not common:
            return ""
        point = f"point {common[0]!r}"
    return f"mode {shared[0]!r} at {point} of {case_id}"


def _overlap_error(path, a: Entry, b: Entry, said: str) -> ExpectationsError:
    first, second = sorted((a, b), key=lambda e: e.index)
    return ExpectationsError(f"{path}:{second.line}: this entry and the one at line {first.line} "
                             f"both cover {said}; keep one, or split their points or modes")


def _refuse_overlaps(path, entries: Sequence[Entry]) -> None:
    """Two entries for one function (or a glob and a function it matches) that cover one mode at
    one point: refused naming both lines. One pass per function, by mode and point, so a file of
    tens of thousands of entries costs milliseconds."""
    by_function: dict = {}
    for e in entries:
        by_function.setdefault(e.function, []).append(e)
    globs = [e for e in entries if any(c in e.function for c in "*?[")]
    for function, group in by_function.items():
        seen: dict = {}  # (mode, label or "*") -> the entries covering it
        matching = [g for g in globs if g.function != function
                    and fnmatch.fnmatchcase(function, g.function)]
        if len(group) == 1 and not matching:
            continue
        for entry in sorted(group + matching, key=lambda e: e.index):
            for mode in canonical(entry.expect)[0]:
                keys = ([(mode, "*")] + [k for k in seen if k[0] == mode]
                        if entry.points == ("*",)
                        else [(mode, "*")] + [(mode, p) for p in entry.points])
                for key in keys:
                    for other in seen.get(key, ()):
                        said = _overlap(other, entry, function)
                        if said:
                            raise _overlap_error(path, other, entry, said)
                for label in entry.points:
                    seen.setdefault((mode, label), []).append(entry)


def expectations_for(entries: Sequence[Entry], case_id: str, labels: Sequence[str]) -> list:
    """(modes, outcome, reason, points, tf_versions, intended) of every entry covering the case:
    points () for all, intended "" where the entry names none.

    Raises:
      ExpectationsError: two entries (globs the file could not tell apart) cover one mode at one
        of the case's points.
    """
    found, covering = [], []
    for entry in entries:
        covered = tuple(label for label in labels if entry.covers(case_id, label))
        if covered:
            for other in covering:
                said = _overlap(entry, other, case_id, labels)
                if said:
                    raise _overlap_error("the reviewed expectations file", entry, other, said)
            covering.append(entry)
            modes, outcome, _ = _parsed(entry.expect)
            found.append((modes, outcome, entry.reason,
                          () if len(covered) == len(labels) else covered, entry.tf_versions,
                          entry.intended or None))
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


def _reason_for(result: dict, expect: str) -> str:
    """The finding behind one deviation of a failing point, in whole sentences: the line of its
    explanation that concerns that deviation (the one naming its oracle or its error), its first
    sentence whole and the next ones while they fit, advice ("If that is intended, declare
    it...") left out."""
    modes, outcome = canonical(expect)
    lines = [line.removeprefix("- ") for line in
             (result.get("reason") or "").splitlines() + list(result.get("details") or ())]
    lines = [line for line in lines if line and not line.startswith(("hint:", "recorded:",
                                                                      "rerun:"))]
    tokens = ([outcome] if outcome not in ("values differ", "bad gradient", "gradient unused")
              else [f"{m}" for m in sorted(modes)])
    tokens = [t if t != "numeric" else "numeric derivative" for t in tokens]
    chosen = next((line for line in lines if any(t in line for t in tokens)),
                  lines[0] if lines else "a deviation the run found")
    sentences = [x for x in re.split(r"(?<=[.)])\s+(?=[A-Z])", chosen) if x]
    kept = sentences[0]
    for sentence in sentences[1:]:
        if sentence.startswith("If that is intended") or "declare it" in sentence:
            break
        if len(kept) + len(sentence) + 1 > _REASON_LENGTH and "surrogate" not in sentence:
            break
        kept += " " + sentence
    return kept.rstrip()


def _wanted(points: Sequence[dict]) -> dict:
    """{deviation: the labels deviating so} over a function's failing points."""
    wanted: dict = {}
    for r in points:
        if r["verdict"] != "fail":  # an xfail's deviations are declared already
            continue
        for expect in deviations(r):
            wanted.setdefault(expect, []).append(r)
    return wanted


def accept(entries: Sequence[Entry], results: Sequence[dict], tf_version: str,
           codes: Optional[Mapping[str, str]] = None) -> tuple[list[Entry], list[str], list[str]]:
    """(the entries the run says, the lines saying what changed, the points it cannot declare).

    A failing point's deviations become entries of its whole function (`"*"`: a suite's points
    are often drawn anew each run, so which ones deviate may change while the function does
    not), keeping an entry that declared the same (its modes as a set) before; an entry whose
    function now passes at every point it covers goes; the rest stay (a stale one too: the run
    did not call its function, so says nothing of it). `codes` maps case ids to a digest of their
    function's code, remembered with each new entry."""
    codes = codes or {}
    by_case: dict = {}
    for r in results:
        by_case.setdefault(r["case"], []).append(r)

    def passes(entry: Entry) -> bool:  # every point it covers passes now (or passes declared)
        covered = [r for r in results if entry.covers(r["case"], r["point"])]
        return bool(covered) and all(r["verdict"] in ("pass", "xpass") for r in covered)

    kept = [e for e in entries if not passes(e)]
    undeclarable, new = [], []
    for case_id, points in sorted(by_case.items()):
        undeclarable += [f"{case_id}[{r['point']}]" for r in points
                         if r["verdict"] == "fail" and not deviations(r)]
        for expect, failing in sorted(_wanted(points).items()):
            if any(canonical(e.expect) == canonical(expect)
                   and all(e.covers(case_id, r["point"]) for r in failing) for e in kept + new):
                continue
            reason = f"{_reason_for(failing[0], expect)} ({_ACCEPTED} {tf_version})"
            new.append(Entry(case_id, ("*",), _spelled(expect), reason,
                             accepted_tf=tf_version, accepted_code=codes.get(case_id, "")))
    after = sorted(kept + new, key=_order)
    gone = [e for e in entries if e not in kept]
    changes = ([f"+ {e.function} {e.expect}" for e in new]
               + [f"- {e.function} {e.expect}" for e in gone])
    return after, changes, undeclarable


def _order(entry: Entry) -> tuple:
    return (entry.function, entry.expect, entry.points)


def xpass_cause(entry: Entry, code: str, tf_version: str, surrogate: bool = False) -> str:
    """Why an entry covers a point that no longer deviates, and what to do, in one sentence:
    the function's code changed since it was accepted, or TensorFlow did, or nothing did (the
    entry is broader than what deviates); or, for an entry written by hand, which records neither,
    that what changed is not known. `surrogate`: the numeric oracle passed the point's gradient as
    a checked surrogate, which an entry declaring a numeric difference (how surrogates were
    accepted before the harness checked them) no longer covers."""
    if surrogate and canonical(entry.expect)[1] == "values differ" \
            and "numeric" in canonical(entry.expect)[0]:
        return ("the harness now checks a surrogate gradient for its direction and its linearity "
                "in dy instead of calling it a numeric difference, and this one passes them; "
                "declare it \"numeric:surrogate\" to keep it checked as one, or remove the entry")
    if not entry.accepted_code and not entry.accepted_tf:
        return ("the entry records no code or TensorFlow it was accepted under (it was written by "
                "hand), so what changed is not known; if the function was mended, remove the "
                "entry, or rerun with --harness-accept, which drops it")
    if entry.accepted_code and code and entry.accepted_code != code:
        return ("the function's code changed since the entry was accepted; if the change fixed "
                "it, rerun with --harness-accept to drop the entry, or remove it from the file")
    if entry.accepted_tf and entry.accepted_tf != tf_version:
        return (f"TensorFlow changed since the entry was accepted ({entry.accepted_tf} then, "
                f"{tf_version} now); give the entry \"tf_versions\" to keep it for the releases "
                "where it deviates")
    return ("nothing changed since the entry was accepted: it is broader than what deviates (its "
            "points or modes cover a point that does not deviate); narrow its points or modes, or "
            "leave it: an xpass does not fail the run unless --harness-strict")


def write(path: Path, entries: Sequence[Entry]) -> None:
    """The file, sorted and indented, written whole: to a temporary file of a name of its own
    beside it, then renamed over it, so a reader sees the old file or the new one."""
    data = {"schema": SCHEMA, "expected": [e.as_json() for e in sorted(entries, key=_order)]}
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(json.dumps(data, indent=1) + "\n")
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on `path`'s lock file beside it (none where fcntl is missing)."""
    try:
        import fcntl  # noqa: PLC0415 - POSIX only
    except ImportError:
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def accept_into(path: Path, results: Sequence[dict], tf_version: str,
                codes: Optional[Mapping[str, str]] = None) -> tuple[list[str], list[str]]:
    """Writes the file at `path` from the run's results (`accept`), keeping what it held: (the
    lines saying what changed, the points whose failure no entry can declare). The file is read
    and written under a lock, so two runs accepting at once leave one file holding both."""
    with _locked(path):
        entries = load(path) if path.is_file() else []
        after, changes, undeclarable = accept(entries, results, tf_version, codes)
        write(path, after)
    return changes + [f"not written, since no expectation declares how it fails (a declared "
                      f"deviation that happened otherwise, or values that differ with upstream "
                      f"weights only): {p}" for p in undeclarable], undeclarable
