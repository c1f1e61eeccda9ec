"""Which function the user wrote, for a function handed to `tf.custom_gradient` (no TensorFlow).

What TensorFlow is handed is not always what the user wrote:

- a library's own decorator may define one inner function per decorated function and hand that
  to `tf.custom_gradient`: every function of the library then shares the inner one's code, and
  only its closure (the user's function) or its `__wrapped__` says which it is;
- a factory's closures share one code object and differ in the values they captured;
- AutoGraph converts a function it traces (`model.fit`, a `tf.function`) into generated code
  whose nested functions are new code objects in a temporary file, named without their class.

`Identity` is the user's function: its module, qualified name and definition site, and the
values its closure captured. Two calls belong to one recorded function exactly when their
identities are equal; nothing here ever keys a function by a wrapper's code object alone.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import sys
import types
from typing import Any, Callable, Optional

import numpy as np

__all__ = ["Identity", "Unhandled", "identify", "captured_label"]

# Closure variable names a library decorator gives the function it wraps, most likely first.
_WRAPPED_NAMES = ("f", "fn", "func", "fun", "function", "wrapped", "original", "user_fn")
# Packages whose own uses of custom_gradient (tf.recompute_grad, Keras internals) are not the
# user's.
_INTERNAL = ("tensorflow", "keras", "tf_keras")


class Unhandled(ValueError):
    """A callable the recorder cannot record (a partial, a C function); the message names it."""


@dataclasses.dataclass(frozen=True)
class Identity:
    """The user's function behind a decorated one.

    Attributes:
      module, qualname, file, line: where the user defined it.
      captured: the closure's values as short texts, by variable name (plain values only).
      fingerprint: a digest of every captured value (functions by their own identity), so that
        closures over different values are different functions; for a function whose globals are
        not its module's (made by exec), the globals it reads count as captured values.
      site: the column its code starts at and a digest of that code, so that two functions of one
        line (two lambdas) or of one name and line with other code (exec'd sources) stay apart.
      function: the Python function to copy and replay: the user's source function, never
        AutoGraph's conversion of it.
      code: the code object of `function`.
      via: how it was found ("" for the decorated function itself).
      user: the user's function itself, where one is at hand (None for a decorated function
        known only by the module-level name a wrapper was bound to).
      names: the function whose positional parameters name the arguments (the user's own, or a
        decorator's forward); `exact_names`: only where their count is the call's.
      per_call: whether its closure holds what only a call's copy keeps (an object, a variable, a
        decorator's values held aside): then each recorded call is copied, and those values are
        left out of the fingerprint.
    """

    module: str
    qualname: str
    file: str
    line: int
    captured: tuple = ()
    fingerprint: str = ""
    site: str = ""
    function: Optional[Callable] = dataclasses.field(default=None, compare=False, hash=False)
    via: str = dataclasses.field(default="", compare=False, hash=False)
    user: Optional[Callable] = dataclasses.field(default=None, compare=False, hash=False)
    names: Optional[Callable] = dataclasses.field(default=None, compare=False, hash=False)
    exact_names: bool = dataclasses.field(default=False, compare=False, hash=False)
    from_stack: bool = dataclasses.field(default=False, compare=False, hash=False)
    per_call: bool = dataclasses.field(default=False, compare=False, hash=False)

    @property
    def key(self) -> tuple:
        return (self.module, self.qualname, self.file, self.line, self.fingerprint, self.site)

    @property
    def internal(self) -> bool:
        """Whether TensorFlow or Keras defined it (tf.recompute_grad's own custom gradient)."""
        return self.module.split(".")[0] in _INTERNAL

    @property
    def package(self) -> str:
        return self.module.split(".")[0]

    @property
    def converted(self) -> bool:
        return self.via == "autograph"


def _describe_callable(f: Any) -> str:
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__
    return f"{type(f).__name__} {name}"


def _plain(f: Callable) -> Callable:
    """`f` less its `functools.wraps` layers and bound-method wrapping."""
    seen = set()
    while id(f) not in seen:
        seen.add(id(f))
        if isinstance(f, types.MethodType):
            f = f.__func__
        elif hasattr(f, "__wrapped__") and callable(f.__wrapped__):
            f = f.__wrapped__
        elif hasattr(f, "python_function") and callable(f.python_function):  # a tf.function
            f = f.python_function
        else:
            break
    return f


def _cells(f: types.FunctionType) -> dict:
    found = {}
    for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
        try:
            found[name] = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
    return found


@dataclasses.dataclass(frozen=True)
class _Found:
    """The user's function a library decorator's inner function stands for: its name and site,
    the function whose positional parameters name the arguments (`exact`: only where their count
    is the call's), and whether the call stack told it (then it is not remembered by closure)."""

    module: str
    qualname: str
    file: str
    line: int
    user: Optional[types.FunctionType]
    names: Optional[Callable]
    exact: bool = False
    from_stack: bool = False


def _found(fn: types.FunctionType, from_stack: bool = False) -> _Found:
    code = fn.__code__
    return _Found(module=fn.__module__ or "__main__", qualname=fn.__qualname__,
                  file=code.co_filename, line=code.co_firstlineno, user=fn, names=fn,
                  from_stack=from_stack)


def _wrapped_in_closure(f: types.FunctionType) -> Optional[_Found]:
    """The user's function a library decorator's inner function stands for, or None.

    Only for a function defined inside another (a decorator's per-call inner function), whose
    closure holds a function defined elsewhere: the one named like a wrapped function, else the
    only one. Where it closes over several (a forward and a backward) and none of those names:
    the function the running wrapper that defined it stands for (its `__wrapped__`, which
    functools.wraps sets, else the module-level name the decorated function was given), else the
    nearest caller of the closure's functions' module."""
    if "<locals>" not in f.__qualname__:
        return None
    outer = f.__qualname__.rsplit(".<locals>.", 1)[0]
    candidates = {}
    for name, value in _cells(f).items():
        value = _plain(value) if callable(value) else value
        if isinstance(value, types.FunctionType) and not value.__qualname__.startswith(outer + "."):
            candidates[name] = value
    for name in _WRAPPED_NAMES:
        if name in candidates:
            return _found(candidates[name])
    if len(candidates) == 1:
        return _found(next(iter(candidates.values())))
    if not candidates:
        return None
    return _wrapped_by_definer(f, outer, candidates) or _caller_in(candidates)


def _forward(candidates: dict) -> Optional[types.FunctionType]:
    """Of the functions a decorator closes over, the forward (named so), whose parameters are the
    decorated function's."""
    for name, fn in candidates.items():
        if any(w in name.lower() or w in fn.__name__.lower() for w in ("fwd", "forward")):
            return fn
    return None


def _wrapped_by_definer(f: types.FunctionType, outer: str,
                        candidates: dict) -> Optional[_Found]:
    """What the running function which defined `f` stands for, found on the call stack: a
    decorator's per-call wrapper that defines the custom-gradient function over a forward and a
    backward, not over the decorated function. Where the wrapper carries functools.wraps, the
    function it wraps; else the module-level name it was bound to, in its own module's globals or
    in those of the forward and backward (TensorFlow Probability decorates in one module a
    function of another)."""
    frame, depth, converted = sys._getframe(2), 0, None
    while frame is not None and depth < 40:
        code = frame.f_code
        if code.co_filename == f.__code__.co_filename and \
                getattr(code, "co_qualname", code.co_name) == outer:
            converted = None  # the definer runs as written: its frame tells which it is
            break
        converted = converted or _converted_definer(frame, f, outer)
        frame, depth = frame.f_back, depth + 1
    else:
        if converted is None:
            return None
    defining = converted.__globals__ if converted is not None else frame.f_globals
    spaces = [defining] + [c.__globals__ for c in candidates.values()
                           if c.__globals__ is not defining]
    for space in spaces:
        running = (_bound_name(converted, space) if converted is not None
                   else _running_function(frame, space))
        if running is None:
            continue
        name, fn = running
        wrapped = getattr(fn, "__wrapped__", None)
        plain = _plain(wrapped) if callable(wrapped) else None
        if isinstance(plain, types.FunctionType):
            return _found(plain, from_stack=True)
        file = space.get("__file__") or next(iter(candidates.values())).__code__.co_filename
        forward = _forward(candidates)
        return _Found(module=space.get("__name__") or "__main__", qualname=name, file=file,
                      line=_def_line(file, name) or (forward or fn).__code__.co_firstlineno,
                      user=None, names=forward, exact=True, from_stack=True)
    return None


def _converted_definer(frame, f: types.FunctionType, outer: str) -> Optional[types.FunctionType]:
    """Under AutoGraph (a tf.function's trace) the function that defined `f` runs as converted
    code in a file of AutoGraph's; the original is the `f` of the converted_call that runs it."""
    code = frame.f_code
    if code.co_name != "converted_call" or "autograph" not in code.co_filename:
        return None
    original = frame.f_locals.get("f")
    plain = _plain(original) if callable(original) else None
    if isinstance(plain, types.FunctionType) and \
            plain.__code__.co_filename == f.__code__.co_filename and \
            getattr(plain.__code__, "co_qualname", plain.__name__) == outer:
        return plain
    return None


def _bound_name(fn: types.FunctionType, space: dict) -> Optional[tuple[str, types.FunctionType]]:
    """(the global name, fn) where module globals `space` bind `fn` itself."""
    for name, value in list(space.items()):
        if value is fn:
            return name, fn
    return None


_LINES: dict = {}


def _def_line(file: str, name: str) -> int:
    """The line of `def name(` in a source file (where a decorated function was defined), or 0."""
    if file not in _LINES:
        try:
            with open(file, encoding="utf-8", errors="replace") as source:
                _LINES[file] = source.read().splitlines()
        except OSError:
            _LINES[file] = []
    for number, text in enumerate(_LINES[file], start=1):
        if text.lstrip().startswith(f"def {name}("):
            return number
    return 0


def _running_function(frame, space: dict) -> Optional[tuple[str, types.FunctionType]]:
    """(global name, function) of the function a frame runs, where the module globals `space`
    hold it: its code, and a closure holding what the frame's free variables hold. A decorator's
    wrappers share one code and may close over the same values (a forward and a backward, not the
    decorated function), and one bound to no global at all may hold the same as one that is: so
    the caller must have loaded it, by that name or as a local value (AutoGraph's converted_call
    holds it as `f`), and where none did, None (a wrong name would check one function under
    another's)."""
    code = frame.f_code
    matches = {}
    for name, value in list(space.items()):
        if not isinstance(value, types.FunctionType) or value.__code__ is not code:
            continue
        cells = _cells(value)
        if all(free in frame.f_locals and frame.f_locals[free] is cells.get(free, frame)
               for free in code.co_freevars):
            matches[name] = value
    return _called_by_name(frame.f_back, matches) if matches else None


_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_ATTR", "LOAD_METHOD", "LOAD_FAST", "LOAD_DEREF")


def _called_by_name(caller, named: dict) -> Optional[tuple[str, types.FunctionType]]:
    """Of functions by global name, the one the caller holds as a local value, else the one its
    line loaded last before its call."""
    if caller is None:
        return None
    held = {id(v) for v in caller.f_locals.values()}
    for name, fn in named.items():
        if id(fn) in held:
            return name, fn
    import dis  # noqa: PLC0415 - only for wrappers that nothing else tells apart

    loads = [i for i in dis.get_instructions(caller.f_code)
             if i.offset <= caller.f_lasti and i.opname in _LOADS]
    for instruction in reversed(loads[-8:]):
        if instruction.argval in named:
            return instruction.argval, named[instruction.argval]
    return None


def _caller_in(candidates: dict) -> Optional[_Found]:
    """For a decorator whose inner function closes over several functions of one module (a
    forward and a backward) and is bound to no module-level name: the nearest function of that
    module on the call stack, which is the user's function that was called (its module-level
    name, found in its globals). Its parameters are not the decorated function's: the forward's
    name the arguments."""
    files = {c.__code__.co_filename for c in candidates.values()}
    codes = {c.__code__ for c in candidates.values()}
    if len(files) != 1:
        return None
    frame, depth = sys._getframe(1), 0
    while frame is not None and depth < 40:
        code = frame.f_code
        if code.co_filename in files and code not in codes:
            found = frame.f_globals.get(code.co_name)
            plain = _plain(found) if callable(found) else None
            if isinstance(plain, types.FunctionType) and plain.__code__ is code:
                return dataclasses.replace(_found(plain, from_stack=True),
                                           names=_forward(candidates), exact=True)
        frame, depth = frame.f_back, depth + 1
    return None


def _fingerprint_part(name: str, value: Any) -> tuple[str, Optional[str]]:
    """(what goes into the digest, the short text shown or None) for one captured value."""
    if value is None or isinstance(value, (bool, int, float, str, complex)):
        text = repr(value)
        return text, text if len(text) <= 24 else text[:21] + "..."
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        digest = hashlib.sha1(array.tobytes()).hexdigest()[:12]
        shown = np.array2string(array.ravel()[:4], separator=",") if array.size <= 4 else \
            f"{array.dtype.name}{list(array.shape)}"
        return f"{array.dtype}{array.shape}{digest}", shown
    if type(value).__name__ == "EagerTensor":
        try:
            return _fingerprint_part(name, value.numpy())
        except Exception:  # noqa: BLE001 - a tensor that cannot be read: its type stands in
            return "EagerTensor", None
    if isinstance(value, (tuple, list)) and len(value) <= 8:
        parts = [_fingerprint_part(name, v) for v in value]
        shown = [s for _, s in parts]
        text = "(" + ",".join(p for p, _ in parts) + ")"
        return text, (repr(type(value)(shown)).replace("'", "") if None not in shown else None)
    plain = _plain(value) if callable(value) else value
    if isinstance(plain, types.FunctionType):
        code = plain.__code__
        return (
            (
                "function"
                f" {plain.__module__}.{plain.__qualname__}@{code.co_filename}:{code.co_firstlineno}"
            ),
            None,
        )
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}", None
    # Any other object (a layer, a quantizer): its class. Two instances of one class are one
    # function: what differs between them (config, weights) is the state each call saw, which the
    # recorder copies with each point.
    return f"object {type(value).__module__}.{type(value).__qualname__}", None


def _digest(cells: dict) -> tuple[str, tuple]:
    parts, shown = [], []
    for name in sorted(cells):
        part, text = _fingerprint_part(name, cells[name])
        parts.append(f"{name}={part}")
        if text is not None:
            shown.append((name.removeprefix("<wrapper>").removeprefix("<global>"), text))
    if not parts:
        return "", ()
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:12], tuple(shown)


