"""The numeric oracle's evaluations: a case's order-k values at shifted sources.

Each evaluation runs the case's own tape code up to order k and returns the order-k values element
by element (the plain chain's, and the weighted chain's times the next order's upstream weights),
so that an elementwise function can be read element by element from one shift of every element.
A case whose eager forward is slow (an eager `tf.while_loop`, which runs its body in Python at
every iteration) is evaluated through one `tf.function` per order instead, where that function's
values at the point are the eager evaluation's, or the agreed mode's.
"""

from __future__ import annotations

import collections
import time
from typing import Callable, Optional, Sequence

import numpy as np

from harness.criteria import differences
from harness.measure import upstream
from harness.case import Case, Point
from harness.measure.modes.shared import Steps, build_subject, is_target, tape_chains, tf
from harness.records import RunOptions, error_info
from harness.criteria.tolerance import NUMERIC_STEPS

__all__ = ["CaseRaised", "Evaluator", "NotWide", "SLOW_POINT_S", "TRACE_AFTER_S",
           "TRACE_AGREEMENT"]

# An eager evaluation slower than this is worth a trace: the oracle makes tens of evaluations per
# order, and tracing costs about as much as a few of them. Either way gives the same values up to
# rounding, which TRACE_AGREEMENT checks at the point itself.
TRACE_AFTER_S = 0.05
# A point that took the agreed mode this long (its forward, gradients and weighted chain) has an
# eager forward well over TRACE_AFTER_S: its first evaluation is traced, and checked against the
# agreed mode's values, without an eager one beside it (a 10,000-element hyp2f1 of TFP takes 17 s
# eagerly in float64, and its tape 8 GB).
SLOW_POINT_S = 2.0
# How close the traced values at the point must be to the eager (or agreed) ones to be used,
# relative to the largest of them: a function that computes something else when traced keeps its
# eager evaluation.
TRACE_AGREEMENT = 1e-9
# The agreed values in a dtype coarser than float64 carry its rounding: this many ulps of it.
_ULPS = 64.0
# Relative shifts of the sources that tell a function computing in float64 from one that casts its
# float64 inputs to float32 inside (a Keras 3 layer casts its inputs to its compute dtype): the
# small one is below half of float32's resolution (2**-25), so cast to float32 the moved inputs
# are the same numbers and the values do not move at all, while a float64 computation moves them
# by many of its ulps, cancellation inside it (log(1 + e^x) at x = -14) included (where a larger
# term inside absorbs the move, at x = -19, the values differ from the own dtype's, which
# `narrower_inside` compares); the large one says how far a float64 computation would move them.
_PROBE_SMALL = 2.0 ** -30
_PROBE_LARGE = 2.0 ** -14


# A case evaluated eagerly at this many points of one signature is traced from the next point on,
# however fast each evaluation is: explore draws hundreds of points of one signature, where a
# trace soon costs less than the tens of eager evaluations each point takes. No case of the
# library has that many points.
TRACE_AFTER_POINTS = 16

# The traced functions kept for the next points of their case (the oldest go first; an evaluator
# for another case lets them all go, traced or not), and how many points of each case, order and
# signature were evaluated eagerly.
_TRACED: dict = {}
_TRACED_KEPT = 8
_EAGER_POINTS: collections.Counter = collections.Counter()


class NotWide(Exception):
    """The function computed in another dtype than float64: its differences would be noise."""


class CaseRaised(Exception):
    """The case's own code raised at a shifted point (or in a dtype it refuses)."""

    def __init__(self, error):
        super().__init__(str(error))
        self.info = error_info(error, "")


Values = tuple[np.ndarray, Optional[np.ndarray]]


