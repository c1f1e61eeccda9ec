"""The verdict rules: hand-built outcomes in, one Result out (DESIGN.md, Judging)."""

import dataclasses

import numpy as np
import pytest

from harness.case import BAD_GRADIENT, VALUES_DIFFER, Expectation
from harness.records import Differentiated, ModeOutcome, Output, Status, Verdict
from harness.criteria.tolerance import Tol
from harness.judge.verdict import applicable, died, judge, skipped
from tests.unit.outcomes import RERUN, TF, X, make_case, ok, raised

MODES = ("eager", "function", "graph")


def run(case, *outcomes, point=0, tf_version=TF, strict_xpass=False):
    by_mode = {o.mode: o for o in outcomes}
    return judge(case, case.points[point].label, by_mode, tf_version=tf_version, reference="eager",
                 rerun=RERUN, strict_xpass=strict_xpass)


def agreeing():
    return [ok(m) for m in MODES]


# A TensorFlow-like class whose MRO includes TypeError, as OperatorNotAllowedInGraphError's does.
NOT_ALLOWED_BASES = ("OperatorNotAllowedInGraphError", "TypeError", "Exception", "BaseException",
                     "object")


# -- pass and fail ---------------------------------------------------------------------


def test_all_modes_agreeing_pass():
    r = run(make_case(), *agreeing())
    assert r.verdict is Verdict.PASS
    # No oracle ran here: agreement is all this pass shows, and it says so.
    assert r.unchecked == "no oracle ran"
    assert (
        r.reason == "all modes agree, but nothing checked that the values are right: no oracle ran"
    )
    assert r.case == "tests.case" and r.point == "x=1.0" and r.rerun == RERUN


def test_value_disagreement_fails_and_names_the_mode_pair():
    r = run(make_case(), ok("eager"), ok("function", grad=3.0), ok("graph"))
    assert r.verdict is Verdict.FAIL
    assert "function vs eager" in r.reason
    assert "order 1 gradient wrt x" in r.reason


def test_mode_raising_where_reference_returns_values_fails():
    r = run(make_case(), ok("eager"), raised("function", "InternalError"), ok("graph"))
    assert r.verdict is Verdict.FAIL
    assert "InternalError" in r.reason


# A Python float beside a float64 tensor: eager converts it to float64, a trace makes it float32.
MIXED = "Found incompatible dtypes, <class 'numpy.float64'> and <class 'numpy.float32'>"


def test_modes_raising_one_error_where_eager_computed_say_both_in_one_line():
    r = run(make_case(), ok("eager"), raised("function", "TypeError", message=MIXED),
            raised("graph", "TypeError", message=MIXED))
    assert r.verdict is Verdict.FAIL
    assert r.reason == ("function and graph raise TypeError at forward, where eager computed at "
                        f"this point: {MIXED}")
    # The ladder does not say the error again, and no line of graph's own repeats it.
    assert r.details == (r.reason, "along the ladder eager > function > graph: the results part "
                                   "between eager and function")


def test_modes_raising_different_errors_where_eager_computed_each_say_it():
    r = run(make_case(), ok("eager"), raised("function", "TypeError", message=MIXED),
            raised("graph", "ValueError", message="no float32 here"))
    assert r.reason == ("function raises TypeError at forward, where eager computed at this "
                        f"point: {MIXED}")
    assert ("graph raises ValueError at forward, where eager computed at this point: no float32 "
            "here") in r.details


def test_a_raising_yardstick_says_that_eager_computed_where_eager_is_declared_to_deviate():
    # Declared to deviate, eager is no yardstick: function is, and it raises.
    case = make_case(Expectation(modes=["eager"], outcome=BAD_GRADIENT, reason="r"))
    r = run(case, ok("eager"), raised("function", "TypeError", message=MIXED),
            raised("graph", "TypeError", message=MIXED))
    assert r.reason == (f"function raises TypeError at forward: {MIXED} (graph raises it too; "
                        "eager computed at this point; a case must compute its values, or declare "
                        "the error with an Expectation)")


def test_every_mode_raising_the_same_undeclared_error_fails():
    # They agree with each other, but a case must compute values or declare the error:
    # the reference's own error is reported as a deviation.
    r = run(make_case(), *(raised(m, "ValueError") for m in MODES))
    assert r.verdict is Verdict.FAIL
    assert "ValueError" in r.reason


