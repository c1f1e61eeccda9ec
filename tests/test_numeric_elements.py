"""The numeric oracle judges every element: an error one element carries is not diluted by the
others, a non-finite element is set aside alone, and a forward's measured noise is no evidence
against a gradient smaller than it. Each case is judged in this process (tests.helpers.run)."""

import math

import numpy as np
import pytest
import tensorflow as tf

from harness.measure import probe
from harness.records import Verdict
from tests.helpers import make_case, run

probe.install()  # as in a worker: the custom gradients below are then observed

# -- every element is judged ------------------------------------------------------------------

_OFF = np.array([1.0, 1.0, 1.0 + 1e-4, 1.0, 1.0])  # element 2 of a's gradient is 1e-4 too large


@tf.custom_gradient
def small_beside_large(a, x):
    """1e-3 a^2 + 10 x elementwise: d/da = 2e-3 a (small, wrong by 1e-4 in a[2]), d/dx = 10."""
    def grad(dy):
        return dy * 2e-3 * a * _OFF, dy * 10.0 * tf.ones_like(x)
    return 1e-3 * a * a + 10.0 * x, grad


@tf.custom_gradient
def small_beside_large_summed(a, x):
    """The same, summed to one output: no element of its own, so each is moved alone."""
    def grad(dy):
        return dy * 2e-3 * a * _OFF, dy * 10.0 * tf.ones_like(x)
    return tf.reduce_sum(1e-3 * a * a + 10.0 * x), grad


_POINTS = [{"a": np.linspace(0.5, 1.5, 5) + shift, "x": np.linspace(-1.0, 1.0, 5)}
           for shift in (0.0, 0.3, 0.7)]


@pytest.mark.parametrize("fn", [small_beside_large, small_beside_large_summed])
def test_one_wrong_element_of_a_small_gradient_fails_beside_a_large_one_and_is_named(fn):
    # With random directions, the error (2e-7 at a[2]) hid under the tolerance of the large x
    # gradient every direction mixes in (1e-5 of about 10); on its own it is 100 times a[2]'s.
    for point in _POINTS:
        [r] = run(make_case(fn, points=[point]), modes=("eager",))
        assert r.verdict is Verdict.FAIL, (r.point, r.reason)
        assert "order 1 gradient wrt a[2]: eager=" in r.reason, r.reason
        assert "rel err 0.0001 " in r.reason, r.reason
        assert "(1 of 5 elements of a differ)" in r.reason, r.reason


def test_an_elementwise_function_is_read_from_one_shift_and_costs_no_more_evaluations(monkeypatch):
    from harness.measure.oracles import evaluate

    calls = []
    values = evaluate.Evaluator.values
    def counted(self, order, shifts):
        calls.append(order)
        return values(self, order, shifts)

    monkeypatch.setattr(evaluate.Evaluator, "values", counted)
    right = lambda a, x: 1e-3 * a * a + 10.0 * x  # noqa: E731 - elementwise, no custom gradient
    [r] = run(make_case(right, points=_POINTS[:1]), modes=("eager",), upstream=False)
    assert r.verdict is Verdict.PASS, r.reason
    note = r.oracles["numeric"].note
    assert "a, x read element by element from one shift of all its elements" in note, note
    # 2 shifts that show the forward computed in float64 (Evaluator.narrower_inside), 2 for each
    # of the 3 bits of the probe that shows both sources elementwise at once, and per source the 2
    # of the differences (every element matching at the first step): 12 for the 10 elements, where
    # one direction per element would take 22.
    assert len(calls) == 12, calls


_CUBE_OFF = np.array([1.0, 1.0, 1.0, 1.01, 1.0])  # element 3 of the gradient is 1% too large


@tf.custom_gradient
def cube_one_wrong(x):
    """x**3 elementwise, its gradient 3 x**2 but 1% too large at x[3]."""
    return x ** 3, lambda dy: dy * 3.0 * x * x * _CUBE_OFF


_CUBE_POINT = {"x": np.array([0.5, -1.0, 1.5, 2.0, 0.25])}


