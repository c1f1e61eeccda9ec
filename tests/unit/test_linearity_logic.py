"""The linearity oracle on hand-built outcomes: a gradient linear in dy passes, one that drops,
squares or clips dy fails with words that say which, and the modes' linearity chains are compared.
No TensorFlow: the oracle reads three order 1 results."""

import dataclasses

import numpy as np

from harness.criteria.compare import compare_outcomes
from harness.measure import upstream
from harness.measure.oracles import linearity
from harness.records import Differentiated, ErrorInfo, ModeOutcome, OracleStatus, Output, Status
from tests.unit.outcomes import make_case

A, B = upstream.LINEAR
X = (Differentiated("x", "float32", (4,)),)
W = np.array([-0.625, 1.375, -1.5, 0.75])  # upstream weights, multiples of 1/8 as the real ones
D = np.array([1.0, 0.0, 1.0, 1.0])  # the clipped straight-through estimator's (|x| <= 1)


def outcome(grad_of, mode="eager", sources=X):
    """A mode's outcome whose order 1 gradient with upstream gradient dy is grad_of(dy)."""
    def out(dy):
        return (Output.of(np.asarray(grad_of(dy), np.float32)),)

    return ModeOutcome(mode=mode, status=Status.OK, sources=sources,
                       orders=((Output.of(np.zeros(4, np.float32)),), out(np.ones(4))),
                       upstream=(out(W),), linear=out(A + B * W))


def check(grad_of, custom=True):
    return linearity.check(make_case(), outcome(grad_of), custom)


def test_a_straight_through_estimator_is_linear_in_dy():
    found = check(lambda dy: dy * D)
    assert found.status is OracleStatus.MATCH and found.orders == (1,)
    assert "dy = 0.5 - 2w" in found.note


def test_a_gradient_that_drops_dy_fails_saying_it_drops_it():
    found = check(lambda dy: D)
    assert found.status is OracleStatus.DIFFER
    line = found.details[0]
    assert line.startswith("grad_fn is not linear in its upstream gradient: order 1 gradient wrt "
                           "x[0]: eager=1 with dy = 0.5 - 2w, where 0.5 × 1 (dy = 1) - 2 × 1 "
                           "(dy = w) = -1.5")
    assert "3 of 4 elements miss" in line
    assert "grad_fn drops its upstream gradient" in line


def test_a_gradient_that_squares_dy_fails_without_saying_it_drops_it():
    found = check(lambda dy: dy * dy * D)
    assert found.status is OracleStatus.DIFFER
    assert "does something non-linear to its upstream gradient" in found.details[0]
    assert "drops" not in found.details[0]


def test_clipping_dy_by_norm_is_not_linear():
    found = check(lambda dy: dy / np.linalg.norm(dy))
    assert found.status is OracleStatus.DIFFER


def test_a_gradient_that_adds_a_constant_fails_though_its_differences_are_linear():
    # g(u) - g(v) is linear in u - v here; a + b != 1 is what catches the offset.
    found = check(lambda dy: dy * D + 0.5)
    assert found.status is OracleStatus.DIFFER


def test_rounding_of_a_float32_gradient_is_not_a_finding():
    rng = np.random.default_rng(0)
    noise = {}

    def rounded(dy):
        key = tuple(np.round(dy, 6))
        noise.setdefault(key, rng.normal(0.0, 1e-6, 4))
        return dy * 3.0 + noise[key]

    assert check(rounded).status is OracleStatus.MATCH


def test_no_custom_gradient_blames_the_registered_gradient():
    found = check(lambda dy: D, custom=False)
    assert found.details[0].startswith("a gradient TensorFlow registers for an op (no custom "
                                       "gradient was seen to run) is not linear")


def test_a_linearity_chain_that_raised_is_a_finding_of_its_own():
    raised = dataclasses.replace(outcome(lambda dy: dy * D), linear=(), linear_error=ErrorInfo(
        type="ValueError", bases=("ValueError", "Exception"), message="bad dy",
        stage="order 1 with the linearity check's upstream gradient"))
    found = linearity.check(make_case(), raised, True)
    assert found.status is OracleStatus.DIFFER
    assert "eager raises ValueError at order 1 with the linearity check's upstream gradient: " \
           "bad dy" in found.details[0]


