"""The recorder: a hook around `tf.custom_gradient` that keeps a few calls of every function it
decorates.

`install(session)` makes every route to TensorFlow's `custom_gradient` the recording one: the
function in `tensorflow.python.ops.custom_gradient` (so a module importing it later gets the
recording one) and every module attribute already bound to it (`tf.custom_gradient`,
`tf.compat.v1`, `tf.compat.v2`, their `_api` twins, a user module that imported it first;
`keras.ops.custom_gradient` calls `tf.custom_gradient`), at once where TensorFlow is already
imported, else the moment its import finishes (an import hook), so a module that decorates at
import time is seen and a process that never imports TensorFlow never pays for it.

Like harness.measure.probe, the hook hands TensorFlow's own decorator a forward function around the
user's: TensorFlow does everything it did before, and the forward function, after calling the
user's function once as before, notes the call: eager arguments by value, arguments seen while
tracing (tf.function, model.fit, a v1 graph) by dtype and shape only, since they have no value
then. Adding a host callback to read them would change the user's graph (XLA and SavedModel
refuse one), so those points are replayed at drawn values, labelled so, unless the session runs
the user's functions eagerly (`eager=True`, an opt-in: their tests then run slower, and run
eagerly). Each function is the user's (harness.record.identity), never a wrapper's code.

Which K points a function keeps depends on the calls the suite made, never on how it was
scheduled: each point is ranked by where its call was made (the test's place in pytest's
collection, then the call's number among that function's calls in that test), and a process
keeps the K distinct calls of lowest rank it saw (calls with values before calls seen only while
tracing). Under pytest-xdist each worker keeps its own lowest K, and the merge of their files
(harness.record.merging) keeps the lowest K of those: the very points a serial run keeps. Tests
run in collection order, so once a function has its K points, a call in a later test costs a
counter increment; a function called again and again in one test with values that test has
already passed is looked at less and less often.

A callable the recorder cannot follow (a functools.partial, a C function) is passed to
TensorFlow untouched, with one warning naming it; any other failure of the recorder's own code
stops the recording with one warning line and leaves the call, and the test session, to go on as
without it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.abc
import importlib.util
import inspect
import os
import platform
import sys
import time
import types
from typing import Any, Callable, Optional, Sequence

import numpy as np

from harness.record import identity, merging, serial, store

__all__ = ["ROUTES", "Session", "install", "installed_session"]

_state: dict = {"session": None, "real": None, "finder": None}

ROUTES = ("tf.custom_gradient", "tf.compat.v1.custom_gradient", "tf.compat.v2.custom_gradient",
          "tensorflow.python.ops.custom_gradient.custom_gradient", "keras.ops.custom_gradient")
_DEFINING_MODULE = "tensorflow.python.ops.custom_gradient"

# After this many calls in a row in one test that brought nothing that test had not passed
# already, a function is looked at only on calls whose number in that test is a power of two: a
# function called 10**5 times with the same values costs the test a few dozen looks, not 10**5
# hashes of its arguments. Counted in each test alone, so which calls are looked at is the same
# whichever process runs the test and whatever ran before it.
_PATIENCE = 32


def _root(module: str, file: str) -> str:
    """The sys.path entry `module` was imported from: `file`'s folder less one level per dot."""
    folder = os.path.dirname(os.path.abspath(file))
    if os.path.basename(file) == "__init__.py":
        folder = os.path.dirname(folder)
    for _ in range(module.count(".")):
        folder = os.path.dirname(folder)
    return folder


