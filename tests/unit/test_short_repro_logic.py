"""Short reproductions without TensorFlow: which modes the script writes, what it compares, what
running it must show, the issue's sentence and the minimiser's protected statements (tests/unit)."""

import ast
import collections
import dataclasses
import sys
import threading
import time

import numpy as np
import pytest

from harness.cli import repro as cli_repro
from harness.jobs import Job
from harness.records import (
    Differentiated,
    ErrorInfo,
    ModeOutcome,
    OracleOutcome,
    Output,
    Result,
    RunOptions,
    Status,
    Verdict,
)
from harness.repro import candidates, issue, minimize, script, short, verify
from harness.repro.script import ScriptParts
from tests.unit import in_process
from tests.unit.outcomes import make_case

# -- the pieces, without TensorFlow --------------------------------------------------------------

def _parts(**changes) -> ScriptParts:
    fields = dict(case="mine.f", point="x=1.0", order=1, description="a test function",
                  source="test", imports="", definitions="def f(x):\n    return x * x",
                  expression="f", builder=False, names=("x",),
                  inputs=("np.array(1.0, dtype=np.float32)",), dtypes=("float32",), shapes=((),),
                  wrt=(0,), unconnected_zero=False, command="python -m harness ...",
                  full="THE FULL SCRIPT")
    fields.update(changes)
    return ScriptParts(**fields)


def _ok(mode: str, *orders) -> ModeOutcome:
    return ModeOutcome(mode=mode, status=Status.OK, sources=(Differentiated("x", "float32", ()),),
                       orders=tuple(tuple(Output(value=np.array(v, dtype=np.float32),
                                                 dtype="float32", shape=())
                                          for v in order) for order in orders))


def _raises(mode: str, error: str) -> ModeOutcome:
    return ModeOutcome(mode=mode, status=Status.ERROR,
                       error=ErrorInfo(type=error, bases=(error, "Exception"), message="said",
                                       stage="order 1"))


def _result(outcomes, verdict=Verdict.FAIL, oracles=None, yardstick="eager") -> Result:
    return Result(case="mine.f", point="x=1.0", order=1, verdict=verdict, reason="why", details=(),
                  outcomes={o.mode: o for o in outcomes}, rerun="python -m harness ...",
                  oracles=oracles or {}, modes_disagree=True, yardstick=yardstick)


def test_an_error_deviation_writes_the_yardstick_and_the_deviating_mode_only():
    result = _result([_raises("eager", "ValueError"), _raises("function", "InternalError"),
                      _raises("graph", "ValueError")])
    made = short.render(_parts(), result)
    assert "('eager', gradients), ('function', tf.function(gradients))" in made.text
    assert "tf.compat.v1" not in made.text  # graph agrees with eager: not written
    assert "np.allclose" not in made.text  # no tolerance for a difference of exception classes
    assert made.expected == short.Expected(exit=1,
                                           outcomes={"eager": "ValueError",
                                                     "function": "InternalError"},
                                           what="eager raises ValueError; function raises "
                                                "InternalError")
    ast.parse(made.text)


def test_a_values_deviation_compares_with_the_dtypes_tolerance_written_in():
    result = _result([_ok("eager", [32.0], [16.0]), _ok("function", [40.0], [20.0]),
                      _ok("graph", [40.0], [20.0])])
    made = short.render(_parts(), result)
    # torch.testing's and the brief's float32 tolerance: rtol 1.3e-6, atol 1e-5.
    assert "np.allclose(a, b, rtol=1.3e-06, atol=1e-05, equal_nan=True)" in made.text
    assert "tf.compat.v1.placeholder(tf.float32, shape=[])" in made.text
    assert made.expected.outcomes == {"eager": "ok", "function": "ok", "graph": "ok"}
    assert made.expected.exit == 1


def test_the_yardstick_is_the_verdicts_not_always_eager():
    # eager is declared to deviate, so the judge compared the others with function.
    result = _result([_raises("eager", "TypeError"), _ok("function", [1.0], [2.0]),
                      _ok("graph", [1.0], [2.0])],
                     yardstick="function")
    made = short.render(_parts(), result)
    assert "[('function', tf.function(gradients)), ('eager', gradients)]" in made.text
    assert "if found.get(m, 'ok') != found.get('function', 'ok')" in made.text


