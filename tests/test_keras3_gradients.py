"""keras.ops.custom_gradient as a case's custom gradient, under both of Keras 3's grad signatures.

On the TensorFlow backend `keras.ops.custom_gradient(f)` is `tf.custom_gradient(f=f)`, looked up
when it decorates: the probe installed before it (as a worker installs it) observes the function,
and TensorFlow calls its grad with the upstream gradient as a positional argument.
"""

import numpy as np
import pytest

from harness.measure import probe
from tests import helpers

keras = pytest.importorskip("keras", minversion="3")
probe.install()  # as in a worker: the custom gradients below are then observed

# d/dx log(1 + e^x) is the logistic function: at 0.5, 1 / (1 + e^-0.5).
_LOGISTIC_AT_HALF = 1.0 / (1.0 + np.exp(-0.5))


@keras.ops.custom_gradient
def log1pexp_keyword(x):
    """Keras 3's documented signature: grad(*args, upstream=None), given upstream by position."""
    e = keras.ops.exp(x)

    def grad(*args, upstream=None):
        if upstream is None:
            (upstream,) = args
        return keras.ops.multiply(upstream, 1.0 - 1.0 / keras.ops.add(1.0, e))

    return keras.ops.log(1.0 + e), grad


@keras.ops.custom_gradient
def log1pexp_positional(x):
    """The TensorFlow and JAX signature: grad(upstream)."""
    e = keras.ops.exp(x)

    def grad(upstream):
        return keras.ops.multiply(upstream, 1.0 - 1.0 / keras.ops.add(1.0, e))

    return keras.ops.log(1.0 + e), grad


def _judged(fn, name):
    result, = helpers.run(helpers.make_case(fn=fn, points=[{"x": np.float32(0.5)}], id=f"t.{name}"))
    assert result.verdict.value == "pass", result.reason
    for mode in helpers.CORE_MODES:
        outcome = result.outcomes[mode]
        assert outcome.usage.ran == (name,) and outcome.usage.unused == (), (mode, outcome.usage)
        np.testing.assert_allclose(outcome.orders[1][0].value, _LOGISTIC_AT_HALF, rtol=1e-6)


def test_the_probe_sees_a_keras_custom_gradient_whose_grad_takes_upstream_as_a_keyword():
    _judged(log1pexp_keyword, "log1pexp_keyword")


def test_the_probe_sees_a_keras_custom_gradient_whose_grad_takes_upstream_by_position():
    _judged(log1pexp_positional, "log1pexp_positional")


# -- Keras 3 bug classes (the library's cases/keras3.py) in the Keras 3 training steps -----------

@pytest.fixture(scope="module")
def keras3_cases():
    from harness.cases import keras3 as theme

    return {c.id: c for c in theme.CASES}


def _message(outcome):
    return outcome.error.type + ": " + outcome.error.message


def test_a_keras_variable_passed_to_a_custom_gradient_fails_eagerly_trains_traced(keras3_cases):
    modes = ("eager", "function", "keras3_eager", "keras3_fit")
    result, = helpers.run(keras3_cases["keras3.kernel_argument"], modes)
    assert result.verdict.value == "xfail", result.reason
    for mode in ("eager", "keras3_eager"):
        assert "must accept keyword argument 'variables'" in _message(result.outcomes[mode]), mode
    kernel = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]])
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])
    # x @ W under the plain contraction (upstream ones): x's gradient ones @ W^T, W's x^T @ ones.
    for mode in ("function", "keras3_fit"):
        x_grad, kernel_grad = (o.value for o in result.outcomes[mode].orders[1])
        np.testing.assert_allclose(x_grad, np.ones((2, 2)) @ kernel.T, rtol=1e-6)
        np.testing.assert_allclose(kernel_grad, x.T @ np.ones((2, 2)), rtol=1e-6)


def test_a_keras_custom_gradient_reading_a_weight_with_keras_documented_grad_fails(keras3_cases):
    modes = ("eager", "graph", "keras3_fit")
    result, = helpers.run(keras3_cases["keras3.weight_read_in_forward"], modes)
    assert result.verdict.value == "xfail", result.reason
    for mode in ("eager", "graph"):
        assert "must accept keyword argument 'variables'" in _message(result.outcomes[mode]), mode
    fit = _message(result.outcomes["keras3_fit"])
    assert fit.startswith("RuntimeError: Unable to automatically build the model")
    assert "must accept keyword argument 'variables'" in fit


