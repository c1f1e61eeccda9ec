"""Explore's pure parts: domains, the Hypothesis search over a stand-in measurement, shrinking,
the example database and the --inputs literal. No TensorFlow (tests/unit)."""

import math

import numpy as np
import pytest

from harness import Case, CaseError, Domain
from harness import explore, verdict
from harness.records import CaseInfo, Differentiated, ModeOutcome, OracleOutcome, Output, Result, Status, Verdict

# exp overflows float32 above log(float32 max) = 88.72...; Hypothesis shrinks floats toward integers.
OVERFLOW = float(math.ceil(math.log(np.finfo(np.float32).max)))


# -- domains, without TensorFlow ---------------------------------------------------------------

def test_a_domain_text_gives_bounds_open_ends_shapes_structure_and_exclusions():
    assert explore.parse_domain("x=[-100, 100]") == ("x", Domain(-100.0, 100.0))
    name, d = explore.parse_domain("a=(0, 5];shape=(2, 2)|(3, 3);symmetric;positive;exclude=1,2;near=0.5")
    assert name == "a" and (d.low, d.high, d.open_low, d.open_high) == (0.0, 5.0, True, False)
    assert d.shape == ((2, 2), (3, 3)) and d.symmetric and d.positive and d.exclude == (1.0, 2.0) and d.near == 0.5
    assert explore.parse_domain(f"x={d.describe()}")[1] == d


@pytest.mark.parametrize("text, words", [
    ("[0, 1]", "names no argument"),
    ("x=0..1", "is not an interval"),
    ("x=[a, 1]", "are not numbers"),
    ("x=[1, 0]", "cannot be satisfied"),
    ("x=(1, 1]", "cannot be satisfied"),
    ("x=[0, 1];exclude=0.5;near=1", "within 1 of an excluded value"),
    ("x=[0, 1];shape=(2, 3);symmetric", "not square"),
    ("x=[0, 1];colour=red", "cannot read"),
])
def test_a_domain_that_names_no_argument_or_cannot_be_satisfied_is_refused_with_the_form(text, words):
    with pytest.raises(explore.ExploreError, match=words):
        explore.parse_domain(text)


def test_a_case_s_domain_must_name_a_differentiated_argument_and_be_satisfiable():
    args = dict(fn=lambda x: x, points=[{"x": np.float32(1.0)}], source="a test", description="identity")
    assert Case(id="t.ok", domains={"x": Domain(-1.0, 1.0)}, **args).domains == {"x": Domain(-1.0, 1.0)}
    with pytest.raises(CaseError, match=r"field \"domains\['y'\]\": 'y' is not an argument"):
        Case(id="t.bad", domains={"y": Domain(-1.0, 1.0)}, **args)
    with pytest.raises(CaseError, match=r"domains\['x'\].*no number is between 2 and 1"):
        Case(id="t.empty", domains={"x": Domain(2.0, 1.0)}, **args)


def _info(domain: Domain) -> CaseInfo:
    return CaseInfo(id="t.f", description="", source="", order=1, points=("x=0.0",),
                    arguments=(("x", "float32", ()),), domains=(("x", domain),), fixed=(0.0,))


def _result(values, verdict: Verdict, value: float = 1.0) -> Result:
    outcome = ModeOutcome(mode="eager", status=Status.OK, orders=((Output(np.float32(value), "float32", ()),),))
    return Result(case="t.f", point=explore.label_of(values), order=1, verdict=verdict, reason="", details=(),
                  outcomes={"eager": outcome}, rerun="")


def test_the_search_shrinks_an_overflow_to_the_smallest_integer_above_the_threshold(tmp_path):
    def measure(values):
        x = float(values[0][1])
        return _result(values, Verdict.FAIL if x > math.log(np.finfo(np.float32).max) else Verdict.PASS)

    found = explore.search(_info(Domain(-100.0, 100.0)), [("x", Domain(-100.0, 100.0))], measure, examples=200,
                           seed=0, key="t", database=str(tmp_path))
    assert float(found.values[0][1]) == OVERFLOW and explore.inputs_literal(found.values) == "89.0"


