"""Custom gradients in Keras 3: the keras theme's layers and the mixed-precision bug classes as
Keras 3 builds them, and custom gradients written for Keras 3 (`keras.ops.custom_gradient`).

From TensorFlow 2.16 `import keras` and `tf.keras` are Keras 3: its layers' weights are
keras.Variable objects wrapping a tf.Variable, its mixed precision casts a weight inside a layer's
call only, and its Sequential and functional models are its own. The first five cases are twins of
keras and training cases, with the same layers, weights and points, built with Keras 3's layers.
The keras_* steps, which train tf_keras models, skip the cases that build Keras 3 layers, and the
keras3_* steps train them. Where Keras 3 is missing (TensorFlow 2.12 to 2.15) every mode skips,
saying so. The builders import Keras 3 when a mode runs them, so the module loads everywhere.

On the TensorFlow backend `keras.ops.custom_gradient(f)` is `tf.custom_gradient(f=f)`: TensorFlow
calls its grad with the upstream gradient by position and hands it `variables=` when the forward
read a variable, while Keras documents `grad(*args, upstream=None)` for every backend.
"""

import numpy as np
import tensorflow as tf

from harness import SURROGATE, VALUES_DIFFER, Case, Expectation, Tol
from harness.cases import (
    FORWARD_USES_THE_BODY,
    KERAS3_STEPS,
    KERAS3_SYMBOLIC_BUILD,
    VARIABLE_IN_CONTROL_FLOW,
)
from harness.measure.modes import KNOWN_MODES, STEP_MODES
from harness.measure.modes.keras3_step import NEEDS_KERAS3, keras3

_DOCS = "https://www.tensorflow.org/api_docs/python/tf/custom_gradient"
_OPS_DOC = "https://keras.io/api/ops/core/#custom_gradient-function"
_KERNEL_3x2 = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]], np.float32)
_BIAS_2 = np.array([0.1, -0.2], np.float32)
_KERNEL_2x1 = np.array([[1.0], [-2.0]], np.float32)
_BATCH = {"x": np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]], np.float32)}

_SKIP = ({} if keras3() is not None else {mode: NEEDS_KERAS3 for mode in KNOWN_MODES})
# The tf_keras steps train tf_keras models; the keras3_* modes take these through Keras 3.
_TF_KERAS_STEPS = {mode: "a Keras 3 layer or model: the keras_* steps train tf_keras models, and "
                         "the keras3_* modes train this one" for mode in STEP_MODES}
_SKIPS = {**_TF_KERAS_STEPS, **_SKIP}
# What TensorFlow says when a custom gradient's forward read a variable its grad_fn cannot take.
_NEEDS_VARIABLES = ("tf.custom_gradient demands that grad_fn accept `variables` when the forward "
                    "read a variable ('grad_fn must accept keyword argument 'variables'', the "
                    "message of keras-team/keras#18139), and the grad signature Keras documents, "
                    "grad(*args, upstream=None), does not")
_AUTOCAST = ("https://github.com/keras-team/keras/blob/v3.15.1/keras/src/backend/common/"
             "variables.py (KerasVariable.value casts only inside an AutocastScope, which "
             "Layer.__call__ enters around call)")
# Why keras3_fit cannot judge a grad_fn that reads a trained weight in the backward pass.
_RACING_READ = ("grad_fn reads the kernel for the input's gradient in the backward pass, a read "
                "the compiled train function may run after the kernel's update (what the keras "
                "theme's twin reports as UpdateRace in keras_fit); the order check does not reach "
                "Keras 3's train function, and the version matrix saw it once, with Keras 3.9.0 "
                "on TensorFlow 2.18.1 (x's gradient -11.46 where eager gives -4.58), not in 12 "
                "repeats after: a value that changes from run to run judges nothing")
