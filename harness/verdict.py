"""The verdict rules: outcomes and expectations in, one Result out. Pure.

Working out which expectations apply (`applicable`) is kept apart from
deciding what happened (`judge`), which is the one place an outcome becomes a
verdict.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

from harness.case import BAD_GRADIENT, VALUES_DIFFER, Case, Expectation, Point
from harness.compare import Mismatch, check_gradients, compare_outcomes
from harness.records import ErrorInfo, ModeOutcome, Result, Status, Verdict

__all__ = ["applicable", "died", "judge", "skipped"]

# An exception at these stages is the case's (or the harness's) own fault, not
# TensorFlow's behaviour: the builder raised, or a mode runner broke.
_CASE_STAGES = frozenset({"build", "harness"})


def applicable(case: Case, point: Point, modes: Sequence[str],
               tf_version: str) -> dict[str, Expectation]:
    """The expectation covering each selected mode at `point` on `tf_version`.

    Raises:
      ValueError: two expectations cover the same mode here.
    """
    by_mode: dict[str, Expectation] = {}
    for e in case.expectations:
        if not e.applies(tf_version, point.label):
            continue
        for mode in e.modes:
            if mode not in modes:
                continue
            if mode in by_mode:
                raise ValueError(
                    f"two expectations cover mode {mode!r} at {point.label} on TensorFlow {tf_version}: "
                    f"{by_mode[mode].describe()!r} and {e.describe()!r}; narrow their points or tf_versions"
                )
            by_mode[mode] = e
    return by_mode


def _met(e: Expectation, outcome: ModeOutcome, disagreements: list[Mismatch],
         malformed: list[Mismatch]) -> Optional[bool]:
    """True if `outcome` is the declared deviation, False if it is the normal
    behaviour instead, None if it is some other deviation."""
    if e.outcome == VALUES_DIFFER:
        if outcome.status is not Status.OK:
            return None
        return bool(disagreements)
    if e.outcome == BAD_GRADIENT:
        # A malformed gradient cannot agree with well-formed ones, so disagreements are part of it.
        if outcome.status is not Status.OK:
            return None
        return bool(malformed)
    if outcome.status is Status.ERROR and outcome.error.is_a(e.outcome):
        return True
    if outcome.status is Status.OK and not disagreements and not malformed:
        return False
    return None


def _deviation_lines(mode: str, outcome: ModeOutcome, disagreements: list[Mismatch],
                     malformed: list[Mismatch], ref_mode: str) -> list[str]:
    lines = [m.message for m in disagreements + malformed]
    if not lines and outcome.status is Status.ERROR:
        e = outcome.error
        others = "every selected mode raises it too" if mode == ref_mode else f"{ref_mode} agrees"
        lines.append(f"{mode} raises {e.type} at {e.stage}: {e.first_line} ({others}; a case must "
                     "compute its values, or declare the error with an Expectation)")
    return lines


def judge(case: Case, point: Point, outcomes: Mapping[str, ModeOutcome], *, tf_version: str,
          reference: str, rerun: str, strict_xpass: bool = False) -> Result:
    """Decides the verdict on `case` at `point` from every selected mode's outcome.

    Args:
      case: the case.
      point: the point judged.
      outcomes: mode name to outcome; must include `reference`.
      tf_version: the running TensorFlow version, for version-ranged expectations.
      reference: the mode every other mode is compared with; when an expectation
        declares that it deviates here, the first selected mode without one.
      rerun: the command line that reruns this case and point alone.
      strict_xpass: make an unmet expectation a failure.
    """
    def result(verdict: Verdict, reason: str, details: Sequence[str] = ()) -> Result:
        return Result(case=case.id, point=point.label, order=case.order, verdict=verdict,
                      reason=reason, details=tuple(details), outcomes=dict(outcomes), rerun=rerun)

    for verdict, status in ((Verdict.CRASH, Status.CRASH), (Verdict.TIMEOUT, Status.TIMEOUT)):
        dead = [o for o in outcomes.values() if o.status is status]
        if dead:
            lines = [f"{o.mode}: {o.error.first_line if o.error else status.value}" for o in dead]
            return result(verdict, lines[0], lines)

    broken = [o for o in outcomes.values() if o.status is Status.ERROR and o.error.stage in _CASE_STAGES]
    try:
        expected = applicable(case, point, tuple(outcomes), tf_version)
    except ValueError as e:
        return result(Verdict.ERROR, str(e))

    if reference in expected:
        # A mode declared to deviate is no yardstick: compare with the first that is not.
        reference = next((m for m in outcomes if m not in expected), reference)
    ref = outcomes[reference]
    deviations: list[str] = []
    met: list[tuple[str, Expectation]] = []
    unmet: list[tuple[str, Expectation]] = []
    for mode, outcome in outcomes.items():
        disagreements = [] if mode == reference else compare_outcomes(ref, outcome, tolerance=case.tolerance)
        malformed = check_gradients(outcome)
        e = expected.get(mode)
        if e is None:
            deviations += _deviation_lines(mode, outcome, disagreements, malformed, reference)
            continue
        happened = _met(e, outcome, disagreements, malformed)
        if happened is None:
            got = _deviation_lines(mode, outcome, disagreements, malformed, reference)
            deviations.append(f"{mode}: expected {e.describe()}; got instead: " + " | ".join(got or [outcome.status.value]))
        else:
            (met if happened else unmet).append((mode, e))

    unexpected_build = [o for o in broken if o.mode not in dict(met)]
    if unexpected_build:
        o = unexpected_build[0]
        return result(Verdict.ERROR,
                      f"the case's {o.error.stage} step raises {o.error.type} in {o.mode}: {o.error.first_line}",
                      [f"{b.mode}: {b.error.type}: {b.error.first_line}" for b in unexpected_build])
    if deviations:
        return result(Verdict.FAIL, deviations[0], deviations)
    if not expected:
        return result(Verdict.PASS, "")
    met_lines = [f"as declared: {_modes_of(e, met)} {e.outcome}: {e.reason}" for e in _distinct(met)]
    if not unmet:
        return result(Verdict.XFAIL, "declared: " + ", ".join(f"{m} {e.outcome}" for m, e in met), met_lines)
    unmet_lines = [f"declared but did not happen on TensorFlow {tf_version}: {_modes_of(e, unmet)} "
                   f"{e.outcome} ({e.reason}); they agree with {reference}: if TensorFlow fixed it, "
                   "narrow the expectation's tf_versions" for e in _distinct(unmet)]
    verdict = Verdict.FAIL if strict_xpass else Verdict.XPASS
    return result(verdict, unmet_lines[0], unmet_lines + met_lines)


def _distinct(pairs: list[tuple[str, Expectation]]) -> list[Expectation]:
    found: list[Expectation] = []
    for _, e in pairs:
        if not any(e is f for f in found):
            found.append(e)
    return found


def _modes_of(e: Expectation, pairs: list[tuple[str, Expectation]]) -> str:
    return "/".join(m for m, f in pairs if f is e)


def skipped(case: Case, point: Point, reason: str, rerun: str) -> Result:
    """A Result for a point that was not run."""
    return Result(case=case.id, point=point.label, order=case.order, verdict=Verdict.SKIP,
                  reason=reason, details=(), outcomes={}, rerun=rerun)


def died(case_id: str, point: str, order: int, status: Status, mode: str, how: str, output: str,
         rerun: str) -> Result:
    """A Result for a point whose process crashed or timed out while running `mode`.

    Args:
      status: Status.CRASH or Status.TIMEOUT.
      how: what happened, e.g. "killed by SIGABRT" or "ran past the 60 s timeout".
      output: the last lines the process wrote, kept with the outcome.
    """
    verdict = Verdict.CRASH if status is Status.CRASH else Verdict.TIMEOUT
    outcome = ModeOutcome(mode=mode, status=status,
                          error=ErrorInfo(type=status.value, bases=(), message=f"{how}\n{output}".strip(),
                                          stage=mode))
    lines = [line for line in output.splitlines() if line.strip()]
    return Result(case=case_id, point=point, order=order, verdict=verdict, reason=f"{mode} mode: {how}",
                  details=tuple(f"output: {line}" for line in lines), outcomes={mode: outcome}, rerun=rerun)
