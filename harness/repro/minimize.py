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
import dataclasses
import re
import threading
import time
from typing import Callable, Optional

import numpy as np

from harness.repro.candidates import Runner
from harness.repro.short import Expected
from harness.repro.verify import Interrupted, Ran, shows
from harness.criteria.tolerance import ToleranceOverride, tolerance_for

__all__ = ["Minimized", "MissingReducer", "minimize", "require"]

# The statements at the end of a short script that decide its exit status: never shrunk.
_PROTECTED = 3
_NUMBER = re.compile(r"[-+]?(\d[\d.]*(e[-+]?\d+)?|nan|inf)\b")
# The short script's own function that calls the function under test (harness.repro.short).
_DRIVER = "gradients"


class MissingReducer(RuntimeError):
    """pysource-minimize is not installed; the message says how to install it."""


def require() -> None:
    """Raises MissingReducer when the reducer cannot be imported."""
    try:
        import pysource_minimize  # noqa: F401, PLC0415
    except ImportError:
        raise MissingReducer("--minimize needs pysource-minimize: pip install '.[minimize]' in the "
                             "harness checkout") from None


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
        how = (f"; {self.stopped}, so this is the smallest script found so far" if self.stopped
               else "")
        return (f"minimised repro.py from {self.before_lines} to {self.after_lines} lines in "
                f"{self.seconds:.0f} s, {tried}{how}")


def _differs_line(ran: Ran) -> str:
    line = next((s for s in reversed(ran.stdout.splitlines())
                 if s.startswith(("DIFFERS", "SAME"))), "")
    return _NUMBER.sub("#", line)


def _value_lines(ran: Ran, modes) -> list[str]:
    """The lines that print values: a mode's values, the numeric derivative, the DIFFERS or SAME
    line."""
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
    return (len(got) == len(were)
            and bool(np.all(np.isclose(got, were, rtol=rtol, atol=atol, equal_nan=True))))


def _close(a, b, tolerance: ToleranceOverride) -> bool:
    """Whether a candidate's value `a` is the script's value `b`: the same type, dtype and
    shape, numbers within the dtype's tolerance, NaN and infinities where they were."""
    if isinstance(b, (str, type(None))) or isinstance(a, (str, type(None))):
        return a == b
    if isinstance(b, dict):
        return (isinstance(a, dict) and a.keys() == b.keys()
                and all(_close(a[k], b[k], tolerance) for k in b))
    if isinstance(b, list):
        return (isinstance(a, list) and len(a) == len(b)
                and all(_close(x, y, tolerance) for x, y in zip(a, b)))
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
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name != _DRIVER):
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
        if (not isinstance(want, (ast.FunctionDef, ast.ClassDef))
            and ast.unparse(got) != ast.unparse(want)):
            return False
    return _calls(candidate, function) == _calls(original, function)


def _statements(text: str) -> list[str]:
    return [ast.unparse(s) for s in ast.parse(text).body]


def _layout(text: str) -> str:
    """ast.unparse's text with a blank line before and after each top-level block, so the
    shrunk script reads like the one it came from."""
    out: list[str] = []
    for node in ast.parse(text).body:
        block = isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.For, ast.Try, ast.With,
                                  ast.If, ast.While))
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
             runner: Callable[[float, threading.Event], Runner] = Runner) -> Minimized:
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

    search = _Search(text, expected, budget=budget, progress=progress, function=function,
                     tolerance=tolerance, stop=stop or threading.Event())
    try:
        worker = runner(timeout, search.stop)
    except Interrupted:
        return search.result(None, docstring, "interrupted")
    try:
        try:
            search.first_run(worker)
        except Interrupted:
            return search.result(None, docstring, "interrupted")
        stopped = ""
        try:
            shrunk = reduce(text, search.holds)
        except _Stop as e:
            stopped = str(e)
            shrunk = search.smallest or None
        except CouldNotMinimize:
            raise ValueError("the script did not show the same deviation again once ast.unparse "
                             "had rewritten it; it shows it only now and then") from None
    finally:
        worker.close()
    return search.result(shrunk, docstring, stopped)


class _Search:
    """One minimisation: what the script showed on its first run, and the smallest candidate that
    has shown the same since."""

    def __init__(self, text: str, expected: Expected, *, budget: float,
                 progress: Callable[[int, int], None], function: str, tolerance: ToleranceOverride,
                 stop: threading.Event):
        self.text, self.expected, self.budget, self.progress = text, expected, budget, progress
        self.function, self.tolerance, self.stop = function, tolerance, stop
        self.start = time.monotonic()
        self.original = ast.parse(text)
        self.protected = _statements(text)[-_PROTECTED:]
        self.tried = 0
        self.smallest = ""  # the smallest script that held so far ("" before the first)
        self.worker = self.first = None
        self.want, self.lines, self.rtol, self.atol = "", [], 0.0, 0.0

    def first_run(self, worker: Runner) -> None:
        """Runs the script itself: what every candidate must show again.

        Raises:
          ValueError: it does not show the expected deviation.
        """
        self.worker = worker
        self.first = worker.run(self.text)
        why = shows(self.first.ran, self.expected)
        if why:
            raise ValueError("the script does not show the deviation when run for minimising: "
                             f"{why}")
        self.want, self.lines = (_differs_line(self.first.ran),
                                 _value_lines(self.first.ran, self.expected.outcomes))
        self.rtol, self.atol = _loosest(self.first.computed, self.tolerance)

    def holds(self, candidate: str) -> bool:
        """Whether `candidate` shows the deviation the script shows, as the reducer asks."""
        if self.stop.is_set():
            raise _Stop("interrupted")
        if time.monotonic() - self.start > self.budget:
            raise _Stop(f"stopped at the time budget of {self.budget:g} s")
        try:
            tree = ast.parse(candidate)
            if [ast.unparse(s) for s in tree.body][-_PROTECTED:] != self.protected:
                return False
        except SyntaxError:
            return False
        if not _keeps_function(tree, self.original, self.function):
            return False
        # Each candidate kept is no longer than the last: a constant halved into more digits
        # (1.5 to 1.4999956488609314) is no smaller a script.
        if self.smallest and len(candidate) > len(self.smallest):
            return False
        self.tried += 1
        try:
            got = self.worker.run(candidate)
        except Interrupted:
            raise _Stop("interrupted") from None
        # The same orders reached, and the same gradient calls raising: an error at another
        # order is another deviation, even with the same class. The same values: a line of
        # the same shape over other numbers is another computation.
        ok = (shows(got.ran, self.expected) is None and _differs_line(got.ran) == self.want
              and got.calls == self.first.calls
              and _prints_the_same(_value_lines(got.ran, self.expected.outcomes), self.lines,
                                   self.rtol, self.atol)
              and _close(got.computed, self.first.computed, self.tolerance))
        if ok:
            self.smallest = candidate
        self.progress(self.tried, len(self.smallest or self.text))
        return ok

    def result(self, shrunk: Optional[str], docstring: str, stopped: str) -> Minimized:
        text, seconds = self.text, time.monotonic() - self.start
        if shrunk is None or ast.dump(ast.parse(shrunk)) == ast.dump(self.original):
            return Minimized(text=text, before_lines=len(text.splitlines()),
                             after_lines=len(text.splitlines()), candidates=self.tried,
                             seconds=seconds, stopped=stopped, shrunk=False)
        made = _layout(shrunk)
        if docstring:
            made = docstring.rstrip("\n") + "\n" + made
        return Minimized(text=made, before_lines=len(text.splitlines()),
                         after_lines=len(made.splitlines()), candidates=self.tried, seconds=seconds,
                         stopped=stopped)