class _Function:
    """What is kept of one user function (one per identity: a factory's closures over different
    values are different functions)."""

    def __init__(self, who: identity.Identity):
        self.who = who
        self.calls = 0
        self.unlooked = 0  # calls not examined, since the last ones brought nothing new
        self.fruitless = 0  # examined calls in a row, in this test, that it had passed already
        self.test = None  # the test whose calls test_calls counts (its collection index)
        self.test_calls = 0  # calls in that test
        self.test_keys: set = set()  # the arguments of that test's examined calls
        self.points: list[dict] = []
        self.keys: set = set()
        self.digests: set = set()  # each kept point's digest (merging.digest_of)
        self.bytes = 0
        self.grad_takes_variables = False
        self.copy: Optional[dict] = None  # the serialised copy (or why there is none)
        named = who.names if who.names is not None or who.user is None else who.user
        try:
            self.parameters = [p.name for p in inspect.signature(named).parameters.values()
                               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)] \
                if named is not None else []
        except (TypeError, ValueError):
            self.parameters = []

    def full(self, limit: int, test: int) -> bool:
        """Whether no call of the test at `test` can add a point: K kept, each with its values (a
        later call with values takes the place of a point seen only while tracing), and none made
        in a later test than this one (tests run out of collection order, under a plugin that
        reorders them, still keep the K lowest)."""
        return len(self.points) >= limit and not any(_without_values(p) for p in self.points) \
            and all(p["rank"][0] <= test for p in self.points)

    def counted(self, test: int) -> None:
        """Counts a call in the test at `test`."""
        if self.test != test:
            self.test, self.test_calls, self.fruitless = test, 0, 0
            self.test_keys = set()
        self.test_calls += 1

    def looks_at(self) -> bool:
        """Whether this call is examined for a new point."""
        if self.fruitless < _PATIENCE:
            return True
        n = self.test_calls
        if n & (n - 1) == 0:
            return True
        self.unlooked += 1
        return False

    def as_dict(self) -> dict:
        who = self.who
        return {"module": who.module, "qualname": who.qualname, "file": who.file, "line": who.line,
                "captured": [list(c) for c in who.captured], "fingerprint": who.fingerprint,
                "site": who.site,
                "found_through": who.via, "autograph": "tf__" in who.qualname,
                "root": _root(who.module, who.file) if who.file else "", "calls": self.calls,
                "calls_not_examined": self.unlooked,
                "grad_takes_variables": self.grad_takes_variables, "importable": self.importable(),
                "parameters": self.parameters, "parameters_exact": who.exact_names,
                "points": self.points}

    def importable(self) -> bool:
        """Whether the module's attribute of this name is this function, decorated."""
        who = self.who
        if who.module == "__main__" or "<" in who.qualname or who.via in ("closure", "autograph"):
            return False
        found = serial.resolve(who.module, who.qualname)
        if found is None:
            return False
        mine = identity._plain(who.function)
        return getattr(identity._plain(found), "__code__", None) is getattr(mine, "__code__", 0)


