"""Explore's command: the search run by the CLI, its output, reports and repro, in worker processes.

The pure parts are in tests/unit/test_explore_logic.py. The runs here start TensorFlow in
workers of their own: the ones that take more than a few seconds are marked slow.
"""

import json
import math
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tests import helpers
from tests.helpers import REPO

GRADS = os.path.join(REPO, "tests", "data", "explore_grads.py")
# exp overflows float32 above log(float32 max) = 88.72...; Hypothesis shrinks floats toward
# integers.
OVERFLOW = float(math.ceil(math.log(np.finfo(np.float32).max)))


# -- the command line --------------------------------------------------------------------------

def harness(cwd, *args, timeout=300):
    """The CLI run from `cwd` (outside the checkout), this checkout's harness first on the path."""
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return helpers.harness(*args, cwd=cwd, env=env, timeout=timeout)


def test_hypothesis_missing_is_one_line_saying_how_to_install_it(tmp_path):
    code = ("import sys; sys.modules['hypothesis'] = None\nsys.argv = ['harness', 'explore', "
            "'f.py:f', '--domain', 'x=[0, 1]']\nfrom harness import cli; cli.entry()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60, env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert (
        "pip install '.[explore]' in the harness checkout" in proc.stderr
        and "tensorflow" not in proc.stderr.lower()
    )


@pytest.mark.parametrize(
    "domain, words", [("x=[1, 0]", "cannot be satisfied"), ("=[0, 1]", "names no argument")]
)
def test_an_empty_domain_or_one_naming_nothing_is_exit_2_in_one_line(tmp_path, domain, words):
    proc = harness(tmp_path, "explore", f"{GRADS}:softplus", "--domain", domain)
    assert (
        proc.returncode == 2 and proc.stderr.count("\n") == 1 and words in proc.stderr
    ), proc.stderr


@pytest.mark.parametrize("domain, words", [
    # Each exclusion covers (x - 0.3, x + 0.3): together they cover [0, 1].
    ("x=[0, 1];exclude=0.25,0.75;near=0.3",
     "every value of [0, 1];exclude=0.25,0.75;near=0.3 is within 0.3 of an "
                                            "excluded value, so nothing can be drawn; narrow "
                                            "exclude or near"),
    # Hypothesis draws an example from 8 KiB, about 8 bytes a number.
    ("x=[-1, 1];shape=(1100,)",
     "shape [1100] holds 1100 numbers, more than the 600 explore can draw in one "
                                "example"),
    # float32's smallest normal number is 1.18e-38: every float32 number here is subnormal.
    ("x=[1e-40, 1e-39]",
     "no float32 number in [1e-40, 1e-39] can be drawn: explore draws no subnormal numbers"),
])
def test_a_domain_that_cannot_be_drawn_is_a_usage_error_before_any_case_runs(tmp_path, domain,
                                                                             words):
    # Before the workers start: no TensorFlow, and no example run (today: EXPLORE PASS after 0
    # examples with exit 0, or a traceback).
    proc = harness(tmp_path, "explore", f"{GRADS}:softplus", "--domain", domain, "--seed=0")
    helpers.assert_usage_error(proc, words)
    assert proc.stdout == ""


@pytest.mark.slow
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


@pytest.mark.slow
def test_the_naive_softplus_shrinks_to_89_with_the_numeric_oracle_s_explanation(naive):
    folder, proc = naive
    assert proc.returncode == 1, proc.stderr
    head = proc.stdout.splitlines()[0]
    assert head.startswith("EXPLORE FAIL  check.naive_softplus: fail at --inputs '89.0', shrunk, "
                           "after "), proc.stdout
    counts = re.search(r"after (\d+) examples \((\d+) searching, (\d+) shrinking\) in ", head)
    assert counts, head
    tried, searching, shrinking = map(int, counts.groups())
    assert tried == searching + shrinking and shrinking > 0 and "over x=[-100, 100]" in head
    assert "differ from the numeric derivative at order 1" in proc.stdout
    check = next(line for line in proc.stdout.splitlines() if line.strip().startswith("check: "))
    assert "python -m harness check" in check and "--inputs=89.0" in check and "--order=1" in check
    report = json.loads((folder / "r.json").read_text())
    (found,) = report["explore"]
    assert (
        found["verdict"] == "fail"
        and found["inputs"] == "89.0"
        and found["found"]["point"] == "x=89.0"
    )
    assert found["found"]["oracles"]["numeric"]["status"] == "differ" and found["tried"] >= 1
    assert (found["tried"], found["shrinking"]) == (tried, shrinking)
    suite = ET.parse(folder / "r.xml").getroot().find("testsuite")
    assert (
        suite.get("failures") == "1" and suite.find("testcase[@name='explore']/failure") is not None
    )
    assert (folder / "repro" / "check.naive_softplus" / "x=89.0" / "repro.py").exists()
    assert (folder / "repro" / "check.naive_softplus" / "x=89.0" / "ISSUE.md").exists()


