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
import signal
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
    assert " - fail: grad_fn is not linear in its upstream gradient: order 1 " in scaled
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
    assert kept["schema"] == "harness.report/2" and len(kept["results"]) == 7
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
            "linearity,upstream:values differ") in accepted.stdout
    written = reviewed.read_text()
    assert '"reason": "grad_fn is not linear in its upstream gradient: order 1' in written
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
    mended = _run(project, tmp_path, "-n", "2", "-rX")
    assert mended.returncode == 0 and "1 xpassed" in mended.stdout.splitlines()[-1]
    # The xpass names what changed: the function's code, not TensorFlow.
    [xpass] = [line for line in mended.stdout.splitlines() if line.startswith("XPASS ")]
    assert xpass.startswith("XPASS harness::recorded.mylib.ops.scaled_square[x=3.0] - the reviewed "
                            "entry recorded.mylib.ops.scaled_square (linearity,upstream:values "
                            "differ) no longer deviates here: the function's code changed since "
                            "the entry was accepted; if the change fixed it, rerun with "
                            "--harness-accept"), \
        xpass
    strict = _run(project, tmp_path, "-n", "2", "--harness-strict")
    assert strict.returncode == 1
    assert "FAILED harness::recorded.mylib.ops.scaled_square[x=3.0] - fail: the reviewed entry " \
           "recorded.mylib.ops.scaled_square (linearity,upstream:values differ) no longer " \
           "deviates here: the function's code changed" in strict.stdout, strict.stdout[-3000:]
    again = _run(project, tmp_path, "-n", "2", "--harness-accept")
    assert f"harness check: wrote {reviewed}: - recorded.mylib.ops.scaled_square " \
           "linearity,upstream:values differ" in again.stdout
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


STEP = '''
import tensorflow as tf


@tf.custom_gradient
def step_through(x):
    """y = x; the gradient is wrong above 2 (0 where it should be dy)."""
    def grad(dy):
        return dy * tf.cast(x <= 2.0, x.dtype)
    return tf.identity(x), grad
'''


def _scheduled_project(tmp_path):
    """Two test files calling one function: the first at 0.5 and 1.0, the second at 0.5 again,
    then 3.0 (where the gradient is wrong) and 1.5. A serial run keeps 0.5, 1.0 and 3.0."""
    project = tmp_path / "scheduled"
    (project / "steplib").mkdir(parents=True)
    (project / "steplib" / "__init__.py").write_text(STEP)
    (project / "pytest.ini").write_text("[pytest]\n")
    call = ("import tensorflow as tf\nfrom steplib import step_through\n\n\ndef grad(x):\n"
            "    x = tf.constant(x)\n    with tf.GradientTape() as tape:\n        tape.watch(x)\n"
            "        y = step_through(x)\n    return tape.gradient(y, x)\n\n\n")
    (project / "tests").mkdir()
    (project / "tests" / "test_a.py").write_text(
        call + "def test_a():\n    grad(0.5)\n    grad(1.0)\n")
    (project / "tests" / "test_b.py").write_text(
        call + "def test_b():\n    grad(0.5)\n    grad(3.0)\n    grad(1.5)\n")
    return project


def test_serial_and_xdist_replay_the_same_points_under_the_same_labels(tmp_path):
    # Before, a worker's points were merged by concatenation and cut to K: under --dist loadfile
    # x=0.5 was replayed twice, the failing x=3.0 never, and the run passed.
    pytest.importorskip("xdist", reason="pytest-xdist is the test extra's")
    project = _scheduled_project(tmp_path)
    seen = {}
    for name, args in (("serial", ()), ("n2", ("-n", "2")),
                       ("loadfile", ("-n", "2", "--dist", "loadfile"))):
        proc = _run(project, tmp_path, *args, f"--harness-check-json={tmp_path / name}.json")
        assert proc.returncode == 1, proc.stdout[-3000:]
        results = json.loads((tmp_path / f"{name}.json").read_text())["results"]
        seen[name] = sorted((r["case"], r["point"], r["verdict"]) for r in results)
        summary = [line for line in proc.stdout.splitlines() if "points kept" in line]
        assert summary and "3 points kept" in summary[0] and "nothing dropped" in summary[0], \
            proc.stdout[-2000:]
    assert seen["serial"] == [("recorded.steplib.step_through", "x=0.5", "pass"),
                              ("recorded.steplib.step_through", "x=1.0", "pass"),
                              ("recorded.steplib.step_through", "x=3.0", "fail")]
    assert seen["n2"] == seen["serial"] and seen["loadfile"] == seen["serial"]


