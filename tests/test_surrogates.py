"""Surrogate gradients judged on what they can get wrong: which way they point and whether they
are linear in dy; and each source of a large point judged at its own dtype's tolerance.

The library's surrogates cases (harness/cases/surrogates.py) come from the shared run of the
library (`library_results`); a few small cases are judged here in this process."""

import numpy as np
import pytest
import tensorflow as tf

from harness import SURROGATE, VALUES_DIFFER, Case, Expectation, Verdict
from harness.measure import probe

probe.install()  # as in a worker: the custom gradients below (and the library's) are observed

from harness.cases import surrogates  # noqa: E402 - decorated after the probe
from tests.helpers import run  # noqa: E402


def _one(library_results, case_id):
    (result,) = library_results[case_id]
    return result


def test_a_right_straight_through_estimator_passes_as_a_checked_surrogate(library_results):
    result = _one(library_results, "surrogates.ste_sign")
    assert result.verdict is Verdict.PASS
    # x = [-2, -0.7, -0.2, 0.3, 0.9, 1.7]: the four inside |x| <= 1 are the surrogate's; the
    # slope of 4 over a step of 0.5 is computed independently in the next test.
    assert result.reason.startswith("all modes agree, and match the analytic values and the "
                                    "numeric derivative (with and without upstream weights), but "
                                    "for a checked surrogate: the custom gradient is a "
                                    "surrogate at 4 of 6 elements of x, where the forward is "
                                    "locally constant (its derivative 0), "
                                    "and points the way the forward moves (along it the loss "
                                    "changes at a slope of 4 ")
    assert "over a step of 0.5, the largest element's move" in result.reason
    assert result.reason.endswith("; the gradient is linear in its upstream gradient dy")
    assert "either may be the wrong one" not in result.reason
    assert result.oracles["analytic"].status.value == "match"  # the intended surrogate


def test_the_secant_slope_is_the_loss_s_change_over_the_step():
    # Independently of the harness: moved along the gradient (1 where |x| <= 1) by +0.5, -0.2
    # crosses 0 and sum(sign(x)) is 2; by -0.5, 0.3 crosses it and the sum is -2: a secant slope
    # of (2 - (-2)) / (2 * 0.5) = 4. The steps of 7.6e-6 * 4^k below 0.5 cross nothing.
    x = surrogates._X.astype(np.float64)
    u = surrogates._INSIDE.astype(np.float64)
    slope = (np.sum(np.sign(x + 0.5 * u)) - np.sum(np.sign(x - 0.5 * u))) / (2 * 0.5)
    assert slope == 4.0
    # and at the steps before it (0.125 and below) the loss does not move
    assert np.sum(np.sign(x + 0.125 * u)) == np.sum(np.sign(x - 0.125 * u))


def test_a_flipped_sign_fails_saying_following_it_moves_the_loss_the_wrong_way(library_results):
    result = _one(library_results, "surrogates.ste_sign_flipped")
    assert result.verdict is Verdict.XFAIL  # declared: the library shows the finding
    said = " ".join(result.details)
    assert ("so the custom gradient (eager's) is a surrogate there, and it points the wrong way: "
            "along it the loss changes at a slope of -4 over a step of 0.5") in said
    assert "following the gradient would move the loss the wrong way" in said
    assert "either may be the wrong one" not in said
    assert result.oracles["linearity"].status.value == "match"  # -dy is linear in dy


def test_a_dropped_dy_fails_the_linearity_check_saying_it_drops_it(library_results):
    result = _one(library_results, "surrogates.ste_sign_dy_dropped")
    assert result.verdict is Verdict.XFAIL
    linear = result.oracles["linearity"]
    assert linear.status.value == "differ"
    assert "grad_fn drops its upstream gradient" in linear.details[0]
    # At the plain contraction (dy = 1) the gradient is the right one.
    assert result.oracles["numeric"].status.value == "match"


def test_a_surrogate_negative_in_places_passes_as_a_whole(library_results):
    result = _one(library_results, "surrogates.swish_sign")
    x = surrogates._SWISH_X
    assert np.count_nonzero(surrogates._swish_surrogate(x) < 0) == 3  # at -1.2, 0.6 and 0.8
    assert result.verdict is Verdict.PASS
    assert "a surrogate at 6 of 6 elements of x" in result.reason
    # Every element is a surrogate's: the numeric derivative is not said to be matched.
    assert result.reason.startswith("all modes agree, and match the analytic values; the custom "
                                    "gradient is a surrogate")


def test_a_small_source_is_judged_at_its_own_tolerance_beside_a_large_one(library_results):
    result = _one(library_results, "surrogates.small_source_beside_large")
    assert result.verdict is Verdict.XFAIL
    numeric = result.oracles["numeric"]
    assert numeric.status.value == "differ"
    # 1.05 sum(x**2) against sum(x**2): 5 % off, at float32's rtol of 2e-3 where bfloat16's 0.1
    # would have let it through.
    assert numeric.details[0].startswith("order 1 gradient wrt s[")
    assert "rel err 0.05" in numeric.details[0] and "rtol 0.002" in numeric.details[0]
    assert "x along 2 random directions of its own" in numeric.note


def _sign(grad):
    @tf.custom_gradient
    def f(x):
        return tf.sign(x), lambda dy: grad(x, dy)

    return f


def _case(fn, *expectations, id="t.surrogate"):
    return Case(id=id, fn=fn, points=[{"x": surrogates._X}], source="test",
                description="a test surrogate", expectations=list(expectations))


