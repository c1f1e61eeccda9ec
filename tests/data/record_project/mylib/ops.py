"""A user's library of custom gradients: two right, two wrong, one made by a factory."""

import tensorflow as tf


@tf.custom_gradient
def square(x):
    """Right: d(x²) = 2x dy."""
    def grad(dy):
        return 2.0 * x * dy
    return x * x, grad


@tf.custom_gradient
def scaled_square(x):
    """Wrong: the gradient ignores dy, which a test with dy = 1 never notices."""
    def grad(dy):
        return 2.0 * x
    return x * x, grad


@tf.custom_gradient
def clipped_relu(x):
    """Wrong in graphs: a Python `if` on the tensor's value, which only eager code can take."""
    if x > 0:
        y = x
    else:
        y = tf.zeros_like(x)

    def grad(dy):
        return dy * tf.cast(x > 0, x.dtype)
    return y, grad


def make_power(p):
    """A factory: each power is a closure over p, right for every p."""
    @tf.custom_gradient
    def power(x):
        def grad(dy):
            return p * tf.pow(x, p - 1.0) * dy
        return tf.pow(x, p), grad
    return power


@tf.custom_gradient
def softsign(x):
    """Right; the tests call it only inside tf.function."""
    def grad(dy):
        return dy / tf.square(1.0 + tf.abs(x))
    return x / (1.0 + tf.abs(x)), grad
