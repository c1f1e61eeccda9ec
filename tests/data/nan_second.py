"""A custom gradient whose own gradient is NaN: every mode agrees, and order 2 is wrong.

neg_square(x) = -x**2; its gradient is slope(x) = -2x, right, but slope's custom gradient is NaN
where it should be -2. Only the numeric derivative shows it.
"""

import tensorflow as tf


@tf.custom_gradient
def slope(x):
    def grad(dy):
        return dy * float("nan")
    return -2.0 * x, grad


@tf.custom_gradient
def neg_square(x):
    def grad(dy):
        return dy * slope(x)
    return -x * x, grad