# Why a grad_fn reading a layer's weight fails under the mixed policy, in Keras 3 as in tf_keras.
_UNCAST_IN_GRAD_FN = ("under mixed_float16 grad_fn reads the layer's weight in the backward pass, "
                      "outside the layer's call, where Keras 3 does not cast a keras.Variable "
                      "(KerasVariable.value casts only inside the AutocastScope Layer.__call__ "
                      "enters): the float32 weight meets the float16 dy")


def _keras():
    keras = keras3()
    if keras is None:
        raise RuntimeError(NEEDS_KERAS3)
    return keras


def _layers():
    """The Keras 3 layer classes, made on first use (Keras 3 may be missing)."""
    keras = _keras()
    constant = keras.initializers.Constant

    class RoundSTE(keras.layers.Layer):
        """Rounds to quarters forward, passes the gradient straight through."""

        def call(self, x):
            @tf.custom_gradient
            def quantise(v):
                def grad(dy):
                    return dy

                return tf.round(v * 4.0) / 4.0, grad

            return quantise(x)

    class GradientReversal(keras.layers.Layer):
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

    class SoftplusDense(keras.layers.Layer):
        """softplus(x W + b) with the whole layer's gradient written by hand, weights included."""

        def __init__(self, kernel, bias, **kwargs):
            super().__init__(**kwargs)
            self._kernel_value = kernel
            self._bias_value = bias

        def build(self, input_shape):
            self.kernel = self.add_weight(name="kernel", shape=self._kernel_value.shape,
                                          initializer=constant(self._kernel_value))
            self.bias = self.add_weight(name="bias", shape=self._bias_value.shape,
                                        initializer=constant(self._bias_value))

        def call(self, x):
            kernel, bias = self.kernel, self.bias

            @tf.custom_gradient
            def layer(v):
                z = tf.matmul(v, kernel) + bias
                y = tf.maximum(z, 0.0) + tf.math.log1p(tf.exp(-tf.abs(z)))

                def grad(dy, variables=None):
                    dz = dy * tf.sigmoid(z)
                    # TensorFlow hands grad_fn the tf.Variables the forward read: each
                    # keras.Variable's own (its .value outside a layer's call).
                    by_ref = {kernel.value.ref(): tf.matmul(v, dz, transpose_a=True),
                              bias.value.ref(): tf.reduce_sum(dz, axis=0)}
                    return (tf.matmul(dz, kernel, transpose_b=True),
                            [by_ref[w.ref()] for w in variables])

                return y, grad

            return layer(x)

    class ScaledTanh(keras.layers.Layer):
        """scale * tanh(x) whose grad_fn reads the layer's scale weight in the backward pass."""

        def build(self, input_shape):
            self.scale = self.add_weight(name="scale", shape=(), initializer=constant(1.5),
                                         trainable=False)

        def call(self, x):
            @tf.custom_gradient
            def scaled_tanh(v):
                y = tf.tanh(v)

                def grad(dy):
                    # Read here, in the backward pass, outside the layer's call: no autocast.
                    return dy * self.scale * (1 - y * y)

                return self.scale * y, grad

            return scaled_tanh(x)

    class CustomMatmulDense(keras.layers.Layer):
        """keras-team/keras#18139 in Keras 3: a dense layer passing its kernel to a
        tf.custom_gradient matmul."""

        def build(self, input_shape):
            self.kernel = self.add_weight(name="kernel", shape=(3, 2),
                                          initializer=constant(_KERNEL_3x2))

        def call(self, x):
            @tf.custom_gradient
            def matmul(a, w):
                def grad(dy):
                    return tf.matmul(dy, w, transpose_b=True), tf.matmul(a, dy, transpose_a=True)

                return tf.matmul(a, w), grad

            return matmul(x, self.kernel)

    return {cls.__name__: cls for cls in (RoundSTE, GradientReversal, SoftplusDense, ScaledTanh,
                                           CustomMatmulDense)}


def _dense(kernel, bias=None, activation=None):
    keras = _keras()
    constant = keras.initializers.Constant
    if bias is None:
        return keras.layers.Dense(kernel.shape[1], activation=activation, use_bias=False,
                                  kernel_initializer=constant(kernel))
    return keras.layers.Dense(kernel.shape[1], activation=activation,
                              kernel_initializer=constant(kernel), bias_initializer=constant(bias))