def test_what_the_short_script_cannot_show_says_why():
    builder = _result([_raises("eager", "ValueError"), _raises("function", "InternalError")])
    with pytest.raises(short.NotShort, match="builds its function"):
        short.render(_parts(builder=True), builder)
    hang = _result([_ok("eager", [1.0], [2.0]),
                    ModeOutcome(mode="function", status=Status.TIMEOUT)])
    with pytest.raises(short.NotShort, match="timed out"):
        short.render(_parts(), hang)
    saved = _result([_ok("eager", [1.0], [2.0]), _raises("saved_model", "LookupError")])
    with pytest.raises(short.NotShort, match="only saved_model deviate"):
        short.render(_parts(), saved)
    reference = _result([_ok("eager", [1.0], [2.0]), _ok("function", [1.0], [2.0])],
                        oracles={"reference": OracleOutcome(name="reference", status="differ",
                                                            differ=(1,))})
    with pytest.raises(short.NotShort, match="reference oracle"):
        short.render(_parts(), reference)


def test_the_builder_a_job_hands_the_worker_gives_each_point_its_parts_or_why_it_has_none():
    case = make_case()
    labels = tuple(p.label for p in case.points)
    job = Job(case_id=case.id, order=1, points=labels, modes=("eager", "graph"),
              options=RunOptions(), strict_xpass=False,
              reruns=tuple((label, f"rerun {label}") for label in labels), repro=script.for_points)
    found = job.repro(case, job)
    assert {label: (ok, parts.point, parts.command) for label, (ok, parts) in found.items()} == {
        "x=1.0": (True, "x=1.0", "rerun x=1.0"), "x=100.0": (True, "x=100.0", "rerun x=100.0")}

    def inner(x):
        return x

    assert job.repro(make_case(fn=inner, points=[{"x": np.float32(1.0)}]), job) == {
        "x=1.0": (False, "'inner' is not defined at the top level of "
                         "tests.unit.test_short_repro_logic; define the function under test (or "
                         "its builder) with def there")}


def test_a_crash_runs_the_mode_that_dies_and_flushes_what_it_printed():
    result = _result([_ok("eager", [1.0], [2.0]),
                      ModeOutcome(mode="function", status=Status.CRASH)],
                     verdict=Verdict.CRASH)
    made = short.render(_parts(), result)
    assert made.expected == short.Expected(exit=None, outcomes={"function": "crash"},
                                           what="function kills the process")
    assert "for mode, run in [('function', tf.function(gradients))]:" in made.text
    assert (
        "print(mode + ': running', flush=True)" in made.text and "raise SystemExit(0)" in made.text
    )


def test_a_numeric_deviation_computes_central_differences_in_the_oracles_dtype():
    note = "central differences in float64 with step 7.62939e-06, every element"
    result = _result([_ok("eager", [4.0], [6.0]), _ok("function", [4.0], [6.0])],
                     oracles={"numeric": OracleOutcome(name="numeric", status="differ",
                                                       orders=(1,), differ=(1,), note=note)})
    made = short.render(_parts(), result)
    assert "h = 7.62939e-06 * max(1.0, abs(float(X)))" in made.text
    assert "X.astype(np.float64) + h" in made.text and "X.astype(np.float64) - h" in made.text
    assert made.expected == short.Expected(exit=1, outcomes={"eager": "ok"},
                                           what="the values differ from the numeric derivative")


def test_a_numeric_deviation_of_several_scalar_inputs_gets_the_numeric_derivative_per_input():
    note = "central differences in float64 with step 7.62939e-06, every element"
    parts = _parts(definitions="def f(x, y):\n    return x * y", names=("x", "y"),
                   inputs=("np.array(1.0, dtype=np.float32)", "np.array(2.0, dtype=np.float32)"),
                   dtypes=("float32", "float32"), shapes=((), ()), wrt=(0, 1))
    sources = (Differentiated("x", "float32", ()), Differentiated("y", "float32", ()))
    two = [dataclasses.replace(_ok(m, [2.0], [3.0, 3.0]), sources=sources)
           for m in ("eager", "function")]
    result = _result(two,
                     oracles={"numeric": OracleOutcome(name="numeric", status="differ",
                                                       orders=(1,), differ=(1,), note=note)})
    made = short.render(parts, result)
    assert (
        "for i in [0, 1]:" in made.text
        and "print(f'numeric: order 1 wrt {name}', value)" in made.text
    )
    assert made.expected == short.Expected(exit=1, outcomes={"eager": "ok"},
                                           what="the values differ from the numeric derivative")
    ast.parse(made.text)


