"""A wrong gradient count padded with code that has nothing to do with it: the minimiser's test.

`padded`'s grad_fn returns two gradients for its one input. Eager and a v1 graph raise
ValueError; inside tf.function the same surfaces as InternalError. Everything else here
(the constants, the helpers, the statements around the custom gradient) is padding that a
minimised reproduction must not contain.
"""

import math

import numpy as np
import tensorflow as tf

SCALE = 3.0
OFFSET = np.float32(0.25)
LABELS = ("alpha", "beta", "gamma")


def _affine(v):
    """Padding: a helper whose result nothing needs."""
    return v * SCALE + OFFSET


def _describe(*tensors):
    """Padding: text about the tensors."""
    return ", ".join(f"{LABELS[i % len(LABELS)]}={t.dtype.name}" for i, t in enumerate(tensors))


def _softplus_parts(x):
    """The forward value and its derivative, as a fused op would give them."""
    e = tf.exp(x)
    return tf.math.log(1 + e), 1 - 1 / (1 + e)


@tf.custom_gradient
def padded(x):
    shifted = _affine(x)
    note = _describe(x, shifted)
    y, slope = _softplus_parts(x)
    scale = tf.cast(math.sqrt(4.0), x.dtype)
    del note

    def grad(dy):
        unused = tf.reduce_sum(dy) * scale
        # The bug: two gradients for one input.
        return dy * slope, dy * unused

    return y, grad
