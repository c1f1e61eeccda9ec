"""Two Keras layers whose call defines a custom gradient of the same name; fit traces them, and
tf_keras converts each call with AutoGraph."""

import tensorflow as tf
import tf_keras as keras


class Doubler(keras.layers.Layer):
    def call(self, x):
        @tf.custom_gradient
        def _g(x):
            return 2.0 * x, lambda dy: 2.0 * dy  # right
        return _g(x)


class Halver(keras.layers.Layer):
    def call(self, x):
        @tf.custom_gradient
        def _g(x):
            return 0.5 * x, lambda dy: 0.25 * dy  # wrong: the derivative of x / 2 is 1 / 2
        return _g(x)
