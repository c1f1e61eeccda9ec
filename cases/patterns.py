"""Custom gradients people write: estimators, clipping, stable math, higher orders.

Each case is a common use of tf.custom_gradient (or of the two library
functions built on it, tf.recompute_grad and tf.grad_pass_through), written
the way it usually appears in model code, with points where the custom
gradient matters (zero, large magnitudes, the clipping threshold).
"""

import numpy as np
import tensorflow as tf

from harness import SURROGATE, VALUES_DIFFER, Case, Domain, Expectation
from harness.cases import (FORWARD_USES_THE_BODY, JACOBIANS, KERAS3_STEPS, KERAS3_SYMBOLIC_BUILD,
                           RACING_STEPS, SAVED_MODEL_DROPS_INNER, UPDATE_RACE,
                           VARIABLE_IN_CONTROL_FLOW)

_DOCS = "https://www.tensorflow.org/api_docs/python/tf/custom_gradient"
_RECOMPUTE = "https://www.tensorflow.org/api_docs/python/tf/recompute_grad"
_PASS_THROUGH = "https://www.tensorflow.org/api_docs/python/tf/grad_pass_through"


def _pattern(what: str) -> str:
    return f"{_DOCS} (pattern: {what})"


@tf.custom_gradient
def reverse_gradient(x):
    """Domain-adversarial training's gradient reversal layer, with lambda = 0.5."""

    def grad(dy):
        return -0.5 * dy

    return tf.identity(x), grad


@tf.custom_gradient
def round_ste(x):
    """Straight-through estimator: round forward, identity backward."""

    def grad(dy):
        return dy

    return tf.round(x), grad


@tf.custom_gradient
def sign_ste(x):
    """Binarisation with the clipped straight-through estimator (hard tanh backward)."""

    def grad(dy):
        return dy * tf.cast(tf.abs(x) <= 1.0, dy.dtype)

    return tf.sign(x), grad


@tf.custom_gradient
def clip_gradient_by_value(x):
    def grad(dy):
        return tf.clip_by_value(dy, -1.0, 1.0)

    return tf.identity(x), grad


@tf.custom_gradient
def clip_gradient_by_norm(x):
    def grad(dy):
        return tf.clip_by_norm(dy, 1.0)

    return tf.identity(x), grad


@tf.custom_gradient
def scale_gradient(x):
    def grad(dy):
        return dy * 0.1

    return tf.identity(x), grad


def squared_after(op):
    """(3 * op(x))**2: op's custom gradient gets the upstream gradient 18 * op(x) and returns
    d/dx."""
    return lambda x: tf.square(3.0 * op(x))


@tf.custom_gradient
def safe_sqrt(x):
    """sqrt whose gradient is 0 instead of inf at x = 0."""
    y = tf.sqrt(x)

    def grad(dy):
        positive = x > 0
        return dy * tf.where(positive, 0.5 / tf.where(positive, y, tf.ones_like(y)),
                             tf.zeros_like(y))

    return y, grad


@tf.custom_gradient
def safe_norm(x):
    """Euclidean norm whose gradient is 0 instead of NaN at the zero vector."""
    norm = tf.norm(x)

    def grad(dy):
        return dy * tf.math.divide_no_nan(x, norm)

    return norm, grad


@tf.custom_gradient
def logsumexp(x):
    """log(sum(exp(x))) shifted by the max; gradient softmax(x)."""
    m = tf.reduce_max(x)
    y = m + tf.math.log(tf.reduce_sum(tf.exp(x - m)))

    def grad(dy):
        return dy * tf.nn.softmax(x)

    return y, grad


@tf.custom_gradient
def softplus(x):
    """max(x, 0) + log1p(exp(-|x|)); gradient sigmoid(x)."""
    y = tf.maximum(x, 0.0) + tf.math.log1p(tf.exp(-tf.abs(x)))

    def grad(dy):
        return dy * tf.sigmoid(x)

    return y, grad


@tf.custom_gradient
def fused_tanh(x):
    """tanh with its first and second derivatives written out, both custom."""
    t = tf.tanh(x)
    d1 = 1 - t * t

    def first_order_gradient(dy):
        @tf.custom_gradient
        def first_order_custom(unused_x):
            def second_order(ddy):
                return ddy * -2 * t * d1

            return d1, second_order

        return dy * first_order_custom(x)

    return t, first_order_gradient


