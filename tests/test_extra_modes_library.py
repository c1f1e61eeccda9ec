"""The extra modes on a few library cases, with numbers that have reasons of their own:
closed forms, the #40166 report, and what TensorFlow's forward mode is documented to
compute (the body's JVP when it has one)."""

import math

import numpy as np
import pytest

from harness import Verdict
from harness.records import Status
from tests import helpers


@pytest.fixture(scope="module")
def library(library_cases):
    return {c.id: c for c in library_cases}


def run(case, modes, **options):
    return {r.point: r for r in helpers.run(case, modes, **options)}


def scalar(outcome, order):
    return float(outcome.orders[order][0].value)


def test_saved_model_keeps_the_custom_gradient_and_nocg_loses_it(library):
    # tensorflow#40166: the docstring's log1pexp, whose custom gradient is 1 at x = 100 where
    # autodiff of log(1 + e) is inf / inf.
    results = run(library["regressions.saved_model_40166"], ("eager", "saved_model",
                                                             "saved_model_nocg"),
                  numeric=False)
    at_100 = results["x=100.0"]
    assert at_100.verdict is Verdict.XFAIL, at_100.reason
    assert scalar(at_100.outcomes["saved_model"], 1) == 1.0
    assert scalar(results["x=0.0"].outcomes["saved_model"], 1) == 0.5  # sigmoid(0)
    nocg = at_100.outcomes["saved_model_nocg"]
    assert nocg.status is Status.ERROR and nocg.error.is_a("LookupError")


def test_saved_model_loses_a_nested_custom_gradient(library):
    # The seed's second_order_gradient is a custom gradient inside grad_fn: not saved.
    results = run(library["seeds.log1pexp2"], ("eager", "saved_model"), numeric=False)
    outcome = results["x=1.0"].outcomes["saved_model"]
    # Raised while the order 2 tape records order 1, where the inner custom gradient is needed.
    assert (
        outcome.error.is_a("LookupError")
        and outcome.error.stage == "order 1, while recording for order 2"
    )
    assert results["x=1.0"].verdict is Verdict.XFAIL


def test_forward_mode_uses_grad_fn_only_where_the_body_has_no_jvp(library):
    # ste_round's body tf.round has no JVP, so grad_fn's identity is used: gradient 1 everywhere.
    [ste] = run(library["patterns.ste_round"], ("eager", "forward"), numeric=False).values()
    assert ste.verdict is Verdict.PASS, ste.reason
    assert np.array_equal(ste.outcomes["forward"].orders[1][0].value, np.ones(5, np.float32))
    # gradient_reversal's body is tf.identity: forward mode says +1, grad_fn says -0.5.
    [reverse] = run(library["patterns.gradient_reversal"], ("eager", "forward"),
                    numeric=False).values()
    assert reverse.verdict is Verdict.XFAIL
    assert np.array_equal(reverse.outcomes["forward"].orders[1][0].value, np.ones(5, np.float32))
    assert np.array_equal(reverse.outcomes["eager"].orders[1][0].value,
                          np.full(5, -0.5, np.float32))


def test_forward_over_reverse_reads_the_seed_true_second_derivative(library):
    # The inner custom op's body returns the captured first derivative, so forward mode
    # differentiates sigmoid itself: sigmoid(1)(1 - sigmoid(1)), not the seed's 1 - e.
    results = run(library["seeds.log1pexp2"], ("eager", "forward"), numeric=False)
    forward = results["x=1.0"].outcomes["forward"]
    s = 1 / (1 + math.exp(-1.0))
    assert scalar(forward, 1) == pytest.approx(s, rel=1e-6)
    assert scalar(forward, 2) == pytest.approx(s * (1 - s), rel=1e-6)
    assert scalar(results["x=1.0"].outcomes["eager"], 2) == pytest.approx(1 - math.e, rel=1e-6)


@pytest.mark.parametrize("case_id", ["docs.log1pexp", "patterns.logsumexp",
                                     "keras.custom_gradient_layer_weights"])
def test_every_mode_of_full_agrees_on_well_behaved_cases(library, case_id):
    modes = ("eager", "no_autograph", "function", "xla", "graph", "forward", "saved_model")
    for result in run(library[case_id], modes).values():
        assert result.verdict in (Verdict.PASS, Verdict.XFAIL), result.reason
        assert all(o.status is Status.OK for o in result.outcomes.values()), result.outcomes
