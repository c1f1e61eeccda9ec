"""Checking a function with no case written: `python -m harness check PATH.py:NAME`.

Inputs come from the command line as Python literals, parsed with
`ast.literal_eval` (never `eval`): a number or nested lists is one argument, a
tuple gives one value per argument. The Case is made where the function can be
imported (a worker), from a CheckSpec that is plain data.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
from typing import Any, Sequence

import numpy as np

from harness.case import Case, Domain

__all__ = ["CheckSpec", "InputError", "parse_inputs", "parse_expect", "make_case", "case_for"]

_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")


class InputError(ValueError):
    """An --inputs value or --dtype is not usable; the message says what to write instead."""


@dataclasses.dataclass(frozen=True)
class CheckSpec:
    """What `check` was asked: a target "PATH.py:NAME", input literals, dtype and order,
    and the Case fields the command line can give: wrt, expectations (as --expect
    texts) and symmetric arguments. `explore` gives domains (argument name, Domain)
    instead of inputs: the case's one point then only fixes each argument's dtype and
    shape, and is not run."""

    target: str
    inputs: tuple[str, ...]
    dtype: str = "float32"
    order: int = 1
    wrt: tuple[str, ...] = ()
    expect: tuple[str, ...] = ()
    symmetric: tuple[str, ...] = ()
    domains: tuple[tuple[str, Domain], ...] = ()

    @property
    def path(self) -> str:
        return self.target.rsplit(":", 1)[0]

    @property
    def name(self) -> str:
        return self.target.rsplit(":", 1)[1]


def _numpy_dtype(dtype: str):
    if dtype == "bfloat16":
        # TensorFlow's own bfloat16 where it is loaded (a worker): 2.12 refuses a newer ml_dtypes'
        # type, and 2.13 has no ml_dtypes. The main process only checks literals, without
        # TensorFlow.
        tf = sys.modules.get("tensorflow")
        if tf is not None:
            return tf.bfloat16.as_numpy_dtype
        try:
            # ml_dtypes comes with most TensorFlow releases, and is only needed for bfloat16.
            import ml_dtypes  # noqa: PLC0415
        except ImportError:
            return np.dtype("float32")  # the literal's syntax is all the main process checks
        return ml_dtypes.bfloat16
    return np.dtype(dtype)


def parse_inputs(texts: Sequence[str], dtype: str) -> list[tuple[np.ndarray, ...]]:
    """One tuple of arguments per --inputs text, each argument cast to `dtype`.

    Raises:
      InputError: a text is not a literal of numbers, the points have different
        numbers of arguments, or the dtype is not a floating or complex one.
    """
    if dtype not in _DTYPES:
        raise InputError(f"--dtype={dtype!r} cannot be differentiated; use one of "
                         f"{', '.join(_DTYPES)}")
    if not texts:
        raise InputError("give at least one --inputs, e.g. --inputs '1.0' or --inputs '(1.0, [2.0, "
                         "3.0])'")
    points = []
    for text in texts:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise InputError(f"--inputs {text!r} is not a Python literal; write numbers or nested "
                             "lists, e.g. '1.0', '[1.0, 2.0]', or a tuple '(1.0, 2.0)' for two "
                             "arguments") from None
        args = value if isinstance(value, tuple) else (value,)
        arrays = []
        for arg in args:
            try:
                array = np.asarray(arg)
            except ValueError as e:
                raise InputError(
                    f"--inputs {text!r}: {e}; nested lists must be rectangular"
                ) from None
            if array.dtype.kind not in "biufc" or array.size == 0 and array.ndim == 1:
                raise InputError(f"--inputs {text!r}: {arg!r} is not a number or a list of numbers")
            if array.dtype.kind == "c" and np.dtype(_numpy_dtype(dtype)).kind != "c":
                raise InputError(f"--inputs {text!r}: {arg!r} is complex, but --dtype={dtype} "
                                 "would drop its imaginary part; give --dtype complex64 (or "
                                 "complex128)")
            arrays.append(_cast(text, arg, array, dtype))
        points.append(tuple(arrays))
    if len({len(p) for p in points}) > 1:
        raise InputError("every --inputs must give the same number of arguments; got "
                         + ", ".join(str(len(p)) for p in points))
    return points


def _cast(text: str, arg, array: np.ndarray, dtype: str) -> np.ndarray:
    """`array` as `dtype`; a value the dtype cannot hold (one that would become infinite, or a
    nonzero one that would become zero) is an InputError rather than another point."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        cast = array.astype(_numpy_dtype(dtype))
    wide = array.astype(np.complex128 if array.dtype.kind == "c" else np.float64)
    overflow = np.isfinite(wide) & ~np.isfinite(cast)
    underflow = (wide != 0) & (cast == 0)
    for bad, what in ((overflow, "infinite"), (underflow, "zero")):
        if bad.any():
            value = complex(wide[bad].flat[0])
            shown = f"{value.real:g}" if value.imag == 0 else f"{value:g}"
            info = np.finfo(_numpy_dtype(dtype))
            raise InputError(f"--inputs {text!r}: {shown} does not fit --dtype={dtype} (magnitudes "
                             f"from {info.smallest_subnormal:g} to {info.max:g}): it would become "
                             f"{what}; give a value in that range or a wider --dtype")
    return cast


_EXPECT_FORM = ("MODES:OUTCOME[:REASON], e.g. 'numeric:surrogate:a straight-through estimator' "
                "or 'all:ValueError'")


