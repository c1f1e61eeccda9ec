"""What the three core modes share: the TensorFlow import, the order-k
contraction on a tape, and turning tensors and exceptions into records.

Order k is the gradient of the sum of the order k-1 gradients with respect to
the same inputs: what `tf.gradients(list_of_ys, xs)` and a tape's
`gradient(list_of_targets, sources)` both compute, since each sums over its
targets. Only floating and complex outputs are targets; an integer side output
is reported at order 0 and not differentiated.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np
import tensorflow as tf

from harness.case import Case, Point
from harness.records import ErrorInfo, ModeOutcome, Output, RunOptions, Status

__all__ = ["tf", "Progress", "error_info", "unconnected", "is_target", "flat_outputs",
           "tape_orders", "outcome_ok", "outcome_error", "call_builder"]


class Progress:
    """Where a run is ("forward", "order 2", ...) and what it finished so far.

    Mode code sets `stage` before each step, so an exception escaping from
    anywhere is recorded with the step it happened in.
    """

    def __init__(self):
        self.stage = "forward"
        self.done: list[list[Any]] = []
        self.error: Optional[BaseException] = None  # set when building stopped early


def error_info(exc: BaseException, stage: str) -> ErrorInfo:
    bases = tuple(c.__name__ for c in type(exc).__mro__[1:] if c not in (object, BaseException))
    return ErrorInfo(type=type(exc).__name__, bases=bases, message=str(exc), stage=stage)


def unconnected(options: RunOptions):
    return tf.UnconnectedGradients.ZERO if options.unconnected_zero else tf.UnconnectedGradients.NONE


def is_target(t) -> bool:
    return t is not None and (t.dtype.is_floating or t.dtype.is_complex)


def flat_outputs(result: Any) -> list:
    """The function's outputs flattened with tf.nest, each as a tensor."""
    return [tf.convert_to_tensor(t) for t in tf.nest.flatten(result)]


def tape_orders(fn: Callable, xs: Sequence, wrt: Sequence[int], order: int, options: RunOptions,
                progress: Progress) -> list[list]:
    """Orders 0..order of fn at xs with nested GradientTapes, eager or traced.

    The tape for order k is opened around everything that computes order k-1,
    so the order k-1 gradient computation is itself recorded.
    """
    sources = [xs[i] for i in wrt]

    def upto(k: int) -> list[list]:
        if k == 0:
            progress.stage = "forward"
            orders = [flat_outputs(fn(*xs))]
            progress.done.append(orders[0])
            return orders
        with tf.GradientTape(persistent=False) as tape:
            tape.watch(sources)
            orders = upto(k - 1)
        progress.stage = f"order {k}"
        targets = [t for t in orders[-1] if is_target(t)]
        if targets:
            grads = tape.gradient(targets, sources, unconnected_gradients=unconnected(options))
        else:
            grads = [tf.zeros_like(s) if options.unconnected_zero else None for s in sources]
        orders.append(list(grads))
        progress.done.append(orders[-1])
        return orders

    return upto(order)


def _to_outputs(values: Sequence, like: Optional[Sequence[np.ndarray]]) -> tuple[Output, ...]:
    outs = []
    for i, v in enumerate(values):
        if v is None:
            x = like[i] if like is not None and i < len(like) else None
            outs.append(Output.of(None, x.dtype.name if x is not None else "",
                                  x.shape if x is not None else ()))
        else:
            outs.append(Output.of(np.asarray(v)))
    return tuple(outs)


def _records(orders: Sequence[Sequence], case: Case, point: Point) -> tuple[tuple[Output, ...], ...]:
    wrt_inputs = [point.values[i] for i in case.wrt_indices]
    return tuple(_to_outputs(o, None if k == 0 else wrt_inputs) for k, o in enumerate(orders))


def outcome_ok(mode: str, orders: Sequence[Sequence], case: Case, point: Point) -> ModeOutcome:
    """An OK outcome from NumPy values (or None) per order."""
    return ModeOutcome(mode=mode, status=Status.OK, orders=_records(orders, case, point))


def outcome_error(mode: str, exc: BaseException, stage: str, case: Case, point: Point,
                  partial: Sequence[Sequence] = ()) -> ModeOutcome:
    """An ERROR outcome, keeping the orders computed before the exception."""
    return ModeOutcome(mode=mode, status=Status.ERROR, orders=_records(partial, case, point),
                       error=error_info(exc, stage))


def call_builder(case: Case) -> Callable:
    """The function under test: `case.fn`, or what `case.build()` returns."""
    if case.fn is not None:
        return case.fn
    fn = case.build()
    if not callable(fn):
        raise TypeError(f"build() returned {type(fn).__name__}, not a callable; return the function under test")
    return fn
