"""The verdict rules added with the oracles: oracle expectations, skipped modes,
gradient use, repeated runs and the ladder. Hand-built records in, one Result out."""

import dataclasses

import numpy as np
import pytest

from harness.case import GRADIENT_UNUSED, VALUES_DIFFER, CaseError, Expectation
from harness.records import ModeOutcome, OracleOutcome, Status, Usage, Verdict
from harness.judge.verdict import judge
from tests.unit.outcomes import RERUN, TF, make_case, ok, raised


def run(case, *outcomes, oracles=None, repeats=None, point=0):
    return judge(case, case.points[point].label, {o.mode: o for o in outcomes}, tf_version=TF,
                 reference="eager", rerun=RERUN, oracles=oracles, repeats=repeats)


def agreeing(*modes):
    return [ok(m) for m in modes or ("eager", "function", "graph")]


SO_NUMERIC = OracleOutcome(name="numeric", status="differ", orders=(1, 2), differ=(2,),
                           details=("order 2 gradient wrt x: eager=-1.7182817 numeric=0.19661193 "
                                    "...",))
MATCH = OracleOutcome(name="numeric", status="match", orders=(1,))


# -- oracles ------------------------------------------------------------------------------


def test_consistent_but_wrong_is_a_failure_that_says_so():
    r = run(make_case(order=2), *agreeing(), oracles={"numeric": SO_NUMERIC})
    assert r.verdict is Verdict.FAIL
    assert r.reason.startswith("the agreed values differ from the numeric derivative at order 2")
    assert "-1.7182817" in r.reason and "0.19661193" in r.reason
    assert r.oracles["numeric"] is SO_NUMERIC


def test_a_matching_oracle_is_named_in_the_pass_reason():
    r = run(make_case(), *agreeing(), oracles={"numeric": MATCH})
    assert r.verdict is Verdict.PASS
    assert r.reason == "all modes agree, and match the numeric derivative"


def test_a_pass_an_oracle_checked_is_not_marked_unchecked():
    r = run(make_case(), *agreeing(), oracles={"numeric": MATCH})
    assert r.verdict is Verdict.PASS and r.unchecked == ""


def test_a_pass_at_which_every_oracle_skipped_is_marked_unchecked():
    # A gradient of 1.3e154 at x = 0, by design, which no oracle can judge.
    skip = {"numeric": OracleOutcome(name="numeric", status="skip",
                                     note="not finite within a step of the point"),
            "upstream": OracleOutcome(name="upstream", status="skip",
                                      note="not checked, for the reason the numeric oracle gives")}
    r = run(make_case(), *agreeing(), oracles=skip)
    assert r.verdict is Verdict.PASS
    assert r.unchecked == "the numeric and upstream oracles could not judge them (see below)"
    assert r.reason.startswith("all modes agree, but nothing checked that the values are right: ")
    assert "numeric oracle not checked: not finite within a step of the point" in r.details


def test_a_pass_on_nan_everywhere_is_marked_unchecked_even_beside_a_matching_oracle():
    # A library returned NaN at orders 0, 1 and 2 where the truth is 3.15, 17.7 and 384: every mode
    # agreeing on NaN, and a reference implementation that is NaN there too, show nothing.
    nan = [ok(m, fwd=np.nan, grad=np.nan) for m in ("eager", "function", "graph")]
    reference = OracleOutcome(name="reference", status="match", orders=(0, 1))
    r = run(make_case(), *nan, oracles={"reference": reference})
    assert r.verdict is Verdict.PASS
    assert r.unchecked.startswith("every value eager computes is NaN or infinite")
    half = [ok(m, fwd=np.nan, grad=2.0) for m in ("eager", "function", "graph")]
    assert run(make_case(), *half, oracles={"numeric": MATCH}).unchecked == ""


def test_declared_oracle_difference_at_its_order_is_xfail():
    e = Expectation(modes=["numeric"], outcome=VALUES_DIFFER, orders=[2], reason="1 - e on purpose")
    r = run(make_case(e, order=2), *agreeing(), oracles={"numeric": SO_NUMERIC})
    assert r.verdict is Verdict.XFAIL
    assert any("1 - e on purpose" in d for d in r.details)


def test_oracle_difference_at_an_undeclared_order_fails():
    e = Expectation(modes=["numeric"], outcome=VALUES_DIFFER, orders=[1], reason="order 1 only")
    r = run(make_case(e, order=2), *agreeing(), oracles={"numeric": SO_NUMERIC})
    assert r.verdict is Verdict.FAIL
    assert "expected numeric values differ at order 1" in r.reason


