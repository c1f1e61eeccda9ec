"""Reports carry time: each job's wall time spread over its points, the run's start and total in the
JSON and JUnit reports, and a JUnit failure body that says each line once.

Pure: no TensorFlow, no worker processes, no real clock (a fake one stands in for pool's).
"""

import collections
import dataclasses
import datetime
import json
import multiprocessing
import socket
import xml.etree.ElementTree as ET

import pytest

from harness.judge import judging
from harness.jobs import Job
from harness.process import pool
from harness.process import worker
from harness.matrix import merge
from harness.records import Report, Result, RunOptions, Verdict
from harness.report import json_report, junit


class FakeClock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


def result(point="x=1.0", verdict=Verdict.PASS, reason="", details=(), seconds=0.0,
           case="tests.case"):
    return Result(case=case, point=point, order=1, verdict=verdict, reason=reason,
                  details=tuple(details), outcomes={},
                  rerun=f"python -m harness --cases {case} --point {point}", seconds=seconds)


def job(*points, case="tests.case"):
    return Job(case_id=case, order=1, points=tuple(points), modes=("eager",), options=RunOptions(),
               strict_xpass=False, reruns=tuple((p, f"rerun {p}") for p in points))


def judged(infos, environment, job_, measured, changed, lost=""):
    return [result(point=p, case=job_.case_id) for p in job_.points]


# -- pool: a job's wall time, spread over its points ---------------------------------------------


class FakeProcess:
    pid = -1  # never used: end_group is replaced
    exitcode = -9

    def is_alive(self):
        return False

    def join(self, timeout=None):
        pass

    def kill(self):
        pass


def fake_pool(monkeypatch, clock, timeout=None):
    """A WorkerPool with one ready worker on a real pipe and a fake process; returns it and the
    worker's end of the pipe."""
    monkeypatch.setattr(pool, "_clock", clock)
    monkeypatch.setattr(judging, "_judge", judged)
    here, there = multiprocessing.Pipe()
    w = pool._Worker.__new__(pool._Worker)
    w.conn, w.process, w.output = here, FakeProcess(), "/nonexistent/worker.log"
    w.ready, w.index, w.job, w.started, w.mode, w.scripts = True, None, None, 0.0, "idle", {}
    w.loaded_mib = w.mode_mib = 0.0
    w.end_group = lambda: None
    w.exited = lambda timeout: None  # a real one waits on the process id
    p = pool.WorkerPool.__new__(pool.WorkerPool)
    p._timeout, p._workers, p._finished, p._pending = timeout, [w], [], collections.deque()
    p._catalogue, p._infos, p._jobs, p._count = ({"tensorflow": "2.17.1"}, []), {}, (), 1
    p._memory_mib, p._spent = 0.0, {}
    return p, w, there


def finished(p):
    """What the pool carried back, judged as the run loop judges it."""
    return [judging.judged(c, {}, {"tensorflow": "2.17.1"}) for c in p._finished]


def test_a_two_point_job_that_took_4_s_gives_each_point_2_s(monkeypatch):
    clock = FakeClock()
    p, w, there = fake_pool(monkeypatch, clock)
    w.assign(0, job("x=1.0", "x=2.0"))
    assert there.recv()[0] == "run"
    clock.now += 4.0
    there.send(("done", [], [], ""))
    p._receive(5)
    [done] = finished(p)
    assert [(r.point, r.seconds) for r in done.results] == [("x=1.0", 2.0), ("x=2.0", 2.0)]


def test_a_crashed_job_counts_up_to_its_workers_death(monkeypatch):
    clock = FakeClock()
    p, w, there = fake_pool(monkeypatch, clock)
    w.assign(3, job("a", "b", "c"))
    clock.now += 3.0
    there.close()  # the worker died
    p._receive(5)
    [done] = finished(p)
    assert done.index == 3
    assert [r.verdict for r in done.results] == [Verdict.CRASH] * 3
    assert [r.seconds for r in done.results] == [1.0, 1.0, 1.0]