class Session:
    """One process's recording: its functions, limits, what was dropped, and the current test.

    `folder` is the session's own folder (store.new_session); this process writes its file there
    whenever `flush()` finds something new, and at the end with `finished=True`."""

    def __init__(self, folder: str, limits: store.Limits = store.Limits(), command: str = "",
                 eager: bool = False, include: Sequence[str] = ()):
        self.folder = folder
        # Packages whose own custom gradients are recorded, though TensorFlow's and Keras's are
        # left out by default; what is left out is counted, by package, for the last line.
        self.include = frozenset(include)
        self.left_out: dict[str, int] = {}
        self.limits = limits
        self.command = command
        self.eager = eager
        self.node = ""  # the test running now ("" outside any test: collection, a script)
        # Its place in pytest's collection (the same in every xdist worker), or the count of tests
        # begun before it where there is no collection (unittest); -1 outside any test.
        self.test = -1
        # Calls of each definition in the current test (a factory's closures counted together,
        # so that each call's number is its place among that function's calls in the test).
        self.numbers: dict = {}
        self.numbered_test = -1
        self.tests = 0  # tests that ran while recording
        self.functions: dict[Any, _Function] = {}
        self.arrays: dict[str, np.ndarray] = {}
        self.stored: dict[tuple, str] = {}  # a value's dtype, shape and digest -> its file
        self.points = 0
        self.bytes = 0
        self.dropped = {"points_over_total": 0, "values_over_bytes": 0, "functions_not_copied": 0}
        self.skipped: dict[str, str] = {}  # callables not recorded -> why
        self.stopped = ""  # why recording stopped, once it has
        self.started = time.time()
        self.writer = store.Writer(folder)
        self.dirty = False
        self.write_error = ""  # the last write's failure, "" once a write succeeds
        self.unwritten = 0  # points recorded but not on disk, as of the last failed write
        self.on_disk = 0  # points in the file as last written
        self.written: Optional[str] = None
        # Under pytest, output during a test is captured: the plugin says it in the summary instead.
        self.say_stopped_at_once = True

    # -- the hook ---------------------------------------------------------------------------

    def decorate(self, real: Callable, f: Callable) -> Callable:
        """`real(f)` as TensorFlow gives it, with a forward function that records `f`'s calls."""
        if self.stopped:
            return real(f)
        try:
            who = identity.identify(f)
            if who.internal and who.package not in self.include:
                self.left_out[who.package] = self.left_out.get(who.package, 0) + 1
                self.dirty = self.dirty or not self.left_out[who.package] & (
                    self.left_out[who.package] - 1)  # written when a count reaches a power of 2
                return real(f)
            function = self.functions.get(who.key)
            if function is None:
                function = self.functions[who.key] = _Function(who)
        except identity.Unhandled as e:
            self.skip(f, str(e))
            return real(f)
        except Exception as e:  # noqa: BLE001 - the recorder's own failure must not be the user's
            self.skip(f, f"{type(e).__name__}: {e}")
            return real(f)
        return real(self._forward(function, f, who.function))

    def _forward(self, function: _Function, f: Callable, source: Callable) -> Callable:
        """The forward TensorFlow is handed: `f`, whose calls are recorded; `source` is what a
        copy is made of (the user's function this call made, over this call's closure)."""
        session = self

        def forward(*args, **kwargs):
            if session.stopped:
                return f(*args, **kwargs)
            function.calls += 1
            function.counted(session.test)
            number = session.numbered(function)
            if function.full(session.limits.points, session.test) or not function.looks_at():
                return f(*args, **kwargs)
            watcher = _watcher()
            if watcher is None:
                result = f(*args, **kwargs)
                variables = ()
            else:
                with watcher:
                    result = f(*args, **kwargs)
                # A variable passed as an argument is an input, not a variable the function reads,
                # as custom_gradient itself counts them (a Keras 3 variable by the TensorFlow
                # variable it holds).
                given = {id(a) for a in _flat_inputs(args, kwargs)}
                variables = [v for v in watcher.watched_variables() if id(v) not in given]
            try:
                session.record(function, args, kwargs, variables, result, source,
                               rank=(session.test, number))
            except Exception as e:  # noqa: BLE001
                session.stop(e)
            return result

        for name in ("__module__", "__name__", "__qualname__", "__doc__"):
            try:
                setattr(forward, name, getattr(f, name))
            except (AttributeError, TypeError):
                pass
        forward.__wrapped__ = f
        return forward

    def numbered(self, function: _Function) -> int:
        """The number of this call among the calls of its function's definition in this test."""
        if self.numbered_test != self.test:
            self.numbers, self.numbered_test = {}, self.test
        who = function.who
        key = (who.module, who.qualname, who.file, who.line, who.site)
        self.numbers[key] = self.numbers.get(key, 0) + 1
        return self.numbers[key]

    def skip(self, f: Any, why: str) -> None:
        name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__
        if name not in self.skipped:
            self.skipped[name] = why
            if self.say_stopped_at_once:
                sys.stderr.write(self.skipped_line(name) + "\n")

    def skipped_line(self, name: str) -> str:
        return (f"harness record: warning: not recording {name} ({self.skipped[name]}): the "
                "recorder cannot follow it; the tests and the rest of the recording go on")

    def stop(self, error: BaseException) -> None:
        if not self.stopped:
            self.stopped = f"{type(error).__name__}: {error}"
            if self.say_stopped_at_once:
                sys.stderr.write(self.stopped_line() + "\n")

    def stopped_line(self) -> str:
        return (f"harness record: warning: recording stopped ({self.stopped}); the tests went on, "
                "and what was recorded before is kept")

    # -- one call ---------------------------------------------------------------------------

    def _store(self, value: np.ndarray) -> dict:
        """A value's entry; a value stored before (a layer's unchanged weights, copied again at
        its next call) is one file."""
        key = (value.dtype.str, value.shape, hashlib.sha1(value.tobytes()).hexdigest())
        name = self.stored.get(key)
        if name is None:
            name = self.stored[key] = f"{os.getpid()}-{len(self.arrays)}.npy"
            self.arrays[name] = value
        return {"array": f"values/{name}", "dtype": value.dtype.name, "shape": list(value.shape),
                "sha1": key[2]}

    def record(self, function: _Function, args: tuple, kwargs: dict, variables, result,
               source: Optional[Callable] = None, rank: tuple = (-1, 0)) -> None:
        import tensorflow as tf  # noqa: PLC0415 - already imported: the hook runs inside TensorFlow

        if tf.executing_eagerly():
            context = "eager"
        else:
            graph = tf.compat.v1.get_default_graph()
            context = "tf.function" if type(graph).__name__ == "FuncGraph" else "v1 graph"
        if isinstance(result, tuple) and len(result) == 2 and callable(result[1]):
            function.grad_takes_variables = (function.grad_takes_variables
                                             or _takes_variables(result[1]))
        described = [_describe(a) for a in args]
        kw_described = {k: _describe(v) for k, v in kwargs.items()}
        key = (context, tuple(_key(d) for d in described),
               tuple(sorted((k, _key(d)) for k, d in kw_described.items())),
               _instances(source) if function.who.per_call else ())
        if key in function.test_keys:
            function.fruitless += 1
            return
        function.fruitless = 0
        function.test_keys.add(key)
        if key in function.keys:
            return
        function.keys.add(key)
        full = len(function.points) >= self.limits.points
        traced = any(d[1] is None and "spec" in d[0] for d in list(described)
                     + list(kw_described.values()))
        if full and not _ranks_below(function.points, traced, rank):
            return  # a kept point ranks lower: this call takes no place
        if self.points >= self.limits.total_points and not full:
            self.dropped["points_over_total"] += 1
            return
        size = sum(d[1].nbytes for d in list(described) + list(kw_described.values())
                   if d[1] is not None)
        over = (function.bytes + size > self.limits.function_bytes or self.bytes + size
                > self.limits.total_bytes)
        point = {"context": context, "node": self.node, "rank": list(rank),
                 "args": [self._entry(d, over) for d in described],
                 "kwargs": {k: self._entry(d, over) for k, d in kw_described.items()},
                 "variables": [_variable(v, self._store, over) for v in variables]}
        if over and size:
            point["note"] = "values over the recording's byte limit: replayed at drawn values"
            self.dropped["values_over_bytes"] += 1
        else:
            function.bytes += size
            self.bytes += size
        if not function.importable():
            self._copy_into(point, function, source)
        if not self._keep(function, point, full, rank):
            return
        self.dirty = True
        if not self.node:  # no test end will come to write it: write it now
            self.flush()

    def _keep(self, function: _Function, point: dict, full: bool, rank: tuple) -> bool:
        """Keeps a new point (its digest given it) among the function's K of lowest rank;
        whether it was kept."""
        point["digest"] = merging.digest_of(point, function.who.fingerprint)
        if point["digest"] in function.digests:  # the same call, byte for byte (another layer
            return False  # instance with the same weights): one point
        if full:
            if not _ranks_below(function.points, _without_values(point), rank):
                return False  # its values were over the byte limit: it ranks with traced calls
            # It takes the place of the highest-ranked kept point.
            last = max(range(len(function.points)),
                       key=lambda i: merging.order_of(function.points[i]))
            function.digests.discard(function.points[last].get("digest"))
            function.points[last] = point
        else:
            function.points.append(point)
            self.points += 1
        function.digests.add(point["digest"])
        return True

    def _entry(self, described, over: bool) -> dict:
        entry, value = described
        if value is not None and not over:
            return self._store(value)
        return entry

    def _copy_into(self, point: dict, function: _Function, source: Optional[Callable]) -> None:
        point["function"] = self._copy(function, source)
        if function.who.per_call and source is not None:
            # The plain values this call's closure held (Keras's `training`), for its note.
            captured = identity.captured_label(identity.identify(source).captured)
            if captured:
                point["captured"] = captured

    def _copy(self, function: _Function, source: Optional[Callable] = None) -> dict:
        """The function's copy: made once, or at every recorded call where its closure holds an
        object (a layer's `self`), whose state is the one this call saw."""
        if function.copy is None or function.copy.get("per_call"):
            try:
                copy = serial.dump_function(source or function.who.function, self._store)
                function.copy = {"copy": copy}
                # A layer's self, or a decorator's per-call closure (arguments it holds aside):
                # the state this call saw, copied at each call.
                if serial.holds(copy, ("object",)) or function.who.per_call:
                    function.copy = {"copy": copy, "per_call": True}
            except Exception as e:  # noqa: BLE001 - any value it meets: said on replay
                self.dropped["functions_not_copied"] += 1
                function.copy = {"problem": str(e) if isinstance(e, serial.Unserialisable)
                                 else f"{type(e).__name__}: {e}"}
        return function.copy

    # -- writing ----------------------------------------------------------------------------

    def called(self) -> list[_Function]:
        return [f for f in self.functions.values() if f.calls]

    def data(self, ended: str) -> dict:
        import tensorflow as tf  # noqa: PLC0415 - only called once a function was decorated

        return {"tensorflow": tf.version.VERSION, "python": platform.python_version(),
                "command": self.command, "started": self.started, "ended": ended,
                # A script's argv: replay runs its top level with it, to define its functions.
                "argv": [str(a) for a in getattr(sys, "argv", None) or ()],
                "eager": self.eager, "limits": dataclasses.asdict(self.limits), "tests": self.tests,
                "include": sorted(self.include), "left_out": dict(self.left_out),
                "dropped": dict(self.dropped), "stopped": self.stopped,
                "skipped": dict(self.skipped), "functions": [f.as_dict() for f in self.called()]}

    def flush(self, finished: bool = False) -> None:
        """Writes this process's file if anything is new (always when `finished`); a failure is
        kept for the summary, and the tests go on."""
        if not (self.dirty or finished) or not (self.called()
                                                or finished and (self.tests or self.left_out)):
            return
        try:
            self.written = str(self.writer.write(self.data("finished" if finished else "running"),
                                                 self.arrays))
        except Exception as e:  # noqa: BLE001 - a full disk must not fail the user's tests
            self.write_error = f"{type(e).__name__}: {e}"
            self.unwritten = self.points - self.on_disk
            return
        self.dirty = False
        self.on_disk = self.points
        self.write_error, self.unwritten = "", 0

    # -- the end ----------------------------------------------------------------------------

    def summary(self) -> str:
        """One line: what was recorded where, and what was dropped or lost."""
        functions = merging.merged({"sessions": [{"limits": dataclasses.asdict(self.limits)}],
                                    "functions": [f.as_dict() for f in self.called()]})
        return summary_line(self.folder, functions, self.dropped, self.tests, self.write_error,
                            self.unwritten, left_out=self.left_out)


