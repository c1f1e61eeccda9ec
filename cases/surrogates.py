"""Surrogate gradients: straight-through estimators, right and broken, and a small source beside a
large one.

A binarised or quantised network's forward is a step function: its derivative is 0 wherever it is
defined, and its custom gradient is deliberately something else (a surrogate). The numeric
derivative cannot judge such a gradient, but what a surrogate can get wrong can be judged: which
way it points (following it must move the loss the way the forward goes, over the shortest step at
which the forward moves) and whether it is linear in its upstream gradient dy. The right
estimators here pass as checked surrogates, each with its intended surrogate in closed form (the
analytic oracle); a flipped sign and a dropped dy fail, as declared.
"""

import numpy as np
import tensorflow as tf

from harness import SURROGATE, VALUES_DIFFER, Case, Expectation
from harness.cases import JACOBIANS, LOOP_JACOBIAN_DTYPE, LOOP_JACOBIANS

_LARQ = "https://docs.larq.dev/larq/api/quantizers/"
_HUBARA = "binarised networks' clipped straight-through sign, Hubara et al. 2016, arXiv:1602.02830"

# Inside the clip (|x| <= 1) at four elements, outside at two; none at the jump 0.
_X = np.array([-2.0, -0.7, -0.2, 0.3, 0.9, 1.7], np.float32)
_INSIDE = (np.abs(_X) <= 1.0).astype(np.float32)


def _inside(x, dy):
    return tf.cast(tf.abs(x) <= 1.0, dy.dtype)


@tf.custom_gradient
def ste_sign(x):
    """sign forward, dy * (|x| <= 1) backward: larq's ste_sign, Hubara et al.'s estimator."""

    def grad(dy):
        return dy * _inside(x, dy)

    return tf.sign(x), grad


@tf.custom_gradient
def ste_sign_flipped(x):
    """ste_sign with its sign flipped inside the clip: -dy * (|x| <= 1)."""

    def grad(dy):
        return -dy * _inside(x, dy)

    return tf.sign(x), grad


@tf.custom_gradient
def ste_sign_dy_dropped(x):
    """ste_sign that returns the clip's indicator and drops dy: (|x| <= 1)."""

    def grad(dy):
        return _inside(x, dy)

    return tf.sign(x), grad


def clipped_identity(x, dy):
    """The intended surrogate of ste_sign, as an expectation names it ("module:function"): called
    with the function's arguments and dy, it returns the gradient of x."""
    return dy * _inside(x, dy)


def identity(x, dy):
    """The plain straight-through estimator, unclipped: not ste_sign's."""
    return dy


_BETA = 5.0


@tf.custom_gradient
def swish_sign(x):
    """larq's swish_sign (Darabi et al. 2018, arXiv:1812.01965), beta 5: sign forward, the
    derivative of 2 sigmoid(beta x) (1 + beta x (1 - sigmoid(beta x))) - 1 backward, which is
    negative beyond |x| of about 0.48."""

    def grad(dy):
        b = tf.constant(_BETA, x.dtype)
        return dy * b * (2.0 - b * x * tf.tanh(b * x / 2.0)) / (1.0 + tf.cosh(b * x))

    return tf.sign(x), grad


def _swish_surrogate(x):
    b = _BETA
    x = np.asarray(x, np.float64)
    return b * (2.0 - b * x * np.tanh(b * x / 2.0)) / (1.0 + np.cosh(b * x))


# Near the jump, where the forward is crossed first, and far from it, where swish_sign's surrogate
# is negative (at 0.6, 0.8 and -1.2).
_SWISH_X = np.array([-1.2, -0.05, 0.02, 0.3, 0.6, 0.8], np.float32)

# A large bfloat16 source beside a float32 one of two elements: one random direction over both
# would judge the two at bfloat16's tolerance, where their 5 % error disappears among the large
# source's terms.
_LARGE = (np.linspace(-1.0, 1.0, 1040) ** 3).astype(tf.bfloat16.as_numpy_dtype)
_SMALL = np.array([0.75, -1.25], np.float32)


