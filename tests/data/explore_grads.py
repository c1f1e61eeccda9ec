"""Functions the explore tests search: a naive softplus that overflows, the stable one, a hang."""

import time

import tensorflow as tf


def naive_softplus(x):
    """log(1 + exp(x)): exp overflows float32 above log(float32 max) = 88.72..., so its value is inf there."""
    return tf.math.log(1 + tf.exp(x))


def softplus(x):
    return tf.math.softplus(x)


def hangs_above_ten(x):
    """Hangs when x > 10; x is a NumPy value once, when the function is traced or run eagerly."""
    if tf.executing_eagerly() and float(x) > 10:
        time.sleep(3600)
    return x * x
