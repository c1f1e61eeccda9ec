"""The tf.custom_gradient docstring's own examples, run in every mode.

https://www.tensorflow.org/api_docs/python/tf/custom_gradient: the naive and
the stable log1pexp, `bar(x, y)` with two inputs, the nested (higher-order)
example in its three forms, `linear_poly` with a variable and the `variables`
argument, and the `tf.stop_gradient` example around a `tf.function` that has
no registered gradient. Where the docstring leaves an op abstract (`fused_op`,
`op1`, `second_order_for_x(...)`), sin stands in: its derivatives are known in
closed form, so a wrong order is easy to see.
"""

import numpy as np
import tensorflow as tf

from harness import Case, Expectation, GRADIENT_UNUSED, VALUES_DIFFER
from harness.cases import (
    FORWARD_USES_THE_BODY,
    RACING_STEPS,
    SAVED_MODEL_DROPS_INNER,
    UPDATE_RACE,
    VARIABLE_IN_CONTROL_FLOW,
)

_DOCS = "https://www.tensorflow.org/api_docs/python/tf/custom_gradient"


def log1pexp_naive(x):
    """The docstring's unstable version: its gradient at x = 100 is inf / inf."""
    return tf.math.log(1 + tf.exp(x))


@tf.custom_gradient
def log1pexp(x):
    e = tf.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))

    return tf.math.log(1 + e), grad


@tf.custom_gradient
def bar(x, y):
    def grad(upstream):
        dz_dx = y
        dz_dy = x
        return upstream * dz_dx, upstream * dz_dy

    z = x * y
    return z, grad


@tf.custom_gradient
def op_nested_grad_fn(x):
    """The docstring's first nested example: grad_fn is itself a custom gradient."""
    y = tf.sin(x)

    @tf.custom_gradient
    def grad_fn(dy):
        gdy = dy * tf.cos(x)

        def grad_grad_fn(ddy):  # Not the 2nd order gradient of op w.r.t. x.
            return ddy * tf.cos(x)

        return gdy, grad_grad_fn

    return y, grad_fn


@tf.custom_gradient
def sin_fused_as_written(x):
    """`op_with_fused_backprop` as the docstring writes it, with fused_op = sin."""
    y, x_grad = tf.sin(x), tf.cos(x)

    def first_order_gradient(dy):
        @tf.custom_gradient
        def first_order_custom(unused_x):
            def second_order_and_transpose(ddy):
                return ddy * -tf.sin(x), ddy * x_grad

            return x_grad, second_order_and_transpose

        return dy * first_order_custom(x)

    return y, first_order_gradient


@tf.custom_gradient
def sin_fused_single(x):
    """The same with one return from the innermost function: one input, one gradient."""
    y, x_grad = tf.sin(x), tf.cos(x)

    def first_order_gradient(dy):
        @tf.custom_gradient
        def first_order_custom(unused_x):
            def second_order(ddy):
                return ddy * -tf.sin(x)

            return x_grad, second_order

        return dy * first_order_custom(x)

    return y, first_order_gradient


@tf.custom_gradient
def sin_fused_with_dy(x):
    """The docstring's "additional arguments" remark: pass dy in, and two returns are right."""
    y, x_grad = tf.sin(x), tf.cos(x)

    def first_order_gradient(dy):
        @tf.custom_gradient
        def first_order_custom(unused_x, dy):
            def second_order_and_transpose(ddy):
                return ddy * dy * -tf.sin(x), ddy * x_grad

            return dy * x_grad, second_order_and_transpose

        return first_order_custom(x, dy)

    return y, first_order_gradient


def build_linear_poly():
    weights = tf.Variable(np.ones([2], np.float32))  # Trainable variable weights

    @tf.custom_gradient
    def linear_poly(x):
        poly = weights[1] * x + weights[0]

        def grad_fn(dpoly, variables):
            grad_xs = dpoly * weights[1]
            grad_vars = []
            assert variables is not None
            assert len(variables) == 1
            assert variables[0] is weights
            dy_dw = dpoly * tf.stack([x ** 1, x ** 0])
            grad_vars.append(tf.reduce_sum(tf.reshape(dy_dw, [2, -1]), axis=1))
            return grad_xs, grad_vars

        return poly, grad_fn

    return linear_poly


def _stop_grad_shuffle(stop: bool):
    @tf.custom_gradient
    def test_func_with_stop_grad(x):
        @tf.function
        def _inner_func():
            if stop:
                return tf.stop_gradient(tf.random.shuffle(x))
            return tf.random.shuffle(x)  # The docstring: "This will raise".

        res = _inner_func()

        def grad(upstream):
            return upstream  # Arbitrarily defined custom gradient

        return res, grad

    return test_func_with_stop_grad