@tf.custom_gradient
def scale_by_energy(x, s):
    """s * sum(x**2), with the gradient of s 5 % too large: dy * sum(x**2) * 1.05."""
    energy = tf.reduce_sum(tf.square(tf.cast(x, s.dtype)))

    def grad(dy):
        dx = tf.cast(2.0 * tf.cast(x, s.dtype) * tf.reduce_sum(dy * s), x.dtype)
        return dx, dy * energy * 1.05

    return s * energy, grad


_HISTORY = np.array([3.0, 2.0, 1.0, 0.5], np.float32)


@tf.custom_gradient
def overwrite_with_gradient(x, history):
    """2x, with history's "gradient" its new value: the latest amax first, [max|x|, 3, 2, 1]
    (Keras 3's float8 layers return a new scale and amax history so, by design)."""

    def grad(dy):
        latest = tf.reduce_max(tf.abs(x))[None]
        return 2.0 * dy, tf.concat([latest, history[:-1]], axis=0)

    return 2.0 * x, grad


CASES = [
    Case(
        id="surrogates.ste_sign",
        fn=ste_sign,
        points=[{"x": _X}],
        analytic=lambda x: {1: _INSIDE},
        source=f"{_LARQ} (ste_sign; {_HUBARA})",
        description="sign forward, dy * (|x| <= 1) backward: a surrogate that points the way "
                    "sign moves and is linear in dy, with no expectation",
    ),
    Case(
        id="surrogates.ste_sign_declared",
        fn=ste_sign,
        points=[{"x": _X}],
        source=f"{_LARQ} (ste_sign; {_HUBARA})",
        description="ste_sign declared a surrogate with its intended surrogate named: still "
                    "checked for direction and linearity, and compared with clipped_identity",
        expectations=[
            Expectation(
                modes=["numeric"], outcome=SURROGATE, intended=f"{__name__}:clipped_identity",
                reason="the clipped straight-through estimator, dy * (|x| <= 1), by design",
            ),
        ],
    ),
    Case(
        id="surrogates.ste_sign_flipped",
        fn=ste_sign_flipped,
        points=[{"x": _X}],
        source=f"{_LARQ} (ste_sign with a planted sign flip)",
        description="ste_sign backward negated inside the clip: linear in dy, but following it "
                    "moves the loss the wrong way",
        expectations=[
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER,
                reason="a planted bug: -dy inside |x| <= 1, so along the gradient the loss "
                       "sum(sign(x)) falls where the forward rises (its secant slope over the "
                       "step that crosses 0 is -4)",
            ),
        ],
    ),
    Case(
        id="surrogates.ste_sign_dy_dropped",
        fn=ste_sign_dy_dropped,
        points=[{"x": _X}],
        source=f"{_LARQ} (ste_sign with a planted bug: dy dropped)",
        description="ste_sign backward without dy: right at the plain contraction (dy = 1), "
                    "not linear in dy",
        expectations=[
            Expectation(
                modes=JACOBIANS, outcome=VALUES_DIFFER,
                reason="a planted bug: grad_fn returns (|x| <= 1) whatever dy, so each of the "
                       "jacobian's 6 rows is that whole vector and their sum is 6 times it, where "
                       "tape.gradient gives it once",
            ),
            Expectation(
                modes=["linearity"], outcome=VALUES_DIFFER,
                reason="a planted bug: grad_fn returns (|x| <= 1) whatever dy, so with dy = 0.5 - "
                       "2w it gives 1 where a linear gradient gives 0.5 - 2w",
            ),
            Expectation(
                modes=["upstream"], outcome=VALUES_DIFFER,
                reason="with upstream weights w the loss is sum(w sign(x)), and the gradient "
                       "ignores w: at this point's weights it points the wrong way",
            ),
            Expectation(
                modes=["keras_mixed", "keras_mirrored", "keras3_mixed", "keras3_mirrored"],
                outcome=VALUES_DIFFER,
                reason="grad_fn ignores its upstream gradient: under mixed_float16 the loss "
                       "scale's optimizer divides what it returns by the scale 2**15, and under "
                       "MirroredStrategy the two replicas' unscaled returns are summed",
            ),
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason="forward mode (ForwardpropFromTape) differentiates grad_fn with respect to "
                       "its upstream gradient: grad_fn does not use dy, so the tangent is None "
                       "(unconnected) where reverse mode reads grad_fn's (|x| <= 1)",
            ),
        ],
    ),
    Case(
        id="surrogates.swish_sign",
        fn=swish_sign,
        points=[{"x": _SWISH_X}],
        analytic=lambda x: {1: _swish_surrogate(x).astype(np.float32)},
        source=f"{_LARQ} (swish_sign, beta 5; Darabi et al. 2018, arXiv:1812.01965)",
        description="sign forward, the swish sign's derivative backward: negative at three of "
                    "six elements, yet pointing the way the forward moves as a whole",
    ),
    Case(
        id="surrogates.small_source_beside_large",
        fn=scale_by_energy,
        points=[{"x": _LARGE, "s": _SMALL}],
        analytic=lambda x, s: {1: [2.0 * np.asarray(x, np.float64) * float(np.sum(s)),
                                   np.full(2, float(np.sum(np.asarray(x, np.float64) ** 2)))]},
        source="https://github.com/keras-team/keras/blob/v3.15.1/keras/src/layers/core/dense.py "
               "(float8 Dense, whose tests recorded by the harness had 2 wrong "
               "elements of 1,055 hidden in one random direction)",
        description="s * sum(x**2) with 1,040 bfloat16 x and 2 float32 s, the gradient of s 5 % "
                    "too large: judged at float32's tolerance, not bfloat16's",
        expectations=[
            Expectation(
                modes=LOOP_JACOBIANS, outcome="InvalidArgumentError",
                reason=LOOP_JACOBIAN_DTYPE + " (here a float32 output of the bfloat16 x)",
            ),
            Expectation(
                modes=["numeric", "analytic"], outcome=VALUES_DIFFER,
                reason="a planted bug: the gradient of s is 1.05 sum(x**2), 5 % above its "
                       "derivative sum(x**2); each of s's two elements is checked on its own, at "
                       "float32's tolerance, beside random directions within x",
            ),
            Expectation(
                modes=["keras_mirrored", "keras3_mirrored"], outcome="TypeError",
                tf_versions=">=2.13",
                reason="under MirroredStrategy the replicas' gradients of the bfloat16 x and the "
                       "float32 s are concatenated into one tensor, which ConcatV2 refuses for "
                       "mixed dtypes (2.12.1's mirrored step takes them: docs/matrix.md)",
            ),
        ],
    ),
    Case(
        id="surrogates.overwrite_with_gradient",
        fn=overwrite_with_gradient,
        points=[{"x": np.array([0.5, -1.0], np.float32), "history": _HISTORY}],
        source="https://github.com/keras-team/keras/blob/v3.15.1/keras/src/layers/core/dense.py "
               "(float8: "
               "quantized_dequantize_outputs returns the new scale and amax history as their "
               "gradients, which the optimizer writes over the variables)",
        description="2x, with the amax history's gradient its updated value [1, 3, 2, 1]: the "
                    "forward does not depend on history, so neither a derivative nor a surrogate",
        expectations=[
            Expectation(
                modes=JACOBIANS, outcome=VALUES_DIFFER,
                reason="history's gradient is its new value whatever dy, so each of the jacobian's"
                       " 2 rows (one per element of the output) holds it and their sum is twice it",
            ),
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER,
                reason="overwrite-with-gradient by design: history's gradient is its new value, "
                       "where its derivative is 0 (the forward does not read it)",
            ),
            Expectation(
                modes=["linearity"], outcome=VALUES_DIFFER,
                reason="the new history does not depend on dy",
            ),
            Expectation(
                modes=["keras_mixed", "keras_mirrored", "keras3_mixed", "keras3_mirrored"],
                outcome=VALUES_DIFFER,
                reason="grad_fn ignores its upstream gradient: under mixed_float16 the loss "
                       "scale's optimizer divides what it returns by the scale 2**15, and under "
                       "MirroredStrategy the two replicas' unscaled returns are summed",
            ),
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason="forward mode (ForwardpropFromTape) differentiates grad_fn with respect to "
                       "its upstream gradient: history's new value does not use dy, so its "
                       "tangent is 0 where reverse mode reads the new value",
            ),
        ],
    ),
]