@tf.custom_gradient
def sin3(x):
    """sin with custom first, second and third derivatives (cos, -sin, -cos)."""

    def grad1(dy):
        @tf.custom_gradient
        def d1(unused_x):
            def grad2(ddy):
                @tf.custom_gradient
                def d2(unused_x):
                    def grad3(dddy):
                        return dddy * -tf.cos(x)

                    return -tf.sin(x), grad3

                return ddy * d2(x)

            return tf.cos(x), grad2

        return dy * d1(x)

    return tf.sin(x), grad1


def build_recompute_grad():
    w = tf.Variable(np.float32(1.5))

    def block(x):
        return tf.sin(x) * w

    return tf.recompute_grad(block)


def moving_average_pass_through(x):
    """tf.grad_pass_through's docstring idea: forward a stale value, backward identity."""
    return tf.grad_pass_through(lambda v: tf.round(v * 4.0) / 4.0)(x)


@tf.custom_gradient
def numpy_sinh(x):
    """An op TensorFlow lacks, computed by NumPy, with its derivative by NumPy too."""

    def grad(dy):
        return dy * tf.numpy_function(np.cosh, [x], tf.float32, stateful=False)

    return (tf.ensure_shape(tf.numpy_function(np.sinh, [x], tf.float32, stateful=False), x.shape),
            grad)


def softplus_of_abs(x):
    """A Python `if` on a tensor around a custom gradient: AutoGraph turns it into tf.cond."""
    if tf.reduce_sum(x) > 0:
        return softplus(x)
    return softplus(-x)


_VECTOR = {"x": np.array([-2.0, -0.3, 0.0, 0.4, 1.7], np.float32)}
_PYTHON_CANNOT_BE_SAVED = ("tf.numpy_function runs a Python function of this process: a SavedModel "
                           "holds the op but not the function, so a loading process cannot run it")

# Under mixed_float16 a clip inside grad_fn sees the loss-scaled upstream gradient.
_CLIPS_THE_SCALED_DY = ("under mixed_float16 compile wraps the optimizer in a LossScaleOptimizer, "
                        "which differentiates the loss times the loss scale (2**15 at the first "
                        "step: get_scaled_loss) and divides the gradients by it afterwards, so "
                        "grad_fn clips the scaled dy and the clipped values come out divided by "
                        "32768")
# The same in Keras 3, whose train_step scales the loss itself.
_CLIPS_THE_KERAS3_SCALED_DY = (
    "under mixed_float16 Keras 3's compile wraps the optimizer in its LossScaleOptimizer: "
    "train_step differentiates the loss times the scale (optimizer.scale_loss, 2**15 at the "
    "first step) and the optimizer divides the gradients by it before applying them, so grad_fn "
    "clips the scaled dy and the clipped values come out divided by 32768")