def test_shrinking_keeps_the_first_cause_and_does_not_slide_into_another(tmp_path):
    # Above 50 the value is inf (one bug, found first); between 10 and 50 it is finite but wrong (another,
    # failing only once the first is found: what a shrink that ignored the cause would slide into).
    inf_seen = []

    def measure(values):
        x = float(values[0][1])
        if x > 50:
            inf_seen.append(x)
            return _result(values, Verdict.FAIL, math.inf)
        return _result(values, Verdict.FAIL if x > 10 and inf_seen else Verdict.PASS)

    found = explore.search(_info(Domain(0.0, 100.0)), [("x", Domain(0.0, 100.0))], measure, examples=100,
                           seed=0, key="t2", database=str(tmp_path))
    assert float(found.values[0][1]) == 51.0


def test_exclusions_and_open_bounds_are_never_drawn(tmp_path):
    d = explore.parse_domain("x=(0, 1];exclude=0.5;near=0.1")[1]
    seen = []

    def measure(values):
        seen.append(float(values[0][1]))
        return _result(values, Verdict.PASS)

    found = explore.search(_info(d), [("x", d)], measure, examples=50, seed=1, key="t3", database=None)
    assert found.result is None and found.tried == len(seen) > 10
    assert all(0 < x <= 1 and abs(x - 0.5) >= 0.1 for x in seen)


def test_without_a_seed_a_failure_found_is_kept_in_the_database_and_tried_first(tmp_path):
    def measure(values):
        return _result(values, Verdict.FAIL if float(values[0][1]) > 88.8 else Verdict.PASS)

    d = Domain(-100.0, 100.0)
    first = explore.search(_info(d), [("x", d)], measure, examples=200, seed=None, key="t4", database=str(tmp_path))
    assert list(tmp_path.iterdir())
    again = explore.search(_info(d), [("x", d)], measure, examples=200, seed=None, key="t4", database=str(tmp_path))
    assert float(first.values[0][1]) == float(again.values[0][1]) == OVERFLOW and again.tried <= 3


def test_the_inputs_literal_reads_back_to_the_same_float32_values():
    values = (("x", np.float32(0.1)), ("y", np.array([1.5, -2.0], np.float32)))
    assert explore.inputs_literal(values) == "(0.1, [1.5, -2.0])"
    assert explore.inputs_literal(values[:1]) == "0.1"


# -- shrinking holds the order, the source and the kind of difference (issue 23 item 4) -----------
#
# Each stand-in has two bugs: the first (x > 50) is the one found; the second (10 < x <= 50) fails only
# once the first was seen, so a shrink that lets it count as "the same cause" slides from 51 to 11.
# They differ only in what `cause` must hold: the kind of difference, its source, its order, or the
# oracle's sentence (a surrogate's) and note (a jump).

def _two_info(order: int = 2) -> CaseInfo:
    d = Domain(0.0, 100.0)
    return CaseInfo(id="t.g", description="", source="", order=order, points=("x=0.0, y=1.0",),
                    arguments=(("x", "float32", ()), ("y", "float32", ())), domains=(("x", d),), fixed=(0.0, 1.0))


def _mode(mode: str, last: dict, order: int = 2) -> ModeOutcome:
    """A mode's outcome of f(x, y): every gradient 1.0, except those `last` gives at the last order
    (source name to a value, or None for an unconnected gradient)."""
    sources = tuple(Differentiated(n, "float32", ()) for n in ("x", "y"))
    ones = tuple(Output.of(np.float32(1.0)) for _ in sources)
    top = tuple(Output.of(None, "float32", ()) if last.get(s.name, 1.0) is None
                else Output.of(np.float32(last.get(s.name, 1.0))) for s in sources)
    orders = ((Output.of(np.float32(0.0)),),) + (ones,) * (order - 1) + (top,)
    return ModeOutcome(mode=mode, status=Status.OK, orders=orders, sources=sources)