def test_malformed_gradient_fails_even_when_every_mode_agrees():
    # A float32 gradient for a float64 input in every mode (DESIGN, Structure).
    x64 = (Differentiated("x", "float64", ()),)
    outcomes = [ok(m, sources=x64) for m in MODES]
    r = run(make_case(), *outcomes)
    assert r.verdict is Verdict.FAIL
    assert "float64" in r.reason


def test_case_tolerance_override_is_used_in_judging():
    # 1e-4 at 2.0 is outside float32's 1e-5 + 1.3e-6 * 2 but inside atol 1e-3.
    outcomes = [ok("eager"), ok("function", grad=2.0001), ok("graph")]
    assert run(make_case(), *outcomes).verdict is Verdict.FAIL
    assert run(make_case(tolerance=Tol(rtol=0.0, atol=1e-3)), *outcomes).verdict is Verdict.PASS
    assert run(make_case(tolerance={"float32": Tol(rtol=0.0, atol=1e-3)}),
               *outcomes).verdict is Verdict.PASS
    assert run(make_case(tolerance={"float64": Tol(rtol=0.0, atol=1e-3)}),
               *outcomes).verdict is Verdict.FAIL


# -- expectations of an exception ------------------------------------------------------


def test_declared_exception_gives_xfail():
    e = Expectation(modes=["function", "graph"], outcome="InternalError",
                    reason="traced differently")
    r = run(make_case(e), ok("eager"), raised("function", "InternalError"),
            raised("graph", "InternalError"))
    assert r.verdict is Verdict.XFAIL
    assert any("traced differently" in d for d in r.details)


def test_declared_base_class_matches_a_subclass_via_bases():
    e = Expectation(modes=["function", "graph"], outcome="TypeError",
                    reason="python if on a tensor")
    outcomes = [ok("eager"),
                raised("function", "OperatorNotAllowedInGraphError", bases=NOT_ALLOWED_BASES),
                raised("graph", "OperatorNotAllowedInGraphError", bases=NOT_ALLOWED_BASES)]
    assert run(make_case(e), *outcomes).verdict is Verdict.XFAIL


def test_declared_exception_in_every_mode_including_reference_gives_xfail():
    e = Expectation(modes=list(MODES), outcome="ValueError",
                    reason="the docstring example is wrong")
    r = run(make_case(e), *(raised(m, "ValueError") for m in MODES))
    assert r.verdict is Verdict.XFAIL


def test_declared_mode_agreeing_instead_gives_xpass():
    e = Expectation(modes=["function"], outcome="InternalError", reason="fixed later")
    r = run(make_case(e), *agreeing())
    assert r.verdict is Verdict.XPASS
    assert TF in r.reason


def test_strict_xpass_turns_xpass_into_fail():
    e = Expectation(modes=["function"], outcome="InternalError", reason="fixed later")
    r = run(make_case(e), *agreeing(), strict_xpass=True)
    assert r.verdict is Verdict.FAIL


def test_strict_xpass_leaves_xfail_alone():
    e = Expectation(modes=["function"], outcome="InternalError", reason="r")
    r = run(make_case(e), ok("eager"), raised("function", "InternalError"), ok("graph"),
            strict_xpass=True)
    assert r.verdict is Verdict.XFAIL


def test_one_declared_mode_met_and_another_not_gives_xpass():
    e = Expectation(modes=["function", "graph"], outcome="InternalError", reason="r")
    r = run(make_case(e), ok("eager"), raised("function", "InternalError"), ok("graph"))
    assert r.verdict is Verdict.XPASS


def test_different_exception_than_declared_fails():
    e = Expectation(modes=["function"], outcome="InternalError", reason="r")
    r = run(make_case(e), ok("eager"), raised("function", "ValueError"), ok("graph"))
    assert r.verdict is Verdict.FAIL
    assert "ValueError" in r.reason and "InternalError" in r.reason


def test_declared_exception_but_values_that_differ_fails():
    e = Expectation(modes=["function"], outcome="InternalError", reason="r")
    r = run(make_case(e), ok("eager"), ok("function", grad=5.0), ok("graph"))
    assert r.verdict is Verdict.FAIL


def test_undeclared_mode_failing_beside_a_met_expectation_still_fails():
    e = Expectation(modes=["function"], outcome="InternalError", reason="r")
    r = run(make_case(e), ok("eager"), raised("function", "InternalError"), ok("graph", grad=9.0))
    assert r.verdict is Verdict.FAIL
    assert "graph vs eager" in r.reason


