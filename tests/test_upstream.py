"""The upstream-gradient check and the oracle's blind spots and false alarms, on real TensorFlow.

Every expected number has a reason outside the code under test: a closed-form
derivative times the upstream weight the check hands the grad_fn (the weights
are the check's input, read from harness.measure.upstream, not its output).
"""

import functools
import re

import numpy as np
import pytest
import tensorflow as tf

from harness import SURROGATE, Case, Expectation, VALUES_DIFFER, Verdict
from harness.measure import probe
from harness.measure import upstream
from harness.measure.oracles import numeric
from tests.helpers import harness, run

probe.install()  # as in a worker: the custom gradients below are then observed

ALL = ("eager", "function", "graph")
EXTRA = ("no_autograph", "xla", "saved_model")


def _case(fn, points, order=1, **fields):
    return Case(id="tests.upstream", fn=fn, points=points, order=order, source="tests",
                description="an upstream-gradient test", **fields)


def weight(case, point, order, target=0, shape=()):
    """The upstream weights the check hands the grad_fn at `order` (its input, by construction)."""
    return upstream.weights(upstream.seed(case.id, case.points[point].label), order, target, shape)


@tf.custom_gradient
def square_forgets_dy(x):
    def grad(dy):
        return 2.0 * x  # should be dy * 2.0 * x

    return x * x, grad


@tf.custom_gradient
def square(x):
    def grad(dy):
        return dy * 2.0 * x

    return x * x, grad


@tf.custom_gradient
def square_reduces_dy(x):
    def grad(dy):
        return 2.0 * x * tf.reduce_mean(dy)  # should be elementwise

    return x * x, grad


@tf.custom_gradient
def cube_ignores_ddy(x):
    """x**3 whose first derivative is a custom gradient of (x, dy) whose own gradient
    returns the true second derivative 6 x dy but ignores its upstream ddy."""

    @tf.custom_gradient
    def first(x, dy):
        def second(ddy):
            return 6.0 * x * dy, 3.0 * x * x  # should be ddy * 6x dy, ddy * 3x^2

        return dy * 3.0 * x * x, second

    return x * x * x, lambda dy: first(x, dy)


@tf.custom_gradient
def cube_nested(x):
    @tf.custom_gradient
    def first(x, dy):
        def second(ddy):
            return ddy * 6.0 * x * dy, ddy * 3.0 * x * x

        return dy * 3.0 * x * x, second

    return x * x * x, lambda dy: first(x, dy)


SQUARE_POINTS = [{"x": np.float32(3.0)}, {"x": np.array([1.0, 2.0], np.float32)}]


@pytest.fixture(scope="module")
def forgets_dy():
    return {order: run(_case(square_forgets_dy, SQUARE_POINTS, order=order)) for order in (1, 2)}


@pytest.mark.parametrize("order", [1, 2])
def test_a_grad_fn_that_forgets_dy_fails_with_the_upstream_cause(forgets_dy, order):
    case = _case(square_forgets_dy, SQUARE_POINTS, order=order)
    scalar, vector = forgets_dy[order]
    for r in (scalar, vector):
        assert r.verdict is Verdict.FAIL
        assert r.oracles["numeric"].status == "match"  # at the plain contraction it is right
        assert r.oracles["upstream"].status == "differ" and r.oracles["upstream"].differ == (1,)
        # Linearity in dy leads (no numeric derivative needed), then the upstream oracle's cause.
        assert r.reason.startswith("grad_fn is not linear in its upstream gradient: order 1 "
                                   "gradient wrt x"), r.reason
        assert "grad_fn drops its upstream gradient" in r.reason
        upstream = next(d for d in r.details
                        if d.startswith("grad_fn mishandles its upstream gradient: "))
        assert upstream.startswith("grad_fn mishandles its upstream gradient: at order 1 with "
                                   "upstream weights")
        assert upstream.endswith("at the plain contraction (every upstream gradient 1) both agree")
    # At x = 3 the grad_fn says 2x = 6 whatever dy is; d/dx (w x^2) = 2 w x = 6 w.
    w = float(weight(case, 0, 1))
    said = " ".join(scalar.details)
    assert f"eager=6 numeric={6 * w:.8g}" in said
    assert f"upstream weights [{w:g}]" in said
    # Every mode computes the same wrong weighted gradient, so they agree with each other.
    for o in scalar.outcomes.values():
        assert float(o.upstream[0][0].value) == pytest.approx(6.0)


