"""The library API inside a user's own suite: docs/your-tests-and-ci.md's absltest and pytest
examples.

Both styles are real tests here; the page shows the same code.
"""

import numpy as np
import pytest
import tensorflow as tf

import harness


@tf.custom_gradient
def log1pexp(x):
    e = tf.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))

    return tf.math.log(1 + e), grad


def traced_differently(x):
    return x * (2.0 if tf.executing_eagerly() else 3.0)


class Log1pexpTest(tf.test.TestCase):
    """The absltest style: a tf.test.TestCase method calling assert_consistent."""

    def test_agrees_in_every_mode(self):
        results = harness.assert_consistent(log1pexp, [0.0, 100.0])
        # d/dx log(1 + e^x) = sigmoid(x): 0.5 at 0 and 1 at 100 (float32).
        self.assertAllClose([r.outcomes["graph"].orders[1][0].value for r in results], [0.5, 1.0])

    def test_disagreement_raises_assertion_error_with_the_explanation(self):
        with self.assertRaisesRegex(AssertionError, r"function vs eager.*function=3 eager=2"):
            harness.assert_consistent(traced_differently, [1.0])


def test_pytest_style_check_returns_one_verdict_per_point():
    results = harness.check(log1pexp, [0.0, 100.0])
    assert [r.verdict for r in results] == [harness.Verdict.PASS, harness.Verdict.PASS]
    assert (
        results[1].reason
        == "all modes agree, and match the numeric derivative, with and without upstream weights"
        "; the gradient is linear in its upstream gradient dy"
    )


def test_the_stable_gradient_has_an_unstable_second_derivative():
    # Autodiff of grad's 1 - 1/(1 + e) at x = 100: e = exp(100) is inf in float32, and the
    # derivative e/(1 + e)**2 is inf/inf = NaN, where the true one, sigmoid'(100), is about 4e-44.
    # Every mode agrees on the NaN; only the numeric oracle can tell.
    results = harness.check(log1pexp, [0.0, 100.0], order=2)
    assert [r.verdict for r in results] == [harness.Verdict.PASS, harness.Verdict.FAIL]
    # Second derivative sigmoid(x)(1 - sigmoid(x)): 0.25 at 0.
    assert float(results[0].outcomes["eager"].orders[2][0].value) == pytest.approx(0.25)
    assert np.isnan(results[1].outcomes["graph"].orders[2][0].value)
    assert results[1].oracles["numeric"].differ == (2,)
    assert "eager=nan numeric=0" in results[1].reason


def test_two_argument_inputs_are_tuples_and_numpy_values_keep_their_dtype():
    [result] = harness.check(lambda x, y: x * y, [(np.float64(3.0), np.float64(4.0))],
                             modes=["eager", "graph"])
    assert result.verdict is harness.Verdict.PASS
    assert [o.dtype for o in result.outcomes["graph"].orders[1]] == ["float64", "float64"]
    assert [float(o.value) for o in result.outcomes["graph"].orders[1]] == [4.0, 3.0]