_RIGHT = _sign(lambda x, dy: dy * tf.cast(tf.abs(x) <= 1.0, dy.dtype))
_FLIPPED = _sign(lambda x, dy: -dy * tf.cast(tf.abs(x) <= 1.0, dy.dtype))
_DECLARED = Expectation(modes=["numeric"], outcome=SURROGATE,
                        reason="the clipped straight-through estimator")


def test_a_declared_surrogate_stays_checked_and_a_sign_flip_after_it_fails():
    (right,) = run(_case(_RIGHT, _DECLARED))
    assert right.verdict is Verdict.XFAIL and right.reason == "declared: numeric surrogate"
    assert any(line.startswith("numeric: the custom gradient is a surrogate at 4 of 6")
               for line in right.details)
    (flipped,) = run(_case(_FLIPPED, _DECLARED))
    assert flipped.verdict is Verdict.FAIL
    assert flipped.reason.startswith("numeric: expected numeric surrogate: the clipped "
                                     "straight-through estimator; got instead: the agreed values "
                                     "differ from the numeric derivative")
    assert "points the wrong way" in flipped.reason


def test_strict_surrogate_fails_an_undeclared_one_and_spells_what_declares_it():
    (strict,) = run(_case(_RIGHT), strict_surrogate=True)
    assert strict.verdict is Verdict.FAIL
    assert strict.undeclared == ("numeric:surrogate",)
    assert "which points the way the forward moves" in strict.reason
    assert "--strict_surrogate fails a surrogate no expectation declares" in strict.reason
    (declared,) = run(_case(_RIGHT, _DECLARED), strict_surrogate=True)
    assert declared.verdict is Verdict.XFAIL


def test_a_surrogate_that_no_longer_is_one_is_an_xpass():
    @tf.custom_gradient
    def derivative(x):  # sign's own derivative: 0 away from the jump
        return tf.sign(x), lambda dy: tf.zeros_like(dy)

    (result,) = run(_case(derivative, _DECLARED))
    assert result.verdict is Verdict.XPASS


def test_a_clip_by_norm_of_dy_is_not_linear_and_can_be_declared():
    @tf.custom_gradient
    def clipped(x):
        return tf.identity(x), lambda dy: tf.clip_by_norm(dy, 1.0)

    case = _case(clipped, Expectation(modes=["numeric", "upstream"], outcome=VALUES_DIFFER,
                                      reason="clipping by design"))
    (failed,) = run(case)
    assert failed.verdict is Verdict.FAIL
    assert failed.oracles["linearity"].status.value == "differ"
    assert failed.undeclared == ("linearity:values differ",)
    declared = Expectation(modes=["linearity"], outcome=VALUES_DIFFER,
                           reason="clipping dy by its norm is non-linear in dy by design")
    (result,) = run(_case(clipped, *case.expectations, declared))
    assert result.verdict is Verdict.XFAIL


@pytest.mark.parametrize("mode", ["function", "graph"])
def test_every_mode_computes_its_own_linearity_chain(mode):
    (result,) = run(_case(_RIGHT), modes=("eager", mode))
    outcome = result.outcomes[mode]
    from harness.measure import upstream  # noqa: PLC0415
    a, b = upstream.LINEAR
    plain, weighted, linear = (np.asarray(o[0].value) for o in (outcome.orders[1],
                                                                 outcome.upstream[0],
                                                                 (outcome.linear[0],)))
    np.testing.assert_array_equal(linear, a * plain + b * weighted)


def test_a_gradient_where_the_forward_does_not_depend_on_the_input_is_no_surrogate(
        library_results):
    # Keras 3's float8 overwrite-with-gradient: history's "gradient" is its new value, where the
    # forward does not read history at all.
    result = _one(library_results, "surrogates.overwrite_with_gradient")
    assert result.verdict is Verdict.XFAIL
    numeric = result.oracles["numeric"]
    assert numeric.status.value == "differ"
    assert numeric.details[0].startswith("order 1 gradient wrt history[")
    assert ("the loss does not move along the gradient even at steps of 4 and 1024 times the "
            "point's size: the forward does not depend on these elements, so their derivative is "
            "0 at any scale") in numeric.details[0]
    assert "neither a derivative nor a surrogate" in numeric.details[0]


def test_a_named_intended_surrogate_is_compared_with_the_gradient(library_results):
    declared = _one(library_results, "surrogates.ste_sign_declared")
    assert declared.verdict is Verdict.XFAIL and declared.reason == "declared: numeric surrogate"
    wrong = Expectation(modes=["numeric"], outcome=SURROGATE, reason="the plain estimator",
                        intended="harness.cases.surrogates:identity")
    (result,) = run(_case(_RIGHT, wrong))
    assert result.verdict is Verdict.FAIL
    # identity gives 1 at x = -2 and 1.7, where the clipped estimator gives 0: 2 of 6 elements.
    assert result.reason.startswith(
        "numeric: expected numeric surrogate: the plain estimator; got instead: the gradient is "
        "not the intended surrogate harness.cases.surrogates:identity: order 1 gradient wrt x: "
        "eager vs harness.cases.surrogates:identity: 2 of 6 elements differ")
    missing = Expectation(modes=["numeric"], outcome=SURROGATE, reason="a typo",
                          intended="harness.cases.surrogates:nowhere")
    (error,) = run(_case(_RIGHT, missing))
    assert error.verdict is Verdict.ERROR
    assert "the intended surrogate the expectation names cannot be compared: AttributeError" \
        in error.reason
