"""Shrinks a short reproduction while the same deviation holds.

pysource-minimize (a maintained reducer for Python source: it deletes
statements, replaces expressions with their parts and halves constants, and
keeps only what still compiles) shrinks the whole short script: the function
and what it uses, the input values, and the driving code. A candidate is kept
when it reproduces the deviation itself, not only a line of the same shape:

- it still binds the function under test as the script did (an import or an
  assignment kept as written, a def of the same name) and its driving code
  calls it the same way, as often;
- running it prints the same thing for every mode the harness saw (the same
  exception class, or values) and the same DIFFERS line; it computes the same
  values (each mode's, the numeric derivative and the gradient set against it)
  within their dtype's tolerance and prints each where the script did; it makes
  the same gradient calls with the same outcomes (each tape.gradient and
  tf.gradients call is counted: the orders each mode reaches, and the one it
  raises at) and exits the same way;
- the script's last statements (the comparison that decides its exit status)
  are unchanged, so the minimised script still exits 0 once the deviation is gone.

Every candidate runs in a worker process that has TensorFlow imported, under a
timeout: a candidate that hangs, or kills the process, is rejected and the
worker replaced. When the time budget runs out no further candidate runs; when a
stop is asked for (Ctrl-C, SIGTERM) the one running is ended too. Either way the
smallest script that held so far is the result.
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
import shutil
import sys
import tempfile
import threading
import time
import traceback
import types
import warnings
from typing import Callable, Optional

import numpy as np

from harness import lifetime
from harness.repro.short import Expected
from harness.repro.verify import Interrupted, Ran, shows
from harness.tolerance import ToleranceOverride, tolerance_for

__all__ = ["Minimized", "MissingReducer", "minimize", "require"]

# The statements at the end of a short script that decide its exit status: never shrunk.
_PROTECTED = 3
_NUMBER = re.compile(r"[-+]?(\d[\d.]*(e[-+]?\d+)?|nan|inf)\b")
# What a short script computes, read from its globals after it ran: each mode's values (or the
# class it raised) and the numeric derivative.
_COMPUTED = ("found", "numeric", "got")
# The short script's own function that calls the function under test (harness.repro.short).
_DRIVER = "gradients"
# How often a wait for a candidate looks whether a stop was asked for.
_SLICE_S = 0.1


class MissingReducer(RuntimeError):
    """pysource-minimize is not installed; the message says how to install it."""


def require() -> None:
    """Raises MissingReducer when the reducer cannot be imported."""
    try:
        import pysource_minimize  # noqa: F401, PLC0415
    except ImportError:
        raise MissingReducer("--minimize needs pysource-minimize: pip install '.[minimize]' in the harness checkout") from None


@dataclasses.dataclass(frozen=True)
class Minimized:
    """The shrunk script, and what it took.

    Attributes:
      text: the smallest script that held (the script given, unchanged, when none smaller did).
      shrunk: whether `text` is smaller than the script given.
      stopped: "" when the reducer finished; else why it stopped early (the time budget, a stop
        asked for).
    """

    text: str
    before_lines: int
    after_lines: int
    candidates: int
    seconds: float
    stopped: str
    shrunk: bool = True

    def summary(self) -> str:
        tried = f"{self.candidates} candidate{'' if self.candidates == 1 else 's'} tried"
        if not self.shrunk:
            why = self.stopped or "no smaller script showed the same deviation"
            return f"repro.py not minimised: {why} ({tried} in {self.seconds:.0f} s)"
        how = f"; {self.stopped}, so this is the smallest script found so far" if self.stopped else ""
        return (f"minimised repro.py from {self.before_lines} to {self.after_lines} lines in {self.seconds:.0f} s, "
                f"{tried}{how}")


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
    return status, {name: _plain(module.__dict__[name]) for name in _COMPUTED if name in module.__dict__}


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
class _Run:
    """One candidate's run: what it printed and how it exited, the outcome of each gradient call
    it made, and what it computed (see _COMPUTED)."""

    ran: Ran
    calls: tuple[str, ...] = ()
    computed: dict = dataclasses.field(default_factory=dict)


class _Runner:
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

    def run(self, text: str) -> _Run:
        """What running `text` showed, the outcome of each gradient call it made, and what it computed.

        Raises:
          Interrupted: a stop was asked for while it ran.
        """
        try:
            self._conn.send(text)
            if self._wait(self.timeout):
                code, out, err, calls, computed = self._conn.recv()
                return _Run(Ran(exit=code, stdout=out, stderr=err), calls, computed)
            self._replace()
            return _Run(Ran(exit=None, stdout="", stderr=""))
        except (EOFError, OSError):
            self._process.join(5)
            code = self._process.exitcode
            self._replace()
            return _Run(Ran(exit=code if code is not None and code < 0 else -9, stdout="", stderr=""))

    def close(self) -> None:
        with contextlib.suppress(OSError, BrokenPipeError):
            self._conn.send(None)
        self._process.join(5)
        if self._process.is_alive():
            self._end()


def _differs_line(ran: Ran) -> str:
    line = next((s for s in reversed(ran.stdout.splitlines()) if s.startswith(("DIFFERS", "SAME"))), "")
    return _NUMBER.sub("#", line)


def _value_lines(ran: Ran, modes) -> list[str]:
    """The lines that print values: a mode's values, the numeric derivative, the DIFFERS or SAME line."""
    starts = tuple(f"{m}: ok" for m in modes) + ("numeric:", "DIFFERS", "SAME")
    return [line for line in ran.stdout.splitlines() if line.startswith(starts)]


