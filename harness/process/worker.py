"""The worker side: load the cases once, then run one case per request.

A worker is a separate Python process (see harness/process/pool.py), so a case that
aborts, hangs or poisons TensorFlow's global state costs only that process.
This module imports TensorFlow only inside the functions that run cases, so
the supervising process can import it for `serve`'s name alone.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import shutil
import signal
import sys
import time
from typing import Callable, Optional

from harness import lifetime
from harness.checking import CheckSpec
from harness.jobs import Job
from harness.records import Measured

__all__ = ["Loaded", "Origins", "load", "run_job", "serve"]

# How a worker reports progress: notify("mode", (name, its anonymous resident MiB or None)) as each
# mode starts, and notify("scripts", {point: (ok, ScriptParts or why there are none)}) before
# running when reproductions are wanted.
Notify = Callable[[str, object], None]


@dataclasses.dataclass(frozen=True)
class Origins:
    """Where the cases come from: the library, case files, or one function to check."""

    library: bool
    case_files: tuple[str, ...] = ()
    check: Optional[CheckSpec] = None
    themes: Optional[tuple[str, ...]] = None  # library modules to load; None: all
    # A recorded folder to replay (harness.record): (its path, the order, --expect texts, the
    # reviewed expectations file or "").
    recorded: Optional[tuple[str, int, tuple[str, ...], str]] = None


@dataclasses.dataclass(frozen=True)
class Loaded:
    """What loading the cases gives: the case objects by id, and the environment."""

    cases: dict
    environment: dict
    baseline: dict  # the global-state snapshot every case must leave as it found
    threads: frozenset  # the threads alive once loaded: any other one a case leaves running is its


def prepare() -> None:
    """Imports TensorFlow and the code that runs cases: the part of loading that needs no origins,
    so a worker does it before it is told where the cases come from. Done once."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from harness.measure import execute  # noqa: F401, PLC0415 - TensorFlow comes in here
    from harness.measure import probe  # noqa: F401, PLC0415 - TensorFlow comes in here
    from harness.measure.modes import _devices  # noqa: PLC0415

    # Before any op runs, while TensorFlow's devices can still be configured: keras_mirrored's two
    # logical CPU devices. Every other mode places its ops on CPU:0 as before.
    _devices.split_cpu()
    probe.install()  # before any case module runs its @tf.custom_gradient; installs once


def load(origins: Origins) -> Loaded:
    """Imports the case library, case files or check target, and TensorFlow with them.

    Raises:
      loader.LoadError: a file is broken or a case is invalid.
    """
    prepare()
    from harness import checking, loader  # noqa: PLC0415
    from harness.measure import execute  # noqa: PLC0415
    from harness.process import state  # noqa: PLC0415
    from harness.case import CaseError  # noqa: PLC0415

    cases = ((loader.builtin_cases(origins.themes) if origins.library else [])
             + loader.case_file_cases(origins.case_files))
    if origins.check is not None:
        try:
            cases.append(checking.make_case(origins.check))
        except (CaseError, checking.InputError) as e:
            raise loader.LoadError(str(e)) from None
    if origins.recorded is not None:
        cases += _recorded_cases(*origins.recorded)
    loader.select([loader.info(c) for c in cases], None)  # refuses duplicate ids
    return Loaded(cases={c.id: c for c in cases}, environment=execute.environment(),
                  baseline=state.snapshot(), threads=state.threads())


def _recorded_cases(folder: str, order: int, expect: tuple[str, ...], reviewed: str = "") -> list:
    from harness import checking, loader  # noqa: PLC0415
    from harness.case import CaseError, Expectation  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    from harness.record import expectations as reviewed_file, replay, store  # noqa: PLC0415

    try:
        expectations = [Expectation(modes=m, outcome=o, reason=r)
                        for m, o, r in (checking.parse_expect(t) for t in expect)]
        entries = reviewed_file.load(Path(reviewed)) if reviewed else []

        def per_case(case_id: str, labels) -> list:
            return [Expectation(modes=m, outcome=o, reason=r, points=p, tf_versions=v, intended=i)
                    for m, o, r, p, v, i in reviewed_file.expectations_for(entries, case_id,
                                                                           labels)]

        return replay.cases(folder, order, expectations, per_case=per_case)
    except (store.RecordError, CaseError, checking.InputError,
            reviewed_file.ExpectationsError) as e:
        raise loader.LoadError(str(e)) from None


def run_job(loaded: Loaded, job: Job, notify: Notify) -> tuple[list[Measured], list[str]]:
    """Runs `job`; returns what it measured at each point, and the global settings the case changed
    and the threads it left running (harness.process.state).

    Nothing here judges: the main process does (verdict.judge_measured), so no
    code the case runs in this process can change a verdict.
    """
    from harness import loader  # noqa: PLC0415
    from harness.measure import execute  # noqa: PLC0415
    from harness.process import state  # noqa: PLC0415
    from harness.measure.modes import _reuse  # noqa: PLC0415

    if job.values is None:
        case = loader.narrow(loaded.cases[job.case_id], job.points)
        _reuse.close(_kept)
        keep = contextlib.nullcontext()
    else:
        case = loader.at_point(loaded.cases[job.case_id], job.values)
        if _kept.get("for") != (job.case_id, job.modes, job.options):
            _reuse.close(_kept)
            _kept["for"] = (job.case_id, job.modes, job.options)
        keep = _reuse.kept(_kept)
    if job.stopped:
        case = dataclasses.replace(case, skip_modes={**case.skip_modes, **dict(job.stopped)})
    if job.repro is not None:
        notify("scripts", job.repro(case, job))  # before running: a crash must not lose them
    with keep:
        measured = execute.measure(case, job.modes, job.options, lambda mode: notify(
            "mode", (mode, lifetime.resident_mib(os.getpid(), anonymous=True))))
    # Threads first: one that ends within the grace may change a setting on its way out.
    running = state.left_running(loaded.threads)
    return measured, state.changes(loaded.baseline, state.snapshot()) + running


