"""Giving back the memory of the graphs a mode built once nothing uses them.

`tf.custom_gradient` in a graph (a `tf.function` trace, a `tf.compat.v1` graph, a
`tf.while_loop` body) registers its gradient function in TensorFlow's global gradient registry
under a new name, `CustomGradient-N`, and never removes it (`_graph_mode_decorator` in
tensorflow/python/ops/custom_gradient.py). That function holds the traced outputs, so the
registry keeps every graph that ever called a custom gradient alive for the life of the process
(tensorflow/tensorflow#27492, #97697): a worker replaying a heavy function grows by the whole
of each trace, hundreds of MiB for one of TensorFlow Probability's hypergeometric functions,
trace after trace.

Inside `released()`, each such function is held by the graph it was registered from, and the
registry holds it only weakly: while that graph lives (a kept trace, a session the next point
feeds), the registry hands out the same function as before; once nothing else holds the graph,
the graph, its function and its registry entry go together. No op of a graph that is gone can ask
for its gradient, so no lookup can miss.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import threading
import weakref
from typing import Callable, Iterator, Optional

from harness import lifetime
from harness.measure.modes.shared import tf, traced_as_is  # noqa: F401 - tf: TensorFlow first

from tensorflow.python.framework import ops

__all__ = ["COLLECT_AFTER_MIB", "released"]

# A mode that grew its process by this much has built something large: collecting its garbage now
# and handing the freed pages back (glibc's malloc_trim) keeps the next mode from starting on top
# of it. Below it, Python's own collector is left to do it in its time.
COLLECT_AFTER_MIB = 256.0
_PREFIX = "CustomGradient-"
_HELD = "_harness_custom_gradients"


@contextlib.contextmanager
def released() -> Iterator[None]:
    """Within it (in this thread), the custom gradients registered from a graph live as long as
    that graph; on leaving, after a mode that grew the process by COLLECT_AFTER_MIB, its garbage
    is collected and the freed memory given back to the system."""
    _install()
    registry = ops._gradient_registry  # pylint: disable=protected-access
    outer = getattr(_NOTING, "noted", None)
    noted: list = []
    _NOTING.noted = noted
    before = lifetime.resident_mib(os.getpid(), anonymous=True)
    try:
        yield
    finally:
        _NOTING.noted = outer
        _held_by_graphs(registry, noted)
        after = lifetime.resident_mib(os.getpid(), anonymous=True)
        if before is not None and after is not None and after - before >= COLLECT_AFTER_MIB:
            gc.collect()
            _trim()


# The lists of (name, graph) that `released` blocks are filling, one per thread.
_NOTING = threading.local()


def _install() -> None:
    """Wraps the gradient registry's `register` once, for good: the wrapper calls TensorFlow's and
    notes what a `released` block of the calling thread registered, and nothing else. (Its
    instances have no attributes of their own, so it is wrapped on the class, for every registry,
    and notes only the gradient registry's.) Installed once, it is never taken off, so blocks in
    several threads cannot undo each other's."""
    kind = type(ops._gradient_registry)  # pylint: disable=protected-access
    register = kind.__dict__["register"]
    if getattr(register, _HELD, False):
        return

    def noting(self, candidate, name=None):
        register(self, candidate, name)
        noted = getattr(_NOTING, "noted", None)
        if (noted is not None and self is ops._gradient_registry  # pylint: disable=protected-access
                and isinstance(name, str) and name.startswith(_PREFIX)):
            noted.append((name, ops.get_default_graph()))

    setattr(noting, _HELD, True)
    kind.register = noting


def _held_by_graphs(registry, noted) -> None:
    entries = registry._registry  # pylint: disable=protected-access
    for name, graph in noted:
        entry = entries.get(name)
        if entry is None or getattr(entry.get("type"), _HELD, False):  # gone, or held already
            continue
        try:
            if getattr(graph, _HELD, None) is None:
                setattr(graph, _HELD, [])
            getattr(graph, _HELD).append(entry["type"])
        except AttributeError:  # a graph that takes no attribute: left as TensorFlow has it
            continue
        entry["type"] = _weakly(entry["type"], name, lambda n=name: entries.pop(n, None))


def _weakly(fn: Callable, name: str, forget: Callable[[], None]) -> Callable:
    """`fn`, reached through a weak reference; its registry entry is forgotten when it goes."""
    ref = weakref.ref(fn, lambda _: forget())

    def gradient(op, *grads):
        live = ref()
        if live is None:  # unreachable: an op of this name lived in a graph that is gone
            raise LookupError(f"the gradient function {name} went with the graph it was made in")
        return live(op, *grads)

    setattr(gradient, _HELD, True)
    # Called as it is by AutoGraph, as TensorFlow's own function was (tf.saved_model.save traces the
    # registry's gradient functions with tf.function).
    return traced_as_is(gradient)


def _trim() -> None:
    libc = _libc()
    if libc is not None:
        with contextlib.suppress(Exception):
            libc.malloc_trim(0)


_LIBC: list = []


def _libc() -> Optional[ctypes.CDLL]:
    """glibc, where this process has it (Linux); None elsewhere (musl, macOS)."""
    if not _LIBC:
        try:
            libc = ctypes.CDLL(None)
            _LIBC.append(libc if hasattr(libc, "malloc_trim") else None)
        except OSError:
            _LIBC.append(None)
    return _LIBC[0]
