"""A new mode is its row (harness.mode_names) and its runner module; a new oracle is its row
(harness.oracle_names) and its run (harness.measure.oracles). A toy of each is registered here at
test time, and everything that names modes or oracles picks it up with no other edit: `--mode`,
the ladder, the case API, the matrix page, both repro scripts, the fix hints; which oracles a point
needs, their runs, the verdict's and the bug report's words, the JSON report."""

import importlib.util
import json
import pickle
import sys
import types

import pytest

from harness import checking, mode_names, oracle_names
from harness.case import VALUES_DIFFER, CaseError, Expectation
from harness.criteria.rules import required_oracles
from harness.judge import explain
from harness.judge.verdict import judge
from harness.matrix import merge, render
from harness.measure import modes as mode_runners
from harness.measure import oracles
from harness.records import OracleOutcome, OracleStatus, Result, RunOptions, Verdict
from harness.report import json_report
from harness.repro import issue, script, short
from harness.repro.script import ScriptParts
from tests.unit.outcomes import RERUN, TF, make_case, ok, raised

TOY_MODE = mode_names.Mode("toy_mode", mode_names.EXTRA, "ty", ladder=True,
                           repro=mode_names.FUNCTION, function_options="reduce_retracing=True",
                           autograph=True)
# On wherever the numeric oracle is, so that the default options run it.
TOY_ORACLE = oracle_names.Oracle("toy", "the toy values", option="numeric")


@pytest.fixture
def toy_mode(monkeypatch):
    """The toy mode's row, between function and xla, and a runner module named after it."""
    rows = {}
    for name, row in mode_names.ROWS.items():
        rows[name] = row
        if name == "function":
            rows[TOY_MODE.name] = TOY_MODE
    monkeypatch.setattr(mode_names, "ROWS", rows)
    module = types.ModuleType("harness.measure.modes.toy_mode")
    module.run = lambda case, options: []
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


@pytest.fixture
def toy_oracle(monkeypatch):
    """The toy oracle's row and its run, and a numeric run that needs no TensorFlow."""
    def toy_run(case, point, agreed, options, note):
        return {"toy": OracleOutcome(name="toy", status=OracleStatus.DIFFER, orders=(1,),
                                     differ=(1,), details=("order 1: eager=2.0 toy=3.0",))}

    def numeric_run(case, point, agreed, options, note):
        return {"numeric": OracleOutcome(name="numeric", status=OracleStatus.MATCH, orders=(1,))}

    monkeypatch.setitem(oracle_names.ROWS, TOY_ORACLE.name, TOY_ORACLE)
    monkeypatch.setitem(oracles.RUNS, TOY_ORACLE.name, toy_run)
    monkeypatch.setitem(oracles.RUNS, oracle_names.NUMERIC, numeric_run)
    return toy_run


def test_a_toy_mode_needs_its_row_and_its_runner_only(toy_mode):
    assert mode_names.LADDER == ("eager", "no_autograph", "function", "toy_mode", "xla", "graph")
    assert "toy_mode" in mode_names.KNOWN_MODES and "toy_mode" in mode_runners.KNOWN_MODES
    assert mode_names.parse_modes("full") == mode_names.FULL_MODES
    assert "toy_mode" in mode_names.parse_modes("full")
    assert mode_names.parse_modes("toy_mode,eager") == ("eager", "toy_mode")
    assert mode_runners.runner("toy_mode") is toy_mode
    # The case API and --expect take its name.
    make_case(Expectation(modes=("toy_mode",), outcome="TypeError", reason="a toy"),
              skip_modes={"toy_mode": "not here"})
    assert checking.parse_expect("toy_mode:TypeError:a toy")[0] == ("toy_mode",)
    # The ladder says where the results part.
    outcomes = {m: ok(m) for m in ("eager", "function", "graph")}
    outcomes["toy_mode"] = ok("toy_mode", grad=3.0)
    assert "the results part between function and toy_mode" in explain.ladder(outcomes, None)
    # It runs AutoGraph: a branching error there is AutoGraph's, not a missing conversion.
    branching = {"toy_mode": raised("toy_mode", "OperatorNotAllowedInGraphError")}
    assert not any("without AutoGraph" in h for h in explain.hints(branching, {}, []))


OK = {"status": "ok", "orders": [[{"value": 1.0, "dtype": "float32", "shape": []}]], "sources": []}
RAISES = {"status": "error", "orders": [], "sources": [], "error_type": "TypeError",
          "error_message": "no", "stage": "order 1", "error_bases": ["TypeError"]}


def _report(version: str, verdict: str, toy: dict) -> dict:
    """A JSON report of eager and the toy mode at one point, as a run on `version` writes it."""
    result = {"case": "seeds.a", "point": "x=1.0", "order": 1, "verdict": verdict, "reason": "",
              "details": [], "rerun": "", "modes": {"eager": OK, "toy_mode": toy}}
    return {"schema": "harness.report/1", "environment": {"tensorflow": version},
            "modes": ["eager", "toy_mode"], "results": [result], "summary": {}}


def test_the_matrix_page_marks_a_toy_mode_by_its_row(toy_mode):
    page = render.markdown(merge.merge({"a.json": _report("2.20.0", "pass", OK),
                                        "b.json": _report("2.21.0", "fail", RAISES)}))
    assert "e eager, ty toy_mode." in page
    assert "| **fail · TypeError: ty** |" in page


