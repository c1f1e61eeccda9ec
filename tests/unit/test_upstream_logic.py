"""The upstream-gradient check's pure logic, without TensorFlow: the weights, --expect, and
explanations that must be true."""

import dataclasses
import numpy as np
import pytest

from harness.measure import upstream
from harness.case import Case
from harness.checking import InputError, parse_expect
from harness.records import (
    Differentiated,
    ErrorInfo,
    ModeOutcome,
    OracleOutcome,
    Output,
    Result,
    Status,
    Verdict,
)
from harness.repro import issue
from harness.judge import explain
from harness.criteria.rules import oracle_subject, yardstick
from harness.judge.verdict import judge

X = (Differentiated("x", "float32", ()),)


def test_weights_are_deterministic_nonzero_not_unit_of_both_signs_and_exact_in_bfloat16():
    import ml_dtypes

    seed = upstream.seed("tests.case", "x=[1.0,2.0]")
    assert seed == upstream.seed("tests.case", "x=[1.0,2.0]") != upstream.seed("tests.case",
                                                                               "x=3.0")
    w = upstream.weights(seed, 1, 0, (5,))
    np.testing.assert_array_equal(w, upstream.weights(seed, 1, 0, (5,)))
    assert np.all(w != 0) and np.all(np.abs(w) != 1)
    assert w[0] < 0 < w[1] and len(set(w)) > 1
    assert upstream.weights(seed, 1, 0, ()) < 0 and abs(upstream.weights(seed, 1, 0, ())) != 1
    every = upstream.tables(seed, 3)
    assert every.shape == (3, upstream.TARGETS, upstream.PERIOD)
    for dtype in (np.float16, ml_dtypes.bfloat16, np.float32):
        np.testing.assert_array_equal(every.astype(dtype).astype(np.float64), every)
    # Orders and outputs get their own weights; a long output repeats its table.
    assert not np.array_equal(upstream.weights(seed, 1, 0, (8,)),
                              upstream.weights(seed, 2, 0, (8,)))
    assert not np.array_equal(upstream.weights(seed, 1, 0, (8,)),
                              upstream.weights(seed, 1, 1, (8,)))
    long = upstream.weights(seed, 1, 0, (upstream.PERIOD + 3,))
    np.testing.assert_array_equal(long[upstream.PERIOD:], long[:3])
    assert upstream.describe(np.array([-0.625, 1.375])) == "[-0.625, 1.375]"


def test_the_weights_are_the_seeded_choices_they_were_defined_as():
    # Each table is PERIOD draws of a magnitude, then PERIOD of a sign, with rng.choice from a
    # generator seeded by (seed, order, target), its first two signs set to -1 and +1: reports
    # and repro scripts of earlier runs carry these numbers.
    magnitudes = np.array([m / 8 for m in range(4, 16) if m != 8])
    for label in ("x=1.0", "x=[0.5,2.0]", "a=3.0,x=-1.0"):
        seed = upstream.seed("tests.case", label)
        for order in (1, 2, 3):
            for target in range(upstream.TARGETS):
                rng = np.random.default_rng([seed, order, target])
                chosen = rng.choice(magnitudes, size=upstream.PERIOD)
                signs = rng.choice([-1.0, 1.0], size=upstream.PERIOD)
                signs[0], signs[1] = -1.0, 1.0
                np.testing.assert_array_equal(upstream.table(seed, order, target), signs * chosen)


def test_expect_reads_modes_outcome_and_reason():
    assert parse_expect("numeric:values differ:a straight-through estimator") == (
        ("numeric",), "values differ", "a straight-through estimator")
    modes, outcome, reason = parse_expect("all:ValueError")
    assert "eager" in modes and "graph" in modes and outcome == "ValueError"
    assert reason == "declared on the command line with --expect"
    modes, _, _ = parse_expect("all:values differ")
    assert "eager" not in modes and "function" in modes  # values are compared with eager
    for bad in ("numeric", ":ValueError", "nomode:ValueError", "graph:not a class"):
        with pytest.raises(InputError):
            parse_expect(bad)


def f(x):
    return x


CASE = Case(id="tests.case", fn=f, points=[{"x": np.float32(1.0)}], source="tests", description="d")


def raised(mode, type_):
    return ModeOutcome(mode=mode, status=Status.ERROR, sources=X,
                       error=ErrorInfo(type=type_, bases=(type_, "Exception"), message="boom",
                                       stage="order 1"))


def ok(mode):
    return ModeOutcome(mode=mode, status=Status.OK, sources=X,
                       orders=((Output.of(np.float32(1.0)),), (Output.of(np.float32(2.0)),)))


def _judge(*outcomes, oracles=None):
    return judge(CASE, CASE.points[0].label, {o.mode: o for o in outcomes}, tf_version="2.21.0",
                 reference="eager", rerun="rerun", oracles=oracles)


