"""keras.ops.custom_gradient as a case's custom gradient, under both of Keras 3's grad signatures.

On the TensorFlow backend `keras.ops.custom_gradient(f)` is `tf.custom_gradient(f=f)`, looked up
when it decorates: the probe installed before it (as a worker installs it) observes the function,
and TensorFlow calls its grad with the upstream gradient as a positional argument.
"""

import numpy as np
import pytest

from harness import probe
from tests import helpers

keras = pytest.importorskip("keras", minversion="3")
probe.install()  # as in a worker: the custom gradients below are then observed

# d/dx log(1 + e^x) is the logistic function: at 0.5, 1 / (1 + e^-0.5).
_LOGISTIC_AT_HALF = 1.0 / (1.0 + np.exp(-0.5))


@keras.ops.custom_gradient
def log1pexp_keyword(x):
    """Keras 3's documented signature: grad(*args, upstream=None), upstream given by position here."""
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
