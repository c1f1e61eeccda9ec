"""A job whose worker died names what was running: the mode, the oracles by name, or setting the
case up; never a mode that does not exist ("oracles mode").

Pure: no TensorFlow, no worker processes (the fake pool of test_report_time stands in).
"""

from harness.judge import judging
from harness.records import CaseInfo, Verdict
from tests.unit.test_report_time import FakeClock, fake_pool, job

KILLED = "ran past the 10 s timeout; its worker was killed"


def _timed_out(monkeypatch, step, infos=None):
    """The reason of a one-point job whose worker ran past the timeout in `step`, as the worker
    names it as it starts (None: before it said that any step started)."""
    clock = FakeClock()
    p, w, there = fake_pool(monkeypatch, clock, timeout=10.0)
    w.assign(0, job("x=1.0"))
    assert there.recv()[0] == "run"
    if step is not None:
        there.send(("mode", (step, None)))
        p._receive(5)
    clock.now += 11.0
    p._expire()
    [done] = [judging.judged(c, infos or {}, {"tensorflow": "2.17.1"}) for c in p._finished]
    [r] = done.results
    assert r.verdict is Verdict.TIMEOUT
    return r.reason


def test_a_timeout_of_the_oracles_names_the_oracles_the_job_runs_not_a_mode(monkeypatch):
    assert (_timed_out(monkeypatch, "oracles")
            == f"the oracles (numeric, linearity, upstream): {KILLED}")


def test_the_oracles_named_include_the_case_s_own(monkeypatch):
    info = CaseInfo(id="tests.case", description="", source="", order=1, points=("x=1.0",),
                    oracles=("reference",))
    reason = _timed_out(monkeypatch, "oracles", {"tests.case": info})
    assert reason == f"the oracles (numeric, linearity, upstream, reference): {KILLED}"


def test_a_timeout_before_the_first_mode_says_the_case_was_being_set_up(monkeypatch):
    assert _timed_out(monkeypatch, None) == f"setting the case up, before its first mode: {KILLED}"

