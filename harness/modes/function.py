"""Mode `function`: the eager mode's tape code inside one tf.function per case.

The function is traced once per input signature (dtype and shape), not once
per point: inputs are passed as tensors, never as Python numbers.
"""

from __future__ import annotations

from harness.case import Case
from harness.modes._tf import Progress, Subject, build_error, build_subject, tape_orders, tf
from harness.records import ModeOutcome, RunOptions

NAME = "function"


def compile_subject(subject: Subject, order: int, options: RunOptions, progress: Progress):
    """The tf.function computing every order; `progress` shows the stage while tracing."""

    def all_orders(*xs):
        progress.done = []  # symbolic values of a failed trace are of no use
        orders = tape_orders(subject, xs, order, options, progress)
        progress.stage = "run"
        return orders

    return tf.function(all_orders)


def run(case: Case, options: RunOptions) -> list[ModeOutcome]:
    """Runs every point of `case`; the builder is called once, eagerly, outside the function."""
    try:
        subject = build_subject(case)
    except Exception as e:  # noqa: BLE001 - the case's own code may raise anything
        return build_error(case, NAME, e, case.points)
    progress = Progress()
    compiled = compile_subject(subject, case.order, options, progress)
    outcomes = []
    for point in case.points:
        # Stays "run" unless this call traces; a trace sets it step by step.
        progress.stage = "run"
        try:
            orders = compiled(*[tf.constant(v) for v in point.values])
            outcomes.append(subject.ok(NAME, [[None if t is None else t.numpy() for t in o] for o in orders],
                                       point))
        except Exception as e:  # noqa: BLE001
            outcomes.append(subject.error(NAME, e, progress.stage, point))
    return outcomes