# Under tf.vectorized_map grad_fn is not called, for either shuffle case.
_SHUFFLE_VECTORIZED = Expectation(
    modes=["vectorized_map_eager", "vectorized_map_function"], outcome=GRADIENT_UNUSED,
    reason="measured on 2.21.0: under tf.vectorized_map the forward runs and grad_fn is never "
           "called, so the gradient is TensorFlow's own of the vectorized forward (here the "
           "upstream gradient through a shuffle of two equal elements, which is grad_fn's too)",
)
# Two equal elements: any shuffle gives the same tensor, so every mode agrees.
_SHUFFLE_POINT = {"x": np.array([0.4, 0.4], np.float32)}
# The numeric oracle differentiates the function at shifted points, where the
# two elements differ and each call draws its own permutation.
_SHUFFLE_RANDOM = ("tf.random.shuffle draws a new permutation at every call, so the function has "
                   "no derivative for finite differences to measure; the grad returning its "
                   "upstream gradient unpermuted is the docstring's own 'arbitrarily defined "
                   "custom gradient' (the VJP of a shuffle permutes it back)")

CASES = [
    Case(
        id="docs.log1pexp_naive",
        fn=log1pexp_naive,
        points=[{"x": np.float32(0.0)}, {"x": np.float32(100.0)}],
        source=_DOCS,
        description="naive log(1 + exp(x)): gradient 0.5 at x = 0 and NaN (inf / inf) at x = 100 "
                    "in every mode",
        expectations=[
            Expectation(
                modes=["keras_mixed"], outcome="FloatingPointError", points=["x=100.0"],
                reason="exp(100) overflows float16 as it does float32, so the gradient is NaN at "
                       "every loss scale, and tf_keras's LossScaleOptimizer skips every step whose "
                       "gradients are not finite (apply_gradients: _DynamicLossScaleState.update "
                       "decides should_apply_grads): no step ever applies the NaN the other modes "
                       "compute",
            ),
            Expectation(
                modes=["keras3_mixed"], outcome="FloatingPointError", points=["x=100.0"],
                reason="exp(100) overflows float16 as it does float32, so the gradient is NaN "
                       "at every loss scale, and Keras 3's LossScaleOptimizer applies a step only "
                       "where every gradient is finite (check_finite; otherwise it halves the "
                       "scale): no step ever applies the NaN the other modes compute",
            ),
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER, points=["x=100.0"],
                reason="the docstring's point: exp(100) overflows float32, so the naive gradient "
                       "is inf / inf = NaN where the true derivative is 1; this is why the "
                       "docstring writes the custom gradient",
            ),
        ],
    ),
    Case(
        id="docs.log1pexp",
        fn=log1pexp,
        points=[{"x": np.float32(0.0)}, {"x": np.float32(100.0)}],
        source=_DOCS,
        description="the stable custom gradient 1 - 1 / (1 + e^x): 0.5 at x = 0 and 1.0 at x = 100",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER, points=["x=100.0"],
                reason=FORWARD_USES_THE_BODY
                + ": the body log(1 + e) overflows at x = 100, so its derivative is "
                       "inf / inf = NaN where grad_fn gives 1",
            ),
        ],
    ),
    Case(
        id="docs.bar",
        fn=bar,
        points=[{"x": np.float32(2.0), "y": np.float32(3.0)}],
        source=_DOCS,
        description="z = x * y with two inputs: 6.0, gradients 3.0 and 2.0",
    ),
    Case(
        id="docs.nested_grad_fn",
        fn=op_nested_grad_fn,
        points=[{"x": np.float32(0.5)}],
        order=2,
        source=_DOCS,
        description="grad_fn itself a custom gradient of dy alone: eager differentiates grad_fn's "
                    "body (-sin x), the graph modes give None (unconnected)",
        expectations=[
            Expectation(
                modes=["saved_model"], outcome="LookupError", reason=SAVED_MODEL_DROPS_INNER,
            ),
            Expectation(
                modes=["no_autograph", "function", "xla", "graph"], outcome=VALUES_DIFFER,
                reason="the eager decorator records grad_fn with its inputs only (dy), and the "
                       "order-2 tape does not watch dy, so tape.h's ShouldRecord drops the record "
                       "and the tape keeps the ordinary ops of the body, dy * cos(x), whose "
                       "derivative is -sin(x); the graph decorator records one IdentityN over "
                       "outputs and inputs (gdy, dy), gdy is watched, and its gradient for the "
                       "output slots is None, so x is unconnected",
            ),
        ],
    ),
    Case(
        id="docs.nested_as_written",
        fn=sin_fused_as_written,
        points=[{"x": np.float32(0.5)}],
        order=2,
        source=_DOCS,
        description="op_with_fused_backprop as written (fused_op = sin): the innermost function "
                    "returns two gradients for one input",
        expectations=[
            Expectation(
                modes=["saved_model"], outcome="LookupError",
                reason=SAVED_MODEL_DROPS_INNER
                + "; the inner grad_fn with the wrong gradient count is never reached",
            ),
            Expectation(
                modes=["eager", "graph", "forward"], outcome="ValueError",
                reason="first_order_custom has one input but second_order_and_transpose returns "
                       "two gradients; the eager decorator counts them (custom_gradient.py: "
                       "'expected to return 1 gradients, but returned 2') and tf.gradients' "
                       "_VerifyGeneratedGradients rejects the IdentityN gradient count",
            ),
            Expectation(
                modes=["no_autograph", "function", "xla"], outcome="InternalError",
                reason="the graph-mode decorator used inside tf.function does not count the "
                       "gradients; the tape's C++ check in pywrap_tfe_src.cc does, and reports any "
                       "mismatch as InternalError 'returned too few gradients'",
            ),
        ],
    ),
    Case(
        id="docs.nested_single_return",
        fn=sin_fused_single,
        points=[{"x": np.float32(0.5)}],
        order=2,
        source=_DOCS,
        description="the nested example with one return from the innermost function: sin, cos, "
                    "-sin at x = 0.5",
        expectations=[
            Expectation(
                modes=["saved_model"], outcome="LookupError", reason=SAVED_MODEL_DROPS_INNER,
            ),
        ],
    ),
    Case(
        id="docs.nested_dy_input",
        fn=sin_fused_with_dy,
        points=[{"x": np.float32(0.5)}],
        order=2,
        source=_DOCS,
        description="the nested example with dy passed to the inner function as a second input, so "
                    "its two returns (for x and for dy) are right: sin, cos, -sin at x = 0.5",
        expectations=[
            Expectation(
                modes=["saved_model"], outcome="LookupError", reason=SAVED_MODEL_DROPS_INNER,
            ),
        ],
    ),
    Case(
        id="docs.linear_poly",
        build=build_linear_poly,
        points=[{"x": np.array([1.0, 2.0, 3.0], np.float32)}],
        wrt_variables=True,
        source=_DOCS,
        description="grad_fn(dpoly, variables) with weights = [1, 1]: poly [2, 3, 4], gradient [1, "
                    "1, 1] w.r.t. x and [6, 3] w.r.t. the weights",
        expectations=[
            *VARIABLE_IN_CONTROL_FLOW,
            Expectation(
                modes=RACING_STEPS, outcome="UpdateRace",
                reason="grad_fn reads weights[1] for x's gradient in the backward pass: "
                       f"{UPDATE_RACE}",
            ),
            Expectation(
                modes=["keras_mixed"], outcome="TypeError",
                reason="the builder's plain tf.Variable is not a Keras weight, so the "
                       "mixed_float16 policy does not autocast it: its float32 value meets the "
                       "float16 argument",
            ),
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY
                + ": the body w1 * x + w0 gives the true variable gradient [3, 6], not "
                       "grad_fn's swapped [6, 3]",
            ),
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER,
                reason="the docstring's grad_fn returns tf.stack([x ** 1, x ** 0]) summed, "
                       "[sum(x), n] = [6, 3], for weights [w0, w1]; poly = w1 * x + w0 has "
                       "gradient [n, sum(x)] = [3, 6]: the docstring swaps the two entries of the "
                       "variable gradient (x's gradient w1 is right)",
            ),
        ],
    ),
    Case(
        id="docs.stop_gradient_shuffle",
        fn=_stop_grad_shuffle(stop=True),
        points=[_SHUFFLE_POINT],
        kinks={"*": _SHUFFLE_RANDOM},
        source=_DOCS,
        description="tf.stop_gradient around a tf.function with RandomShuffle (no registered "
                    "gradient) inside a custom gradient: the custom gradient [1, 1] in every mode",
        expectations=[
            _SHUFFLE_VECTORIZED,
            Expectation(
                modes=["xla", "keras_xla", "keras3_xla"], outcome="FailedPreconditionError",
                reason="XLA cannot compile tf.random.shuffle of a float vector: legalize_tf.cc's "
                       "ConvertRandomShuffleOp sorts s32 random keys with createSortOp, which "
                       "marks the comparator TOTALORDER because the shuffled values are float, and "
                       "hlo_verifier.cc's CheckElementwiseInstruction requires SIGNED for s32; the "
                       "custom gradient plays no part",
            ),
        ],
    ),
    Case(
        id="docs.shuffle_without_stop_gradient",
        fn=_stop_grad_shuffle(stop=False),
        points=[_SHUFFLE_POINT],
        kinks={"*": _SHUFFLE_RANDOM},
        source=_DOCS,
        description="the same without tf.stop_gradient, which the docstring says raises "
                    "LookupError: every mode returns the custom gradient [1, 1]",
        expectations=[
            _SHUFFLE_VECTORIZED,
            Expectation(
                modes=["xla", "keras_xla", "keras3_xla"], outcome="FailedPreconditionError",
                reason="as in docs.stop_gradient_shuffle: XLA's lowering of tf.random.shuffle of a "
                       "float vector sorts s32 keys with a TOTALORDER comparator, which the HLO "
                       "verifier rejects",
            ),
        ],
    ),
]
