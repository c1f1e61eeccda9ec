"""Custom gradients that read variables.

A custom-gradient function that reads a trainable variable must take
`variables` in its grad_fn and return (input gradients, variable gradients).
The eager decorator finds the variables with a VariableWatcher; the graph
decorator also walks the graph between inputs and outputs, and sorts them by
name. Each builder creates its variables from NumPy constants, once per mode.
"""

import numpy as np
import tensorflow as tf

from harness import VALUES_DIFFER, Case, Expectation
from harness.cases import (
    FORWARD_USES_THE_BODY,
    KERAS3_SYMBOLIC_BUILD,
    RACING_STEPS,
    UPDATE_RACE,
    VARIABLE_IN_CONTROL_FLOW,
)

# Under the mixed_float16 policy the case's argument arrives in float16 (an autocast Keras weight),
# and the builder's own variables are plain tf.Variables, which no policy casts.
_PLAIN_VARIABLE_UNDER_MIXED = Expectation(
    modes=["keras_mixed"], outcome="TypeError",
    reason="the builder's plain tf.Variable is not a Keras weight, so the mixed_float16 policy "
           "does not autocast it: its float32 value meets the float16 argument in the forward "
           "(TypeError: 'does not match type float16')",
)

# Keras 3 meets the same float32 value in the symbolic build its fit starts with.
_PLAIN_VARIABLE_UNDER_KERAS3_MIXED = Expectation(
    modes=["keras3_mixed"], outcome="RuntimeError",
    reason=f"{KERAS3_SYMBOLIC_BUILD}, and wraps what that raises in RuntimeError('Unable to "
           "automatically build the model'): here the builder's plain tf.Variable, which is no "
           "Keras 3 variable and which the mixed_float16 policy does not cast, meets the float16 "
           "argument in the forward ('does not match type float16')",
)

_DOCS = "https://www.tensorflow.org/api_docs/python/tf/custom_gradient"


def build_scaled():
    w = tf.Variable(np.array([2.0, -1.0], np.float32), name="w")

    @tf.custom_gradient
    def scaled(x):
        def grad_fn(dy, variables=None):
            assert len(variables) == 1
            return dy * w, [dy * x]

        return x * w, grad_fn

    return scaled


def build_affine():
    w = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32), name="w")
    b = tf.Variable(np.array([0.5, -0.5], np.float32), name="b")

    @tf.custom_gradient
    def affine(x):
        y = tf.tanh(tf.linalg.matvec(w, x, transpose_a=True) + b)

        def grad_fn(dy, variables=None):
            dz = dy * (1 - y * y)
            per_variable = {id(w): tf.einsum("i,j->ij", x, dz), id(b): dz}
            # The list's order is the decorator's business: look each one up.
            return tf.linalg.matvec(w, dz), [per_variable[id(v)] for v in variables]

        return y, grad_fn

    return affine


def build_variable_argument():
    v = tf.Variable(np.array([1.5, -2.0], np.float32), name="v")

    @tf.custom_gradient
    def mul(x, var):
        def grad_fn(dy):
            return dy * var, dy * x

        return x * var, grad_fn

    return lambda x: mul(x, v)


def build_non_trainable():
    scale = tf.Variable(np.float32(3.0), trainable=False, name="scale")

    @tf.custom_gradient
    def scaled(x):
        def grad_fn(dy):  # no `variables`: only trainable variables are watched
            return dy * scale

        return x * scale, grad_fn

    return scaled


def build_no_variables_argument():
    w = tf.Variable(np.float32(2.0), name="w")

    @tf.custom_gradient
    def scaled(x):
        def grad_fn(dy):
            return dy * w

        return x * w, grad_fn

    return scaled


def build_cond_around_call():
    """tensorflow/tensorflow#50170 as reported: the call sits in a tf.cond branch."""
    w = tf.Variable(np.float32(2.0), trainable=False)

    @tf.custom_gradient
    def multiply_by_w(x):
        y = w * x

        def grad_fn(grad_y):
            return grad_y * w

        return y, grad_fn

    return lambda x: tf.cond(tf.constant(True), lambda: multiply_by_w(x), lambda: x)