def test_one_source_reads_its_differences_from_its_probe_both_ways(monkeypatch):
    from harness.measure.oracles import evaluate

    calls = []
    values = evaluate.Evaluator.values
    def counted(self, order, shifts):
        calls.append([float(np.sign(v)) for v in shifts[0] if v])
        return values(self, order, shifts)

    monkeypatch.setattr(evaluate.Evaluator, "values", counted)
    [r] = run(make_case(lambda x: x ** 3, points=[_CUBE_POINT]), modes=("eager",), upstream=False)
    assert r.verdict is Verdict.PASS, r.reason
    note = r.oracles["numeric"].note
    assert "x read element by element from one shift of all its elements" in note, note
    # 2 shifts for Evaluator.narrower_inside, then 2 for each of the 3 bits of the probe, bits 0
    # and 2 upward and bit 1 downward: every element was moved both ways, which is all the
    # differences at the first step need (every element matches there), where shifting all
    # elements at once both ways would take 2 more.
    assert len(calls) == 8, calls
    assert calls[2:] == [[1.0] * 2, [1.0] * 3, [-1.0] * 2, [-1.0] * 3, [1.0] * 1, [1.0] * 4], calls


def test_an_element_read_from_the_probe_is_judged_as_one_moved_with_all():
    [r] = run(make_case(cube_one_wrong, points=[_CUBE_POINT]), modes=("eager",), upstream=False)
    assert r.verdict is Verdict.FAIL, r.reason
    # d/dx x**3 at x[3] = 2: 12 (the closed form); the gradient says 12.12.
    assert "order 1 gradient wrt x[3]: eager=12.12 numeric=12 " in r.reason, r.reason
    assert "(1 of 5 elements of x differ)" in r.reason, r.reason


@tf.custom_gradient
def scaled_by_a_sum(a, x):
    """x * sum(a): elementwise in x, not in a; d/da[j] = sum(x), wrong in a[1] by 1e-3."""
    def grad(dy):
        return tf.reduce_sum(dy * x) * np.array([1.0, 1.001, 1.0, 1.0]), dy * tf.reduce_sum(a)
    return x * tf.reduce_sum(a), grad


def test_a_source_the_values_are_not_elementwise_in_is_moved_element_by_element():
    point = {"a": np.array([0.5, 1.0, 1.5, 2.0]), "x": np.array([1.0, -2.0, 3.0, 0.5])}
    [r] = run(make_case(scaled_by_a_sum, points=[point]), modes=("eager",))
    assert r.verdict is Verdict.FAIL, r.reason
    # sum(x) = 2.5: a[1]'s gradient says 2.5025.
    assert "order 1 gradient wrt a[1]: eager=2.5025 numeric=2.5 " in r.reason, r.reason
    assert "(1 of 4 elements of a differ)" in r.reason, r.reason
    note = r.oracles["numeric"].note
    assert "; x read element by element from one shift of all its elements" in note, note


# -- non-finite elements are set aside ----------------------------------------------------------

@tf.custom_gradient
def half_log(x):
    return tf.math.log(x), lambda dy: dy * 0.5 / x  # half of log's gradient


@pytest.mark.parametrize("full", [False, True])
def test_half_of_logs_gradient_fails_where_one_element_is_outside_the_domain(full):
    [r] = run(make_case(half_log, points=[{"x": np.array([0.5, 2.0, -1.0])}]), modes=("eager",),
              numeric_full=full)
    assert r.verdict is Verdict.FAIL, r.reason
    # The worst is x[0] (1 against 2), and x[2] = -1 is set aside: log is NaN within its step.
    assert "order 1 gradient wrt x[0]: eager=1 numeric=2 " in r.reason, r.reason
    assert ("(2 of 3 elements of x differ; 1 of 3 not checked: the function's value is not finite "
            "within a step of the point)") in r.reason, r.reason