def test_declared_oracle_difference_that_does_not_happen_is_xpass():
    e = Expectation(modes=["numeric"], outcome=VALUES_DIFFER, reason="r")
    r = run(make_case(e), *agreeing(), oracles={"numeric": MATCH})
    assert r.verdict is Verdict.XPASS


def test_an_expectation_on_an_oracle_that_did_not_run_is_not_judged():
    e = Expectation(modes=["numeric"], outcome=VALUES_DIFFER, reason="r")
    assert run(make_case(e), *agreeing()).verdict is Verdict.PASS
    skipped = OracleOutcome(name="numeric", status="skip",
                            note="declared not checked numerically here")
    r = run(make_case(e), *agreeing(), oracles={"numeric": skipped})
    assert r.verdict is Verdict.PASS
    assert "numeric oracle not checked: declared not checked numerically here" in r.details


def test_a_broken_case_oracle_is_an_error():
    broken = OracleOutcome(name="analytic", status="error", note="analytic raises KeyError: 'x'")
    r = run(make_case(analytic=lambda x: {1: x}), *agreeing(), oracles={"analytic": broken})
    assert r.verdict is Verdict.ERROR
    assert "analytic raises KeyError" in r.reason


def test_oracle_expectations_are_validated():
    with pytest.raises(CaseError, match="only oracles and outcome VALUES_DIFFER"):
        make_case(Expectation(modes=["numeric"], outcome="ValueError", reason="r"))
    with pytest.raises(CaseError, match="no reference oracle"):
        make_case(Expectation(modes=["reference"], outcome=VALUES_DIFFER, reason="r"))
    with pytest.raises(CaseError, match="not between 0 and the case's order 1"):
        make_case(Expectation(modes=["numeric"], outcome=VALUES_DIFFER, orders=[2], reason="r"))
    with pytest.raises(CaseError, match="'kinks'.*not a point label"):
        make_case(kinks={"x=3.0": "no such point"})
    with pytest.raises(CaseError, match="'skip_modes'.*needs a reason"):
        make_case(skip_modes={"xla": " "})


# -- skipped modes --------------------------------------------------------------------------


def test_a_skipped_mode_is_left_out_and_said():
    skipped = ModeOutcome(mode="forward", status=Status.SKIP, note="1000 elements exceed 256")
    r = run(make_case(), *agreeing(), skipped)
    assert r.verdict is Verdict.PASS
    assert "forward skipped: 1000 elements exceed 256" in r.details
    # Not "all modes agree": one did not run.
    assert r.reason.startswith("the 3 modes that ran agree, but nothing checked"), r.reason
    assert run(make_case(), *agreeing()).reason.startswith("all modes agree, but nothing")


def test_a_skipped_reference_hands_over_to_the_next_mode():
    skipped = ModeOutcome(mode="eager", status=Status.SKIP, note="not applicable")
    r = run(make_case(), skipped, ok("function"), ok("graph", grad=3.0))
    assert r.verdict is Verdict.FAIL
    assert "graph vs function" in r.reason


def test_every_mode_skipped_is_skip():
    outcomes = [ModeOutcome(mode=m, status=Status.SKIP, note="no") for m in ("eager", "function")]
    assert run(make_case(), *outcomes).verdict is Verdict.SKIP


# -- was the custom gradient used? --------------------------------------------------------


def unused(outcome, name="bar"):
    return dataclasses.replace(outcome, usage=Usage(ran=(name,), unused=(name,)))


def used(outcome, name="bar"):
    return dataclasses.replace(outcome, usage=Usage(ran=(name,), unused=()))


def test_a_silent_fallback_fails_even_when_values_agree():
    r = run(make_case(), unused(ok("eager")), used(ok("function")), used(ok("graph")))
    assert r.verdict is Verdict.FAIL
    assert r.reason.startswith("eager never called the custom gradient of bar although its forward "
                               "ran")


def test_a_declared_fallback_is_xfail_and_explains_different_values():
    e = Expectation(modes=["function"], outcome=GRADIENT_UNUSED, reason="#65839")
    r = run(make_case(e), used(ok("eager")), unused(ok("function", grad=5.0)), used(ok("graph")))
    assert r.verdict is Verdict.XFAIL


def test_a_declared_fallback_that_does_not_happen_is_xpass():
    e = Expectation(modes=["function"], outcome=GRADIENT_UNUSED, reason="#65839")
    r = run(make_case(e), used(ok("eager")), used(ok("function")), used(ok("graph")))
    assert r.verdict is Verdict.XPASS


def test_an_unobservable_mode_says_nothing_about_use():
    r = run(make_case(), used(ok("eager")), ok("function"), used(ok("graph")))
    assert r.verdict is Verdict.PASS


# -- repeated runs ------------------------------------------------------------------------


