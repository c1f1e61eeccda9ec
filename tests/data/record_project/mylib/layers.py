"""A user's Keras 3 layer whose activation has a hand-written gradient."""

import keras
import tensorflow as tf


@tf.custom_gradient
def softplus(x):
    """Right: d softplus(x) = sigmoid(x) dy."""
    def grad(dy):
        return dy * tf.sigmoid(x)
    return tf.math.softplus(x), grad


class SoftplusDense(keras.layers.Layer):
    """softplus(x W), the activation through the custom gradient above."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units),
                                      initializer="glorot_uniform")

    def call(self, x):
        return softplus(tf.matmul(x, self.kernel))
