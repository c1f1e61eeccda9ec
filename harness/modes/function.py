"""Mode `function`: the eager mode's tape code inside one tf.function per case.

The function is traced once per input signature (dtype and shape), not once
per point: inputs are passed as tensors, never as Python numbers.
"""

from __future__ import annotations

from harness.case import Case
from harness.modes._tf import Progress, Subject, build_error, build_subject, tape_orders, tf
from harness.records import ModeOutcome, RunOptions

NAME = "function"


def compile_subject(subject: Subject, order: int, options: RunOptions, progress: Progress, **function_options):
    """The tf.function computing every order; `progress` shows the stage while tracing.

    `function_options` go to tf.function: the xla and no_autograph modes are
    this mode with jit_compile=True or autograph=False.
    """

    def all_orders(*xs):
        progress.done = []  # symbolic values of a failed trace are of no use
        orders = tape_orders(subject, xs, order, options, progress)
        progress.stage = "run"
        return orders

    return tf.function(all_orders, **function_options)


def run(case: Case, options: RunOptions) -> list[ModeOutcome]:
    """Runs every point of `case`; the builder is called once, eagerly, outside the function."""
    return run_compiled(NAME, case, options)


def run_compiled(name: str, case: Case, options: RunOptions, **function_options) -> list[ModeOutcome]:
    """Runs every point of `case` through one tf.function made with `function_options`."""
    try:
        subject = build_subject(case)
    except Exception as e:  # noqa: BLE001 - the case's own code may raise anything
        return build_error(case, name, e, case.points)
    progress = Progress()
    compiled = compile_subject(subject, case.order, options, progress, **function_options)
    outcomes = []
    for point in case.points:
        # Stays "run" unless this call traces; a trace sets it step by step.
        progress.stage = "run"
        try:
            orders = compiled(*[tf.constant(v) for v in point.values])
            outcomes.append(subject.ok(name, [[None if t is None else t.numpy() for t in o] for o in orders],
                                       point))
        except Exception as e:  # noqa: BLE001
            outcomes.append(subject.error(name, e, progress.stage, point))
    return outcomes