# -- version ranges and points ---------------------------------------------------------


def test_expectation_inside_its_tf_versions_applies():
    e = Expectation(modes=["function"], outcome="InternalError", reason="r",
                    tf_versions=">=2.16,<2.19")
    outcomes = [ok("eager"), raised("function", "InternalError"), ok("graph")]
    assert run(make_case(e), *outcomes, tf_version="2.17.1").verdict is Verdict.XFAIL


def test_expectation_outside_its_tf_versions_does_not_apply():
    e = Expectation(modes=["function"], outcome="InternalError", reason="r",
                    tf_versions=">=2.16,<2.19")
    outcomes = [ok("eager"), raised("function", "InternalError"), ok("graph")]
    # On 2.19.0 the same deviation is undeclared, so it is a plain failure.
    assert run(make_case(e), *outcomes, tf_version="2.19.0").verdict is Verdict.FAIL
    # And an agreeing run there is a pass, not an xpass.
    assert run(make_case(e), *agreeing(), tf_version="2.19.0").verdict is Verdict.PASS


def test_expectation_restricted_to_a_point_applies_only_there():
    e = Expectation(modes=["function"], outcome="InternalError", reason="r", points=["x=100.0"])
    case = make_case(e)
    outcomes = [ok("eager"), raised("function", "InternalError"), ok("graph")]
    assert run(case, *outcomes, point=1).verdict is Verdict.XFAIL
    assert run(case, *outcomes, point=0).verdict is Verdict.FAIL
    assert run(case, *agreeing(), point=0).verdict is Verdict.PASS


def test_expectation_for_a_mode_not_run_is_ignored():
    e = Expectation(modes=["graph"], outcome="InternalError", reason="r")
    r = run(make_case(e), ok("eager"), ok("function"))
    assert r.verdict is Verdict.PASS


def test_two_expectations_covering_one_mode_give_error():
    a = Expectation(modes=["function"], outcome="InternalError", reason="r")
    b = Expectation(modes=["function", "graph"], outcome="ValueError", reason="s")
    r = run(make_case(a, b), *agreeing())
    assert r.verdict is Verdict.ERROR
    assert "function" in r.reason


def test_applicable_maps_each_selected_mode_to_its_expectation():
    a = Expectation(modes=["function"], outcome="InternalError", reason="r", tf_versions="<2.16")
    b = Expectation(modes=["function", "graph"], outcome="ValueError", reason="s",
                    tf_versions=">=2.16")
    case = make_case(a, b)
    assert applicable(case, case.points[0].label, MODES, "2.15.1") == {"function": a}
    assert applicable(case, case.points[0].label, MODES, "2.16.2") == {"function": b, "graph": b}
    assert applicable(case, case.points[0].label, ("eager", "graph"), "2.16.2") == {"graph": b}


# -- VALUES_DIFFER and BAD_GRADIENT ----------------------------------------------------


def test_values_differ_met_gives_xfail():
    e = Expectation(modes=["graph"], outcome=VALUES_DIFFER, reason="tf.gradients sums differently")
    r = run(make_case(e), ok("eager"), ok("function"), ok("graph", grad=4.0))
    assert r.verdict is Verdict.XFAIL


def test_values_differ_unmet_gives_xpass():
    e = Expectation(modes=["graph"], outcome=VALUES_DIFFER, reason="r")
    assert run(make_case(e), *agreeing()).verdict is Verdict.XPASS


def test_values_differ_but_mode_raises_fails():
    e = Expectation(modes=["graph"], outcome=VALUES_DIFFER, reason="r")
    r = run(make_case(e), ok("eager"), ok("function"), raised("graph", "ValueError"))
    assert r.verdict is Verdict.FAIL


def test_bad_gradient_met_gives_xfail():
    # A float32 gradient for a float64 input, the same in every mode.
    x64 = (Differentiated("x", "float64", ()),)
    e = Expectation(modes=list(MODES), outcome=BAD_GRADIENT, reason="the tape passes it on")
    r = run(make_case(e), *(ok(m, sources=x64) for m in MODES))
    assert r.verdict is Verdict.XFAIL


def test_bad_gradient_unmet_gives_xpass():
    e = Expectation(modes=list(MODES), outcome=BAD_GRADIENT, reason="r")
    assert run(make_case(e), *agreeing()).verdict is Verdict.XPASS