def build_cond_in_grad_fn():
    """The variable read under a tf.cond inside grad_fn itself."""
    w = tf.Variable(np.float32(2.0), trainable=False)

    @tf.custom_gradient
    def multiply_by_w(x):
        y = w * x

        def grad_fn(grad_y):
            return tf.cond(tf.reduce_all(x > 0), lambda: grad_y * w, lambda: grad_y * 0.0)

        return y, grad_fn

    return multiply_by_w


CASES = [
    Case(
        id="variables.grad_fn_variables",
        build=build_scaled,
        points=[{"x": np.array([1.0, 3.0], np.float32)}],
        wrt_variables=True,
        source=_DOCS,
        description="x * w with grad_fn(dy, variables): gradient w = [2, -1] w.r.t. x and x = [1, "
                    "3] w.r.t. w",
        expectations=[
            *VARIABLE_IN_CONTROL_FLOW,
            Expectation(
                modes=RACING_STEPS, outcome="UpdateRace",
                reason=f"grad_fn reads w for x's gradient in the backward pass: {UPDATE_RACE}",
            ),_PLAIN_VARIABLE_UNDER_MIXED],
    ),
    Case(
        id="variables.two_variables",
        build=build_affine,
        points=[{"x": np.array([0.1, -0.2, 0.3], np.float32)}],
        wrt_variables=True,
        order=2,
        source=_DOCS,
        description="tanh(W^T x + b) reading two variables, gradients matched to `variables` by "
                    "identity, to order 2 w.r.t. x, W and b",
        expectations=[
            *VARIABLE_IN_CONTROL_FLOW,
            Expectation(
                modes=RACING_STEPS, outcome="UpdateRace",
                reason="grad_fn reads w for x's gradient (matvec(w, dz)), which Grappler merges "
                       f"with the forward's read: {UPDATE_RACE}",
            ),_PLAIN_VARIABLE_UNDER_MIXED],
    ),
    Case(
        id="variables.variable_as_argument",
        build=build_variable_argument,
        points=[{"x": np.array([1.0, 3.0], np.float32)}],
        wrt_variables=True,
        source=_DOCS,
        description="a resource variable passed as an argument is an input, not one of "
                    "`variables`: gradients [1.5, -2] w.r.t. x and [1, 3] w.r.t. v",
        expectations=[_PLAIN_VARIABLE_UNDER_MIXED],
    ),
    Case(
        id="variables.non_trainable",
        build=build_non_trainable,
        points=[{"x": np.array([1.0, -1.0], np.float32)}],
        source=_DOCS,
        description="a non-trainable variable read in the forward pass is not one of `variables`, "
                    "so grad_fn(dy) suffices: gradient 3 w.r.t. x",
        expectations=[*VARIABLE_IN_CONTROL_FLOW, _PLAIN_VARIABLE_UNDER_MIXED,
                      _PLAIN_VARIABLE_UNDER_KERAS3_MIXED],
    ),
    Case(
        id="variables.missing_variables_argument",
        build=build_no_variables_argument,
        points=[{"x": np.float32(1.0)}],
        source=_DOCS,
        description="reading a trainable variable with a grad_fn that takes no `variables`: "
                    "TypeError in every mode, at the call",
        expectations=[
            _PLAIN_VARIABLE_UNDER_MIXED,
            Expectation(
                modes=["eager", "no_autograph", "function", "xla", "graph", "forward",
                       "saved_model", "keras_eager", "keras_fit", "keras_xla", "keras_mirrored"],
                outcome="TypeError",
                reason="both decorators check grad_fn's signature when the function reads a "
                       "variable and raise '@tf.custom_gradient grad_fn must accept keyword "
                       "argument 'variables''; the docstring makes it a requirement",
            ),
            _PLAIN_VARIABLE_UNDER_KERAS3_MIXED,
            Expectation(
                modes=["keras3_eager", "keras3_fit", "keras3_xla", "keras3_mirrored"],
                outcome="RuntimeError",
                reason=f"{KERAS3_SYMBOLIC_BUILD}, and wraps what that raises in "
                       "RuntimeError('Unable to automatically build the model'): here the "
                       "TypeError of every other mode, 'grad_fn must accept keyword argument "
                       "'variables''",
            ),
        ],
    ),
    Case(
        id="variables.cond_around_call",
        build=build_cond_around_call,
        points=[{"x": np.float32(5.0)}],
        source="https://github.com/tensorflow/tensorflow/issues/50170",
        description="the issue's code: a custom gradient whose grad_fn reads a variable, called in "
                    "a tf.cond branch: gradient w = 2, but tf.function raises AttributeError",
        expectations=[
            Expectation(
                modes=["cond_graph", "while_loop_graph", "map_fn_graph"], outcome="AssertionError",
                reason="in a v1 graph the case's own tf.cond around the custom gradient computes, "
                       "but inside another tf.cond, a tf.while_loop or tf.map_fn body its gradient"
                       " asserts in cond_v2's _resolve_grad_inputs (measured on 2.21.0)",
            ),
            Expectation(
                modes=["vectorized_map_eager"], outcome="TypeError", tf_versions="<2.13",
                reason="tf.vectorized_map traces the call into a function even in eager, so "
                       "tensorflow#50170 raises there as under tf.function, as 2.12 raises it "
                       "('_CondGradFuncGraph._capture_helper() takes 3 positional arguments but 4 "
                       "were given')",
            ),
            Expectation(
                modes=["vectorized_map_eager"], outcome="AttributeError", tf_versions=">=2.13",
                reason="tf.vectorized_map traces the call into a function even in eager, so "
                       "tensorflow#50170 raises there as under tf.function",
            ),
            _PLAIN_VARIABLE_UNDER_MIXED,
            _PLAIN_VARIABLE_UNDER_KERAS3_MIXED,
            Expectation(
                modes=["no_autograph", "function", "xla", "saved_model", "keras_fit", "keras_xla",
                       "keras_mirrored", "keras3_fit", "keras3_xla", "keras3_mirrored"],
                outcome="AttributeError",
                reason="the variable is created eagerly, so grad_fn's read inside the If op's "
                       "gradient branch captures its handle, an EagerTensor, directly; "
                       "cond_v2._resolve_grad_inputs asks every external capture for .graph, which "
                       "an EagerTensor does not have. The v1 graph builds the variable in the "
                       "graph (a graph handle), and eager runs the branch without an If op. The "
                       "issue reported the same code failing on 2.5",
                tf_versions=">=2.13",
            ),
            Expectation(
                modes=["no_autograph", "function", "xla", "saved_model", "keras_fit", "keras_xla",
                       "keras_mirrored"],
                outcome="TypeError", tf_versions="<2.13",
                reason="the same capture of the variable's EagerTensor handle fails one step "
                       "earlier on 2.12, with TypeError: reading the variable in the gradient "
                       "branch gets the captured handle as a plain tensor ('Expected resource "
                       "passed to parameter 'resource' of op 'ReadVariableOp'', raised as "
                       "'Expected float32 passed to parameter 'y' of op 'Mul', got <tf.Variable "
                       "...>'), and the SavedModel's tracing fails in the capture itself: "
                       "FuncGraph.capture passes a shape to _capture_helper(tensor, name, shape) "
                       "for a resource EagerTensor, and _CondGradFuncGraph._capture_helper(self, "
                       "tensor, name) takes none ('takes 3 positional arguments but 4 were "
                       "given'); 2.13's capture no longer passes it",
            ),
        ],
    ),
    Case(
        id="variables.cond_in_grad_fn",
        build=build_cond_in_grad_fn,
        points=[{"x": np.float32(5.0)}, {"x": np.float32(-5.0)}],
        source="https://github.com/tensorflow/tensorflow/issues/50170",
        description="a variable read under tf.cond inside grad_fn itself: gradient 2 at x = 5, 0 "
                    "at x = -5",
        expectations=[
            *VARIABLE_IN_CONTROL_FLOW,
            _PLAIN_VARIABLE_UNDER_MIXED,
            _PLAIN_VARIABLE_UNDER_KERAS3_MIXED,
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER, points=["x=-5.0"],
                reason=FORWARD_USES_THE_BODY
                + ": the body w * x gives w = 2 where grad_fn's tf.cond gives 0",
            ),
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER, points=["x=-5.0"],
                reason="grad_fn returns 0 for negative x by design (its tf.cond on x > 0), where "
                       "the derivative of w * x is w = 2",
            ),
        ],
    ),
]