def _children(pid: int) -> list:
    """(pid, command line) of the processes whose parent is `pid` (Linux's /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid:
            found.append((int(entry), command))
    return found


def _checking(project, tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2", CI="1")
    env.pop(store.ENV_SESSION, None)
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             *helpers.RECORD_PLUGIN, "tests", "--harness-check",
                             f"--junitxml={tmp_path / 'j.xml'}", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=project, env=env)


SLEEPY = """import time

import tensorflow as tf


@tf.custom_gradient
def sleepy(x):
    time.sleep(1.0)  # each call a second: the replay of its three points takes minutes
    def grad(dy):
        return dy
    return tf.identity(x), grad


def test_sleepy():
    for value in (1.0, 2.0, 3.0):
        x = tf.constant(value)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = sleepy(x)
        tape.gradient(y, x)
"""


def _slow_project(tmp_path):
    """The record project with a function whose every call takes a second: its replay runs long
    enough to be stopped while it runs."""
    project = tmp_path / "project"
    shutil.copytree(DATA / "record_project", project)
    (project / "tests" / "test_zz_sleepy.py").write_text(SLEEPY)
    return project


def _replay_of(proc, within=300.0):
    """The replay process the check started, once it has run a few seconds (its workers up)."""
    import time  # noqa: PLC0415

    deadline = time.monotonic() + within
    while time.monotonic() < deadline and proc.poll() is None:
        found = [pid for pid, command in _children(proc.pid) if " harness replay " in command]
        if found:
            time.sleep(6.0)
            return found[0]
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"no replay started: {proc.communicate()[0][-2000:]}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the replay")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_replay_stopped_by_a_signal_fails_the_session_saying_how_many_points_did_not_run(
    tmp_path, sig,
):
    # Before, a replay stopped so was taken as complete: "0 points ... replayed (none)", exit 0.
    project = _slow_project(tmp_path)
    proc = _checking(project, tmp_path)
    try:
        os.kill(_replay_of(proc), sig)
        out = proc.communicate(timeout=300)[0]
    finally:
        proc.kill()
    assert proc.returncode == 1, out[-3000:]
    [line] = [x for x in out.splitlines() if x.startswith("harness check: error:")]
    said = re.fullmatch(r"harness check: error: not every recorded point was checked: the replay "
                        r"was stopped \(SIGINT or SIGTERM\): (\d+) of the (\d+) points replayed, "
                        r"(\d+) did not run", line)
    assert said, line
    replayed, total, missing = map(int, said.groups())
    assert replayed + missing == total == 10 and missing >= 1
    assert "Traceback" not in out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the replay")
def test_ctrl_c_during_the_replay_stops_it_and_keeps_pytest_s_summary_and_junit(tmp_path):
    # Before: 74 lines of traceback through pytest_sessionfinish, no summary, no JUnit file.
    project = _slow_project(tmp_path)
    proc = _checking(project, tmp_path)
    try:
        _replay_of(proc)
        os.kill(proc.pid, signal.SIGINT)  # Ctrl-C, to pytest alone
        out = proc.communicate(timeout=300)[0]
    finally:
        proc.kill()
    assert proc.returncode == 2, out[-3000:]  # pytest's status for an interrupted session
    assert "Traceback" not in out, out[-3000:]
    assert "the replay was stopped by Ctrl-C: " in out
    # pytest's own last line, counting the tests and the points replayed before Ctrl-C.
    assert re.fullmatch(r"(\d+ failed, )?\d+ passed(, \d+ \w+)* in [\d.]+s( \(.*\))?",
                        out.strip().splitlines()[-1]), out[-1500:]
    junit = ET.parse(tmp_path / "j.xml").getroot()
    assert len([tc for tc in junit.iter("testcase") if tc.get("classname") != "harness"]) == 7


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find pytest")
def test_ctrl_c_during_the_tests_stops_them_without_starting_the_replay(tmp_path):
    import time  # noqa: PLC0415

    project = tmp_path / "project"
    shutil.copytree(DATA / "record_project", project)
    started = tmp_path / "started"
    (project / "tests" / "test_zz_slow.py").write_text(
        "import pathlib, time\n\n\ndef test_slow():\n"
        f"    pathlib.Path({str(started)!r}).write_text('x')\n    time.sleep(600)\n")
    proc = _checking(project, tmp_path)
    try:
        deadline = time.monotonic() + 300
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGINT)
        out = proc.communicate(timeout=120)[0]
    finally:
        proc.kill()
    assert proc.returncode == 2, out[-3000:]
    assert not [pid for pid, command in _children(proc.pid) if " harness replay " in command]
    assert ("harness check: error: not every recorded point was checked: nothing replayed: the "
            "tests were interrupted; run the tests to their end to check") in out, out[-2000:]
    assert "replayed in" not in out and "Traceback" not in out
    assert (tmp_path / "j.xml").is_file()


def test_under_v_and_x_the_replayed_points_read_as_pytest_s_own_tests(tmp_path):
    # Before: -v showed harness::recorded::mylib::ops::... (not the node id the summary and JUnit
    # show), and -x's line said "stopping after 2 failures" for the one that stopped it.
    proc, junit, _ = _checked(tmp_path, "-v", "-v", "-x")  # -q -v -v: pytest's -v
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:]
    lines = [line for line in out.splitlines() if line.startswith("harness::")]
    assert lines, out[-3000:]
    for line in lines:
        assert re.fullmatch(r"harness::recorded\.[\w.]+\[[^\]]*\] (PASSED|FAILED|SKIPPED|XFAIL"
                            r"|XPASS)\s+\[\s*\d+%\]", line), line
    failed = [line.split(" ")[0] for line in lines if " FAILED " in line]
    assert len(failed) == 1 and failed[0] in WRONG  # the first failure stops the session
    assert "stopping after 1 failures" in out
    assert "stopping after 2 failures" not in out
    assert failed[0] in {f"{tc.get('classname')}::{tc.get('name')}" for tc in junit.iter("testcase")
                         if tc.find("failure") is not None}


SCALED = '''
import tensorflow as tf


@tf.custom_gradient
def scaled_square(x):
    """Wrong: the gradient ignores dy."""
    def grad(dy):
        return 2.0 * x
    return x * x, grad
'''


def test_a_damaged_value_file_costs_the_point_that_used_it_and_no_other(tmp_path):
    # Before: truncating one .npy of a three-point recording made all three points SKIP ("replay
    # could not make it a case ... please report it"), renamed the case and its points, and lost
    # two real FAILs: exit 0.
    project = tmp_path / "damaged"
    (project / "tests").mkdir(parents=True)
    (project / "scaledlib.py").write_text(SCALED)
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "tests" / "test_scaled.py").write_text(
        "import tensorflow as tf\nfrom scaledlib import scaled_square\n\n\ndef test_three():\n"
        "    for v in (1.0, 2.0, 3.0):\n        x = tf.constant(v)\n"
        "        with tf.GradientTape() as tape:\n            tape.watch(x)\n"
        "            y = scaled_square(x)\n        tape.gradient(y, x)\n")
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop(store.ENV_SESSION, None)
    recorded = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               *helpers.RECORD_PLUGIN, "tests", f"--harness-record={tmp_path}/rec"],
                              capture_output=True, text=True, cwd=project, env=env, timeout=600)
    assert recorded.returncode == 0, recorded.stdout[-2000:]
    [session] = (tmp_path / "rec").iterdir()
    [function] = store.read(str(session))["functions"]
    damaged = function["points"][1]["args"][0]["array"]
    whole = (session / damaged).read_bytes()
    (session / damaged).write_bytes(whole[:len(whole) // 2])
    out = tmp_path / "r.json"
    proc = helpers.harness("replay", str(session), "--mode=all", f"--json_out={out}",
                           cwd=str(project), env=env, timeout=600)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    results = {(r["case"], r["point"]): r for r in json.loads(out.read_text())["results"]}
    # The function keeps its name and its two other points; the damaged one is skipped beside it.
    verdicts = {key: r["verdict"] for key, r in results.items()}
    assert verdicts == {("recorded.scaledlib.scaled_square", "x=1.0"): "fail",
                        ("recorded.scaledlib.scaled_square", "x=3.0"): "fail",
                        ("recorded.scaledlib.scaled_square_not_replayed", "x=damaged"): "skip"}, \
        verdicts
    assert (f"the recorded value of its argument x cannot be read: the recording's file "
            f"{damaged} is damaged (") in results[("recorded.scaledlib.scaled_square_not_replayed",
                                                  "x=damaged")]["reason"]
