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

import importlib
import inspect
import os
import re
import sys
import zlib
from typing import Any, Callable, Optional, Sequence

import numpy as np

from harness import modes as _modes
from harness.case import Case, CaseError, Expectation, Point, point_label
from harness.record import serial, store

__all__ = ["DRAWN", "cases"]

# Where a value is drawn for a call seen only while tracing: a dimension the trace left open is
# this long, and elements are uniform in this interval (integers: 0 to 3).
_OPEN_DIMENSION = 2
DRAWN = (-2.0, 2.0)


def _case_id(module: str, qualname: str) -> str:
    parts = [p for p in f"{module}.{qualname}".replace("<lambda>", "lambda").split(".") if p and p != "<locals>"]
    parts = [re.sub(r"\W", "_", p) for p in parts]
    return "recorded." + ".".join(p if not p[0].isdigit() else f"_{p}" for p in parts)


def _node(point: dict) -> str:
    node = point.get("node") or ""
    return node or "code outside any test (an import, a fixture or the script itself)"


def _draw(spec: dict, seed: int) -> np.ndarray:
    import tensorflow as tf  # noqa: PLC0415 - a worker has it; bfloat16 and the like come from it

    dtype = tf.as_dtype(spec["dtype"]).as_numpy_dtype
    shape = tuple(_OPEN_DIMENSION if d is None else d for d in (spec["shape"] or []))
    rng = np.random.default_rng(seed)
    kind = np.dtype(dtype).kind if np.dtype(dtype).kind in "biufc" else "f"
    if kind == "b":
        return rng.integers(0, 2, size=shape).astype(dtype)
    if kind in "iu":
        return rng.integers(0, 4, size=shape).astype(dtype)
    values = rng.uniform(*DRAWN, size=shape)
    if kind == "c":
        values = values + 1j * rng.uniform(*DRAWN, size=shape)
    return np.asarray(values).astype(dtype)


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
                found = f"cannot import {name} ({type(e).__name__}: {e}), and its file {file or '?'} is not there"
            else:
                from harness import loader  # noqa: PLC0415

                try:
                    found = loader.load_module(file)
                except loader.LoadError as load_error:
                    found = f"cannot import {name} ({type(e).__name__}: {e}) nor load {file} ({load_error})"
        self.modules[name] = found
        return found

    def array(self, entry: dict) -> np.ndarray:
        return store.load_array(self.folder, entry)


def _function(record: dict, copy: Optional[dict], loader: _Loader) -> tuple[Any, str]:
    """(the decorated function to replay, "") or (None, why it cannot be)."""
    import tensorflow as tf  # noqa: PLC0415

    if record.get("autograph"):
        return None, ("it was seen only as AutoGraph's conversion of it (called inside a tf.function or "
                      "model.fit), and the source function that conversion came from was not found; a test "
                      "that calls it once outside tf.function records the source function")
    module = loader.module(record)
    if isinstance(module, str):
        return None, module
    if record.get("importable"):
        found = module
        for part in record["qualname"].split("."):
            found = getattr(found, part, None)
        if callable(found):
            return found, ""
        return None, f"{record['module']} has no {record['qualname']} now"
    if copy is None or "problem" in copy:
        why = copy["problem"] if copy else "no copy of it was kept"
        return None, (f"it cannot be imported by name (defined inside a function: a closure, a factory's, or a "
                      f"test's own) and could not be copied: {why}")

    def globals_of(entry: dict) -> dict:
        if entry["module"] == record["module"]:
            return vars(module)
        other = loader.module({"module": entry["module"], "file": entry.get("file"), "root": record.get("root")})
        if isinstance(other, str):
            raise serial.Unserialisable(other)
        return vars(other)

    try:
        made = serial.load_function(copy["copy"], loader.array, globals_of)
    except Exception as e:  # noqa: BLE001
        why = str(e) if isinstance(e, serial.Unserialisable) else f"{type(e).__name__}: {e}"
        return None, f"its copy cannot be made again: {why}"
    return tf.custom_gradient(made), ""