def test_a_grad_fn_that_uses_dy_passes_and_its_weighted_values_are_the_closed_form():
    case = _case(square, SQUARE_POINTS, order=2)
    for i, r in enumerate(run(case)):
        assert r.verdict is Verdict.PASS, r.reason
        assert (
            r.reason
            == "all modes agree, and match the numeric derivative, with and without upstream"
            " weights; the gradient is linear in its upstream gradient dy"
        )
        x = case.points[i].values[0].astype(np.float64)
        w1, w2 = weight(case, i, 1, shape=x.shape), weight(case, i, 2, shape=x.shape)
        for o in r.outcomes.values():
            np.testing.assert_allclose(o.upstream[0][0].value, 2 * w1 * x)  # d/dx sum(w1 x^2)
            np.testing.assert_allclose(o.upstream[1][0].value, 2 * w1 * w2)  # d/dx sum(w2 2 w1 x)
            # The reported orders stay at the plain contraction: 2x and 2.
            np.testing.assert_allclose(o.orders[1][0].value, 2 * x)


def test_a_grad_fn_that_reduces_dy_fails_on_a_vector():
    case = _case(square_reduces_dy, [{"x": np.array([1.0, 2.0, 3.0], np.float32)}])
    [r] = run(case)
    assert r.verdict is Verdict.FAIL and r.oracles["upstream"].status == "differ"
    w = weight(case, 0, 1, shape=(3,))
    # Checked again element by element: the worst element, both values from closed forms.
    given, true = 2 * np.array([1.0, 2.0, 3.0]) * w.mean(), 2 * np.array([1.0, 2.0, 3.0]) * w
    worst = int(np.argmax(np.abs(given - true) - 2e-3 * np.abs(true)))
    assert f"order 1 gradient wrt x[{worst}]: eager={given[worst]:.8g} numeric=" in r.reason
    assert "of 3 elements of x" in r.reason


def test_a_nested_second_order_function_that_ignores_ddy_fails_at_order_2():
    points = [{"x": np.float32(1.5)}]
    [bad] = run(_case(cube_ignores_ddy, points, order=2))
    [good] = run(_case(cube_nested, points, order=2))
    assert good.verdict is Verdict.PASS, good.reason
    assert bad.verdict is Verdict.FAIL
    assert bad.oracles["numeric"].status == "match"
    assert bad.oracles["upstream"].differ == (2,)
    case = _case(cube_ignores_ddy, points, order=2)
    w1, w2 = float(weight(case, 0, 1)), float(weight(case, 0, 2))
    # second() gets dy = w1 and ddy = w2: it returns 6 x w1 = 13.5 w1; the truth is 6 x w1 w2.
    assert bad.reason.startswith("grad_fn mishandles its upstream gradient: at order 2")
    assert f"eager={9 * w1:.8g} numeric=" in bad.reason
    numeric = float(re.search(r"numeric=(\S+)", bad.reason).group(1))
    assert numeric == pytest.approx(9 * w1 * w2, rel=1e-4)  # a central difference, in float64


def test_the_upstream_check_runs_in_the_extra_modes_too():
    case = _case(square_forgets_dy, [{"x": np.float32(3.0)}])
    [r] = run(case, ALL + EXTRA)
    assert r.verdict is Verdict.FAIL and r.oracles["upstream"].status == "differ"
    for mode in EXTRA:
        assert float(r.outcomes[mode].upstream[0][0].value) == pytest.approx(6.0), mode