def test_names_that_the_definitions_use_are_not_taken_by_the_inputs():
    parts = _parts(definitions="X = 2.0\n\n\ndef f(x):\n    return X * x")
    made = short.render(parts,
                        _result([_raises("eager", "ValueError"),
                                 _raises("function", "InternalError")]))
    assert "X_ = np.array(1.0, dtype=np.float32)" in made.text and "tf.constant(X_)" in made.text


def test_a_numeric_deviation_of_a_vector_differs_element_by_element_up_to_a_bound():
    note = "central differences in float64 with step 7.62939e-06, every element"
    oracles = {"numeric": OracleOutcome(name="numeric", status="differ", orders=(1,), differ=(1,),
                                        note=note)}

    def vector(size):
        sources = (Differentiated("x", "float32", (size,)),)
        value = np.zeros(size, dtype=np.float32)
        out = (Output(value=value, dtype="float32", shape=(size,)),)
        return _result([ModeOutcome(mode=m, status=Status.OK, sources=sources, orders=(out, out))
                        for m in ("eager", "function")], oracles=oracles)

    made = short.render(_parts(shapes=((2,),), inputs=("np.array([1.0, 2.0], dtype=np.float32)",)),
                        vector(2))
    assert "for at in np.ndindex(base[i].shape):" in made.text and made.expected.exit == 1
    ast.parse(made.text)
    # Two runs of the tapes per element: past 64 elements the complete script says why.
    with pytest.raises(short.NotShort, match="at most 64 elements in all, not 65"):
        short.render(_parts(shapes=((65,),)), vector(65))


def test_the_complete_script_checks_the_numeric_derivative_where_the_oracle_differs():
    full = script._TEMPLATE.format_map(collections.defaultdict(str, body=""))
    checked = script.with_numeric(full, "eager", 2, "float64", 1e-5, 0.002, 0.0)
    assert ("NUMERIC = {'mode': 'eager', 'order': 2, 'dtype': 'float64', 'step': 1e-05, 'rtol': "
            "0.002, 'atol': 0.0}"
            in checked)
    result = _result([_ok("eager", [1.0], [2.0]), _ok("function", [1.0], [2.0])],
                     oracles={"numeric": OracleOutcome(name="numeric", status="differ",
                                                       differ=(1,))})
    # the modes agree: all the script shows without NUMERIC
    assert short.full_expected(result).exit == 0
    assert short.full_expected(result, numeric=True) == short.Expected(
        exit=1, outcomes={"eager": "ok", "function": "ok"},
        what="the values differ from the numeric derivative")


def test_an_input_named_like_a_name_of_the_script_is_renamed():
    # `y = f(x, y)` would put the output where the second input was: its gradient is then 1.
    parts = _parts(definitions="def f(x, y):\n    return x * y", names=("x", "y"),
                   inputs=("np.array(1.0, dtype=np.float32)", "np.array(2.0, dtype=np.float32)"),
                   dtypes=("float32", "float32"), shapes=((), ()), wrt=(0, 1))
    made = short.render(parts,
                        _result([_raises("eager", "ValueError"),
                                 _raises("function", "InternalError")]))
    assert "def gradients(x, y_):" in made.text and "y = f(x, y_)" in made.text
    assert "dy = tape1.gradient(y, [x, y_])" in made.text


