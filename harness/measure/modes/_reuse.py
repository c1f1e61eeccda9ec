"""Keeping what a mode built (a traced tf.function, a graph and its session) for the next job.

A normal run gives a mode every point of a case at once, and the mode traces
once and builds one graph per signature for all of them. Explore (harness.explore.search)
sends one point at a time; inside `kept(store)` a mode keeps what it built in
`store`, keyed by what it depends on (the case, the options, the signature), so
the next point of that signature is only a call or a feed.

What a kept build observed of the custom gradients when it was made (harness.measure.probe)
is kept with it and counted again on every later use, since a call that does not
trace (a feed) runs no Python code of the case.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Hashable, Iterator, Optional, TypeVar

from harness.measure import probe

__all__ = ["close", "keeping", "kept", "observed", "reused"]

T = TypeVar("T")
_store: Optional[dict] = None


@contextlib.contextmanager
def kept(store: dict) -> Iterator[None]:
    """Within it, `reused` keeps builds in `store` (the caller clears it, `close`-ing what it
    holds)."""
    global _store
    before, _store = _store, store
    try:
        yield
    finally:
        _store = before


def keeping() -> bool:
    """Whether builds are kept for later jobs (inside `kept`): else the mode closes what it
    built."""
    return _store is not None


def reused(key: Hashable, make: Callable[[], T]) -> T:
    """What `make()` built for `key`: made now, or kept from an earlier job inside `kept`."""
    if _store is None:
        return make()
    if key not in _store:
        _store[key] = make()
    return _store[key]


def observed(build) -> None:
    """Adds what the probe saw during this use of `build` to what `build` has seen, and back:
    a use that traced nothing then reports what its tracing saw."""
    seen = getattr(build, "seen", None)
    now = probe.recorded()
    build.seen = now if seen is None else probe.union(seen, now)
    probe.add(build.seen)


def close(store: dict) -> None:
    """Closes every kept build that holds a resource (a session), and forgets them all."""
    for build in store.values():
        with contextlib.suppress(Exception):  # a session that cannot close is gone anyway
            getattr(build, "close", lambda: None)()
    store.clear()