def test_both_repro_scripts_write_a_toy_mode_out_as_its_row_says(toy_mode):
    assert '"toy_mode": lambda: run_function(reduce_retracing=True)' in script._runners()
    case = make_case()
    full = script.render(case, case.points[0], ("eager", "toy_mode", "forward"), False, "cmd")
    assert "MODES = ['eager', 'toy_mode']" in full
    assert '"toy_mode": lambda: run_function(reduce_retracing=True)' in full
    parts = ScriptParts(case="mine.f", point="x=1.0", order=1, description="a function",
                        source="test", imports="", definitions="def f(x):\n    return x * x",
                        expression="f", builder=False, names=("x",),
                        inputs=("np.array(1.0, dtype=np.float32)",), dtypes=("float32",),
                        shapes=((),), wrt=(0,), unconnected_zero=False, command="", full="")
    raising = {m: raised(m, error, stage="order 1")
               for m, error in (("eager", "ValueError"), ("toy_mode", "TypeError"))}
    result = Result(case="mine.f", point="x=1.0", order=1, verdict=Verdict.FAIL, reason="",
                    details=(), outcomes=raising, rerun="", modes_disagree=True, yardstick="eager")
    made = short.render(parts, result)
    assert "('toy_mode', tf.function(gradients, reduce_retracing=True))" in made.text
    assert made.expected.outcomes == {"eager": "ValueError", "toy_mode": "TypeError"}


def test_a_toy_oracle_needs_its_row_and_its_run_only(toy_oracle):
    assert "toy" in oracle_names.ORACLES and "toy" in oracle_names.STANDALONE
    assert required_oracles(RunOptions(), ()) == ("numeric", "linearity", "upstream", "toy")
    # The linearity oracle needs the weighted chain, not the numeric derivative.
    assert required_oracles(RunOptions(numeric=False), ("reference",)) == ("linearity",
                                                                           "reference")
    assert required_oracles(RunOptions(numeric=False, upstream=False),
                            ("reference",)) == ("reference",)
    case = make_case(Expectation(modes=("toy",), outcome=VALUES_DIFFER, reason="a toy"))
    with pytest.raises(CaseError,
                       match="oracles: numeric, linearity, upstream, reference, analytic, toy"):
        make_case(Expectation(modes=("toys",), outcome=VALUES_DIFFER, reason="a typo"))
    assert checking.parse_expect("toy:values differ:a toy")[0] == ("toy",)
    agreed = ok("eager")
    found = oracles.consult(case, case.points[0], agreed, RunOptions(upstream=False))
    assert list(found) == ["numeric", "toy"] and found["toy"].status is OracleStatus.DIFFER
    skipped = oracles.consult(case, case.points[0], raised("eager", "TypeError"), RunOptions())
    assert skipped["toy"].status is OracleStatus.SKIP


def test_a_toy_oracle_is_worded_by_its_row(toy_oracle):
    case, agreeing = make_case(), {m: ok(m) for m in ("eager", "function")}
    point = case.points[0].label
    match = {"numeric": OracleOutcome(name="numeric", status="match", orders=(1,)),
             "toy": OracleOutcome(name="toy", status="match", orders=(1,))}
    passed = judge(case, point, agreeing, tf_version=TF, reference="eager", rerun=RERUN,
                   oracles=match)
    assert passed.reason == ("all modes agree, and match the numeric derivative and the toy "
                             "values")
    differ = toy_oracle(case, None, None, None, "")["toy"]
    failed = judge(case, point, agreeing, tf_version=TF, reference="eager", rerun=RERUN,
                   oracles=dict(match, toy=differ))
    assert failed.verdict is Verdict.FAIL
    assert failed.reason.startswith("the agreed values differ from the toy values at order 1")
    assert "toy:values differ" in failed.undeclared
    assert "and the values differ from the toy values" in issue._headline(failed)
    assert json_report.result_dict(failed)["oracles"]["toy"]["status"] == "differ"


def test_an_oracle_that_raises_is_an_error_and_so_are_those_beside_it(monkeypatch):
    def broken(case, point, agreed, options, note):
        raise RuntimeError("a fault")

    monkeypatch.setitem(oracles.RUNS, oracle_names.NUMERIC, broken)
    case = make_case()
    found = oracles.consult(case, case.points[0], ok("eager"), RunOptions())
    # linearity is not beside numeric: its own run says this outcome has no linearity chain
    assert {name: o.status for name, o in found.items()} == {"numeric": "error",
                                                             "linearity": "skip",
                                                             "upstream": "error"}
    assert found["upstream"].note == ("the numeric oracle itself raised RuntimeError: a fault (a "
                                      "fault in the harness's oracle code, not a verdict on the "
                                      "case)")


def test_every_mode_row_has_a_runner_module_and_every_oracle_row_a_run():
    for name, row in mode_names.ROWS.items():
        assert importlib.util.find_spec(f"harness.measure.modes.{row.runner or name}"), name
    assert set(oracles.RUNS) == set(oracle_names.ROWS)
    marks = [row.mark for row in mode_names.ROWS.values()]
    assert len(set(marks)) == len(marks), marks


def test_an_oracle_status_is_written_as_its_word_and_read_back_from_it():
    outcome = OracleOutcome(name="numeric", status="differ")
    assert outcome.status is OracleStatus.DIFFER and outcome.status == "differ"
    assert f"{outcome.status}" == str(outcome.status) == "differ"
    assert json.dumps({"status": OracleStatus.SKIP}) == '{"status": "skip"}'
    assert pickle.loads(pickle.dumps(outcome)) == outcome
    assert {"match": 1}[OracleStatus.MATCH] == 1
    with pytest.raises(ValueError):
        OracleOutcome(name="numeric", status="mtach")
    result = Result(case="c", point="p", order=1, verdict=Verdict.PASS, reason="", details=(),
                    outcomes={"eager": ok("eager")}, rerun="", oracles={"numeric": outcome})
    assert json_report.result_dict(result)["oracles"]["numeric"]["status"] == "differ"
    assert type(json_report.result_dict(result)["oracles"]["numeric"]["status"]) is str