def test_bad_gradient_scalar_for_vector_met_gives_xfail():
    vec = (Differentiated("x", "float32", (3,)),)
    e = Expectation(modes=list(MODES), outcome=BAD_GRADIENT, reason="tensorflow#127690")
    r = run(make_case(e), *(ok(m, sources=vec) for m in MODES))
    assert r.verdict is Verdict.XFAIL


# -- crash, timeout, builder errors ----------------------------------------------------


def test_crash_outcome_gives_crash():
    dead = ModeOutcome(mode="graph", status=Status.CRASH)
    r = run(make_case(), ok("eager"), ok("function"), dead)
    assert r.verdict is Verdict.CRASH
    assert "graph" in r.reason


def test_timeout_outcome_gives_timeout():
    hung = ModeOutcome(mode="function", status=Status.TIMEOUT)
    r = run(make_case(), ok("eager"), hung, ok("graph"))
    assert r.verdict is Verdict.TIMEOUT
    assert "function" in r.reason


def test_crash_is_reported_even_when_an_expectation_covers_the_mode():
    e = Expectation(modes=["graph"], outcome="InternalError", reason="r")
    r = run(make_case(e), ok("eager"), ok("function"),
            ModeOutcome(mode="graph", status=Status.CRASH))
    assert r.verdict is Verdict.CRASH


@pytest.mark.parametrize("status,verdict", [(Status.CRASH, Verdict.CRASH), (Status.TIMEOUT,
                                                                            Verdict.TIMEOUT)])
def test_died_process_gives_crash_or_timeout_naming_the_mode(status, verdict):
    r = died("tests.case", "x=1.0", 2, status, "graph", "killed by SIGABRT",
             "F0000 check failed\n", RERUN)
    assert r.verdict is verdict
    assert "graph" in r.reason and "killed by SIGABRT" in r.reason
    assert r.outcomes["graph"].status is status
    assert r.verdict.is_failure


def test_a_build_that_raises_in_some_modes_only_is_a_mode_difference():
    # `error` is for a case broken in every mode; built in some, it is a `fail`.
    r = run(make_case(), ok("eager"), raised("function", "NameError", stage="build"),
            raised("graph", "NameError", stage="build"))
    assert r.verdict is Verdict.FAIL
    assert (
        r.reason
        == "the case's build step raises NameError in function, graph but not in eager: it failed"
    ), r.reason
    r = run(make_case(), raised("eager", "NameError", stage="build"), ok("function"), ok("graph"))
    assert r.verdict is Verdict.FAIL and r.reason.startswith("the case's build step raises "
                                                             "NameError in eager but not in "
                                                             "function, graph"), r.reason


def test_builder_error_in_every_mode_gives_error_not_fail():
    r = run(make_case(), *(raised(m, "NameError", stage="build") for m in MODES))
    assert r.verdict is Verdict.ERROR


def test_harness_stage_error_gives_error():
    r = run(make_case(), ok("eager"), ok("function"), raised("graph", "KeyError", stage="harness"))
    assert r.verdict is Verdict.ERROR


def test_skipped_result_carries_the_reason():
    case = make_case()
    r = skipped(case, case.points[0].label, "needs TensorFlow >=2.16", RERUN)
    assert r.verdict is Verdict.SKIP
    assert r.reason == "needs TensorFlow >=2.16"
    assert r.name == "tests.case[x=1.0]"


# -- exit status -----------------------------------------------------------------------


@pytest.mark.parametrize("verdict,failure", [
    # DESIGN: exit 0 for pass, xfail, xpass, skip; 1 for fail, error, crash, timeout.
    (Verdict.PASS, False),
    (Verdict.XFAIL, False),
    (Verdict.XPASS, False),
    (Verdict.SKIP, False),
    (Verdict.FAIL, True),
    (Verdict.ERROR, True),
    (Verdict.CRASH, True),
    (Verdict.TIMEOUT, True),
    (Verdict.FLAKY, True),  # values that change between runs cannot be trusted
])
def test_is_failure_follows_the_exit_status_rule(verdict, failure):
    assert verdict.is_failure is failure


def test_every_verdict_has_an_exit_status_rule():
    # The table above names all eight verdicts of DESIGN's "Words", and flaky (--repeat).
    assert {v.value for v in Verdict} == {"pass", "fail", "xfail", "xpass", "error", "crash",
                                          "timeout", "skip", "flaky"}


