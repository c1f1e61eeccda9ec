"""What goes in and out of a custom gradient: several inputs and outputs, nested
and dict outputs, None gradients, IndexedSlices and integer side outputs.

tf.custom_gradient flattens its outputs with tf.nest and hands grad_fn one
upstream gradient per flattened output, in tf.nest order (a dict's keys
sorted), and expects one gradient per flattened input back. These cases pin
that contract in every mode.
"""

import numpy as np
import tensorflow as tf

from harness import VALUES_DIFFER, Case, Expectation
from harness.cases import FORWARD_USES_THE_BODY

_DOCS = "https://www.tensorflow.org/api_docs/python/tf/custom_gradient"


def _contract(what: str) -> str:
    return f"{_DOCS} (the contract of f and grad_fn: {what})"


@tf.custom_gradient
def prod_and_sum(x, y):
    def grad(d_prod, d_sum):
        return d_prod * y + d_sum, d_prod * x + d_sum

    return (x * y, x + y), grad


@tf.custom_gradient
def nested_tuple(x):
    """((x^2, x^3), 2x): three flattened outputs in a nested tuple."""

    def grad(d_sq, d_cube, d_twice):
        return d_sq * 2 * x + d_cube * 3 * x * x + d_twice * 2

    return ((x * x, x * x * x), 2 * x), grad


@tf.custom_gradient
def dict_output(x):
    """A dict output: grad_fn gets the upstream gradients in sorted-key order."""

    def grad(d_cube, d_square):  # "cube" sorts before "square"
        return d_cube * 3 * x * x + d_square * 2 * x

    return {"square": x * x, "cube": x * x * x}, grad


@tf.custom_gradient
def scale_by(x, scale):
    """x * scale where scale is treated as a constant: its gradient is None."""

    def grad(dy):
        return dy * scale, None

    return x * scale, grad


@tf.custom_gradient
def custom_cube(v):
    def grad(dy):
        return dy * 3 * v * v

    return v * v * v, grad


def gather_then_cube(params):
    """tf.gather's gradient w.r.t. params is IndexedSlices, with index 0 twice."""
    return custom_cube(tf.gather(params, [0, 2, 0]))


def gather_rows(params):
    """A custom gather whose grad_fn returns IndexedSlices itself."""
    indices = tf.constant([2, 0, 2])

    @tf.custom_gradient
    def rows(p):
        def grad(dy):
            return tf.IndexedSlices(dy * 10.0, indices, tf.shape(p, out_type=tf.int32))

        return tf.gather(p, indices), grad

    return rows(params)


@tf.custom_gradient
def max_and_argmax(x):
    """A float output and an int64 side output; the side output's upstream gradient is unused."""
    idx = tf.argmax(x, output_type=tf.int64)

    def grad(d_max, unused_d_idx):
        return d_max * tf.one_hot(idx, tf.size(x), dtype=x.dtype)

    return (tf.reduce_max(x), idx), grad


CASES = [
    Case(
        id="structure.two_in_two_out",
        fn=prod_and_sum,
        points=[{"x": np.float32(2.0), "y": np.float32(5.0)}],
        order=2,
        source=_contract("several inputs, several outputs"),
        description="(x * y, x + y) with one upstream gradient per output: gradients y + 1 = 6 and "
                    "x + 1 = 3, then 1 and 1",
    ),
    Case(
        id="structure.nested_tuple_output",
        fn=nested_tuple,
        points=[{"x": np.array([1.0, -2.0], np.float32)}],
        order=2,
        source=_contract("a nested tuple output is flattened"),
        description="((x^2, x^3), 2x): grad_fn takes three upstream gradients, gradient 2x + 3x^2 "
                    "+ 2, then 2 + 6x",
    ),
    Case(
        id="structure.dict_output",
        fn=dict_output,
        points=[{"x": np.array([1.0, 3.0], np.float32)}],
        source=_contract("a dict output is flattened in sorted-key order"),
        description="{'square': x^2, 'cube': x^3}: upstream gradients arrive cube first; gradient "
                    "3x^2 + 2x = 5 and 33",
    ),
    Case(
        id="structure.none_gradient",
        fn=scale_by,
        points=[{"x": np.array([1.0, 2.0], np.float32), "scale": np.float32(3.0)}],
        source=_contract("None for an input means no gradient"),
        description="grad_fn returns None for `scale`: its gradient is None (unconnected) in every "
                    "mode, x's is 3; the case names no wrt, so the numeric oracle says there is no "
                    "gradient for scale and judges x's (--strict_none judges the None: sum(x) = 3 "
                    "is the true derivative)",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY
                + ": the body x * scale connects scale, so its gradient is sum(x) = 3 "
                       "where grad_fn's None says unconnected",
            ),
        ],
    ),
    Case(
        id="structure.gather_indexed_slices",
        fn=gather_then_cube,
        points=[{"params": np.array([1.0, 2.0, 3.0], np.float32)}],
        order=2,
        source=_contract("tf.gather's IndexedSlices gradient flowing out of a custom gradient"),
        description="custom cube of gather(params, [0, 2, 0]): IndexedSlices with a repeated "
                    "index, summed to [6, 0, 27], then [12, 0, 18]",
    ),
    Case(
        id="structure.indexed_slices_from_grad_fn",
        fn=gather_rows,
        points=[{"params": np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)}],
        source=_contract("grad_fn returning tf.IndexedSlices"),
        description="a custom gather whose grad_fn returns IndexedSlices(10 dy, [2, 0, 2]): "
                    "gradient rows [10, 10], [0, 0], [20, 20]",
        expectations=[
            Expectation(
                modes=["forward"], outcome="AttributeError",
                reason="ForwardpropFromTape treats grad_fn's outputs as tensors with tape ids, and "
                       "an IndexedSlices has none ('IndexedSlices' object has no attribute '_id')",
            ),
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER,
                reason="grad_fn scales dy by 10 on purpose, so that the IndexedSlices it returns "
                       "are easy to tell from tf.gather's own gradient",
            ),
        ],
    ),
    Case(
        id="structure.int_side_output",
        fn=max_and_argmax,
        points=[{"x": np.array([0.5, 2.0, -1.0], np.float32)}],
        source=_contract("an integer output next to a float one"),
        description="(max, argmax as int64): the int output 1 is reported, not differentiated; "
                    "gradient one_hot(1) = [0, 1, 0]",
    ),
]
