"""A worker that a heavy job left large is replaced: what the pool reads of a process's memory."""

import dataclasses
import os

import pytest

from harness.process import pool

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"),
                                reason="resident memory is read from /proc, which only Linux has")


def test_resident_memory_grows_with_what_a_process_holds():
    before = pool.resident_mib(os.getpid())
    held = bytearray(300 * 2**20)
    held[::4096] = b"x" * len(held[::4096])  # touched, so resident
    after = pool.resident_mib(os.getpid())
    del held
    assert before > 0 and after - before >= 290, (before, after)


def test_anonymous_memory_grows_with_what_a_process_allocates_and_is_part_of_its_resident_size():
    before = pool.resident_mib(os.getpid(), anonymous=True)
    held = bytearray(300 * 2**20)
    held[::4096] = b"x" * len(held[::4096])
    after = pool.resident_mib(os.getpid(), anonymous=True)
    total = pool.resident_mib(os.getpid())
    del held
    assert after - before >= 290 and after <= total, (before, after, total)


def test_a_process_that_is_not_there_has_no_resident_memory():
    # Above Linux's largest pid_max (2**22): no process has it.
    assert pool.resident_mib(2**22 + 7) is None


# -- a mode that grows its worker past the budget --------------------------------------------------

class _Clock:
    now = 1000.0

    def __call__(self):
        return self.now


CLOCK = _Clock()

def _pool_running(monkeypatch, sizes, budget=1024.0, points=("a", "b"), started_mib=None):
    """A pool (tests.unit.test_report_time's stand-in) running one three-mode job, whose worker's
    resident size is read from `sizes` in turn; returns the pool, the worker and its pipe."""
    from tests.unit.test_report_time import fake_pool, job

    p, w, there = fake_pool(monkeypatch, CLOCK)
    p._memory_mib = budget
    sizes = iter(sizes)
    monkeypatch.setattr(pool, "resident_mib", lambda pid, anonymous=False: next(sizes))
    spawned = []
    monkeypatch.setattr(p, "_spawn", lambda: spawned.append(1))
    the_job = job(*points)
    p._jobs = [dataclasses.replace(the_job, modes=("eager", "function", "graph"))]
    w.assign(0, p._jobs[0])
    there.recv()
    # started_mib None: a worker that could not read its own size, which the pool then reads
    there.send(("mode", ("eager", started_mib)))
    p._receive(5)
    return p, w, spawned


def test_a_mode_grown_past_the_budget_is_stopped_and_its_job_runs_again_without_it(monkeypatch):
    p, w, spawned = _pool_running(monkeypatch, [710.0, 1800.0])
    p._limit_memory()  # 1800 - 710 = 1090 MiB over the mode's start: past 1024
    assert w not in p._workers and spawned == [1]  # stopped, and a fresh worker takes the job
    assert list(p._pending) == [0] and p._finished == []
    [(mode, why)] = p._jobs[0].stopped
    assert mode == "eager"
    assert why == ("its worker grew by 1,090 MiB running it at 2 points together, past the "
                   "1,024 MiB a mode may add (--mode_memory_mib; 0: no limit), and was stopped; "
                   "they were run again without it")


def test_a_stopped_mode_of_a_one_point_job_is_said_of_that_point(monkeypatch):
    p, w, spawned = _pool_running(monkeypatch, [710.0, 2000.0], points=("a",))
    p._limit_memory()
    [(_, why)] = p._jobs[0].stopped
    assert why == ("its worker grew by 1,290 MiB running it here, past the 1,024 MiB a mode may "
                   "add (--mode_memory_mib; 0: no limit), and was stopped; the point was run "
                   "again without it")


def test_a_mode_within_the_budget_runs_on(monkeypatch):
    p, w, spawned = _pool_running(monkeypatch, [710.0, 1700.0])
    p._limit_memory()  # 990 MiB: within
    assert w in p._workers and not spawned and not p._pending and p._jobs[0].stopped == ()


def test_no_budget_reads_no_size(monkeypatch):
    p, w, spawned = _pool_running(monkeypatch, [710.0], budget=0.0)
    p._limit_memory()  # a third read would end the sizes
    assert w in p._workers and not p._pending


def test_the_size_a_mode_starts_from_is_the_one_its_worker_read_as_it_started(monkeypatch):
    # Read by the pool only when the message arrives, the size could already hold what the mode
    # had allocated meanwhile (the pool busy judging another job), and the growth would be missed.
    p, w, spawned = _pool_running(monkeypatch, [1640.0], started_mib=600.0)
    p._limit_memory()  # 1640 - 600 = 1040: past 1024
    assert p._jobs[0].stopped
    late, _, _ = _pool_running(monkeypatch, [710.0, 1640.0])
    late._limit_memory()  # read when the message came, 710: 930, within
    assert not late._jobs[0].stopped


def test_a_job_run_again_keeps_the_time_it_took_not_the_wait_for_a_fresh_worker(monkeypatch):
    p, w, spawned = _pool_running(monkeypatch, [710.0, 1800.0])
    CLOCK.now += 25.0  # eager ran 25 s, then is stopped
    p._limit_memory()
    CLOCK.now += 8.0  # the fresh worker imports TensorFlow
    from tests.unit.test_report_time import fake_pool

    _, fresh, _ = fake_pool(monkeypatch, CLOCK)
    p._workers.append(fresh)
    p._dispatch(lambda job: None)
    assert fresh.job is p._jobs[0]
    assert CLOCK() - fresh.started == 25.0  # its timeout and time count the 25 s, not the 8 s
