"""Merges JSON reports from several TensorFlow versions into one matrix.

Pure: plain data in, frozen records out; no TensorFlow, no printing. The reports are read and
checked by harness.matrix.reports (`load_report`, re-exported here); harness.matrix.outputs writes
the renderings.

Rows are (case, point, mode); columns are TensorFlow versions, taken from each
report's environment.tensorflow and sorted in PEP 440's order (a nightly after
the release before it, before its own release). Reports of the
same version are shards of one run and are unioned. A cell holds what the mode
did (ok, the exception class, crash, timeout) and the verdict on that case and
point, with the explanation. A row that a version's reports do not have is
"absent" there: reports from different case sets merge without error.

`Matrix.points` folds the modes of each case and point into one `Point`, with
each `Step` where its behaviour changed between versions. A step is real (a
verdict or a mode's outcome changed) or only of coverage (a mode began or
stopped applying); `Matrix.folds` counts the coverage changes by mode, release
and direction. That is the shape the Markdown and HTML pages show: real
changes first, then the folds.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Mapping, Optional, Sequence

from harness.matrix.reports import (
    HOW_TO_MAKE,
    MATRIX_SCHEMA,
    REPORT_SCHEMA,
    MergeError,
    check_report,
    load_report,
)
from harness.records import error_headline
from harness.versions import release_tuple

__all__ = [
    "ABSENT",
    "Cell",
    "Column",
    "Fold",
    "Matrix",
    "HOW_TO_MAKE",
    "MergeError",
    "NOT_INSTALLED",
    "NOT_RUN",
    "Point",
    "REPORT_SCHEMA",
    "Row",
    "SCHEMA",
    "Step",
    "load_report",
    "merge",
]

SCHEMA = MATRIX_SCHEMA

# Cell statuses beside "ok", an exception class name, "crash" and "timeout".
ABSENT = "absent"  # this version's reports have no result for the case and point
NOT_INSTALLED = "not installed"  # this version could not be installed
NOT_RUN = "not run"  # the result exists but holds no outcome for this mode (skip, crash elsewhere)
# A Keras 3 mode skipped for want of Keras 3 (harness.measure.modes.keras3_step.NEEDS_KERAS3 begins
# with NO_KERAS3_NOTE): TensorFlow 2.12 to 2.15 come with Keras 2. Its arrival in 2.16 is no change
# of the case's behaviour, so no change is measured to or from it.
NO_KERAS3 = "no Keras 3"
NO_KERAS3_NOTE = "needs Keras 3"
# A mode with one of these statuses did not apply to the case and point: it skipped itself, or
# has no outcome. The mode with no outcome beside a crash or a timeout is the exception (`Step`).
_NOT_APPLYING = ("skip", NOT_RUN)
# `Point.kind`s in the order the pages show them
_KINDS = ("changed", "coverage", "same")
_STOPS_THE_REST = ("crash", "timeout")



@dataclasses.dataclass(frozen=True)
class Column:
    """One TensorFlow version.

    Attributes:
      version: the TensorFlow version, e.g. "2.16.2".
      reports: the names (paths) of the reports merged into it: one per shard.
      environment: the reports' environment (NumPy, Python, ...); a key whose
        shards disagree holds their values joined by " / ".
      not_installed: why the version could not be installed, or None.
    """

    version: str
    reports: tuple[str, ...] = ()
    environment: Mapping[str, str] = dataclasses.field(default_factory=dict)
    not_installed: Optional[str] = None

    @property
    def label(self) -> str:
        """The version, "2.23.0.dev20261026 (commit ef696751006)" for a nightly, or "2.15.1 (not
        installed: REASON)"."""
        if self.not_installed is not None:
            return f"{self.version} ({NOT_INSTALLED}: {self.not_installed})"
        return f"{self.version} (commit {self.commit})" if self.commit else self.version

    @property
    def commit(self) -> str:
        """The commit of a build between releases, such as a nightly; "" for a release.

        A nightly's version ("2.23.0.dev20261026", or TensorFlow's own "2.23.0-dev20261026")
        names a day, not a source; its tensorflow_git ("v1.12.1-148158-gef696751006", as
        `git describe` writes it) names the commit after the "-g". A release's version says
        what it is, so it has none here: its tensorflow_git describes it from a tag of its own
        minor release ("v2.16.0-rc0-18-g5bc9d26649c" for 2.16.1). A build that is no dev
        version but is described from another release's tag (the nightlies' "v1.12.1") is one
        between releases too. Shards that disagree give each commit, joined by " / ".
        """
        git = str(self.environment.get("tensorflow_git", ""))
        commits = re.findall(r"-g([0-9a-f]{7,40})\b", git)
        if not commits:
            return ""
        minor = re.match(r"\d+\.\d+", self.version)
        tags = re.findall(r"(?:^|/ )v?(\d+\.\d+)", git)
        dev = re.search(r"dev", self.version, re.IGNORECASE)
        if not dev and minor and tags and all(tag == minor.group(0) for tag in tags):
            return ""
        return " / ".join(commits)


