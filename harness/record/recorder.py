"""The recorder: a hook around `tf.custom_gradient` that keeps a few calls of every function it decorates.

`install(session)` makes `tensorflow`'s `custom_gradient` (also as `tf.compat.v1` and
`tf.compat.v2` have it) the recording one: at once where TensorFlow is already imported, else
the moment its import finishes (an import hook), so a module that decorates at import time is
seen and a process that never imports TensorFlow never pays for it.

Like harness.probe, the hook hands TensorFlow's own decorator a forward function around the
user's: TensorFlow does everything it did before, and the forward function, after calling the
user's function once as before, notes the call: eager arguments by value, arguments seen while
tracing (tf.function, model.fit, a v1 graph) by dtype and shape only, since they have no value
then. Adding a host callback to read them would change the user's graph (XLA and SavedModel
refuse one), so those points are replayed at drawn values, labelled so. Once a function has its
K points, a call costs a counter increment.

Any failure of the recorder's own code stops the recording with one warning line on stderr and
leaves the call, and the test session, to go on as without it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.abc
import importlib.util
import inspect
import os
import platform
import sys
import time
from typing import Any, Callable, Optional

import numpy as np

from harness.record import serial, store

__all__ = ["Session", "install", "installed_session"]

_state: dict = {"session": None, "real": None, "finder": None}


def _root(module: str, file: str) -> str:
    """The sys.path entry `module` was imported from: `file`'s folder less one level per dot."""
    folder = os.path.dirname(os.path.abspath(file))
    if os.path.basename(file) == "__init__.py":
        folder = os.path.dirname(folder)
    for _ in range(module.count(".")):
        folder = os.path.dirname(folder)
    return folder


