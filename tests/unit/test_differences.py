"""harness.criteria.differences on closed-form functions: the truth of every case here is its
calculus."""

import math

import pytest

from harness.criteria import differences
from harness.criteria.differences import JUMP, KINK, NOISY, NONFINITE, assess
from harness.criteria.tolerance import NUMERIC_STEPS, NUMERIC_TOLERANCES

# (dtype the differences are computed in, dtype of the gradient): the oracle evaluates in float64
# where the function allows it, and in the source's own dtype where it does not.
SETTINGS = [("float64", "float64"), ("float64", "float32"), ("float32", "float32")]


def judge(f, x, g, evaluated="float64", gradient="float64", **kw):
    def phi(t):
        try:
            v = f(x + t)
        except (ValueError, ZeroDivisionError, OverflowError):
            return None
        return v if math.isfinite(v) else None

    h = NUMERIC_STEPS[evaluated] * max(1.0, abs(x))
    return assess(g, phi, h, eps=differences.epsilon(evaluated),
                  rtol=NUMERIC_TOLERANCES[gradient].rtol, **kw)


def _rounded(f, dtype):
    """f with its value rounded to `dtype`, as a forward computed in that dtype is."""
    if dtype == "float64":
        return f
    import numpy as np

    return lambda x: float(np.float32(f(x)))


@pytest.mark.parametrize("evaluated,gradient", SETTINGS)
@pytest.mark.parametrize("magnitude", [1e-8, 1e-4, 1.0, 1e4, 1e8])
def test_right_gradients_match_and_wrong_signs_and_factors_of_two_differ_at_every_magnitude(
        magnitude, evaluated, gradient):
    f = _rounded(lambda x: magnitude * x * x, evaluated)  # derivative 6 * magnitude at x = 3
    right = 6.0 * magnitude
    assert judge(f, 3.0, right, evaluated, gradient).outcome == "match"
    for wrong in (-right, 2 * right, right / 2):
        assert judge(f, 3.0, wrong, evaluated, gradient).outcome == "differ", wrong


def test_a_small_float32_gradient_with_its_sign_flipped_differs():
    # The example: 1e-4 x^2 at x = 3, gradient -6e-4 where the truth is +6e-4 (a fixed
    # float32 atol of 2e-3 passed it).
    j = judge(lambda x: 1e-4 * x * x, 3.0, -6e-4, "float64", "float32")
    assert j.outcome == "differ" and j.numeric == pytest.approx(6e-4, rel=1e-9)


def test_a_tiny_float64_gradient_is_not_matched_by_an_absolute_tolerance():
    # 2.3e-9 against an exact 2.9e-9 "matched" a fixed float64 atol of 1e-5.
    assert judge(lambda x: 2.9e-9 * x, 1.0, 2.3e-9).outcome == "differ"
    assert judge(lambda x: 2.9e-9 * x, 1.0, 2.9e-9).outcome == "match"


def test_a_gradient_at_a_point_smaller_than_the_step_is_still_checked():
    # At x = 1e-6 the starting step (7.6e-6) is larger than x itself: sqrt is not even defined at
    # x - h, so the step must shrink; x^2's derivative 2e-6 must not pass as 0.
    assert judge(math.sqrt, 1e-6, 0.5 / math.sqrt(1e-6)).outcome == "match"
    assert judge(math.sqrt, 1e-6, 1.0 / math.sqrt(1e-6)).outcome == "differ"
    assert judge(lambda x: x * x, 1e-6, 0.0).outcome == "differ"
    assert judge(lambda x: x * x, 1e-6, -2e-6).outcome == "differ"


@pytest.mark.parametrize("x", [1 - 1e-5, 1 - 3e-6])
def test_near_a_singularity_the_step_shrinks_and_a_right_gradient_matches(x):
    # log(1 - x) near its singularity at 1: derivative -1 / (1 - x); the starting step of 7.6e-6
    # reaches past it (3e-6 away) or gives a quotient far off (1e-5 away).
    right = -1.0 / (1.0 - x)
    assert judge(lambda v: math.log(1.0 - v), x, right).outcome == "match"
    assert judge(lambda v: math.log(1.0 - v), x, 2 * right).outcome == "differ"


def _root(x, tol=1e-9):
    """y with y^3 + y = x, by bisection to `tol`: a forward computed only to a tolerance."""
    lo, hi = -10.0, 10.0
    while hi - lo > tol:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid ** 3 + mid < x else (lo, mid)
    return (lo + hi) / 2


def test_a_forward_computed_to_a_tolerance_is_too_noisy_not_wrong():
    # At x = 2 the root is 1 and its derivative 1 / (3 y^2 + 1) = 0.25 exactly.
    j = judge(_root, 2.0, 0.25)
    assert j.outcome == "unresolved" and j.kind in (NOISY, JUMP)
    # A wrong sign is far beyond the noise: still a difference.
    assert judge(_root, 2.0, -0.25).outcome == "differ"


