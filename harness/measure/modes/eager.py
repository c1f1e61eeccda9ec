"""Mode `eager`: nested GradientTapes under eager execution, one point at a time."""

from __future__ import annotations

from typing import Callable, Optional

from harness.case import Case
from harness.measure.modes.shared import (
    Steps,
    Subject,
    build_error,
    build_subject,
    tape_chains,
    tf,
    upstream_tables,
)
from harness.records import ModeOutcome, RunOptions

NAME = "eager"


def run(case: Case, options: RunOptions) -> list[ModeOutcome]:
    """Runs every point of `case`; the builder is called once, eagerly."""
    return run_as(NAME, case, options)


def run_as(name: str, case: Case, options: RunOptions,
           wrap: Optional[Callable[[Subject], Subject]] = None,
           order: Optional[int] = None) -> list[ModeOutcome]:
    """This mode's run, named `name`, of the subject `wrap` makes of the case's (a context's,
    harness.measure.modes.contexts), to `order` (the case's unless given)."""
    order = case.order if order is None else order
    try:
        subject = build_subject(case)
        subject = wrap(subject) if wrap else subject
    except Exception as e:  # noqa: BLE001 - the case's own code may raise anything
        return build_error(case, name, e, case.points)
    outcomes = []
    for point in case.points:
        progress = Steps()
        try:
            xs = [tf.constant(v) for v in point.values]
            tables = upstream_tables(case, point, options)
            orders, weighted = tape_chains(subject, xs, order, options, progress,
                                           None if tables is None else tf.constant(tables),
                                           linear=True)
            outcomes.append(subject.ok(name, _values(orders), point, _values(weighted),
                                       progress.upstream_error, _values([progress.linear])[0],
                                       progress.linear_error))
        except Exception as e:  # noqa: BLE001
            outcomes.append(subject.error(name, e, progress.stage, point, _values(progress.done)))
    return outcomes


def _values(orders):
    return [[_numpy(t) for t in o] for o in orders]


def _numpy(t):
    return None if t is None else t.numpy()