def _loosest(computed, tolerance: ToleranceOverride) -> tuple[float, float]:
    """The largest rtol and atol of the dtypes of the values in `computed` ((0, 0) when it holds
    none): each number a script prints is one of those values."""
    found = [(0.0, 0.0)]
    if isinstance(computed, dict):
        computed = list(computed.values())
    if isinstance(computed, list):
        found += [_loosest(v, tolerance) for v in computed]
    elif isinstance(computed, np.ndarray) and computed.dtype.kind in "fc":
        tol = tolerance_for(computed.dtype.name, tolerance)
        found.append((tol.rtol, tol.atol))
    return max(r for r, _ in found), max(a for _, a in found)


def _prints_the_same(lines: list[str], want: list[str], rtol: float, atol: float) -> bool:
    """Whether `lines` print what `want` printed: the same words, and numbers within rtol and atol
    of the script's (NaN where it was NaN)."""
    if [_NUMBER.sub("#", s) for s in lines] != [_NUMBER.sub("#", s) for s in want]:
        return False
    got = [float(m[0]) for s in lines for m in _NUMBER.finditer(s)]
    were = [float(m[0]) for s in want for m in _NUMBER.finditer(s)]
    return len(got) == len(were) and bool(np.all(np.isclose(got, were, rtol=rtol, atol=atol, equal_nan=True)))


def _close(a, b, tolerance: ToleranceOverride) -> bool:
    """Whether a candidate's value `a` is the script's value `b`: the same type, dtype and
    shape, numbers within the dtype's tolerance, NaN and infinities where they were."""
    if isinstance(b, (str, type(None))) or isinstance(a, (str, type(None))):
        return a == b
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(_close(a[k], b[k], tolerance) for k in b)
    if isinstance(b, list):
        return isinstance(a, list) and len(a) == len(b) and all(_close(x, y, tolerance) for x, y in zip(a, b))
    if not isinstance(a, np.ndarray) or a.dtype != b.dtype or a.shape != b.shape:
        return False
    if not (np.issubdtype(b.dtype, np.floating) or np.issubdtype(b.dtype, np.complexfloating)):
        return bool(np.array_equal(a, b))
    tol = tolerance_for(b.dtype.name, tolerance)
    wide_a, wide_b = a.astype(np.complex128), b.astype(np.complex128)
    return bool(np.allclose(wide_a, wide_b, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
                and (np.isinf(wide_a) == np.isinf(wide_b)).all())


def _binding(tree: ast.Module, function: str) -> Optional[ast.stmt]:
    """The last top-level statement of `tree` that binds the name `function`."""
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == function:
            found = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and function in [
                (a.asname or a.name).split(".")[0] for a in node.names]:
            found = node
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == function
                                                  for t in node.targets):
            found = node
    return found


def _calls(tree: ast.Module, function: str) -> list[tuple[str, str]]:
    """Each call of `function` in the driving code (the script's own function that runs the
    tapes, and its top-level statements), as written, with where it is, in order."""
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name != _DRIVER:
            continue
        where = getattr(node, "name", "<module>")
        found += [(where, ast.unparse(c)) for c in ast.walk(node)
                  if isinstance(c, ast.Call) and ast.unparse(c.func) == function]
    return found


def _keeps_function(candidate: ast.Module, original: ast.Module, function: str) -> bool:
    """Whether `candidate` binds the function under test as `original` does (an import or an
    assignment as written, a def or class of that name, however shrunk) and calls it the same
    way, as often, in its driving code."""
    if not function:
        return True
    want, got = _binding(original, function), _binding(candidate, function)
    if want is not None:
        if got is None or type(got) is not type(want):
            return False
        if not isinstance(want, (ast.FunctionDef, ast.ClassDef)) and ast.unparse(got) != ast.unparse(want):
            return False
    return _calls(candidate, function) == _calls(original, function)


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


