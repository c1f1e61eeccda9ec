"""A copy of a function that cannot be imported by name: one defined in a test, made by a
factory, a closure.

The copy is the function's code object (`marshal`, the format .pyc files use: readable by the
same Python minor version only), its defaults and the values its closure holds, and the module
whose globals it reads. Replaying it makes the function again with `types.FunctionType` over the
globals of that module, imported afresh: the function sees the same helpers and imports it saw
when recorded, and a global the test changed at run time has its import-time value again.

A closure value is kept when it is plain data (numbers, strings, None, tuples, lists, sets and
dicts of them, whatever their keys, NumPy arrays, eager tensors as their values, dtypes), a
variable (its value when copied: loading the copy makes a new variable, so replay loads it inside
each mode's own graph or context), a module, something importable by name, a function copied the
same way, or an object whose class is importable (a Keras layer, a quantizer, a user's own class:
made again from its config where it has `get_config()`, as Keras reloads one, else bare, and in
either case with every attribute of its `__dict__` that can be copied set as it was, its weights
and whatever was set outside its config included). A function made by exec over a dict of its own
is copied with the globals it reads. Anything else (a graph tensor, or an attribute the function
reads that cannot be copied, of an object with no config) makes the copy fail with a sentence
naming it, and the function is skipped on replay.
"""

from __future__ import annotations

import base64
import contextvars
import importlib
import marshal
import sys
import types
from typing import Any, Callable, Optional

import numpy as np

__all__ = ["Unserialisable", "dump_function", "load_function", "resolve", "python_version"]

_DEPTH = 4

# While one function is copied, each variable it holds (by identity) and its number in the copy;
# while one is loaded, the variable made again for each number: a variable held in several places
# (a tf_keras layer's `w`, its `_trainable_weights`, its checkpoint dependencies) is one again,
# and two variables of one name and value stay two.
_COPIED: contextvars.ContextVar[Optional[dict]] = contextvars.ContextVar("copied", default=None)
_VARIABLES: contextvars.ContextVar[Optional[dict]] = contextvars.ContextVar("variables",
                                                                             default=None)


class Unserialisable(ValueError):
    """The function cannot be copied; the message says which value stops it."""


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def resolve(module: str, qualname: str) -> Optional[Any]:
    """The object `module`.`qualname` names where the module is already imported, else None."""
    obj = sys.modules.get(module)
    if obj is None or "<" in qualname:
        return None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _is_eager_tensor(value: Any) -> bool:
    return type(value).__name__ == "EagerTensor"


def is_variable(value: Any) -> bool:
    """A TensorFlow variable, or a Keras 3 one (`keras.Variable`, whose class is `Variable`)."""
    name = type(value).__name__
    return (name in ("ResourceVariable", "UninitializedVariable", "KerasVariable")
            or name == "Variable" and type(value).__module__.startswith("keras")) \
        and hasattr(value, "assign")


def peek(variable: Any) -> np.ndarray:
    """A variable's value, read without telling TensorFlow: the copy is made inside
    `tf.custom_gradient`'s own VariableWatcher, and a variable read the usual way there would
    count as one the user's function reads (TensorFlow then asks its grad_fn for `variables`)."""
    from tensorflow.python.eager import record  # noqa: PLC0415
    from tensorflow.python.ops import gen_resource_variable_ops  # noqa: PLC0415

    # A Keras 3 variable holds TensorFlow's in `_value`; its own `handle` and `value` go through
    # its autocast, which reads the variable (a cast) inside a mixed-precision step.
    inner = vars(variable).get("_value", variable) if type(variable).__module__.startswith(
        "keras") else variable
    if not hasattr(inner, "handle"):
        return np.asarray(variable.numpy())
    with record.stop_recording():
        return np.asarray(gen_resource_variable_ops.read_variable_op(inner.handle,
                                                                     inner.dtype).numpy())


def dump_variable(value: Any, arrays: Callable[[np.ndarray], dict], where: str) -> dict:
    """A variable's name, trainability and value as it was when copied: made again, as a new
    variable in the mode that replays it, by `load_value`."""
    import tensorflow as tf  # noqa: PLC0415 - a variable: TensorFlow is imported

    try:
        with tf.init_scope():
            array = peek(value)
    except Exception as e:  # noqa: BLE001 - a v1 graph's variable has no value outside its session
        raise Unserialisable(f"{where} holds the variable {getattr(value, 'name', '?')}, whose "
                             "value cannot be "
                             f"read outside its graph ({type(e).__name__})") from None
    made = {"name": str(getattr(value, "name", "")).split(":")[0],
            "trainable": bool(getattr(value, "trainable", True)), "value": arrays(array)}
    copied = _COPIED.get()
    if copied is not None:
        made["number"] = copied.setdefault(id(value), len(copied))
    return made


