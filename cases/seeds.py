"""The examples of the two seed documents, with their printed numbers.

000_b67b95af73276bf3.txt: a StackOverflow question on the tf.custom_gradient
docstring's nested (higher-order) example, and an answer that runs tf.gradients
twice in a v1 Session. 004_782d2543d39c98b0.txt: an article with first-order
examples.
"""

import numpy as np
import tensorflow as tf

from harness import VALUES_DIFFER, Case, Expectation
from harness.cases import (FORWARD_USES_THE_BODY, KERAS3_STEPS, KERAS3_SYMBOLIC_BUILD,
                           SAVED_MODEL_DROPS_INNER)

_SO = "seeds/000_b67b95af73276bf3.txt (StackOverflow answer)"
_SO_QUESTION = ("seeds/000_b67b95af73276bf3.txt (the tf.custom_gradient docstring example "
                "as the question quotes it)")
_ARTICLE = "seeds/004_782d2543d39c98b0.txt (article)"


@tf.custom_gradient
def log1pexp2(x):
    e = tf.exp(x)
    y = tf.math.log(1 + e)
    x_grad = 1 - 1 / (1 + e)

    def first_order_gradient(dy):
        @tf.custom_gradient
        def first_order_custom(unused_x):
            def second_order_gradient(ddy):
                # The answer's stand-in second derivative, 1 - e (not the true one).
                return ddy * (1 - e)
            return x_grad, second_order_gradient
        return dy * first_order_custom(x)

    return y, first_order_gradient


def _fused_log1pexp(x):
    """The docstring's `fused_op`: the forward value and its derivative in one go."""
    e = tf.exp(x)
    return tf.math.log(1 + e), 1 - 1 / (1 + e)


@tf.custom_gradient
def op_with_fused_backprop(x):
    y, x_grad = _fused_log1pexp(x)

    def first_order_gradient(dy):
        @tf.custom_gradient
        def first_order_custom(unused_x):
            def second_order_and_transpose(ddy):
                # As the docstring has it: two values for one input.
                second_order_for_x = ddy * x_grad * (1 - x_grad)
                gradient_wrt_dy = ddy * x_grad
                return second_order_for_x, gradient_wrt_dy
            return x_grad, second_order_and_transpose
        return dy * first_order_custom(x)

    return y, first_order_gradient


@tf.custom_gradient
def op_with_fused_backprop_single(x):
    y, x_grad = _fused_log1pexp(x)

    def first_order_gradient(dy):
        @tf.custom_gradient
        def first_order_custom(unused_x):
            def second_order(ddy):
                # The answer's fix: one value, the true second derivative s(x)(1 - s(x)).
                return ddy * x_grad * (1 - x_grad)
            return x_grad, second_order
        return dy * first_order_custom(x)

    return y, first_order_gradient


@tf.custom_gradient
def custom_square(x):
    y = x ** 2

    def grad(dy):
        return dy * 2 * x

    return y, grad


@tf.custom_gradient
def log1pexp_branch(x):
    e = tf.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (e + 1))

    if x > 100.0:  # the article's approximation for large x
        return x, grad
    else:
        return tf.math.log(1 + e), grad


@tf.custom_gradient
def subtract_square(x, y):
    diff = x - y
    squared = diff ** 2

    def grad(dy):
        return dy * 2 * diff, dy * -2 * diff

    return squared, grad