def test_shows_compares_every_mode_printed_and_the_exit_status():
    expected = short.Expected(exit=1,
                              outcomes={"eager": "ValueError", "function": "InternalError"},
                              what="w")
    printed = (
        "TensorFlow 2.21.0\neager: ValueError: two\nfunction: InternalError: three\nDIFFERS: x\n"
    )
    assert verify.shows(verify.Ran(1, printed, ""), expected) is None
    assert verify.shows(verify.Ran(0, printed, ""), expected) == (
        "it exited 0: no deviation showed, where the harness saw w")
    fixed = "eager: ok 1.0\nfunction: ok 1.0\nSAME: eager ok, function ok\n"
    assert verify.shows(verify.Ran(0, fixed, ""), expected) == (
        "in it eager returned values, where the harness saw ValueError")
    assert verify.shows(verify.Ran(None, "", ""), expected) == "it ran past the timeout"
    assert verify.shows(verify.Ran(2, "", "Traceback\nNameError: f\n"),
                        expected) == "it exited 2: NameError: f"
    crash = short.Expected(exit=None, outcomes={}, what="function kills the process")
    assert verify.shows(verify.Ran(-6, "", ""), crash) is None
    assert verify.shows(verify.Ran(0, "", ""),
                        crash) == "it exited 0 where the harness saw function kills the process"


def test_the_issue_says_which_modes_did_what():
    result = _result([_raises("eager", "ValueError"), _raises("function", "InternalError"),
                      _raises("graph", "ValueError")])
    assert issue._how(result) == "eager and graph raise ValueError; function raises InternalError"
    values = _result([_ok("eager", [1.0]), _ok("function", [2.0]), _ok("graph", [2.0])])
    assert issue._how(values) == "function and graph return other values than eager"


def test_the_issue_says_when_only_the_weighted_chain_differs():
    def weighted(mode, value):
        return dataclasses.replace(_ok(mode, [1.0], [2.0]), upstream=(
            (Output(value=np.array(value, dtype=np.float32), dtype="float32", shape=()),),))

    # Equal plain values, weighted chains -1.25 and 0.5: not "other values" at the plain sum.
    result = _result([weighted("eager", -1.25), weighted("function", 0.5)])
    assert issue._how(result) == ("function returns the same values as eager for the plain sum of "
                                  "the outputs, and other values with upstream weights")


def test_the_issue_names_the_library_the_function_comes_from_with_its_version():
    result = _result([_ok("eager", [1.0], [2.0]), _ok("function", [1.0], [2.0])])
    text = issue.render(result, "print(1)\n", {"tensorflow": "2.21.0"},
                        "log1p checked from the command line", "1\n",
                        origin="tensorflow.python.ops.gen_math_ops.log1p",
                        library="tensorflow 2.21.0")
    assert text.startswith("# tensorflow: `tensorflow.python.ops.gen_math_ops.log1p` (")
    assert ("### Custom code\n\nNo: the function under test, "
            "`tensorflow.python.ops.gen_math_ops.log1p`, comes from tensorflow 2.21.0\n") in text
    assert "checked from the command line" not in text
    assert ("The same function `tensorflow.python.ops.gen_math_ops.log1p`, differentiated to order "
            "1 at `x=1.0`, does not do the same in every mode") in text


def test_minimizing_keeps_the_statements_that_decide_the_exit_status():
    text = (
        "import sys\nfound = {}\ndiffers = []\nprint('SAME:')\nraise SystemExit(1 if differs else"
        " 0)\n"
    )
    assert minimize._statements(text)[-minimize._PROTECTED:] == [
        "differs = []", "print('SAME:')", "raise SystemExit(1 if differs else 0)"]
    assert minimize._differs_line(verify.Ran(1, "a\nDIFFERS: order 1 6.0 vs the numeric 4.00001\n",
                                             "")) == (
        "DIFFERS: order # # vs the numeric #")
    assert minimize._layout("def f(x):\n\n    return x\nX = 1\nfor i in []:\n    pass\n") == (
        "def f(x):\n    return x\n\nX = 1\n\nfor i in []:\n    pass\n")