def _constant(entry: dict) -> bool:
    """Whether an argument was a Python scalar (passed as recorded, not as a tensor)."""
    return "python" in entry or "float" in entry or "int" in entry


def _call_form(point: dict) -> str:
    """What must be the same for two points to share one function: which arguments are constants."""
    constants = [(i, repr(store.python_value(a))) for i, a in enumerate(point["args"]) if _constant(a)]
    kwargs = sorted((k, repr(store.python_value(a) if _constant(a) else a.get("array", a.get("spec"))))
                    for k, a in point.get("kwargs", {}).items())
    return repr((len(point["args"]), constants, kwargs))


def _calling(fn: Callable, args: Sequence[dict], kwargs: dict) -> Callable:
    """`fn` taking only the point's tensor arguments, the constants and keyword arguments put back."""
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


def _value(entry: dict, loader: _Loader, seed: int) -> tuple[Any, bool]:
    """(an argument's value, whether it was drawn)."""
    if "array" in entry:
        return loader.array(entry), False
    if "spec" in entry:
        return _draw(entry["spec"], seed), True
    return store.python_value(entry), False


def _skip_case(case_id: str, labels: Sequence[str], reason: str, description: str, source: str,
               notes: dict) -> Case:
    def never(x):
        raise AssertionError("a skipped recording is never run")

    points = [Point(names=("x",), values=(np.float32(0.0),), label=label) for label in labels]
    return Case(id=case_id, points=points, fn=never, description=description, source=source,
                skip_modes={m: f"cannot be replayed: {reason}" for m in _modes.KNOWN_MODES},
                notes={k: v for k, v in notes.items() if k in labels})


def _label(names, values, kwargs: dict, drawn: bool, taken: set) -> str:
    label = point_label(names, [np.asarray(v) for v in values])
    if kwargs:
        label += "," + point_label(list(kwargs), [np.asarray(v) for v in kwargs.values()])
    label = f"drawn:{label}" if drawn else label
    unique, n = label, 1
    while unique in taken:
        n += 1
        unique = f"{label}#{n}"
    taken.add(unique)
    return unique


def _id_part(text: str) -> str:
    text = text.replace("-", "m").replace(".", "_")
    return re.sub(r"\W", "_", text)


def _cases_of(record: dict, loader: _Loader, order: int, expectations: Sequence[Expectation],
              taken_ids: set, twins: int = 1) -> list[Case]:
    base = _case_id(record["module"], record["qualname"])
    captured = ",".join(f"{name}={text}" for name, text in record.get("captured") or ())
    if twins > 1 and captured:
        base += "_" + _id_part(captured.replace(",", "_").replace("=", "_"))
    source = f"recorded from {record.get('file') or record['module']}:{record.get('line', 0)}"
    calls = record.get("calls", 0)
    description = (f"{record['qualname']} from {record['module']}"
                   + (f", its closure over {captured}" if captured and twins > 1 else "")
                   + f", replayed at the points its tests called it with ({calls} call{'s' if calls != 1 else ''}"
                   " seen)")
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
        made.append(_group_case(case_id, record, points, loader, order, expectations, description, source))
    return made