def test_a_timed_out_job_counts_up_to_the_kill(monkeypatch):
    clock = FakeClock()
    p, w, there = fake_pool(monkeypatch, clock, timeout=10.0)
    w.assign(0, job("a", "b"))
    clock.now += 9.0
    p._expire()
    assert finished(p) == []  # not yet
    clock.now += 3.0
    p._expire()
    [done] = finished(p)
    assert [r.verdict for r in done.results] == [Verdict.TIMEOUT] * 2
    assert [r.seconds for r in done.results] == [6.0, 6.0]


def test_in_process_times_each_job_from_its_start_to_its_verdicts(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(pool, "_clock", clock)
    monkeypatch.setattr(judging, "_judge", judged)
    took = {"one": 5.0, "two": 1.5}

    def run_job(loaded, job_, notify):
        clock.now += took[job_.case_id]
        return [], []

    monkeypatch.setattr(worker, "run_job", run_job)
    runner = pool.InProcess.__new__(pool.InProcess)
    runner._loaded, runner._infos = worker.Loaded({}, {"tensorflow": "2.17.1"}, {}, frozenset()), {}
    clock_at_start = []
    carried = runner.run([job("a", "b", case="one"), job("c", case="two")],
                         lambda j: clock_at_start.append(clock.now))
    done = list(judging.each_judged(carried, {}, {"tensorflow": "2.17.1"}))
    assert [[r.seconds for r in d.results] for d in done] == [[2.5, 2.5], [1.5]]
    assert clock_at_start == [1000.0, 1005.0]


def test_timed_spreads_evenly_and_an_empty_job_is_fine():
    assert [r.seconds
            for r in judging._timed([result("a"), result("b"), result("c"), result("d")],
                                    1.0)] == [0.25] * 4
    assert judging._timed([], 3.0) == []
    # a clock never runs backwards here
    assert [r.seconds for r in judging._timed([result("a")], -0.5)] == [0.0]


# -- JSON --------------------------------------------------------------------------------------

STARTED = datetime.datetime(2025, 1, 31, 12, 30, 15, 250000,
                            tzinfo=datetime.timezone.utc).timestamp()


def timed_report(*results, seconds=12.3456):
    return Report(environment={"tensorflow": "2.17.1"}, modes=("eager",), results=tuple(results),
                  started=STARTED, seconds=seconds)


def test_json_has_the_runs_start_and_total_and_each_results_seconds():
    data = json.loads(json_report.render(timed_report(result("a", seconds=2.0),
                                                      result("b", seconds=1 / 3))))
    assert data["schema"] == "harness.report/2"
    started = datetime.datetime.fromisoformat(data["started"])
    assert started == datetime.datetime(2025, 1, 31, 12, 30, 15, 250000,
                                        tzinfo=datetime.timezone.utc)
    assert started.utcoffset() == datetime.timedelta(0)
    assert data["seconds"] == 12.346
    assert [r["seconds"] for r in data["results"]] == [2.0, 0.333]


def test_json_of_a_report_without_times_says_so():
    data = json.loads(json_report.render(Report(environment={}, modes=(), results=(result(),))))
    assert (
        data["started"] is None and data["seconds"] == 0.0 and data["results"][0]["seconds"] == 0.0
    )


def test_the_jsonl_line_carries_the_results_seconds():
    assert json_report.result_dict(result(seconds=0.12345))["seconds"] == 0.123


def test_merge_loads_a_report_with_times_and_an_old_one_without(tmp_path):
    new = json_report.to_dict(timed_report(result("a", seconds=2.0)))
    old = json.loads(json.dumps(new))
    del old["started"], old["seconds"], old["results"][0]["seconds"]
    for name, data in (("new.json", new), ("old.json", old)):
        (tmp_path / name).write_text(json.dumps(data))
        assert merge.load_report(str(tmp_path / name))["results"][0]["case"] == "tests.case"
    matrix = merge.merge({"new.json": merge.load_report(str(tmp_path / "new.json"))})
    assert matrix.versions == ("2.17.1",)


# -- JUnit -------------------------------------------------------------------------------------


def parse(report):
    root = ET.fromstring(junit.render(report).encode("utf-8"))
    [suite] = list(root)
    return root, suite


def test_junit_testcase_time_is_the_results_seconds():
    _, suite = parse(timed_report(result("a", seconds=2.0), result("b", seconds=0.1234)))
    assert [float(c.get("time")) for c in suite.findall("testcase")] == [2.0, 0.123]


def test_junit_suite_has_the_runs_time_timestamp_and_hostname():
    root, suite = parse(timed_report(result("a", seconds=2.0), seconds=65.4321))
    assert float(suite.get("time")) == 65.432 and float(root.get("time")) == 65.432
    stamp = datetime.datetime.fromisoformat(suite.get("timestamp"))
    assert stamp.tzinfo is None  # junit-10.xsd's timestamp has no offset; it is UTC
    assert stamp == datetime.datetime(2025, 1, 31, 12, 30, 15)
    assert suite.get("hostname") == socket.gethostname() and suite.get("hostname")


def test_junit_without_a_start_has_no_timestamp():
    _, suite = parse(Report(environment={}, modes=(), results=(result(),)))
    assert suite.get("timestamp") is None and suite.get("time") == "0.000"


REASON = "function vs eager: order 1 differs, worst at (0,)"


@pytest.mark.parametrize("verdict,tag", [(Verdict.FAIL, "failure"), (Verdict.CRASH, "error"),
                                         (Verdict.XFAIL, "skipped"), (Verdict.XPASS, "system-out")])
def test_a_junit_body_does_not_repeat_a_line(verdict, tag):
    details = [REASON, "ladder: eager = graph | function", "numeric: matches",
               "ladder: eager = graph | function", "numeric: matches"]
    _, suite = parse(timed_report(result(verdict=verdict, reason=REASON, details=details)))
    [element] = suite.findall(f"testcase/{tag}")
    lines = element.text.splitlines()
    assert len(lines) == len(set(lines)), lines
    assert lines[-1] == "rerun: python -m harness --cases tests.case --point x=1.0"
    if tag == "system-out":  # no message attribute: the body says the reason, once
        assert lines[0] == f"xpass: {REASON}" and REASON not in lines
        lines = lines[1:]
    else:
        assert element.get("message") == f"{verdict.value}: {REASON}"
        assert REASON not in element.text
    assert lines == ["ladder: eager = graph | function", "numeric: matches",
                     "rerun: python -m harness --cases tests.case --point x=1.0"]


def test_a_failure_without_details_has_just_the_rerun_line():
    _, suite = parse(timed_report(result(verdict=Verdict.FAIL, reason="values changed")))
    assert (
        suite.find("testcase/failure").text
        == "rerun: python -m harness --cases tests.case --point x=1.0"
    )


def test_the_time_by_mode_line_sums_each_mode_over_the_points_with_its_share():
    from harness.records import ModeOutcome, Result, Status, Verdict
    from harness.report import text

    def result(point, eager, graph):
        outcomes = {"eager": ModeOutcome(mode="eager", status=Status.OK, seconds=eager),
                    "graph": ModeOutcome(mode="graph", status=Status.OK, seconds=graph)}
        return Result(case="c", point=point, order=1, verdict=Verdict.PASS, reason="", details=(),
                      outcomes=outcomes, rerun="")

    line = text.time_by_mode([result("x=1", 1.0, 0.5), result("x=2", 2.0, 0.5)], 10.0)
    assert line == ("time in each mode, summed over the workers: eager 3.0 s (75%), graph 1.0 s "
                    "(25%); the modes 4.0 s of the run's 10.0 s")
    assert text.time_by_mode([result("x=1", 0.0, 0.0)], 10.0) == ""  # nothing timed: nothing said


def test_a_job_that_dies_after_a_mode_was_stopped_still_says_that_mode_was_stopped(monkeypatch):
    clock = FakeClock()
    p, w, there = fake_pool(monkeypatch, clock, timeout=10.0)
    stopped = dataclasses.replace(job("a"), stopped=(("eager", "its worker grew by 2,100 MiB"),))
    w.assign(0, stopped)
    clock.now += 11.0
    p._expire()
    [done] = [judging.judged(c, {}, {"tensorflow": "2.17.1"}) for c in p._finished]
    [r] = done.results
    assert r.verdict is Verdict.TIMEOUT
    assert r.details[:2] == ("eager skipped: its worker grew by 2,100 MiB",
                             "the timeout counts the time of the run that was stopped")