def test_every_other_mode_raises_it_too_only_when_every_one_does():
    r = _judge(raised("eager", "ValueError"), raised("function", "ValueError"),
               raised("graph", "ValueError"))
    assert "every other mode that ran raises it too" in r.reason
    r = _judge(raised("eager", "ValueError"), raised("function", "ValueError"), ok("graph"))
    line = next(d for d in r.details if d.startswith("eager raises"))
    assert "function raises it too" in line and "every other mode" not in line
    r = _judge(raised("eager", "ValueError"), ok("function"), ok("graph"))
    line = next(d for d in r.details if d.startswith("eager raises"))
    assert "no other mode that ran raises it" in line


def test_a_skipped_mode_is_not_said_to_raise_it():
    skipped = ModeOutcome(mode="eager", status=Status.SKIP, note="stopped")
    r = _judge(skipped, raised("function", "ValueError"), raised("graph", "ValueError"))
    line = next(d for d in r.details if d.startswith("function raises"))
    assert "every other mode that ran raises it too" in line and "selected" not in line
    r = _judge(skipped, raised("function", "ValueError"))
    line = next(d for d in r.details if d.startswith("function raises"))
    assert "function is the only mode that ran" in line


def test_the_other_modes_are_each_said_as_they_are():
    # Where every mode raised, but not the same error, "no other mode that ran raises it" would be
    # false.
    r = _judge(raised("eager", "ValueError"), raised("function", "TypeError"),
               raised("graph", "TypeError"))
    line = next(d for d in r.details if d.startswith("eager raises"))
    assert "(function raises TypeError; graph raises TypeError;" in line, line
    r = _judge(raised("eager", "ValueError"), raised("function", "ValueError"),
               raised("graph", "TypeError"))
    line = next(d for d in r.details if d.startswith("eager raises"))
    assert "(function raises it too; graph raises TypeError;" in line, line
    r = _judge(raised("eager", "ValueError"), raised("function", "TypeError"), ok("graph"))
    line = next(d for d in r.details if d.startswith("eager raises"))
    assert "(function raises TypeError; graph computed at this point;" in line, line


def test_one_yardstick_for_the_judge_and_the_oracles():
    outcomes = {"eager": raised("eager", "ValueError"), "function": ok("function"),
                "graph": ok("graph")}
    assert yardstick(CASE, CASE.points[0].label, outcomes, "2.21.0", "eager") == "eager"
    mode, note = oracle_subject(outcomes, "eager")
    assert (
        mode == "function"
        and note
        == "; checked on function's values, since eager (the yardstick mode) raised ValueError"
    )
    assert oracle_subject({"eager": ok("eager")}, "eager") == ("eager", "")


def _result(verdict, oracles, disagree):
    # Modes that disagree differ: function's gradient is 3.0 where eager's is 2.0.
    function = weighted_ok("function", grad=3.0) if disagree else ok("function")
    return Result(case="tests.case", point="x=1.0", order=1, verdict=verdict, reason="why",
                  details=(), outcomes={"eager": ok("eager"), "function": function}, rerun="rerun",
                  oracles=oracles, modes_disagree=disagree)


def test_issue_text_says_the_modes_disagree_only_when_they_do():
    env = {"tensorflow": "2.21.0"}
    numeric = {"numeric": OracleOutcome(name="numeric", status="differ", differ=(1,))}
    text = issue.render(_result(Verdict.FAIL, numeric, False), "print(1)", env, "a case", "1\n")
    assert "disagree" not in text and "does not do the same" not in text
    assert (
        "every mode agrees (eager, function), and the values differ from the numeric derivative"
        in text
    )
    weighted = {"numeric": OracleOutcome(name="numeric", status="match"),
                "upstream": OracleOutcome(name="upstream", status="differ", differ=(1,))}
    text = issue.render(_result(Verdict.FAIL, weighted, False), "print(1)", env, "a case", "1\n")
    assert "the values with upstream weights differ from the numeric derivative" in text
    text = issue.render(_result(Verdict.FAIL, {}, True), "print(1)", env, "a case", "1\n")
    assert "eager, function disagree" in text
    assert "does not do the same in every mode: function returns other values than eager." in text


def test_issue_text_with_a_mode_skipped_says_every_mode_that_ran():
    env = {"tensorflow": "2.21.0"}
    numeric = {"numeric": OracleOutcome(name="numeric", status="differ", differ=(1,))}
    result = _result(Verdict.FAIL, numeric, False)
    skipped = ModeOutcome(mode="graph", status=Status.SKIP, note="its worker grew by 2,100 MiB")
    result = dataclasses.replace(result, outcomes={**result.outcomes, "graph": skipped})
    text = issue.render(result, "print(1)", env, "a case", "1\n")
    assert ("every mode that ran agrees (eager, function), and the values differ from the "
            "numeric derivative") in text
    assert "gives the same result in every mode that ran, and it is wrong:" in text
    assert "in every mode," not in text and "in every mode:" not in text