class _Stop(Exception):
    """Ends the reducer from inside its checker; the message says why."""


def minimize(text: str, expected: Expected, *, budget: float, timeout: float,
             progress: Callable[[int, int], None] = lambda tried, size: None,
             docstring: str = "", function: str = "", tolerance: ToleranceOverride = None,
             stop: Optional[threading.Event] = None,
             runner: Callable[[float, threading.Event], _Runner] = _Runner) -> Minimized:
    """Shrinks the short script `text` while running it shows `expected` the same way.

    Args:
      budget: seconds to spend; once they have run out no further candidate runs, and the
        smallest script that held so far is the result.
      timeout: seconds one candidate may run.
      progress: called with (candidates tried, characters of the smallest script so far).
      docstring: put at the top of the result.
      function: the expression naming the function under test in `text`: every candidate must
        bind it as `text` does and call it as often ("" leaves that unchecked).
      tolerance: the case's tolerance override: a candidate's values must be within it of the
        script's.
      stop: set from another thread to end the search now, with the smallest script so far.
      runner: makes the candidate runner (timeout, stop); tests give their own.

    Raises:
      MissingReducer: pysource-minimize is not installed.
      ValueError: the script does not show `expected` in the candidate runner.
    """
    require()
    from pysource_minimize import CouldNotMinimize  # noqa: PLC0415
    from pysource_minimize import minimize as reduce  # noqa: PLC0415

    start = time.monotonic()
    stop = stop or threading.Event()
    original = ast.parse(text)
    protected = _statements(text)[-_PROTECTED:]
    tried = [0]
    smallest = [""]  # the smallest script that held so far ("" before the first)
    stopped = ""

    def result(shrunk: Optional[str]) -> Minimized:
        seconds = time.monotonic() - start
        if shrunk is None or ast.dump(ast.parse(shrunk)) == ast.dump(original):
            return Minimized(text=text, before_lines=len(text.splitlines()), after_lines=len(text.splitlines()),
                             candidates=tried[0], seconds=seconds, stopped=stopped, shrunk=False)
        made = _layout(shrunk)
        if docstring:
            made = docstring.rstrip("\n") + "\n" + made
        return Minimized(text=made, before_lines=len(text.splitlines()), after_lines=len(made.splitlines()),
                         candidates=tried[0], seconds=seconds, stopped=stopped)

    try:
        worker = runner(timeout, stop)
    except Interrupted:
        stopped = "interrupted"
        return result(None)
    try:
        try:
            first = worker.run(text)
        except Interrupted:
            stopped = "interrupted"
            return result(None)
        why = shows(first.ran, expected)
        if why:
            raise ValueError(f"the script does not show the deviation when run for minimising: {why}")
        want, lines = _differs_line(first.ran), _value_lines(first.ran, expected.outcomes)
        rtol, atol = _loosest(first.computed, tolerance)

        def holds(candidate: str) -> bool:
            if stop.is_set():
                raise _Stop("interrupted")
            if time.monotonic() - start > budget:
                raise _Stop(f"stopped at the time budget of {budget:g} s")
            try:
                tree = ast.parse(candidate)
                if [ast.unparse(s) for s in tree.body][-_PROTECTED:] != protected:
                    return False
            except SyntaxError:
                return False
            if not _keeps_function(tree, original, function):
                return False
            # Each candidate kept is no longer than the last: a constant halved into more digits
            # (1.5 to 1.4999956488609314) is no smaller a script.
            if smallest[0] and len(candidate) > len(smallest[0]):
                return False
            tried[0] += 1
            try:
                got = worker.run(candidate)
            except Interrupted:
                raise _Stop("interrupted") from None
            # The same orders reached, and the same gradient calls raising: an error at another
            # order is another deviation, even with the same class. The same values: a line of
            # the same shape over other numbers is another computation.
            ok = (shows(got.ran, expected) is None and _differs_line(got.ran) == want and got.calls == first.calls
                  and _prints_the_same(_value_lines(got.ran, expected.outcomes), lines, rtol, atol)
                  and _close(got.computed, first.computed, tolerance))
            if ok:
                smallest[0] = candidate
            progress(tried[0], len(smallest[0] or text))
            return ok

        try:
            shrunk = reduce(text, holds)
        except _Stop as e:
            stopped = str(e)
            shrunk = smallest[0] or None
        except CouldNotMinimize:
            raise ValueError("the script did not show the same deviation again once ast.unparse had rewritten "
                             "it; it shows it only now and then") from None
    finally:
        worker.close()
    return result(shrunk)