def test_a_mode_without_the_chain_is_not_judged_and_says_so():
    found = linearity.check(make_case(), dataclasses.replace(outcome(lambda dy: D), linear=()),
                            True)
    assert found.status is OracleStatus.SKIP
    assert found.note == "eager does not compute the linearity chain"


def test_a_mode_whose_linearity_chain_differs_from_the_yardstick_s_is_a_mode_difference():
    right, other = outcome(lambda dy: dy * D), outcome(lambda dy: dy * D, mode="graph")
    other = dataclasses.replace(other, linear=(Output.of(np.ones(4, np.float32)),))
    found = compare_outcomes(right, other)
    assert [m.upstream for m in found] == [True]
    assert "with the linearity check's upstream gradient" in found[0].message
    assert compare_outcomes(right, outcome(lambda dy: dy * D, mode="graph")) == []
    # A mode that does not compute the chain (forward mode, a training step) is not compared.
    assert compare_outcomes(right, dataclasses.replace(other, linear=())) == []


def test_the_linearity_cotangent_is_exact_in_every_float_dtype():
    # a + b w for every weight the tables hold: a multiple of 1/4 below 5, exact in bfloat16's 8
    # significant bits, so no mode and no oracle reads another number than the others.
    weights = np.array([s * m / 8 for m in range(4, 16) if m != 8 for s in (-1, 1)])
    c = A + B * weights
    assert A + B != 1.0
    assert np.all(c * 4 == np.round(c * 4)) and np.max(np.abs(c)) < 5
    assert np.all(c.astype(np.float16).astype(np.float64) == c)
    # and of the opposite sign of w at every weight: a one-sided gradient cannot be linear here.
    assert np.all(np.sign(c) == -np.sign(weights))


def test_a_gradient_that_passes_dy_of_one_sign_only_fails_whatever_the_weights():
    # A bound's one-sided pass-through (dy where it points back inside, else 0): linear at the
    # plain contraction and at any positive dy, not in dy.
    for weights in (W, -W, np.abs(W), -np.abs(W)):
        one_sided = ModeOutcome(
            mode="eager", status=Status.OK, sources=X,
            orders=((Output.of(np.zeros(4, np.float32)),),
                    (Output.of(np.maximum(np.ones(4), 0).astype(np.float32)),)),
            upstream=((Output.of(np.maximum(weights, 0).astype(np.float32)),),),
            linear=(Output.of(np.maximum(A + B * weights, 0).astype(np.float32)),))
        assert linearity.check(make_case(), one_sided, True).status is OracleStatus.DIFFER


def test_the_modes_linearity_chains_are_allowed_what_their_two_parts_are_allowed():
    # keras.gradient_reversal_functional under TensorFlow 2.19.1, var0's element (2, 1): the plain
    # and weighted gradients -2.979e-4 and 1.490e-3 (both chains agree across modes), the
    # linearity chain 0.5 g(1) - 2 g(w) = -3.128e-3 in eager and -3.139e-3 in XLA: 1.1e-5 apart,
    # past float32's atol of 1e-5, within (0.5 + 2) atol + rtol (0.5 |g(1)| + 2 |g(w)|) = 2.5e-5.
    def mode(name, linear):
        return ModeOutcome(
            mode=name, status=Status.OK, sources=(Differentiated("x", "float32", ()),),
            orders=((Output.of(np.float32(0.0)),), (Output.of(np.float32(-2.9790401e-04)),)),
            upstream=((Output.of(np.float32(1.4895201e-03)),),),
            linear=(Output.of(np.float32(linear)),))

    eager = mode("eager", -0.0031279922)
    assert compare_outcomes(eager, mode("xla", -0.0031391792)) == []
    # Ten times as far apart is past it: a chain that differs still differs.
    [found] = compare_outcomes(eager, mode("xla", -0.0031279922 - 1.12e-4))
    assert found.upstream and "with the linearity check's upstream gradient" in found.message