def _plural(n: int, word: str, many: Optional[str] = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def left_out_words(left_out: dict, include_flag: str) -> str:
    """`12 custom gradients that keras defines were made and left out, as the framework's own
    (record them with FLAG=keras)`, or "" when nothing was left out."""
    if not left_out:
        return ""
    parts = [f"{_plural(n, 'custom gradient')} that {package} defines" for package, n in
             sorted(left_out.items())]
    made = sum(left_out.values())
    return (f"{', '.join(parts)} {'was' if made == 1 else 'were'} made and left out, as the "
            f"framework's own (record them with {include_flag}={','.join(sorted(left_out))})")


def summary_line(folder: str, functions: list[dict], dropped: dict, tests: int,
                 write_error: str = "", unwritten: int = 0, processes: int = 1,
                 left_out: Optional[dict] = None,
                 include_flag: str = "--harness-record-include") -> str:
    """The session's last line, from its functions as written (one process's, or all of a
    session's); shared by the plugin's controller, which reads its workers' files."""
    plural = _plural
    framework = left_out_words(left_out or {}, include_flag)
    if not functions:
        if framework:
            return (f"harness record: no custom-gradient function of the code under test called "
                    f"in {folder}: {framework}" + _lost(write_error, unwritten))
        text = f"harness record: no custom-gradient function called in {folder}"
        if tests:
            text += (f": {plural(tests, 'test')} ran, and none called one through "
                     f"{', '.join(ROUTES)}")
        return text + _lost(write_error, unwritten)
    points = sum(len(f["points"]) for f in functions)
    drawn = sum(1 for f in functions for p in f["points"]
                if any("spec" in a for a in p["args"]) or "note" in p)
    total, over = dropped.get("points_over_total", 0), dropped.get("values_over_bytes", 0)
    parts = [what for n, what in (
        (total, f"{plural(total, 'point')} over the total limit"),
        (over, f"the values of {plural(over, 'point')} over the byte limit (kept as "
               f"{'a signature' if over == 1 else 'signatures'})")) if n]
    text = (f"harness record: {plural(len(functions), 'custom-gradient function')} called, "
            f"{plural(points, 'point')} kept ({drawn} without values, to be replayed at drawn "
            f"values) in {folder}")
    if parts:
        text += f"; dropped: {', '.join(parts)}"
    elif not write_error:
        text += "; nothing dropped"
    uncopied = dropped.get("functions_not_copied", 0)
    if uncopied:
        text += (f"; {plural(uncopied, 'closure')} could not be copied "
                 f"(replay skips {'them' if uncopied != 1 else 'it'}, saying why)")
    if framework:
        text += f"; {framework}"
    return text + _lost(write_error, unwritten)


def folder_summary(folder: str, session: Optional[Session] = None,
                   include_flag: str = "--harness-record-include") -> str:
    """The summary of every process of a session, read from their files: under xdist, or the
    record command, the tests ran in other processes; `session` is this process's own, whose
    write error (if any) is added."""
    try:
        data = store.read(folder)
    except store.RecordError:
        data = {"sessions": [], "functions": []}
    dropped: dict = {}
    left_out: dict = {}
    for process in data["sessions"]:
        for k, v in (process.get("dropped") or {}).items():
            dropped[k] = dropped.get(k, 0) + v
        for k, v in (process.get("left_out") or {}).items():
            left_out[k] = left_out.get(k, 0) + v
    # Counted as replay counts them: one function per definition, its points the K it replays.
    functions = merging.merged(data) if data["sessions"] else []
    tests = sum(p.get("tests", 0) for p in data["sessions"])
    processes = len(data["sessions"])
    line = summary_line(folder, functions, dropped, tests,
                        session.write_error if session else "", session.unwritten if session else 0,
                        left_out=left_out, include_flag=include_flag)
    return line + (f" ({processes} processes wrote their files)" if processes > 1 else "")


def _lost(write_error: str, unwritten: int) -> str:
    if not write_error:
        return ""
    return (f"; could not write the recording ({write_error}): "
            f"{unwritten} point{'s' if unwritten != 1 else ''} recorded since the last write "
            f"{'is' if unwritten == 1 else 'are'} lost")


def _ranks_below(points: Sequence[dict], traced: bool, rank: tuple) -> bool:
    """Whether a call of this rank (`traced`: seen only while tracing, or values over the byte
    limit) ranks below the highest of the kept `points`, so takes its place."""
    return (int(traced), tuple(rank)) < max(merging.order_of(p)[:2] for p in points)


_without_values = merging.without_values


def _key(described) -> str:
    """What tells two calls' arguments apart: their entries, and their values' bytes."""
    entry, value = described
    if value is None:
        return repr(sorted(entry.items()))
    return f"{value.dtype.name}{value.shape}" + hashlib.sha1(value.tobytes()).hexdigest()


def _takes_variables(grad_fn: Callable) -> bool:
    try:
        parameters = inspect.signature(grad_fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "variables" or p.kind is p.VAR_KEYWORD for p in parameters)


def _describe(value: Any) -> tuple[dict, Optional[np.ndarray]]:
    """(the JSON entry of an argument, its value to store or None)."""
    name = type(value).__name__
    if value is None or isinstance(value, (bool, int, float, str)):
        return store.python_entry(value), None
    if isinstance(value, (np.ndarray, np.generic)):
        array = _saveable(np.asarray(value))
        if array is None:
            return {"unsupported": f"a NumPy array of {np.asarray(value).dtype.name} objects"}, None
        return {"spec": {"dtype": array.dtype.name, "shape": list(array.shape)}}, array
    if (name in ("EagerTensor", "ResourceVariable", "UninitializedVariable")
        or hasattr(value, "_numpy") or serial.is_variable(value)):
        # A tensor with a value, or a variable (TensorFlow's or Keras 3's) passed as an argument:
        # its value at the call, as the function reads it (a Keras variable through the layer's
        # autocast: bfloat16 under a mixed-precision policy). The function reads it anyway, so
        # reading it here changes nothing custom_gradient sees.
        try:
            array = _saveable(np.asarray(value.numpy()))
        except Exception:  # noqa: BLE001 - a variable read inside a trace: its signature only
            array = None
        dtype = getattr(value, "dtype", None)
        dtype = getattr(dtype, "name", dtype if isinstance(dtype, str) else None)
        shape = getattr(value, "shape", None)
        rank = getattr(shape, "rank", len(shape) if isinstance(shape, tuple) else None)
        spec = {"spec": {"dtype": dtype,
                         "shape": None if shape is None or rank is None else list(shape)}}
        return spec, array
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    # a graph tensor: no value while tracing
    if hasattr(dtype, "as_numpy_dtype") and shape is not None:
        return {"spec": {"dtype": dtype.name,
                         "shape": None if shape.rank is None else shape.as_list()}}, None
    return {"unsupported": f"a {name} object"}, None


def _instances(source: Optional[Callable]) -> tuple:
    """Which objects (a layer's self) and plain values a call's closure held: two layer instances
    called with the same arguments are two points, each with its own weights."""
    cells = identity._cells(source) if isinstance(source, types.FunctionType) else {}
    return tuple(sorted((name, id(value) if identity._is_object(value)
                         else identity._fingerprint_part(name, value)[0])
                        for name, value in cells.items()))


def _saveable(array: np.ndarray) -> Optional[np.ndarray]:
    """`array` as a .npy file holds it without pickling: a string tensor's object array of bytes
    as fixed-width bytes; None for objects of any other kind."""
    if array.dtype != object:
        return array
    if all(isinstance(v, bytes) for v in array.ravel()):
        return array.astype(np.bytes_) if array.size else np.zeros(array.shape, np.bytes_)
    return None


def _variable(v, store_array, over: bool) -> dict:
    entry = {"name": getattr(v, "name", ""),
             "dtype": getattr(getattr(v, "dtype", None), "name", ""), "shape": None,
             "trainable": bool(getattr(v, "trainable", True))}
    try:
        entry["shape"] = list(v.shape)
    except (TypeError, ValueError):
        pass
    if not over:
        try:
            import tensorflow as tf  # noqa: PLC0415

            with tf.init_scope():
                entry["value"] = store_array(np.asarray(v.numpy()))
        except Exception:  # noqa: BLE001 - a v1 graph variable has no value outside a session
            pass
    return entry


def _flat_inputs(args: tuple, kwargs: dict) -> list:
    """The inputs as custom_gradient counts them: flattened, composite tensors as the tensors they
    are made of, and a Keras 3 variable as the TensorFlow variable it holds (its value is recorded
    as the argument's)."""
    given = list(args) + list(kwargs.values())
    given += [vars(a)["_value"] for a in given
              if serial.is_variable(a) and "_value" in getattr(a, "__dict__", {})]
    try:
        from tensorflow.python.framework import composite_tensor_gradient  # noqa: PLC0415
        from tensorflow.python.util import nest  # noqa: PLC0415

        return given + list(composite_tensor_gradient.get_flat_tensors_for_gradients(
            nest.flatten(given)))
    except Exception:  # noqa: BLE001 - another TensorFlow: the arguments as given
        return given


def _watcher():
    try:
        # what custom_gradient itself uses
        from tensorflow.python.eager import record  # noqa: PLC0415

        return record.VariableWatcher()
    except Exception:  # noqa: BLE001 - another TensorFlow: variables are not recorded
        return None


# -- installing -------------------------------------------------------------------------------

def _recording(f: Optional[Callable] = None):
    session, real = _state["session"], _state["real"]
    if f is None:  # used as @tf.custom_gradient()
        return _recording
    return session.decorate(real, f)


def _patch(tf_module) -> None:
    """Every module attribute bound to TensorFlow's custom_gradient becomes the recording one."""
    defining = sys.modules.get(_DEFINING_MODULE)
    real = getattr(defining, "custom_gradient", None) if defining else tf_module.custom_gradient
    if real is _recording:
        return
    if _state["real"] is None:
        _state["real"] = real
    for attribute in ("__doc__", "__name__", "__qualname__"):
        setattr(_recording, attribute, getattr(real, attribute, None))
    _recording.__wrapped__ = real
    for module in list(sys.modules.values()):
        holder = getattr(module, "__dict__", None)
        if not isinstance(holder, dict) or not isinstance(module, types.ModuleType):
            continue
        for name, value in list(holder.items()):
            if value is real:
                setattr(module, name, _recording)


class _Finder(importlib.abc.MetaPathFinder):
    """Patches TensorFlow the moment its import finishes."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module):
            run(module)
            try:
                _patch(module)
                _start_eager(_state["session"])
            except Exception as e:  # noqa: BLE001
                _state["session"].stop(e)

        loader.exec_module = exec_module
        return spec


def _start_eager(session: Session) -> None:
    if session is not None and session.eager:
        import tensorflow as tf  # noqa: PLC0415 - imported: this runs as its import finishes

        tf.config.run_functions_eagerly(True)


def install(session: Session) -> None:
    """Records every later `@tf.custom_gradient` into `session`."""
    _state["session"] = session
    tf_module = sys.modules.get("tensorflow")
    if tf_module is not None and hasattr(tf_module, "custom_gradient"):
        _patch(tf_module)
        _start_eager(session)
    elif _state["finder"] is None:
        _state["finder"] = _Finder()
        sys.meta_path.insert(0, _state["finder"])


def installed_session() -> Optional[Session]:
    return _state["session"]
