"""tf_keras (Keras 2) layers whose call defines a custom gradient closing over `self`, as larq's
quantizers do: a tf_keras Layer holds a threading.local and tracks its weights in several places.

- Scale: y = x * w elementwise over the last axis; its gradient by hand, dy * w for x and
  sign * sum(dy * x) over the batch for w. Right with sign 1; with sign -1 the variable's gradient
  has the wrong sign (the x gradient stays right).
- Quantize: k-bit rounding of x in [0, 1] with the identity as its gradient, as larq's DoReFa;
  a straight-through estimator, no weights.
"""

import tensorflow as tf
import tf_keras as keras


class Scale(keras.layers.Layer):
    def __init__(self, sign=1.0, **kwargs):
        super().__init__(**kwargs)
        self.sign = sign

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(input_shape[-1],),
                                 initializer=keras.initializers.Constant([0.5, 1.5, -2.0]))

    def get_config(self):
        return {**super().get_config(), "sign": self.sign}

    def call(self, x):
        @tf.custom_gradient
        def scaled(x):
            def grad(dy, variables=None):
                return dy * self.w, [self.sign * tf.reduce_sum(dy * x, axis=0)]
            return x * self.w, grad
        return scaled(x)


class Quantize(keras.layers.Layer):
    def __init__(self, k_bit=2, **kwargs):
        super().__init__(**kwargs)
        self.k_bit = k_bit

    def get_config(self):
        return {**super().get_config(), "k_bit": self.k_bit}

    def call(self, x):
        @tf.custom_gradient
        def _k_bit_with_identity_grad(x):
            n = 2 ** self.k_bit - 1
            return tf.round(x * n) / n, lambda dy: dy
        return _k_bit_with_identity_grad(tf.clip_by_value(x, 0.0, 1.0))
