"""`pytest --harness-check` on the small project of tests/data/record_project: its six tests all
pass, and two of the gradients they call are wrong (scaled_square ignores dy, clipped_relu takes a
Python `if` on a tensor), as tests/test_record.py establishes by replaying it. One flag must then
fail the run, in pytest's own summary, exit status and JUnit report, and replay once under
pytest-xdist. All start TensorFlow: slow.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from harness.record import store
from tests import helpers
from tests.helpers import DATA, REPO

pytestmark = pytest.mark.slow

WRONG = {"harness::recorded.mylib.ops.scaled_square[x=3.0]",
         "harness::recorded.mylib.ops.clipped_relu[x=1.5]"}


def _checked(tmp_path, *args):
    project = tmp_path / "project"
    shutil.copytree(DATA / "record_project", project)
    # CI=1: pytest then prints the short summary's lines whole, as a CI log shows them.
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2", CI="1")
    env.pop(store.ENV_SESSION, None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *helpers.RECORD_PLUGIN, "tests", "--harness-check",
                           f"--junitxml={tmp_path / 'j.xml'}", *args],
                          capture_output=True, text=True, cwd=project, env=env, timeout=600)
    return proc, ET.parse(tmp_path / "j.xml").getroot(), project


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one process", "xdist -n 2"])
def test_one_flag_fails_the_run_on_a_wrong_gradient_though_every_test_passed(tmp_path, workers):
    if workers:
        pytest.importorskip("xdist", reason="pytest-xdist is the test extra's")
    proc, junit, project = _checked(tmp_path, *workers,
                                    f"--harness-check-json={tmp_path / 'check.json'}")
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:]
    # The tests' own outcomes are unchanged: six pass; the replayed points are counted beside.
    assert "2 failed, 10 passed, 1 skipped" in out.splitlines()[-1], out[-1500:]
    summary = [line for line in out.splitlines() if line.startswith("FAILED ")]
    assert {line.split(" - ")[0].removeprefix("FAILED ") for line in summary} == WRONG
    # Each line: the first line of the explanation and the test that made the call.
    [scaled] = [line for line in summary if "scaled_square" in line]
    assert " - fail: grad_fn mishandles its upstream gradient: at order 1 " in scaled
    assert scaled.endswith("(called by tests/test_ops.py::test_scaled_square)"), scaled
    # Replayed once, by the process that owns the session, after the tests (and workers) ended.
    assert out.count("harness check: 7 points of the recorded custom gradients replayed in") == 1
    assert (project / ".harness" / "check").is_dir()
    cases = {(tc.get("classname"), tc.get("name")): tc for tc in junit.iter("testcase")}
    replayed = {f"{c}::{n}": tc for (c, n), tc in cases.items() if c == "harness"}
    assert len(replayed) == 7 and len(cases) == 13
    for nodeid in WRONG:
        [failure] = replayed[nodeid].findall("failure")
        assert failure.get("message").startswith("fail: ")
        assert "rerun: python -m harness replay" in failure.text
    assert "called by tests/test_ops.py::test_scaled_square" in \
        replayed["harness::recorded.mylib.ops.scaled_square[x=3.0]"].find("failure").get("message")
    # The replay's report is kept where asked, as python -m harness --json_out writes it.
    kept = json.loads((tmp_path / "check.json").read_text())
    assert kept["schema"] == "harness.report/1" and len(kept["results"]) == 7
    # pytest's progress counts the replayed points: it ends at 100%, never past it.
    assert "[100%]" in out and not re.search(r"\[1[0-9][1-9]%\]|\[1[1-9][0-9]%\]", out), out
    # Valid as pytest's own JUnit output is, against the schema its tests validate it with.
    xmlschema = pytest.importorskip("xmlschema", reason="xmlschema is the test extra's")
    xmlschema.XMLSchema(str(DATA / "junit-10.xsd")).validate(str(tmp_path / "j.xml"))


def _run(project, tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2", CI="1")
    env.pop(store.ENV_SESSION, None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *helpers.RECORD_PLUGIN, "tests", "--harness-check", *args],
                          capture_output=True, text=True, cwd=project, env=env, timeout=600)


def test_accepting_writes_the_reviewed_file_and_a_mended_function_leaves_it(tmp_path):
    pytest.importorskip("xdist", reason="pytest-xdist is the test extra's")
    project = tmp_path / "project"
    shutil.copytree(DATA / "record_project", project)
    reviewed = project / "harness-expectations.json"
    accepted = _run(project, tmp_path, "-n", "2", "--harness-accept")
    assert accepted.returncode == 0, accepted.stdout[-3000:]
    assert (f"harness check: wrote {reviewed}: + recorded.mylib.ops.clipped_relu "
            "function,graph:OperatorNotAllowedInGraphError; + recorded.mylib.ops.scaled_square "
            "upstream:values differ") in accepted.stdout
    written = reviewed.read_text()
    assert '"reason": "grad_fn mishandles its upstream gradient: at order 1' in written
    # A hand-written reason is kept by the next accept.
    reviewed.write_text(written.replace(written.split('"reason": "')[1].split('"')[0],
                                        "a Python if on a tensor, reviewed"))
    green = _run(project, tmp_path, "-n", "2")
    assert green.returncode == 0, green.stdout[-3000:]
    assert "10 passed, 1 skipped, 2 xfailed" in green.stdout.splitlines()[-1]
    # Mend scaled_square (its gradient ignored dy): its entry no longer deviates.
    ops = project / "mylib" / "ops.py"
    ops.write_text(ops.read_text().replace("        return 2.0 * x\n",
                                           "        return dy * 2.0 * x\n"))
    mended = _run(project, tmp_path, "-n", "2")
    assert mended.returncode == 0 and "1 xpassed" in mended.stdout.splitlines()[-1]
    strict = _run(project, tmp_path, "-n", "2", "--harness-strict")
    assert strict.returncode == 1
    assert "FAILED harness::recorded.mylib.ops.scaled_square[x=3.0] - fail: declared but did " \
           "not happen" in strict.stdout
    again = _run(project, tmp_path, "-n", "2", "--harness-accept")
    assert f"harness check: wrote {reviewed}: - recorded.mylib.ops.scaled_square upstream:values " \
           "differ" in again.stdout
    left = reviewed.read_text()
    assert "scaled_square" not in left and "a Python if on a tensor, reviewed" in left


@pytest.mark.parametrize("text, said", [
    ('{"schema": "harness.expectations/1",\n "expected": [\n  {"function": "x",, }]}',
     ":3: not JSON (Expecting property name enclosed in double quotes); fix it, or write it "
     "again with --harness-accept"),
    ('{"schema": "harness.expectations/1", "expected": [\n {"function": "f", "expect": '
     '"nomode:ValueError", "reason": "r"}]}', ":2: 'nomode:ValueError': unknown mode 'nomode'"),
])
def test_a_malformed_expectations_file_stops_pytest_before_any_test_naming_its_line(
    tmp_path, text, said,
):
    project = tmp_path / "project"
    shutil.copytree(DATA / "record_project", project)
    (project / "harness-expectations.json").write_text(text)
    proc = _run(project, tmp_path)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    said_all = (proc.stdout + proc.stderr).splitlines()
    [error] = [line for line in said_all if line.startswith("ERROR")]
    assert error.startswith(f"ERROR: {project / 'harness-expectations.json'}{said}"), error
    assert "passed" not in proc.stdout  # no test ran


def test_the_record_command_s_check_replays_what_a_suite_pytest_does_not_run_recorded(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(DATA / "record_project", project)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = helpers.harness("record", str(tmp_path / "rec"), "--check", "--", sys.executable, "-m",
                           "unittest", "discover", "-s", str(project), "-p",
                           "test_unittest_style.py", cwd=str(project), env=env, timeout=600)
    # The unittest suite passes; the gradient it calls ignores dy: the replay's status is 1.
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "FAIL     recorded.mylib.ops.scaled_square[x=3.0]" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1].startswith("1 case at 1 point: 1 fail in ")
