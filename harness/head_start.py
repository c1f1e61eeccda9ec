"""The first worker, started before the command line is read.

A run's fixed cost is a second Python process that imports TensorFlow, seconds of work, while
this process imports NumPy and absl, parses the flags and builds its settings, a few tenths of a
second. Started first, the worker imports TensorFlow on another core while this process does
the rest, instead of after it; the worker pool (harness.pool) takes it over as its first worker
and sends it where the cases come from, as it does to every worker it starts.

`start` runs before the flags are parsed, so it goes by the words of the command line alone: it
starts a worker unless help is asked for, the command is merge, or --inprocess is given. A guess
that turns out wrong (a usage error, a --flagfile that says --inprocess) costs only that worker's
CPU time: it runs no case, and it is ended (`discard`) when this process exits, or as soon as
the run knows it needs none. Plain standard library: no NumPy, no absl, no TensorFlow.
"""

from __future__ import annotations

import atexit
import dataclasses
import multiprocessing
import os
import shutil
import tempfile
from typing import Optional, Sequence

from harness import lifetime

__all__ = ["Started", "discard", "start", "take", "wanted"]

# Arguments after which no worker is needed: help (printed before any flag is parsed), the one
# command that reads reports only, and running the cases in this process.
_HELP = ("-h", "-?", "--help", "--helpshort", "--helpfull", "--helpxml")
_NO_WORKER = ("merge",)


@dataclasses.dataclass(frozen=True)
class Started:
    """A worker process started ahead of the pool: its pipe, its folder and its output file."""

    process: multiprocessing.process.BaseProcess
    conn: object  # multiprocessing.connection.Connection
    folder: str
    output: str


_started: Optional[Started] = None


def wanted(args: Sequence[str]) -> bool:
    """Whether the command line `args` (without the program) will run cases in worker processes."""
    for arg in args:
        if arg in _HELP or arg.startswith("--help") or arg in _NO_WORKER or arg.startswith("--inprocess"):
            return False
    return True


def start(args: Sequence[str]) -> None:
    """Starts the first worker when `args` will need one; `take` hands it over."""
    global _started
    if _started is not None or not wanted(args):
        return
    context = multiprocessing.get_context("spawn")
    folder = tempfile.mkdtemp(prefix="harness-workers-")
    output = os.path.join(folder, "worker-1.log")
    conn, child = context.Pipe()
    process = context.Process(target=_serve, args=(child, output), name="harness-worker-1", daemon=True)
    process.start()
    child.close()  # so a dead worker shows as end-of-file here
    _started = Started(process=process, conn=conn, folder=folder, output=output)
    atexit.register(discard)


def take() -> Optional[Started]:
    """The worker `start` started, now the caller's to run and to end; None when there is none."""
    global _started
    started, _started = _started, None
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


def _serve(conn, output: str) -> None:
    # In the worker process: what every worker runs (harness.worker imports NumPy, so not here).
    from harness import worker  # noqa: PLC0415

    worker.serve(conn, output)
