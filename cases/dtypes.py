"""Custom gradients in other dtypes: float16, bfloat16, float64 and complex64.

The functions are dtype-generic (Python constants take the input's dtype; the
ones shared with patterns.py are imported from there),
and each case is judged with its dtype's row of the tolerance table, never a
loosened float32 one. Where a low-precision value over- or underflows, that is
part of what the case shows, and every mode must do the same.
"""

import numpy as np
import tensorflow as tf

from harness import VALUES_DIFFER, Case, Expectation
from harness.cases import (
    FORWARD_USES_THE_BODY,
    LOOP_JACOBIANS,
    LOOP_JACOBIAN_DTYPE,
    SAVED_MODEL_DROPS_INNER,
)
from harness.cases.patterns import fused_tanh, safe_norm, softplus

_DOCS = "https://www.tensorflow.org/api_docs/python/tf/custom_gradient"
# ml_dtypes' type, or TensorFlow's own where it has no ml_dtypes (2.13)
_BF16 = tf.bfloat16.as_numpy_dtype


@tf.custom_gradient
def log1pexp(x):
    """The docstring's stable log1pexp, dtype-generic."""
    e = tf.exp(x)
    one = tf.ones_like(x)

    def grad(upstream):
        return upstream * (one - one / (one + e))

    return tf.math.log(one + e), grad


@tf.custom_gradient
def complex_square(z):
    """z^2 with TensorFlow's complex convention: the gradient is dy * conj(dz^2/dz)."""

    def grad(dy):
        return dy * tf.math.conj(2 * z)

    return z * z, grad


@tf.custom_gradient
def complex_abs2(z):
    """|z|^2 as a real-valued loss of a complex input: gradient 2z (TensorFlow's conj
    convention)."""

    def grad(dy):
        return tf.cast(dy, z.dtype) * 2 * z

    return tf.math.real(z * tf.math.conj(z)), grad


def _vector(dtype):
    return {"x": np.array([-3.0, 0.0, 2.0], dtype)}