@dataclasses.dataclass(frozen=True)
class Cell:
    """What one mode did for one case and point under one TensorFlow version.

    Attributes:
      status: "ok", the exception class name, "crash", "timeout", or one of
        NOT_RUN, ABSENT, NOT_INSTALLED.
      verdict: the verdict on the case and point ("pass", "xfail", ...); empty
        where there is no result (ABSENT, NOT_INSTALLED).
      stage: where the error happened ("forward", "order 2"), or empty.
      reason: the result's one-line reason, or why there is no result.
      error: the first line of the mode's error message, or empty.
      details: the result's further lines (each disagreement, each expectation).
      rerun: the command that reruns the case and point, or empty.
      unchecked: on a pass, why no oracle could judge its values (the report's "unchecked"), or
      empty.
    """

    status: str
    verdict: str = ""
    stage: str = ""
    reason: str = ""
    error: str = ""
    details: tuple[str, ...] = ()
    rerun: str = ""
    unchecked: str = ""

    @property
    def word(self) -> str:
        """The verdict as a cell shows it: a pass nothing checked says so."""
        return (f"{self.verdict} (unchecked)" if self.unchecked
                and self.verdict == "pass" else self.verdict)

    @property
    def observed(self) -> bool:
        """Whether this version ran the case and point at all."""
        return self.status not in (ABSENT, NOT_INSTALLED)

    @property
    def behaviour(self) -> tuple[str, str]:
        """What is compared between versions: the status and the verdict."""
        return (self.status, self.verdict)

    @property
    def text(self) -> str:
        """The compact cell text: "InternalError · xfail", or "absent"."""
        return f"{self.status} · {self.verdict}" if self.verdict else self.status

    @property
    def explanation(self) -> str:
        """The verdict and its reason, then the error with where it happened."""
        lines = [f"{self.verdict}: {self.reason}" if self.verdict and self.reason else self.verdict
                 or self.reason]
        if self.error:
            where = f" at {self.stage}" if self.stage else ""
            lines.append(f"{self.status}{where}: {self.error}")
        return "\n".join(line for line in lines if line)


@dataclasses.dataclass(frozen=True)
class Row:
    """One case, point and mode across every version.

    Attributes:
      cells: one per column of the matrix, in column order.
      change: where the behaviour changed, e.g. "raises InternalError from
        2.16.2; ok from 2.19.1"; empty when it is the same wherever it ran.
    """

    case: str
    point: str
    mode: str
    cells: tuple[Cell, ...]
    change: str = ""

    @property
    def name(self) -> str:
        return f"{self.case}[{self.point}]"

    @property
    def changed(self) -> bool:
        return bool(self.change)


# The verdicts a case beginning or stopping to apply may have on its other side and still be a
# change of coverage only (Step.real).
_QUIET_VERDICTS = ("pass", "xfail")


