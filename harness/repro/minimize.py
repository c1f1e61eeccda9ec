"""Shrinks a short reproduction while the same deviation holds.

pysource-minimize (a maintained reducer for Python source: it deletes
statements, replaces expressions with their parts and halves constants, and
keeps only what still compiles) shrinks the whole short script: the function
and what it uses, the input values, and the driving code. A candidate is kept
when running it prints the same thing for every mode the harness saw (the same
exception class, or values), the same DIFFERS line (numbers aside), makes the
same gradient calls with the same outcomes (each tape.gradient and tf.gradients
call is counted: the orders each mode reaches, and the one it raises at) and exits
the same way, with the script's last statements (the comparison that decides
its exit status) unchanged, so the minimised script still exits 0 once the
deviation is gone.

Every candidate runs in a worker process that has TensorFlow imported, under a
timeout: a candidate that hangs, or kills the process, is rejected and the
worker replaced.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import io
import itertools
import multiprocessing
import os
import re
import runpy
import shutil
import tempfile
import time
import traceback
import warnings
from typing import Callable

from harness import lifetime
from harness.repro.short import Expected
from harness.repro.verify import Ran, shows

__all__ = ["Minimized", "MissingReducer", "minimize", "require"]

# The statements at the end of a short script that decide its exit status: never shrunk.
_PROTECTED = 3
_NUMBER = re.compile(r"[-+]?(\d[\d.]*(e[-+]?\d+)?|nan|inf)\b")


class MissingReducer(RuntimeError):
    """pysource-minimize is not installed; the message says how to install it."""


def require() -> None:
    """Raises MissingReducer when the reducer cannot be imported."""
    try:
        import pysource_minimize  # noqa: F401, PLC0415
    except ImportError:
        raise MissingReducer("--minimize needs pysource-minimize: pip install 'harness[minimize]'") from None


@dataclasses.dataclass(frozen=True)
class Minimized:
    """The shrunk script, and what it took."""

    text: str
    before_lines: int
    after_lines: int
    candidates: int
    seconds: float
    stopped: str  # "" when the reducer finished; else why it stopped early (the time budget)

    def summary(self) -> str:
        how = f"; {self.stopped}" if self.stopped else ""
        return (f"minimised repro.py from {self.before_lines} to {self.after_lines} lines in {self.seconds:.0f} s, "
                f"{self.candidates} candidates tried{how}")


def _serve(conn) -> None:
    """The candidate runner: imports TensorFlow once, then runs each script it is sent."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    lifetime.lead_group()
    lifetime.exit_with_parent(lifetime.end_strays)
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
        out, err, code = io.StringIO(), "", 0
        calls.clear()
        try:
            with contextlib.redirect_stdout(out):
                runpy.run_path(path, run_name="__main__")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:  # noqa: BLE001 - an uncaught exception is this candidate's failure
            code, err = 2, traceback.format_exc()
        lifetime.end_strays()
        conn.send((code, out.getvalue(), err, tuple(calls)))


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


class _Runner:
    """One worker process running candidates; replaced when one hangs or kills it."""

    def __init__(self, timeout: float):
        self._context = multiprocessing.get_context("spawn")
        self.timeout = None if timeout == float("inf") else timeout  # None: poll waits for ever
        self._start()

    def _start(self) -> None:
        self._conn, child = self._context.Pipe()
        self._process = self._context.Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        child.close()
        if not self._conn.poll(300) or self._conn.recv() != "ready":
            raise RuntimeError("the candidate runner did not start")

    def _replace(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            lifetime.end_group(self._process.pid)
        self._process.join(5)
        self._start()

    def run(self, text: str) -> tuple[Ran, tuple[str, ...]]:
        """What running `text` showed, and the outcome of each gradient call it made."""
        try:
            self._conn.send(text)
            if self._conn.poll(self.timeout):
                code, out, err, calls = self._conn.recv()
                return Ran(exit=code, stdout=out, stderr=err), calls
            self._replace()
            return Ran(exit=None, stdout="", stderr=""), ()
        except (EOFError, OSError):
            self._process.join(5)
            code = self._process.exitcode
            self._replace()
            return Ran(exit=code if code is not None and code < 0 else -9, stdout="", stderr=""), ()

    def close(self) -> None:
        with contextlib.suppress(OSError, BrokenPipeError):
            self._conn.send(None)
        self._process.join(5)
        if self._process.is_alive():
            self._process.kill()


def _differs_line(ran: Ran) -> str:
    line = next((s for s in reversed(ran.stdout.splitlines()) if s.startswith(("DIFFERS", "SAME"))), "")
    return _NUMBER.sub("#", line)


def _statements(text: str) -> list[str]:
    return [ast.unparse(s) for s in ast.parse(text).body]


def _layout(text: str) -> str:
    """ast.unparse's text with a blank line before and after each top-level block, so the
    shrunk script reads like the one it came from."""
    out: list[str] = []
    for node in ast.parse(text).body:
        block = isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.For, ast.Try, ast.With, ast.If, ast.While))
        if block and out and out[-1] != "":
            out.append("")
        out += [line for line in ast.unparse(node).splitlines() if line.strip()]
        if block:
            out.append("")
    return "\n".join(out).strip("\n") + "\n"


def minimize(text: str, expected: Expected, *, budget: float, timeout: float,
             progress: Callable[[int, int], None] = lambda tried, size: None,
             docstring: str = "") -> Minimized:
    """Shrinks the short script `text` while running it shows `expected` the same way.

    Args:
      budget: seconds to spend; past them every candidate is rejected, so the reducer
        finishes quickly with the smallest script so far.
      timeout: seconds one candidate may run.
      progress: called with (candidates tried, characters of the smallest script so far).
      docstring: put at the top of the result.

    Raises:
      MissingReducer: pysource-minimize is not installed.
      ValueError: the script does not show `expected` in the candidate runner.
    """
    require()
    from pysource_minimize import minimize as reduce  # noqa: PLC0415

    start = time.monotonic()
    protected = _statements(text)[-_PROTECTED:]
    runner = _Runner(timeout)
    try:
        first, calls = runner.run(text)
        why = shows(first, expected)
        if why:
            raise ValueError(f"the script does not show the deviation when run for minimising: {why}")
        want = _differs_line(first)
        tried = [0]
        smallest = [len(text)]
        stopped = [""]

        def holds(candidate: str) -> bool:
            if time.monotonic() - start > budget:
                stopped[0] = f"stopped at the time budget of {budget:g} s"
                return False
            try:
                if _statements(candidate)[-_PROTECTED:] != protected:
                    return False
            except SyntaxError:
                return False
            tried[0] += 1
            ran, reached = runner.run(candidate)
            # The same orders reached, and the same gradient calls raising: an error at another
            # order is another deviation, even with the same class.
            ok = shows(ran, expected) is None and _differs_line(ran) == want and reached == calls
            if ok:
                smallest[0] = min(smallest[0], len(candidate))
            progress(tried[0], smallest[0])
            return ok

        shrunk = reduce(text, holds)
    finally:
        runner.close()
    result = _layout(shrunk)
    if docstring:
        result = docstring.rstrip("\n") + "\n" + result
    return Minimized(text=result, before_lines=len(text.splitlines()), after_lines=len(result.splitlines()),
                     candidates=tried[0], seconds=time.monotonic() - start, stopped=stopped[0])