def test_noupstream_turns_the_check_off_and_brings_back_the_false_pass():
    [r] = run(_case(square_forgets_dy, [{"x": np.float32(3.0)}]), upstream=False)
    assert r.verdict is Verdict.PASS and "upstream" not in r.oracles
    assert all(o.upstream == () for o in r.outcomes.values())


# -- item 3: oracles never go quiet ---------------------------------------------------------


def test_an_oracle_that_raises_is_an_error_naming_it(monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(numeric, "_check_order", broken)
    [r] = run(_case(square, [{"x": np.float32(3.0)}]))
    assert r.verdict is Verdict.ERROR
    assert r.reason.startswith("numeric oracle: the numeric oracle itself raised KeyError: 'boom'")
    assert r.oracles["upstream"].status == "error"


def test_when_the_reference_raises_the_numeric_oracle_checks_the_first_mode_with_values():
    @tf.custom_gradient
    def eager_refuses(x):
        # The numeric oracle evaluates eagerly too, but in float64.
        if tf.executing_eagerly() and x.dtype == tf.float32:
            raise ValueError("not eagerly")

        def grad(dy):
            return dy * 3.0 * x * x

        return x * x * x, grad

    [r] = run(_case(eager_refuses, [{"x": np.float32(2.0)}]))
    assert r.outcomes["eager"].status.value == "error"
    numeric = r.oracles["numeric"]
    assert numeric.status == "match"  # 3 x^2 = 12 is the derivative of x^3 at 2
    assert (
        "checked on function's values, since eager (the yardstick mode) raised ValueError"
        in numeric.note
    )
    # The headline is eager's error, and it does not claim that the others raise it too.
    assert r.verdict is Verdict.FAIL
    assert r.reason.startswith("eager raises ValueError at forward: not eagerly (no other mode "
                               "that ran raises it;")
    assert any(d.startswith("function vs eager: function returns values") for d in r.details)


def test_a_none_gradient_is_printed_as_none_and_nan_is_said_in_words():
    @tf.custom_gradient
    def product_drops_y(x, y):
        def grad(dy):
            return dy * y, None  # d/dy (x y) = x = 2

        return x * y, grad

    # Named in wrt, y's None is judged: not the function saying it has no gradient there.
    [r] = run(_case(product_drops_y, [{"x": np.float32(2.0), "y": np.float32(5.0)}],
                    wrt=("x", "y")))
    assert r.verdict is Verdict.FAIL
    assert "order 1 gradient wrt y: eager=None (unconnected) numeric=2" in r.reason

    @tf.custom_gradient
    def nan_gradient(x):
        def grad(dy):
            return dy * x * np.float32("nan")

        return 2.0 * x, grad

    [r] = run(_case(nan_gradient, [{"x": np.float32(1.0)}]))
    assert (
        "eager=nan numeric=2 the gradient is nan where the numeric derivative is finite" in r.reason
    )
    assert "abs err inf" not in r.reason


# -- item 4: surrogate gradients ------------------------------------------------------------


def _sign_ste():
    from harness.measure import probe

    # as in a worker: the decorator below is then observed, so the case has a custom gradient
    probe.install()

    @tf.custom_gradient
    def sign_ste(x):
        def grad(dy):
            return dy  # straight-through

        return tf.sign(x), grad

    return sign_ste


def test_a_straight_through_estimator_is_named_a_surrogate_and_can_be_declared():
    sign_ste = _sign_ste()
    points = [{"x": np.array([0.5, -1.25, 2.0], np.float32)}]
    # It points the way sign moves and is linear in dy: a checked surrogate, passed.
    [r] = run(_case(sign_ste, points))
    assert r.verdict is Verdict.PASS, r.reason
    assert "the custom gradient is a surrogate at 3 of 3 elements of x" in r.reason
    # --strict_surrogate fails it, as every surrogate failed before its direction was checked.
    [r] = run(_case(sign_ste, points), strict_surrogate=True)
    assert r.verdict is Verdict.FAIL
    assert "the function is locally constant here" in r.reason
    assert "is a surrogate, not a derivative" in r.reason
    assert "Expectation(modes=('numeric',), outcome=SURROGATE" in r.reason
    # The estimator is right about dy (it passes it through), so no upstream cause is invented:
    # the weighted values differ only where the plain ones do, and the note says why.
    assert r.oracles["upstream"].status == "skip"
    assert r.oracles["upstream"].note.startswith("not checked at order 1: where the plain values "
                                                 "differ the forward is locally constant")
    assert "either may be the wrong one" not in r.oracles["upstream"].note
    declared = Expectation(modes=["numeric"], outcome=SURROGATE,
                           reason="a straight-through estimator")
    [r] = run(_case(sign_ste, points, expectations=[declared]), strict_surrogate=True)
    assert r.verdict is Verdict.XFAIL, r.reason


def test_a_smooth_function_with_a_wrong_gradient_is_not_called_a_surrogate():
    @tf.custom_gradient
    def abs_with_one(x):
        def grad(dy):
            return dy * 5.0  # |x|'s derivative is sign(x) = 1 at x = 0.5

        return tf.abs(x), grad

    [r] = run(_case(abs_with_one, [{"x": np.float32(0.5)}]))
    assert r.verdict is Verdict.FAIL and "locally constant" not in r.reason


# -- item 5: symmetric inputs ---------------------------------------------------------------

SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]], np.float64)