@dataclasses.dataclass(frozen=True)
class Step:
    """One change of a case and point between two versions that ran it.

    A change is real, or only a change of coverage. A mode's change is of coverage where it
    begins or stops applying: it did not apply on one side (it skipped, or has no outcome, "not
    run") and ran on the other (ok, an exception, a crash, a timeout). A mode with no outcome
    beside a mode that crashed or timed out did not run because of that crash: its change is part
    of the crash, so real. Every other change of a mode's status, and any change of the verdict,
    is real. A step is real where any part of it is; its coverage part, if any, still counts
    where the matrix folds coverage changes (`Matrix.folds`).

    Attributes:
      column: the index of the first column that behaves the new way.
      version: its version.
      label: its name in the matrix, the column's head: "2.16.2", never "2.16",
        which would claim 2.16.0 and 2.16.1 too.
      verdicts: the verdict before and after.
      modes: (mode, status before, status after) for each mode whose status
        changed, in the matrix's mode order.
      every_mode: whether `modes` holds every mode of the case and point.
      coverage: the modes of `modes` whose change is only of coverage.
    """

    column: int
    version: str
    label: str
    verdicts: tuple[str, str]
    modes: tuple[tuple[str, str, str], ...] = ()
    every_mode: bool = False
    coverage: tuple[str, ...] = ()

    @property
    def real(self) -> bool:
        """Whether the verdict, an error or values changed: more than which modes apply. A case
        that begins or stops applying as a whole (skip on one side, with every mode's change one
        of coverage) is coverage where the other side is a pass or an xfail: the seven tf_keras
        cases skip under a nightly for which no tf-keras-nightly is built. Where it fails
        there, or anything else,
        it is real: a failure that appears with a case must lead the page."""
        modes_real = any(m not in self.coverage for m, _, _ in self.modes)
        if modes_real or self.verdicts[0] == self.verdicts[1]:
            return modes_real
        other = [v for v in self.verdicts if v != "skip"]
        return not (len(other) == 1 and other[0].split(" ")[0] in _QUIET_VERDICTS)

    @property
    def starts(self) -> tuple[str, ...]:
        """The modes that begin to apply here."""
        return tuple(m for m, before, _ in self.modes if m in self.coverage
                     and before in _NOT_APPLYING)

    @property
    def stops(self) -> tuple[str, ...]:
        """The modes that stop applying here."""
        return tuple(m for m in self.coverage if m not in self.starts)

    @property
    def text(self) -> str:
        """What changed, the real part first: "forward: ok → ValueError; verdict xfail → fail",
        then "; keras3_mirrored: skip → ok" for a mode that began to apply."""
        real = tuple(m for m in self.modes if m[0] not in self.coverage)
        coverage = tuple(m for m in self.modes if m[0] in self.coverage)
        parts = [_modes_text(real, self.every_mode and not coverage)] if real else []
        if self.verdicts[0] != self.verdicts[1]:
            parts.append(f"verdict {self.verdicts[0]} → {self.verdicts[1]}")
        if coverage:
            parts.append(_modes_text(coverage, self.every_mode and not real))
        return "; ".join(parts)


def _modes_text(modes: Sequence[tuple[str, str, str]], whole: bool) -> str:
    """"forward: ok → ValueError", for (mode, before, after) changes; `whole` when they are every
    mode of the point.

    Modes that ended the same way are one group, "every mode" when they are all of them and "the
    others" when they are the rest of them; a mode of the group that came from elsewhere says so
    in brackets: "every mode: ok → TypeError (saved_model was LookupError)".
    """
    groups: dict[str, list[tuple[str, str]]] = {}
    for mode, before, after in modes:
        groups.setdefault(after, []).append((mode, before))
    rest = max(groups, key=lambda after: len(groups[after])) if len(groups) > 1 else None
    if rest is not None and (not whole or len(groups[rest]) < (2 if rest == NOT_RUN else 3)):
        # naming two modes is as short as "the others", unless they only stopped running
        rest = None
    parts = []
    # Stable: in mode order, but what stopped running and "the others" last.
    for after, members in sorted(groups.items(),
                                 key=lambda item: (item[0] == rest, item[0] == NOT_RUN)):
        befores = [before for _, before in members]
        common = max(befores, key=befores.count)  # the most common; the first of equals
        if after == rest:
            who = "the others"
        elif whole and len(groups) == 1:
            who = "every mode"
        else:
            who = ", ".join(mode for mode, _ in members)
        others: dict[str, list[str]] = {}
        for mode, before in members:
            if before != common:
                others.setdefault(before, []).append(mode)
        note = "; ".join(f"{', '.join(names)} {'were' if len(names) > 1 else 'was'} {before}"
                         for before, names in others.items())
        parts.append(f"{who}: {common} → {after}" + (f" ({note})" if note else ""))
    return "; ".join(parts)