def test_minimize_without_its_reducer_is_a_usage_error_before_any_case_runs(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pysource_minimize", None)  # as where it is not installed
    proc = in_process.harness("repro", "seeds.docstring_nested", "--out=o", "--minimize",
                              cwd=str(tmp_path))
    assert proc.returncode == 2
    assert list(tmp_path.iterdir()) == []
    assert proc.stderr == ("harness: error: --minimize needs pysource-minimize: pip install "
                           "'.[minimize]' in the harness checkout\n")


# -- the minimiser's search, with a stand-in for the candidate runner ------------------------------

# A short script's shape: the function under test imported from a library, the driving function,
# a helper the deviation does not need, and the three protected statements at the end.
SCRIPT = """\
import numpy as np
import tensorflow as tf
from mylib import f


def unused(v):
    return v * 3.0


def gradients(x):
    with tf.GradientTape() as tape1:
        tape1.watch(x)
        y = f(x)
    dy = tape1.gradient(y, x)
    return [y, dy]


X = np.array(1.5, dtype=np.float32)
PADDING = unused(X) + 1.0
found = {}
found['eager'] = [t.numpy() for t in gradients(tf.constant(X))]
print('eager: ok', *found['eager'])
differs = True
print('DIFFERS: order 1', found['eager'][1], 'vs the numeric', 4.0)
raise SystemExit(1 if differs else 0)
"""
EXPECTED = short.Expected(exit=1, outcomes={"eager": "ok"},
                          what="the values differ from the numeric derivative")
PRINTED = "eager: ok 2.25 6.0\nDIFFERS: order 1 6.0 vs the numeric 4.0\n"


class _FakeRunner:
    """Stands in for the candidate runner: every candidate prints what the script printed and
    computes `values(candidate)`; each run advances `clock` by one second."""

    def __init__(self, clock, values=lambda text: [np.float32(2.25), np.float32(6.0)], after=None):
        self.clock, self.values, self.after, self.runs = clock, values, after, 0

    def __call__(self, timeout, stop):
        self.stop = stop
        return self

    def run(self, text):
        self.runs += 1
        self.clock[0] += 1.0
        if self.after:
            self.after(self)
        computed = {"found": {"eager": [np.asarray(v) for v in self.values(text)]}}
        return candidates.Run(verify.Ran(1, PRINTED, ""), ("ok",), computed)

    def close(self):
        pass


def _minimize(monkeypatch, runner, clock, **kw):
    monkeypatch.setattr(minimize.time, "monotonic", lambda: clock[0])
    return minimize.minimize(SCRIPT, EXPECTED, timeout=60, function="f", runner=runner, **kw)


def test_minimize_keeps_the_smallest_script_so_far_when_its_budget_runs_out(monkeypatch):
    clock = [0.0]
    made = _minimize(monkeypatch, _FakeRunner(clock), clock, budget=8)
    # Eight one-second candidates fit the budget; the ninth check finds it spent.
    assert made.candidates == 8 and made.stopped == "stopped at the time budget of 8 s"
    assert made.shrunk and made.after_lines < made.before_lines == len(SCRIPT.splitlines())
    assert made.summary().endswith("stopped at the time budget of 8 s, so this is the smallest "
                                   "script found so far")
    assert "checker return False" not in made.summary()
    ast.parse(made.text)


def test_a_budget_spent_before_any_smaller_script_held_keeps_the_script_and_says_so(monkeypatch):
    clock = [0.0]
    made = _minimize(monkeypatch, _FakeRunner(clock), clock, budget=0.5)
    assert not made.shrunk and made.text == SCRIPT
    assert (
        made.summary()
        == "repro.py not minimised: stopped at the time budget of 0.5 s (0 candidates tried in 1 s)"
    )


def test_a_minimised_script_still_imports_and_calls_the_function_under_test(monkeypatch):
    # Every candidate prints and computes the same: only the function check keeps the import
    # and the call inside the function that runs the tapes (what is left of it).
    clock = [0.0]
    made = _minimize(monkeypatch, _FakeRunner(clock), clock, budget=10_000)
    assert made.stopped == "" and made.shrunk
    assert "from mylib import f\n" in made.text
    body = made.text.split("def gradients(", 1)[1].split("\n\n", 1)[0]
    assert "f(x)" in body, made.text
    assert "unused" not in made.text and "PADDING" not in made.text


def test_a_candidate_with_other_values_is_rejected_though_its_lines_keep_their_shape(monkeypatch):
    # Dropping the helper would change the gradient: 6.0 while it is there, 0.0 without it.
    def values(text):
        return [np.float32(2.25), np.float32(6.0 if "unused(X)" in text else 0.0)]

    clock = [0.0]
    made = _minimize(monkeypatch, _FakeRunner(clock, values), clock, budget=10_000)
    assert "unused(X)" in made.text


def test_values_match_within_the_dtypes_tolerance_with_nan_where_it_was():
    nan = np.float32("nan")
    base = {"found": {"eager": [np.asarray(np.float32(1.0)), np.asarray(nan)]},
            "numeric": np.asarray(-2.0)}
    # float32: rtol 1.3e-6, atol 1e-5 (the brief's table); float64: 1e-7 both.
    near = {"found": {"eager": [np.asarray(np.float32(1.000005)), np.asarray(nan)]},
            "numeric": np.asarray(-2.0)}
    assert minimize._close(near, base, None)
    far = {"found": {"eager": [np.asarray(np.float32(1.0001)), np.asarray(nan)]},
           "numeric": np.asarray(-2.0)}
    assert not minimize._close(far, base, None)
    no_nan = {"found": {"eager": [np.asarray(np.float32(1.0)), np.asarray(np.float32(0.0))]},
              "numeric": np.asarray(-2.0)}
    assert not minimize._close(no_nan, base, None)
    other_dtype = {"found": {"eager": [np.asarray(1.0), np.asarray(np.float64("nan"))]},
                   "numeric": np.asarray(-2.0)}
    assert not minimize._close(other_dtype, base, None)
    assert not minimize._close({"found": {"eager": "ValueError"}, "numeric": np.asarray(-2.0)},
                               base, None)


def test_a_stop_ends_the_minimiser_with_the_smallest_script_so_far(monkeypatch):
    def stop_after_five(runner):
        if runner.runs == 5:
            runner.stop.set()

    clock = [0.0]
    stop = threading.Event()
    made = _minimize(monkeypatch, _FakeRunner(clock, after=stop_after_five), clock, budget=10_000,
                     stop=stop)
    assert made.stopped == "interrupted" and made.candidates == 4 and made.shrunk
    assert made.after_lines < made.before_lines


@pytest.mark.subprocess
def test_a_stop_ends_a_repro_check_and_its_process_at_once():
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    start = time.monotonic()
    with pytest.raises(verify.Interrupted):
        verify.run("import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(120)\n",
                   timeout=300, stop=stop)
    assert time.monotonic() - start < 30  # against a script that sleeps 120 s


def test_a_printed_value_must_stay_the_value_not_only_a_number_in_its_place():
    want = ["eager: ok -2.25 -3.0 nan", "numeric: order 2 -1.9999999999962637",
            "DIFFERS: order 2 nan vs the numeric -1.9999999999962637"]
    # float32's tolerance (rtol 1.3e-6, atol 1e-5): a rounding apart is the same value.
    assert minimize._prints_the_same(["eager: ok -2.25 -3.0000002 nan"] + want[1:], want, 1.3e-6,
                                     1e-5)
    # The minimiser put 0 where numeric was printed: the line has its shape and lies.
    assert not minimize._prints_the_same([want[0], "numeric: order 2 0", want[2]], want, 1.3e-6,
                                         1e-5)
    assert not minimize._prints_the_same([want[0], want[2]], want, 1.3e-6, 1e-5)
    assert not minimize._prints_the_same(["eager: ok -2.25 -3.0 0.0"] + want[1:], want, 1.3e-6,
                                         1e-5)


def test_an_interrupt_while_writing_reproductions_is_said_in_one_line():
    from pathlib import Path


    done = [True, cli_repro.Stopped(Path("r/a/x=1.0"), "the script as written"),
            cli_repro.Stopped(Path("r/b/x=2.0"), ""), cli_repro.Stopped(Path("r/c/x=3.0"), "")]
    assert cli_repro.stopped_line(done) == (
        "harness: interrupted while writing reproductions: r/a/x=1.0/repro.py holds the script as "
        "written, not checked in a fresh process; 1 of 4 reproductions was finished before it; 2 "
        "were not written; no ISSUE.md beside an unchecked script")
    assert "\n" not in cli_repro.stopped_line(done)
