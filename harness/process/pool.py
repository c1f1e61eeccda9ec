"""Running jobs: in long-lived worker processes (the default), or in this process.

The supervisor never imports TensorFlow: workers load the cases and send back
a catalogue, the CLI selects from it, and each job is one case. A worker that
dies makes its case `crash`; one that runs past the timeout is killed and its
case is `timeout`; either way a fresh worker takes over and the run goes on.

The pool carries what each job's worker measured back, or how the worker
ended, and judges none of it: the main process's run judges (harness.judge.judging),
so this transport imports no verdict rule.

Each job is timed on the wall clock, from when it is assigned (a worker takes
it, or InProcess starts it) to when its measurement arrives, or the crash or
timeout is seen.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import tempfile
import time
from typing import Callable, Iterator, Optional, Sequence

from harness import lifetime, loader
from harness.lifetime import resident_mib
from harness.process import head_start
from harness.process import worker
from harness.jobs import SETUP, Carried, Death, Job
from harness.records import CaseInfo, Status

__all__ = ["RECYCLE_MIB", "InProcess", "PoolError", "WorkerPool", "resident_mib"]

# The last lines of a dead worker's output kept with its crash verdict.
_TAIL_LINES = 12

# A worker grown by more than this over its size once loaded is replaced by a fresh one after its
# job: memory a heavy job made the process take (an eager tape over a 10,000-element while loop
# holds 8 GB) is rarely given back to the system, and would stay with the worker through every
# later job. Measured from the loaded size (about 700 MiB with TensorFlow, Keras and the cases on
# a CPU; more where a GPU's runtime is loaded), so that a worker large from the start is not
# replaced after every job.
RECYCLE_MIB = 1536

# How often a busy worker's size is read when a mode's memory is limited: one small read of /proc.
_MEMORY_POLL_S = 0.1

OnStart = Callable[[Job], None]

# The one clock for timeouts and job times; tests replace it.
_clock = time.monotonic


class PoolError(Exception):
    """Workers could not be started; the message says what happened."""


def _tail(path: str, lines: int = _TAIL_LINES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _how(exitcode: Optional[int]) -> str:
    if exitcode is None:
        return "died"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with status {exitcode}"


class _Worker:
    def __init__(self, process, conn, output: str, origins: worker.Origins):
        self.process, self.conn, self.output = process, conn, output
        with contextlib.suppress(OSError):  # already dead (no TensorFlow, say): _receive reports it
            self.conn.send(("load", origins))  # it reads this once TensorFlow is imported
        self.ready = False
        self.index: Optional[int] = None
        self.job: Optional[Job] = None
        self.started = 0.0
        self.mode = "load"
        self.scripts: dict = {}
        self.stopping = False
        self.loaded_mib = 0.0  # resident once TensorFlow and the cases are loaded
        self.mode_mib = 0.0  # anonymous resident memory as its current mode started

    @classmethod
    def spawn(cls, context, origins: worker.Origins, folder: str, number: int) -> "_Worker":
        output = os.path.join(folder, f"worker-{number}.log")
        conn, child = context.Pipe()
        process = context.Process(target=head_start.run_worker, args=(child, output, os.getpid()),
                                  name=f"harness-worker-{number}", daemon=True)
        process.start()
        child.close()  # so a dead worker shows as end-of-file here
        return cls(process, conn, output, origins)

    def assign(self, index: int, job: Job) -> None:
        self.index, self.job, self.started, self.mode = index, job, _clock(), SETUP
        self.scripts = {}
        self.conn.send(("run", job))

    def release(self) -> None:
        self.index, self.job = None, None

    def kill(self) -> None:
        """Kills the worker and everything its case started (its process group)."""
        self.end_group()
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()

    def end_group(self) -> None:
        lifetime.end_group(self.process.pid)

    def exited(self, timeout: float) -> None:
        """Waits up to `timeout` s for the worker to end, without reaping it (so its id stays its
        own)."""
        lifetime.wait_unreaped(self.process.pid, timeout)

    def ask_to_stop(self) -> None:
        with contextlib.suppress(OSError):  # already dead: kill() tidies up
            self.conn.send(("stop",))
        self.stopping = True

    def stop(self) -> None:
        if not self.stopping:
            self.ask_to_stop()
        self.process.join(5)
        self.kill()


class WorkerPool:
    """Worker processes that import TensorFlow once and take one case at a time.

    One starts at once, to load the cases, unless one was started before the
    command line was read (harness.process.head_start): the pool takes that one over.
    `at_once` workers in all start now, each importing TensorFlow on a core of its own while the
    first loads the cases; `run` starts the others it needs, and ends those it has more than
    jobs for.
    """

    def __init__(self, timeout: float, origins: worker.Origins, at_once: int = 1,
                 memory_mib: float = 0.0):
        self._context = multiprocessing.get_context("spawn")
        self._origins = origins
        self._memory_mib = memory_mib  # what one mode may grow its worker by; 0: no limit
        self._spent: dict[int, float] = {}  # a job run again: the seconds its earlier runs took
        lifetime.end_at_exit()  # a worker this pool loses track of, and the resource tracker
        early = head_start.take()
        self._folder = early.folder if early else tempfile.mkdtemp(prefix="harness-workers-")
        self._timeout = None if math.isinf(timeout) else timeout  # inf: a case may run for ever
        self._count = 0
        self._workers: list[_Worker] = []
        self._catalogue: Optional[tuple[dict, list[CaseInfo]]] = None
        self._jobs: Sequence[Job] = ()
        self._pending: collections.deque[int] = collections.deque()
        self._finished: list[Carried] = []
        if early:
            self._count = 1
            self._workers.append(_Worker(early.process, early.conn, early.output, origins))
        while len(self._workers) < max(1, at_once):
            self._spawn()
        self.at_once = len(self._workers)  # started before the cases were known

    def _spawn(self) -> _Worker:
        self._count += 1
        with lifetime.held_signals():  # a Ctrl-C's KeyboardInterrupt comes once kill() can find it
            w = _Worker.spawn(self._context, self._origins, self._folder, self._count)
            self._workers.append(w)
        return w

    def _retire(self, w: _Worker) -> None:
        w.kill()
        self._workers.remove(w)

    def start(self) -> tuple[dict, list[CaseInfo]]:
        """Waits for the first worker to load the cases.

        Returns:
          The environment and the catalogue of every loaded case.
        Raises:
          loader.LoadError: the cases cannot be loaded (a usage error).
          PoolError: no worker could start.
        """
        while self._catalogue is None:
            self._receive(None)
        return self._catalogue

    def run(self, jobs: Sequence[Job], on_start: OnStart, size: int) -> Iterator[Carried]:
        """Runs `jobs` on `size` workers (at most one per job); yields each job as it finishes."""
        size = max(1, min(size, len(jobs)))
        for w in self._workers[size:]:
            self._retire(w)
        while len(self._workers) < size:
            self._spawn()
        self._pending = collections.deque(range(len(jobs)))
        self._jobs = list(jobs)  # a job run again without a mode takes its place
        self._spent = {}
        while self._pending or any(w.job for w in self._workers):
            self._dispatch(on_start)
            self._receive(self._wait())
            self._expire()
            self._limit_memory()
            # A worker that finished takes its next job before the caller judges what it sent,
            # so it never waits for that.
            self._dispatch(on_start)
            while self._finished:
                yield self._finished.pop(0)

    def _wait(self) -> Optional[float]:
        """Seconds until the first running case times out, or until the next look at the busy
        workers' sizes when a mode's memory is limited; None: wait for a message."""
        busy = [w for w in self._workers if w.job]
        waits = ([w.started + self._timeout - _clock() for w in busy]
                 if self._timeout is not None else [])
        if busy and self._memory_mib > 0:
            waits.append(_MEMORY_POLL_S)
        return max(0.0, min(waits)) if waits else None

    def _dispatch(self, on_start: OnStart) -> None:
        for w in self._workers:
            if w.ready and w.job is None and self._pending:
                index = self._pending.popleft()
                w.assign(index, self._jobs[index])
                # Its timeout and its time cover every run of it, not the wait for a fresh worker.
                w.started -= self._spent.get(index, 0.0)
                on_start(self._jobs[index])

    def _receive(self, timeout: Optional[float]) -> None:
        conns = {w.conn: w for w in self._workers}
        for conn in multiprocessing.connection.wait(list(conns), timeout):
            w = conns[conn]
            try:
                message = conn.recv()
            except (EOFError, OSError):
                self._died(w)
                continue
            kind = message[0]
            if kind == "ready":
                w.ready, w.mode = True, "idle"
                w.loaded_mib = resident_mib(w.process.pid) or 0.0
                if self._catalogue is None:
                    self._catalogue = (message[1], message[2])
            elif kind == "load_error":
                self.kill()
                raise loader.LoadError(message[1])
            elif kind == "mode":
                # The worker's own size as the mode started: one read here could come after the
                # mode had grown, while this process judged another job.
                w.mode, started_mib = message[1]
                w.mode_mib = (started_mib if started_mib is not None
                              else resident_mib(w.process.pid, anonymous=True) or 0.0)
            elif kind == "scripts":
                w.scripts = message[1]
            elif kind == "done":
                self._finished.append(Carried(w.index, w.job, _clock() - w.started, w.scripts,
                                              measured=message[1], changed=message[2],
                                              lost=message[3]))
                w.release()
                if message[2]:  # it changed global state and has exited
                    self._replace(w)
                elif (resident_mib(w.process.pid) or 0.0) > w.loaded_mib + RECYCLE_MIB:
                    self._replace(w)  # its next job starts in a process of the usual size

    def _died(self, w: _Worker) -> None:
        seen = _clock()  # the job's time ends with its worker, not with the tidying up below
        w.exited(5)  # so its status says how it ended, not that end_group killed it
        w.end_group()  # what its case started must not outlive it
        w.process.join(5)
        how, output = _how(w.process.exitcode), _tail(w.output)
        if not w.ready:
            self.close()
            raise PoolError(f"a worker {how} while importing TensorFlow and the cases; its last "
                            f"output:\n{output}")
        if w.job is not None:
            self._finished.append(Carried(w.index, w.job, seen - w.started, w.scripts,
                                          death=Death(Status.CRASH, w.mode, how, output)))
        self._replace(w)

    def _expire(self) -> None:
        if self._timeout is None:
            return
        now = _clock()
        for w in list(self._workers):
            if w.job is not None and now - w.started >= self._timeout:
                how = f"ran past the {self._timeout:g} s timeout; its worker was killed"
                w.kill()
                self._finished.append(Carried(w.index, w.job, now - w.started, w.scripts,
                                              death=Death(Status.TIMEOUT, w.mode, how,
                                                          _tail(w.output))))
                self._replace(w)

    def _limit_memory(self) -> None:
        """Stops each worker whose current mode grew it past the budget. Its job runs again
        without that mode, which is reported skipped with what it took, so that the other modes
        still judge the point. What runs outside the modes (setting a case up, the oracles) has no
        budget."""
        if self._memory_mib <= 0:
            return
        for w in list(self._workers):
            if w.job is None or w.mode not in w.job.modes:
                continue
            grown = (resident_mib(w.process.pid, anonymous=True) or 0.0) - w.mode_mib
            if grown <= self._memory_mib:
                continue
            index, job = w.index, w.job
            where, again = (("here", "the point was") if len(job.points) == 1 else
                            (f"at {len(job.points)} points together", "they were"))
            why = (f"its worker grew by {grown:,.0f} MiB running it {where}, past the "
                   f"{self._memory_mib:,.0f} MiB a mode may add (--mode_memory_mib; 0: no limit), "
                   f"and was stopped; {again} run again without it")
            w.kill()
            self._jobs[index] = dataclasses.replace(job, stopped=job.stopped + ((w.mode, why),))
            self._spent[index] = _clock() - w.started  # this run's and any earlier one's
            self._pending.appendleft(index)
            self._replace(w)

    def _replace(self, w: _Worker) -> None:
        self._retire(w)
        if self._pending:
            self._spawn()

    def close(self) -> None:
        """Stops every worker (killing one that does not stop) and removes their files. All are
        asked first, so they end together."""
        for w in self._workers:
            w.ask_to_stop()
        for w in list(self._workers):
            w.stop()
        self._workers.clear()
        shutil.rmtree(self._folder, ignore_errors=True)

    def kill(self) -> None:
        """Kills every worker at once: for Ctrl-C and SIGTERM."""
        for w in list(self._workers):
            w.kill()
        self._workers.clear()
        shutil.rmtree(self._folder, ignore_errors=True)


class InProcess:
    """Runs jobs in this process, one after another: for debugging with pdb.

    No crash or timeout protection; a case that changes global state or
    leaves a thread running is still reported, but nothing is undone: the
    cases after it run under the changed state, beside that thread, and
    each of their results says so.
    """

    at_once = 1

    def __init__(self, origins: worker.Origins):
        self._loaded = worker.load(origins)

    def start(self) -> tuple[dict, list[CaseInfo]]:
        return self._loaded.environment, [loader.info(c) for c in self._loaded.cases.values()]

    def run(self, jobs: Sequence[Job], on_start: OnStart, size: int = 1) -> Iterator[Carried]:
        from harness.process import state  # noqa: PLC0415

        polluters: list[str] = []  # the cases whose changes this process still carries
        for index, job in enumerate(jobs):
            on_start(job)
            started = _clock()
            scripts = {}

            def notify(kind, payload, scripts=scripts):
                if kind == "scripts":
                    scripts.update(payload)

            measured, changed = worker.run_job(self._loaded, job, notify)
            if changed:  # blame only this case for it; what it changed stays for the cases after it
                self._loaded = dataclasses.replace(self._loaded, baseline=state.snapshot(),
                                                   threads=state.threads())
            carried = Carried(index, job, _clock() - started, scripts, measured=measured,
                              changed=changed, after=tuple(polluters))
            if changed:
                polluters.append(job.case_id)
            yield carried

    def close(self) -> None:
        pass

    kill = close
