"""Explore: domains, the Hypothesis search, shrinking, and the command that runs it.

The pure tests import no TensorFlow. The integration tests each start the CLI
(a worker imports TensorFlow), so they share runs through module fixtures.
"""

import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from harness import Case, CaseError, Domain
from harness import explore
from harness.records import CaseInfo, ModeOutcome, Output, Result, Status, Verdict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRADS = os.path.join(REPO, "tests", "data", "explore_grads.py")
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


# -- the command line --------------------------------------------------------------------------

def harness(cwd, *args, timeout=300):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout)


def test_hypothesis_missing_is_one_line_saying_how_to_install_it(tmp_path):
    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "sys.argv = ['harness', 'explore', 'f.py:f', '--domain', 'x=[0, 1]']\n"
            "from harness import cli; cli.entry()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "pip install 'harness[explore]'" in proc.stderr and "tensorflow" not in proc.stderr.lower()


@pytest.mark.parametrize("domain, words", [("x=[1, 0]", "cannot be satisfied"), ("=[0, 1]", "names no argument")])
def test_an_empty_domain_or_one_naming_nothing_is_exit_2_in_one_line(tmp_path, domain, words):
    proc = harness(tmp_path, "explore", f"{GRADS}:softplus", "--domain", domain)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


def test_a_domain_naming_no_argument_of_the_function_is_exit_2_in_one_line(tmp_path):
    proc = harness(tmp_path, "explore", f"{GRADS}:softplus", "--domain", "y=[0, 1]")
    assert proc.returncode == 2, proc.stderr
    error = [line for line in proc.stderr.splitlines() if line.startswith("harness: error:")]
    assert len(error) == 1 and "--domain names y" in error[0] and "x" in error[0], proc.stderr


NAIVE = ("explore", f"{GRADS}:naive_softplus", "--domain", "x=[-100, 100]", "--order=1", "--seed=1",
         "--examples=100")


@pytest.fixture(scope="module")
def naive(tmp_path_factory):
    folder = tmp_path_factory.mktemp("naive")
    proc = harness(folder, *NAIVE, "--json_out=r.json", "--junit_out=r.xml", "--repro_dir=repro")
    return folder, proc


def test_the_naive_softplus_shrinks_to_89_with_the_numeric_oracle_s_explanation(naive):
    folder, proc = naive
    assert proc.returncode == 1, proc.stderr
    head = proc.stdout.splitlines()[0]
    assert head.startswith("EXPLORE FAIL  check.naive_softplus: fail at --inputs '89.0', shrunk, after "), proc.stdout
    assert "examples in" in head and "over x=[-100, 100]" in head
    assert "differ from the numeric derivative at order 1" in proc.stdout
    check = next(line for line in proc.stdout.splitlines() if line.strip().startswith("check: "))
    assert "python -m harness check" in check and "--inputs=89.0" in check and "--order=1" in check
    report = json.loads((folder / "r.json").read_text())
    (found,) = report["explore"]
    assert found["verdict"] == "fail" and found["inputs"] == "89.0" and found["found"]["point"] == "x=89.0"
    assert found["found"]["oracles"]["numeric"]["status"] == "differ" and found["tried"] >= 1
    suite = ET.parse(folder / "r.xml").getroot().find("testsuite")
    assert suite.get("failures") == "1" and suite.find("testcase[@name='explore']/failure") is not None
    assert (folder / "repro" / "check.naive_softplus" / "x=89.0" / "repro.py").exists()
    assert (folder / "repro" / "check.naive_softplus" / "x=89.0" / "ISSUE.md").exists()


def test_the_check_command_it_prints_fails_at_that_point(naive):
    folder, proc = naive
    check = next(line for line in proc.stdout.splitlines() if line.strip().startswith("check: "))
    import shlex
    argv = shlex.split(check.split("check: ", 1)[1])
    again = harness(folder, *argv[3:])
    assert again.returncode == 1 and "FAIL     check.naive_softplus[x=89.0]" in again.stdout, again.stdout


def test_the_same_seed_gives_the_same_examples_and_result(naive, tmp_path):
    _, first = naive
    second = harness(tmp_path, *NAIVE)  # a fresh folder: no example database to replay
    strip = lambda text: [line.split(" examples in ")[0] for line in text.splitlines()]  # noqa: E731
    assert strip(second.stdout) == strip(first.stdout) and second.returncode == 1


def test_the_stable_softplus_passes_the_examples_asked_for(tmp_path):
    proc = harness(tmp_path, "explore", f"{GRADS}:softplus", "--domain", "x=[-100, 100]", "--examples=30",
                   "--seed=0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("EXPLORE PASS  check.softplus: 30 examples passed over x=[-100, 100] in ")


def test_explore_n_in_a_run_explores_the_library_cases_that_declare_domains(tmp_path):
    proc = harness(tmp_path, "--cases=patterns.softplus", "--explore=15", "--seed=0", "--json_out=r.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS     patterns.softplus[" in proc.stdout
    assert "EXPLORE PASS  patterns.softplus: 15 examples passed over x=[-100, 100];shape=()" in proc.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert [e["case"] for e in report["explore"]] == ["patterns.softplus"] and report["results"]


def test_a_hang_is_a_timeout_reported_with_the_input_that_caused_it(tmp_path):
    proc = harness(tmp_path, "explore", f"{GRADS}:hangs_above_ten", "--domain", "x=[0, 100]", "--timeout=8",
                   "--seed=0", "--mode=eager")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    head = proc.stdout.splitlines()[0]
    assert head.startswith("EXPLORE TIMEOUT  check.hangs_above_ten: timeout at --inputs '"), proc.stdout
    assert float(head.split("--inputs '")[1].split("'")[0]) > 10
    assert "without shrinking" in proc.stdout and "ran past the 8 s timeout" in proc.stdout
