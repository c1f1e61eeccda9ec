"""A gradient that is None by design: a function that differentiates some of its arguments only
returns None for the others, as documented; where the case did not name what to differentiate,
that None is said, not failed, and the arguments it does differentiate are judged as usual."""

import numpy as np
import tensorflow as tf

from harness.records import Verdict
from harness.report.text import line
from tests import helpers


@tf.custom_gradient
def power_of(x, n):
    """x ** n in x only: d/dx = n x**(n-1); the gradient for n is None by design."""
    def grad(dy):
        return dy * n * tf.pow(x, n - 1.0), None
    return tf.pow(x, n), grad


@tf.custom_gradient
def wrong_power_of(x, n):
    """Half of x's gradient: its None for n must not hide that."""
    def grad(dy):
        return 0.5 * dy * n * tf.pow(x, n - 1.0), None
    return tf.pow(x, n), grad


POINT = [{"x": np.float32(2.0), "n": np.float32(3.0)}]


def test_a_none_for_an_argument_the_case_did_not_name_is_said_and_the_others_are_judged():
    [result] = helpers.run(helpers.make_case(fn=power_of, points=POINT))
    assert result.verdict is Verdict.PASS and result.oracles["numeric"].status == "match"
    said = ("no gradient for n (the function returns None): not judged, the function "
            "differentiating only its other arguments (--strict_none judges the None); the other "
            "arguments are judged")
    assert said in result.details and line(result).splitlines()[1] == f"    - {said}"


def test_a_wrong_gradient_beside_a_none_still_fails_on_the_argument_it_differentiates():
    [result] = helpers.run(helpers.make_case(fn=wrong_power_of, points=POINT))
    # d(x**3)/dx = 3 x**2 = 12 at x = 2, where the grad_fn says 6.
    assert (
        result.verdict is Verdict.FAIL and "wrt x: eager=6 numeric=12" in result.reason
    ), result.reason


def test_strict_none_and_a_named_argument_judge_the_none_against_the_numeric_derivative():
    # d(x**n)/dn = x**n ln x = 8 ln 2 = 5.545 at x = 2, n = 3.
    for case, options in ((helpers.make_case(fn=power_of, points=POINT), {"strict_none": True}),
                          (helpers.make_case(fn=power_of, points=POINT, wrt=("x", "n")), {})):
        [result] = helpers.run(case, **options)
        assert (
            result.verdict is Verdict.FAIL
            and "wrt n: eager=None (unconnected) numeric=5.545" in result.reason
        )


@tf.custom_gradient
def scaled_by(a, b):
    """a * b with no gradient for either, as TensorFlow Probability's hyp2f1 has none for its
    parameters: every source set aside, and too many elements to check one by one."""
    def grad(dy):
        return None, None
    return a * b, grad


def test_a_point_whose_every_gradient_is_none_by_design_is_not_checked_saying_so_never_an_error():
    big = np.linspace(0.5, 1.5, 2000)  # over the oracle's 1024 elements checked one by one
    [result] = helpers.run(helpers.make_case(fn=scaled_by, points=[{"a": big, "b": big + 1.0}]))
    numeric = result.oracles["numeric"]
    assert numeric.status == "skip", numeric.note
    assert "IndexError" not in numeric.note and result.verdict is Verdict.PASS
    assert "no gradient for a, b (the function returns None)" in numeric.note
