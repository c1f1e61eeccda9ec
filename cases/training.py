"""Custom gradients that break only inside a Keras training step (the keras_* modes).

Each case is fine on nested tapes, in tf.function and in a v1 graph, and goes wrong where
model.fit takes it: under the mixed_float16 policy (autocast), under MirroredStrategy, or in
the compiled train function, which runs the Python code of a grad_fn once, while tracing.
Builders make their tf_keras layers from NumPy constants, as in cases/keras.py; without
tf_keras every mode skips them, saying why.
"""

import numpy as np
import tensorflow as tf

from harness import VALUES_DIFFER, Case, Expectation
from harness.cases import FORWARD_USES_THE_BODY, JACOBIANS_OF_VARIABLES, VARIABLE_IN_CONTROL_FLOW

# The keras theme's Keras 2 and its skips where there is none: the same for both themes.
from harness.cases.keras import SKIP_WITHOUT_KERAS2 as _SKIP
from harness.cases.keras import Layer as _Layer
from harness.cases.keras import tf_keras

_COMPILED_STEPS = ["keras_fit", "keras_xla", "keras_mixed", "keras_mirrored"]
_AUTOCAST = ("https://github.com/keras-team/tf-keras/blob/v2.21.0/"
             "tf_keras/src/mixed_precision/autocast_variable.py")


class ScaledTanh(_Layer):
    """scale * tanh(x) with a hand-written gradient that reads the layer's scale weight in
    grad_fn."""

    def build(self, input_shape):
        self.scale = self.add_weight("scale", shape=(),
                                     initializer=tf_keras.initializers.Constant(1.5),
                                     trainable=False)
        super().build(input_shape)

    def call(self, x):
        @tf.custom_gradient
        def scaled_tanh(v):
            y = tf.tanh(v)

            def grad(dy):
                # Read here, in the backward pass, outside the layer's call: no autocast.
                return dy * self.scale * (1 - y * y)

            return self.scale * y, grad

        return scaled_tanh(x)


def build_scaled_tanh():
    layer = ScaledTanh()
    layer.build((3,))
    return layer


class CustomMatmulDense(_Layer):
    """keras-team/tf-keras#197 (also keras-team/keras#18139): a dense layer whose call passes its
    kernel to a tf.custom_gradient matmul; fine in float32, broken by the mixed_float16 policy."""

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", shape=(3, 2),
                                      initializer=tf_keras.initializers.Constant(
            np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]], np.float32)))
        super().build(input_shape)

    def call(self, x):
        @tf.custom_gradient
        def matmul(a, w):
            def grad(dy):
                return tf.matmul(dy, w, transpose_b=True), tf.matmul(a, dy, transpose_a=True)

            return tf.matmul(a, w), grad

        return matmul(x, self.kernel)


def build_custom_matmul_dense():
    layer = CustomMatmulDense()
    layer.build((None, 3))
    return layer


class ClippedVariableGradient(_Layer):
    """x * w whose grad_fn(dy, variables) clips the weight's gradient to norm 1; w is read once,
    in the forward, so the float16 read of the policy reaches grad_fn too."""

    def build(self, input_shape):
        self.w = self.add_weight("w", shape=(2,),
                                 initializer=tf_keras.initializers.Constant([2.0, -1.0]))
        super().build(input_shape)

    def call(self, x):
        @tf.custom_gradient
        def scaled(v):
            # read once, in the forward (autocast under the policy)
            w = tf.convert_to_tensor(self.w)

            def grad(dy, variables=None):
                clipped = tf.clip_by_norm(tf.cast(dy * v, variables[0].dtype), 1.0)
                return dy * w, [clipped]

            return v * w, grad

        return scaled(x)


def build_clipped_variable_gradient():
    layer = ClippedVariableGradient()
    layer.build((2,))
    return layer


