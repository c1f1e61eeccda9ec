"""The seed documents' numbers, reproduced in every mode.

Expected values come from the seeds (../shared/seeds/): the StackOverflow
answer prints dy/ddy at x = 1 and x = 100 from a v1 Session; the article states
the gradients of its examples; the rest are closed forms given in comments.
"""

import math

import numpy as np
import pytest

from harness import loader
from harness.records import Status, Verdict

MODES = ("eager", "function", "graph")


@pytest.fixture(scope="module")
def results(library_cases, library_results):
    """{case[point]: Result} of the seed cases, from the session's one run of the library."""
    found = {}
    for case in loader.pick(library_cases, ["seeds.*"]):
        for result in library_results[case.id]:  # the three core modes, default options
            found[result.name] = result
    return found


def _scalars(outcome, order):
    return [None if o.value is None else o.value[()] for o in outcome.orders[order]]


def test_log1pexp2_prints_the_answers_numbers_in_every_mode(results):
    # The answer's printout: x=1: dy 0.7310586, ddy -1.7182817; x=100: dy 1.0, ddy -inf.
    # Forward: log(1 + e) = 1.3132616 in float32; log(1 + e**100) overflows to inf.
    printed = {"x=1.0": ("1.3132616", "0.7310586", "-1.7182817"), "x=100.0": ("inf", "1.0", "-inf")}
    for point, numbers in printed.items():
        result = results[f"seeds.log1pexp2[{point}]"]
        # Every mode agrees; the numeric oracle holds the second derivative to be wrong, as
        # declared.
        assert result.verdict is Verdict.XFAIL, result.reason
        assert result.oracles["numeric"].differ == (2,)
        for mode in MODES:
            got = [_scalars(result.outcomes[mode], k)[0] for k in range(3)]
            assert got == [np.float32(n) for n in numbers], (point, mode)
            assert all(g.dtype == np.float32 for g in got)


def test_log1pexp2_forward_is_the_closed_form():
    assert np.float32(math.log1p(math.e)) == np.float32("1.3132616")


def test_docstring_nested_example_raises_a_different_class_per_mode_as_declared(results):
    result = results["seeds.docstring_nested[x=1.0]"]
    assert result.verdict is Verdict.XFAIL, result.reason
    types = {m: (o.status, o.error.type) for m, o in result.outcomes.items()}
    assert types == {"eager": (Status.ERROR, "ValueError"),
                     "function": (Status.ERROR, "InternalError"),
                     "graph": (Status.ERROR, "ValueError")}
    assert "2 gradients for 1 input" in " ".join(result.details)


def test_single_return_companion_gives_the_true_second_derivative(results):
    result = results["seeds.docstring_nested_single[x=1.0]"]
    assert result.verdict is Verdict.PASS, result.reason
    s = 1 / (1 + math.exp(-1.0))
    assert round(s * (1 - s), 8) == 0.19661193  # the value the issue quotes
    for mode in MODES:
        second = _scalars(result.outcomes[mode], 2)[0]
        np.testing.assert_allclose(second, s * (1 - s), rtol=1.3e-6, atol=1e-5)


def test_article_custom_square_and_subtract_square(results):
    square = results["seeds.custom_square[x=3.0]"]
    subtract = results["seeds.subtract_square[x=5.0,y=2.0]"]
    assert square.verdict is subtract.verdict is Verdict.PASS
    for mode in MODES:
        # x**2 at 3: 9, 2x = 6, 2.
        assert [float(_scalars(square.outcomes[mode], k)[0]) for k in range(3)] == [9.0, 6.0, 2.0]
        # (x - y)**2 at (5, 2): 9; 2(x - y) = 6 and -2(x - y) = -6.
        assert [float(v) for v in _scalars(subtract.outcomes[mode], 0)] == [9.0]
        assert [float(v) for v in _scalars(subtract.outcomes[mode], 1)] == [6.0, -6.0]


def test_article_branching_log1pexp_works_eagerly_and_cannot_be_traced(results):
    result = results["seeds.log1pexp_branch[x=1000.0]"]
    assert result.verdict is Verdict.XFAIL, result.reason
    eager = result.outcomes["eager"]
    # x > 100 returns x itself; the gradient 1 - 1/(e**1000 + 1) is 1 in float32.
    assert [float(_scalars(eager, k)[0]) for k in range(2)] == [1000.0, 1.0]
    for mode in ("function", "graph"):
        assert result.outcomes[mode].error.type == "OperatorNotAllowedInGraphError"
