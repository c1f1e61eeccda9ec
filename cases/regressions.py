"""Bug reports from the TensorFlow tracker, as cases.

Each case is the issue's own example (inputs fixed where the report drew them
at random), cites the issue, and says what the report describes; the
expectations record what TensorFlow does in each mode today and why.
tests/test_library.py checks each case against the issue's own numbers.
"""

import numpy as np
import tensorflow as tf

from harness import BAD_GRADIENT, GRADIENT_UNUSED, VALUES_DIFFER, Case, Expectation, Tol
from harness.cases import (FORWARD_USES_THE_BODY, KERAS3_STEPS, KERAS3_SYMBOLIC_BUILD,
                           SAVED_MODEL_DROPS_INNER)
from harness.cases.docs import log1pexp
from harness.measure.modes.keras3_step import keras3_release

_ISSUE = "https://github.com/tensorflow/tensorflow/issues/{}"


# tensorflow/tensorflow#65839 "tf.custom_gradient silently fails when using all
# keyword arguments" (TF 2.12): called with keyword arguments only, the custom
# gradient "is silently ignored and defaults to the autograd"; with a mix of
# positional and keyword arguments "an exception is thrown". The issue's grad
# puts a factor 1000 on x's gradient, so the custom and the ordinary one differ.
@tf.custom_gradient
def bar_65839(x, y):
    def grad(upstream):
        return 1000 * 2 * (x - y), -2 * (x - y)

    return tf.reduce_mean(tf.math.square(x - y), axis=0), grad


def bar_all_keywords(x, y):
    return bar_65839(x=x, y=y)


def bar_mixed(x, y):
    return bar_65839(x, y=y)


_POINT_65839 = {"x": np.array([[4.0], [5.0], [6.0]], np.float32),
                "y": np.array([[5.0], [7.0], [9.0]], np.float32)}


# tensorflow/tensorflow#26048 "Check failure and silent failures with incorrect
# usage of tf.custom_gradient (in eager mode)" (TF 1.12/1.13): a grad that
# returns an empty list aborted the process ("Check failed:
# state.op_tape.empty()"), and one that returned too many values ran silently.
# On 2.21 neither aborts: checked in a separate process, with a constant input
# and with the report's tf.Variable input, before adding them here.
@tf.custom_gradient
def identity_no_gradients(x):
    def grad(dy):
        return []  # This return value is wrong!

    return tf.identity(x), grad


@tf.custom_gradient
def identity_two_gradients(x):
    def grad(dy):
        return dy, dy  # One input, two gradients.

    return tf.identity(x), grad


# tensorflow/tensorflow#34503 "[TF2.0] Enable nested tf.custom_gradient" (TF 2.0):
# with grad itself a custom gradient of dy, "d2ydx2 is None in this example but
# I expect it to be 1"; the workaround makes the inner function take x and dy,
# and its grad2 returns 1 (for x) and 2 (for dy), giving d2y/dx2 = 1.
@tf.custom_gradient
def op_34503(x):
    @tf.custom_gradient
    def grad(dy):
        def grad2(dx, ddy):
            raise AssertionError("This will not be executed")

        return dy * 5, grad2

    return x * 5, grad


@tf.custom_gradient
def grad_34503_workaround(x, dy):
    def grad2(dx2):
        return tf.ones_like(x), 2 * tf.ones_like(dy)  # w.r.t. x, w.r.t. dy

    return 5 * tf.ones_like(x), grad2


@tf.custom_gradient
def op_34503_workaround(x):
    return x * 5, lambda dy: grad_34503_workaround(x, dy)


# tensorflow/tensorflow#127690 "SiLU/Swish returns incorrect gradients for
# broadcasted Tensor beta" (TF 2.21.0): tf.nn.silu's custom gradient sums the
# beta gradient to a scalar whatever beta's shape; for features [[1, 2], [3, 4]]
# and beta [1, 2] it is 0.6792164984 of shape () instead of [0.6032018708,
# 0.0760146276] of shape (2,).
def silu(features, beta):
    return tf.nn.silu(features, beta)


_POINT_127690 = {"features": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32),
                 "beta": np.array([1.0, 2.0], np.float32)}


# tensorflow/tensorflow#40166 "Make possible loading model with custom gradient"
# (TF 2.1): "Currently when a saved model is loaded, a custom gradient is not
# loaded", and differentiating the loaded model fails with "LookupError: No
# gradient defined for operation '_namespace_/IdentityN' (op type: IdentityN)".
# The report has no code: the case uses the tf.custom_gradient docstring's
# log1pexp (imported from docs), whose gradient at x = 100 is 1.0 where ordinary
# autodiff of its body gives nan, so a loaded model that fell back to the body's
# gradient would show.