@pytest.mark.slow
def test_the_check_command_it_prints_fails_at_that_point(naive):
    folder, proc = naive
    check = next(line for line in proc.stdout.splitlines() if line.strip().startswith("check: "))
    import shlex
    argv = shlex.split(check.split("check: ", 1)[1])
    again = harness(folder, *argv[3:])
    assert (
        again.returncode == 1 and "FAIL     check.naive_softplus[x=89.0]" in again.stdout
    ), again.stdout


@pytest.mark.slow
def test_the_same_seed_gives_the_same_examples_and_result(naive, tmp_path):
    _, first = naive
    second = harness(tmp_path, *NAIVE)  # a fresh folder: no example database to replay
    strip = lambda text: [
        re.sub(r" in [0-9.]+ s", "", line) for line in text.splitlines()
    ]  # noqa: E731
    assert strip(second.stdout) == strip(first.stdout) and second.returncode == 1


@pytest.mark.slow
def test_the_stable_softplus_passes_the_examples_asked_for(tmp_path):
    proc = harness(tmp_path, "explore", f"{GRADS}:softplus", "--domain", "x=[-100, 100]",
                   "--examples=30", "--seed=0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("EXPLORE PASS  check.softplus: 30 examples passed over x=[-100, "
                                  "100] in ")


@pytest.mark.slow
def test_explore_n_in_a_run_explores_the_library_cases_that_declare_domains(tmp_path):
    proc = harness(tmp_path, "--cases=patterns.softplus", "--explore=15", "--seed=0",
                   "--json_out=r.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS     patterns.softplus[" in proc.stdout
    assert (
        "EXPLORE PASS  patterns.softplus: 15 examples passed over x=[-100, 100];shape=()"
        in proc.stdout
    )
    report = json.loads((tmp_path / "r.json").read_text())
    assert [e["case"] for e in report["explore"]] == ["patterns.softplus"] and report["results"]


@pytest.mark.slow
def test_a_hang_is_a_timeout_reported_with_the_input_that_caused_it(tmp_path):
    proc = harness(tmp_path, "explore", f"{GRADS}:hangs_above_ten", "--domain", "x=[0, 100]",
                   "--timeout=8", "--seed=0", "--mode=eager")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    head = proc.stdout.splitlines()[0]
    assert head.startswith(
        "EXPLORE TIMEOUT  check.hangs_above_ten: timeout at --inputs '"
    ), proc.stdout
    assert float(head.split("--inputs '")[1].split("'")[0]) > 10
    assert "without shrinking" in proc.stdout and "ran past the 8 s timeout" in proc.stdout


@pytest.mark.slow
def test_wrt_draws_every_argument_differentiates_only_those_named_and_the_commands_carry_it(
    tmp_path,
):
    # Today: refused, "'a' is not differentiated; explore draws differentiated arguments only".
    proc = harness(tmp_path, "explore", f"{GRADS}:naive_scaled_softplus", "--domain",
                   "x=[-100, 100]", "--domain", "a=[1, 2]", "--wrt=x", "--seed=1", "--examples=100",
                   "--json_out=r.json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    head = proc.stdout.splitlines()[0]
    assert head.startswith(
        "EXPLORE FAIL  check.naive_scaled_softplus: fail at --inputs '("
    ), proc.stdout
    (found,) = json.loads((tmp_path / "r.json").read_text())["explore"]
    x, a = (float(v.split("=")[1]) for v in found["found"]["point"].split(","))
    # Where float32's exp goes wrong: 1 / (1 + exp(x)) is subnormal above log(1 / float32 tiny) =
    # 87.3, and exp(x) overflows above 88.72; a in [1, 2] scales the function, and moves neither.
    assert 87.3 < x <= 89.0 and 1.0 <= a <= 2.0, found["found"]["point"]
    assert all([s["name"] for s in m["sources"]] == ["x"] for m in found["found"]["modes"].values())
    assert "wrt a" not in proc.stdout and "order 1" in proc.stdout
    check = next(line for line in proc.stdout.splitlines() if line.strip().startswith("check: "))
    assert (
        "python -m harness check" in check
        and "--wrt=x" in check
        and f"'--inputs={found['inputs']}'" in check
    )
    assert "--wrt=x" in found["check"] and "--wrt=x" in found["found"]["rerun"]


@pytest.mark.slow
def test_explore_n_refuses_a_selected_case_s_domain_it_cannot_draw_before_any_case_runs(tmp_path):
    # Today: the case runs, then EXPLORE PASS after 0 examples, exit 0.
    cases = os.path.join(REPO, "tests", "data", "undrawable_cases.py")
    proc = harness(tmp_path, f"--case_file={cases}", "--explore=5", "--seed=0", "--mode=eager")
    helpers.assert_usage_error(proc,
                               "--explore: undrawable.covered argument 'x': every value of [0, "
                               "1];exclude="
                                     "0.25,0.75;near=0.3 is within 0.3 of an excluded value")
    assert "undrawable.covered[" not in proc.stdout  # no case point ran
