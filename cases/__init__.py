"""The built-in case library, installed as harness.cases.

Each module is one theme and defines CASES, a list of harness.Case; a case id
starts with its module's name (seeds.log1pexp2 lives in seeds.py).

An expectation holds on every release of the pin table (harness/matrix/pins.py,
2.12.1 to 2.21.0) unless it says otherwise: a tf_versions range appears only
where the version matrix over all of them (docs/matrix.md, `python
scripts/matrix.py --versions all`) shows a behaviour that depends on the release.
"""

from harness import Expectation

# The one reason behind most forward-mode deviations, shared by the themes.
FORWARD_USES_THE_BODY = (
    "forward mode differentiates the body, not grad_fn: _eager_mode_decorator runs the body while "
    "the ForwardAccumulator records, so the output already has the body's JVP, and "
    "ForwardAccumulator::Accumulate (tape.h) keeps a tensor's first JVP and drops the one "
    "ForwardpropFromTape transposes from grad_fn"
)

# Why a SavedModel loses a custom gradient's own custom gradient (checked by
# saving a nested one and loading it in a fresh process: order 1 alone works).
SAVED_MODEL_DROPS_INNER = (
    "save.py's _trace_gradient_functions traces the exported functions' gradients once, so a "
    "custom gradient inside a traced gradient function is never saved (loading warns 'with ops "
    "with unsaved custom gradients', function_deserialization._fix_fdef_in_place); under a second "
    "tape the loaded function builds its higher-order backward at once and finds no gradient for "
    "the inner IdentityN"
)

# Why a compiled training step reports UpdateRace (harness.measure.modes._step_order); each case
# says which read it is.
UPDATE_RACE = (
    "fit's train function orders the read before the variable's update as traced, but Grappler's "
    "dependency optimizer drops that order when it rewrites the function (a transitive reduction "
    "through a multi-input IdentityN it then bypasses), so the step takes its gradients with the "
    "variable from before or after the update as the executor schedules them: tf_keras's own "
    "behaviour (plain fit differentiated a tf.recompute_grad layer with its updated variable in "
    "2 of 250 fresh models here, 0 of 150 with the dependency optimizer off)"
)
# The training-step modes in which the library's racing cases race: the check finds these reads
# still ordered in keras_mirrored's step (its gradients pass the strategy's all-reduce) and
# keras_xla compiles the step, so only the default train function is left.
RACING_STEPS = ["keras_fit"]

# The Keras 3 training steps (harness.measure.modes.keras3_step).
KERAS3_STEPS = ["keras3_eager", "keras3_fit", "keras3_xla", "keras3_mixed", "keras3_mirrored"]
# Why a Keras 3 step meets what a traced call meets, even under run_eagerly=True.
KERAS3_SYMBOLIC_BUILD = (
    "Keras 3's fit first builds the model from a symbolic batch (Trainer._symbolic_build), running "
    "call in a graph without AutoGraph, even under run_eagerly=True"
)

# The contexts (harness.mode_names.CONTEXTS) whose order 1 is a jacobian's rows contracted with
# ones, as the plain gradient's upstream gradient is: each row's upstream gradient is one-hot, so
# a grad_fn that is not linear in dy gives another sum there.
JACOBIANS = ["jacobian_eager", "jacobian_function", "jacobian_loop_eager", "jacobian_loop_function",
             "batch_jacobian_eager", "batch_jacobian_function", "batch_jacobian_loop_eager",
             "batch_jacobian_loop_function"]
# batch_jacobian differentiates batched inputs only: a case with variables has the other four.
JACOBIANS_OF_VARIABLES = JACOBIANS[:4]
# The jacobians without pfor, which loop over the rows.
LOOP_JACOBIANS = ["jacobian_loop_eager", "jacobian_loop_function", "batch_jacobian_loop_eager",
                  "batch_jacobian_loop_function"]
# Why those raise where an output's dtype is not its input's (measured on 2.21.0).
LOOP_JACOBIAN_DTYPE = (
    "without pfor GradientTape.jacobian and batch_jacobian collect the rows with for_loop, whose "
    "output dtypes they give as the target's (tensorflow/python/eager/backprop.py: "
    "[target.dtype] * len(flat_sources), and target.dtype), so a row of another dtype, the "
    "gradient of an input whose dtype is not the output's, cannot be written: 'TensorArray dtype "
    "is float32 but Op is trying to write dtype ...'"
)

# tensorflow#50170 where a grad_fn reads a variable (measured over every release: inside tf.cond and
# a loop under tf.function only; eager, a v1 graph, the jacobians, vectorized_map and recompute_grad
# compute). 2.12 raises it as a TypeError of its own in all three.
VARIABLE_IN_CONTROL_FLOW = [
    Expectation(
        modes=["cond_function", "while_loop_function", "map_fn_function"], outcome="TypeError",
        tf_versions="<2.13",
        reason="tensorflow#50170 as 2.12 raises it: grad_fn reads a tf.Variable, and inside a "
               "tf.cond branch or a loop body under tf.function the gradient graph cannot "
               "capture the variable's eager handle: '_CondGradFuncGraph._capture_helper() takes "
               "3 positional arguments but 4 were given' (_WhileBodyGradFuncGraph's in a loop)",
    ),
    Expectation(
        modes=["cond_function"], outcome="AttributeError", tf_versions=">=2.13",
        reason="tensorflow#50170: grad_fn reads a tf.Variable, and inside a tf.cond branch "
               "under tf.function the gradient raises 'Tensor.graph is undefined when eager "
               "execution is enabled', where the plain call under tf.function computes it",
    ),
    Expectation(
        modes=["while_loop_function", "map_fn_function"], outcome="ValueError",
        tf_versions=">=2.13",
        reason="tensorflow#50170 in a loop body: grad_fn reads a tf.Variable, and inside a "
               "tf.while_loop (tf.map_fn's too) under tf.function the gradient raises "
               "ValueError: the variable's handle 'is in list of internal_captures but not in "
               "internal_capture_to_output', where the plain call under tf.function computes "
               "it",
    ),
]