@tf.custom_gradient
def logdet(a):
    """log det A through the Cholesky factor (which reads A's lower triangle); the
    gradient is inv(A), the symmetric derivative of log det."""
    chol = tf.linalg.cholesky(a)

    def grad(dy):
        return dy * tf.linalg.inv(a)

    return 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol))), grad


def test_a_cholesky_log_determinant_is_a_false_alarm_without_the_symmetric_declaration():
    [r] = run(_case(logdet, [{"a": SPD}]), numeric_full=True)
    assert r.verdict is Verdict.FAIL and r.oracles["numeric"].status == "differ"
    [r] = run(_case(logdet, [{"a": SPD}], symmetric=["a"]), numeric_full=True)
    assert r.verdict is Verdict.PASS, r.reason
    [r] = run(_case(logdet, [{"a": SPD}], symmetric=["a"]))
    assert r.verdict is Verdict.PASS, r.reason
    # The closed form: d log det A = tr(inv(A) dA), so every order 1 value is inv(A).
    np.testing.assert_allclose(r.outcomes["eager"].orders[1][0].value, np.linalg.inv(SPD),
                               rtol=1e-12)


def test_a_difference_only_in_one_triangle_says_so():
    @tf.custom_gradient
    def lower_sum(a):
        def grad(dy):
            return dy * tf.ones_like(a)  # the full matrix, but only the lower triangle is read

        return tf.reduce_sum(tf.linalg.band_part(a, -1, 0)), grad

    [r] = run(_case(lower_sum, [{"a": SPD}]))
    assert r.verdict is Verdict.FAIL
    assert "every difference sits in the strict upper triangle of a" in r.reason
    assert "of 9 elements of a" in r.reason  # 3 of them: (0,1), (0,2), (1,2)
    assert "(3 of 9 elements of a differ)" in r.reason


def test_symmetric_must_name_a_square_argument():
    from harness.case import CaseError

    with pytest.raises(CaseError, match="square in its last two axes"):
        _case(lambda x: x, [{"x": np.zeros((2, 3), np.float32)}], symmetric=["x"])
    with pytest.raises(CaseError, match="not a differentiated argument"):
        _case(lambda x: x, [{"x": np.zeros((2, 2), np.float32)}], symmetric=["y"])


# -- item 7: true explanations --------------------------------------------------------------


def test_an_error_while_recording_for_a_higher_order_is_labelled_with_both():
    @tf.custom_gradient
    def grad_raises(x):
        def grad(dy):
            raise ValueError("no gradient here")

        return x * 2.0, grad

    [r] = run(_case(grad_raises, [{"x": np.float32(1.0)}], order=2))
    assert r.outcomes["eager"].error.stage == "order 1, while recording for order 2"
    assert r.outcomes["function"].error.stage == "order 1, while recording for order 2"
    assert r.outcomes["graph"].error.stage == "order 1"  # tf.gradients records nothing


