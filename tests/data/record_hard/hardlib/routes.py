"""One right custom gradient per route to TensorFlow's custom_gradient (d x³ = 3x² dy)."""

import keras
import tensorflow.compat.v1 as tf1
import tensorflow.compat.v2 as tf2
from tensorflow.python.ops import custom_gradient as custom_gradient_lib
from tensorflow.python.ops.custom_gradient import custom_gradient


@tf2.custom_gradient
def cube_v2(x):
    def grad(dy):
        return 3.0 * x * x * dy
    return x * x * x, grad


@tf1.custom_gradient
def cube_v1(x):
    def grad(dy):
        return 3.0 * x * x * dy
    return x * x * x, grad


@custom_gradient
def cube_imported(x):
    def grad(dy):
        return 3.0 * x * x * dy
    return x * x * x, grad


@custom_gradient_lib.custom_gradient
def cube_module(x):
    def grad(dy):
        return 3.0 * x * x * dy
    return x * x * x, grad


@keras.ops.custom_gradient
def cube_keras(x):
    def grad(*args, upstream=None):
        if upstream is None:
            (upstream,) = args
        return 3.0 * x * x * upstream
    return x * x * x, grad