def _is_object(value: Any) -> bool:
    """A value a closure holds that only its class identifies (a layer's `self`, a variable):
    its state is the call's, copied with each point."""
    return _fingerprint_part("", value)[0].startswith("object ")


def captured_label(captured) -> str:
    """`p=3.0,k=2`: a closure's plain captured values, for telling a factory's closures apart."""
    return ",".join(f"{name}={text}" for name, text in captured)


def _autograph_original(f: types.FunctionType) -> Optional[types.FunctionType]:
    """For a function AutoGraph generated (defined inside a converted function), the user's
    source function it stands for, made from the user's code with this one's closure values.

    AutoGraph calls the converted function from `converted_call(f, ...)`, whose `f` is the
    user's original: the nested function's code is found among that original's constants by
    name."""
    name = f.__code__.co_name
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "converted_call" and "autograph" in frame.f_code.co_filename:
            original = frame.f_locals.get("f")
            code = (_nested_code(getattr(_plain(original), "__code__", None), name) if original
                    else None)
            if code is not None:
                return _rebuilt(code, _plain(original), f)
        frame = frame.f_back
    return None


def _nested_code(code: Optional[types.CodeType], name: str,
                 depth: int = 0) -> Optional[types.CodeType]:
    if code is None or depth > 4:
        return None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name == name:
                return const
            found = _nested_code(const, name, depth + 1)
            if found is not None:
                return found
    return None