def test_a_custom_gradient_is_named_by_the_users_function():
    def users_function(x):
        return x

    @functools.wraps(users_function)
    def library_wrapper(*args):
        return users_function(*args)

    assert probe.name_of(library_wrapper).endswith("users_function")
    assert probe.name_of(functools.partial(users_function)).endswith("users_function")
    assert probe.name_of(tf.function(users_function)).endswith("users_function")

    def tf__converted(x):
        return x

    assert probe.name_of(tf__converted).endswith(".converted")


# -- item 6: check covers what real code needs ----------------------------------------------

CHECKED = """
import tensorflow as tf


@tf.custom_gradient
def square(x):
    def grad(dy):
        return 2.0 * x  # forgets dy
    return x * x, grad


@tf.custom_gradient
def scale_by(x, k):
    def grad(dy):
        return dy * k, None  # the library documents that k has no gradient
    return x * k, grad


@tf.custom_gradient
def sign_ste(x):
    return tf.sign(x), lambda dy: dy


@tf.custom_gradient
def logdet(a):
    chol = tf.linalg.cholesky(a)
    logdet = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol)))
    return logdet, lambda dy: dy * tf.linalg.inv(a)


def refuses(x):
    raise ValueError("refuses(x) is documented to raise")
"""


def _check(tmp_path, *args):
    import json

    target = tmp_path / "mine.py"
    target.write_text(CHECKED)
    out = tmp_path / "r.json"
    proc = harness("check", f"{target}:{args[0]}", *args[1:], f"--json_out={out}")
    return proc, (json.loads(out.read_text())["results"] if out.exists() else [])


@pytest.mark.slow
def test_check_fails_the_square_that_forgets_dy_in_every_full_mode(tmp_path):
    for order in (1, 2):
        proc, results = _check(tmp_path, "square", "--inputs=3.0", "--inputs=[1.0, 2.0]",
                               f"--order={order}", "--mode=full")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        for r in results:
            assert r["verdict"] == "fail"
            assert (
                r["oracles"]["upstream"]["status"] == "differ"
                and r["oracles"]["numeric"]["status"] == "match"
            )
            lines = [r["reason"]] + r["details"]
            assert any(line.startswith("grad_fn mishandles its upstream gradient: at order 1")
                       for line in lines)
            # Every mode that calls grad_fn gets 2x from it whatever dy is (x = 3: 6; x = [1, 2]:
            # [2, 4]).
            for mode in ("eager", "no_autograph", "function", "xla", "graph", "saved_model"):
                got = r["modes"][mode]["upstream"][0][0]["value"]
                assert got == (6.0 if r["point"] == "x=3.0" else [2.0, 4.0]), (mode, got)
        if order == 1:
            # Linearity in dy leads: it says what the gradient does with dy (drops it).
            assert all(r["reason"].startswith("grad_fn is not linear in its upstream gradient")
                       and "grad_fn drops its upstream gradient" in r["reason"]
                       for r in results)
    assert "upstream:differ" in proc.stdout
    proc, results = _check(tmp_path, "square", "--inputs=3.0", "--noupstream")
    assert proc.returncode == 0 and "--noupstream" in results[0]["rerun"]


