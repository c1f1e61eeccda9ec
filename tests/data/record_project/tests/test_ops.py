"""The user's own tests: all pass, though two of the gradients they call are wrong (scaled_square
ignores dy; clipped_relu takes a Python `if` on a tensor, which no graph can)."""

import numpy as np
import tensorflow as tf

from mylib import ops


def gradient(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def test_square():
    np.testing.assert_allclose(gradient(ops.square, tf.constant([1.0, 2.0])), [2.0, 4.0])


def test_scaled_square():
    np.testing.assert_allclose(gradient(ops.scaled_square, tf.constant(3.0)), 6.0)


def test_clipped_relu():
    np.testing.assert_allclose(gradient(ops.clipped_relu, tf.constant(1.5)), 1.0)


def test_power():
    cube, square = ops.make_power(3.0), ops.make_power(2.0)
    np.testing.assert_allclose(gradient(cube, tf.constant(2.0)), 12.0)
    np.testing.assert_allclose(gradient(square, tf.constant(2.0)), 4.0)


def test_softsign_in_function():
    @tf.function
    def step(x):
        return gradient(ops.softsign, x)

    np.testing.assert_allclose(step(tf.constant([0.0, 1.0])), [1.0, 0.25])


def test_scaled_by_an_object():
    class Scale:
        """An object of the test's own class, which replay cannot import: it cannot be copied."""

        def __init__(self, factor):
            self.factor = factor

    scale = Scale(2.0)

    @tf.custom_gradient
    def times(x):
        def grad(dy):
            return scale.factor * dy
        return scale.factor * x, grad

    np.testing.assert_allclose(gradient(times, tf.constant(1.0)), 2.0)
