"""Functions with odd arguments: a gradient that is None by design, a domain, an integer index,
a Python float that may be infinite, and dtypes."""

import tensorflow as tf


@tf.custom_gradient
def power_of(x, n):
    """x ** n, differentiated in x only: the gradient for n is None by design, as documented."""
    def grad(dy):
        return dy * n * tf.pow(x, n - 1.0), None
    return tf.pow(x, n), grad


@tf.custom_gradient
def log_of(x):
    """Defined for x > 0 only."""
    def grad(dy):
        return dy / x
    return tf.math.log(x), grad


@tf.custom_gradient
def pick(x, i):
    """x[i]: i indexes x."""
    def grad(dy):
        return tf.tensor_scatter_nd_add(tf.zeros_like(x), [[i]], [dy]), None
    return tf.gather(x, i), grad


@tf.custom_gradient
def capped(x, cap):
    """min(x, cap), cap a Python float (infinite: no cap)."""
    def grad(dy):
        return dy * tf.cast(x < cap, x.dtype), None
    return tf.minimum(x, cap), grad


@tf.custom_gradient
def square_any(x):
    def grad(dy):
        return 2.0 * x * dy
    return x * x, grad


def scaled(x, k):
    def grad(dy):
        return k * dy
    return k * x, grad


def make_scaler(scale):
    """x * v for a variable v of its own: the variable's gradient has the wrong sign."""
    v = tf.Variable(scale, name="scaler")

    @tf.custom_gradient
    def scaled_by_variable(x):
        def grad(dy, variables=None):
            return dy * v, [-dy * x]  # wrong: d(x v)/dv is x
        return x * v, grad
    return scaled_by_variable


@tf.custom_gradient
def twice(x):
    def grad(dy):
        return 2.0 * dy
    return 2.0 * x, grad
