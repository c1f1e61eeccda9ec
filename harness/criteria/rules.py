"""The rules both sides of a run apply: which expectations cover a mode at a point, which mode is
the yardstick, whose values the oracles check, and which oracles every point must come back with.

A worker reads them to decide what to measure (harness.measure.execute, harness.measure.oracles) and
the main process to judge it (harness.judge.verdict), so each is decided in one place; nothing here
judges or words a verdict.

`case` here is anything carrying the rules: a Case, or the CaseInfo the main process holds.
"""

from __future__ import annotations

from typing import Mapping, Sequence, Union

from harness import mode_names, oracle_names
from harness.case import GRADIENT_UNUSED, Case, Expectation
from harness.records import CaseInfo, ModeOutcome, RunOptions, Status

__all__ = ["Rules", "applicable", "oracle_subject", "required_oracles", "yardstick"]

Rules = Union[Case, CaseInfo]


def applicable(case: Rules, point: str, modes: Sequence[str],
               tf_version: str) -> dict[str, Expectation]:
    """The expectation covering each selected mode at `point` on `tf_version`.

    Raises:
      ValueError: two expectations cover the same mode here.
    """
    by_mode: dict[str, Expectation] = {}
    for e in case.expectations:
        if not e.applies(tf_version, point):
            continue
        for mode in e.modes:
            if mode not in modes:
                continue
            if mode in by_mode:
                raise ValueError(
                    f"two expectations cover mode {mode!r} at {point} on TensorFlow {tf_version}: "
                    f"{by_mode[mode].describe()!r} and {e.describe()!r}; narrow their points or "
                    "tf_versions"
                )
            by_mode[mode] = e
    return by_mode


def yardstick(case: Rules, point: str, outcomes: Mapping[str, ModeOutcome], tf_version: str,
              default: str) -> str:
    """The mode the others are compared with at `point`: `default`, unless it was skipped or
    an expectation declares that it deviates there; then the first selected mode with neither.

    The one place this is decided: the judge compares the modes with it, and the
    oracles check its values (see oracle_subject). A GRADIENT_UNUSED expectation
    on a mode that cannot observe gradient use is not judged, so it does not
    disqualify that mode.
    """
    active = tuple(m for m, o in outcomes.items() if o.status is not Status.SKIP)
    try:
        expected = applicable(case, point, active, tf_version)
    except ValueError:
        expected = {}
    expected = {m: e for m, e in expected.items()
                if not (e.outcome == GRADIENT_UNUSED and outcomes[m].usage is None)}
    return _yardstick(default, active, expected)


def oracle_subject(outcomes: Mapping[str, ModeOutcome], reference: str) -> tuple[str, str]:
    """The mode whose values the oracles check, and a note saying so when it is not `reference`:
    the reference's, unless it computed none; then the first selected mode that did. A training
    step (an outcome with `top_order`) computes order 1 only and is never checked."""
    ref = outcomes.get(reference)
    if ref is None or ref.status is Status.OK and ref.top_order is None:
        return reference, ""
    for mode, outcome in outcomes.items():
        if outcome.status is Status.OK and outcome.top_order is None:
            how = (f"computes order {ref.top_order} only" if ref.top_order is not None
                   else f"raised {ref.error.type}" if ref.error else ref.status.value)
            return (
                mode,
                f"; checked on {mode}'s values, since {reference} (the yardstick mode) {how}",
            )
    if ref.top_order is not None:
        return next((m for m, o in outcomes.items() if o.top_order is None), reference), ""
    return reference, ""


def _yardstick(default: str, modes: Sequence[str], expected: Mapping[str, Expectation]) -> str:
    # A mode declared to deviate, or skipped, is no yardstick: the first that is neither is, a
    # training step (which computes order 1 only) only when no other mode is left.
    if default in modes and default not in expected:
        return default
    # A context (order 1 only, and judged against its base) is one only when no other is left.
    steps = mode_names.TRAINING_STEPS  # read now: the rows may have grown since import
    contexts = mode_names.CONTEXT_MODES
    ordered = ([m for m in modes if m not in steps and m not in contexts]
               + [m for m in modes if m in steps] + [m for m in modes if m in contexts])
    return next((m for m in ordered if m not in expected),
                default if default in modes else next(iter(ordered), default))


def required_oracles(options: RunOptions, case_oracles: Sequence[str]) -> tuple[str, ...]:
    """The oracles every point with a mode that ran must come back with, in their rows' order
    (harness.oracle_names): each one its option turns on (the numeric one, and the upstream one
    beside it when that check is on too) unless turned off, and the case's own (reference,
    analytic). The one place this is decided: the oracles run these, the judge demands them."""
    def on(row: oracle_names.Oracle) -> bool:
        if row.case_field:
            return row.name in case_oracles
        return (bool(getattr(options, row.option))
                and (not row.beside or on(oracle_names.ROWS[row.beside])))

    return tuple(name for name, row in oracle_names.ROWS.items() if on(row))