@dataclasses.dataclass(frozen=True)
class Fold:
    """Every case point where one mode begins, or stops, applying at one column.

    Attributes:
      mode: the mode.
      column: the index of the column where it begins or stops applying.
      label: that column's name in the matrix, as `Step.label`.
      starts: True where the mode begins to apply, False where it stops.
      points: (case[point], the mode's status where it applies: after the step where it begins,
        before it where it stops), in the matrix's point order.
    """

    mode: str
    column: int
    label: str
    starts: bool
    points: tuple[tuple[str, str], ...]

    @property
    def text(self) -> str:
        """"keras3_mirrored applies from 2.18.1: 64 points (60 ok, 4 RuntimeError)", or
        "keras_mixed no longer applies from 2.16.2: 12 points (all ok before)"."""
        verb = "applies" if self.starts else "no longer applies"
        count = len(self.points)
        statuses = [status for _, status in self.points]
        # ok first, then the most frequent, then by name: the same page from the same reports
        kinds = sorted(set(statuses), key=lambda s: (s != "ok", -statuses.count(s), s))
        if len(kinds) == 1:
            said = kinds[0] if count == 1 else f"all {kinds[0]}"
            said += "" if self.starts else " before"
        else:
            said = ("" if self.starts else "before: ") + ", ".join(
                f"{statuses.count(s)} {s}" for s in kinds)
        return (f"{self.mode} {verb} from {self.label}: {count} point{'s' * (count != 1)} "
                f"({said})")


@dataclasses.dataclass(frozen=True)
class Point:
    """One case and point across every version, its modes folded in.

    Attributes:
      rows: one per mode, in the matrix's mode order; row.cells[i] is what the
        mode did under column i.
      steps: each change between versions that ran the point, in column order.
    """

    case: str
    point: str
    rows: tuple[Row, ...]
    steps: tuple[Step, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.case}[{self.point}]"

    @property
    def theme(self) -> str:
        """The case id's prefix before its first dot: "seeds" for "seeds.nested"."""
        return self.case.split(".", 1)[0]

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(r.mode for r in self.rows)

    @property
    def changed(self) -> bool:
        return bool(self.steps)

    @property
    def real(self) -> bool:
        """Whether a step of it is real: more than which modes apply changed (`Step`)."""
        return any(s.real for s in self.steps)

    @property
    def kind(self) -> str:
        """"changed" where a step is real, "coverage" where only which modes apply changed, else
        "same"."""
        return "changed" if self.real else "coverage" if self.steps else "same"

    @property
    def change(self) -> str:
        """Every step: "From 2.16.2: forward: ok → ValueError. From 2.19.1: forward: ValueError
        → ok."."""
        return " ".join(f"From {s.label}: {s.text}." for s in self.steps)

    def cells(self, index: int) -> tuple[Cell, ...]:
        """What each mode did under column `index`, in mode order."""
        return tuple(r.cells[index] for r in self.rows)

    def step_at(self, index: int) -> Optional[Step]:
        """The step whose new behaviour starts at column `index`, or None."""
        return next((s for s in self.steps if s.column == index), None)


