"""Contexts (harness.mode_names.CONTEXTS): rows of one table, selected like modes, each of its modes
compared with its base mode; no TensorFlow."""

import numpy as np
import pytest

from harness import mode_names
from harness.case import Expectation
from harness.criteria.compare import compare_outputs
from harness.criteria.tolerance import tolerance_for
from harness.judge.verdict import judge
from harness.matrix import render
from harness.records import Output, Verdict
from tests.unit.outcomes import RERUN, TF, make_case, ok, raised

TOY = mode_names.Context("toy_context", "tc", "a toy context", ("eager", "function"))


@pytest.fixture
def toy_context(monkeypatch):
    """The toy context's row and its two modes' rows, after every other mode."""
    monkeypatch.setitem(mode_names.CONTEXTS, TOY.name, TOY)
    rows = dict(mode_names.ROWS)
    rows.update({m.name: m for m in mode_names.modes_of(TOY)})
    monkeypatch.setattr(mode_names, "ROWS", rows)


def _judge(case, outcomes):
    return judge(case, case.points[0].label, outcomes, tf_version=TF, reference="eager",
                 rerun=RERUN)


def test_contexts_are_selected_as_modes_are():
    contexts = mode_names.parse_modes("contexts")
    assert contexts == ("eager",) + mode_names.CONTEXT_MODES
    assert mode_names.parse_modes("cond") == ("eager", "cond_eager", "cond_function", "cond_graph")
    assert mode_names.parse_modes("all,jacobian") == ("eager", "function", "graph",
                                                       "jacobian_eager", "jacobian_function")
    assert mode_names.parse_modes("map_fn_graph") == ("eager", "map_fn_graph")
    with pytest.raises(ValueError, match="'contexts' \\(the case inside each of cond, "):
        mode_names.parse_modes("cnd")
    # Every context's mode is named after it and its base, and marked on the matrix by both.
    for name in mode_names.CONTEXT_MODES:
        row = mode_names.ROWS[name]
        assert name == f"{row.context}_{row.base}" and row.base in mode_names.CONTEXTS[
            row.context].bases
    marks = [row.mark for row in mode_names.ROWS.values()]
    assert len(marks) == len(set(marks))


def test_a_new_context_is_its_row_and_everything_picks_it_up(toy_context):
    assert mode_names.CONTEXT_MODES[-2:] == ("toy_context_eager", "toy_context_function")
    assert mode_names.parse_modes("toy_context") == ("eager", "toy_context_eager",
                                                     "toy_context_function")
    assert "toy_context_function" in mode_names.parse_modes("contexts")
    assert mode_names.ROWS["toy_context_function"].mark == "tcf"
    assert render._mark("toy_context_function") == "tcf"  # noqa: SLF001 - the page's own lookup
    # Judged against its base: it raising where plain function computed is its own deviation,
    # said against function.
    case = make_case()
    failed = _judge(case, {"eager": ok("eager"), "function": ok("function"),
                           "toy_context_function": raised("toy_context_function",
                                                          "AttributeError", stage="order 1")})
    assert failed.verdict is Verdict.FAIL
    assert failed.reason == ("toy_context_function raises AttributeError at order 1, where "
                             "function computed at this point: it failed")
    assert failed.undeclared == ("toy_context_function:AttributeError",)


def test_a_context_raising_where_its_base_raises_is_its_base_s_deviation():
    case = make_case(Expectation(modes=("function",), outcome="ValueError", reason="declared"))
    outcomes = {"eager": ok("eager"), "function": raised("function", "ValueError"),
                "cond_function": raised("cond_function", "AssertionError")}
    result = _judge(case, outcomes)
    assert result.verdict is Verdict.XFAIL and result.undeclared == ()


def test_a_context_computing_where_its_base_raises_is_judged_by_the_yardstick():
    case = make_case(Expectation(modes=("function",), outcome="ValueError", reason="declared"))
    agreeing = {"eager": ok("eager"), "function": raised("function", "ValueError"),
                "cond_function": ok("cond_function")}
    assert _judge(case, agreeing).verdict is Verdict.XFAIL
    wrong = dict(agreeing, cond_function=ok("cond_function", grad=3.0))
    failed = _judge(case, wrong)
    assert failed.verdict is Verdict.FAIL
    assert failed.reason.startswith("order 1 gradient wrt x: cond_function vs eager:")


def test_a_context_s_values_are_compared_with_its_base_s():
    # function computes 3 where eager computes 2, as declared; inside tf.cond it computes 3 too.
    case = make_case(Expectation(modes=("function",), outcome="values differ", reason="declared"))
    outcomes = {"eager": ok("eager"), "function": ok("function", grad=3.0),
                "cond_function": ok("cond_function", grad=3.0)}
    assert _judge(case, outcomes).verdict is Verdict.XFAIL
    outcomes["cond_function"] = ok("cond_function", grad=4.0)
    failed = _judge(case, outcomes)
    assert failed.verdict is Verdict.FAIL
    assert failed.reason.startswith("order 1 gradient wrt x: cond_function vs function: ")


def test_none_and_zeros_agree_only_where_a_context_gives_the_zeros():
    # cond_v2 and while_v2 give zeros for an input the body does not differentiate.
    none, zeros = Output.of(None, "float32", (2,)), Output.of(np.zeros(2, np.float32))
    tol = tolerance_for("float32", None)
    assert compare_outputs(none, zeros, tol, ref_mode="eager", mode="while_loop_function",
                           at="order 1") is None
    assert compare_outputs(none, zeros, tol, ref_mode="eager", mode="function",
                           at="order 1") is not None
    ones = Output.of(np.ones(2, np.float32))
    assert compare_outputs(none, ones, tol, ref_mode="eager", mode="while_loop_function",
                           at="order 1") is not None