def build_ste_model():
    keras = _keras()
    model = keras.Sequential([_dense(_KERNEL_3x2, _BIAS_2), _layers()["RoundSTE"](),
                              _dense(_KERNEL_2x1)])
    model.build((None, 3))
    return model


def build_reversal_model():
    keras = _keras()
    features = _dense(_KERNEL_3x2, _BIAS_2, activation="tanh")
    head = _dense(_KERNEL_2x1)
    inputs = keras.Input(shape=(3,))
    hidden = features(inputs)
    reversed_hidden = _layers()["GradientReversal"](0.5)(hidden)
    outputs = keras.layers.Concatenate()([head(hidden), head(reversed_hidden)])
    return keras.Model(inputs, outputs)


def build_softplus_dense():
    keras = _keras()
    model = keras.Sequential([_layers()["SoftplusDense"](_KERNEL_3x2, _BIAS_2),
                              _dense(_KERNEL_2x1)])
    model.build((None, 3))
    return model


def build_scaled_tanh():
    layer = _layers()["ScaledTanh"]()
    layer.build((3,))
    return layer


def build_custom_matmul_dense():
    layer = _layers()["CustomMatmulDense"]()
    layer.build((None, 3))
    return layer


def build_kernel_argument():
    """A Keras 3 dense layer passing its kernel, a keras.Variable, to keras.ops.custom_gradient."""
    keras = _keras()
    ops = keras.ops

    class KernelArgumentDense(keras.layers.Layer):
        def build(self, input_shape):
            self.kernel = self.add_weight(shape=_KERNEL_3x2.shape, name="kernel",
                                          initializer=keras.initializers.Constant(_KERNEL_3x2))

        def call(self, x):
            @ops.custom_gradient
            def matmul(a, w):
                def grad(*args, upstream=None):
                    if upstream is None:
                        (upstream,) = args
                    return (ops.matmul(upstream, ops.transpose(w)),
                            ops.matmul(ops.transpose(a), upstream))

                return ops.matmul(a, w), grad

            return matmul(x, self.kernel)

    layer = KernelArgumentDense()
    layer.build((None, 3))
    return layer