@dataclasses.dataclass(frozen=True)
class Matrix:
    """The merged reports: rows that changed between versions first.

    `points` and `folds` are the shape the pages show: the case points whose verdict, errors or
    values changed first, and which modes begin or stop applying, folded by mode and release.
    """

    columns: tuple[Column, ...]
    modes: tuple[str, ...]
    rows: tuple[Row, ...]

    @property
    def versions(self) -> tuple[str, ...]:
        return tuple(c.version for c in self.columns)

    @property
    def changed(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.changed)

    @property
    def points(self) -> tuple[Point, ...]:
        """One per case and point, the modes folded in: those with a real change first, then
        those where only which modes apply changed, then the rest (`Point.kind`); each group by
        case id."""
        grouped: dict[tuple[str, str], list[Row]] = {}
        # changed rows first, each group by case: first seen is the order wanted
        for row in self.rows:
            grouped.setdefault((row.case, row.point), []).append(row)
        order = {mode: i for i, mode in enumerate(self.modes)}
        points = []
        for (case, point), rows in grouped.items():
            rows.sort(key=lambda r: order.get(r.mode, len(order)))
            points.append(Point(case=case, point=point, rows=tuple(rows),
                                steps=_steps(self.columns, rows)))
        points.sort(key=lambda p: _KINDS.index(p.kind))  # stable
        return tuple(points)

    @property
    def folds(self) -> tuple[Fold, ...]:
        """Each mode that begins or stops applying at a column, with every case point where it
        does, whatever else changed there: a real step's coverage part counts here too, so that
        a fold's count is the whole count. In column order, then the matrix's mode order, a mode
        that begins before one that stops."""
        found: dict[tuple[int, str, bool], list[tuple[str, str]]] = {}
        for point in self.points:
            for step in point.steps:
                for mode, before, after in step.modes:
                    if mode in step.coverage:
                        starts = mode in step.starts
                        found.setdefault((step.column, mode, starts), []).append(
                            (point.name, after if starts else before))
        order = {mode: i for i, mode in enumerate(self.modes)}
        keys = sorted(found, key=lambda k: (k[0], order.get(k[1], len(order)), not k[2], k[1]))
        return tuple(Fold(mode=mode, column=column, label=self.columns[column].version,
                          starts=starts, points=tuple(found[(column, mode, starts)]))
                     for column, mode, starts in keys)


# A version as PEP 440 spells it, with the separators it allows; TensorFlow's own nightly version
# ("2.23.0-dev20261026", tf.__version__) is the PEP 440 "2.23.0.dev20261026".
_PEP440 = re.compile(r"""v?(?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d*))?
    (?:-(?P<post_implicit>\d+)|[-_.]?(?:post|rev|r)[-_.]?(?P<post_n>\d*))?
    (?:[-_.]?dev[-_.]?(?P<dev_n>\d*))?
    (?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?""", re.IGNORECASE | re.VERBOSE)
_PRE_ORDER = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


def _version_key(version: str) -> tuple:
    """Sorts versions in PEP 440's order: 2.21.0 < 2.22.0.dev20260601 < 2.22.0rc1 < 2.22.0.

    A dev build comes before the pre-releases and the release it leads to, a post-release after
    its release. A version with some other suffix comes before its release, beside its dev builds
    and by text; what is not a version number at all comes after every version.
    """
    try:
        release = release_tuple(version)
    except ValueError:
        return (1, version)
    match = _PEP440.fullmatch(version.strip())
    if match is None:
        return (0, release, (0,), (0,), (0,), version)
    # A spelled-out number may be left out ("2.22.0.dev", "2.22.0.post"): its group is then "".
    pre, dev = match.group("pre"), match.group("dev_n")
    post = match.group("post_implicit") or match.group("post_n")
    has_post, has_dev = post is not None, dev is not None
    if pre is not None:
        pre_key: tuple = (1, _PRE_ORDER[pre.lower()], int(match.group("pre_n") or 0))
    else:
        # "2.22.0.dev1" comes before "2.22.0a1"; "2.22.0.post1.dev1" after "2.22.0"
        pre_key = (0,) if has_dev and not has_post else (2,)
    post_key = (1, int(post or 0)) if has_post else (0,)
    dev_key = (0, int(dev or 0)) if has_dev else (1,)
    return (0, release, pre_key, post_key, dev_key, version)


def _cell(result: dict, mode: str) -> Cell:
    common = dict(verdict=result["verdict"], reason=str(result.get("reason") or ""),
                  details=tuple(str(d) for d in result.get("details") or ()),
                  rerun=str(result.get("rerun") or ""),
                  unchecked=str(result.get("unchecked") or ""))
    outcome = result["modes"].get(mode)
    if outcome is None:
        return Cell(status=NOT_RUN, **common)
    status = outcome["status"]
    if status == "skip" and str(outcome.get("note") or "").startswith(NO_KERAS3_NOTE):
        status = NO_KERAS3
    if status == "error":
        status = str(outcome.get("error_type") or "error")
    return Cell(status=status, stage=str(outcome.get("stage") or ""),
                error=error_headline(str(outcome.get("error_message") or ""),
                                     str(outcome.get("error_type") or "")),
                **common)