def _rebuilt(code: types.CodeType, original: types.FunctionType, converted: types.FunctionType):
    values = _cells(converted)
    if not all(v in values for v in code.co_freevars):
        return None  # AutoGraph renamed what the closure holds: no faithful copy
    closure = tuple(types.CellType(values[v]) for v in code.co_freevars)
    made = types.FunctionType(code, original.__globals__, code.co_name, converted.__defaults__,
                              closure or None)
    made.__qualname__ = getattr(code, "co_qualname", code.co_name)
    made.__module__ = original.__module__
    return made


_CACHE: dict = {}
_CACHE_SIZE = 4096
# Closure values that say the same thing each time they are the same object: a library decorator
# defines its inner function anew at every call, over the same user function.
_STABLE = (types.FunctionType, types.ModuleType, type, str, int, float, bool, type(None))


def _cache_key(f: Any) -> Optional[tuple]:
    closure = getattr(f, "__closure__", None) or ()
    try:
        contents = tuple(c.cell_contents for c in closure)
    except ValueError:
        return None
    if not isinstance(f, types.FunctionType) or not all(isinstance(c, _STABLE) for c in contents) \
            or "tf__" in f.__qualname__:
        return None
    return (f.__code__,
            tuple(id(c) if isinstance(c, (types.FunctionType, types.ModuleType, type))
                  else (type(c), c)
                  for c in contents), id(getattr(f, "__wrapped__", None)),
            f.__module__, f.__qualname__, id(f.__globals__))


