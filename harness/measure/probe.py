"""Was the custom gradient used at all? A probe around `tf.custom_gradient`.

A mode can silently differentiate a custom-gradient function's body instead of
calling its gradient function: eager does it for a call with keyword arguments
only (tensorflow/tensorflow#65839), because `_eager_mode_decorator` records
the op with the positional inputs only and tape.h's ShouldRecord drops a
record with no watched input. Values alone show it only when the two
gradients differ, so the probe watches the calls.

`install()` replaces `tf.custom_gradient` (the same function object as
`tf.compat.v1.custom_gradient`) with a wrapper that hands TensorFlow's own
decorator a forward function counting its calls and returning a gradient
function counting its own; the gradient function keeps whether it accepts
`variables`, which is what `custom_gradient.py` inspects. It must run before
the case modules are imported, since `@tf.custom_gradient` is looked up when a
module is executed: the worker installs it before loading any case. Functions
decorated before that (a user's, passed to `harness.check`) are not observed,
and their runs report no usage.

Only calls made outside any gradient function count as the case's own: a
custom-gradient function called inside another's gradient function serves a
higher order, and is not needed when that order is the last one computed.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from typing import Callable, Optional

import tensorflow as tf

from harness.records import Usage

__all__ = ["add", "install", "installed", "name_of", "paused", "recorded", "start", "finish",
           "union"]

_REAL = tf.custom_gradient
_state = {"depth": 0, "ran": {}, "called": set(), "installed": False}


def _counting(grad_fn: Callable, name: str) -> Callable:
    # custom_gradient.py passes `variables=` only to a grad_fn whose signature
    # names it (or takes **kwargs); the wrapper must answer that check the same way.
    try:
        parameters = inspect.signature(grad_fn).parameters.values()
        takes_variables = any(p.name == "variables" or p.kind is p.VAR_KEYWORD for p in parameters)
    except (TypeError, ValueError):
        takes_variables = False

    def called(*args, **kwargs):
        _state["called"].add(name)
        _state["depth"] += 1
        try:
            return grad_fn(*args, **kwargs)
        finally:
            _state["depth"] -= 1

    if takes_variables:
        @functools.wraps(grad_fn)
        def counted_with_variables(*upstream, **kwargs):
            return called(*upstream, **kwargs)
        return counted_with_variables

    @functools.wraps(grad_fn)
    def counted(*upstream):
        return called(*upstream)
    return counted


def name_of(f: Callable) -> str:
    """The user's own name for a custom-gradient function: through functools.wraps chains,
    partials and tf.function wrappers, without AutoGraph's "tf__" prefix."""
    seen = set()
    while id(f) not in seen:
        seen.add(id(f))
        inner = (getattr(f, "python_function", None) or getattr(f, "__wrapped__", None)
                 or (f.func if isinstance(f, functools.partial) else None))
        if inner is None or not callable(inner):
            break
        f = inner
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__
    # AutoGraph converts a function into one named tf__NAME (and its locals' qualnames with it).
    return ".".join(part[4:] if part.startswith("tf__") else part for part in name.split("."))


def _probing_custom_gradient(f: Optional[Callable] = None):
    if f is None:  # used as @tf.custom_gradient()
        return _probing_custom_gradient
    name = name_of(f)

    @functools.wraps(f)
    def forward(*args, **kwargs):
        top_level = _state["depth"] == 0
        result, grad_fn = f(*args, **kwargs)
        if top_level:
            _state["ran"].setdefault(name, None)
        return result, _counting(grad_fn, name)

    return _REAL(forward)


def install() -> None:
    """Makes every later `@tf.custom_gradient` observable. Idempotent."""
    if _state["installed"]:
        return
    tf.custom_gradient = _probing_custom_gradient
    tf.compat.v1.custom_gradient = _probing_custom_gradient
    tf.compat.v2.custom_gradient = _probing_custom_gradient
    _state["installed"] = True


def installed() -> bool:
    return _state["installed"]


@contextlib.contextmanager
def paused():
    """Forwards run inside are not the case's own: a builder's Keras model
    construction calls layers symbolically, and their gradients are never needed."""
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1


def start() -> None:
    """Forgets what earlier runs called; call before running a mode."""
    _state["ran"] = {}
    _state["called"] = set()
    _state["depth"] = 0


def finish() -> Usage:
    """What the run since `start()` called."""
    ran = tuple(_state["ran"])
    return Usage(ran=ran, unused=tuple(n for n in ran if n not in _state["called"]))


def recorded() -> tuple[tuple[str, ...], frozenset]:
    """What the run since `start()` has seen so far: the functions that ran, and those whose
    gradient function was called."""
    return tuple(_state["ran"]), frozenset(_state["called"])


def union(a: tuple[tuple[str, ...], frozenset], b: tuple[tuple[str, ...], frozenset]):
    """Two `recorded()` values as one, in the order the functions first ran."""
    return tuple(dict.fromkeys(a[0] + b[0])), a[1] | b[1]


def add(seen: tuple[tuple[str, ...], frozenset]) -> None:
    """Counts a `recorded()` value as seen in this run too (harness.measure.modes._reuse)."""
    for name in seen[0]:
        _state["ran"].setdefault(name, None)
    _state["called"].update(seen[1])
