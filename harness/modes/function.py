"""Mode `function`: the eager mode's tape code inside one tf.function per case.

The function is traced once per input signature (dtype and shape), not once
per point: inputs are passed as tensors, never as Python numbers.
"""

from __future__ import annotations

from harness.case import Case
from harness.modes._tf import Progress, call_builder, outcome_error, outcome_ok, tape_orders, tf
from harness.records import ModeOutcome, RunOptions

NAME = "function"


def compile_case(case: Case, fn, options: RunOptions, progress: Progress) -> tf.types.experimental.GenericFunction:
    """The tf.function computing every order; `progress` shows the stage while tracing."""

    def all_orders(*xs):
        progress.done = []  # symbolic values of a failed trace are of no use
        orders = tape_orders(fn, xs, case.wrt_indices, case.order, options, progress)
        progress.stage = "run"
        return orders

    return tf.function(all_orders)


def run(case: Case, options: RunOptions) -> list[ModeOutcome]:
    """Runs every point of `case`; the builder is called once, eagerly, outside the function."""
    try:
        fn = call_builder(case)
    except Exception as e:  # noqa: BLE001 - the case's own code may raise anything
        return [outcome_error(NAME, e, "build", case, p) for p in case.points]
    progress = Progress()
    compiled = compile_case(case, fn, options, progress)
    outcomes = []
    for point in case.points:
        # Stays "run" unless this call traces; a trace sets it step by step.
        progress.stage = "run"
        try:
            orders = compiled(*[tf.constant(v) for v in point.values])
            outcomes.append(outcome_ok(NAME, [[None if t is None else t.numpy() for t in o] for o in orders],
                                       case, point))
        except Exception as e:  # noqa: BLE001
            outcomes.append(outcome_error(NAME, e, progress.stage, case, point))
    return outcomes
