"""What `python -m harness --mode all --cases 'seeds.*'` computes, by hand: the
reference of scripts/bench_seeds.py. Every seed case at every point up to its
order in eager (nested tapes), one tf.function per case, and a v1 graph per case
(placeholders, tf.gradients per order, one Session fed per point). Errors are
caught and printed, as the harness records them. Run: python scripts/_handwritten_seeds.py
[--skip_teardown]
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import tensorflow as tf

# The case functions are imported, not copied: the benchmark measures the
# harness's overhead around them, and both sides must run the very same code.
from harness.cases.seeds import (custom_square, log1pexp2, log1pexp_branch, op_with_fused_backprop,
                                 op_with_fused_backprop_single, subtract_square)

f32 = np.float32
# (name, function, points, order), as in cases/seeds.py.
CASES: list[tuple[str, Callable, list[tuple], int]] = [
    ("log1pexp2", log1pexp2, [(f32(1.0),), (f32(100.0),)], 2),
    ("docstring_nested", op_with_fused_backprop, [(f32(1.0),)], 2),  # raises in every mode
    ("docstring_nested_single", op_with_fused_backprop_single, [(f32(1.0),)], 2),
    ("custom_square", custom_square, [(f32(3.0),)], 2),
    ("subtract_square", subtract_square, [(f32(5.0), f32(2.0))], 1),
    ("log1pexp_branch", log1pexp_branch, [(f32(1000.0),), (f32(1.0),)], 1),  # raises when traced
]


def tape_orders(fn: Callable, xs: Sequence[tf.Tensor], order: int) -> list[list]:
    """Orders 0..order; the tape of order k records the computation of order k-1."""
    if order == 0:
        return [tf.nest.flatten(fn(*xs))]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        orders = tape_orders(fn, xs, order - 1)
    orders.append(tape.gradient(orders[-1], list(xs)))
    return orders


def to_numpy(orders: list[list]) -> list[list]:
    return [[None if t is None else np.asarray(t) for t in o] for o in orders]


def eager(name: str, fn: Callable, points: list[tuple], order: int) -> None:
    for point in points:
        try:
            print("eager", name, point,
                  to_numpy(tape_orders(fn, [tf.constant(v) for v in point], order)))
        except Exception as e:  # noqa: BLE001 - a failing case is a result, not a crash
            print("eager", name, point, type(e).__name__, e)


def function(name: str, fn: Callable, points: list[tuple], order: int) -> None:
    compiled = tf.function(lambda *xs: tape_orders(fn, xs, order))
    for point in points:
        try:
            print("function", name, point, to_numpy(compiled(*[tf.constant(v) for v in point])))
        except Exception as e:  # noqa: BLE001
            print("function", name, point, type(e).__name__, e)


def graph(name: str, fn: Callable, points: list[tuple], order: int) -> None:
    orders: list[list] = []
    with tf.Graph().as_default() as g:
        xs = [tf.compat.v1.placeholder(tf.float32, shape=()) for _ in points[0]]
        try:
            orders.append(tf.nest.flatten(fn(*xs)))
            for _ in range(order):
                orders.append(tf.gradients(orders[-1], xs))
        except Exception as e:  # noqa: BLE001 - keep and run the orders built before it
            print("graph", name, "build", type(e).__name__, e)
    with tf.compat.v1.Session(graph=g) as session:
        for point in points:
            if orders:
                print("graph", name, point, session.run(orders, feed_dict=dict(zip(xs, point))))


if __name__ == "__main__":
    import os
    import sys

    for case in CASES:
        for mode in (eager, function, graph):
            mode(*case)
    if "--skip_teardown" in sys.argv:
        # What a harness worker does when it is done (harness.process.worker._exit_now): run the
        # exit handlers, then exit without the interpreter's teardown of TensorFlow's modules.
        import atexit

        atexit._run_exitfuncs()
        sys.stdout.flush()
        os._exit(0)
