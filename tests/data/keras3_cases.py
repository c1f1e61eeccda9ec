"""Custom gradients written for Keras 3 (`keras.ops.custom_gradient`, Keras 3 layers' variables).

On the TensorFlow backend `keras.ops.custom_gradient(f)` is `tf.custom_gradient(f=f)`: TensorFlow
calls its grad with the upstream gradient by position and hands it `variables=` when the forward
read a variable, while Keras documents `grad(*args, upstream=None)` for every backend. A Keras 3
layer's weight is a keras.Variable wrapping a tf.Variable. Each case here was checked on
TensorFlow 2.21 with Keras 3.15.1 and runs only there (Keras 3's custom_gradient and variables
changed between its releases); the builders make their layers when a mode runs them, so the
module loads where Keras 3 is missing. A case file (`--case_file tests/data/keras3_cases.py`),
not a library theme: every library point is in the version matrix over every release, and these
have been run on 2.21 alone.
"""

import numpy as np

from harness import Case, Expectation
from harness.modes import KNOWN_MODES, STEP_MODES

_OPS_DOC = "https://keras.io/api/ops/core/#custom_gradient-function"
_CHECKED = ">=2.21"
# The tf_keras steps train tf_keras models; the keras3_* modes take these layers through Keras 3.
_TF_KERAS_STEPS = {mode: "a Keras 3 layer: the keras_* steps train tf_keras models, and the "
                         "keras3_* modes take it through Keras 3" for mode in STEP_MODES}
_KERNEL = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]], np.float32)
_BATCH = {"x": np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]], np.float32)}
_KERAS3_STEPS = [m for m in KNOWN_MODES if m.startswith("keras3_")]
# What TensorFlow says when a custom gradient's forward read a variable its grad_fn cannot take.
_NEEDS_VARIABLES = ("tf.custom_gradient demands that grad_fn accept `variables` when the forward "
                    "read a variable ('grad_fn must accept keyword argument 'variables'', the "
                    "message of keras-team/keras#18139), and the grad signature Keras documents, "
                    "grad(*args, upstream=None), does not")
# Keras 3's fit builds an unbuilt model from a symbolic batch before its first step.
_SYMBOLIC_BUILD = ("Keras 3's fit first builds the model from a symbolic batch "
                   "(Trainer._symbolic_build), which runs call and raises RuntimeError('Unable to "
                   "automatically build the model') for any error but a ValueError")


def _keras():
    import keras  # noqa: PLC0415 - Keras 3 only where a case runs (tf_versions)

    return keras


def build_kernel_argument():
    """A Keras 3 dense layer passing its kernel, a keras.Variable, to keras.ops.custom_gradient."""
    keras = _keras()
    ops = keras.ops

    class KernelArgumentDense(keras.layers.Layer):
        def build(self, input_shape):
            self.kernel = self.add_weight(shape=_KERNEL.shape, name="kernel",
                                          initializer=keras.initializers.Constant(_KERNEL))

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
        id="keras3.kernel_argument",
        build=build_kernel_argument,
        points=[_BATCH],
        wrt_variables=True,
        tf_versions=_CHECKED,
        skip_modes=_TF_KERAS_STEPS,
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
        tf_versions=_CHECKED,
        skip_modes=_TF_KERAS_STEPS,
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
                modes=_KERAS3_STEPS, outcome="RuntimeError",
                reason=f"{_SYMBOLIC_BUILD}: here the TypeError of every other mode "
                       f"({_NEEDS_VARIABLES})",
            ),
        ],
    ),
    Case(
        id="keras3.torch_signature",
        build=build_torch_signature,
        points=[{"x": np.float32(0.5)}],
        tf_versions=_CHECKED,
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
