"""The first worker, started before the command line is read.

A run's fixed cost is a second Python process that imports TensorFlow, seconds of work, while
this process imports NumPy and absl, parses the flags and builds its settings, a few tenths of a
second. Started first, the worker imports TensorFlow on another core while this process does
the rest, instead of after it; the worker pool (harness.process.pool) takes it over as its first
worker and sends it where the cases come from, as it does to every worker it starts.

`start` runs before the flags are parsed, so it goes by the words of the command line alone: it
starts a worker unless help is asked for, the word merge, matrix or bisect (the commands that
run no case here) is given, or --inprocess is. A guess that turns out wrong (a usage error, a
--flagfile that says --inprocess) costs the start of a process that runs no case (a usage error
took about 0.2 s longer on two cores): it is ended (`discard`) when this process exits, or as
soon as the run knows it needs none. A worker that cannot be started here is started later by the
pool, as without a head start. Plain standard library: no NumPy, no absl, no TensorFlow.

Until the worker is taken, SIGTERM, which would otherwise end this process at once and leave the
worker to find its parent gone, ends the worker and reaps it first, then ends this process by
SIGTERM as before. A run installs its own handlers before it takes the worker.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import multiprocessing
import os
import shutil
import signal
import tempfile
import threading
from typing import Optional, Sequence

from harness import lifetime

__all__ = ["Started", "discard", "run_worker", "start", "take", "wanted"]

# Arguments after which no worker is needed: help (printed before any flag is parsed), the
# commands that run no case in this process's workers (merge reads reports; matrix and bisect run
# the cases in other environments), and running the cases in this process. absl takes a flag
# after one dash as after two.
_SHORT_HELP = ("-h", "-?")
_NO_WORKER_FLAGS = ("help", "inprocess")  # and what begins so: --helpfull, --inprocess=true
_NO_WORKER_COMMANDS = ("merge", "matrix", "bisect")


@dataclasses.dataclass(frozen=True)
class Started:
    """A worker process started ahead of the pool: its pipe, its folder and its output file."""

    process: multiprocessing.process.BaseProcess
    conn: object  # multiprocessing.connection.Connection
    folder: str
    output: str


_started: Optional[Started] = None


def wanted(args: Sequence[str]) -> bool:
    """Whether the command line `args` (without the program) looks like one that runs cases in
    worker processes: a guess from its words alone (see the module's docstring)."""
    for arg in args:
        if arg in _SHORT_HELP or arg in _NO_WORKER_COMMANDS:
            return False
        if arg.startswith("-") and arg.lstrip("-").startswith(_NO_WORKER_FLAGS):
            return False
    return True


def start(args: Sequence[str]) -> None:
    """Starts the first worker when `args` will need one; `take` hands it over. Should that fail
    (no temporary folder, no more processes), there is none to take, and nothing is left behind."""
    global _started
    # Without TensorFlow no worker could start: the run says so (harness.cli.settings).
    if _started is not None or not wanted(args) or importlib.util.find_spec("tensorflow") is None:
        return
    # Before the worker exists, so that however this process ends from here on (at its end, by an
    # exception such as Ctrl-C's, or by SIGTERM; SIGKILL aside), the worker and multiprocessing's
    # resource tracker are reaped before it exits.
    lifetime.end_at_exit()
    _catch_sigterm()
    folder = None
    try:
        context = multiprocessing.get_context("spawn")
        folder = tempfile.mkdtemp(prefix="harness-workers-")
        output = os.path.join(folder, "worker-1.log")
        conn, child = context.Pipe()
        process = context.Process(target=run_worker, args=(child, output, os.getpid()),
                                  name="harness-worker-1", daemon=True)
        with lifetime.held_signals():  # a Ctrl-C or SIGTERM comes once discard can find the worker
            process.start()
            _started = Started(process=process, conn=conn, folder=folder, output=output)
            atexit.register(discard)
    except OSError:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
        _release_sigterm()
        return
    child.close()  # so a dead worker shows as end-of-file here


def take() -> Optional[Started]:
    """The worker `start` started, now the caller's to run and to end; None when there is none."""
    global _started
    started, _started = _started, None
    _release_sigterm()
    return started


def discard() -> None:
    """Ends the worker started ahead, if nobody took it, and removes its folder."""
    started = take()
    if started is None:
        return
    lifetime.end_group(started.process.pid)  # it leads its own group, as every worker does
    if started.process.is_alive():
        started.process.kill()
    started.process.join(5)
    started.conn.close()
    shutil.rmtree(started.folder, ignore_errors=True)


def _terminated(signum, frame) -> None:
    """SIGTERM while the worker started ahead is still this module's: ends it (and what else
    this process started), then this process, by the signal's default action as before."""
    discard()
    lifetime.end_children()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.raise_signal(signal.SIGTERM)


def _catch_sigterm() -> None:
    """Installs `_terminated` where SIGTERM has its default action (never over a handler of the
    caller's), from the main thread, where alone Python lets a handler be installed."""
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL):
        signal.signal(signal.SIGTERM, _terminated)


def _release_sigterm() -> None:
    """Puts SIGTERM's default action back if `_terminated` is still its handler."""
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is _terminated):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_worker(conn, output: str, parent: int) -> None:
    """What every worker process runs, started ahead or by the pool: harness.process.worker.serve.

    Ctrl-C reaches the whole foreground group, and the supervisor decides when a worker stops;
    so Ctrl-C is ignored from the first moment, before harness.process.worker (and NumPy with it) is
    even imported, not only from serve's first line. The worker was started with SIGINT and
    SIGTERM held (lifetime.held_signals): a Ctrl-C held for it is let go only once ignored.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lifetime.let_signals_go()  # held while this process was started: a SIGTERM now ends it
    from harness.process import worker  # noqa: PLC0415

    worker.serve(conn, output, parent)