def build_weight_read_in_forward():
    """A Keras 3 layer whose keras.ops.custom_gradient reads its scale weight, with Keras's grad."""
    keras = _keras()
    ops = keras.ops

    class ScaledTanh(keras.layers.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight(shape=(), name="scale",
                                         initializer=keras.initializers.Constant(1.5))

        def call(self, x):
            @ops.custom_gradient
            def scaled_tanh(v):
                y = ops.tanh(v)

                def grad(*args, upstream=None):
                    if upstream is None:
                        (upstream,) = args
                    return upstream * self.scale * (1.0 - y * y)

                return self.scale * y, grad

            return scaled_tanh(x)

    layer = ScaledTanh()
    layer.build((3,))
    return layer


def build_torch_signature():
    """keras.ops.custom_gradient whose grad takes a required keyword `upstream`, as for PyTorch."""
    ops = _keras().ops

    @ops.custom_gradient
    def log1pexp(x):
        e = ops.exp(x)

        def grad(*args, upstream):
            return ops.multiply(upstream, 1.0 - 1.0 / ops.add(1.0, e))

        return ops.log(1.0 + e), grad

    return log1pexp


CASES = [
    Case(
        id="keras3.ste_in_sequential",
        build=build_ste_model,
        points=[_BATCH],
        wrt_variables=True,
        skip_modes=_SKIPS,
        source=f"{_DOCS} (pattern: a straight-through quantiser layer in keras.Sequential); the "
               "keras theme's keras.ste_in_sequential in Keras 3",
        description="Dense, a round-to-quarters straight-through layer, Dense, all Keras 3: "
                    "gradients w.r.t. the inputs and all three weights as if the rounding were the "
                    "identity",
        expectations=[
            Expectation(
                modes=["numeric"], outcome=SURROGATE,
                reason="a straight-through estimator by design: identity backward through round, "
                       "whose true derivative is 0 wherever it is defined",
            ),
        ],
    ),
    Case(
        id="keras3.gradient_reversal_functional",
        build=build_reversal_model,
        points=[_BATCH],
        wrt_variables=True,
        skip_modes=_SKIPS,
        tolerance={"float16": Tol(rtol=1e-2, atol=2e-3)},
        source=f"{_DOCS} (pattern: gradient reversal layer, Ganin & Lempitsky 2015, "
               "arXiv:1409.7495); the keras theme's keras.gradient_reversal_functional in Keras 3",
        description="a Keras 3 functional model whose shared head sees the features directly and "
                    "through a gradient reversal layer (factor 0.5)",
        expectations=[
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY + ": the layer's tf.identity gives +1 where grad_fn "
                       "reverses the sign",
            ),
            Expectation(
                modes=["numeric"], outcome=VALUES_DIFFER,
                reason="gradient reversal by design: -dy backward through an identity, whose true "
                       "derivative is 1",
            ),
        ],
    ),
    Case(
        id="keras3.custom_gradient_layer_weights",
        build=build_softplus_dense,
        points=[_BATCH],
        order=2,
        wrt_variables=True,
        skip_modes={"keras3_fit": _RACING_READ, **_SKIPS},
        source=f"{_DOCS} (a layer whose custom gradient covers its own weights through "
               "`variables`); the keras theme's keras.custom_gradient_layer_weights in Keras 3",
        description="a Keras 3 layer computing softplus(x W + b) with grad_fn(dy, variables) "
                    "giving the kernel and bias gradients, then Dense: orders 1 and 2 w.r.t. "
                    "inputs and weights",
        expectations=[
            *VARIABLE_IN_CONTROL_FLOW,
            Expectation(
                modes=["keras3_mixed"], outcome="TypeError",
                reason=f"grad_fn reads the kernel for the input's gradient: {_UNCAST_IN_GRAD_FN}, "
                       "as tf_keras's AutoCastVariable does in keras.custom_gradient_layer_weights",
            ),
        ],
    ),
    Case(
        id="keras3.grad_fn_reads_weight_without_autocast",
        build=build_scaled_tanh,
        points=[{"x": np.array([0.5, -1.0, 2.0], np.float32)}],
        skip_modes=_SKIPS,
        source="https://keras.io/api/mixed_precision/policy/ (mixed_float16: float32 variables "
               f"read as float16 in a layer's call); {_AUTOCAST}; the training theme's "
               "training.grad_fn_reads_weight_without_autocast in Keras 3",
        description="scale * tanh(x) whose grad_fn reads the layer's float32 scale weight (a "
                    "keras.Variable) in the backward pass, where Keras 3 does not autocast it",
        expectations=[
            *VARIABLE_IN_CONTROL_FLOW,
            Expectation(
                modes=["keras3_mixed"], outcome="TypeError",
                reason=f"the forward reads the scale through autocast (float16), and "
                       f"{_UNCAST_IN_GRAD_FN}: dy * scale is a TypeError ('Input 'y' of 'Mul' Op "
                       "has type float16 that does not match type float32')",
            ),
        ],
    ),
    Case(
        id="keras3.tracker_custom_matmul_mixed_precision",
        build=build_custom_matmul_dense,
        points=[{"x": np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]], np.float32)}],
        wrt_variables=True,
        skip_modes=_SKIPS,
        source="https://github.com/keras-team/keras/issues/18139 ('grad_fn must accept keyword "
               "argument variables' with a custom gradient in a layer under mixed precision); the "
               "training theme's training.tracker_custom_matmul_mixed_precision in Keras 3",
        description="a Keras 3 dense layer calling a tf.custom_gradient matmul with its kernel (a "
                    "keras.Variable) as an argument: gradients w.r.t. the inputs and the kernel. "
                    "Reported under mixed precision; in Keras 3 it fails eagerly in float32 too",
        expectations=[
            Expectation(
                modes=["eager", "forward", "keras3_eager"], outcome="TypeError",
                reason="eagerly, custom_gradient (_eager_mode_decorator) counts every variable the "
                       "forward read that is not one of its inputs, by identity: the input is the "
                       "keras.Variable, the variable read is the tf.Variable inside it, so it "
                       "demands that grad_fn accept `variables` ('grad_fn must accept keyword "
                       "argument 'variables'', the message of keras-team/keras#18139), and this "
                       "grad_fn does not. A traced call converts the arguments to tensors before "
                       "it watches the forward (_graph_mode_decorator) and computes the gradients, "
                       "under the mixed policy too",
            ),
        ],
    ),

    Case(
        id="keras3.kernel_argument",
        build=build_kernel_argument,
        points=[_BATCH],
        wrt_variables=True,
        skip_modes=_SKIPS,
        source="https://github.com/keras-team/keras/issues/21105 (a keras.Variable passed to a "
               "function with a custom gradient; keras-team/keras#22069 unwraps it for JAX only)",
        description="x @ W through keras.ops.custom_gradient with the kernel passed as an "
                    "argument: gradients dy @ W^T and x^T @ dy",
        expectations=[
            Expectation(
                modes=["eager", "forward", "keras3_eager"], outcome="TypeError",
                reason="eagerly, custom_gradient (_eager_mode_decorator) counts every variable the "
                       "forward read that is not one of the inputs by identity: the input is the "
                       "keras.Variable, the variable read is the tf.Variable inside it, so "
                       f"{_NEEDS_VARIABLES}. A traced call converts the arguments to tensors "
                       "before it watches the forward (_graph_mode_decorator) and computes the "
                       "gradients",
            ),
        ],
    ),
    Case(
        id="keras3.weight_read_in_forward",
        build=build_weight_read_in_forward,
        points=[{"x": np.array([0.5, -1.0, 2.0], np.float32)}],
        skip_modes=_SKIPS,
        source=f"{_OPS_DOC} (grad(*args, upstream=None), keras-team/keras#19302)",
        description="scale * tanh(x) through keras.ops.custom_gradient reading the layer's scale "
                    "weight, with the grad signature Keras documents",
        expectations=[
            Expectation(
                modes=["eager", "no_autograph", "function", "xla", "graph", "forward",
                       "saved_model"],
                outcome="TypeError",
                reason=f"the forward reads the layer's scale weight, and {_NEEDS_VARIABLES}",
            ),
            Expectation(
                modes=KERAS3_STEPS, outcome="RuntimeError",
                reason=f"{KERAS3_SYMBOLIC_BUILD}, and wraps in RuntimeError('Unable to "
                       "automatically build the model') the TypeError every other mode raises "
                       f"({_NEEDS_VARIABLES})",
            ),
        ],
    ),
    Case(
        id="keras3.torch_signature",
        build=build_torch_signature,
        points=[{"x": np.float32(0.5)}],
        skip_modes=_SKIP,
        source=f"{_OPS_DOC} (with PyTorch grad needs *args and upstream; keras-team/keras#19302)",
        description="log(1 + e^x) through keras.ops.custom_gradient whose grad takes upstream as a "
                    "required keyword, as written for the PyTorch backend",
        expectations=[
            Expectation(
                modes=[m for m in KNOWN_MODES if m not in ("saved_model", "saved_model_nocg")],
                outcome="TypeError",
                reason="on the TensorFlow backend keras.ops.custom_gradient is tf.custom_gradient, "
                       "which calls grad with the upstream gradient by position: 'grad() missing 1 "
                       "required keyword-only argument: 'upstream''",
            ),
            Expectation(
                modes=["saved_model"], outcome="ValueError",
                reason="saving traces the gradient functions (experimental_custom_gradients=True), "
                       "which calls grad the same way and fails: 'Error when tracing gradients for "
                       "SavedModel'",
            ),
        ],
    ),
]
