"""The oracles, the gradient-use probe and repeated runs, on real TensorFlow.

Every expected number here has a reason outside the harness: a closed form,
the StackOverflow seed's printed values, or TensorFlow's documented behaviour.
"""

import math
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from harness import Case, Expectation, VALUES_DIFFER, Verdict
from harness.measure import probe
from harness.cases import docs, seeds
from tests.helpers import run

ALL = ("eager", "function", "graph")


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


@tf.custom_gradient
def cube_with_wrong_gradient(x):
    """x**3 whose gradient is 2x**2 (the true one is 3x**2): every mode agrees on it."""

    def grad(dy):
        return dy * 2 * x * x

    return x * x * x, grad


def _case(fn, values, **fields):
    return Case(id="tests.oracle", fn=fn, points=[{"x": v} for v in values], source="tests",
                description="an oracle test", **fields)


# -- numeric --------------------------------------------------------------------------------


def test_a_wrong_gradient_every_mode_agrees_on_fails_on_the_numeric_oracle():
    [r] = run(_case(cube_with_wrong_gradient, [np.float32(2.0)]))
    assert all(o.status.value == "ok" for o in r.outcomes.values())
    assert r.verdict is Verdict.FAIL
    # 2 x**2 = 8 against the true 3 x**2 = 12 at x = 2.
    assert "order 1 gradient wrt x: eager=8 numeric=12" in r.reason
    assert r.oracles["numeric"].differ == (1,)


def test_the_seed_second_derivative_is_consistent_but_not_the_true_one():
    case = next(c for c in seeds.CASES if c.id == "seeds.log1pexp2")
    results = {r.point: r for r in run(case)}
    at_one = results["x=1.0"]
    assert at_one.verdict is Verdict.XFAIL
    numeric = at_one.oracles["numeric"]
    assert numeric.differ == (2,)  # order 1, sigmoid, is right
    # The seed prints -1.7182817; the true second derivative is sigmoid(1)(1 - sigmoid(1)).
    assert f"eager=-1.7182817 numeric={sigmoid(1) * (1 - sigmoid(1)):.8g}" in numeric.details[0]
    assert "float64" in numeric.note


def test_every_element_by_default_an_elementwise_one_from_one_shift_random_only_above_the_limit(
    monkeypatch,
):
    from harness.measure.oracles import numeric

    x = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    summed = _case(lambda x: tf.reduce_sum(tf.sin(x)), [x])  # one output: no element of its own
    [r] = run(summed, modes=("eager",))
    assert r.verdict is Verdict.PASS
    assert (
        r.oracles["numeric"].note
        == "central differences in float64 with step 7.62939e-06, every element"
    )
    [r] = run(_case(tf.sin, [x]), modes=("eager",))  # elementwise: every element from one shift
    assert r.verdict is Verdict.PASS
    assert (
        "; x read element by element from one shift of all its elements" in r.oracles[
            "numeric"
        ].note
    )
    [r] = run(_case(tf.sin, [x]), modes=("eager",), numeric_full=True)
    assert (
        r.oracles["numeric"].note
        == "central differences in float64 with step 7.62939e-06, every element"
    )
    monkeypatch.setattr(numeric, "ELEMENT_LIMIT", 3)
    [r] = run(summed, modes=("eager",))
    assert "random directions within each source (more elements than checked one by one; each " \
        "source judged at its own dtype's tolerance)" in r.oracles["numeric"].note


def test_a_function_that_refuses_float64_is_differenced_in_its_own_dtype():
    fn = lambda x: x * tf.constant(3.0, tf.float32)  # noqa: E731 - float64 x cannot multiply it
    [r] = run(_case(fn, [np.float32(2.0)]), modes=("eager",))
    assert r.verdict is Verdict.PASS
    assert "in float32" in r.oracles["numeric"].note


def test_declared_kinks_are_not_checked_numerically():
    case = _case(lambda x: tf.abs(x), [np.float32(0.0), np.float32(1.0)],
                 kinks={"x=0.0": "|x| at 0"})
    at_zero, at_one = run(case, modes=("eager",))
    assert at_zero.oracles["numeric"].status == "skip"
    assert "declared not checked numerically here: |x| at 0" in at_zero.oracles["numeric"].note
    assert at_one.oracles["numeric"].status == "match"


def test_the_numeric_oracle_finds_the_docstring_linear_poly_variable_gradient_swapped():
    case = next(c for c in docs.CASES if c.id == "docs.linear_poly")
    [r] = run(case, numeric_full=True)
    assert r.verdict is Verdict.XFAIL
    details = " ".join(r.oracles["numeric"].details)
    # poly = w1 x + w0 with w = [1, 1] and x = [1, 2, 3]: d/dw0 = n = 3, d/dw1 = sum(x) = 6.
    # Both elements are off by 3: the worst is either, and the counts say both differ.
    assert (
        "wrt var0[0]: eager=6 numeric=3" in details or "wrt var0[1]: eager=3 numeric=6" in details
    )
    assert "(2 of 2 elements of var0 differ)" in details


def test_nonumeric_turns_it_off():
    [r] = run(_case(cube_with_wrong_gradient, [np.float32(2.0)]), numeric=False)
    assert r.verdict is Verdict.PASS
    # Only the linearity oracle, which needs no numeric derivative, is left: the wrong cube's
    # gradient is linear in dy.
    assert list(r.oracles) == ["linearity"] and r.oracles["linearity"].status == "match"
    [r] = run(_case(cube_with_wrong_gradient, [np.float32(2.0)]), numeric=False, upstream=False)
    assert r.oracles == {}