CASES = [
    Case(
        id="patterns.gradient_reversal",
        fn=reverse_gradient,
        points=[_VECTOR],
        source=_pattern("gradient reversal layer, Ganin & Lempitsky 2015, arXiv:1409.7495"),
        description="identity forward, -0.5 * dy backward: gradient -0.5 everywhere",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY
                + ": the body tf.identity gives 1 where grad_fn gives -0.5",
            ),
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER,
                reason="gradient reversal by design: -0.5 dy backward through an identity, whose "
                       "true derivative is 1",
            ),
        ],
    ),
    Case(
        id="patterns.ste_round",
        fn=round_ste,
        points=[_VECTOR],
        source=_pattern("straight-through estimator, Bengio et al. 2013, arXiv:1308.3432"),
        description="round forward, identity backward: gradient 1 where round's own gradient is 0",
        expectations=[
            Expectation(
                modes=["numeric"], outcome=SURROGATE,
                reason="a straight-through estimator by design: identity backward through round, "
                       "whose true derivative is 0 away from the half-integers",
            ),
        ],
    ),
    Case(
        id="patterns.ste_sign",
        fn=sign_ste,
        points=[_VECTOR],
        source=_pattern("binarised networks' clipped straight-through sign, Hubara et al. 2016, "
                        "arXiv:1602.02830"),
        description="sign forward, dy * (|x| <= 1) backward: gradient 0 at x = -2 and 1.7, 1 "
                    "elsewhere",
        expectations=[
            Expectation(
                modes=["numeric"], outcome=SURROGATE,
                reason="a straight-through estimator by design: dy * (|x| <= 1) backward through "
                       "sign, whose true derivative is 0 except at its jump at 0, where the "
                       "difference quotient is 1 / step",
            ),
        ],
    ),
    Case(
        id="patterns.clip_gradient_by_value",
        fn=squared_after(clip_gradient_by_value),
        points=[_VECTOR],
        source=_pattern("clipping the upstream gradient by value"),
        description="(3 * id(x))**2 with the upstream 18x clipped to [-1, 1]: gradient clip(18x, "
                    "-1, 1)",
        expectations=[
            Expectation(
                modes=["keras_mirrored", "keras3_mirrored"], outcome=VALUES_DIFFER,
                reason="under MirroredStrategy each replica's grad_fn receives its half of dy "
                       "(Keras divides the loss by the global batch of two), clips it to [-1, 1], "
                       "and the optimizer sums the two replicas' gradients (an all-reduce sum, in "
                       "tf_keras and Keras 3 alike): where the clip bites the result is +-2",
            ),
            Expectation(
                modes=["keras_mixed"], outcome=VALUES_DIFFER,
                reason=_CLIPS_THE_SCALED_DY,
            ),
            Expectation(
                modes=["keras3_mixed"], outcome=VALUES_DIFFER,
                reason=_CLIPS_THE_KERAS3_SCALED_DY,
            ),
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY
                + ": the body tf.identity passes 18x through unclipped",
            ),
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER,
                reason="the upstream gradient is clipped to [-1, 1] by design; the true derivative "
                       "of (3x)**2 is 18x",
            ),
            Expectation(
                modes=["linearity"], outcome=VALUES_DIFFER,
                reason="clipping the upstream gradient to [-1, 1] is non-linear in it by design",
            ),
        ],
    ),
    Case(
        id="patterns.clip_gradient_by_norm",
        fn=squared_after(clip_gradient_by_norm),
        points=[_VECTOR],
        source=_pattern("clipping the upstream gradient by norm"),
        description="(3 * id(x))**2 with the upstream 18x rescaled to norm 1: gradient x / ||x||",
        expectations=[
            Expectation(
                modes=JACOBIANS, outcome=VALUES_DIFFER,
                reason="grad_fn clips dy to norm 1, which is not linear in dy: tape.gradient clips"
                       " the whole dy of ones (to 1/sqrt(5) at each of 5 elements), a jacobian's "
                       "rows clip each one-hot dy, which has norm 1 already, so the rows "
                       "contracted give the gradient unclipped: the upstream check's finding, by "
                       "another route",
            ),
            Expectation(
                modes=["keras_mirrored", "keras3_mirrored"], outcome=VALUES_DIFFER,
                reason="under MirroredStrategy each replica's grad_fn receives its half of dy "
                       "(Keras divides the loss by the global batch of two), clips that to norm 1, "
                       "and the optimizer sums the two replicas' gradients (an all-reduce sum, in "
                       "tf_keras and Keras 3 alike): norm 2 instead of 1",
            ),
            Expectation(
                modes=["keras_mixed"], outcome=VALUES_DIFFER,
                reason=_CLIPS_THE_SCALED_DY,
            ),
            Expectation(
                modes=["keras3_mixed"], outcome=VALUES_DIFFER,
                reason=_CLIPS_THE_KERAS3_SCALED_DY,
            ),
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY + ": the body tf.identity passes 18x through unscaled",
            ),
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER,
                reason="the upstream gradient is rescaled to norm 1 by design; the true derivative "
                       "of (3x)**2 is 18x",
            ),
            Expectation(
                modes=["linearity"], outcome=VALUES_DIFFER,
                reason="rescaling the upstream gradient to norm 1 is non-linear in it by design: "
                       "dy / ||dy|| is the same for dy and 2 dy",
            ),
        ],
    ),
    Case(
        id="patterns.scale_gradient",
        fn=squared_after(scale_gradient),
        points=[_VECTOR],
        source=_pattern("gradient scaling"),
        description="(3 * id(x))**2 with the upstream 18x scaled by 0.1: gradient 1.8x instead of "
                    "18x",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY
                + ": the body tf.identity gives 18x, not grad_fn's 1.8x",
            ),
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER,
                reason="the upstream gradient is scaled by 0.1 by design; the true derivative of "
                       "(3x)**2 is 18x",
            ),
        ],
    ),
    Case(
        id="patterns.safe_sqrt",
        fn=safe_sqrt,
        points=[{"x": np.array([0.0, 0.25, 4.0], np.float32)}],
        source=_pattern("a finite gradient where the true one is infinite"),
        description="sqrt with gradient 0 at x = 0 (tf.sqrt's own is inf), 1 and 0.25 at x = 0.25 "
                    "and 4",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY
                + ": tf.sqrt's derivative is inf at x = 0, and 0 * inf = NaN spreads to "
                       "the other elements through the sum over outputs",
            ),
        ],
    ),
    Case(
        id="patterns.safe_norm",
        fn=safe_norm,
        points=[{"x": np.array([0.0, 0.0, 0.0], np.float32)}, {"x": np.array([3.0, 4.0, 0.0],
                                                                             np.float32)}],
        source=_pattern("a finite gradient where the true one is NaN"),
        description="Euclidean norm with gradient x / ||x||: [0, 0, 0] at the zero vector "
                    "(tf.norm's own is NaN), [0.6, 0.8, 0] at [3, 4, 0]",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER, points=["x=[0.0,0.0,0.0]"],
                reason=FORWARD_USES_THE_BODY
                + ": tf.norm's sqrt has derivative 0 * inf = NaN at 0, where grad_fn "
                       "gives 0",
            ),
        ],
    ),
    Case(
        id="patterns.logsumexp",
        fn=logsumexp,
        points=[{"x": np.array([1000.0, 1000.5, 999.0], np.float32)},
                {"x": np.array([-1.0, 0.0, 2.0], np.float32)}],
        order=2,
        source=_pattern("stable log-sum-exp"),
        description="max-shifted log-sum-exp, gradient softmax(x), finite at x ~ 1000; order 2 is "
                    "(diag(p) - p p^T) 1 = 0",
    ),
    Case(
        id="patterns.softplus",
        fn=softplus,
        points=[{"x": np.array([-100.0, -1.0, 0.0, 1.0, 100.0], np.float32)}],
        order=2,
        source=_pattern("stable softplus"),
        description="max(x, 0) + log1p(exp(-|x|)) with gradient sigmoid(x) and second derivative "
                    "s(x)(1 - s(x)), finite at |x| = 100",
        # Scalars: a failing element then names its own point.
        domains={"x": Domain(-100.0, 100.0, shape=())},
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY
                + ": at x = 0 the body's Maximum sends the tie to x and Abs's derivative "
                       "is sign(0) = 0, giving 1 where grad_fn gives sigmoid(0) = 0.5",
            ),
        ],
    ),
    Case(
        id="patterns.fused_tanh_second_order",
        fn=fused_tanh,
        points=[{"x": np.array([-1.0, 0.0, 0.5], np.float32)}],
        order=2,
        source=_pattern("a fused op with its own second derivative, the docstring's nested form"),
        description="tanh with custom derivatives 1 - t^2 and -2t(1 - t^2), right at order 2",
        domains={"x": Domain(-20.0, 20.0, shape=())},
        expectations=[
            Expectation(
                modes=["saved_model"], outcome="LookupError", reason=SAVED_MODEL_DROPS_INNER,
            ),
        ],
    ),
    Case(
        id="patterns.third_order",
        fn=sin3,
        points=[{"x": np.float32(0.5)}],
        order=3,
        source=_pattern("custom gradients nested three deep"),
        description="sin with custom cos, -sin and -cos: 0.4794255, 0.8775826, -0.4794255, "
                    "-0.8775826",
        expectations=[
            Expectation(
                modes=["saved_model"], outcome="LookupError", reason=SAVED_MODEL_DROPS_INNER,
            ),
        ],
    ),
    Case(
        id="patterns.recompute_grad",
        build=build_recompute_grad,
        points=[{"x": np.array([0.0, 0.5, 1.0], np.float32)}],
        wrt_variables=True,
        source=_RECOMPUTE,
        description="tf.recompute_grad (a custom gradient that reruns the block under its own "
                    "tape) of sin(x) * w: 1.5 cos(x) w.r.t. x, sum(sin x) w.r.t. w",
        expectations=[
            *VARIABLE_IN_CONTROL_FLOW,
            Expectation(
                modes=RACING_STEPS, outcome="UpdateRace",
                reason=f"recompute_grad's backward pass runs the block again, reading w for x's "
                       f"gradient: {UPDATE_RACE}",
            ),
            Expectation(
                modes=["keras_mirrored"], outcome="UpdateRace", tf_versions="<2.13",
                reason="the same read of w, left unordered with w's update in keras_mirrored's "
                       "step too on TensorFlow 2.12, where the check finds it ordered from 2.13 on "
                       "(the version matrix)",
            ),
            Expectation(
                modes=["keras_mixed"], outcome="TypeError",
                reason="the builder's plain tf.Variable w is not a Keras weight, so the "
                       "mixed_float16 policy does not autocast it: sin(x) in float16 times w in "
                       "float32 is a TypeError",
            ),
            Expectation(
                modes=["forward"], outcome="NotImplementedError",
                reason="recompute_grad runs its body with recording stopped, so forward mode needs "
                       "grad_fn transposed, and recompute_grad's transpose (custom_gradient.py) "
                       "refuses: 'Consider not using recompute_grad in forward mode autodiff'",
            ),
        ],
    ),
    Case(
        id="patterns.recompute_grad_second_order",
        build=build_recompute_grad,
        points=[{"x": np.array([0.0, 0.5, 1.0], np.float32)}],
        order=2,
        wrt_variables=True,
        source=_RECOMPUTE,
        description="the same to order 2: tf.recompute_grad cannot be differentiated twice, "
                    "NotImplementedError in every mode",
        expectations=[
            Expectation(
                modes=RACING_STEPS, outcome="UpdateRace",
                reason=f"recompute_grad's backward pass runs the block again, reading w for x's "
                       f"gradient: {UPDATE_RACE}",
            ),
            Expectation(
                modes=["keras_mirrored"], outcome="UpdateRace", tf_versions="<2.13",
                reason="the same read of w, left unordered with w's update in keras_mirrored's "
                       "step too on TensorFlow 2.12, where the check finds it ordered from 2.13 on "
                       "(the version matrix)",
            ),
            Expectation(
                modes=["keras_mixed"], outcome="TypeError",
                reason="the builder's plain tf.Variable w is not a Keras weight, so the "
                       "mixed_float16 policy does not autocast it: sin(x) in float16 times w in "
                       "float32 is a TypeError",
            ),
            Expectation(
                modes=["saved_model"], outcome="LookupError",
                reason="tf.recompute_grad's grad_wrapper is itself a custom gradient "
                       "(inner_recompute_grad in custom_gradient.py), and "
                       + SAVED_MODEL_DROPS_INNER + ", here already at the forward call",
            ),
            Expectation(
                modes=["eager", "no_autograph", "function", "xla", "graph", "forward"],
                outcome="NotImplementedError",
                reason="recompute_grad returns its gradients from an inner custom gradient whose "
                       "own gradient function, `transpose`, raises NotImplementedError "
                       "('recompute_grad tried to transpose grad of ...'; custom_gradient.py), so "
                       "order 2 fails in every mode",
            ),
        ],
    ),
    Case(
        id="patterns.grad_pass_through",
        fn=moving_average_pass_through,
        points=[{"x": np.array([0.1, 0.3, 0.9], np.float32)}],
        source=_PASS_THROUGH,
        description="tf.grad_pass_through of quantisation to quarters: [0, 0.25, 1] forward, "
                    "gradient 1",
        expectations=[
            Expectation(
                modes=["numeric"], outcome=SURROGATE,
                reason="tf.grad_pass_through's documented purpose: an identity gradient through a "
                       "quantiser whose true derivative is 0 between its steps",
            ),
        ],
    ),
    Case(
        id="patterns.numpy_function_op",
        fn=numpy_sinh,
        points=[{"x": np.array([0.5, -1.0], np.float32)}],
        source=_pattern("wrapping a NumPy function as an op, tf.numpy_function with a custom "
                        "gradient"),
        description="sinh and its derivative cosh computed by NumPy: [0.521, -1.175] and [1.128, "
                    "1.543]",
        reference=tf.sinh,
        analytic=lambda x: {0: np.sinh(x), 1: np.cosh(x)},
        skip_modes=dict.fromkeys(["saved_model", "saved_model_nocg"], _PYTHON_CANNOT_BE_SAVED),
        expectations=[
            Expectation(
                modes=["keras_mixed", "keras3_mixed"], outcome="InvalidArgumentError",
                reason="under mixed_float16 x arrives in float16, so np.cosh returns a float16 "
                       "array where the tf.numpy_function declares Tout=tf.float32: '0-th value "
                       "returned by pyfunc is half, but expects float'",
            ),
            Expectation(
                modes=["xla", "keras_xla", "keras3_xla"], outcome="InvalidArgumentError",
                reason="XLA cannot compile Python: there is no XLA kernel for the PyFuncStateless "
                       "op ('Detected unsupported operations when trying to compile graph')",
            ),
        ],
    ),
    Case(
        id="patterns.python_branch",
        fn=softplus_of_abs,
        points=[{"x": np.float32(1.0)}, {"x": np.float32(-2.0)}],
        source=_pattern("a Python if on a tensor around a custom gradient"),
        description="softplus(|x|) chosen by a Python if: AutoGraph converts it in tf.function; "
                    "without AutoGraph (no_autograph, the v1 graph) the if cannot be traced",
        reference=lambda x: tf.math.softplus(tf.abs(x)),
        expectations=[
            Expectation(
                modes=["cond_function", "while_loop_function", "map_fn_function",
                       "jacobian_loop_function", "batch_jacobian_loop_function"],
                outcome="AssertionError",
                reason="AutoGraph turns the Python if into a tf.cond around the custom gradient; "
                       "inside another tf.cond, a tf.while_loop or tf.map_fn body, or a jacobian's"
                       " loop under tf.function, cond_v2's gradient asserts in "
                       "_resolve_grad_inputs (measured on 2.21.0, with a tf.cond or tf.while_loop "
                       "written around the call by hand too)",
            ),
            Expectation(
                modes=["vectorized_map_eager"], outcome="OperatorNotAllowedInGraphError",
                reason="in eager, tf.vectorized_map traces the call into a function, converting it"
                       " with AutoGraph only as its caller's status says (tf_convert with "
                       "control_status_ctx(), parallel_for/control_flow_ops.py), and an eager "
                       "caller's is unspecified: the Python if meets a symbolic tensor",
            ),
            Expectation(
                modes=["no_autograph", "graph"], outcome="OperatorNotAllowedInGraphError",
                reason="a Python `if` on a symbolic tensor needs AutoGraph to become tf.cond; "
                       "tf.function(autograph=False) and a plain tf.Graph have none",
            ),
            Expectation(
                modes=["saved_model"], outcome="AssertionError",
                reason="after the round trip, the If op's gradient meets the saved custom gradient "
                       "function's captures, which live in neither the branch graph nor its outer "
                       "graph, and cond_v2._resolve_grad_inputs asserts t.graph == cond_graph; the "
                       "same cond with plain softplus differentiates fine after loading "
                       "(tensorflow#40795, fixed for that case)",
            ),
            Expectation(
                modes=KERAS3_STEPS, outcome="RuntimeError",
                reason=f"{KERAS3_SYMBOLIC_BUILD}, so the Python if on a symbolic tensor raises "
                       "('Using a symbolic `tf.Tensor` as a Python `bool` is not allowed'), which "
                       "fit wraps in RuntimeError('Unable to automatically build the model')",
            ),
        ],
    ),
]
