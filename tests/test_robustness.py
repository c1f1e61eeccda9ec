"""One bad case never sinks the run: crashes, hangs, errors and leaked global state."""

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.helpers import DATA, REPO, harness

# Every test here runs the CLI on the unruly cases: one of them hangs until the timeout below.
pytestmark = pytest.mark.slow

UNRULY = str(DATA / "unruly_cases.py")
TIMEOUT = "25"  # far above a good case here (about a second), far below the hang


def _run(tmp_path, *args, name="r"):
    out = tmp_path / f"{name}.json"
    proc = harness(f"--case_file={UNRULY}", f"--timeout={TIMEOUT}", f"--json_out={out}", *args,
                   timeout=600)
    return proc, json.loads(out.read_text()), out


@pytest.fixture(scope="module")
def two_jobs(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("two"), "--jobs=2")


def _verdicts(report):
    return {r["case"]: r["verdict"] for r in report["results"]}


def test_every_bad_case_gets_its_verdict_and_good_ones_pass(two_jobs):
    proc, report, _ = two_jobs
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert _verdicts(report) == {
        "unruly.good_first": "pass",
        "unruly.aborts": "crash",
        "unruly.good_second": "pass",
        "unruly.hangs": "timeout",
        "unruly.raises": "fail",
        "unruly.disables_eager": "error",
        "unruly.leaks_policy": "error",
        "unruly.good_last": "pass",
    }


def test_crash_names_the_signal_and_the_mode(two_jobs):
    _, report, _ = two_jobs
    crash = next(r for r in report["results"] if r["case"] == "unruly.aborts")
    assert crash["reason"] == "graph mode: killed by SIGABRT"
    assert crash["modes"]["graph"]["status"] == "crash"


def test_timeout_names_the_limit(two_jobs):
    _, report, _ = two_jobs
    hang = next(r for r in report["results"] if r["case"] == "unruly.hangs")
    assert "ran past the 25 s timeout" in hang["reason"]
    assert hang["modes"]["eager"]["status"] == "timeout"


def test_leaked_state_is_named(two_jobs):
    _, report, _ = two_jobs
    reasons = {r["case"]: r["reason"] for r in report["results"]}
    assert "eager execution: True -> False" in reasons["unruly.disables_eager"]
    assert (
        "tf_keras mixed precision policy: not loaded -> mixed_float16" in reasons[
            "unruly.leaks_policy"
        ]
    )


def test_jsonl_holds_every_finished_result(two_jobs):
    _, report, out = two_jobs
    # The JSON Lines file sits next to the JSON report; its order is arrival order.
    lines = [json.loads(l) for l in out.with_suffix(".jsonl").read_text().splitlines()]
    assert sorted(l["case"] for l in lines) == sorted(r["case"] for r in report["results"])


def test_one_job_gives_the_same_report_as_two(two_jobs, tmp_path):
    _, two, _ = two_jobs
    _, one, _ = _run(tmp_path, "--jobs=1")
    for report in (one, two):
        for r in report["results"]:
            # Where a crash or timeout report cuts a worker's output log is not part of the result.
            r.pop("details")
            r.pop("seconds")  # each run times itself
            for mode in r["modes"].values():
                mode.pop("error_message", None)
    assert one["results"] == two["results"]


def test_sigterm_writes_reports_from_what_finished_and_exits_130(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "harness", f"--case_file={UNRULY}", "--jobs=1",
                             "--cases=unruly.good_first,unruly.hangs,unruly.good_last",
                             f"--json_out={out}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    jsonl = tmp_path / "r.jsonl"
    deadline = time.monotonic() + 300
    while (time.monotonic() < deadline
           and not (jsonl.exists() and jsonl.read_text().count("\n") >= 1)):
        time.sleep(0.5)
    time.sleep(2)  # the hanging case is now running
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stdout + stderr
    report = json.loads(out.read_text())
    assert [r["case"] for r in report["results"]] == ["unruly.good_first"]
    assert "2 case points did not run" in stderr
    assert not list(tmp_path.glob(".r.json.*"))  # no temporary file left behind