class Evaluator:
    """A case's order-k values at shifted sources: the plain chain's elements, and the weighted
    chain's elements times the next order's upstream weights (so that their sum is what the next
    order's weighted gradient differentiates)."""

    def __init__(self, case: Case, point: Point, wide: bool, weighted: bool, agreed=None,
                 agreed_seconds: float = 0.0):
        self.case = case
        for other in [k for k in _TRACED if k[:2] != (id(case.fn), case.id)]:
            del _TRACED[other]  # another case's: its points are done, and its graph is large
        # The agreed mode's values per order (Outputs): what a traced evaluation must give at the
        # point to be used without an eager evaluation beside it.
        self.agreed = agreed
        self.wide = wide
        self.seed = upstream.seed(case.id, point.label) if weighted else None
        values = [upcast(v) if wide else v for v in point.values]
        self.args = values
        try:
            if wide:
                with tf.variable_creator_scope(upcast_variable):
                    self.subject = build_subject(case)
            else:
                self.subject = build_subject(case)
        except Exception as e:  # noqa: BLE001 - the case's builder
            raise CaseRaised(e) from e
        self.bases = ([np.array(values[i]) for i in case.wrt_indices]
                      + [v.numpy() for v in self.subject.variables])
        self.tables = (None if self.seed is None
                       else tf.constant(upstream.flat_tables(self.seed, case.order)))
        self.weighted_error = ""  # what the weighted chain raised here, if it did
        self.traced_orders: set[int] = set()  # the orders evaluated through a tf.function
        # What the traced values at the point were found equal to, and to which relative
        # tolerance: "eager" (this evaluator's eager evaluation), "agreed" (the agreed mode's).
        self.traced_against: dict[str, float] = {}
        self._base: dict[int, Values] = {}
        self._gradients: dict[int, tuple[list, Optional[list]]] = {}
        self._traced: dict[int, object] = {}
        self.calls = 0  # evaluations at shifted points
        # An eager evaluation took longer than TRACE_AFTER_S, or the agreed mode's did (its
        # point took over SLOW_POINT_S): evaluated through a tf.function from the start.
        self.slow = agreed_seconds > SLOW_POINT_S
        self.shapes: dict[int, list[tuple]] = {}  # each order's value shapes, as `values` has them
        self.not_float64 = ""  # why the differences are not taken in float64, where they are not

    def dtype(self) -> str:
        if self.wide:
            return "float64"
        # The coarsest dtype among the sources sets the step.
        return max((b.dtype.name for b in self.bases), key=lambda n: NUMERIC_STEPS.get(n, 0.0))

    def base(self, order: int) -> Values:
        """`values` at the unshifted point, computed once per order (and the traced function
        made there, when the eager evaluation is slow)."""
        if order in self._base:
            return self._base[order]
        # A builder's function (with its variables) is evaluated eagerly: its variables are moved
        # by assignment, and a trace of one build would serve the next point's build.
        traceable = self.case.fn is not None
        if (self.slow or self._often(order)) and traceable:
            found = self._trace(order, *self._agreed_values(order), against="agreed")
            if found is not None:
                self._base[order] = found
                return found
        started = time.perf_counter()
        found = self._eager(order, self._shifted([np.zeros(b.shape) for b in self.bases]))
        _EAGER_POINTS[self._key(order)] += 1
        if time.perf_counter() - started > TRACE_AFTER_S and traceable:
            self.slow = True
            found = self._trace(order, found[0], TRACE_AGREEMENT, against="eager") or found
        self._base[order] = found
        return found

    def _agreed_values(self, order: int) -> tuple[Optional[np.ndarray], float]:
        """The agreed mode's order `order` values as `values` flattens them (None: there are
        none), and how closely a traced evaluation must meet them: to TRACE_AGREEMENT, or to the
        rounding of the dtype they were computed in, where that is coarser than float64."""
        if self.agreed is None or order >= len(self.agreed):
            return None, 0.0
        # A None (no gradient) is no value: `values` and `gradients` leave it out as well.
        present = [o for o in self.agreed[order] if o.value is not None]
        outputs = [o for o in present if o.dtype.startswith(("float", "bfloat"))]
        if not outputs or len(outputs) != len(present):
            return None, 0.0
        rtol = max([TRACE_AGREEMENT] + [_ULPS * differences.epsilon(o.dtype) for o in outputs])
        flat = np.concatenate([[]] + [np.ravel(np.asarray(o.value, np.float64)) for o in outputs])
        return flat, rtol

    def narrower_inside(self, own: Callable[[], Optional[tuple[np.ndarray, str]]]) -> str:
        """Why the forward's float64 values do not follow the float64 inputs (empty: they do, or
        nothing says otherwise): moved by a relative shift of every source element below half of
        float32's resolution, most of the values that a float64 computation would move by many of
        its ulps stay exactly where they were, and are what the function gives in its own dtype.
        A float64 output computed from the inputs cast to float32 inside looks like float64, and
        its differences at a float64 step are float32 rounding (zero, or noise).

        `own` gives the forward's values in the sources' own dtype and that dtype's name (None:
        it raised); it runs only where values stay. A larger term inside a float64 computation
        absorbs a small move too (log(1 + e^x) at x = -19 adds 5.6e-9 to 1, and the move to 1e-16,
        below 1's half-ulp): such values are not the own dtype's (0 in float32, where 1 + 5.6e-9
        is 1), and float64 is the better of the two to difference."""
        base = self.base(0)[0]
        small = self.values(0, [_PROBE_SMALL * b for b in self.bases])[0]
        large = self.values(0, [_PROBE_LARGE * b for b in self.bases])[0]
        if base is None or small is None or large is None:
            return ""
        with np.errstate(invalid="ignore", over="ignore"):
            predicted = np.abs(large - base) * (_PROBE_SMALL / _PROBE_LARGE)
            finite = np.isfinite(base) & np.isfinite(large) & np.isfinite(small)
            # Values a float64 computation would move by at least 64 of its ulps.
            moved = finite & (predicted > _ULPS * differences.epsilon("float64") * np.abs(base)
                              + differences.tiny("float64"))
            still = moved & (small == base)
        if not moved.any() or np.count_nonzero(still) * 2 <= np.count_nonzero(moved):
            return ""
        kept, alike = np.count_nonzero(still), ""
        found = own()
        if found is not None and np.shape(found[0]) == np.shape(base):
            narrow, dtype = found
            with np.errstate(invalid="ignore", over="ignore"):
                size = np.maximum(np.abs(base), np.abs(narrow))
                near = _ULPS * differences.epsilon(dtype) * size + differences.tiny(dtype)
                same = still & (np.abs(base - narrow) <= near)
            if np.count_nonzero(same) * 2 <= np.count_nonzero(moved):
                return ""
            alike = (f", and {np.count_nonzero(same)} of them are its {dtype} values to "
                     f"{_ULPS:g} of their ulps")
        return (f"float64 inputs moved by {_PROBE_SMALL:.2g} of their size leave {kept} of "
                f"{np.count_nonzero(moved)} forward values exactly as they were, where a float64 "
                f"computation would move them{alike} (a cast to a narrower dtype inside)")

    def values(self, order: int, shifts: Sequence[np.ndarray]) -> Values:
        """The order `order` values, element by element in float64, with every source moved by its
        shift: (plain, weighted times the order + 1 weights, or None)."""
        self.calls += 1
        if order in self._traced:
            return self._from_traced(order, self._shifted(shifts))
        return self._eager(order, self._shifted(shifts))

    def gradients(self, order: int) -> tuple[list, Optional[list]]:
        """The case's own order `order` gradients at the unshifted point, per source, in this
        evaluator's dtype (None: unconnected): the plain chain's and the weighted chain's (or
        None)."""
        # A slow eager forward makes a slower eager tape, which also holds every intermediate of
        # the forward until the gradient is taken (an eager while loop's, iteration by iteration):
        # the traced function computes the same gradients, where they are the agreed mode's.
        traceable = self.case.fn is not None  # a builder's function is never traced (`base`)
        if order not in self._gradients and ((self.slow and traceable)
                                             or self._often(order, "gradients")):
            self._gradients[order] = self._traced_gradients(order)
        if self._gradients.get(order) is None:
            # Every order up to the case's from one evaluation, where it runs: the orders below
            # are computed on the way (the order-k nest computes orders 0 to k).
            for highest in dict.fromkeys((self.case.order, order)):
                try:
                    self._eager_gradients(highest)
                    break
                except CaseRaised:
                    if highest == order:
                        raise
            _EAGER_POINTS[self._key(order) + ("gradients",)] += 1
        return self._gradients[order]

    def _eager_gradients(self, highest: int) -> None:
        """Keeps `gradients(k)` for every order k from 1 to `highest`, from one eager evaluation
        of the nest up to `highest` at the unshifted point."""
        xs = [tf.constant(x) for x in self.args]
        for slot, i in enumerate(self.case.wrt_indices):
            xs[i] = tf.constant(self.bases[slot])
        progress = Steps()
        try:
            orders, chain = tape_chains(self.subject, xs, highest,
                                        RunOptions(upstream=self.tables is not None), progress,
                                        self.tables)
        except Exception as e:  # noqa: BLE001 - the case's own code
            raise CaseRaised(e) from e
        for k in range(1, highest + 1):
            if self._gradients.get(k) is None:  # chain: the weighted orders that finished
                weighted = arrays(chain[k - 1]) if len(chain) >= k else None
                self._gradients[k] = (arrays(orders[k]), weighted)

    def _often(self, order: int, what: str = "values") -> bool:
        """Whether this case's `what` at `order` was evaluated eagerly at TRACE_AFTER_POINTS
        points of this signature already (a builder's function is never traced)."""
        key = self._key(order) + ((what,) if what != "values" else ())
        return self.case.fn is not None and _EAGER_POINTS[key] >= TRACE_AFTER_POINTS

    def _compiled(self, order: int):
        """Order `order`'s tf.function: one per case, order and signature serves every point of
        it, as in the function mode, where a case's points share their trace."""
        # the function mode's own tracing
        from harness.measure.modes.function import compile_subject

        key = self._key(order)
        if key not in _TRACED:
            options = RunOptions(upstream=self.tables is not None)
            _TRACED[key] = _Concrete(compile_subject(self.subject, order, options, Steps(),
                                                     weighted=True))
            while len(_TRACED) > _TRACED_KEPT:
                del _TRACED[next(iter(_TRACED))]
        return _TRACED[key]

    def _traced_gradients(self, order: int) -> Optional[tuple[list, Optional[list]]]:
        """`gradients(order)` through the traced function, where its plain values at the point
        are the agreed mode's (None: they are not, or it cannot be traced)."""
        expected, rtol = self._agreed_values(order)
        xs, _ = self._shifted([np.zeros(b.shape) for b in self.bases])
        try:
            result = self._compiled(order)(self.tables, *[tf.constant(x) for x in xs])
            plain = arrays(result["orders"][order])
        except Exception:  # noqa: BLE001 - evaluated eagerly instead, as before a trace
            return None
        found = np.concatenate([[]] + [np.ravel(g) for g in plain if g is not None])
        if expected is None or not _agree(found, expected, rtol) or (
                [g is None for g in plain] != [o.value is None for o in self.agreed[order]]):
            return None
        self._checked("agreed", rtol)
        chain = result["upstream"]
        weighted = arrays(chain[order - 1]) if self.tables is not None and len(chain) >= order \
            else None
        return plain, weighted

    def _shifted(self, shifts: Sequence[np.ndarray]) -> list:
        xs = list(self.args)
        for slot, i in enumerate(self.case.wrt_indices):
            xs[i] = (self.bases[slot] + shifts[slot]).astype(self.bases[slot].dtype)
        offset = len(self.case.wrt_indices)
        moved = [(self.bases[offset + j] + shifts[offset + j]).astype(self.bases[offset + j].dtype)
                 for j in range(len(self.subject.variables))]
        return [xs, moved]

    def _eager(self, order: int, shifted: list) -> Values:
        xs, moved = shifted
        variables = self.subject.variables
        progress = Steps()
        try:
            for v, value in zip(variables, moved):
                v.assign(value)
            orders, chain = tape_chains(self.subject, [tf.constant(x) for x in xs], order,
                                        RunOptions(upstream=self.tables is not None), progress,
                                        self.tables)
        except Exception as e:  # noqa: BLE001 - the case's own code, at a shifted point
            raise CaseRaised(e) from e
        finally:
            offset = len(self.case.wrt_indices)
            for j, v in enumerate(variables):
                v.assign(self.bases[offset + j])
        if progress.upstream_error is not None:
            info = error_info(*progress.upstream_error)
            self.weighted_error = f"{info.type} at {info.stage}: {info.first_line}"
            return self._flat(order, orders[order], None)
        below = ([orders[0]] + chain)[order] if self.tables is not None else None
        return self._flat(order, orders[order], below)

    def _flat(self, order: int, plain: Sequence, below: Optional[Sequence]) -> Values:
        targets = [t for t in plain if is_target(t)]
        if self.wide and any(t.dtype != tf.float64 for t in targets):
            raise NotWide(", ".join(sorted({t.dtype.name for t in targets})))
        self.shapes[order] = [tuple(t.shape.as_list()) for t in targets]
        flat = np.concatenate([[]] + [np.ravel(t.numpy().astype(np.float64)) for t in targets])
        if below is None:
            return flat, None
        weighted = [np.ravel(t.numpy().astype(np.float64)
                             * upstream.weights(self.seed, order + 1, i, t.shape))
                    for i, t in enumerate(t for t in below if is_target(t))]
        return flat, np.concatenate([[]] + weighted)

    def _trace(self, order: int, expected: Optional[np.ndarray], rtol: float,
               against: str) -> Optional[Values]:
        """Order `order`'s tf.function, used from here on where its values at the point are
        `expected` (the eager evaluation's, or the agreed mode's) to `rtol`: those values, or
        None."""
        self._traced[order] = self._compiled(order)
        try:
            found = self._from_traced(order, self._shifted([np.zeros(b.shape) for b in self.bases]))
        except Exception:  # noqa: BLE001 - a function that cannot be traced is evaluated eagerly
            found = None
        if found is None or expected is None or not _agree(found[0], expected, rtol):
            del self._traced[order]
            return None
        self.traced_orders.add(order)
        self._checked(against, rtol)
        return found

    def _checked(self, against: str, rtol: float) -> None:
        self.traced_against[against] = max(rtol, self.traced_against.get(against, 0.0))

    def _key(self, order: int) -> tuple:
        """What a trace of this evaluator's function at `order` serves: its case's function (the
        same object in every point's copy of the case), id, dtype, chains and signature."""
        signature = tuple((np.asarray(x).dtype.name, np.shape(x)) for x in self.args)
        return (id(self.case.fn), self.case.id, order, self.wide, self.tables is not None,
                signature)

    def _from_traced(self, order: int, shifted: list) -> Values:
        xs, _ = shifted
        try:
            result = self._traced[order](self.tables, *[tf.constant(x) for x in xs])
        except Exception as e:  # noqa: BLE001 - the case's own code, at a shifted point
            raise CaseRaised(e) from e
        orders, chain = result["orders"], result["upstream"]
        below = None
        if self.tables is not None and len(chain) >= order:
            below = ([orders[0]] + list(chain))[order]
        return self._flat(order, orders[order], below)