def test_at_a_kink_the_gradient_is_judged_against_each_side_not_their_average():
    clamp = lambda x: min(x, 1.0)  # noqa: E731 - one-sided derivatives 1 (left) and 0 (right) at 1
    inside = judge(clamp, 1.0, 1.0)
    assert inside.outcome == "match" and inside.kind == KINK
    assert (inside.left, inside.right) == pytest.approx((1.0, 0.0))
    assert judge(clamp, 1.0, 0.0).outcome == "match"
    wrong = judge(clamp, 1.0, -1.0)
    assert wrong.outcome == "differ" and wrong.kind == KINK


def test_across_a_jump_in_the_value_nothing_is_judged():
    rounded = lambda x: float(round(x))  # noqa: E731 - jumps at 0.5 (Python rounds 0.5 to 0)
    for g in (0.0, 1.0, 78643.2):
        j = judge(rounded, 0.5, g)
        assert j.outcome == "unresolved" and j.kind == JUMP and j.jump == pytest.approx(1.0)


def test_a_jump_just_beyond_the_point_is_stepped_over():
    # A jump 1e-6 to the right, inside the starting step: shorter steps see the slope of 1.
    f = lambda x: x + (1.0 if x > 1.000001 else 0.0)  # noqa: E731
    assert judge(f, 1.0, 1.0).outcome == "match"
    assert judge(f, 1.0, 2.0).outcome == "differ"


def test_nothing_finite_near_the_point_is_unresolved():
    assert judge(lambda x: math.log(-1.0 - x), 1.0, 1.0).kind == NONFINITE
    j = judge(math.sqrt, 0.0, 0.0)  # sqrt at 0: x - h is outside the domain at every step
    assert j.outcome == "unresolved" and j.kind == NONFINITE


def test_a_nonfinite_gradient_differs_from_a_finite_derivative():
    j = judge(lambda x: x * x, 1.0, math.nan)
    assert j.outcome == "differ" and j.numeric == pytest.approx(2.0)


def test_a_locally_constant_function_has_derivative_zero_and_flat_samples():
    j = judge(lambda x: 3.0, 1.0, 1.0)
    assert j.outcome == "differ" and j.numeric == 0.0 and j.plus == j.base == j.minus == 3.0
    assert judge(lambda x: 3.0, 1.0, 0.0).outcome == "match"


def _naive_softplus(x):
    return math.log(1.0 + math.exp(x))


@pytest.mark.parametrize("x", [-26.0, -30.0, -50.0])
def test_a_move_absorbed_by_a_larger_term_inside_is_no_evidence_against_the_gradient(x):
    # log(1 + e^x) in float64: 1 + e^x rounds e^x to 1's ulps (2.2e-16), so at these x the value
    # does not move at short steps, and at x = -50 at any step; its derivative is e^x / (1 + e^x).
    least = differences.epsilon("float64") * abs(x)
    right = math.exp(x) / (1.0 + math.exp(x))
    found = judge(_naive_softplus, x, right, least=least)
    assert found.outcome != "differ", found
    # Without the point's size to go by, the flat steps are taken for a derivative of 0.
    assert judge(_naive_softplus, x, right).outcome == "differ"
    # A gradient that would move the value by far more than its rounding still differs.
    assert judge(_naive_softplus, x, 1e-3, least=least).outcome == "differ"


def test_a_flat_function_whose_gradient_moves_it_beyond_its_rounding_still_differs():
    least = differences.epsilon("float64")
    assert judge(lambda x: 3.0, 1.0, 1.0, least=least).outcome == "differ"
    found = judge(lambda x: float(round(x)), 0.3, 1.0, least=least)  # a straight-through estimator
    assert found.outcome == "differ" and found.numeric == 0.0, found
    # One that would move it by less is no evidence: flat, and of kind FLAT.
    found = judge(lambda x: 3.0, 1.0, 1e-20, least=least)
    assert (found.outcome, found.kind) == ("unresolved", differences.FLAT), found


def _partly_rounded(x):
    """Two equal shares of a change of slope 1.2e-10 each: one added to 1 first, so its change is
    rounded to 1's ulps (2.2e-16), as softmax's largest share near 1 rounds the change of a share
    of 1e-10 beside it; the other kept in full. Its derivative is 2.4e-10; within 2e-6 of 0 the
    first share moves by one ulp or none, so differences there are off by percents."""
    return ((1.0 + 1.2e-10 * x) - 1.0) + 1.2e-10 * x


def test_a_change_a_larger_term_partly_rounds_away_is_no_evidence_against_the_gradient():
    least = differences.epsilon("float64")  # the point's size is 1
    found = judge(_partly_rounded, 0.0, 2.4e-10, least=least)
    assert (found.outcome, found.kind) == ("unresolved", differences.ROUNDED), found
    # Without the point's size to go by, the right gradient is called wrong: the differences'
    # rounding is taken to be that of the values themselves, about 1e-15 in size.
    found = judge(_partly_rounded, 0.0, 2.4e-10)
    assert found.outcome == "differ", found
    # A gradient beyond what rounding at the point's size explains at those steps still differs.
    assert judge(_partly_rounded, 0.0, 1e-6, least=least).outcome == "differ"
    assert judge(_partly_rounded, 0.0, -1e-6, least=least).outcome == "differ"