def _status_change(status: str) -> str:
    return {"ok": "ok", "crash": "crashes", "timeout": "times out", NOT_RUN: NOT_RUN}.get(
        status, f"raises {status}"
    )


def _change(columns: Sequence[Column], cells: Sequence[Cell]) -> str:
    """Says where the behaviour changed between versions that ran the row."""
    seen = [(column, cell) for column, cell in zip(columns, cells)
            if cell.observed and cell.status != NO_KERAS3]
    changes = []
    for (_, before), (column, after) in zip(seen, seen[1:]):
        what = []
        if after.status != before.status:
            what.append(_status_change(after.status))
        if after.verdict != before.verdict:
            what.append(f"verdict {before.verdict}→{after.verdict}")
        if what:
            changes.append(f"{', '.join(what)} from {column.version}")
    return "; ".join(changes)


def _steps(columns: Sequence[Column], rows: Sequence[Row]) -> tuple[Step, ...]:
    """Where a case and point (its rows, one per mode) changed between versions that ran it."""
    # A column where every mode of the point skipped for want of Keras 3 (a Keras 3 case before
    # TensorFlow 2.16) shows no behaviour of the case: no step is measured to or from it.
    seen = [i for i in range(len(columns)) if rows and rows[0].cells[i].observed
            and not all(r.cells[i].status == NO_KERAS3 for r in rows)]
    steps = []
    for before, after in zip(seen, seen[1:]):
        modes = tuple((r.mode, r.cells[before].status, r.cells[after].status) for r in rows
                      if r.cells[before].status != r.cells[after].status
                      and NO_KERAS3 not in (r.cells[before].status, r.cells[after].status))
        verdicts = (rows[0].cells[before].verdict, rows[0].cells[after].verdict)
        if modes or verdicts[0] != verdicts[1]:
            applies = {i: _applies(rows, i) for i in (before, after)}
            coverage = tuple(mode for mode, _, _ in modes
                             if {applies[before][mode], applies[after][mode]} == {True, False})
            version = columns[after].version
            steps.append(Step(column=after, version=version, label=version,
                              verdicts=verdicts, modes=modes,
                              every_mode=len(modes) == len(rows) > 1, coverage=coverage))
    return tuple(steps)


def _applies(rows: Sequence[Row], column: int) -> dict[str, Optional[bool]]:
    """Whether each mode applied to the case and point (its rows) under column `column`: None for
    a mode with no outcome beside one that crashed or timed out, which that stopped."""
    statuses = {r.mode: r.cells[column].status for r in rows}
    stopped = any(s in _STOPS_THE_REST for s in statuses.values())
    return {mode: None if s == NOT_RUN and stopped else s not in _NOT_APPLYING
            for mode, s in statuses.items()}


def _union_environment(environments: Sequence[Mapping[str, str]]) -> dict[str, str]:
    merged: dict[str, list[str]] = {}
    for environment in environments:
        for key, value in environment.items():
            values = merged.setdefault(key, [])
            if str(value) not in values:
                values.append(str(value))
    return {key: " / ".join(values) for key, values in merged.items()}


def _untimed(result: dict) -> dict:
    """A result without its time: two runs of the same point take different times."""
    return {k: v for k, v in result.items() if k != "seconds"}


def merge(reports: Mapping[str, dict], failed: Optional[Mapping[str, str]] = None) -> Matrix:
    """Merges reports into one matrix.

    Args:
      reports: report name (its path, used in messages) to the report, as
        `load_report` returns it. Reports of one TensorFlow version are shards
        of one run and are unioned.
      failed: TensorFlow version to the reason it could not be installed; each
        becomes a column whose cells are "not installed".

    Returns:
      The matrix, rows whose behaviour changed between versions first; within
      each group, rows are sorted by case id, then point and mode in the order
      the reports list them (so shards merge to the same table as one run).

    Raises:
      MergeError: nothing to merge, a malformed report, a case and point in two
        shards of one version with different results, or a version that both
        has a report and is listed as not installed.
    """
    failed = dict(failed or {})
    by_version = _by_version(reports, failed)
    versions = sorted([*by_version, *failed], key=_version_key)
    columns, results, order, modes = _columns(versions, by_version, failed)
    rows = _rows(columns, results, order, modes)
    # stable: changed rows first, each group in its order
    rows.sort(key=lambda row: not row.changed)
    return Matrix(columns=tuple(columns), modes=tuple(modes), rows=tuple(rows))