class _Concrete:
    """A tf.function called through its concrete function for the one signature it is called
    with (the key of `_TRACED` holds the signature): the oracle calls it tens of times per point,
    and the concrete function skips matching the arguments to a trace, half the time of a call
    of a small function. The first call traces, raising what tracing raises, as a call would."""

    def __init__(self, function):
        self.function = function
        self.concrete = None

    def __call__(self, *args):
        if self.concrete is None:
            self.concrete = self.function.get_concrete_function(*args)
        return self.concrete(*args)


def _agree(a: np.ndarray, b: np.ndarray, rtol: float) -> bool:
    """Equal shapes, non-finite at the same places, the rest within rtol of the largest."""
    if a.shape != b.shape or not np.array_equal(np.isfinite(a), np.isfinite(b)):
        return False
    finite = np.isfinite(a)
    size = float(np.max(np.abs(b[finite]))) if finite.any() else 0.0
    return bool(np.all(np.abs(a[finite] - b[finite]) <= rtol * size))


def arrays(grads) -> list:
    return [None if g is None else g.numpy().astype(np.float64) for g in grads]


def upcast(value: np.ndarray) -> np.ndarray:
    value = np.asarray(value)
    floating = value.dtype.kind == "f" or value.dtype.name == "bfloat16"
    return value.astype(np.float64) if floating else value


def upcast_variable(next_creator, **kwargs):
    """Creates a floating variable as float64, from the value the builder gave."""
    initial = kwargs.get("initial_value")
    value = initial() if callable(initial) else initial
    dtype = kwargs.get("dtype")
    given = tf.as_dtype(dtype) if dtype is not None else tf.convert_to_tensor(value).dtype
    if given.is_floating:
        kwargs.update(initial_value=tf.cast(value, tf.float64), dtype=tf.float64)
    return next_creator(**kwargs)