# What the modes built for the last explore job's case (harness.measure.modes._reuse), for the next
# one.
_kept: dict = {}


def _end_strays() -> None:
    """Ends every process the case started (the SavedModel loader is the harness's own)."""
    saved_model = sys.modules.get("harness.measure.modes.saved_model")
    lifetime.end_strays(keep=saved_model.helper_pids() if saved_model else ())


def _redirect_output(path: str) -> None:
    # Case code and TensorFlow's C++ runtime write to fds 1 and 2; keep both in
    # a file the supervisor reads when this process dies.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _exit_now() -> None:
    """Ends this worker once everything is sent: the exit handlers run (the SavedModel modes'
    close their restorer there), what the cases started is ended, and the process exits without
    the interpreter's teardown of TensorFlow, which does nothing the run needs (it takes 1.6 s at
    the end of scripts/_handwritten_seeds.py)."""
    atexit._run_exitfuncs()
    lifetime.end_strays()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _closed(folder: str, parent: Optional[int]) -> None:
    """Exits once the supervisor's end of the pipe is closed. A supervisor that is done with a
    worker says stop or kills it first, so this is one that died: as the parent watcher would,
    this removes the workers' folder, once this process has been handed to a new parent (the
    pipe closes as the supervisor exits, a moment before that)."""
    deadline = time.monotonic() + 1.0
    while parent is not None and os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.01)
    if parent is not None and os.getppid() != parent:
        shutil.rmtree(folder, ignore_errors=True)
    _exit_now()


def _settle(output_path: str, parent: Optional[int]) -> str:
    """The worker's process set up before TensorFlow comes in; returns its folder of files."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides when to stop
    # What a case starts stays in this process's group, to be ended after the case; and when the
    # supervisor is gone (even killed with SIGKILL), this process ends what it started, removes the
    # supervisor's folder of worker files and exits, busy in a case or not.
    lifetime.lead_group()
    folder = os.path.dirname(output_path)
    # The output file is made before the watcher starts: a watcher that found the supervisor gone
    # while this thread was making it could remove the folder's files, then see the new one and
    # leave the folder behind. A folder already gone was removed by a supervisor that is done with
    # its workers, or by a worker that saw it gone: nothing is left to do. Any other error still
    # raises, for the supervisor to report.
    try:
        _redirect_output(output_path)
    except FileNotFoundError:
        os._exit(1)
    lifetime.exit_with_parent(lambda: (shutil.rmtree(folder, ignore_errors=True),
                                       lifetime.end_strays()), parent)
    return folder


def serve(conn, output_path: str, parent: Optional[int] = None) -> None:
    """The worker process's main loop.

    Imports TensorFlow first (`prepare`), then waits for ("load", Origins): a worker may be
    started before the command line is read (harness.process.head_start). Sends ("ready",
    environment, catalogue) or ("load_error", message); then for each ("run", job) sends
    what `run_job` notifies, then ("done", measured, changed, lost), `lost` saying why
    nothing measured could be sent ("" when it was). Exits on ("stop",), when the
    supervisor closes the pipe or is gone (`parent`: its process id), or after a case that
    changed global state or left a thread running.
    """
    folder = _settle(output_path, parent)
    prepare()
    from harness import loader  # noqa: PLC0415

    try:
        message = conn.recv()
    except EOFError:
        _closed(folder, parent)
    try:
        loaded = load(message[1])
    except loader.LoadError as e:
        conn.send(("load_error", str(e)))
        return
    # AutoGraph imports each function it converts from a file in the temporary folder, where
    # Python would write its bytecode into a __pycache__ that outlives the run. TensorFlow and the
    # cases are imported by now, their bytecode written where it was missing; a module first
    # imported later (tf_keras, by the step modes) is read from the bytecode its install compiled
    # (pip compiles; an install that did not is compiled again by each worker that imports it).
    sys.dont_write_bytecode = True
    conn.send(("ready", loaded.environment, [loader.info(c) for c in loaded.cases.values()]))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            _closed(folder, parent)
        if message[0] == "stop":
            _exit_now()
        job: Job = message[1]
        measured, changed = run_job(loaded, job, lambda kind, payload: conn.send((kind, payload)))
        try:
            conn.send(("done", [m.portable() for m in measured], changed, ""))
        # Pickling fails before anything is written: say so instead.
        except Exception as e:  # noqa: BLE001
            conn.send(("done", [], changed,
                       f"the worker could not send what it measured: {type(e).__name__}: {e}"))
        if changed:
            # At once, before the next message: a thread the case left (one that ends the process,
            # or turns run_functions_eagerly on, later) dies with this process instead of acting
            # during the next case, which a fresh worker takes.
            _exit_now()
        # After sending, while the supervisor judges, and before the next message is read: a
        # process the case started never sees the next case, and the scan of the process table
        # (a read of every process's status) is not part of the job's time.
        _end_strays()