class _Function:
    """What is kept of one decorated function (one per code object: a factory's closures are one)."""

    def __init__(self, f: Callable):
        code = getattr(f, "__code__", None)
        self.f = f
        self.module = getattr(f, "__module__", None) or "__main__"
        self.qualname = getattr(f, "__qualname__", None) or getattr(f, "__name__", type(f).__name__)
        self.file = code.co_filename if code else (inspect.getsourcefile(f) or "")
        self.line = code.co_firstlineno if code else 0
        self.calls = 0
        self.points: list[dict] = []
        self.keys: set = set()
        self.bytes = 0
        self.grad_takes_variables = False
        self.copies: dict = {}  # closure fingerprint -> serialised copy (or why there is none)
        try:
            self.parameters = [p.name for p in inspect.signature(f).parameters.values()
                               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            self.parameters = []

    @property
    def converted(self) -> bool:
        """Whether this is AutoGraph's conversion of a function (defined inside one it converted)."""
        return "tf__" in self.qualname

    def as_dict(self) -> dict:
        return {"module": self.module, "qualname": _plain_name(self.qualname), "file": self.file, "line": self.line,
                "autograph": self.converted,
                "root": _root(self.module, self.file) if self.file else "", "calls": self.calls,
                "grad_takes_variables": self.grad_takes_variables, "importable": self.importable(),
                "parameters": self.parameters,
                "points": self.points}

    def importable(self) -> bool:
        """Whether the module's attribute of this name is this function, decorated."""
        if self.module == "__main__" or "<" in self.qualname:
            return False
        found = serial.resolve(self.module, self.qualname)
        return found is not None and getattr(inspect.unwrap(found), "__code__", None) is getattr(self.f, "__code__", 0)


class Session:
    """One process's recording: its functions, limits, what was dropped, and the current test."""

    def __init__(self, folder: str, limits: store.Limits = store.Limits(), command: str = ""):
        self.folder = folder
        self.limits = limits
        self.command = command
        self.node = ""  # the test running now ("" outside any test: collection, a script)
        self.functions: dict[Any, _Function] = {}
        self.arrays: dict[str, np.ndarray] = {}
        self.points = 0
        self.bytes = 0
        self.dropped = {"points_over_total": 0, "values_over_bytes": 0, "functions_not_copied": 0}
        self.stopped = ""  # why recording stopped, once it has
        self.started = time.time()
        self.written: Optional[str] = None
        # Under pytest, output during a test is captured: the plugin says it in the summary instead.
        self.say_stopped_at_once = True

    # -- the hook ---------------------------------------------------------------------------

    def decorate(self, real: Callable, f: Callable) -> Callable:
        """`real(f)` as TensorFlow gives it, with a forward function that records `f`'s calls."""
        try:
            key = getattr(f, "__code__", None) or f
            function = self.functions.get(key)
            if function is None:
                function = self.functions[key] = _Function(f)
        except Exception as e:  # noqa: BLE001 - the recorder's own failure must not be the user's
            self.stop(e)
            return real(f)
        session = self

        @functools.wraps(f)
        def forward(*args, **kwargs):
            if session.stopped:
                return f(*args, **kwargs)
            function.calls += 1
            if len(function.points) >= session.limits.points:
                return f(*args, **kwargs)
            watcher = _watcher()
            if watcher is None:
                result = f(*args, **kwargs)
                variables = ()
            else:
                with watcher:
                    result = f(*args, **kwargs)
                variables = watcher.watched_variables()
            try:
                session.record(function, f, args, kwargs, variables, result)
            except Exception as e:  # noqa: BLE001
                session.stop(e)
            return result

        return real(forward)

    def stop(self, error: BaseException) -> None:
        if not self.stopped:
            self.stopped = f"{type(error).__name__}: {error}"
            if self.say_stopped_at_once:
                sys.stderr.write(self.stopped_line() + "\n")

    def stopped_line(self) -> str:
        return (f"harness record: warning: recording stopped ({self.stopped}); the tests went on, and what was "
                "recorded before is kept")

    # -- one call ---------------------------------------------------------------------------

    def _store(self, value: np.ndarray) -> dict:
        name = f"{os.getpid()}-{len(self.arrays)}.npy"
        self.arrays[name] = value
        return {"array": f"values/{name}", "dtype": value.dtype.name, "shape": list(value.shape)}

    def record(self, function: _Function, f: Callable, args: tuple, kwargs: dict, variables, result) -> None:
        import tensorflow as tf  # noqa: PLC0415 - already imported: the hook runs inside TensorFlow

        eager = tf.executing_eagerly()
        if not eager:
            graph = tf.compat.v1.get_default_graph()
            context = "tf.function" if type(graph).__name__ == "FuncGraph" else "v1 graph"
        else:
            context = "eager"
        if isinstance(result, tuple) and len(result) == 2 and callable(result[1]):
            function.grad_takes_variables = function.grad_takes_variables or _takes_variables(result[1])
        described = [_describe(a) for a in args]
        kw_described = {k: _describe(v) for k, v in kwargs.items()}
        key = (context, tuple(_key(d) for d in described), tuple(sorted((k, _key(d)) for k, d in kw_described.items())),
               _fingerprint(f))
        if key in function.keys:
            return
        function.keys.add(key)
        if self.points >= self.limits.total_points:
            self.dropped["points_over_total"] += 1
            return
        size = sum(d[1].nbytes for d in list(described) + list(kw_described.values()) if d[1] is not None)
        over = (function.bytes + size > self.limits.function_bytes or self.bytes + size > self.limits.total_bytes)
        point = {"context": context, "node": self.node,
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
            point["function"] = self._copy(function, f)
        function.points.append(point)
        self.points += 1

    def _entry(self, described, over: bool) -> dict:
        entry, value = described
        if value is not None and not over:
            return self._store(value)
        return entry

    def _copy(self, function: _Function, f: Callable) -> dict:
        fingerprint = _fingerprint(f)
        if fingerprint not in function.copies:
            try:
                function.copies[fingerprint] = {"copy": serial.dump_function(f, self._store)}
            except Exception as e:  # noqa: BLE001 - any value it meets: said on replay
                self.dropped["functions_not_copied"] += 1
                function.copies[fingerprint] = {"problem": str(e) if isinstance(e, serial.Unserialisable)
                                                else f"{type(e).__name__}: {e}"}
        return function.copies[fingerprint]

    # -- the end ----------------------------------------------------------------------------

    def summary(self) -> str:
        """One line: what was recorded where, and what was dropped."""
        called = _merged([f.as_dict() for f in self.functions.values() if f.calls], self.limits.points)
        points = sum(len(f["points"]) for f in called)
        drawn = sum(1 for f in called for p in f["points"] if any("spec" in a for a in p["args"]) or "note" in p)
        total, over = self.dropped["points_over_total"], self.dropped["values_over_bytes"]
        dropped = ", ".join(what for n, what in (
            (total, f"{total} point{'s' if total != 1 else ''} over the total limit"),
            (over, f"the values of {over} point{'s' if over != 1 else ''} over the byte limit (kept as "
                   f"signature{'s' if over != 1 else ''})")) if n)
        text = (f"harness record: {len(called)} custom-gradient function{'s' if len(called) != 1 else ''} called, "
                f"{points} point{'s' if points != 1 else ''} kept ({drawn} without values, to be replayed at drawn "
                f"values) in {self.folder}")
        text += f"; dropped: {dropped}" if dropped else "; nothing dropped"
        uncopied = self.dropped["functions_not_copied"]
        if uncopied:
            text += (f"; {uncopied} closure{'s' if uncopied != 1 else ''} could not be copied "
                     f"(replay skips {'them' if uncopied != 1 else 'it'}, saying why)")
        return text

    def write(self) -> str:
        import tensorflow as tf  # noqa: PLC0415 - only called once a function was decorated

        data = {"tensorflow": tf.version.VERSION, "python": platform.python_version(), "command": self.command,
                "started": self.started, "limits": dataclasses.asdict(self.limits),
                "dropped": dict(self.dropped), "stopped": self.stopped,
                "functions": _merged([f.as_dict() for f in self.functions.values() if f.calls], self.limits.points)}
        self.written = str(store.write(self.folder, data, self.arrays))
        return self.written


def _plain_name(qualname: str) -> str:
    """The qualname of the function AutoGraph converted, for its converted copy's: AutoGraph wraps
    the conversion in two factories and prefixes each converted function with "tf__"."""
    factories = "outer_factory.<locals>.inner_factory.<locals>."
    if factories in qualname:
        qualname = qualname.split(factories, 1)[1]
    return ".".join(part[4:] if part.startswith("tf__") else part for part in qualname.split("."))


def _merged(functions: list[dict], limit: int) -> list[dict]:
    """AutoGraph's converted copies under the function they convert: a converted method's name
    lacks its class, so a converted "call._g" goes with "DoReFa.call._g" of the same module.
    The original's points come first, then the converted ones', up to `limit`."""
    originals = [f for f in functions if not f["autograph"]]
    kept = list(originals)
    for f in (f for f in functions if f["autograph"]):
        home = next((o for o in originals if o["module"] == f["module"] and
                     (o["qualname"] == f["qualname"] or o["qualname"].endswith("." + f["qualname"]))), None)
        if home is None:
            kept.append(f)
        else:
            home["calls"] += f["calls"]
            home["points"] = (home["points"] + [_unconverted(p, home) for p in f["points"]])[:limit]
    return kept


def _closure(copy: dict) -> dict:
    return dict(zip(copy.get("freevars", ()), copy.get("closure", ())))


def _unconverted(point: dict, home: dict) -> dict:
    """A converted function's point with the original's copy in place of AutoGraph's code, where the
    original's closure holds the same values (AutoGraph's own, such as ag__, aside)."""
    copy = (point.get("function") or {}).get("copy")
    if copy is None:
        return point
    values = _closure(copy)
    for other in home["points"]:
        original = (other.get("function") or {}).get("copy")
        if original is not None and all(values.get(k) == v for k, v in _closure(original).items()):
            return dict(point, function=other["function"])
    return point


def _key(described) -> str:
    """What tells two calls' arguments apart: their entries, and their values' bytes."""
    entry, value = described
    if value is None:
        return repr(entry)
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
        return {"python": value}, None
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        return {"spec": {"dtype": array.dtype.name, "shape": list(array.shape)}}, array
    if name in ("EagerTensor", "ResourceVariable", "UninitializedVariable") or hasattr(value, "_numpy"):
        try:
            array = np.asarray(value.numpy())
        except Exception:  # noqa: BLE001 - a variable read inside a trace: its signature only
            array = None
        dtype = getattr(getattr(value, "dtype", None), "name", None)
        shape = getattr(value, "shape", None)
        spec = {"spec": {"dtype": dtype, "shape": None if shape is None or shape.rank is None else list(shape)}}
        return spec, array
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if hasattr(dtype, "as_numpy_dtype") and shape is not None:  # a graph tensor: no value while tracing
        return {"spec": {"dtype": dtype.name, "shape": None if shape.rank is None else shape.as_list()}}, None
    return {"unsupported": f"a {name} object"}, None


def _variable(v, store_array, over: bool) -> dict:
    entry = {"name": getattr(v, "name", ""), "dtype": getattr(getattr(v, "dtype", None), "name", ""),
             "shape": None}
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


def _fingerprint(f: Callable) -> str:
    """The closure's plain values, so a factory's functions with different ones are told apart."""
    parts = []
    for cell in getattr(f, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            parts.append("<empty>")
            continue
        if value is None or isinstance(value, (bool, int, float, str, complex)):
            parts.append(repr(value))
        elif isinstance(value, np.ndarray) and value.size <= 64:
            parts.append(f"{value.dtype}{value.shape}{value.tobytes().hex()}")
        else:
            parts.append(type(value).__qualname__)
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:12] if parts else ""


def _watcher():
    try:
        from tensorflow.python.eager import record  # noqa: PLC0415 - what custom_gradient itself uses

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
    if _state["real"] is None:
        _state["real"] = tf_module.custom_gradient
    functools.update_wrapper(_recording, _state["real"])
    for holder in (tf_module, getattr(getattr(tf_module, "compat", None), "v1", None),
                   getattr(getattr(tf_module, "compat", None), "v2", None)):
        if holder is not None:
            holder.custom_gradient = _recording


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
            except Exception as e:  # noqa: BLE001
                _state["session"].stop(e)

        loader.exec_module = exec_module
        return spec


def install(session: Session) -> None:
    """Records every later `@tf.custom_gradient` into `session`."""
    _state["session"] = session
    tf_module = sys.modules.get("tensorflow")
    if tf_module is not None and hasattr(tf_module, "custom_gradient"):
        _patch(tf_module)
    elif _state["finder"] is None:
        _state["finder"] = _Finder()
        sys.meta_path.insert(0, _state["finder"])


def installed_session() -> Optional[Session]:
    return _state["session"]