def parse_expect(text: str) -> tuple[tuple[str, ...], str, str]:
    """(modes, outcome, reason) from an --expect text MODES:OUTCOME[:REASON].

    MODES is a comma list of mode and oracle names, or "all" for every mode;
    OUTCOME an exception class name or one of "values differ", "bad gradient",
    "gradient unused", "surrogate" (on the numeric oracle). What the Case would
    refuse (eager values differ, say) it refuses when the case is made.

    Raises:
      InputError: the text does not have that form, or names an unknown mode.
    """
    from harness import mode_names, oracle_names  # noqa: PLC0415
    from harness.case import _OUTCOMES  # noqa: PLC0415

    parts = [p.strip() for p in text.split(":", 2)]
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise InputError(f"--expect {text!r}: write {_EXPECT_FORM}")
    names = [n.strip() for n in parts[0].split(",") if n.strip()]
    modes: list[str] = []
    for name in names:
        if name == "all":
            modes += [m for m in mode_names.KNOWN_MODES if m not in modes]
        elif name in mode_names.KNOWN_MODES or name in oracle_names.ROWS:
            modes.append(name)
        else:
            raise InputError(f"--expect {text!r}: unknown mode {name!r}; use 'all', modes "
                             f"({', '.join(mode_names.KNOWN_MODES)}) or oracles "
                             f"({', '.join(oracle_names.ROWS)})")
    outcome = parts[1]
    if outcome not in _OUTCOMES and not outcome.isidentifier():
        raise InputError(f"--expect {text!r}: {outcome!r} is neither an exception class name nor "
                         f"one of {', '.join(repr(o) for o in _OUTCOMES)}")
    if outcome == "values differ" and "all" in names:
        # every mode but the one compared with
        modes = [m for m in modes if m != mode_names.REFERENCE_MODE]
    reason = (parts[2] if len(parts) > 2
              and parts[2] else "declared on the command line with --expect")
    return tuple(modes), outcome, reason


def _is_builder(obj: Any) -> bool:
    try:
        parameters = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return False
    return not any(p.default is p.empty
                   and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
                   for p in parameters)


def _argument_names(fn: Any, count: int) -> list[str]:
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    if len(names) >= count:
        return names[:count]
    return ["x"] if count == 1 else [f"x{i}" for i in range(count)]


def case_for(obj: Any, name: str, points: Sequence[tuple[np.ndarray, ...]], order: int, source: str,
             **options: Any) -> Case:
    """A Case for a function (or a zero-argument builder) and argument tuples.

    Extra keyword arguments (wrt, tolerance, expectations, wrt_variables, ...)
    go to Case unchanged.
    """
    builder = _is_builder(obj)
    names = _argument_names(None if builder else obj, len(points[0]))
    description = options.pop("description", f"{name} checked from the command line")
    return Case(id=f"check.{name}", points=[dict(zip(names, p)) for p in points],
                **({"build": obj} if builder else {"fn": obj}), order=order, source=source,
                description=description, **options)


def make_case(spec: CheckSpec) -> Case:
    """Imports the target file and makes its Case.

    Raises:
      loader.LoadError: the file cannot be loaded or lacks NAME.
    """
    from harness import loader  # noqa: PLC0415 - the target imports TensorFlow

    from harness.case import Expectation  # noqa: PLC0415

    module = loader.load_module(spec.path)
    obj = getattr(module, spec.name, None)
    if obj is None or not callable(obj):
        defined = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                         and getattr(v, "__module__", None) == module.__name__)
        raise loader.LoadError(f"{spec.path} defines no function {spec.name!r}; functions there: "
                               f"{', '.join(defined) or 'none'}")
    options: dict[str, Any] = {}
    if spec.wrt:
        options["wrt"] = spec.wrt
    if spec.symmetric:
        options["symmetric"] = spec.symmetric
    if spec.expect:
        options["expectations"] = [Expectation(modes=m, outcome=o, reason=r)
                                   for m, o, r in (parse_expect(t) for t in spec.expect)]
    if spec.domains:
        return _explored_case(obj, spec, options)
    return case_for(obj, spec.name, parse_inputs(spec.inputs, spec.dtype), spec.order,
                    source=spec.target, **options)


def _explored_case(obj: Any, spec: CheckSpec, options: dict) -> Case:
    """The Case `explore PATH.py:NAME` searches: one placeholder point inside the domains, by
    name."""
    from harness.case import CaseError  # noqa: PLC0415

    domains = dict(spec.domains)
    names = _argument_names(None if _is_builder(obj) else obj, len(domains))
    if _is_builder(obj) or set(names) != set(domains):
        given = ", ".join(domains)
        wanted = ("a function's arguments" if _is_builder(obj)
                  else f"the arguments {', '.join(names)}")
        raise CaseError(f"--domain names {given}; give one --domain for each of {wanted} of "
                        f"{spec.target}")
    dtype = _numpy_dtype(spec.dtype)
    point = {}
    for name in names:
        d = domains[name]
        low, high = d.bounds
        shape = d.shape[0] if d.shape else ()
        point[name] = np.full(shape, (low + high) / 2, dtype=dtype)
    return Case(id=f"check.{spec.name}", points=[point], fn=obj, order=spec.order,
                source=spec.target, description=f"{spec.name} explored from the command line",
                domains=domains, **options)
