"""Functions the explore tests search: a naive softplus that overflows (alone, and scaled by an argument
that is drawn but not differentiated), the stable one, a hang."""

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


def naive_scaled_softplus(x, a):
    """a * log(1 + exp(x)): overflows as naive_softplus does, whatever the scale a > 0; explored over
    both arguments, differentiated with respect to x alone (--wrt x)."""
    return a * tf.math.log(1 + tf.exp(x))