def test_the_rounding_of_a_value_of_the_points_size_leaves_a_large_functions_verdicts_alone():
    # A value as large as the point is rounded as such already: least changes nothing.
    for g, outcome in ((3.0, "match"), (-3.0, "differ"), (3.3, "differ")):
        assert judge(lambda x: 3.0 * x, 2.0, g, least=2.0 * 2.0 ** -52).outcome == outcome


def test_an_absolute_tolerance_a_case_asks_for_is_honoured():
    assert judge(lambda x: 1e-4 * x, 1.0, 0.0).outcome == "differ"
    assert judge(lambda x: 1e-4 * x, 1.0, 0.0, atol=1e-3).outcome == "match"


# -- the forward's own noise is measured ------------------------------------------------------

def _scattered(x):
    """A value in [-0.5, 0.5) that changes irregularly with x, as a forward's error does."""
    return math.modf(math.sin(1e6 * x) * 43758.5453)[0] % 1.0 - 0.5


def test_a_gradient_smaller_than_the_measured_noise_over_the_step_is_noise_never_a_difference():
    # d/dx (3.28e-11 x) with a noise of 2e-13 (a deviation of about 6e-14): noise / step is 1e-8.
    noisy = lambda x: 0.01 + 3.28e-11 * x + 2e-13 * _scattered(x)  # noqa: E731
    for g in (3.28e-11, -3.28e-11, 0.0):  # right, wrong sign, zero: no evidence either way
        found = judge(noisy, 3.0, g)
        assert (found.outcome, found.kind) == ("unresolved", differences.NOISE), (g, found)
        assert 1e-14 < found.noise < 2e-13, found.noise
        assert found.noise / found.step > abs(g)


def test_a_gradient_far_beyond_the_noise_is_still_judged():
    noisy = lambda x: 0.01 + 3.0 * x + 2e-13 * _scattered(x)  # noqa: E731
    assert judge(noisy, 3.0, 3.0).outcome == "match"
    assert judge(noisy, 3.0, -3.0).outcome == "differ"
    assert judge(noisy, 3.0, 1e-3).outcome == "differ"  # 1e-3 is far above noise / step (1e-8)


def test_a_forward_rounded_to_1e_12_has_its_resolution_as_its_noise():
    rounded = lambda x: round((0.5 + 1e-8 * x) * 1e12) / 1e12  # noqa: E731 - flat within a step
    found = judge(rounded, 1.0, 1e-8)
    assert (found.outcome, found.kind) == ("unresolved", differences.NOISE), found
    assert found.noise == pytest.approx(1e-12, rel=1e-3)


def test_a_locally_constant_function_is_no_noise_and_a_nonzero_gradient_differs():
    # round(x) near 0.5 changes by 1 within 64 steps: a change the size of the value, no rounding.
    found = judge(lambda x: float(round(x)), 0.4999, 1.0)
    assert (found.outcome, found.noise) == ("differ", 0.0), found
    assert judge(lambda x: 7.0, 0.3, 1.0).outcome == "differ"


def test_a_smooth_function_near_its_singularity_shows_no_noise():
    found = judge(math.sqrt, 1e-6, 0.5 / math.sqrt(1e-6))
    assert found.outcome == "match" and found.noise == 0.0, found


def test_a_wider_atol_is_worked_out_only_where_the_first_step_does_not_match():
    asked = []

    def wider():
        asked.append(True)
        return 1e-3

    # 3 x^2 at x = 2: the derivative is 12 (float64 differences; the float64 gradient tolerance is
    # 1e-5 relative, 1.2e-4 here).
    right = judge(lambda x: 3.0 * x * x, 2.0, 12.0, wider=wider)
    assert right.outcome == "match" and asked == []
    # 12 + 5e-4 is wrong by 4 times the relative tolerance, within the wider atol: judged
    # with it, and matched, as a judgement with that atol from the start is.
    near = judge(lambda x: 3.0 * x * x, 2.0, 12.0 + 5e-4, wider=wider)
    assert asked == [True]
    assert near.outcome == "match"
    assert near.outcome == judge(lambda x: 3.0 * x * x, 2.0, 12.0 + 5e-4, atol=1e-3).outcome
    assert judge(lambda x: 3.0 * x * x, 2.0, 12.0 + 5e-4).outcome == "differ"
    # Beyond it, it still differs, and what was allowed says the wider atol.
    far = judge(lambda x: 3.0 * x * x, 2.0, 12.01, wider=wider)
    assert far.outcome == "differ" and far.allowed >= 1e-3
