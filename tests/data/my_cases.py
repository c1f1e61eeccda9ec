import numpy as np
import tensorflow as tf
from harness import VALUES_DIFFER, Case, Expectation

@tf.custom_gradient
def log1pexp(x):
    e = tf.exp(x)
    return tf.math.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))

def log1pexp_plain(x):
    return tf.math.log(1 + tf.exp(x))

CASES = [
    Case(
        id="mine.log1pexp",
        fn=log1pexp,
        points=[{"x": np.float32(0.0)}, {"x": np.float32(100.0)}],  # NumPy values, with dtypes
        order=1,
        source="my project",
        description="stable softplus with a hand-written first derivative",
        reference=log1pexp_plain,                             # the reference oracle
        analytic=lambda x: {1: 1 / (1 + np.exp(-x))},         # the analytic oracle: sigmoid
        expectations=[Expectation(
            modes=["reference"], outcome=VALUES_DIFFER, points=["x=100.0"],
            reason="the plain version overflows: its gradient is inf / inf = NaN at x = 100")],
    ),
]
