"""The recorded functions as Cases: built in a worker, run and judged as any case.

One case per recorded function, `recorded.<module>.<qualname>` (`<locals>` left out, a lambda
named `lambda`), with one point per recorded call. A function is replayed

- by import, where its module's attribute of that name was the decorated function when recorded
  (the module is imported afresh, from the sys.path root it was imported from then);
- else from its copy (harness.record.serial): its code and closure values made into a function
  again over its module's globals, and decorated with `tf.custom_gradient` here. A factory's
  closures with different values are one case each, the later ones `..._2`, `..._3`;
- else not at all: a case whose every mode is skipped with the reason, so nothing recorded is
  dropped silently.

A point's tensor arguments (recorded values, or values drawn for a call seen only while tracing)
are the point's arguments; Python scalars and keyword arguments are passed as recorded, and
shown in the label. Labels are `point_label`'s, with `drawn:` in front of a drawn point's and
`#2`, `#3` after a label an earlier point of the case already has. Each point's note names the
test that first made the call.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import os
import re
import sys
import types
import zlib
from typing import Any, Callable, Optional, Sequence

import numpy as np

from harness import mode_names
from harness.case import Case, CaseError, Expectation, Point, point_label
from harness.record import identity, merging, serial, store

__all__ = ["DRAWN", "cases"]

# Where a value is drawn for a call seen only while tracing: a dimension the trace left open is
# this long, and elements are uniform in this interval (integers: 0 to 3).
_OPEN_DIMENSION = 2
DRAWN = (-2.0, 2.0)
# Where most of a point drawn in DRAWN is outside the function's domain (NaN or infinite values),
# these are tried in turn: positive values, then (0, 1) (a probability, a fraction).
OTHER_RANGES = ((0.0, 2.0), (0.0, 1.0))
# The most elements one drawn value holds (the recording's byte limit of one function, in float32).
DRAW_BUDGET = 1 << 20


def _case_id(module: str, qualname: str) -> str:
    parts = [p for p in f"{module}.{qualname}".replace("<lambda>", "lambda").split(".") if p and p
             != "<locals>"]
    parts = [re.sub(r"\W", "_", p) for p in parts]
    return "recorded." + ".".join(p if not p[0].isdigit() else f"_{p}" for p in parts)


def _node(point: dict) -> str:
    node = point.get("node") or ""
    return node or "code outside any test (an import, a fixture or the script itself)"


@dataclasses.dataclass(frozen=True)
class _Known:
    """What the recording knows of one argument of a function, to draw a value it had no value for:
    the range of the values recorded for it, and the dimensions of the other arguments (an integer
    argument may index them)."""

    low: Optional[float] = None
    high: Optional[float] = None
    dimensions: tuple = ()


def _known(record: dict, loader: "_Loader", index: int, point: dict) -> _Known:
    values = []
    for other in record["points"]:
        args = other["args"]
        if index < len(args) and "array" in args[index]:
            try:
                array = np.asarray(loader.array(args[index]))
            except _Missing:
                continue
            if array.size and array.dtype.kind in "fiu":
                finite = array[np.isfinite(array.astype(np.float64))]
                values += [float(finite.min()), float(finite.max())] if finite.size else []
    dimensions = set()
    for i, entry in enumerate(point["args"]):
        shape = entry.get("shape") if "array" in entry else (entry.get("spec") or {}).get("shape")
        if i != index and shape:
            dimensions.update(_OPEN_DIMENSION if d is None else d for d in shape)
    return _Known(low=min(values) if values else None, high=max(values) if values else None,
                  dimensions=tuple(sorted(d for d in dimensions if d and d > 1)))


def _numpy_dtype(name: str):
    try:
        return np.dtype(name)
    # Bfloat16 and the like: NumPy's through ml_dtypes, which comes with TensorFlow.
    except TypeError:
        import ml_dtypes  # noqa: PLC0415

        return np.dtype(getattr(ml_dtypes, name))


class _OverBudget(ValueError):
    """A drawn stand-in would be larger than replay draws: the point is skipped, saying so."""


def _draw(spec: dict, seed: int, known: _Known = _Known(),
          interval: tuple = DRAWN) -> tuple[np.ndarray, str]:
    """A value for an argument seen only while tracing (or too large to record), and how it was
    drawn, in words; a float with nothing recorded is drawn from `interval`.

    Raises:
      _OverBudget: it would hold more than DRAW_BUDGET elements.
    """
    dtype = _numpy_dtype(spec["dtype"])
    shape = tuple(_OPEN_DIMENSION if d is None else d for d in (spec["shape"] or []))
    size = int(np.prod(shape, dtype=np.int64))
    if size > DRAW_BUDGET:
        raise _OverBudget(f"a stand-in would hold {size:,} elements (shape {list(shape)}), over "
                          f"the {DRAW_BUDGET:,} replay draws at most, and its own values were not "
                          "recorded (over the recording's byte limit, or seen only while tracing)")
    rng = np.random.default_rng(seed)
    kind = np.dtype(dtype).kind if np.dtype(dtype).kind in "biufc" else "f"
    if kind == "b":
        return rng.integers(0, 2, size=shape).astype(dtype), "booleans drawn at random"
    if kind in "iu":
        if known.low is not None:
            low, high = int(np.floor(known.low)), int(np.floor(known.high))
            return (rng.integers(low, high + 1, size=shape).astype(dtype),
                    f"integers in [{low}, {high}], the range of its recorded values")
        bound = known.dimensions[0] if known.dimensions else 2
        why = (
            "the smallest dimension of the other arguments, which it may index"
            if known.dimensions
            else "nothing recorded to bound it"
        )
        return rng.integers(0, bound, size=shape).astype(dtype), f"integers in [0, {bound}) ({why})"
    low, high = (known.low, known.high) if known.low is not None else interval
    why = ("the range of its recorded values" if known.low is not None
           else "nothing recorded to draw from")
    values = rng.uniform(low, high, size=shape)
    if kind == "c":
        values = values + 1j * rng.uniform(low, high, size=shape)
    return np.asarray(values).astype(dtype), f"uniform in [{low:.6g}, {high:.6g}] ({why})"


def _names(record: dict, fn: Optional[Callable], count: int) -> list[str]:
    """The arguments' names: the user's function's parameters as recorded (a library decorator's
    inner function takes *args), else the replayed function's, else arg0, arg1, ..."""
    recorded = list(record.get("parameters") or [])
    if record.get("parameters_exact") and len(recorded) != count:
        recorded = []  # a decorator's forward, called with other arguments: its names do not fit
    if len(recorded) >= count:
        return recorded[:count]
    if fn is not None:
        return _parameter_names(fn, count)
    return recorded + [f"arg{i}" for i in range(len(recorded), count)]