CASES = [
    Case(
        id="dtypes.log1pexp_float16",
        fn=log1pexp,
        points=[{"x": np.float16(1.0)}, {"x": np.float16(20.0)}],
        source=_DOCS,
        description="the docstring's log1pexp in float16: exp(20) overflows to inf, the custom "
                    "gradient stays 1.0; judged with float16 tolerance",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER, points=["x=20.0"],
                reason=FORWARD_USES_THE_BODY
                + ": exp(20) overflows float16, so the body's derivative is NaN where "
                       "grad_fn gives 1",
            ),
        ],
    ),
    Case(
        id="dtypes.log1pexp_bfloat16",
        fn=log1pexp,
        points=[{"x": np.array(1.0, _BF16)}, {"x": np.array(100.0, _BF16)}],
        source=_DOCS,
        description="the docstring's log1pexp in bfloat16 (float32's range, 8 bits of mantissa): "
                    "gradient 0.73 and 1.0; judged with bfloat16 tolerance",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER, points=["x=100"],
                reason=FORWARD_USES_THE_BODY
                + ": at x = 100 the body's derivative e / (1 + e) is inf / inf = NaN in "
                       "bfloat16 where grad_fn gives 1",
            ),
        ],
    ),
    Case(
        id="dtypes.log1pexp_float64",
        fn=log1pexp,
        points=[{"x": np.float64(1.0)}, {"x": np.float64(800.0)}],
        source=_DOCS,
        description="the docstring's log1pexp in float64: exp(800) overflows to inf, the custom "
                    "gradient stays 1.0; judged with float64 tolerance",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER, points=["x=800.0"],
                reason=FORWARD_USES_THE_BODY
                + ": exp(800) overflows float64, so the body's derivative is NaN where "
                       "grad_fn gives 1",
            ),
        ],
    ),
    Case(
        id="dtypes.softplus_float16",
        fn=softplus,
        points=[_vector(np.float16)],
        order=2,
        source=f"{_DOCS} (pattern: stable softplus)",
        description="stable softplus in float16 to order 2: sigmoid and s(1 - s) in half precision",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY
                + ": at x = 0 the body's Maximum sends the tie to x and Abs's derivative "
                       "is sign(0) = 0, giving 1 where grad_fn gives sigmoid(0) = 0.5",
            ),
            Expectation(
                modes=["xla"], outcome=VALUES_DIFFER,
                reason="XLA's LogisticExpander (logistic_expander.cc) turns tf.sigmoid into 1 / (1 "
                       "+ exp(-x)) computed in float16, rounding each step: sigmoid(2) = 0.8804 "
                       "instead of the kernel's 0.8809, so the order 2 s(1 - s) at x = 2 is "
                       "0.10535 vs 0.10492, 3.7 times the float16 tolerance (XLA:CPU)",
            ),
        ],
    ),
    Case(
        id="dtypes.softplus_float64",
        fn=softplus,
        points=[_vector(np.float64)],
        order=2,
        source=f"{_DOCS} (pattern: stable softplus)",
        description="stable softplus in float64 to order 2, judged to 1e-7",
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
        id="dtypes.safe_norm_bfloat16",
        fn=safe_norm,
        points=[{"x": np.array([0.0, 0.0], _BF16)}, {"x": np.array([3.0, 4.0], _BF16)}],
        source=f"{_DOCS} (pattern: a finite gradient where the true one is NaN)",
        description="safe norm in bfloat16: gradient 0 at the zero vector, [0.6, 0.8] at [3, 4]",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER, points=["x=[0,0]"],
                reason=FORWARD_USES_THE_BODY
                + ": tf.norm's sqrt has derivative 0 * inf = NaN at 0, where grad_fn "
                       "gives 0",
            ),
        ],
    ),
    Case(
        id="dtypes.fused_tanh_float64",
        fn=fused_tanh,
        points=[{"x": np.array([-1.0, 0.0, 0.5], np.float64)}],
        order=2,
        source=f"{_DOCS} (pattern: a fused op with its own second derivative)",
        description="tanh with custom first and second derivatives in float64, right at order 2",
        expectations=[
            Expectation(
                modes=["saved_model"], outcome="LookupError", reason=SAVED_MODEL_DROPS_INNER,
            ),
        ],
    ),
    Case(
        id="dtypes.complex64_square",
        fn=complex_square,
        points=[{"z": np.array([1 + 2j, -0.5 + 0j], np.complex64)}],
        order=2,
        source=f"{_DOCS} (complex inputs: grad_fn returns dy * conj(f'(z)))",
        description="z^2 in complex64: every mode gives conj(2z) = [2 - 4j, -1], then 2 "
                    "(tf.gradients given ones as the upstream gradient of a complex output, as a "
                    "tape starts from)",
        # TensorFlow's gradient of a holomorphic f with upstream ones is conj(f'(z)) (its
        # complex-numbers docs); real directions cannot check it, the closed form can.
        analytic=lambda z: {0: z ** 2, 1: np.conj(2 * z)},
        expectations=[
            Expectation(
                modes=["recompute_grad_function"], outcome="TypeError",
                reason="tf.recompute_grad under tf.function refuses the complex64 input: 'Value "
                       "passed to parameter 'input' has DataType complex64 not in list of allowed "
                       "values' (measured on 2.21.0; recompute_grad in eager computes)",
            ),
        ],
    ),
    Case(
        id="dtypes.complex64_abs2",
        fn=complex_abs2,
        points=[{"z": np.array([1 + 2j, -3 - 1j], np.complex64)}],
        source=f"{_DOCS} (complex inputs: a real loss of a complex variable)",
        description="|z|^2 as a float32 output of a complex64 input: gradient 2z = [2 + 4j, -6 - "
                    "2j]",
        # Real directions cannot check a complex gradient (see the numeric oracle); the closed form
        # can: TensorFlow's gradient of a real f(z) is 2 df/d(conj z), here 2z (its complex-numbers
        # docs).
        analytic=lambda z: {0: np.abs(z) ** 2, 1: 2 * z},
        expectations=[
            Expectation(
                modes=LOOP_JACOBIANS, outcome="InvalidArgumentError",
                reason=LOOP_JACOBIAN_DTYPE + " (here a float32 output of a complex64 input)",
            ),
        ],
    ),
]
