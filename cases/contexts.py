"""Custom gradients where the call's context decides: tf.cond, the loops, vectorized_map, jacobian.

Each case is a report's own code, or a pattern whose answer a context changes; its truth is a
closed form. The contexts run as modes (harness.mode_names.CONTEXTS, `--mode contexts`); in the
plain modes these cases pass, and they say what each context does to them.
"""

import numpy as np
import tensorflow as tf

from harness import GRADIENT_UNUSED, VALUES_DIFFER, Case, Expectation
from harness.cases import FORWARD_USES_THE_BODY, JACOBIANS, VARIABLE_IN_CONTROL_FLOW
from harness import mode_names

_ISSUE = "https://github.com/tensorflow/tensorflow/issues/{}"
# The training steps put the call in a train function rather than a context: the training themes
# judge them (patterns.clip_gradient_by_norm's clipping under a loss scale, the variables theme's
# reads), and here they would say that again.
_NO_STEPS = {mode: "a training step is no context: the training themes judge these patterns "
                   "there (patterns.clip_gradient_by_norm, variables.*)"
             for mode in mode_names.TRAINING_STEPS}


def build_multiply_by_w():
    """tensorflow#50170's function without its tf.cond: a custom gradient whose grad_fn reads a
    non-trainable variable w = 2 (the contexts put the call inside tf.cond, a loop, a map)."""
    w = tf.Variable(2.0, trainable=False)

    @tf.custom_gradient
    def multiply_by_w(x):
        def grad_fn(dy):
            return dy * w

        return w * x, grad_fn

    return multiply_by_w


@tf.custom_gradient
def numpy_square(x):
    """x**2 and its gradient 2x dy, both computed by NumPy (tf.numpy_function, stateful as by
    default), as in tensorflow#53726."""
    y = tf.numpy_function(lambda a: a * a, [x], tf.float32)
    y.set_shape(x.shape)

    def grad(dy):
        g = tf.numpy_function(lambda a: 2 * a, [x], tf.float32)
        g.set_shape(x.shape)
        return dy * g

    return y, grad


@tf.custom_gradient
def clip_dy_by_norm(x):
    """The identity, whose grad_fn clips its upstream gradient to norm 1: 1/sqrt(n) at each of n
    elements for dy = 1 everywhere, where each one-hot row of a jacobian keeps its 1."""
    def grad(dy):
        return tf.clip_by_norm(dy, 1.0)

    return tf.identity(x), grad


CASES = [
    Case(
        id="contexts.variable_in_grad_fn_50170",
        build=build_multiply_by_w,
        points=[{"x": np.float32(5.0)}],
        source=_ISSUE.format(50170),
        description="w * x with grad_fn reading the variable w = 2: gradient 2 in every plain "
                    "mode; inside tf.cond and a loop under tf.function the gradient raises",
        analytic=lambda x: {1: np.float32(2.0)},
        skip_modes=_NO_STEPS,
        expectations=[*VARIABLE_IN_CONTROL_FLOW],
    ),
    Case(
        id="contexts.numpy_function_53726",
        fn=numpy_square,
        points=[{"x": np.array([1.0, 2.0, 3.0], np.float32)}],
        source=_ISSUE.format(53726),
        description="x**2 computed by tf.numpy_function, with the gradient 2x by NumPy too: "
                    "[2, 4, 6], but 0 under tf.vectorized_map",
        analytic=lambda x: {1: (2 * x).astype(np.float32)},
        skip_modes={**_NO_STEPS,
                    "saved_model": "tf.numpy_function runs a Python function of this process: "
                                   "a SavedModel holds the op but not the function"},
        expectations=[
            Expectation(
                modes=["vectorized_map_eager", "vectorized_map_function"],
                outcome=GRADIENT_UNUSED,
                reason="tensorflow#53726: under tf.vectorized_map grad_fn is never called and the "
                       "gradient is 0 where grad_fn gives 2x (measured on 2.21.0: [0, 0, 0] for "
                       "[2, 4, 6]), with no error; tf.map_fn's is right, and so is "
                       "vectorized_map's of patterns.numpy_function_op, whose tf.numpy_function "
                       "is stateless",
            ),
            Expectation(
                modes=["xla"], outcome="InvalidArgumentError",
                reason="XLA compiles no tf.numpy_function: 'Detected unsupported operations when "
                       "trying to compile graph' (PyFunc)",
            ),
        ],
    ),
    Case(
        id="contexts.clip_dy_by_norm",
        fn=clip_dy_by_norm,
        points=[{"x": np.array([1.0, -2.0, 3.0], np.float32)}],
        source="https://www.tensorflow.org/api_docs/python/tf/clip_by_norm; pattern: a grad_fn "
               "clipping its upstream gradient by norm",
        description="the identity with grad_fn clipping dy to norm 1: tape.gradient gives "
                    "1/sqrt(3) = 0.577 at each element, a jacobian's rows contracted give 1",
        analytic=lambda x: {1: np.full(3, 1 / np.sqrt(3), np.float32)},
        skip_modes=_NO_STEPS,
        expectations=[
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER,
                reason="gradient clipping by design: 1/sqrt(3) at each element of an identity, "
                       "whose derivative is 1",
            ),
            Expectation(
                modes=["upstream", "linearity"], outcome=VALUES_DIFFER,
                reason="clipping dy by its norm is not linear in dy",
            ),
            Expectation(
                modes=JACOBIANS, outcome=VALUES_DIFFER,
                reason="each row of a jacobian is the gradient of one one-hot dy, whose norm is "
                       "1 already, so no row is clipped and the rows contracted give 1 at each "
                       "element, where tape.gradient clips the whole dy of ones to 1/sqrt(3)",
            ),
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY + ": the body tf.identity gives 1",
            ),
        ],
    ),
]
