"""Custom-gradient layers from tf-keras inside small models.

Every builder makes its layers with weights from NumPy constants and builds
them at once, so the three modes start from identical weights, and the v1
graph mode gets the model built inside its own tf.Graph (what tf-keras, not
Keras 3, supports). Gradients are taken with respect to the inputs and every
trainable weight.

Keras 2 is what these cases need: the tf-keras package from TensorFlow 2.14
on, and before 2.16 also `tf.keras` itself (2.12 and 2.13 have no tf-keras:
Keras 2 ships inside TensorFlow). From 2.16 `tf.keras` is Keras 3, so without
tf-keras (`pip install 'harness[keras]'`) every mode skips these cases, saying why;
the keras3 theme (cases/keras3.py) builds the same layers in Keras 3.
"""

import numpy as np
import tensorflow as tf

from harness import SURROGATE, VALUES_DIFFER, Case, Expectation, Tol
from harness.cases import FORWARD_USES_THE_BODY, RACING_STEPS, UPDATE_RACE, VARIABLE_IN_CONTROL_FLOW
from harness.measure.modes import KNOWN_MODES

try:
    import tf_keras
except ImportError:
    tf_keras = (tf.keras if tuple(int(p) for p in tf.version.VERSION.split(".")[:2]) < (2, 16)
                else None)

SKIP_WITHOUT_KERAS2 = {} if tf_keras is not None else {
    mode: "needs Keras 2: install tf-keras (pip install 'harness[keras]'; beside tf-nightly, the "
          "tf-keras-nightly of its minor release instead); from TensorFlow 2.16 "
          "tf.keras is Keras 3, and these are tf_keras layers" for mode in KNOWN_MODES}
Layer = tf_keras.layers.Layer if tf_keras is not None else object

_DOCS = "https://www.tensorflow.org/api_docs/python/tf/custom_gradient"
_KERNEL_3x2 = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]], np.float32)
_BIAS_2 = np.array([0.1, -0.2], np.float32)
_KERNEL_2x1 = np.array([[1.0], [-2.0]], np.float32)
_BATCH = {"x": np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]], np.float32)}


def _constant(value):
    return tf_keras.initializers.Constant(value)


def _dense(kernel, bias=None, activation=None):
    units = kernel.shape[1]
    if bias is None:
        return tf_keras.layers.Dense(units, activation=activation, use_bias=False,
                                     kernel_initializer=_constant(kernel))
    return tf_keras.layers.Dense(units, activation=activation, kernel_initializer=_constant(kernel),
                                 bias_initializer=_constant(bias))


class RoundSTE(Layer):
    """Rounds to quarters forward, passes the gradient straight through."""

    def call(self, x):
        @tf.custom_gradient
        def quantise(v):
            def grad(dy):
                return dy

            return tf.round(v * 4.0) / 4.0, grad

        return quantise(x)


class GradientReversal(Layer):
    """Domain-adversarial training's gradient reversal, with a fixed factor."""

    def __init__(self, factor, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        @tf.custom_gradient
        def reverse(v):
            def grad(dy):
                return -self.factor * dy

            return tf.identity(v), grad

        return reverse(x)


class SoftplusDense(Layer):
    """softplus(x W + b) with the whole layer's gradient written by hand, weights included."""

    def __init__(self, kernel, bias, **kwargs):
        super().__init__(**kwargs)
        self._kernel_value = kernel
        self._bias_value = bias

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", shape=self._kernel_value.shape,
                                      initializer=_constant(self._kernel_value))
        self.bias = self.add_weight("bias", shape=self._bias_value.shape,
                                    initializer=_constant(self._bias_value))
        super().build(input_shape)

    def call(self, x):
        @tf.custom_gradient
        def layer(v):
            z = tf.matmul(v, self.kernel) + self.bias
            y = tf.maximum(z, 0.0) + tf.math.log1p(tf.exp(-tf.abs(z)))

            def grad(dy, variables=None):
                dz = dy * tf.sigmoid(z)
                by_ref = {self.kernel.ref(): tf.matmul(v, dz, transpose_a=True),
                          self.bias.ref(): tf.reduce_sum(dz, axis=0)}
                return (tf.matmul(dz, self.kernel, transpose_b=True),
                        [by_ref[w.ref()] for w in variables])

            return y, grad

        return layer(x)