def identify(f: Any) -> Identity:
    """`_identify(f)`, remembered for a function whose closure holds only functions, modules and
    plain scalars: a decorator's wrapper calls TensorFlow's custom_gradient at every call."""
    key = _cache_key(f)
    if key is None:
        return _identify(f)
    found = _CACHE.get(key)
    if found is None:
        found = _identify(f)
        if found.from_stack:  # its callers named it: another call may name another function
            return found
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[key] = found
    return dataclasses.replace(found, function=f)


def _identify(f: Any) -> Identity:
    """The user's function behind `f`, as `tf.custom_gradient` was handed it.

    The name and site are the user's function's; `function` is what TensorFlow was handed
    (a decorator's wrapper may do more than call the user's function), except that AutoGraph's
    generated code is replaced by the user's source function it was generated from.

    Raises:
      Unhandled: `f` is not a Python function the recorder can follow (a functools.partial, a C
        function, a callable object).
    """
    plain = _plain(f)
    if isinstance(plain, functools.partial):
        raise Unhandled(f"a functools.partial of {_describe_callable(plain.func)}")
    if not isinstance(plain, types.FunctionType) or not isinstance(f, types.FunctionType):
        raise Unhandled(f"a {_describe_callable(plain)}, not a Python function")
    function, via = f, ("wraps" if plain is not f else "")
    if "tf__" in plain.__qualname__:
        original = _autograph_original(plain)
        if original is not None:
            function = plain = original
            via = "autograph"
    cells = dict(_cells(plain), **{f"<wrapper>{k}": v for k, v in _cells(function).items()}
                 if function is not plain else {})
    cells.update({f"<global>{k}": v for k, v in foreign_globals(plain).items()})
    fingerprint, captured = _digest(cells)
    found = _wrapped_in_closure(plain)
    per_call = found is not None or any(_is_object(v) for v in cells.values())
    if per_call:
        # A decorator's own closure values (TensorFlow Probability's arguments held aside), or a
        # method's closure over `self` and the call's own values (Keras's `training`): what the
        # call saw, copied with each point, not what tells functions apart. The functions it
        # closes over do.
        fingerprint, _ = _digest({k: v for k, v in cells.items()
                                  if isinstance(_plain(v) if callable(v) else v,
                                                types.FunctionType)})
    if found is not None:
        via, captured = "closure", ()  # the decorator's own closure values are not the user's
    else:
        code = plain.__code__
        found = _Found(module=plain.__module__ or "__main__",
                       qualname=getattr(code, "co_qualname", plain.__qualname__)
                       if via == "autograph" else plain.__qualname__,
                       file=code.co_filename, line=code.co_firstlineno, user=plain, names=plain)
    return Identity(module=found.module, qualname=found.qualname, file=found.file,
                    line=found.line, captured=captured, fingerprint=fingerprint,
                    site=site(plain.__code__), function=function, via=via, user=found.user,
                    names=found.names, exact_names=found.exact, from_stack=found.from_stack,
                    per_call=per_call)


