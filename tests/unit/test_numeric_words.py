"""The numeric oracle's sentences from its findings (plain data): every count in them is the count
of the findings it names, and each reason says what the differences showed."""

from types import SimpleNamespace

import numpy as np

from harness.criteria import differences
from harness.criteria.differences import Judged
from harness.measure.oracles import words
from harness.measure.oracles.directions import Direction
from harness.measure.oracles.findings import OrderFindings, Finding
from harness.criteria.tolerance import Tol

TOL = Tol(rtol=1e-5, atol=0.0)
AGREED = SimpleNamespace(mode="eager", usage=None,
                         sources=[SimpleNamespace(name="x", shape=(3,), dtype="float64")])
EVALUATOR = SimpleNamespace(bases=[np.zeros(3)], dtype=lambda: "float64", traced_orders=set(),
                            traced_against={}, wide=True, not_float64="")


def _finding(flat, judged, analytic):
    unit = [np.eye(3)[flat]]
    return Finding(Direction(unit, element=(0, flat)), analytic, judged, TOL)


def _differ(numeric, step=7.6e-6):
    return Judged("differ", differences.SMOOTH, numeric=numeric, allowed=1e-5, excess=abs(numeric),
                  step=step, plus=1.0, minus=0.0, base=0.5)


# half of log's gradient at x = [0.5, 2, -1]: 1 and 0.25 against 2 and 0.5; log(-1) is NaN.
HALF_LOG = OrderFindings(order=1, by_element=True, swept=(0,), findings=(
    _finding(0, _differ(2.0), 1.0),
    _finding(1, _differ(0.5), 0.25),
    _finding(2, Judged("unresolved", differences.NONFINITE, step=7.6e-6), -0.5),
))


def test_the_line_counts_the_differing_and_the_set_aside_elements_of_the_worst_source():
    line = words.line(HALF_LOG, AGREED, EVALUATOR, [False])
    assert line.startswith("order 1 gradient wrt x[0]: eager=1 numeric=2 abs err 1 rel err 0.5 "), \
        line
    assert ("(2 of 3 elements of x differ; 1 of 3 not checked: the function's value is not finite "
            "within a step of the point)") in line, line
    # Nothing says which is wrong: the numeric derivative is the forward's slope, and the forward
    # may be the inexact one (TensorFlow Probability's owens_t is off in float64 near a = 3).
    assert line.endswith("; the numeric derivative is the slope of the forward as computed, so the "
                         "forward and the gradient disagree here, and either may be the wrong "
                         "one"), line
    assert "surrogate" not in line and "untrue" not in line


def test_the_note_says_how_many_were_checked_and_names_those_set_aside():
    assert words.unchecked(HALF_LOG, ["x"], [(3,)]) == (
        "order 1: 2 of 3 elements checked; 1 not checked (x[2]): the function's value is not "
        "finite within a step of the point")
    every = OrderFindings(order=1, by_element=True, findings=HALF_LOG.findings[:2])
    assert words.unchecked(every, ["x"], [(3,)]) == ""


def test_a_gradient_below_the_noise_says_the_noise_and_the_step():
    judged = Judged("unresolved", differences.NOISE, step=5.72e-6, noise=1.2e-13)
    assert words.unresolved(judged, 1, "") == (
        "the forward's noise (1e-13) at this step (5.7e-06) is larger than the gradient")
    assert words.unresolved(judged, 2, "").startswith("the order 1 gradient's noise (1e-13)")


def test_an_element_left_partly_unread_says_why_it_is_not_a_difference():
    judged = Judged("unresolved", "partial", step=7.6e-6)
    assert words.unresolved(judged, 1, "") == (
        "some of the function's values are not finite at the point and were left out, and the "
        "gradient may hold their derivative")


def test_the_note_names_the_sources_read_from_one_shift():
    note = words.numeric_note(EVALUATOR, AGREED, [(HALF_LOG, None)], [False], 2.0 ** -17)
    assert note == ("central differences in float64 with step 7.62939e-06, every element; x read "
                    "element by element from one shift of all its elements, its values being "
                    "elementwise in it")


def test_the_note_says_why_the_differences_are_not_in_float64():
    narrow = SimpleNamespace(bases=[np.zeros(3)], dtype=lambda: "float32", traced_orders=set(),
                             traced_against={}, wide=False,
                             not_float64="a cast to a narrower dtype inside")
    agreed = SimpleNamespace(sources=[SimpleNamespace(name="x")])
    note = words.numeric_note(narrow, agreed, [], [False], 0.0039)
    assert note == ("central differences in float32 with step 0.0039, every element; not in "
                    "float64: a cast to a narrower dtype inside")


def test_the_note_says_what_the_traced_values_were_found_equal_to():
    # Checked against the eager evaluation in float64 at the point, and against the agreed
    # mode's float32 values (a point slow in its mode, traced from the start): each with its own
    # tolerance, and the agreed mode named, not called eager.
    traced = SimpleNamespace(**{**vars(EVALUATOR), "traced_orders": {0},
                                "traced_against": {"eager": 1e-9, "agreed": 7.62939e-06}})
    agreed = SimpleNamespace(**{**vars(AGREED), "mode": "function"})
    note = words.numeric_note(traced, agreed, [], [False], 2.0 ** -17)
    assert note.endswith("; evaluated through a tf.function (its values at the point are "
                         "function mode's to a relative 7.6e-06 and an eager evaluation's to "
                         "a relative 1e-09)"), note