# What Keras 3's symbolic build raises for a ValueError in call: Keras 3.14 and later let it
# through, earlier releases wrap it like any error (Trainer._symbolic_build: 3.13.2 wraps, 3.14.0
# and 3.15.1 test isinstance(e, ValueError)). Keras 3 has no upper bound in TensorFlow's
# requirements, so the installed one decides, not the TensorFlow release.
_KERAS3 = keras3_release()
_KERAS3_BUILD_ERROR = "ValueError" if _KERAS3 is not None and _KERAS3 >= (3, 14) else "RuntimeError"
_KERAS3_BUILD_WORDS = ("a ValueError Keras 3.14 and later let through" if _KERAS3_BUILD_ERROR
                       == "ValueError"
                       else "a ValueError that Keras before 3.14 wraps in RuntimeError('Unable to "
                            "automatically build the model'), as it wraps any error there")


CASES = [
    Case(
        id="regressions.kwargs_65839",
        fn=bar_all_keywords,
        points=[_POINT_65839],
        source=_ISSUE.format(65839),
        description="a custom gradient called with keyword arguments only: eager silently uses "
                    "ordinary autodiff (2(x - y)/3), the graph modes raise ValueError",
        expectations=[
            Expectation(
                modes=["vectorized_map_eager"], outcome="ValueError",
                reason="tf.vectorized_map traces the call into a function even in eager, and there"
                       " the custom gradient takes keyword arguments no more than under "
                       "tf.function",
            ),
            Expectation(
                modes=["eager", "keras_eager"], outcome=GRADIENT_UNUSED,
                reason="the issue's silent fallback: the eager decorator records the custom op "
                       "with the positional inputs only (none here), tape.h's ShouldRecord drops a "
                       "record with no watched input, and the tape differentiates the body: grad "
                       "is never called, so x's gradient is 2(x - y)/3 instead of the custom 1000 "
                       "times that",
            ),
            Expectation(
                modes=["no_autograph", "function", "xla", "graph", "saved_model", "keras_fit",
                       "keras_xla", "keras_mixed", "keras_mirrored"],
                outcome="ValueError",
                reason="the graph-mode decorator refuses keyword arguments ('The custom_gradient "
                       "decorator currently supports keywords arguments only when eager execution "
                       "is enabled'); the eager one accepts them but records the custom op with "
                       "the positional inputs only (none here), tape.h's ShouldRecord drops a "
                       "record with no watched input, and the tape differentiates the function's "
                       "body instead",
            ),
            Expectation(
                modes=KERAS3_STEPS, outcome=_KERAS3_BUILD_ERROR,
                reason=f"{KERAS3_SYMBOLIC_BUILD}: there the graph-mode decorator refuses keyword "
                       "arguments ('supports keywords arguments only when eager execution is "
                       f"enabled'), {_KERAS3_BUILD_WORDS}",
            ),
        ],
    ),
    Case(
        id="regressions.kwargs_mixed_65839",
        fn=bar_mixed,
        points=[_POINT_65839],
        source=_ISSUE.format(65839),
        description="the same called as bar(x, y=y): every mode raises ValueError, eager only when "
                    "the gradient is taken (grad returns 2 gradients for 1 positional input)",
        expectations=[
            Expectation(
                modes=["eager", "forward", "keras_eager"], outcome="ValueError",
                reason="the eager decorator counts only positional arguments as inputs, so grad's "
                       "two gradients fail its check 'expected to return 1 gradients, but returned "
                       "2' at order 1 (tensorflow/tensorflow#77559 reports the same)",
            ),
            Expectation(
                modes=["no_autograph", "function", "xla", "graph", "saved_model", "keras_fit",
                       "keras_xla", "keras_mixed", "keras_mirrored"],
                outcome="ValueError",
                reason="the graph-mode decorator refuses any keyword argument at the call",
            ),
            Expectation(
                modes=KERAS3_STEPS, outcome=_KERAS3_BUILD_ERROR,
                reason=f"{KERAS3_SYMBOLIC_BUILD}: there the graph-mode decorator refuses any "
                       f"keyword argument at the call, {_KERAS3_BUILD_WORDS}",
            ),
        ],
    ),
    Case(
        id="regressions.no_gradients_26048",
        fn=identity_no_gradients,
        points=[{"x": np.float32(1.0)}],
        source=_ISSUE.format(26048),
        description="grad returns [] for one input (the report's process abort): ValueError in "
                    "eager and graph, InternalError in tf.function; no mode aborts",
        expectations=[
            Expectation(
                modes=["eager", "graph", "forward", "saved_model", "keras_eager", "keras3_eager"],
                outcome="ValueError",
                reason="the eager decorator now counts the gradients ('expected to return 1 "
                       "gradients, but returned 0'); tf.gradients' _VerifyGeneratedGradients "
                       "rejects the IdentityN gradient count",
            ),
            Expectation(
                modes=["no_autograph", "function", "xla", "keras_fit", "keras_xla", "keras_mixed",
                       "keras_mirrored", "keras3_fit", "keras3_xla", "keras3_mixed",
                       "keras3_mirrored"],
                outcome="InternalError",
                reason="the graph-mode decorator inside tf.function does not count the gradients; "
                       "the tape's C++ check (pywrap_tfe_src.cc) reports the mismatch as "
                       "InternalError 'returned too few gradients'",
            ),
        ],
    ),
    Case(
        id="regressions.too_many_gradients_26048",
        fn=identity_two_gradients,
        points=[{"x": np.float32(1.0)}],
        source=_ISSUE.format(26048),
        description="grad returns two gradients for one input (the report's silent failure): now "
                    "ValueError in eager and graph, InternalError in tf.function",
        expectations=[
            Expectation(
                modes=["eager", "graph", "forward", "saved_model", "keras_eager", "keras3_eager"],
                outcome="ValueError",
                reason="the eager decorator counts the gradients ('expected to return 1 gradients, "
                       "but returned 2'); tf.gradients' _VerifyGeneratedGradients rejects the "
                       "IdentityN gradient count",
            ),
            Expectation(
                modes=["no_autograph", "function", "xla", "keras_fit", "keras_xla", "keras_mixed",
                       "keras_mirrored", "keras3_fit", "keras3_xla", "keras3_mixed",
                       "keras3_mirrored"],
                outcome="InternalError",
                reason="the tape's C++ count check reports it, with the message 'returned too few "
                       "gradients. Expected 2 but received 3' although there are too many",
            ),
        ],
    ),
    Case(
        id="regressions.nested_none_34503",
        fn=op_34503,
        points=[{"x": np.float32(0.5)}],
        order=2,
        source=_ISSUE.format(34503),
        description="grad itself a custom gradient of dy alone: the second derivative is None in "
                    "every mode, and grad2 is never called",
        expectations=[
            Expectation(
                modes=["forward"], outcome="TypeError",
                reason="ForwardpropFromTape watches the ones it passes as dy, so the inner custom "
                       "function of dy is recorded, and transposing it calls grad2(dx, ddy) with "
                       "one argument; reverse mode never records that op",
            ),
        ],
    ),
    Case(
        id="regressions.nested_workaround_34503",
        fn=op_34503_workaround,
        points=[{"x": np.float32(0.5)}],
        order=2,
        source=_ISSUE.format(34503),
        description="the issue's workaround, an inner custom gradient of (x, dy): second "
                    "derivative 1 in every mode",
        expectations=[
            Expectation(
                modes=["keras_mixed", "keras_mirrored", "keras3_mixed", "keras3_mirrored"],
                outcome=VALUES_DIFFER,
                reason="grad_fn ignores its upstream gradient (the upstream oracle's finding): "
                       "under mixed_float16 the LossScaleOptimizer hands it the loss scale 2**15 "
                       "as dy and divides what it returns by 2**15, giving 5 / 2**15; under "
                       "MirroredStrategy each of the two replicas returns 5 for its half of the "
                       "loss and the optimizer sums them to 10",
            ),
            Expectation(
                modes=["saved_model"], outcome="LookupError", reason=SAVED_MODEL_DROPS_INNER,
            ),
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason="the inner body (ones_like) has no JVP, so ForwardpropFromTape "
                       "differentiates grad2 with respect to its upstream dx2; grad2 returns "
                       "constants that ignore it, so order 2 is None (unconnected) where reverse "
                       "mode reads grad2's 1",
            ),
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER, orders=[2],
                reason="grad2 returns 1 for x by construction, the value the issue expects to see; "
                       "the true second derivative of 5x is 0",
            ),
            Expectation(
                modes=["upstream"], outcome=VALUES_DIFFER, orders=[1],
                reason="the workaround's first derivative ignores its upstream gradient: "
                       "grad_34503_workaround returns 5 * ones_like(x) whatever dy is, where the "
                       "derivative of 5x times dy is 5 dy, so inside any loss but the plain sum (3 "
                       "* op(x), a weighted sum) the gradient is wrong",
            ),
            Expectation(
                modes=["linearity"], outcome=VALUES_DIFFER,
                reason="the same finding without the numeric derivative: the workaround's first "
                       "derivative is 5 whatever dy is, so with dy = 0.5 - 2w it is 5 where a "
                       "gradient linear in dy gives 0.5 * 5 - 2 * 5w",
            ),
        ],
    ),
    Case(
        id="regressions.silu_beta_shape_127690",
        fn=silu,
        points=[_POINT_127690],
        source=_ISSUE.format(127690),
        description="tf.nn.silu with beta of shape (2,): the tapes return a scalar beta gradient, "
                    "0.679 = the sum of the right [0.603, 0.076]; tf.gradients rejects its shape",
        # Only keras_mixed computes in float16: beta's gradient with upstream weights sums terms of
        # size up to about 2 that cancel to 0.0136, so float16's rounding of each term (about 1e-3)
        # leaves an error near 1e-2, judged against the terms' scale instead of element by element.
        tolerance={"float16": Tol(rtol=1e-2, atol=1.5e-2)},
        expectations=[
            Expectation(
                modes=["cond_function", "while_loop_function", "map_fn_function",
                       "vectorized_map_eager", "vectorized_map_function", "jacobian_eager",
                       "jacobian_loop_eager", "batch_jacobian_eager", "batch_jacobian_function",
                       "batch_jacobian_loop_function"],
                outcome="ValueError",
                reason="measured on 2.21.0: where the context builds the gradient into a graph "
                       "of its own (a branch's, a loop body's, pfor's) the () gradient of the "
                       "(2,) beta meets the shape check tf.gradients makes in graph mode: "
                       "'Incompatible shapes between op input and calculated input gradient'",
            ),
            Expectation(
                modes=["map_fn_eager", "batch_jacobian_loop_eager"], outcome="InvalidArgumentError",
                reason="measured on 2.21.0: eagerly, the () gradient of the (2,) beta is reshaped "
                       "to beta's shape on the way out of the loop: 'Input to reshape is a tensor "
                       "with 1 values, but the requested shape has 2'",
            ),
            Expectation(
                modes=["keras3_eager"], outcome="InvalidArgumentError",
                reason="Keras 3's SGD applies the gradient with assign_sub, which needs the "
                       "variable's shape, where tf_keras's assign_add broadcast the scalar: "
                       "'Cannot update variable with shape [2] using a Tensor with shape []'",
            ),
            Expectation(
                modes=["keras3_fit", "keras3_xla", "keras3_mixed", "keras3_mirrored"],
                outcome="ValueError",
                reason="Keras 3's SGD applies the gradient with assign_sub, whose shape check "
                       "fails as the train function is traced: 'Shapes must be equal rank, but are "
                       "1 and 0'",
            ),
            Expectation(
                modes=["forward"], outcome="InvalidArgumentError",
                reason="transposing grad_fn feeds beta's (2,) tangent as the upstream gradient of "
                       "the () beta gradient that nn_impl.swish's grad_fn reduces to, and "
                       "_SumGrad's reshape fails",
            ),
            Expectation(
                modes=["eager", "no_autograph", "function", "xla"], outcome=BAD_GRADIENT,
                reason="silu's grad_fn reduces the beta gradient with an unconditional reduce_sum "
                       "(nn_impl.swish), and a GradientTape passes a gradient on without checking "
                       "its shape against the input's",
            ),
            Expectation(
                modes=["graph", "saved_model"], outcome="ValueError",
                reason="tf.gradients sets each input gradient's shape to its input's "
                       "(gradients_util._GradientsHelper) and raises 'Incompatible shapes between "
                       "op input and calculated input gradient' for the () gradient of the (2,) "
                       "beta",
            ),
        ],
    ),
    Case(
        id="regressions.saved_model_40166",
        fn=log1pexp,
        points=[{"x": np.float32(0.0)}, {"x": np.float32(100.0)}],
        source=_ISSUE.format(40166),
        description="a custom gradient saved in a SavedModel and differentiated in a process that "
                    "never ran its Python: 0.5 and 1.0 with the saved gradient function, "
                    "LookupError without it",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER, points=["x=100.0"],
                reason=FORWARD_USES_THE_BODY
                + ": the body log(1 + e) overflows at x = 100, so its derivative is "
                       "inf / inf = NaN where grad_fn gives 1",
            ),
            Expectation(
                modes=["saved_model_nocg"], outcome="LookupError",
                reason="saved with SaveOptions(experimental_custom_gradients=False), the IdentityN "
                       "op keeps its _gradient_op_type 'CustomGradient-N' but no gradient function "
                       "is traced for it (save.py's _trace_gradient_functions is skipped); loading "
                       "keeps the name (function_deserialization._fix_fdef_in_place warns of "
                       "'unsaved custom gradients'), the loading process has nothing registered "
                       "under it, and gradients_util raises 'No gradient defined for operation "
                       "IdentityN', already at the forward call under a tape, where the loaded "
                       "function builds its backward function",
            ),
        ],
    ),
]