def weighted_ok(mode, grad=2.0, weighted=-1.25):
    return ModeOutcome(mode=mode, status=Status.OK, sources=X,
                       orders=((Output.of(np.float32(1.0)),), (Output.of(np.float32(grad)),)),
                       upstream=((Output.of(np.float32(weighted)),),))


def test_a_declared_plain_deviation_is_not_met_by_a_weighted_difference_alone():
    from harness.case import VALUES_DIFFER, Expectation

    declared = Case(id="tests.case", fn=f, points=[{"x": np.float32(1.0)}], source="tests",
                    description="d",
                    expectations=[Expectation(modes=["function"], outcome=VALUES_DIFFER,
                                              reason="r")])
    outcomes = {"eager": weighted_ok("eager"), "function": weighted_ok("function", weighted=3.0)}
    r = judge(declared, declared.points[0].label, outcomes, tf_version="2.21.0", reference="eager",
              rerun="rerun")
    assert r.verdict is Verdict.FAIL
    assert r.reason.startswith("order 1 gradient wrt x with upstream weights: function vs eager")
    # Where the declared plain difference happens, the weighted one is part of it.
    outcomes["function"] = weighted_ok("function", grad=5.0, weighted=3.0)
    r = judge(declared, declared.points[0].label, outcomes, tf_version="2.21.0", reference="eager",
              rerun="rerun")
    assert r.verdict is Verdict.XFAIL


def _weighted_difference(blamed: str) -> tuple[str, dict]:
    """The upstream oracle's line for a weighted difference at order 1 whose plain contraction
    agrees, headed by `blamed` (explain.MISHANDLES or explain.REGISTERED), and the oracles."""
    line = (blamed + "at order 1 with upstream weights [-0.625], order 1 gradient wrt x: eager=6 "
            "numeric=-3.75 abs err 9.75 (1 of 1 elements of x); at the plain contraction (every "
            "upstream gradient 1) both agree")
    return line, {"numeric": OracleOutcome(name="numeric", status="match", orders=(1,)),
                  "upstream": OracleOutcome(name="upstream", status="differ", orders=(1,),
                                            differ=(1,), details=(line,))}


def test_the_upstream_headline_blames_a_mode_when_reverse_modes_disagree_on_weighted_values():
    line, upstream_differs = _weighted_difference(explain.MISHANDLES)
    assert line.startswith("grad_fn mishandles its upstream gradient: at order 1")
    agree = _judge(weighted_ok("eager", weighted=6.0), weighted_ok("graph", weighted=6.0),
                   weighted_ok("forward", weighted=-3.75), oracles=upstream_differs)
    assert agree.reason == line  # forward uses the body's JVP: its difference blames no mode
    split = _judge(weighted_ok("eager", weighted=6.0), weighted_ok("graph", weighted=-3.75),
                   oracles=upstream_differs)
    assert split.reason.startswith("the values with upstream weights differ from the numeric "
                                   "derivative, and graph disagree with them, so a mode rather "
                                   "than grad_fn may be at fault")


def test_an_ops_gradient_is_blamed_in_place_of_grad_fn_and_a_mode_may_be_instead():
    line, upstream_differs = _weighted_difference(explain.REGISTERED)
    agree = _judge(weighted_ok("eager", weighted=6.0), weighted_ok("graph", weighted=6.0),
                   oracles=upstream_differs)
    assert agree.reason == line
    assert not [d for d in agree.details if d.startswith("hint: ")]  # its hint is grad_fn's
    split = _judge(weighted_ok("eager", weighted=6.0), weighted_ok("graph", weighted=-3.75),
                   oracles=upstream_differs)
    assert split.reason.startswith(
        "the values with upstream weights differ from the numeric derivative, and graph disagree "
        "with them, so a mode rather than the op's gradient may be at fault: at order 1"), split


def test_the_pass_reason_says_what_was_checked_with_upstream_weights():
    match = {name: OracleOutcome(name=name, status="match", orders=(1,))
             for name in ("numeric", "upstream")}
    r = _judge(ok("eager"), ok("function"), oracles=match)
    assert (
        r.reason
        == "all modes agree, and match the numeric derivative, with and without upstream weights"
    )
    match["analytic"] = OracleOutcome(name="analytic", status="match", orders=(1,))
    r = _judge(ok("eager"), ok("function"), oracles=match)
    assert r.reason == ("all modes agree, and match the numeric derivative (with and without "
                        "upstream weights) and the analytic values")


def test_crash_reports_say_what_crashed_not_that_the_modes_agree():
    died = ModeOutcome(mode="graph", status=Status.CRASH,
                       error=ErrorInfo(type="crash", bases=(), message="killed by SIGABRT",
                                       stage="graph"))
    r = Result(case="tests.case", point="x=1.0", order=1, verdict=Verdict.CRASH,
               reason="graph mode: killed", details=(), outcomes={"graph": died}, rerun="rerun")
    text = issue.render(r, "print(1)", {}, "a case", "(the process was killed by signal 6)\n")
    assert "graph crashes" in text and "agree" not in text.split("### Issue type")[0]