def test_a_value_not_finite_at_the_point_is_said_so_not_left_out():
    # exp(800) overflows float64: the only value there is is not finite, so nothing is read.
    [r] = run(make_case(tf.exp, points=[{"x": np.float64(800.0)}]), modes=("eager",))
    assert r.verdict is Verdict.PASS and r.unchecked, r.reason
    note = r.oracles["numeric"].note
    assert ("order 1: 0 of 1 elements checked; 1 not checked (x): the function's value is not "
            "finite within a step of the point") in note, note


def test_the_note_counts_checked_and_set_aside_elements_of_a_right_gradient():
    [r] = run(make_case(lambda x: tf.math.log(x), points=[{"x": np.array([0.5, 2.0, -1.0, 3.0])}]),
              modes=("eager",))
    assert r.verdict is Verdict.PASS, r.reason
    note = r.oracles["numeric"].note
    assert ("order 1: 3 of 4 elements checked; 1 not checked (x[2]): the function's value is not "
            "finite within a step of the point") in note, note


# -- the forward's noise is measured --------------------------------------------------------------

# Owen's T at h = 2, a = 3: dT/da = exp(-h^2 (1 + a^2) / 2) / (2 pi (1 + a^2)) = 3.2804e-11.
_DT_DA = math.exp(-20.0) / (20.0 * math.pi)


@tf.custom_gradient
def noisy_owens_like(h, a):
    """0.01 h + dT/da a, with a noise of 1e-13 as a series computed to its tolerance has."""
    def grad(dy):
        return dy * 0.01, dy * _DT_DA
    # Irregular in [-0.5, 0.5) as x moves by far less than a step.
    scattered = tf.math.floormod(tf.sin(1e6 * (h + a)) * 43758.5453, 1.0) - 0.5
    return 0.01 * h + _DT_DA * a + 2e-13 * scattered, grad


def test_a_gradient_smaller_than_the_forwards_noise_over_the_step_is_unchecked_never_failed():
    assert abs(_DT_DA - 3.2804e-11) < 1e-15
    [r] = run(make_case(noisy_owens_like, points=[{"h": np.float64(2.0), "a": np.float64(3.0)}]),
              modes=("eager",))
    assert r.verdict is Verdict.PASS, r.reason
    note = r.oracles["numeric"].note
    assert "order 1: 1 of 2 elements checked; 1 not checked (a): the forward's noise (" in note, \
        note
    assert ") at this step (5.7e-06) is larger than the gradient" in note, note


def _rounded(slope, gradient):
    @tf.custom_gradient
    def f(x):
        value = 0.5 + slope * x
        return tf.round(value * 1e12) / 1e12, lambda dy: dy * gradient  # rounded to 1e-12
    return f


def test_a_forward_rounded_to_1e_12_leaves_a_right_tiny_gradient_unchecked_and_says_so():
    [r] = run(make_case(_rounded(1e-8, 1e-8), points=[{"x": np.float64(1.0)}]), modes=("eager",))
    assert r.verdict is Verdict.PASS, r.reason
    assert r.unchecked, "nothing could be checked: the pass says so"
    note = r.oracles["numeric"].note
    assert ("1 not checked (x): the forward's noise (1e-12) at this step (1.9e-06) is larger than "
            "the gradient") in note, note


def test_a_wrong_gradient_larger_than_the_noise_over_the_step_still_fails():
    [r] = run(make_case(_rounded(1e-8, 1.0), points=[{"x": np.float64(1.0)}]), modes=("eager",))
    assert r.verdict is Verdict.FAIL, r.reason


# -- a library's function, where installed --------------------------------------------------

# mpmath 1.3 at 40 digits: d/da of betainc(a, b, 0, x, regularized=True) by mp.diff at a = 2,
# b = 3, x = 0.4445 (the regularised incomplete beta I_x(a, b) there is 0.59999999657).
_DI_DA = -0.2243038954108405275539032471632940774192