@pytest.mark.slow
def test_check_wrt_expect_and_symmetric(tmp_path):
    # k has no gradient by design: --wrt x differentiates x alone, and d(xk)/dx = k = 3.
    proc, [r] = _check(tmp_path, "scale_by", "--inputs=(2.0, 3.0)", "--wrt=x")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        r["modes"]["eager"]["orders"][1][0]["value"] == 3.0
        and len(r["modes"]["eager"]["sources"]) == 1
    )
    # A straight-through estimator, declared a surrogate from the command line.
    proc, [r] = _check(tmp_path, "sign_ste", "--inputs=[0.5, -2.0]",
                       "--expect=numeric:surrogate:an STE")
    assert proc.returncode == 0 and r["verdict"] == "xfail", proc.stdout
    assert (
        "an STE" in " ".join(r["details"]) and "--expect=numeric:surrogate:an STE" in r["rerun"]
    )
    # Declared as surrogates were before the harness checked them, a numeric difference: an
    # xpass that says the harness changed, not TensorFlow, and how to declare it now.
    proc, [r] = _check(tmp_path, "sign_ste", "--inputs=[0.5, -2.0]",
                       "--expect=numeric:values differ:an STE")
    assert proc.returncode == 0 and r["verdict"] == "xpass", proc.stdout
    assert "now checks a surrogate gradient" in r["reason"], r["reason"]
    assert "--expect 'numeric:surrogate:REASON'" in r["reason"]
    assert "TensorFlow fixed it" not in r["reason"]
    # An error every mode is meant to raise.
    proc, [r] = _check(tmp_path, "refuses", "--inputs=-1.0", "--expect=all:ValueError")
    assert proc.returncode == 0 and r["verdict"] == "xfail", proc.stdout
    spd = "--inputs=[[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]]"
    proc, [r] = _check(tmp_path, "logdet", spd, "--dtype=float64", "--numeric_full")
    assert r["verdict"] == "fail", proc.stdout
    proc, [r] = _check(tmp_path, "logdet", spd, "--dtype=float64", "--numeric_full",
                       "--symmetric=a")
    assert proc.returncode == 0 and r["verdict"] == "pass", proc.stdout


def test_check_flags_outside_check_are_usage_errors(tmp_path):
    proc = harness("--wrt=x", timeout=60)
    assert proc.returncode == 2 and "describe the function of check" in proc.stderr
    proc = harness("check", "mine.py:f", "--inputs=1.0", "--expect=bogus", timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("harness: error: --expect 'bogus'")


def test_check_help_lists_the_check_flags():
    proc = harness("check", "--help", timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: python -m harness check "
                                                           "PATH.py:NAME")
    for flag in ("--inputs", "--order=1", "--wrt", "--expect", "--symmetric", "--[no]upstream",
                 "--[no]numeric"):
        assert f"\n  {flag}\n" in proc.stdout, flag
    proc = harness("--help", timeout=60)
    assert "--[no]upstream" in proc.stdout and "--wrt" not in proc.stdout


def test_a_weighted_chain_that_raises_is_seen_even_where_the_numeric_oracle_skips():
    @tf.custom_gradient
    def needs_unit_dy(x):
        def grad(dy):
            tf.debugging.assert_equal(dy, tf.ones_like(dy), message="dy must be ones")
            return dy * 2.0 * x

        return x * x, grad

    # Declared not smooth: the numeric oracle skips, the weighted chain's error is still a failure.
    [r] = run(_case(needs_unit_dy, [{"x": np.float32(3.0)}], kinks={"*": "a test"}), ("eager",))
    assert r.verdict is Verdict.FAIL and r.oracles["upstream"].status == "differ"
    assert r.reason.startswith("grad_fn fails when its upstream gradient is not all ones: eager "
                               "raises InvalidArgumentError at order 1 with upstream weights: dy "
                               "must be ones")


def test_the_surrogate_sentence_names_only_the_flat_argument():
    @tf.custom_gradient
    def rounded_plus_square(x, y):
        def grad(dy):
            return dy, dy * 2.0 * y  # straight-through for round(x); the true derivative for y^2

        return tf.round(x) + y * y, grad

    [r] = run(_case(rounded_plus_square, [{"x": np.float32(0.3), "y": np.float32(1.5)}]),
              strict_surrogate=True)
    assert r.verdict is Verdict.FAIL
    assert "the function is locally constant in x here" in r.reason
    # At order 2 an affine first derivative is constant too: no surrogate is claimed there.
    [r] = run(_case(square, [{"x": np.float32(3.0)}], order=2,
                    analytic=lambda x: {2: np.float32(2.0)}))
    assert r.verdict is Verdict.PASS
