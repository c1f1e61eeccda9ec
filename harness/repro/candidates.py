"""Running minimisation candidates: each in a worker process that has TensorFlow imported, under a
timeout; a candidate that hangs, or kills the process, is rejected and the worker replaced, and a
stop asked for (Ctrl-C, SIGTERM) ends the one running. What a run gives back: its exit status and
output, the gradient calls it made, and what it computed (each mode's values, the numeric
derivative).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import multiprocessing
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
import types
import warnings
from typing import Optional

import numpy as np

from harness import lifetime
from harness.repro.verify import Interrupted, Ran

# What a short script computes, read from its globals after it ran: each mode's values (or the
# class it raised) and the numeric derivative.
_COMPUTED = ("found", "numeric", "got")
# How often a wait for a candidate looks whether a stop was asked for.
_SLICE_S = 0.1

__all__ = ["Run", "Runner"]


def _execute(path: str) -> tuple[int, dict]:
    """Runs the script at `path` as __main__ (as runpy does), keeping its globals: the exit code
    it ended with and what it computed."""
    module = types.ModuleType("__main__")
    module.__file__ = path
    main, argv0 = sys.modules.get("__main__"), sys.argv[0]
    sys.modules["__main__"], sys.argv[0] = module, path
    try:
        with open(path, encoding="utf-8") as f:
            code = compile(f.read(), path, "exec")
        try:
            exec(code, module.__dict__)  # noqa: S102 - the candidate is the point
            status = 0
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.modules["__main__"], sys.argv[0] = main, argv0
    return status, {name: _plain(module.__dict__[name]) for name in _COMPUTED
                    if name in module.__dict__}


def _plain(value):
    """`value` as strings, lists and NumPy arrays only, so it crosses the pipe whatever a
    candidate left there (a tensor, a generator)."""
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    try:
        array = np.asarray(value)
    except Exception:  # noqa: BLE001 - whatever it is, it is not a value
        return f"<{type(value).__name__}>"
    return array if array.dtype != object else f"<{type(value).__name__}>"


def _serve(conn) -> None:
    """The candidate runner: imports TensorFlow once, then runs each script it is sent."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    lifetime.lead_group()
    lifetime.exit_with_parent(lifetime.end_strays)
    # What TensorFlow and the candidates write to stderr (start-up lines, "the dtype of the watched
    # tensor must be floating", retracing warnings) is no part of a candidate's result, and a
    # thousand candidates would bury the progress line in it: stderr goes nowhere. An uncaught
    # exception's traceback is caught and sent back instead.
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)
    os.close(quiet)
    import tensorflow as tf  # noqa: PLC0415 - the import every candidate would otherwise pay

    warnings.simplefilter("ignore", SyntaxWarning)  # candidates like `0()` compile, with a warning
    calls = _count_gradient_calls(tf)

    folder = tempfile.mkdtemp(prefix="harness-minimize-")
    conn.send("ready")
    for count in itertools.count():
        text = conn.recv()
        if text is None:
            shutil.rmtree(folder, ignore_errors=True)
            return
        # From a file, as the script will run: autograph reads a function's source, and a new
        # name each time keeps every cache of source lines apart.
        path = os.path.join(folder, f"candidate_{count}.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        out, err, code, computed = io.StringIO(), "", 0, {}
        calls.clear()
        try:
            with contextlib.redirect_stdout(out):
                code, computed = _execute(path)
        except BaseException:  # noqa: BLE001 - an uncaught exception is this candidate's failure
            code, err = 2, traceback.format_exc()
        lifetime.end_strays()
        conn.send((code, out.getvalue(), err, tuple(calls), computed))


def _count_gradient_calls(tf) -> list:
    """Wraps tf.GradientTape.gradient and tf.gradients so that each call appends "ok" or the class
    of the exception it raised to the list returned: the orders each mode reached, and where it
    raised, in the order the script ran them."""
    calls: list = []

    def counted(real):
        def wrapper(*args, **kwargs):
            try:
                result = real(*args, **kwargs)
            except Exception as e:
                calls.append(type(e).__name__)
                raise
            calls.append("ok")
            return result
        return wrapper

    tf.GradientTape.gradient = counted(tf.GradientTape.gradient)
    tf.gradients = counted(tf.gradients)
    return calls


@dataclasses.dataclass(frozen=True)
class Run:
    """One candidate's run: what it printed and how it exited, the outcome of each gradient call
    it made, and what it computed (see _COMPUTED)."""

    ran: Ran
    calls: tuple[str, ...] = ()
    computed: dict = dataclasses.field(default_factory=dict)


class Runner:
    """One worker process running candidates; replaced when one hangs or kills it, and ended at
    once when `stop` is set."""

    def __init__(self, timeout: float, stop: threading.Event):
        self._context = multiprocessing.get_context("spawn")
        self.timeout = None if timeout == float("inf") else timeout  # None: wait for ever
        self._stop = stop
        self._process = None
        self._start()

    def _start(self) -> None:
        self._conn, child = self._context.Pipe()
        self._process = self._context.Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        child.close()
        if not self._wait(300) or self._conn.recv() != "ready":
            raise RuntimeError("the candidate runner did not start")

    def _wait(self, timeout: Optional[float]) -> bool:
        """Whether the worker answered within `timeout` s (None: however long it takes).

        Raises:
          Interrupted: a stop was asked for; the worker is ended.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._stop.is_set():
                self._end()
                raise Interrupted("a stop was asked for while a candidate ran")
            left = _SLICE_S if deadline is None else min(_SLICE_S, deadline - time.monotonic())
            if left <= 0:
                return False
            if self._conn.poll(left):
                return True

    def _end(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            lifetime.end_group(self._process.pid)
        self._process.join(5)

    def _replace(self) -> None:
        self._end()
        self._start()

    def run(self, text: str) -> Run:
        """What running `text` showed, the outcome of each gradient call it made, and what it
        computed.

        Raises:
          Interrupted: a stop was asked for while it ran.
        """
        try:
            self._conn.send(text)
            if self._wait(self.timeout):
                code, out, err, calls, computed = self._conn.recv()
                return Run(Ran(exit=code, stdout=out, stderr=err), calls, computed)
            self._replace()
            return Run(Ran(exit=None, stdout="", stderr=""))
        except (EOFError, OSError):
            self._process.join(5)
            code = self._process.exitcode
            self._replace()
            return Run(Ran(exit=code if code is not None and code < 0 else -9, stdout="",
                           stderr=""))

    def close(self) -> None:
        with contextlib.suppress(OSError, BrokenPipeError):
            self._conn.send(None)
        self._process.join(5)
        if self._process.is_alive():
            self._end()