def test_values_that_change_between_runs_are_flaky_not_retried():
    r = run(make_case(), *agreeing(),
            repeats={"eager": [ok("eager", grad=2.5)], "function": [ok("function")]})
    assert r.verdict is Verdict.FLAKY
    assert r.verdict.is_failure
    assert r.reason.startswith("eager: results change between runs")
    assert "eager run 2" in r.reason and "(rtol 0, atol 0)" in r.reason


def test_identical_repeats_are_judged_as_usual():
    r = run(make_case(), *agreeing(), repeats={m: [ok(m)] for m in ("eager", "function", "graph")})
    assert r.verdict is Verdict.PASS


def test_flaky_wins_over_a_disagreement_it_explains():
    r = run(make_case(), ok("eager"), ok("function", grad=9.0), ok("graph"),
            repeats={"function": [ok("function", grad=7.0)]})
    assert r.verdict is Verdict.FLAKY


def test_a_run_that_raises_once_is_flaky():
    r = run(make_case(), *agreeing(), repeats={"graph": [raised("graph", "InternalError")]})
    assert r.verdict is Verdict.FLAKY


# -- the ladder ---------------------------------------------------------------------------


def test_the_ladder_names_the_first_step_where_results_part():
    outcomes = [ok("eager"), ok("no_autograph"), ok("function"), ok("xla", grad=2.5),
                ok("graph", grad=2.5)]
    r = run(make_case(), *outcomes)
    assert r.verdict is Verdict.FAIL
    ladder = [d for d in r.details if d.startswith("along the ladder")]
    assert ladder == [ladder[0]]
    assert ladder[0].startswith("along the ladder eager > no_autograph > function > xla > graph: "
                                "eager = no_autograph = function agree; the results part between "
                                "function and xla")


def test_the_ladder_skips_modes_with_a_declared_deviation():
    e = Expectation(modes=["function"], outcome="ValueError", reason="r")
    r = run(make_case(e), ok("eager"), raised("function", "ValueError"), ok("graph", grad=3.0))
    assert r.verdict is Verdict.FAIL
    assert any(d.startswith("along the ladder eager > graph: the results part between eager and "
                            "graph")
               for d in r.details)


def test_no_ladder_line_when_only_an_oracle_differs():
    r = run(make_case(order=2), *agreeing(), oracles={"numeric": SO_NUMERIC})
    assert not any(d.startswith("along the ladder") for d in r.details)


def test_expectation_orders_narrow_a_mode_difference():
    e = Expectation(modes=["graph"], outcome=VALUES_DIFFER, orders=[0], reason="forward only")
    r = run(make_case(e), ok("eager"), ok("function"), ok("graph", grad=np.float32(3.0)))
    assert r.verdict is Verdict.FAIL
    assert "expected graph values differ at order 0" in r.reason


def test_a_fallback_expectation_is_not_judged_where_use_is_not_observed():
    e = Expectation(modes=["eager"], outcome=GRADIENT_UNUSED, reason="#65839")
    r = run(make_case(e), ok("eager"), ok("function"))
    assert r.verdict is Verdict.PASS
    assert any("gradient use is not observed in this run" in d for d in r.details)


def test_mode_names_all_full_and_lists_keep_the_ladder_order():
    from harness.measure.modes import parse_modes

    assert parse_modes("all") == ("eager", "function", "graph")
    assert parse_modes("full") == ("eager", "no_autograph", "function", "xla", "graph", "forward",
                                   "saved_model")
    assert parse_modes("graph,xla,all") == ("eager", "function", "xla", "graph")
    assert parse_modes("full,saved_model_nocg")[-1] == "saved_model_nocg"
    with pytest.raises(ValueError, match="unknown mode 'jit'"):
        parse_modes("all,jit")


def test_a_fail_of_a_mode_and_an_oracle_spells_each_in_an_expectation_of_its_own():
    # One expectation declares modes or oracles, never both (a Case refuses the mix), so a fail
    # with both spells them apart, and declaring exactly those makes the point an xfail.
    from harness.checking import parse_expect

    numeric = OracleOutcome(name="numeric", status="differ", orders=(1,), differ=(1,),
                            details=("order 1 gradient wrt x: eager=2 numeric=5",))
    outcomes = [ok("eager"), ok("function", grad=3.0), ok("graph")]
    failed = run(make_case(), *outcomes, oracles={"numeric": numeric})
    assert failed.verdict is Verdict.FAIL
    assert failed.undeclared == ("function:values differ", "numeric:values differ")
    declared = [Expectation(modes=list(modes), outcome=outcome, reason="accepted")
                for modes, outcome, _ in map(parse_expect, failed.undeclared)]
    again = run(make_case(*declared), *outcomes, oracles={"numeric": numeric})
    assert again.verdict is Verdict.XFAIL, again.reason