def site(code: types.CodeType) -> str:
    """`column:digest`: where on its first line a function's code starts, and a digest of that
    code (its bytecode, names and constants, nested functions' too)."""
    columns = [p[2] for p in getattr(code, "co_positions", lambda: ())() if p[2]]
    return f"{min(columns) if columns else 0}:{_code_digest(code)}"


def _code_digest(code: types.CodeType) -> str:
    digest = hashlib.sha1(code.co_code)
    digest.update(repr((code.co_names, code.co_varnames, code.co_freevars)).encode())
    for const in code.co_consts:
        digest.update((_code_digest(const) if isinstance(const, types.CodeType)
                       else repr(const)).encode())
    return digest.hexdigest()[:12]


def read_names(code: types.CodeType) -> set:
    """The global and attribute names a function's code (and the code nested in it) reads."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= read_names(const)
    return names


def foreign_globals(f: types.FunctionType) -> dict:
    """For a function whose globals are not its module's (made by exec over a dict of its own):
    the globals its code reads, which say what it computes as much as its closure does. Empty
    for a module's own function."""
    module = sys.modules.get(f.__module__ or "")
    if module is not None and getattr(module, "__dict__", None) is f.__globals__:
        return {}
    return {name: f.__globals__[name] for name in sorted(read_names(f.__code__))
            if name in f.__globals__ and not name.startswith("__")}
