"""Process-wide state a case can change and leave behind: TensorFlow's settings, and threads.

Each watched setting silently changes what every later case in the same
process computes: eager execution turned off makes the eager mode build graphs,
`run_functions_eagerly` makes the function mode eager, check numerics makes an
op that yields inf or NaN raise, a grappler option rewrites every graph
(bfloat16 matmuls, say), control flow v1 changes what the graph mode builds, a
mixed-precision policy or floatx changes Keras layers' dtypes, NumPy behaviour
changes type promotion, auto-clustering puts XLA under every graph. A graph
entered with `as_default()` and never left shows as eager execution turned off.
A thread the case started and left running can change any of these, or end
the process, while a later case runs.

The worker compares a snapshot taken after each case with the one taken at
start, looks for threads started since then, and retires itself if either
finds something. Reading everything costs well under a millisecond; TensorFlow
is imported only by `snapshot`, so the pure parts load without it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable, Collection, Optional

__all__ = ["changes", "left_running", "snapshot", "threads"]

# How long, in total, the threads a case started get to finish after it returns before they count
# as left running: a thread the case joins late, or that is ending, is not a leak.
_GRACE_S = 0.2

# Packages whose own threads (started lazily, by TensorFlow's runtime or Keras) are no case's doing.
_OWN_THREADS = ("tensorflow", "keras", "tf_keras")


def _read(get: Callable[[], object]) -> str:
    try:
        return str(get())
    except Exception as e:  # noqa: BLE001 - a TensorFlow without this setting has none to leak
        return f"unavailable ({type(e).__name__})"


def _keras(module_name: str, get: Callable) -> str:
    module = sys.modules.get(module_name)
    if module is None:  # never imported, so never changed: don't pay for the import
        return "not loaded"
    return _read(lambda: get(module))


def _check_numerics() -> str:
    # The callbacks are thread-local; a case runs on this thread, so these are the ones it added.
    from tensorflow.python.eager import context  # noqa: PLC0415

    on = any(type(getattr(f, "__self__", None)).__name__ == "CheckNumericsCallback"
             for f in context.context().op_callbacks)
    return "on" if on else "off"


def _other_op_callbacks() -> str:
    from tensorflow.python.eager import context  # noqa: PLC0415

    names = [getattr(f, "__qualname__", type(f).__qualname__)
             for f in context.context().op_callbacks
             if type(getattr(f, "__self__", None)).__name__ != "CheckNumericsCallback"]
    return ", ".join(names) or "none"


def _control_flow_v2() -> bool:
    # The switch itself: tf.compat.v1.control_flow_v2_enabled() is always True inside a function.
    from tensorflow.python.ops import control_flow_util  # noqa: PLC0415

    return control_flow_util.ENABLE_CONTROL_FLOW_V2


def _op_determinism() -> bool:
    from tensorflow.python.framework import config  # noqa: PLC0415

    return config.is_op_determinism_enabled()


def _global_seed() -> object:
    from tensorflow.python.eager import context  # noqa: PLC0415

    return context.context()._seed  # noqa: SLF001 - tf.random.set_seed's value has no public getter


def _grappler(tf) -> dict[str, str]:
    # One entry per option, so a change names the option rather than printing two whole dicts.
    try:
        options = tf.config.optimizer.get_experimental_options()
    except Exception as e:  # noqa: BLE001 - as _read
        return {
            "grappler options (tf.config.optimizer.set_experimental_options)": (
                f"unavailable ({type(e).__name__})"
            )
        }
    return {f"grappler option {name} (tf.config.optimizer.set_experimental_options)": str(value)
            for name, value in sorted(options.items())}


def snapshot() -> dict[str, str]:
    """The current value of every watched setting, as text; "unavailable (...)" where this
    TensorFlow has no such setting (reading one never raises)."""
    import tensorflow as tf  # noqa: PLC0415

    return _grappler(tf) | {
        "eager execution": _read(tf.executing_eagerly),
        "tf.config.run_functions_eagerly": _read(tf.config.functions_run_eagerly),
        "check numerics (tf.debugging.enable_check_numerics)": _read(_check_numerics),
        "other op callbacks (tf.debugging.experimental.enable_dump_debug_info, ...)": _read(
            _other_op_callbacks
        ),
        "XLA auto-clustering (tf.config.optimizer.get_jit)": _read(
            lambda: repr(tf.config.optimizer.get_jit())
        ),
        "control flow v2 (tf.compat.v1.disable_control_flow_v2)": _read(_control_flow_v2),
        "TF2 behaviour (tf.compat.v1.disable_v2_behavior)": _read(
            lambda: tf.__internal__.tf2.enabled()
        ),
        "resource variables (tf.compat.v1.disable_resource_variables)": _read(
            tf.compat.v1.resource_variables_enabled
        ),
        "op determinism (tf.config.experimental.enable_op_determinism)": _read(_op_determinism),
        "soft device placement (tf.config.set_soft_device_placement)": _read(
            tf.config.get_soft_device_placement
        ),
        "device policy (tf.config.experimental.set_device_policy)": _read(
            tf.config.experimental.get_device_policy
        ),
        "TensorFloat-32": _read(tf.config.experimental.tensor_float_32_execution_enabled),
        "global random seed (tf.random.set_seed)": _read(_global_seed),
        "NumPy behaviour (tf.experimental.numpy)": _read(lambda: hasattr(tf.Tensor, "ravel")),
        "tf_keras mixed precision policy": _keras(
            "tf_keras", lambda k: k.mixed_precision.global_policy().name
        ),
        "keras mixed precision policy": _keras(
            "keras", lambda k: k.mixed_precision.global_policy().name
        ),
        "tf_keras floatx": _keras("tf_keras", lambda k: k.backend.floatx()),
        "keras floatx": _keras("keras", lambda k: k.backend.floatx()),
    }


# What a Keras setting reads as once the case imports Keras without changing it.
_KERAS_DEFAULTS = {"tf_keras mixed precision policy": "float32",
                   "keras mixed precision policy": "float32", "tf_keras floatx": "float32",
                   "keras floatx": "float32"}


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """One line per setting that differs, e.g. "eager execution: True -> False"; a setting only one
    of them has (a grappler option the case set) reads as "unset" in the other.

    A Keras module imported by the case shows as "not loaded -> float32":
    importing is not a change, so that transition is ignored unless the
    setting is not Keras's default float32.
    """
    found = []
    for key in list(before) + [key for key in after if key not in before]:
        old, new = before.get(key, "unset"), after.get(key, "unset")
        if new == old or (old == "not loaded" and new == _KERAS_DEFAULTS.get(key)):
            continue
        found.append(f"{key}: {old} -> {new}")
    return found


def threads() -> frozenset[threading.Thread]:
    """The threads alive now: the baseline `left_running` compares with."""
    return frozenset(threading.enumerate())


def _target(thread: threading.Thread) -> Optional[Callable]:
    # Thread.run drops _target once it returns; a thread that is still running has it.
    target = getattr(thread, "_target", None)
    if target is None and type(thread).run is not threading.Thread.run:
        target = type(thread).run
    return target


def _where(target: Optional[Callable]) -> str:
    """The target's name and, for Python code, its file's name and line: a case file's module name
    is the loader's own, so the file is what a reader knows it by."""
    if target is None:
        return "unknown"
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    code = getattr(target, "__code__", None)
    if code is None:
        return f"{getattr(target, '__module__', None) or '?'}.{name}"
    return f"{name}, {os.path.basename(code.co_filename)} line {code.co_firstlineno}"


def _theirs(thread: threading.Thread) -> bool:
    module = getattr(_target(thread), "__module__", None) or ""
    return module.split(".", 1)[0] in _OWN_THREADS


def left_running(before: Collection[threading.Thread], grace: float = _GRACE_S) -> list[str]:
    """One line per thread started since `before` (a `threads()` value) that is still alive after
    `grace` seconds in all, e.g. "left a thread running: Thread-1 (flip) (target flip, cases.py line
    12)".

    Threads whose target is TensorFlow's or Keras's own are theirs, not a case's, and ignored.
    Waits only when there is a new thread.
    """
    def started() -> list[threading.Thread]:
        return [t for t in threading.enumerate()
                if t not in before and t is not threading.current_thread() and not _theirs(t)]

    deadline = time.monotonic() + grace
    for thread in started():
        thread.join(max(0.0, deadline - time.monotonic()))
    return [f"left a thread running: {t.name} ({'daemon, ' if t.daemon else ''}target "
            f"{_where(_target(t))})"
            for t in started() if t.is_alive()]
