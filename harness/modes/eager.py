"""Mode `eager`: nested GradientTapes under eager execution, one point at a time."""

from __future__ import annotations

from harness.case import Case
from harness.modes._tf import Progress, build_error, build_subject, tape_orders, tf
from harness.records import ModeOutcome, RunOptions

NAME = "eager"


def run(case: Case, options: RunOptions) -> list[ModeOutcome]:
    """Runs every point of `case`; the builder is called once, eagerly."""
    try:
        subject = build_subject(case)
    except Exception as e:  # noqa: BLE001 - the case's own code may raise anything
        return build_error(case, NAME, e, case.points)
    outcomes = []
    for point in case.points:
        progress = Progress()
        try:
            xs = [tf.constant(v) for v in point.values]
            orders = tape_orders(subject, xs, case.order, options, progress)
            outcomes.append(subject.ok(NAME, [[_numpy(t) for t in o] for o in orders], point))
        except Exception as e:  # noqa: BLE001
            partial = [[_numpy(t) for t in o] for o in progress.done]
            outcomes.append(subject.error(NAME, e, progress.stage, point, partial))
    return outcomes


def _numpy(t):
    return None if t is None else t.numpy()