def _judged(info: CaseInfo, values, function: dict, oracles: dict = None) -> Result:
    outcomes = {"eager": _mode("eager", {}, info.order), "function": _mode("function", function, info.order)}
    return verdict.judge(info, explore.label_of(values), outcomes, tf_version="2.21.0", reference="eager",
                         rerun="", oracles=oracles or {})


def _numeric(differ: int, line: str, note: str = "") -> dict:
    return {"numeric": OracleOutcome(name="numeric", status="differ", orders=(1, 2), differ=(differ,),
                                     details=(line,), note=note)}


_WRONG = "eager=1 numeric=3 abs err 2 rel err 0.667 (allowed 1.3e-06: rtol 1.3e-06 and rounding, at step 0.001)"
_SURROGATE = ("order 1 gradient wrt x: eager=1 numeric=0 abs err 1 (the numeric derivative is 0) (1 of 1 elements "
              "differ); the function is locally constant here (the same value at every shift of up to ±h checked), "
              "so its true derivative is 0 and the custom gradient (eager's) is a surrogate, not a derivative")
_JUMP = ("central differences in float64 with step 0.001, every element; order 1: 1 of 2 elements not checked: the "
         "function's value jumps within a step of the point (a discontinuous forward, or one computed only to a "
         "tolerance), so its numeric derivative is no evidence")

# (what the two bugs differ in, the first's measurement, the second's)
_TWO_BUGS = {
    "kind": (lambda: ({"x": 2.0}, None), lambda: ({"x": None}, None)),  # a wrong value, then a documented None
    "source": (lambda: ({"y": 2.0}, None), lambda: ({"x": 2.0}, None)),  # wrt y (a mixed derivative), then wrt x
    "order": (lambda: ({}, _numeric(2, f"order 2 gradient wrt x: {_WRONG}")),
              lambda: ({}, _numeric(1, f"order 1 gradient wrt x: {_WRONG}"))),
    "oracle sentence": (lambda: ({}, _numeric(1, _SURROGATE)),  # a surrogate, then its jump
                        lambda: ({}, _numeric(1, f"order 1 gradient wrt x: {_WRONG}", _JUMP))),
}


@pytest.mark.parametrize("held", list(_TWO_BUGS))
def test_shrinking_holds_the_order_source_and_kind_of_the_difference_found(tmp_path, held):
    first, second = _TWO_BUGS[held]
    info = _two_info()
    seen_first = []

    def measure(values):
        x = float(values[0][1])
        if x > 50:
            seen_first.append(x)
            function, oracles = first()
        elif x > 10 and seen_first:
            function, oracles = second()
        else:
            function, oracles = {}, None
        return _judged(info, values, function, oracles)

    found = explore.search(info, list(info.domains), measure, examples=100, seed=0, key=f"t-{held}",
                           database=str(tmp_path))
    assert found.result.verdict is Verdict.FAIL and float(found.values[0][1]) == 51.0, found.result.reason


def test_the_two_bugs_of_each_stand_in_fail_with_the_same_verdict_and_the_same_modes_and_oracles():
    # What makes the test above a test of the order, the source and the kind: nothing coarser tells the
    # two bugs apart (the verdict, whether modes disagree, and which oracles differ are the same).
    info = _two_info()
    values = (("x", np.float32(60.0)), ("y", np.float32(1.0)))
    for first, second in _TWO_BUGS.values():
        a, b = _judged(info, values, *first()), _judged(info, values, *second())
        assert (a.verdict, a.modes_disagree, sorted(a.oracles)) == (b.verdict, b.modes_disagree, sorted(b.oracles))
        assert explore.cause(a, info) != explore.cause(b, info)