def test_a_keras_custom_gradient_written_for_torch_fails_in_every_step(keras3_cases):
    modes = ("eager", "keras_fit", "keras3_eager", "keras3_fit", "keras3_xla")
    result, = helpers.run(keras3_cases["keras3.torch_signature"], modes)
    assert result.verdict.value == "xfail", result.reason
    for mode in modes:
        outcome = result.outcomes[mode]
        assert "missing 1 required keyword-only argument: 'upstream'" in _message(outcome), mode
        assert outcome.error.stage.startswith("order 1"), mode


# -- the library's Keras 3 twins of the keras and training themes ----------------------------------

def test_keras_18139_comes_back_in_keras3_eagerly_in_float32(keras3_cases):
    """A kernel (a keras.Variable) passed to a tf.custom_gradient: eagerly the tf.Variable inside
    it is a variable read that is not an input, so TensorFlow wants grad_fn(..., variables)."""
    modes = ("eager", "function", "keras3_eager", "keras3_fit", "keras3_mixed")
    result, = helpers.run(keras3_cases["keras3.tracker_custom_matmul_mixed_precision"], modes)
    assert result.verdict.value == "xfail", result.reason
    for mode in ("eager", "keras3_eager"):
        assert "must accept keyword argument 'variables'" in _message(result.outcomes[mode]), mode
    kernel = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]])
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])
    for mode in ("function", "keras3_fit", "keras3_mixed"):
        x_grad, kernel_grad = (o.value for o in result.outcomes[mode].orders[1])
        np.testing.assert_allclose(x_grad, np.ones((2, 2)) @ kernel.T, rtol=1e-2)
        np.testing.assert_allclose(kernel_grad, x.T @ np.ones((2, 2)), rtol=1e-2)


def test_a_grad_fn_reading_a_keras_variable_fails_only_under_the_mixed_policy(keras3_cases):
    modes = ("eager", "keras3_fit", "keras3_mixed")
    result, = helpers.run(keras3_cases["keras3.grad_fn_reads_weight_without_autocast"], modes)
    assert result.verdict.value == "xfail", result.reason
    mixed = result.outcomes["keras3_mixed"]
    assert mixed.error.type == "TypeError" and "float16" in mixed.error.message, _message(mixed)
    x = np.array([0.5, -1.0, 2.0])
    # d/dx 1.5 tanh(x) = 1.5 (1 - tanh(x)^2), under the plain contraction.
    np.testing.assert_allclose(result.outcomes["keras3_fit"].orders[1][0].value,
                               1.5 * (1 - np.tanh(x) ** 2), rtol=1e-5)
    # The numeric oracle differences the layer in float32, the dtype Keras 3 computes it in.
    assert result.oracles["numeric"].status == "match", result.oracles["numeric"]


def test_a_tf_keras_layer_is_not_trained_by_the_keras3_steps_and_they_say_why():
    from harness.cases import training

    case, = [c for c in training.CASES if c.id == "training.python_side_effect_in_grad_fn"]
    result, = helpers.run(case, ("eager", "keras3_fit"))
    outcome = result.outcomes["keras3_fit"]
    assert outcome.status.value == "skip", outcome
    assert outcome.note == ("the builder returns WarmupReversal, a tf_keras layer: Keras 3 models "
                            "take Keras 3 layers, not Keras 2 ones; the keras_* modes train it")


def test_the_matrix_knows_the_skip_for_want_of_keras3_by_its_opening_words():
    from harness.matrix.merge import NO_KERAS3_NOTE
    from harness.measure.modes.keras3_step import NEEDS_KERAS3

    assert NEEDS_KERAS3.startswith(NO_KERAS3_NOTE)


def test_keras3_mirrored_refuses_a_keras_that_does_not_scale_the_loss_by_the_replicas():
    from types import SimpleNamespace

    from harness.measure.modes import keras3_step

    mirrored, fit = keras3_step.runner_for("keras3_mirrored"), keras3_step.runner_for("keras3_fit")
    said = keras3_step._refuses(SimpleNamespace(__version__="3.6.0"), mirrored)
    assert keras3_step._refuses(SimpleNamespace(__version__="3.7rc1"), mirrored)
    assert keras3_step._refuses(SimpleNamespace(__version__="3.10.0"), mirrored) == ""
    assert said.startswith("Keras 3.6.0 does not divide the loss by the replicas under "
                           "MirroredStrategy (keras-team/keras#19891, fixed in Keras 3.8.0 by "
                           "#20609)"), said
    assert keras3_step._refuses(SimpleNamespace(__version__="3.8.0"), mirrored) == ""
    assert keras3_step._refuses(SimpleNamespace(__version__="3.15.1"), mirrored) == ""
    assert keras3_step._refuses(SimpleNamespace(__version__="3.6.0"), fit) == ""