def test_the_incomplete_beta_gradient_in_a_is_judged_against_its_own_elements():
    tfp = pytest.importorskip("tensorflow_probability", reason="the library function under test")
    case = make_case(lambda a, b, x: tfp.math.betainc(a, b, x),
                     points=[{"a": np.float64(2.0), "b": np.float64(3.0), "x": np.float64(0.4445)}])
    [r] = run(case, modes=("eager",))
    agreed = float(r.outcomes["eager"].orders[1][0].value)
    if abs(agreed - _DI_DA) > 1e-5 * abs(_DI_DA):
        assert r.verdict is Verdict.FAIL, (agreed, r.reason)
        assert "order 1 gradient wrt a: " in r.reason, (agreed, r.reason)
    else:
        assert r.verdict is Verdict.PASS, r.reason


# -- the harness's own calls need nothing from the case -----------------------------------------

@tf.custom_gradient
def complex_square(z):
    return z * z, lambda dy: dy * tf.math.conj(2 * z)


def test_a_right_complex_function_passes_in_graph_mode_too():
    # tf.gradients has no default upstream gradient for a complex output; the harness gives it the
    # ones a tape starts from, so graph computes what the tapes do: conj(2 z), TensorFlow's
    # gradient of a holomorphic function with upstream ones.
    z = np.array([1 + 2j, -0.5 + 0j], np.complex64)
    [r] = run(make_case(complex_square, points=[{"z": z}], analytic=lambda z: {1: np.conj(2 * z)}))
    assert r.verdict is Verdict.PASS, r.reason
    assert r.outcomes["graph"].status.value == "ok"
    np.testing.assert_array_equal(r.outcomes["graph"].orders[1][0].value, np.conj(2 * z))


# -- a slow forward is evaluated through a tf.function ------------------------------------------

def _series_exp(x):
    """exp(x) summed term by term in a tf.while_loop until the terms stop mattering: in eager mode
    the loop runs its body in Python, once per term."""
    def body(k, term, total):
        term = term * x / tf.cast(k, x.dtype)
        return k + 1, term, total + term

    def more(k, term, total):
        return tf.reduce_any(tf.abs(term) > 1e-17 * tf.abs(total))

    _, _, total = tf.while_loop(more, body, (tf.constant(1), tf.ones_like(x), tf.ones_like(x)))
    return total


@tf.custom_gradient
def series_exp_half_gradient(x):
    y = _series_exp(x)
    return y, lambda dy: dy * 0.5 * y  # half of exp's gradient


def test_a_slow_forward_is_traced_and_judged_as_in_eager_mode(monkeypatch):
    from harness.measure.oracles import evaluate

    monkeypatch.setattr(evaluate, "TRACE_AFTER_S", 0.0)  # every evaluation counts as slow
    point = [{"x": np.array([0.5, 1.0, 2.0])}]
    [right] = run(make_case(_series_exp, points=point, order=2), modes=("eager",))
    assert right.verdict is Verdict.PASS, right.reason
    assert "evaluated through a tf.function" in right.oracles["numeric"].note
    [wrong] = run(make_case(series_exp_half_gradient, points=point), modes=("eager",))
    assert wrong.verdict is Verdict.FAIL, wrong.reason
    # exp(2) = 7.3890561 against half of it: the worst element of the three.
    assert "order 1 gradient wrt x[2]: eager=3.694528 numeric=7.3890561 " in wrong.reason, \
        wrong.reason


@tf.custom_gradient
def series_exp_half_gradient_of_x(x, n):
    """A second argument whose gradient is None by design, as TFP's hyp2f1 parameters are."""
    y = _series_exp(x) * n
    return y, lambda dy: (dy * 0.5 * y, None)