# -- a declared deviation in the reference mode itself ----------------------------------


def test_reference_declared_to_raise_is_compared_by_the_others_agreeing():
    # tensorflow#65839's shape: eager alone behaves differently; function and graph agree.
    case = make_case(Expectation(modes=["eager"], outcome="ValueError", reason="eager-only check"))
    r = run(case, raised("eager", "ValueError"), ok("function"), ok("graph"))
    assert r.verdict is Verdict.XFAIL, r.reason


def test_reference_declared_bad_gradient_while_other_modes_are_well_formed_is_xfail():
    # tensorflow#127690's shape: the tape passes a float32 gradient for a float64 input.
    f64 = (Differentiated("x", "float64", ()),)
    case = make_case(Expectation(modes=["eager"], outcome=BAD_GRADIENT,
                                 reason="tape does not check"))
    r = run(case, ok("eager", sources=f64), ok("function", grad_dtype=np.float64, sources=f64),
            ok("graph", grad_dtype=np.float64, sources=f64))
    assert r.verdict is Verdict.XFAIL, r.reason


def test_non_reference_modes_must_still_agree_when_the_reference_is_declared():
    case = make_case(Expectation(modes=["eager"], outcome="ValueError", reason="eager-only check"))
    r = run(case, raised("eager", "ValueError"), ok("function"), ok("graph", grad=5.0))
    assert r.verdict is Verdict.FAIL
    assert "graph vs function" in r.reason


# -- a drawn point outside the function's domain -----------------------------------------


def test_a_drawn_point_whose_forward_is_nan_everywhere_in_every_mode_is_outside_the_domain():
    case = make_case(drawn=["x=1.0"])
    # The modes even disagree on the gradient: at a point outside the domain nothing is judged.
    result = run(case, ok("eager", fwd=np.nan, grad=1.0), ok("function", fwd=np.inf, grad=2.0),
                 ok("graph", fwd=np.nan, grad=1.0))
    assert result.verdict is Verdict.SKIP
    assert result.reason.startswith("outside the function's domain: the values were drawn")


def test_a_drawn_point_with_a_finite_forward_in_one_mode_is_judged():
    case = make_case(drawn=["x=1.0"])
    result = run(case, ok("eager", fwd=np.nan, grad=1.0), ok("function", fwd=1.0, grad=1.0),
                 ok("graph", fwd=np.nan, grad=1.0))
    assert result.verdict is Verdict.FAIL


def test_a_given_point_whose_forward_is_nan_is_judged_as_any_other():
    result = run(make_case(), ok("eager", fwd=np.nan, grad=1.0),
                 ok("function", fwd=np.nan, grad=2.0), ok("graph", fwd=np.nan, grad=1.0))
    assert result.verdict is Verdict.FAIL


def test_a_skip_reason_shared_by_several_modes_is_said_once_naming_them():
    def skip(mode, note):
        return ModeOutcome(mode=mode, status=Status.SKIP, note=note)

    result = run(make_case(), skip("eager", "cannot be replayed: r"),
                 skip("function", "cannot be replayed: r"), skip("graph", "cannot be replayed: r"))
    assert result.verdict is Verdict.SKIP
    assert result.reason == "eager, function, graph skipped: cannot be replayed: r"
    assert [d for d in result.details if "skipped" in d] == [result.reason]
    mixed = run(make_case(), ok("eager"), skip("function", "a"), skip("graph", "b"),
                skip("xla", "a"))
    assert [d for d in mixed.details if "skipped" in d] == ["function, xla skipped: a",
                                                            "graph skipped: b"]
    # and printed once, where the line says it
    from harness.report import text

    assert text.line(result).count("cannot be replayed: r") == 1
    everyone = run(make_case(), skip("eager", "a"), skip("function", "b"), skip("graph", "a"))
    assert [line for line in text.line(everyone).splitlines() if "skipped" in line] == [
        "    eager, graph skipped: a", "    - function skipped: b"]