class WarmupReversal(_Layer):
    """Gradient reversal whose factor warms up with the number of backward passes, counted in
    Python."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.backward_passes = 0

    def call(self, x):
        @tf.custom_gradient
        def reverse(v):
            def grad(dy):
                self.backward_passes += 1  # a Python side effect: once per trace in a compiled step
                return -min(1.0, 0.25 * self.backward_passes) * dy

            return tf.identity(v), grad

        return reverse(x)


def build_warmup_reversal():
    return WarmupReversal()


CASES = [
    Case(
        id="training.grad_fn_reads_weight_without_autocast",
        build=build_scaled_tanh,
        points=[{"x": np.array([0.5, -1.0, 2.0], np.float32)}],
        skip_modes=_SKIP,
        source="https://www.tensorflow.org/api_docs/python/tf/keras/mixed_precision/Policy "
               f"(mixed_float16: float32 variables read as float16 in a layer's call); {_AUTOCAST} "
               "(AutoCastVariable casts a read only inside enable_auto_cast_variables, which "
               "Layer.__call__ enters around call; grad_fn runs later)",
        description="scale * tanh(x) whose grad_fn reads the layer's float32 scale weight: under "
                    "mixed_float16 dy arrives in float16 and meets the uncast float32 weight",
        expectations=[
            *VARIABLE_IN_CONTROL_FLOW,
            Expectation(
                modes=["keras_mixed"], outcome="TypeError",
                reason="under mixed_float16 the forward reads the scale through autocast (float16) "
                       "but grad_fn reads it in the backward pass, outside the layer's call, where "
                       "the AutoCastVariable gives its float32 value: dy (float16) * scale "
                       "(float32) is a TypeError",
            ),
        ],
    ),
    Case(
        id="training.tracker_custom_matmul_mixed_precision",
        build=build_custom_matmul_dense,
        points=[{"x": np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]], np.float32)}],
        wrt_variables=True,
        skip_modes=_SKIP,
        source="https://github.com/keras-team/tf-keras/issues/197 (also keras-team/keras#18139): "
               "'tf.keras.mixed_precision causes error when using tf.custom_gradient'",
        description="a dense layer calling a tf.custom_gradient matmul with its kernel as an "
                    "argument: gradients w.r.t. the inputs and the kernel. Reported on TensorFlow "
                    "2.12 (eager, under mixed_float16) as 'grad_fn must accept keyword argument "
                    "variables'; on 2.21 every mode, keras_mixed included, computes them, and the "
                    "case guards that",
    ),
    Case(
        id="training.grad_fn_clips_variable_gradient",
        build=build_clipped_variable_gradient,
        points=[{"x": np.array([1.0, 3.0], np.float32)}],
        wrt_variables=True,
        skip_modes=_SKIP,
        source="https://www.tensorflow.org/api_docs/python/tf/distribute/MirroredStrategy (the "
               "loss divided by the global batch, the gradients summed over replicas: tf_keras "
               "optimizer.py aggregate_gradients, all_reduce_sum_gradients); pattern: per-layer "
               "gradient clipping in grad_fn(dy, variables)",
        description="x * w with grad_fn(dy, variables) clipping the weight's gradient x * dy to "
                    "norm 1: gradients [2, -1] w.r.t. x and [1, 3] / sqrt(10) w.r.t. w",
        expectations=[
            Expectation(
                modes=JACOBIANS_OF_VARIABLES, outcome=VALUES_DIFFER,
                reason="grad_fn clips the weight's gradient x * dy to norm 1, which is not linear "
                       "in dy: a jacobian's rows clip each one-hot dy's x_i e_i on its own, so the"
                       " rows contracted give [1, 1] where tape.gradient gives [1, 3] / sqrt(10)",
            ),
            Expectation(
                modes=["numeric", "upstream", "linearity"], outcome=VALUES_DIFFER,
                reason="gradient clipping by design, non-linear in dy as clipping is",
            ),
            Expectation(
                modes=["keras_mirrored"], outcome=VALUES_DIFFER,
                reason="under MirroredStrategy each replica's grad_fn receives its share of dy "
                       "(Keras divides the loss by the global batch) and clips its own share to "
                       "norm 1, and the optimizer then sums the replicas' gradients: the weight's "
                       "gradient has norm 2, one per replica, instead of 1",
            ),
            Expectation(
                modes=["keras_mixed"], outcome=VALUES_DIFFER,
                reason="under mixed_float16 the LossScaleOptimizer differentiates the loss times "
                       "its loss scale (get_scaled_loss), so grad_fn clips the scaled gradient to "
                       "norm 1 and the optimizer divides it by the scale afterwards: norm 2**-14 "
                       "here, the first step at 2**15 having been skipped (x's gradient 2**15 * w "
                       "= 65536 overflows float16, whose largest is 65504)",
            ),
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY
                + ": the body x * w gives w's gradient x = [1, 3], unclipped",
            ),
        ],
    ),
    Case(
        id="training.python_side_effect_in_grad_fn",
        build=build_warmup_reversal,
        points=[{"x": np.array([0.5, -2.0], np.float32)}],
        skip_modes={"saved_model": "the SavedModel keeps grad_fn as traced once when saving and "
                                   "the loaded function runs no Python, so the side effect this "
                                   "case counts cannot run there (its weighted chain keeps the "
                                   "first pass's factor 0.25, a difference in the weighted chain "
                                   "alone, which no expectation can declare)",
                    **_SKIP},
        source="https://www.tensorflow.org/api_docs/python/tf/function (Python side effects run "
               "when a function is traced, not on every call); pattern: a gradient reversal layer "
               "whose factor follows a schedule kept in a Python attribute",
        description="gradient reversal whose factor (0.25 per backward pass, up to 1) is counted "
                    "in a Python attribute by grad_fn: every step eagerly, once per trace in a "
                    "compiled train function",
        expectations=[
            Expectation(
                modes=["jacobian_loop_eager", "batch_jacobian_loop_eager"], outcome=VALUES_DIFFER,
                reason="the factor grows by 0.25 at every pass of grad_fn's Python code: without "
                       "pfor, an eager jacobian runs grad_fn once per row, so the second row takes"
                       " -0.5 where tape.gradient's one pass takes -0.25 (with pfor, or under "
                       "tf.function, grad_fn's Python runs once, when traced)",
            ),
            Expectation(
                modes=["numeric", "upstream"], outcome=VALUES_DIFFER,
                reason="gradient reversal by design: a negative factor times dy through an "
                       "identity, whose true derivative is 1",
            ),
            Expectation(
                modes=["linearity"], outcome=VALUES_DIFFER,
                reason="the factor grows by 0.25 at every backward pass that runs grad_fn's Python "
                       "code, so the linearity chain, the third pass, scales dy by -0.75 where "
                       "the plain and weighted chains scaled it by -0.25 and -0.5: a gradient "
                       "that depends on how often it ran, not on dy alone",
            ),
            Expectation(
                modes=_COMPILED_STEPS, outcome=VALUES_DIFFER,
                reason="a compiled train function runs grad_fn's Python code only while tracing: "
                       "twice on its first call (tf.function traces again once the first trace has "
                       "created the optimizer's variables) and once per replica in each trace "
                       "under MirroredStrategy, never again; so its counter stands still at 2 (4 "
                       "under the strategy) where eager code, keras_eager included, counts every "
                       "backward pass (0.25 for the plain chain, 0.5 for the weighted one)",
            ),
            Expectation(
                modes=["forward"], outcome=VALUES_DIFFER,
                reason=FORWARD_USES_THE_BODY
                + ": the body's tf.identity gives +1 where grad_fn reverses the sign",
            ),

        ],
    ),
]