def _group_case(case_id: str, record: dict, points: list[dict], loader: _Loader, order: int,
                expectations: Sequence[Expectation], description: str, source: str) -> Case:
    first = points[0]
    fn, problem = _function(record, first.get("function"), loader)
    names = _parameter_names(fn, len(first["args"])) if fn is not None else \
        (list(record.get("parameters") or [])[:len(first["args"])]
         + [f"arg{i}" for i in range(len(record.get("parameters") or []), len(first["args"]))])
    made, notes, taken = [], {}, set()
    unsupported = ""
    for number, point in enumerate(points):
        seed = zlib.crc32(f"{case_id}:{number}".encode())
        tensor_names, values, constants = [], [], {}
        drawn = False
        for i, (name, entry) in enumerate(zip(names, point["args"])):
            if "unsupported" in entry:
                unsupported = unsupported or f"its argument {name} was {entry['unsupported']}, not a value"
            value, was_drawn = _value(entry, loader, seed + i)
            drawn = drawn or was_drawn
            if _constant(entry) or "unsupported" in entry:
                constants[name] = value
            else:
                tensor_names.append(name)
                values.append(value)
        kwargs = {}
        for k, entry in (point.get("kwargs") or {}).items():
            value, was_drawn = _value(entry, loader, seed + 1000 + len(kwargs))
            drawn = drawn or was_drawn
            kwargs[k] = value
        shown_names = [n for n, e in zip(names, point["args"]) if "unsupported" not in e]
        shown_values = [constants[n] if n in constants else values[tensor_names.index(n)] for n in shown_names]
        label = _label(shown_names, shown_values, kwargs, drawn, taken)
        how = {"eager": "an eager call", "tf.function": "a call while tracing a tf.function",
               "v1 graph": "a call while building a v1 graph"}.get(point.get("context"), "a call")
        note = f"recorded: {how} made by {_node(point)}"
        if drawn:
            note += (f"; it had no values then, so they are drawn (uniform in [{DRAWN[0]:g}, {DRAWN[1]:g}], open "
                     f"dimensions {_OPEN_DIMENSION}, seeded): they are not the values the test used")
            if point.get("note"):
                note += f"; {point['note']}"
        notes[label] = note
        made.append((Point(names=tuple(tensor_names), values=tuple(np.asarray(v) for v in values), label=label),
                     point))
    labels = [p.label for p, _ in made]
    variables = sorted({v.get("name") or "?" for _, p in made for v in p.get("variables") or ()})
    if not problem and unsupported:
        problem = unsupported
    if not problem and variables:
        problem = (f"it reads the variables {', '.join(variables)}, which replay does not make again; write a case "
                   "with build= creating them and wrt_variables=True")
    if not problem and not all(p.names for p, _ in made):
        problem = "it was called with no tensor argument"
    if problem:
        return _skip_case(case_id, labels, problem, description, source, notes)
    fn = _calling(fn, first["args"], {k: v for k, v in zip(first.get("kwargs") or {}, _kwargs_of(first, loader))})
    try:
        return Case(id=case_id, points=[p for p, _ in made], fn=fn, order=order, description=description,
                    source=source, expectations=tuple(expectations), notes=notes)
    except CaseError as e:
        return _skip_case(case_id, labels, str(e).split(": ", 2)[-1], description, source, notes)


def _kwargs_of(point: dict, loader: _Loader) -> list:
    return [_value(entry, loader, 0)[0] for entry in (point.get("kwargs") or {}).values()]


def cases(folder: str, order: int = 1, expectations: Sequence[Expectation] = ()) -> list[Case]:
    """Every recorded function of `folder` as Cases.

    Raises:
      store.RecordError: the folder is not a recording.
    """
    data = store.read(folder)
    loader = _Loader(data["folder"])
    made: list[Case] = []
    taken: set = set()
    records = _merged(data)
    for record in records:
        if record["points"]:
            made += _cases_of(record, loader, order, expectations, taken, _twins(record, records))
    return made


def _twins(record: dict, records: Sequence[dict]) -> int:
    """How many recorded functions share this one's module and name (a factory's closures)."""
    return sum(1 for r in records if r["module"] == record["module"] and r["qualname"] == record["qualname"])


def _merged(data: dict) -> list[dict]:
    """One record per function, however many processes saw it: their points in file order, up to
    the most points a session kept per function."""
    limit = max([s.get("limits", {}).get("points", 3) for s in data["sessions"]] or [3])
    merged: dict = {}
    for record in data["functions"]:
        key = (record["module"], record["qualname"], record.get("file"), record.get("line"),
               record.get("fingerprint", ""))
        if key not in merged:
            merged[key] = dict(record, points=list(record["points"]))
        else:
            kept = merged[key]
            kept["calls"] = kept.get("calls", 0) + record.get("calls", 0)
            kept["importable"] = kept.get("importable") and record.get("importable")
            kept["points"] = (kept["points"] + list(record["points"]))[:limit]
    return list(merged.values())