# -- reference and analytic -----------------------------------------------------------------


def softplus_plain(x):
    return tf.math.log(1 + tf.exp(x))


def test_the_reference_oracle_compares_ordinary_autodiff_order_by_order():
    good = _case(docs.log1pexp, [np.float32(0.0), np.float32(2.0)], reference=softplus_plain,
                 order=2)
    assert [r.oracles["reference"].status for r in run(good)] == ["match", "match"]
    bad = _case(cube_with_wrong_gradient, [np.float32(2.0)], reference=lambda x: x * x * x)
    [r] = run(bad, numeric=False)
    assert r.verdict is Verdict.FAIL
    assert "the agreed values differ from the reference implementation at order 1" in r.reason
    assert "eager=8 reference=12" in r.reason


def test_the_analytic_oracle_compares_closed_forms():
    closed = lambda x: {0: x ** 3, 1: 3 * x ** 2}  # noqa: E731
    [r] = run(_case(cube_with_wrong_gradient, [np.float32(2.0)], analytic=closed), numeric=False)
    assert r.verdict is Verdict.FAIL
    assert r.oracles["analytic"].differ == (1,)
    assert "eager=8 analytic=12" in r.oracles["analytic"].details[0]
    declared = Expectation(modes=["analytic"], outcome=VALUES_DIFFER, orders=[1],
                           reason="2x**2 on purpose")
    [r] = run(_case(cube_with_wrong_gradient, [np.float32(2.0)], analytic=closed,
                    expectations=[declared]),
              numeric=False)
    assert r.verdict is Verdict.XFAIL


def test_a_broken_analytic_oracle_is_the_case_s_error():
    [r] = run(_case(tf.sin, [np.float32(1.0)], analytic=lambda x: {3: 0.0}))
    assert r.verdict is Verdict.ERROR
    assert "analytic gives order 3; the case computes orders 0 to 1" in r.reason


# -- was the custom gradient used? --------------------------------------------------------


def test_the_probe_sees_the_eager_fallback_of_a_keyword_call():
    probe.install()  # a function must be decorated after this to be observed

    @tf.custom_gradient
    def bar(x, y):
        def grad(upstream):
            return 1000 * upstream, upstream

        return x * y, grad

    positional = _case(lambda x: bar(x, tf.constant(2.0)), [np.float32(3.0)])
    [r] = run(positional, modes=("eager", "function"), numeric=False)
    assert r.verdict is Verdict.PASS
    assert r.outcomes["eager"].usage.unused == ()
    keywords = _case(lambda x: bar(x=x, y=tf.constant(2.0)), [np.float32(3.0)])
    [r] = run(keywords, modes=("eager",), numeric=False)
    # tensorflow#65839: the tape differentiates x * y, so the gradient is y = 2, not 1000.
    assert float(r.outcomes["eager"].orders[1][0].value) == 2.0
    assert r.outcomes["eager"].usage.unused == (r.outcomes["eager"].usage.ran[0],)
    assert r.verdict is Verdict.FAIL
    assert "eager never called the custom gradient of" in r.reason


# -- repeated runs ------------------------------------------------------------------------


def test_a_random_op_without_a_seed_is_flaky_with_repeat():
    noisy = _case(lambda x: x * tf.random.uniform([]), [np.float32(1.0)])
    [r] = run(noisy, modes=("eager", "graph"), numeric=False, repeat=2)
    assert r.verdict is Verdict.FLAKY
    assert "results change between runs" in r.reason


def test_a_deterministic_case_is_not_flaky():
    [r] = run(_case(tf.sin, [np.float32(1.0)]), repeat=2)
    assert r.verdict is Verdict.PASS


@pytest.mark.parametrize("mode", ["xla", "no_autograph"])
def test_the_ladder_modes_run_the_seed(mode):
    case = next(c for c in seeds.CASES if c.id == "seeds.custom_square")
    [r] = run(case, modes=("eager", mode))
    assert r.verdict is Verdict.PASS, r.reason
    assert r.outcomes[mode].orders == r.outcomes["eager"].orders


def test_the_docs_case_file_runs_as_its_page_says(tmp_path):
    text = (Path(__file__).resolve().parent.parent / "docs" / "writing-cases.md").read_text()
    start = text.index("```python\nimport numpy as np\nimport tensorflow as tf\nfrom harness "
                       "import VALUES_DIFFER")
    source = text[start + len("```python\n"):text.index("```", start + 10)]
    namespace: dict = {}
    exec(compile(source, "docs/writing-cases.md", "exec"), namespace)  # noqa: S102 - its example
    [case] = namespace["CASES"]
    results = run(case)
    assert [r.verdict for r in results] == [Verdict.PASS, Verdict.XFAIL]
    assert [r.oracles["reference"].status for r in results] == ["match", "differ"]
    assert all(r.oracles["analytic"].status == "match" for r in results)


def test_the_ladder_names_tracing_as_the_step_where_results_part():
    traced_differently = lambda x: x * (2.0 if tf.executing_eagerly() else 3.0)  # noqa: E731
    [r] = run(_case(traced_differently, [np.float32(1.0)]),
              modes=("eager", "no_autograph", "function", "xla", "graph"), numeric=False)
    assert r.verdict is Verdict.FAIL
    assert r.details[1].startswith("along the ladder eager > no_autograph > function > xla > "
                                   "graph: the results part between eager and no_autograph")
