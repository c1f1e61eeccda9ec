"""A layer whose custom gradient closes over self, with state set outside its config (as Keras's
quantized Dense sets inputs_quantizer in quantize())."""

import numpy as np
import tensorflow as tf


class Scale:
    """A quantizer-like helper object: a config of its own."""

    def __init__(self, factor):
        self.factor = factor

    def get_config(self):
        return {"factor": self.factor}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __call__(self, x):
        return x * self.factor


class ScaledDense:
    """y = x * kernel * inputs_quantizer.factor, elementwise; its gradient in x is
    kernel * factor, by hand."""

    def __init__(self, units):
        self.units = units

    def get_config(self):
        return {"units": self.units}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def quantize(self, factor):
        # Set outside get_config: from_config alone would lose them.
        self.kernel = tf.Variable(np.arange(1, self.units + 1, dtype=np.float32), name="kernel")
        self.inputs_quantizer = Scale(factor)
        self._orig_output_dim = self.units

    def __call__(self, x):
        @tf.custom_gradient
        def scaled_matmul(x, kernel):
            def grad(dy):
                return (self.inputs_quantizer(dy * kernel),
                        self.inputs_quantizer(dy * x) * float(self._orig_output_dim > 0))
            return self.inputs_quantizer(x * kernel), grad

        return scaled_matmul(x, tf.convert_to_tensor(self.kernel))