def test_a_none_the_numeric_oracle_sets_aside_is_said_and_the_others_judged_where_there_are_some():
    from harness.records import OracleOutcome

    from harness.records import Differentiated, Output

    both = (X[0], Differentiated("n", "float32", ()))

    def two(mode):  # x's gradient and n's None
        return ModeOutcome(mode=mode, status=Status.OK, sources=both,
                           orders=((Output.of(np.float32(1.0)),), (Output.of(np.float32(2.0)),
                                                                   Output.of(None))))

    by_mode = {m: two(m) for m in MODES}
    for status, others in (("match", "; the other arguments are judged"), ("skip", "")):
        numeric = OracleOutcome(name="numeric", status=status, orders=(1,), no_gradient=("n",))
        result = judge(make_case(), "x=1.0", by_mode, tf_version=TF, reference="eager", rerun=RERUN,
                       oracles={"numeric": numeric})
        assert result.verdict is Verdict.PASS
        assert (
            "no gradient for n (the function returns None): not judged, the function "
            f"differentiating only its other arguments (--strict_none judges the None){others}"
            in result.details
        )


def test_a_drawn_point_partly_outside_the_domain_says_how_much_even_on_a_pass():
    from harness.records import Output
    from harness.report.text import line

    def partly(mode):
        return ModeOutcome(mode=mode, status=Status.OK, sources=X,
                           orders=((Output.of(np.array([1.0, np.nan, np.nan, 2.0], np.float32)),),
                                   (Output.of(np.float32(2.0)),)))

    case = make_case(drawn=["x=1.0"])
    result = judge(case, "x=1.0", {m: partly(m) for m in MODES}, tf_version=TF, reference="eager",
                   rerun=RERUN)
    said = ("drawn values partly outside the function's domain: the forward is NaN or infinite at "
            "2 of 4 elements, so only the others can be checked; the drawn values stand in for "
            "what the trace did not show")
    assert result.verdict is Verdict.PASS and said in result.details
    assert f"    - {said}" in line(result).splitlines()
    given = judge(make_case(), "x=1.0", {m: partly(m) for m in MODES}, tf_version=TF,
                  reference="eager", rerun=RERUN)
    assert not any("outside" in d for d in given.details)


# -- what a fail would be declared as ----------------------------------------------------------


@pytest.mark.parametrize("outcomes, spelled", [
    ([ok("eager"), ok("function", grad=3.0), ok("graph", grad=3.0)],
     ("function,graph:values differ",)),
    ([ok("eager"), raised("function", "InternalError"), ok("graph")], ("function:InternalError",)),
    ([raised(m, "ValueError") for m in MODES], ("eager,function,graph:ValueError",)),
    ([ok(m, sources=(Differentiated("x", "float64", ()),)) for m in MODES],
     ("eager,function,graph:bad gradient",)),
    ([ok("eager"), raised("function", "TypeError"), ok("graph", grad=3.0)],
     ("function:TypeError", "graph:values differ")),
], ids=["values differ", "one mode raises", "every mode raises", "bad gradient", "two kinds"])
def test_a_fail_spells_each_deviation_as_the_expectation_that_declares_it(outcomes, spelled):
    # The test of a spelling is that declaring it is met: the same outcomes, judged with those
    # expectations, are an xfail (what accepting an expectations file relies on).
    from harness.checking import parse_expect

    failed = run(make_case(), *outcomes)
    assert failed.verdict is Verdict.FAIL and failed.undeclared == spelled
    declared = [Expectation(modes=list(modes), outcome=outcome, reason="accepted")
                for modes, outcome, _ in map(parse_expect, failed.undeclared)]
    again = run(make_case(*declared), *outcomes)
    assert again.verdict is Verdict.XFAIL, again.reason
    assert again.undeclared == ()


def test_a_fail_with_a_deviation_no_expectation_spells_offers_no_spelling():
    # function's values differ (spellable); graph's differ with upstream weights only, which no
    # expectation declares: declaring the first alone would leave the point failing, so accepting
    # must not write it and call the point declared.
    upstream_only = ok("graph")
    weighted = (Output.of(np.asarray(5.0, np.float32)),)
    upstream_only = dataclasses.replace(upstream_only, upstream=(weighted,))
    agreed = [dataclasses.replace(o, upstream=((Output.of(np.asarray(2.0, np.float32)),),))
              for o in (ok("eager"), ok("function", grad=3.0))]
    failed = run(make_case(), *agreed, upstream_only)
    assert failed.verdict is Verdict.FAIL and failed.undeclared == ()
    # Without the unspellable one, the spelling stands.
    alone = run(make_case(), *agreed,
                dataclasses.replace(upstream_only, upstream=agreed[0].upstream))
    assert alone.verdict is Verdict.FAIL and alone.undeclared == ("function:values differ",)
