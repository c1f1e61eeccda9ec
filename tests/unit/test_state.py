"""What harness.process.state says a case changed, from plain snapshots and real threads (no
TensorFlow)."""

import threading
import time

import numpy as np

from harness.process import state
from harness.loader import info
from harness.records import Measured, OracleOutcome, Result, RunOptions, Verdict
from harness.judge.verdict import judge_measured
from tests.unit.outcomes import TF, make_case, ok

CHECK_NUMERICS = "check numerics (tf.debugging.enable_check_numerics)"


def test_changes_name_each_setting_with_its_old_and_new_value_and_unset_where_one_lacks_it():
    option = (
        "grappler option auto_mixed_precision_onednn_bfloat16"
        " (tf.config.optimizer.set_experimental_options)"
    )
    before = {CHECK_NUMERICS: "off", "eager execution": "True"}
    after = {CHECK_NUMERICS: "on", "eager execution": "True", option: "True"}
    assert state.changes(before, after) == [f"{CHECK_NUMERICS}: off -> on",
                                            f"{option}: unset -> True"]
    assert state.changes(after, before) == [f"{CHECK_NUMERICS}: on -> off",
                                            f"{option}: True -> unset"]
    assert state.changes(after, dict(after)) == []


def _wait_for(event):
    event.wait(10)


def _start(target, *args, name, daemon=True):
    thread = threading.Thread(target=target, args=args, name=name, daemon=daemon)
    thread.start()
    return thread


def test_a_thread_still_running_after_the_grace_is_named_with_its_target_and_where_it_is():
    before = state.threads()
    release = threading.Event()
    _start(_wait_for, release, name="waiter", daemon=False)
    try:
        [line] = state.left_running(before, grace=0.01)
    finally:
        release.set()
    line_of_wait_for = _wait_for.__code__.co_firstlineno
    assert (
        line
        == "left a thread running: waiter (target _wait_for, test_state.py line"
        f" {line_of_wait_for})"
    )


def test_a_daemon_thread_says_so_and_a_thread_subclass_is_named_by_its_run():
    class Worker(threading.Thread):
        def __init__(self, release):
            super().__init__(name="subclassed", daemon=True)
            self.release = release

        def run(self):
            self.release.wait(10)

    before = state.threads()
    release = threading.Event()
    Worker(release).start()
    try:
        [line] = state.left_running(before, grace=0.01)
    finally:
        release.set()
    assert line.startswith(
        "left a thread running: subclassed (daemon, target"
        " test_a_daemon_thread_says_so_and_a_thread_subclass_is_named_by_its_run"
        ".<locals>.Worker.run,"
        " test_state.py line "
    ), line


def test_a_thread_that_ends_within_the_grace_is_not_left_running():
    before = state.threads()
    _start(time.sleep, 0.05, name="brief")
    assert state.left_running(before, grace=2.0) == []


def test_threads_alive_at_the_baseline_are_not_the_cases():
    release = threading.Event()
    _start(_wait_for, release, name="before the case")
    try:
        assert state.left_running(state.threads(), grace=0.01) == []
    finally:
        release.set()


def test_threads_whose_target_is_tensorflows_own_are_not_the_cases():
    def service(event):
        event.wait(10)

    service.__module__ = (  # as a thread TensorFlow starts lazily
        "tensorflow.python.eager.some_service"
    )
    before = state.threads()
    release = threading.Event()
    _start(service, release, name="tensorflow's")
    try:
        assert state.left_running(before, grace=0.01) == []
    finally:
        release.set()


def test_the_grace_is_shared_by_every_new_thread_not_given_to_each():
    before = state.threads()
    release = threading.Event()
    for i in range(10):
        _start(_wait_for, release, name=f"waiter-{i}")
    try:
        started = time.monotonic()
        found = state.left_running(before, grace=0.2)
        took = time.monotonic() - started
    finally:
        release.set()
    assert len(found) == 10
    assert took < 1.0, took  # ten threads given 0.2 s each would take 2 s


def test_the_verdict_on_a_case_that_changed_state_names_each_change_and_says_what_to_do():
    case = info(make_case(points=[{"x": np.float32(1.0)}]))
    measured = [Measured(point="x=1.0", outcomes={"eager": ok("eager")},
                         oracles={"numeric": OracleOutcome(name="numeric", status="match")})]
    changed = [f"{CHECK_NUMERICS}: off -> on",
               "left a thread running: flipper (target flip, cases.py line 9)"]
    (result,) = judge_measured(case, measured, points=["x=1.0"], modes=("eager",),
                               options=RunOptions(upstream=False), tf_version=TF, reference="eager",
                               reruns={"x=1.0": "rerun"}, changed=changed)
    assert result.verdict.value == "error"
    assert result.reason == (
        "the case left process-wide state changed, which later cases in its process would inherit: "
        f"{CHECK_NUMERICS}: off -> on; left a thread running: flipper (target flip, cases.py line "
        "9); undo each change, and join each thread it starts, before it returns")
    assert result.details[0] == "verdict before the check: pass"


def test_in_process_the_cases_after_one_that_changed_state_say_their_verdict_may_not_be_their_own(
    monkeypatch,
):
    from harness.jobs import Job
    from harness.judge import judging
    from harness.process import pool
    from harness.process import worker

    def run_job(loaded, job, notify):
        return [], (["eager execution: True -> False"] if job.case_id == "t.polluter" else [])

    def judged(infos, environment, job, measured, changed, lost=""):
        return [Result(case=job.case_id, point="x=1.0", order=1, verdict=Verdict.PASS, reason="",
                       details=("d",), outcomes={}, rerun="rerun")]

    monkeypatch.setattr(worker, "run_job", run_job)
    monkeypatch.setattr(judging, "_judge", judged)
    monkeypatch.setattr(state, "snapshot", dict)  # the real one reads TensorFlow
    runner = pool.InProcess.__new__(pool.InProcess)
    runner._loaded, runner._infos = worker.Loaded({}, {"tensorflow": TF}, {}, frozenset()), {}
    jobs = [Job(case_id=c, order=1, points=("x=1.0",), modes=("eager",), options=RunOptions(),
                strict_xpass=False, reruns=(("x=1.0", "rerun"),))
            for c in ("t.first", "t.polluter", "t.next")]
    done = judging.each_judged(runner.run(jobs, lambda job: None), {}, {"tensorflow": TF})
    details = {d.results[0].case: d.results[0].details for d in done}
    assert details["t.first"] == details["t.polluter"] == ("d",)
    assert details["t.next"] == ("ran after t.polluter left process-wide state changed, which "
                                 "--inprocess cannot undo: run it without --inprocess for a "
                                 "verdict of its own", "d")