def dump_value(value: Any, arrays: Callable[[np.ndarray], dict], depth: int, where: str,
               reads: frozenset = frozenset()) -> dict:
    """One closure cell's (or default's) value as JSON; `arrays` stores an array and returns its
    entry. `reads`: the attribute names the copied function reads, which an object it holds must
    have again."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"python": value}
    if isinstance(value, complex):
        return {"complex": [value.real, value.imag]}
    if isinstance(value, (tuple, list, set, frozenset)):
        # A subclass (Keras's TrackedList) as its base: what the function reads is the items.
        kind = next(k for k in (tuple, list, frozenset, set) if isinstance(value, k)).__name__
        return {kind: [dump_value(v, arrays, depth, where) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: dump_value(v, arrays, depth, where) for k, v in value.items()}}
    if isinstance(value, dict) and all(isinstance(k, (str, int, float, bool, type(None), tuple))
                                       for k in value):
        # Keys JSON cannot hold as keys ({0: shape}): kept as pairs, each key as a value.
        return {"items": [[dump_value(k, arrays, depth, where), dump_value(v, arrays, depth, where)]
                          for k, v in value.items()]}
    if isinstance(value, (np.ndarray, np.generic)):
        return arrays(np.asarray(value))
    if _is_eager_tensor(value):
        return {"tensor": arrays(value.numpy())}
    if type(value).__name__ in ("SymbolicTensor", "Tensor", "Operation", "Graph", "FuncGraph"):
        raise Unserialisable(f"{where} holds a graph {type(value).__name__.lower()}, which has no "
                             "value outside its graph")
    if is_variable(value):
        return {"variable": dump_variable(value, arrays, where)}
    if type(value).__name__ == "DType" and hasattr(value, "as_numpy_dtype"):
        return {"dtype": value.name}
    if isinstance(value, types.ModuleType):
        return {"module": value.__name__}
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and module != "__main__" \
            and resolve(module, qualname) is value:
        return {"ref": [module, qualname]}
    cls = type(value)
    if resolve(cls.__module__, cls.__qualname__) is cls \
            and not isinstance(value, types.FunctionType) \
            and (hasattr(value, "__dict__") or _attributes(value)
                 or callable(getattr(value, "get_config", None))):
        return {"object": dump_object(value, arrays, depth, where, reads)}
    if isinstance(value, types.FunctionType):
        if depth >= _DEPTH:
            raise Unserialisable(f"{where} holds functions nested more than {_DEPTH} deep")
        return {"function": dump_function(value, arrays, depth + 1)}
    raise Unserialisable(f"{where} holds a {type(value).__name__} object, which is not plain data")


_OBJECT_DEPTH = 2  # an object's attributes' objects, and theirs: a layer's quantizer's state


def dump_object(value: Any, arrays: Callable[[np.ndarray], dict], depth: int, where: str,
                reads: frozenset = frozenset()) -> dict:
    """An object of an importable class (a Keras layer, a quantizer, a user's own) as it is now:
    its config where it has one (made again with `from_config`, as Keras reloads a layer), and
    every attribute in its `__dict__` that can be copied, laid over that: its weights' values and
    whatever was set outside the config (a quantized layer's `inputs_quantizer`).

    Raises:
      Unserialisable: its config cannot be had, it is nested too deep, or an attribute the
        function reads (`reads`) cannot be copied and no config makes it again.
    """
    cls = type(value)
    name = f"{where}'s {cls.__name__}"
    if depth >= _OBJECT_DEPTH + _DEPTH:
        raise Unserialisable(f"{where} holds a {cls.__name__} object nested too deep to copy")
    config = None
    if callable(getattr(value, "get_config", None)) and hasattr(cls, "from_config"):
        try:
            config = dump_value(value.get_config(), arrays, depth, f"{name} config")
        except Unserialisable:
            raise
        except Exception as e:  # noqa: BLE001
            raise Unserialisable(f"{where} holds a {cls.__name__} object whose get_config() raises "
                                 f"{type(e).__name__}: {e}") from None
    state, left = {}, {}
    for attribute, held in _attributes(value).items():
        try:
            state[attribute] = dump_value(held, arrays, depth + 1,
                                          f"{name} attribute {attribute!r}")
        except Unserialisable as e:
            left[attribute] = str(e)
    needed = sorted(a for a in left if a in reads or a.lstrip("_") in reads)
    if needed and config is None:
        raise Unserialisable(f"{where} holds a {cls.__name__} object whose attribute "
                             f"{needed[0]!r}, which the function reads, cannot be copied: "
                             f"{left[needed[0]]}")
    return {"class": [cls.__module__, cls.__qualname__], "config": config, "state": state,
            "left_out": sorted(left)}


def _attributes(value: Any) -> dict:
    """An object's attributes: its `__dict__`, and the `__slots__` of its classes (TensorFlow's
    TensorShape keeps its dimensions in a slot)."""
    found = dict(getattr(value, "__dict__", {}))
    for cls in type(value).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in [slots] if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and name not in found:
                try:
                    found[name] = object.__getattribute__(value, name)
                except AttributeError:  # a slot never set
                    continue
    return found


def load_object(entry: dict, load_array: Callable[[dict], np.ndarray],
                module_globals: Callable[[dict], dict]) -> Any:
    """The object `dump_object` copied: from its config, or bare, with its copied attributes set
    as they were (past any __setattr__ of its own, such as Keras's tracking)."""
    module, qualname = entry["class"]
    importlib.import_module(module)
    cls = resolve(module, qualname)
    if cls is None:
        raise Unserialisable(f"{module}.{qualname} is no longer there")
    if entry.get("config") is not None:
        config = load_value(entry["config"], load_array, module_globals)
        made = cls.from_config(config)
    else:
        made = cls.__new__(cls)
    for attribute, held in entry["state"].items():
        value = load_value(held, load_array, module_globals)
        try:
            object.__setattr__(made, attribute, value)
        except TypeError:
            # A built-in class with a __setattr__ of its own, which object's cannot stand in for:
            # threading.local (a tf_keras layer's _thread_local) takes its own.
            setattr(made, attribute, value)
    return made


def dump_function(f: types.FunctionType, arrays: Callable[[np.ndarray], dict],
                  depth: int = 0) -> dict:
    """`f` as JSON: its code, defaults, closure values and module.

    Raises:
      Unserialisable: a closure value or default is not something this can copy.
    """
    outermost = _COPIED.get() is None
    token = _COPIED.set({}) if outermost else None
    try:
        return _dumped_function(f, arrays, depth)
    finally:
        if outermost:
            _COPIED.reset(token)


def _dumped_function(f: types.FunctionType, arrays: Callable[[np.ndarray], dict],
                     depth: int) -> dict:
    from harness.record import identity  # noqa: PLC0415 - identity imports serial's callers only

    code = f.__code__
    cells = []
    for name, cell in zip(code.co_freevars, f.__closure__ or ()):
        try:
            contents = cell.cell_contents
        except ValueError:  # a cell not yet filled
            cells.append({"empty": True})
            continue
        cells.append(dump_value(contents, arrays, depth, f"its closure variable {name!r}",
                                frozenset(identity.read_names(code))))
    return {
        "module": f.__module__ or "__main__", "name": f.__name__, "qualname": f.__qualname__,
        "file": code.co_filename,
        "line": code.co_firstlineno, "python": python_version(),
        "code": base64.b64encode(marshal.dumps(code)).decode("ascii"),
        "defaults": None if f.__defaults__ is None else [dump_value(v, arrays, depth, "a default")
                                                           for v in f.__defaults__],
        "kwdefaults": {k: dump_value(v, arrays, depth, "a default")
                       for k, v in (f.__kwdefaults__ or {}).items()},
        "closure": cells, "freevars": list(code.co_freevars),
        "globals": _dump_globals(f, arrays, depth),
    }


def _dump_globals(f: types.FunctionType, arrays: Callable[[np.ndarray], dict],
                  depth: int) -> Optional[dict]:
    """The globals a function made by exec over a dict of its own reads (None for a module's own
    function, which replay finds by importing its module): another dict of globals makes another
    function, so replaying it over a module's globals would check the wrong one."""
    from harness.record import identity  # noqa: PLC0415 - identity imports serial's callers only

    foreign = identity.foreign_globals(f)
    if not foreign and (f.__module__ or "__main__") in sys.modules:
        return None
    try:
        return {name: dump_value(value, arrays, depth, f"its global {name!r}")
                for name, value in foreign.items()}
    except Unserialisable:
        if f.__module__ and f.__module__ in sys.modules and f.__module__ != "__main__":
            return None  # a module's function over a copy of its dict: its module stands in
        raise


def holds(entry: Any, kinds: tuple) -> bool:
    """Whether a copy holds a value of one of these kinds ("object", "tensor", "variable"),
    however deep in its closure."""
    if isinstance(entry, dict):
        return any(k in kinds or holds(v, kinds) for k, v in entry.items())
    if isinstance(entry, list):
        return any(holds(v, kinds) for v in entry)
    return False


def _load_variable(entry: dict, load_array: Callable[[dict], np.ndarray]) -> Any:
    """A copied variable made again at its recorded value: once per number the copy gave it
    (`_COPIED`), while one function is loaded."""
    import tensorflow as tf  # noqa: PLC0415 - replay runs in a worker, with TensorFlow

    made = _VARIABLES.get()
    key = entry.get("number")  # None in a copy made before variables were numbered: one each
    if made is not None and key is not None and key in made:
        return made[key]
    variable = tf.Variable(load_array(entry["value"]), name=entry["name"] or None,
                           trainable=entry["trainable"])
    if made is not None and key is not None:
        made[key] = variable
    return variable


def load_value(entry: dict, load_array: Callable[[dict], np.ndarray],
               module_globals: Callable[[dict], dict]) -> Any:
    kind = next(iter(entry))
    if kind == "python":
        return entry["python"]
    if kind == "complex":
        return complex(*entry["complex"])
    if kind in ("tuple", "list", "set", "frozenset"):
        made = {"tuple": tuple, "list": list, "set": set, "frozenset": frozenset}[kind]
        return made(load_value(e, load_array, module_globals) for e in entry[kind])
    if kind == "dict":
        return {k: load_value(v, load_array, module_globals) for k, v in entry["dict"].items()}
    if kind == "items":
        return {load_value(k, load_array, module_globals): load_value(v, load_array, module_globals)
                for k, v in entry["items"]}
    if kind == "array":
        return load_array(entry)
    if kind == "tensor":
        import tensorflow as tf  # noqa: PLC0415 - replay runs in a worker, with TensorFlow

        return tf.constant(load_array(entry["tensor"]))
    if kind == "variable":
        return _load_variable(entry["variable"], load_array)
    if kind == "dtype":
        import tensorflow as tf  # noqa: PLC0415

        return tf.as_dtype(entry["dtype"])
    if kind == "module":
        return importlib.import_module(entry["module"])
    if kind == "ref":
        module, qualname = entry["ref"]
        importlib.import_module(module)
        found = resolve(module, qualname)
        if found is None:
            raise Unserialisable(f"{module}.{qualname} is no longer there")
        return found
    if kind == "function":
        return load_function(entry["function"], load_array, module_globals)
    if kind == "object":
        return load_object(entry["object"], load_array, module_globals)
    if kind == "config":  # a recording made before objects kept their state
        module, qualname, config = entry["config"]
        importlib.import_module(module)
        cls = resolve(module, qualname)
        if cls is None:
            raise Unserialisable(f"{module}.{qualname} is no longer there")
        config = load_value(config, load_array, module_globals)
        return cls.from_config(config) if hasattr(cls, "from_config") else cls(**config)
    raise Unserialisable(f"an unknown kind of value {kind!r}")


def own_globals(entry: dict, load_array: Callable[[dict], np.ndarray],
                module_globals: Callable[[dict], dict]) -> dict:
    """The globals a copied function runs over: those it was copied with (a function made by
    exec), else its module's."""
    if entry.get("globals") is None:
        return module_globals(entry)
    import builtins  # noqa: PLC0415

    made = {"__builtins__": builtins, "__name__": entry["module"]}
    made.update({k: load_value(v, load_array, module_globals) for k, v in entry["globals"].items()})
    return made


def load_function(entry: dict, load_array: Callable[[dict], np.ndarray],
                  module_globals: Callable[[dict], dict]) -> types.FunctionType:
    """The function `dump_function` copied, over the globals `module_globals(entry)` gives.

    Raises:
      Unserialisable: it was recorded under another Python, or a value cannot be made again.
    """
    if entry.get("python") != python_version():
        raise Unserialisable(f"its code was recorded under Python {entry.get('python')} and this "
                             f"is Python {python_version()}; Python's code format differs between "
                             f"them: replay it under Python {entry.get('python')}")
    outermost = _VARIABLES.get() is None
    token = _VARIABLES.set({}) if outermost else None
    try:
        return _made_function(entry, load_array, module_globals)
    finally:
        if outermost:
            _VARIABLES.reset(token)


def _made_function(entry: dict, load_array: Callable[[dict], np.ndarray],
                   module_globals: Callable[[dict], dict]) -> types.FunctionType:
    code = marshal.loads(base64.b64decode(entry["code"]))
    closure = tuple(types.CellType() if "empty" in c
                    else types.CellType(load_value(c, load_array, module_globals))
                    for c in entry["closure"])
    defaults = None if entry["defaults"] is None else tuple(load_value(v, load_array,
                                                                       module_globals)
                                                             for v in entry["defaults"])
    made = types.FunctionType(code, own_globals(entry, load_array, module_globals), entry["name"],
                              defaults, closure or None)
    made.__qualname__ = entry["qualname"]
    made.__kwdefaults__ = {k: load_value(v, load_array, module_globals)
                           for k, v in entry["kwdefaults"].items()} or None
    return made