CASES = [
    Case(
        id="seeds.log1pexp2",
        fn=log1pexp2,
        points=[{"x": np.float32(1.0)}, {"x": np.float32(100.0)}],
        order=2,
        source=_SO,
        description="nested custom gradient: dy 0.7310586 / 1.0, ddy -1.7182817 / -inf at x = 1 / "
                    "100",
        expectations=[
            Expectation(
                modes=["saved_model"], outcome="LookupError",
                reason=SAVED_MODEL_DROPS_INNER
                + ": the seed's second_order_gradient is lost, and the order 2 tape "
                       "makes order 1 fail too",
            ),
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY
                + ": the inner custom op's body returns the x_grad it captured, so "
                       "order 2 is the true 0.19661194 at x = 1 instead of 1 - e, and at x = 100 "
                       "the overflowing body gives NaN at orders 1 and 2",
            ),
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER, orders=[2],
                reason="the answer defines the second derivative as 1 - e 'to make our life "
                       "easier': the true one is sigmoid(x)(1 - sigmoid(x)), 0.19661193 at x = 1 "
                       "and 0 at x = 100, where 1 - e gives -1.7182817 and -inf; every mode "
                       "computes the case's numbers faithfully",
            ),
        ],
    ),
    Case(
        id="seeds.docstring_nested",
        fn=op_with_fused_backprop,
        points=[{"x": np.float32(1.0)}],
        order=2,
        source=_SO_QUESTION,
        description="docstring's nested example as written: the inner grad_fn returns two values "
                    "for one input",
        expectations=[
            Expectation(
                modes=["saved_model"], outcome="LookupError",
                reason=SAVED_MODEL_DROPS_INNER
                + "; the inner grad_fn with the wrong gradient count is never reached",
            ),
            Expectation(
                modes=["eager", "graph", "forward"], outcome="ValueError",
                reason="the innermost grad_fn returns 2 gradients for 1 input; the tape and "
                       "tf.gradients both check the count and raise ValueError",
            ),
            Expectation(
                modes=["no_autograph", "function", "xla"], outcome="InternalError",
                reason="inside tf.function the same wrong count reaches the runtime and surfaces "
                       "as InternalError instead of ValueError",
            ),
        ],
    ),
    Case(
        id="seeds.docstring_nested_single",
        fn=op_with_fused_backprop_single,
        points=[{"x": np.float32(1.0)}],
        order=2,
        source=_SO,
        description="the answer's fix: one return from the inner grad_fn, second derivative "
                    "s(x)(1-s(x)) = 0.19661193 at x = 1",
        expectations=[
            Expectation(
                modes=["saved_model"], outcome="LookupError", reason=SAVED_MODEL_DROPS_INNER,
            ),
        ],
    ),
    Case(
        id="seeds.custom_square",
        fn=custom_square,
        points=[{"x": np.float32(3.0)}],
        order=2,
        source=_ARTICLE,
        description="x**2 with grad 2x: 9.0, 6.0, then 2.0 by differentiating the grad function",
    ),
    Case(
        id="seeds.subtract_square",
        fn=subtract_square,
        points=[{"x": np.float32(5.0), "y": np.float32(2.0)}],
        order=1,
        source=_ARTICLE,
        description="(x - y)**2 with two inputs: 9.0, gradients 6.0 and -6.0",
    ),
    Case(
        id="seeds.log1pexp_branch",
        fn=log1pexp_branch,
        points=[{"x": np.float32(1000.0)}, {"x": np.float32(1.0)}],
        order=1,
        source=_ARTICLE,
        description="Python `if x > 100.0` on a tensor: eager gives 1000.0 and 1.0; traced modes "
                    "cannot branch on a tensor",
        expectations=[
            Expectation(
                modes=["vectorized_map_eager"], outcome="OperatorNotAllowedInGraphError",
                reason="tf.vectorized_map traces the call into a function even in eager, where the"
                       " Python if on a tensor inside the custom gradient cannot run, as under "
                       "tf.function",
            ),
            Expectation(
                modes=["no_autograph", "function", "xla", "graph", "saved_model", "keras_fit",
                       "keras_xla", "keras_mixed", "keras_mirrored"],
                outcome="OperatorNotAllowedInGraphError",
                reason="a Python `if` on a symbolic tensor cannot be traced, and autograph does "
                       "not convert the function inside the tf.custom_gradient wrapper",
            ),
            Expectation(
                modes=KERAS3_STEPS, outcome="RuntimeError",
                reason=f"{KERAS3_SYMBOLIC_BUILD}, and wraps what that raises in "
                       "RuntimeError('Unable to automatically build the model'): here the Python "
                       "`if` on a symbolic tensor ('Using a symbolic `tf.Tensor` as a Python "
                       "`bool` is not allowed')",
            ),
        ],
    ),
]