def _parameter_names(fn: Callable, count: int) -> list[str]:
    try:
        parameters = [p for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        parameters = []
    names = [p.name for p in parameters][:count]
    return names + [f"arg{i}" for i in range(len(names), count)]


class _Loader:
    """Imports a recorded function's module, once, from the root it was imported from."""

    def __init__(self, folder: str):
        self.folder = folder
        self.modules: dict = {}
        self.scripts: set = set()  # the scripts whose top level ran again here

    def module(self, record: dict):
        name = record["module"]
        if name in self.modules:
            return self.modules[name]
        root = record.get("root") or ""
        if root and os.path.isdir(root) and root not in sys.path:
            sys.path.append(root)
        try:
            if name == "__main__":
                raise ImportError("it was defined in a script run as __main__")
            found = importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - any import-time failure: try the file itself
            file = record.get("file") or ""
            if not file.endswith(".py") or not os.path.isfile(file):
                found = (
                    f"cannot import {name} ({type(e).__name__}: {e}), and its file {file or '?'} is"
                    " not there"
                )
            else:
                found = _script(name, file, record.get("argv"), e)
                self.scripts.add(name)
        self.modules[name] = found
        return found

    def array(self, entry: dict) -> np.ndarray:
        path = os.path.join(self.folder, str(entry["array"]))
        if not os.path.isfile(path):
            raise _Missing(f"{entry['array']} is not in {self.folder}: removed after recording, "
                           "or never written")
        try:
            value = store.load_array(self.folder, entry)
        except Exception as e:  # noqa: BLE001 - any unreadable file costs its points alone
            raise _Damaged(f"the recording's file {entry['array']} is damaged "
                           f"({type(e).__name__}: {e})") from None
        shape = entry.get("shape")
        if shape is not None and list(np.shape(value)) != list(shape):
            raise _Damaged(f"the recording's file {entry['array']} is damaged: it holds shape "
                           f"{list(np.shape(value))} where the recording says {list(shape)}")
        held = np.asarray(value).dtype
        if entry.get("dtype") in _NUMERIC and held.kind in "fiucb" and held.name != entry["dtype"]:
            raise _Damaged(f"the recording's file {entry['array']} is damaged: it holds "
                           f"{np.asarray(value).dtype.name} where the recording says "
                           f"{entry['dtype']}")
        return value


# The dtypes a value file holds as the recording names them (a string tensor's and bfloat16's
# files hold other dtypes, by design, so they are not compared).
_NUMERIC = frozenset(("bool", "float16", "float32", "float64", "complex64", "complex128", "int8",
                      "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"))


def _script(name: str, file: str, argv: Optional[Sequence[str]], why: Exception):
    """The module a script (or a file that cannot be imported by name) defines its functions in:
    its top level run again, under a name that is not `__main__` (so its `if __name__ ==
    "__main__":` block does not run) and with the argv it was recorded with (so that argparse
    or sys.argv[1] read what they read then), the worker's own argv put back after; or why it
    cannot be (an exception, or a SystemExit, while its top level ran)."""
    from harness import loader  # noqa: PLC0415

    saved = sys.argv
    sys.argv = [str(a) for a in argv] if argv else [file]
    try:
        return loader.load_module(file)
    except loader.LoadError as load_error:
        return f"cannot import {name} ({type(why).__name__}: {why}) nor load {file} ({load_error})"
    except SystemExit as e:
        return (f"running the top level of {file} to define its functions exited (SystemExit "
                f"{e.code}) with the argv it was recorded with ({' '.join(sys.argv)})")
    finally:
        sys.argv = saved


class _Missing(OSError):
    """A recorded value's file is not there: it costs the points that use it."""


class _Damaged(_Missing):
    """A recorded value's file cannot be read as the recording says (truncated, overwritten):
    it costs the points that use it, as a missing one does."""


_NOT_FOUND = ("which replay finds neither in its closure (a layer it holds, that layer's "
              "attributes) nor among its module's globals; write a case with build= creating them "
              "and wrt_variables=True")


def _bare(name: str) -> str:
    return str(name).split(":")[0]


def _function(record: dict, copy: Optional[dict], loader: _Loader,
              variables: Sequence[dict] = ()) -> tuple[Optional[Callable[[], Any]], str]:
    """(a maker of the decorated function to replay, "") or (None, why it cannot be).

    With `variables` (those the function read when recorded) the maker makes them again, at their
    recorded values, each time it is called: a builder's work, done in each mode's own graph or
    context; else it hands out one function made here."""
    if record.get("autograph"):
        return None, ("it was seen only as AutoGraph's conversion of it (called inside a "
                      "tf.function or model.fit), and the source function that conversion came "
                      "from was not found; a test that calls it once outside tf.function records "
                      "the source function")
    own = copy is not None and "copy" in copy and copy["copy"].get("globals") is not None
    module = loader.module(record) if not own else None
    if isinstance(module, str):
        return None, module
    if record.get("importable"):
        found = module
        for part in record["qualname"].split("."):
            found = getattr(found, part, None)
        if not callable(found):
            return None, f"{record['module']} has no {record['qualname']} now"
        return _over_fresh_globals(found, variables, loader) if variables else ((lambda: found), "")
    if copy is None or "problem" in copy:
        why = copy["problem"] if copy else "no copy of it was kept"
        return None, ("it cannot be imported by name (defined inside a function: a closure, a "
                      f"factory's, or a test's own) and could not be copied: {why}")
    return _from_copy(record, copy["copy"], module, loader, variables)


def _from_copy(record: dict, copy: dict, module, loader: _Loader,
               variables: Sequence[dict]) -> tuple[Optional[Callable[[], Any]], str]:
    import tensorflow as tf  # noqa: PLC0415

    fresh = _Globals(vars(module) if module is not None else {}, variables, loader)

    def globals_of(entry: dict) -> dict:
        if entry["module"] == record["module"] and module is not None:
            return fresh.made() if variables else vars(module)
        other = loader.module({"module": entry["module"], "file": entry.get("file"),
                               "root": record.get("root")})
        if isinstance(other, str):
            raise serial.Unserialisable(other)
        return vars(other)

    def made():
        return tf.custom_gradient(serial.load_function(copy, loader.array, globals_of))

    problem = fresh.problem(_copied_variables(copy)) if variables else ""
    if problem:
        return None, problem
    try:
        first = made()
    except Exception as e:  # noqa: BLE001
        why = str(e) if isinstance(e, serial.Unserialisable) else f"{type(e).__name__}: {e}"
        return None, f"its copy cannot be made again: {why}"
    if variables or serial.holds(copy, ("tensor", "variable")):
        # Made again in each mode's own graph or context: a captured eager tensor is a constant of
        # that graph there, as tf.function makes it, and a variable is that mode's own.
        made.per_mode = True
        return made, ""
    return (lambda: first), ""


def _copied_variables(entry: Any) -> set:
    """The names of the variables a copy holds, however deep in its closure."""
    if isinstance(entry, dict):
        found = ({_bare(entry["variable"]["name"])} if isinstance(entry.get("variable"), dict)
                 else set())
        return found.union(*(_copied_variables(v) for v in entry.values()))
    if isinstance(entry, list):
        return set().union(*(_copied_variables(v) for v in entry))
    return set()


class _Globals:
    """A module's globals with the recorded variables among them made again, at their recorded
    values, each time `made()` is called (in each mode's own graph or context)."""

    def __init__(self, base: dict, variables: Sequence[dict], loader: _Loader):
        self.base, self.loader = base, loader
        self.wanted = {_bare(v["name"]): v for v in variables}
        self.held = {name: _bare(value.name) for name, value in base.items()
                     if serial.is_variable(value)
                     and _bare(getattr(value, "name", "")) in self.wanted}

    def problem(self, elsewhere: set = frozenset()) -> str:
        missing = set(self.wanted) - set(self.held.values()) - set(elsewhere)
        if missing:
            return f"it reads the variables {', '.join(sorted(missing))}, {_NOT_FOUND}"
        unread = sorted(v for v in self.held.values() if "value" not in self.wanted[v])
        if unread:
            return (f"the value of its variables {', '.join(unread)} could not be read when "
                    "recorded (a v1 graph's variable, read inside its session)")
        return ""

    def made(self) -> dict:
        import tensorflow as tf  # noqa: PLC0415

        fresh = dict(self.base)
        for name, variable in self.held.items():
            entry = self.wanted[variable]
            fresh[name] = tf.Variable(self.loader.array(entry["value"]), name=variable,
                                      trainable=entry.get("trainable", True))
        return fresh


def _over_fresh_globals(found: Callable, variables: Sequence[dict],
                        loader: _Loader) -> tuple[Optional[Callable[[], Any]], str]:
    """For a module's function that reads module-level variables: a maker of the function over a
    copy of its module's globals, those variables made again at their recorded values."""
    import tensorflow as tf  # noqa: PLC0415

    raw = identity._plain(found)
    if not isinstance(raw, types.FunctionType):
        return (
            None,
            (
                f"it reads the variables {', '.join(_bare(v['name']) for v in variables)},"
                f" {_NOT_FOUND}"
            ),
        )
    fresh = _Globals(raw.__globals__, variables, loader)
    problem = fresh.problem()
    if problem:
        return None, problem
    return (lambda: tf.custom_gradient(types.FunctionType(raw.__code__, fresh.made(), raw.__name__,
                                                          raw.__defaults__, raw.__closure__))), ""


def _constant(entry: dict) -> bool:
    """Whether an argument was a Python scalar (passed as recorded, not as a tensor)."""
    return "python" in entry or "float" in entry or "int" in entry


def _call_form(point: dict) -> str:
    """What must be the same for two points to share one function: which arguments are constants."""
    constants = [(i, repr(store.python_value(a))) for i, a in enumerate(point["args"])
                 if _constant(a)]
    kwargs = sorted((k, repr(store.python_value(a) if _constant(a)
                             else a.get("sha1", a.get("array", a.get("spec")))))
                    for k, a in point.get("kwargs", {}).items())
    return repr((len(point["args"]), constants, kwargs))


def _calling(fn: Callable, args: Sequence[dict], kwargs: dict) -> Callable:
    """`fn` taking only the point's tensor arguments, the constants and keyword arguments put
    back."""
    if not kwargs and not any(_constant(a) for a in args):
        return fn
    constants = {i: store.python_value(a) for i, a in enumerate(args) if _constant(a)}
    count = len(args)

    def call(*values):
        it = iter(values)
        return fn(*[constants[i] if i in constants else next(it) for i in range(count)], **kwargs)

    call.__name__ = getattr(fn, "__name__", "call")
    call.__qualname__ = getattr(fn, "__qualname__", "call")
    return call


def _value(entry: dict, loader: _Loader, seed: int, known: Callable[[], _Known],
           interval: tuple = DRAWN) -> tuple[Any, str]:
    """(an argument's value, how it was drawn or "" for a recorded one)."""
    if "array" in entry:
        return loader.array(entry), ""
    if "spec" in entry:
        return _draw(entry["spec"], seed, known(), interval)
    return store.python_value(entry), ""


def _skip_case(case_id: str, labels: Sequence[str], reason: str, description: str, source: str,
               notes: dict) -> Case:
    def never(x):
        raise AssertionError("a skipped recording is never run")

    points = [Point(names=("x",), values=(np.float32(0.0),), label=label) for label in labels]
    return Case(id=case_id, points=points, fn=never, description=description, source=source,
                skip_modes={m: f"cannot be replayed: {reason}" for m in mode_names.KNOWN_MODES},
                notes={k: v for k, v in notes.items() if k in labels})


def _label(names, values, kwargs: dict, drawn: bool, taken: set) -> str:
    label = point_label(names, [np.asarray(v) for v in values])
    if kwargs:
        label += "," + point_label(list(kwargs), [np.asarray(v) for v in kwargs.values()])
    return _free(f"drawn:{label}" if drawn else label, taken, "#")


def _cases_of(record: dict, loader: _Loader, order: int, expectations: Sequence[Expectation],
              taken_ids: set, twins: int = 1, per_case: Optional[Callable] = None) -> list[Case]:
    captured = ",".join(f"{name}={text}" for name, text in record.get("captured") or ())
    source = f"recorded from {record.get('file') or record['module']}:{record.get('line', 0)}"
    calls = record.get("calls", 0)
    variants = record.get("variants", 1)
    description = (f"{record['qualname']} from {record['module']}"
                   + (f", its closure over {captured}" if captured and twins > 1 else "")
                   + (f", {variants} closures over other values (each point says what its "
                      "closure held)" if variants > 1 else "")
                   + f", replayed at the points its tests called it with ({calls} "
                     f"call{'s' if calls != 1 else ''}"
                   " seen)")
    made = []
    for case_id, points in _groups(record, taken_ids):
        made += _group_case(case_id, record, points, loader, order, expectations, description,
                            source, taken_ids, per_case)
    return made


def _groups(record: dict, taken_ids: set) -> list[tuple[str, list[dict]]]:
    """(case id, points) of each group of a record's points that one function serves (points
    that pass other constants are another case, `_2`), each id now taken."""
    base = _case_id(record["module"], record["qualname"])
    groups: dict[str, list[dict]] = {}
    for point in record["points"]:
        groups.setdefault(_call_form(point), []).append(point)
    made = []
    for index, points in enumerate(groups.values()):
        case_id, n = base + (f"_{index + 1}" if index else ""), 1
        while case_id in taken_ids:
            n += 1
            case_id = f"{base}_{n}"
        taken_ids.add(case_id)
        made.append((case_id, points))
    return made


def case_codes(folder: str) -> dict[str, str]:
    """Each case id a replay of `folder` makes, with a digest of its function's code (identity's
    `site`): what an accepted entry of the reviewed file remembers, so that an xpass can say that
    the code changed. Reads no value and imports nothing of the recording; {} for no recording."""
    try:
        data = store.read(folder)
    except store.RecordError:
        return {}
    taken: set = set()
    codes = {}
    for record in merging.merged(data):
        if record["points"]:
            for case_id, _ in _groups(record, taken):
                codes[case_id] = (record.get("site") or "").partition(":")[2]
    return codes


_HOW = {"eager": "an eager call", "tf.function": "a call while tracing a tf.function",
        "v1 graph": "a call while building a v1 graph"}


def _dtypes(point: dict) -> tuple:
    return tuple(e.get("dtype") or (e.get("spec") or {}).get("dtype") for e in point["args"])


@dataclasses.dataclass
class _Built:
    """One recorded call made a Point: its note, and why it cannot be replayed ("" if it can)."""

    point: Point
    note: str
    drawn: bool
    problem: str = ""
    raw: dict = dataclasses.field(default_factory=dict)  # the recorded call
    maker: Optional[Callable] = None  # what makes its function (one per distinct copy)


def _point(record: dict, point: dict, names: Sequence[str], loader: _Loader, seed: int,
           dtyped: bool, taken: set, interval: tuple = DRAWN) -> _Built:
    tensor_names, values, shown_names, shown_values, drawn = [], [], [], [], []
    problem = ""
    for i, (name, entry) in enumerate(zip(names, point["args"])):
        # a method's self, a layer: named in the reason, not in the label
        if "unsupported" in entry:
            problem = problem or f"its argument {name} was {entry['unsupported']}, not a value"
            continue
        try:
            value, how = _value(entry, loader, seed + i,
                                lambda i=i: _known(record, loader, i, point), interval)
        except (_Missing, _OverBudget) as e:
            problem = problem or _unreadable(name, e)
            shown_names.append(name)
            shown_values.append(np.asarray(_shown(e)))
            continue
        drawn += [f"{name} {how}"] if how else []
        dtype = np.asarray(value).dtype.name if not _constant(entry) else ""
        shown_names.append(f"{name}:{dtype}" if dtyped and dtype else name)
        shown_values.append(value)
        if not _constant(entry):
            tensor_names.append(name)
            values.append(value)
    kwargs = {}
    for k, entry in (point.get("kwargs") or {}).items():
        try:
            value, how = _value(entry, loader, seed + 1000 + len(kwargs), _Known, interval)
        except (_Missing, _OverBudget) as e:
            problem = problem or _unreadable(k, e)
            value, how = np.asarray(_shown(e)), ""
        drawn += [f"{k} {how}"] if how else []
        kwargs[k] = value
    label = _label(shown_names, shown_values, kwargs, bool(drawn), taken)
    note = f"recorded: {_HOW.get(point.get('context'), 'a call')} made by {_node(point)}"
    if point.get("captured"):
        note += f", its closure holding {point['captured']}"
    if record.get("module") in loader.scripts:
        note += ("; its script's top level ran again in the replay's worker to define it (as a "
                 "module not named __main__, with the argv it was recorded with), so what that "
                 "top level does (a log line, a file written) happened again")
    if record.get("eager_session") and point.get("context") == "eager":
        note += (
            " (the session ran the tests' tf.functions eagerly, so it may have been made inside"
            " one)"
        )
    if drawn:
        note += (f"; it had no values then, so they are drawn ({'; '.join(drawn)}; seeded, open "
                 f"dimensions {_OPEN_DIMENSION}): stand-ins for values the trace did not show")
        if point.get("note"):
            note += f"; {point['note']}"
    built = Point(names=tuple(tensor_names), values=tuple(np.asarray(v) for v in values),
                  label=label)
    return _Built(point=built, note=note, drawn=bool(drawn), problem=problem, raw=point)


def _unreadable(name: str, e: Exception) -> str:
    if isinstance(e, _Damaged):
        return f"the recorded value of its argument {name} cannot be read: {e}"
    if isinstance(e, _Missing):
        return f"the recorded value of its argument {name} is missing ({e})"
    return f"its argument {name}: {e}"


def _shown(e: Exception) -> str:
    """What a point's label shows for a value it could not have."""
    return "damaged" if isinstance(e, _Damaged) else "missing" if isinstance(e, _Missing) \
        else "too_large"


def _same(a: Point, b: Point) -> bool:
    return a.names == b.names and all(x.dtype == y.dtype and x.shape == y.shape
                                      and np.array_equal(x, y)
                                      for x, y in zip(a.values, b.values))


def _group_case(case_id: str, record: dict, points: list[dict], loader: _Loader, order: int,
                expectations: Sequence[Expectation], description: str, source: str,
                taken_ids: set, per_case: Optional[Callable] = None) -> list[Case]:
    """The case of one group of points; a point that cannot be replayed (a value file gone, an
    argument that is no value, a copy that cannot be made) is a skipped case of its own beside
    it, costing only that point."""
    variables = _variables_read(points)
    built, per_mode = _built_points(case_id, record, points, loader, variables)
    notes = {b.point.label: b.note for b in built}
    good = [b for b in built if not b.problem]
    skipped = []
    for why in dict.fromkeys(b.problem for b in built if b.problem):
        labels = [b.point.label for b in built if b.problem == why]
        skip_id = case_id if not good and not skipped else _free(f"{case_id}_not_replayed",
                                                                  taken_ids)
        skipped.append(_skip_case(skip_id, labels, why, description, source, notes))
    if not good:
        return skipped
    kept = good[0].raw
    kwargs = {k: v for k, v in zip(kept.get("kwargs") or {}, _kwargs_of(kept, loader))}
    several = len({id(b.maker) for b in good}) > 1
    per_mode = per_mode or several or any(getattr(b.maker, "per_mode", False) for b in good)

    def builder(make: Callable) -> Callable:
        return lambda: _calling(make(), kept["args"], kwargs)

    # A function that reads variables is built in each mode, its variables made again there and
    # differentiated too, as a case with build= and wrt_variables=True; a point whose function
    # is made from a copy of its own is built by its own builder.
    how = dict(build=builder(good[0].maker), wrt_variables=bool(variables)) if per_mode \
        else dict(fn=_calling(good[0].maker(), kept["args"], kwargs))
    if several:
        how["builders"] = {b.point.label: builder(b.maker) for b in good}
    # The reviewed expectations file's entries for this function (harness.record.expectations).
    reviewed = per_case(case_id, [b.point.label for b in good]) if per_case else []
    try:
        case = Case(id=case_id, points=[b.point for b in good], order=order,
                    description=description, source=source,
                    expectations=tuple(expectations) + tuple(reviewed),
                    notes=notes, drawn=tuple(b.point.label for b in good if b.drawn), **how)
    except CaseError as e:
        case = _skip_case(case_id, [b.point.label for b in good], str(e).split(": ", 2)[-1],
                          description, source, notes)
    return [case] + skipped


def _built_points(case_id: str, record: dict, points: list[dict], loader: _Loader,
                  variables: Sequence[dict]) -> tuple[list[_Built], bool]:
    """(each recorded call made a Point with the maker of its function, whether the first maker
    must be called in each mode). One maker per distinct copy: a copy made at each call (a layer's
    self) makes each point's function from the state that call saw; a copy made once, or an
    import, serves every point."""
    makers: dict = {}

    def key_of(point: dict) -> str:
        copy = point.get("function")
        return json.dumps(copy, sort_keys=True) if copy else ""

    def maker_of(point: dict) -> tuple:
        key = key_of(point)
        if key not in makers:
            # A copy made at a call (a layer's self) holds the variables that call read: those
            # of the points made from it, not another variant's (another layer's weights).
            read = _variables_read([p for p in points if key_of(p) == key]) if key else variables
            makers[key] = _function(record, point.get("function"), loader, read)
        return makers[key]

    first, _ = maker_of(points[0])
    per_mode = bool(variables) or getattr(first, "per_mode", False)
    names = _names(record, None if first is None or per_mode else first(), len(points[0]["args"]))
    dtyped = len({_dtypes(p) for p in points}) > 1
    taken: set = set()
    built: list[_Built] = []
    for number, point in enumerate(points):
        seed = zlib.crc32(f"{case_id}:{number}".encode())
        own, why = maker_of(point)
        made = _point(record, point, names, loader, seed, dtyped, set(taken))
        if made.drawn and not made.problem and own is not None and "nothing recorded" in made.note:
            made = _in_domain(made, record, point, names, loader, seed, dtyped, taken, own)
        else:
            made = _point(record, point, names, loader, seed, dtyped, taken)
        made.problem, made.maker = made.problem or why, own
        if not made.problem and not made.point.names:
            made.problem = "it was called with no tensor argument"
        # A draw from a range of one recorded value repeats that point: it is judged once, as
        # recorded.
        if not (made.drawn and any(_same(made.point, b.point) for b in built)):
            built.append(made)
    return built, per_mode


def _in_domain(made: _Built, record: dict, point: dict, names: Sequence[str], loader: _Loader,
               seed: int, dtyped: bool, taken: set, maker: Callable) -> _Built:
    """A drawn point in the function's domain: where values the function computes at a point
    drawn in DRAWN are NaN or infinite, the point is drawn again in OTHER_RANGES, in turn, and the
    range with the fewest such values is kept (the first with none ends the search); its note
    says which range, and why."""
    best, tried = (DRAWN, None), []
    for interval in (DRAWN,) + OTHER_RANGES:
        attempt = made if interval == DRAWN else _point(record, point, names, loader, seed,
                                                        dtyped, set(taken), interval)
        bad, total = _nonfinite(attempt, point, loader, maker)
        if total is None:
            break
        if best[1] is None or bad < best[1]:
            best = (interval, bad)
        if not bad:
            break
        tried.append(f"[{interval[0]:g}, {interval[1]:g}] gave NaN or infinite values at {bad} of "
                     f"{total} output elements")
    interval = best[0]
    final = _point(record, point, names, loader, seed, dtyped, taken, interval)
    tried = [t for t in tried if not t.startswith(f"[{interval[0]:g}, {interval[1]:g}]")]
    if tried:
        still = f", where {best[1]} are NaN or infinite still," if best[1] else ""
        final.note += (f"; the range [{interval[0]:g}, {interval[1]:g}] was chosen{still} since "
                       f"{'; '.join(tried)}")
    return final


def _nonfinite(built: _Built, point: dict, loader: _Loader,
               maker: Callable) -> tuple[int, Optional[int]]:
    """(NaN or infinite elements, all floating elements) of what the function computes at a
    point, eagerly; (0, None) where it cannot be computed (the modes will say why)."""
    import tensorflow as tf  # noqa: PLC0415

    if built.problem or not built.point.names:
        return 0, None
    try:
        kwargs = dict(zip(point.get("kwargs") or {}, _kwargs_of(point, loader)))
        fn = _calling(maker(), point["args"], kwargs)
        out = fn(*[tf.constant(v) for v in built.point.values])
        values = [np.asarray(v) for v in tf.nest.flatten(out) if hasattr(v, "dtype")]
    except Exception:  # noqa: BLE001 - the modes run it and say what it raised
        return 0, None
    values = [v for v in values if v.dtype.kind in "fc"]
    total = sum(v.size for v in values)
    if not total:
        return 0, None
    return sum(int(np.count_nonzero(~np.isfinite(v))) for v in values), total


def _free(name: str, taken: set, mark: str = "_") -> str:
    """`name`, or `name_2`, `name_3` (`#2` with mark "#")...: the first one not yet taken, now
    taken."""
    unique, n = name, 1
    while unique in taken:
        n += 1
        unique = f"{name}{mark}{n}"
    taken.add(unique)
    return unique


def _variables_read(points: Sequence[dict]) -> list[dict]:
    """The variables the function read at any of its points, each once (its first recording)."""
    seen: dict = {}
    for point in points:
        for v in point.get("variables") or ():
            seen.setdefault(_bare(v.get("name") or "?"), v)
    return list(seen.values())


def _kwargs_of(point: dict, loader: _Loader) -> list:
    return [_value(entry, loader, 0, _Known)[0] for entry in (point.get("kwargs") or {}).values()]


def cases(folder: str, order: int = 1, expectations: Sequence[Expectation] = (),
          per_case: Optional[Callable[[str, Sequence[str]], list]] = None) -> list[Case]:
    """Every recorded function of `folder` as Cases.

    Raises:
      store.RecordError: the folder is not a recording.
    """
    # A worker's read: the command that started it refused a folder others can change (or was
    # told to trust it) before any worker ran.
    data = store.read(folder, checked=True)
    loader = _Loader(data["folder"])
    made: list[Case] = []
    taken: set = set()
    records = [dict(r, eager_session=bool(data["sessions"][r.get("session", 0)].get("eager")),
                    argv=data["sessions"][r.get("session", 0)].get("argv"))
               for r in merging.merged(data)]
    for record in records:
        if not record["points"]:
            continue
        before = set(taken)
        try:
            made += _cases_of(record, loader, order, expectations, taken, _twins(record, records),
                              per_case)
        except Exception as e:  # noqa: BLE001 - one record the replay cannot read costs it alone
            # The id it would have had (taken by the attempt, not by another function).
            taken.intersection_update(before)
            case_id = _free(_case_id(record["module"], record["qualname"]), taken)
            made.append(_skip_case(case_id, [f"point{i + 1}" for i in range(len(record["points"]))],
                                   f"replay could not make it a case ({type(e).__name__}: {e}); "
                                   "this is a fault of the harness's replay, please report it",
                                   f"{record['qualname']} from {record['module']}",
                                   f"recorded from {record.get('file') or record['module']}", {}))
    return made


def _twins(record: dict, records: Sequence[dict]) -> int:
    """How many recorded functions share this one's module and name (two lambdas on one line,
    two functions exec made from other sources): definitions, told apart by `_2`, `_3` in the
    order of their definitions (a factory's closures over other values are one function)."""
    return sum(1 for r in records if r["module"] == record["module"] and r["qualname"]
               == record["qualname"])