def _by_version(reports: Mapping[str, dict], failed: Mapping[str, str]) -> dict[str,
                                                                                list[tuple[str,
                                                                                           dict]]]:
    """Each report checked, and grouped by its TensorFlow version as (name, report) shards; a
    MergeError when there is nothing to merge or a version both has reports and is not installed."""
    if not reports and not failed:
        raise MergeError(f"no reports to merge; {HOW_TO_MAKE}")
    by_version: dict[str, list[tuple[str, dict]]] = {}
    for name, data in reports.items():
        check_report(name, data)
        by_version.setdefault(data["environment"]["tensorflow"], []).append((name, data))
    for version, reason in failed.items():
        if version in by_version:
            names = ", ".join(name for name, _ in by_version[version])
            raise MergeError(f"TensorFlow {version} is listed as not installed ({reason}) but has "
                             f"reports ({names}); drop one of the two")
    return by_version


def _columns(versions: Sequence[str], by_version: Mapping[str, list[tuple[str, dict]]],
             failed: Mapping[str, str]) -> tuple[list[Column], dict, dict, list[str]]:
    """A column per version, in `versions`' order; each reported version's results by (case, point),
    its shards unioned (a MergeError where two disagree); when each (case, point) was first seen;
    and every mode, in the order the reports list them."""
    columns = []
    results: dict[str, dict[tuple[str, str], dict]] = {}  # version -> (case, point) -> result
    order: dict[tuple[str, str], int] = {}  # (case, point) -> when first seen
    modes: list[str] = []
    for version in versions:
        if version in failed:
            columns.append(Column(version=version, not_installed=str(failed[version])))
            continue
        shards = by_version[version]
        found: dict[tuple[str, str], dict] = {}
        origin: dict[tuple[str, str], str] = {}
        for name, data in shards:
            for mode in [*data.get("modes", ()), *(m for r in data["results"] for m in r["modes"])]:
                if mode not in modes:
                    modes.append(mode)
            for result in data["results"]:
                key = (result["case"], result["point"])
                if key in found and _untimed(found[key]) != _untimed(result):
                    raise MergeError(
                        f"{key[0]}[{key[1]}] is in two reports of TensorFlow {version}, "
                        f"{origin[key]} and {name}, with different results; shards of one run must "
                        "not overlap: merge one of them")
                found.setdefault(key, result)
                origin.setdefault(key, name)
                order.setdefault(key, len(order))
        results[version] = found
        columns.append(Column(version=version, reports=tuple(name for name, _ in shards),
                              environment=_union_environment([data["environment"]
                                                              for _, data in shards])))
    return columns, results, order, modes


def _rows(columns: Sequence[Column], results: Mapping[str, dict],
          order: Mapping[tuple[str, str], int], modes: Sequence[str]) -> list[Row]:
    """A row per case, point and mode, sorted by case id, then point in the order first seen, then
    mode: a cell per column, and the change across them."""
    rows = []
    for case, point in sorted(order, key=lambda key: (key[0], order[key])):
        for mode in modes:
            cells = []
            for column in columns:
                if column.not_installed is not None:
                    cells.append(Cell(status=NOT_INSTALLED, reason=column.not_installed))
                elif (case, point) in results[column.version]:
                    cells.append(_cell(results[column.version][(case, point)], mode))
                else:
                    cells.append(Cell(status=ABSENT,
                                      reason=f"the TensorFlow {column.version} run did not "
                                                            "select this case and point"))
            rows.append(Row(case=case, point=point, mode=mode, cells=tuple(cells),
                            change=_change(columns, cells)))
    return rows