def build_ste_model():
    model = tf_keras.Sequential([_dense(_KERNEL_3x2, _BIAS_2), RoundSTE(), _dense(_KERNEL_2x1)])
    model.build((None, 3))
    return model


def build_reversal_model():
    features = _dense(_KERNEL_3x2, _BIAS_2, activation="tanh")
    head = _dense(_KERNEL_2x1)
    inputs = tf_keras.Input(shape=(3,))
    hidden = features(inputs)
    outputs = tf_keras.layers.Concatenate()([head(hidden), head(GradientReversal(0.5)(hidden))])
    return tf_keras.Model(inputs, outputs)


def build_softplus_dense():
    model = tf_keras.Sequential([SoftplusDense(_KERNEL_3x2, _BIAS_2), _dense(_KERNEL_2x1)])
    model.build((None, 3))
    return model


CASES = [
    Case(
        id="keras.ste_in_sequential",
        build=build_ste_model,
        points=[_BATCH],
        wrt_variables=True,
        skip_modes=SKIP_WITHOUT_KERAS2,
        source=f"{_DOCS} (pattern: a straight-through quantiser layer in tf_keras.Sequential)",
        description=(
            "Dense, a round-to-quarters straight-through layer, Dense: gradients w.r.t. "
            "the inputs and all three weights as if the rounding were the identity"
        ),
        expectations=[
            Expectation(
                modes=["numeric"],
                outcome=SURROGATE,
                reason=(
                    "a straight-through estimator by design: identity backward through round, "
                    "whose true derivative is 0 wherever it is defined"
                ),
            ),
        ],
    ),
    Case(
        id="keras.gradient_reversal_functional",
        build=build_reversal_model,
        points=[_BATCH],
        wrt_variables=True,
        skip_modes=SKIP_WITHOUT_KERAS2,
        # Only keras_mixed computes in float16: there the tanh features saturate to exactly 1 where
        # float32 gives 1 - 3e-4, so 1 - tanh**2 is 0 and a kernel gradient of 1.5e-3 (with upstream
        # weights) becomes
        # 0. float16 rounding, judged against the gradients' scale (about 1) instead of element by
        # element.
        tolerance={"float16": Tol(rtol=1e-2, atol=2e-3)},
        source=(
            f"{_DOCS} (pattern: gradient reversal layer, Ganin & Lempitsky 2015, arXiv:1409.7495)"
        ),
        description=(
            "a functional model whose shared head sees the features directly and through a "
            "gradient reversal layer (factor 0.5): the feature weights get 1 - 0.5 of the gradient"
        ),
        expectations=[
            Expectation(
                modes=["forward"],
                outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY
                + ": the layer's tf.identity gives +1 where grad_fn reverses the sign",
            ),
            Expectation(
                modes=["numeric"],
                outcome=VALUES_DIFFER,
                reason=(
                    "gradient reversal by design: -dy backward through an identity, whose true "
                    "derivative is 1"
                ),
            ),
        ],
    ),
    Case(
        id="keras.custom_gradient_layer_weights",
        build=build_softplus_dense,
        points=[_BATCH],
        order=2,
        wrt_variables=True,
        skip_modes=SKIP_WITHOUT_KERAS2,
        source=(
            f"{_DOCS} (a layer whose custom gradient covers its own weights through `variables`)"
        ),
        description=(
            "a layer computing softplus(x W + b) with grad_fn(dy, variables) giving the kernel "
            "and bias gradients, then Dense: orders 1 and 2 w.r.t. inputs and weights"
        ),
        expectations=[
            *VARIABLE_IN_CONTROL_FLOW,
            Expectation(
                modes=RACING_STEPS,
                outcome="UpdateRace",
                reason=(
                    "grad_fn reads self.kernel for the input's gradient in the backward pass: "
                    f"{UPDATE_RACE}"
                ),
            ),
            Expectation(
                modes=["keras_mixed"],
                outcome="TypeError",
                reason=(
                    "grad_fn reads self.kernel in the backward pass, outside the layer's call, "
                    "where tf_keras's AutoCastVariable is not cast (enable_auto_cast_variables "
                    "is entered only by Layer.__call__): a float32 kernel meets the float16 dy"
                ),
            ),
        ],
    ),
]