def test_a_point_slow_in_its_mode_is_traced_from_the_start_gradients_too(monkeypatch):
    # A point whose agreed mode took long is never evaluated eagerly by the oracle: its eager tape
    # would hold every iteration of the loop (TFP's 10,000-element hyp2f1 took 8 GB). The traced
    # gradient is used where it is the agreed mode's, a None included.
    from harness.measure.oracles import evaluate

    monkeypatch.setattr(evaluate, "SLOW_POINT_S", -1.0)  # every point counts as slow

    def never(self, *args):
        raise AssertionError("evaluated eagerly")

    monkeypatch.setattr(evaluate.Evaluator, "_eager", never)
    monkeypatch.setattr(evaluate.Evaluator, "_eager_gradients", never)
    point = [{"x": np.array([0.5, 1.0, 2.0]), "n": np.array([1.0, 1.0, 1.0])}]
    [wrong] = run(make_case(series_exp_half_gradient_of_x, points=point),
                  modes=("eager",))
    assert wrong.verdict is Verdict.FAIL, wrong.reason
    assert "order 1 gradient wrt x[2]: eager=3.694528 numeric=7.3890561 " in wrong.reason, \
        wrong.reason
    note = wrong.oracles["numeric"].note
    # Float64 values against float64 ones: to TRACE_AGREEMENT, 1e-9.
    assert ("evaluated through a tf.function (its values at the point are eager mode's to a "
            "relative 1e-09)") in note, note


def test_a_forward_that_cannot_be_traced_is_evaluated_eagerly(monkeypatch):
    from harness.measure.oracles import evaluate

    monkeypatch.setattr(evaluate, "TRACE_AFTER_S", 0.0)
    eager_only = lambda x: x * float(np.sum(x.numpy() ** 0))  # noqa: E731 - .numpy() needs eager
    [r] = run(make_case(eager_only, points=[{"x": np.array([0.5, 1.0])}]), modes=("eager",))
    assert r.verdict is Verdict.PASS, r.reason
    assert "tf.function" not in r.oracles["numeric"].note


@tf.custom_gradient
def cube(x):
    return x * x * x, lambda dy: dy * 3.0 * x * x


@tf.custom_gradient
def cube_two_thirds(x):
    return x * x * x, lambda dy: dy * 2.0 * x * x  # two thirds of the derivative


def test_a_case_seen_at_many_points_is_traced_from_then_on_and_judged_as_before(monkeypatch):
    # As explore does: one signature at point after point. The evaluations are fast, so only the
    # number of points seen makes the oracle trace.
    import collections

    from harness.measure.oracles import evaluate

    monkeypatch.setattr(evaluate, "TRACE_AFTER_S", float("inf"))
    monkeypatch.setattr(evaluate, "TRACE_AFTER_POINTS", 2)
    monkeypatch.setattr(evaluate, "_EAGER_POINTS", collections.Counter())
    points = [{"x": np.float32(v)} for v in (0.5, 1.0, 1.5, 2.0)]
    right = run(make_case(cube, points=points, order=2), modes=("eager",))
    assert [r.verdict for r in right] == [Verdict.PASS] * 4, [r.reason for r in right]
    traced = ["evaluated through a tf.function" in r.oracles["numeric"].note for r in right]
    assert traced == [False, False, True, True]
    wrong = run(make_case(cube_two_thirds, points=points), modes=("eager",))
    assert [r.verdict for r in wrong] == [Verdict.FAIL] * 4
    # At x = 2 the gradient is 8 against the derivative 12, traced or not.
    assert "order 1 gradient wrt x: eager=8 numeric=12" in wrong[3].reason, wrong[3].reason
    assert "evaluated through a tf.function" in wrong[3].oracles["numeric"].note


def test_an_evaluator_for_another_case_lets_the_kept_traces_go():
    # A trace serves the next points of its case only: kept longer, a heavy case's trace would
    # stay in the worker under every later case whose oracle never traces.
    from harness.measure.oracles import evaluate

    first = make_case(fn=lambda x: x * x, id="t.first")
    second = make_case(fn=lambda x: x * x * x, id="t.second")
    mine = (id(first.fn), first.id, 1, True, False, ())
    evaluate._TRACED[mine] = "kept"
    try:
        evaluate.Evaluator(first, first.points[0], wide=True, weighted=False)
        assert mine in evaluate._TRACED  # its own case: kept for its next point
        evaluate.Evaluator(second, second.points[0], wide=True, weighted=False)
        assert mine not in evaluate._TRACED
    finally:
        evaluate._TRACED.pop(mine, None)
