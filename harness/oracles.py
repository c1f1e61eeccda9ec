"""Oracles: independent answers the agreed values are checked against.

Three modes that agree can all be wrong: the StackOverflow seed's second
derivative of log1pexp is `1 - e` on purpose, so every mode says -1.7182817 at
x = 1 where the true value is sigmoid(1)(1 - sigmoid(1)) = 0.19661193. The
oracles say so, apart from agreement:

- numeric: order k is the gradient of the sum of the order k-1 outputs, so it
  is checked against central differences of that sum, computed with the
  case's own order k-1 (as JAX's check_grads checks each order against the one
  below it). In float64 where the function allows it (inputs and variables
  upcast), else in the case's dtype, with a step for that dtype
  (tolerance.NUMERIC_STEPS). Along a few seeded random directions by default,
  element by element (full Jacobians) with `numeric_full` or when the
  sources have no more elements than there are directions.
- reference: the case's plain implementation, differentiated by ordinary
  autodiff in eager mode, compared order by order.
- analytic: the case's closed-form values, compared where given.

Each runs in eager mode on the point's values; none can make the modes'
results agree or disagree, they only say whether the agreed values are right.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Optional, Sequence

import numpy as np

from harness import differences, upstream
from harness.case import Case, Point
from harness.compare import compare_outcomes, compare_outputs, where
from harness.modes import eager
from harness.modes.shared import Steps, build_subject, is_target, tape_chains, tf
from harness.records import ModeOutcome, OracleOutcome, Output, RunOptions, Status, error_info
from harness.verdict import required_oracles
from harness.tolerance import NUMERIC_STEPS, numeric_tolerance_for, tolerance_for

__all__ = ["check", "DIRECTIONS", "RECHECK_LIMIT"]

# Random directions per order: enough to catch a wrong derivative with
# probability one, while costing two evaluations each.
DIRECTIONS = 2


def check(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions,
          note: str = "") -> dict[str, OracleOutcome]:
    """Every oracle the case has (and the numeric and upstream ones unless turned off) on `agreed`.

    `note` says whose values these are when they are not the yardstick mode's
    (it raised): it ends every oracle's note. An exception in an oracle's own
    code is that oracle's "error", never a quiet "not checked".
    """
    # Without the numeric oracle, the upstream one has something to say only when the
    # weighted chain raised (its values are compared across modes all the same).
    own = [name for name in ("reference", "analytic") if getattr(case, name) is not None]
    wanted = list(required_oracles(options, own))
    if options.upstream and not options.numeric and agreed.upstream_error is not None:
        wanted.insert(0, "upstream")
    if agreed.status is not Status.OK:
        why = f"{agreed.mode} computed no values to check"
        return {name: OracleOutcome(name=name, status="skip", note=why) for name in wanted}
    found: dict[str, OracleOutcome] = {}
    for name in wanted:
        if name in found:
            continue
        try:
            if name == "numeric":
                numeric, weighted = _numeric(case, point, agreed, options, note)
                found["numeric"] = numeric
                if weighted is not None:
                    found["upstream"] = weighted
            elif name == "upstream":  # the numeric oracle is off: only what the chain raised is seen
                found[name] = _upstream_without_numeric(agreed)
            elif name == "reference":
                found[name] = _with_note(_reference(case, point, agreed, options), note)
            else:
                found[name] = _with_note(_analytic(case, point, agreed), note)
        except Exception as e:  # noqa: BLE001 - a fault in the oracle's own code must not pass quietly
            error = OracleOutcome(name=name, status="error",
                                  note=f"the {name} oracle itself raised {type(e).__name__}: {e} (a fault in the "
                                       "harness's oracle code, not a verdict on the case)")
            found[name] = error
            if name == "numeric" and "upstream" in wanted:
                found["upstream"] = dataclasses.replace(error, name="upstream")
    return {name: found[name] for name in wanted if name in found}


def _upstream_without_numeric(agreed: ModeOutcome) -> OracleOutcome:
    return _upstream_failed(agreed, "the numeric oracle is off (--nonumeric): the weighted chain is only compared "
                                    "across modes")


def _upstream_failed(agreed: ModeOutcome, note: str) -> OracleOutcome:
    """The weighted chain raised where the plain one computed its values."""
    e = agreed.upstream_error
    if e.stage.startswith("forward"):
        # The weighted chain runs the function again: the second run raised, not a grad_fn.
        line = (f"the function raises {e.type} when {agreed.mode} runs it a second time (for the weighted chain): "
                f"{e.first_line}; its first run computed its values, so it is not a pure function of its inputs")
    else:
        line = (f"grad_fn fails when its upstream gradient is not all ones: {agreed.mode} raises {e.type} at "
                f"{e.stage}: {e.first_line}; at the plain contraction (every upstream gradient 1) it computes "
                "its values")
    return OracleOutcome(name="upstream", status="differ", orders=(), differ=(e.order or 0,),
                         details=(line,), note=note)


def _with_note(outcome: OracleOutcome, note: str) -> OracleOutcome:
    return dataclasses.replace(outcome, note=outcome.note + note) if note else outcome


def _outcome(name: str, checked: Sequence[int], lines: Sequence[tuple[int, str]], note: str) -> OracleOutcome:
    differ = tuple(sorted({order for order, _ in lines}))
    return OracleOutcome(name=name, status="differ" if differ else "match", orders=tuple(checked), differ=differ,
                         details=tuple(line for _, line in lines), note=note)


# -- analytic -------------------------------------------------------------------------------

def _analytic(case: Case, point: Point, agreed: ModeOutcome) -> OracleOutcome:
    try:
        expected = case.analytic(*[np.array(v) for v in point.values])
    except Exception as e:  # noqa: BLE001 - the case's own code
        return OracleOutcome(name="analytic", status="error", note=f"analytic raises {type(e).__name__}: {e}")
    if not isinstance(expected, dict) or not all(isinstance(k, int) for k in expected):
        return OracleOutcome(name="analytic", status="error",
                             note="analytic must return a dict {order: values}, e.g. {1: np.float64(...)}")
    names = [s.name for s in agreed.sources]
    lines: list[tuple[int, str]] = []
    for order in sorted(expected):
        if not 0 <= order < len(agreed.orders):
            return OracleOutcome(name="analytic", status="error",
                                 note=f"analytic gives order {order}; the case computes orders 0 to {case.order}")
        values = expected[order]
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        outputs = agreed.orders[order]
        if len(values) != len(outputs):
            return OracleOutcome(name="analytic", status="error",
                                 note=f"analytic gives {len(values)} values at order {order}; the case has "
                                      f"{len(outputs)} {'outputs' if order == 0 else 'sources'}")
        for index, (value, got) in enumerate(zip(values, outputs)):
            at = where(order, index, names)
            if value is None or got.value is None:
                if (value is None) != (got.value is None):
                    side = "analytic" if value is None else agreed.mode
                    lines.append((order, f"{at}: {side} gives None (unconnected), the other a value"))
                continue
            if np.shape(value) != got.shape:
                lines.append((order, f"{at}: analytic gives shape {list(np.shape(value))}, {agreed.mode} "
                                     f"{list(got.shape)}"))
                continue
            want = Output.of(np.asarray(value).astype(got.value.dtype))
            m = compare_outputs(want, got, tolerance_for(got.dtype, case.tolerance), ref_mode="analytic",
                                mode=agreed.mode, at=at)
            if m:
                lines.append((order, m.message))
    return _outcome("analytic", sorted(expected), lines, "closed form written in the case")


# -- reference ------------------------------------------------------------------------------

def _reference(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions) -> OracleOutcome:
    plain = dataclasses.replace(
        case, points=[point], expectations=(), kinks={}, skip_modes={}, reference=None, analytic=None,
        fn=case.reference if case.fn is not None else None,
        build=case.reference if case.build is not None else None)
    outcome = dataclasses.replace(eager.run(plain, options)[0], mode="reference")
    if outcome.status is not Status.OK:
        e = outcome.error
        return OracleOutcome(name="reference", status="error",
                             note=f"the reference implementation raises {e.type} at {e.stage}: {e.first_line}")
    found = compare_outcomes(outcome, agreed, tolerance=case.tolerance)
    return _outcome("reference", range(len(agreed.orders)), [(m.order or 0, m.message) for m in found],
                    "ordinary autodiff of the reference implementation, eager")


# -- numeric and upstream ------------------------------------------------------------------

# Most source elements an order is checked again one by one after a random
# direction failed there (each costs two evaluations), so that the message can
# name the worst element; a point with more says which direction failed instead.
RECHECK_LIMIT = 64

# The rounding a gradient carries in its own dtype, in ulps of the terms it sums.
_GRADIENT_ULPS = 16.0


class _NotWide(Exception):
    """The function computed in another dtype than float64: its differences would be noise."""


class _CaseRaised(Exception):
    """The case's own code raised at a shifted point (or in a dtype it refuses)."""

    def __init__(self, error):
        super().__init__(str(error))
        self.info = error_info(error, "")


class _Evaluator:
    """Sums of a case's order-k outputs at shifted sources, in eager mode: the plain
    sum, and the weighted chain's sum with the next order's upstream weights."""

    def __init__(self, case: Case, point: Point, wide: bool, weighted: bool):
        self.case = case
        self.wide = wide
        self.seed = upstream.seed(case.id, point.label) if weighted else None
        values = [_upcast(v) if wide else v for v in point.values]
        self.args = values
        try:
            if wide:
                with tf.variable_creator_scope(_upcast_variable):
                    self.subject = build_subject(case)
            else:
                self.subject = build_subject(case)
        except Exception as e:  # noqa: BLE001 - the case's builder
            raise _CaseRaised(e) from e
        self.bases = [np.array(values[i]) for i in case.wrt_indices] + [v.numpy() for v in self.subject.variables]
        self.tables = None if self.seed is None else tf.constant(upstream.flat_tables(self.seed, case.order))
        self.weighted_error = ""  # what the weighted chain raised here, if it did
        self.bases_found: dict[int, tuple[float, Optional[float]]] = {}
        self.gradients_found: dict[int, tuple[list, Optional[list]]] = {}

    def dtype(self) -> str:
        if self.wide:
            return "float64"
        # The coarsest dtype among the sources sets the step.
        return max((b.dtype.name for b in self.bases), key=lambda n: NUMERIC_STEPS.get(n, 0.0))

    def base(self, order: int) -> tuple[float, Optional[float]]:
        """`total` at the unshifted point, computed once per order."""
        if order not in self.bases_found:
            self.bases_found[order] = self.total(order, [np.zeros(b.shape) for b in self.bases])
        return self.bases_found[order]

    def gradients(self, order: int) -> tuple[list, Optional[list]]:
        """The case's own order `order` gradients at the unshifted point, per source, in this
        evaluator's dtype (None: unconnected): the plain chain's and the weighted chain's (or None)."""
        if order not in self.gradients_found:
            xs = [tf.constant(x) for x in self.args]
            for slot, i in enumerate(self.case.wrt_indices):
                xs[i] = tf.constant(self.bases[slot])
            progress = Steps()
            try:
                orders, chain = tape_chains(self.subject, xs, order, RunOptions(upstream=self.tables is not None),
                                            progress, self.tables)
            except Exception as e:  # noqa: BLE001 - the case's own code
                raise _CaseRaised(e) from e

            def arrays(grads):
                return [None if g is None else g.numpy().astype(np.float64) for g in grads]
            weighted = arrays(chain[order - 1]) if len(chain) >= order and progress.upstream_error is None else None
            self.gradients_found[order] = (arrays(orders[order]), weighted)
        return self.gradients_found[order]

    def total(self, order: int, shifts: Sequence[np.ndarray]) -> tuple[float, Optional[float]]:
        """(sum of the order `order` outputs, sum of the weighted chain's order `order`
        outputs times the order `order` + 1 weights, or None) with every source moved by its shift."""
        case = self.case
        xs = list(self.args)
        for slot, i in enumerate(case.wrt_indices):
            xs[i] = (self.bases[slot] + shifts[slot]).astype(self.bases[slot].dtype)
        variables = self.subject.variables
        offset = len(case.wrt_indices)
        progress = Steps()
        try:
            for j, v in enumerate(variables):
                v.assign((self.bases[offset + j] + shifts[offset + j]).astype(self.bases[offset + j].dtype))
            orders, chain = tape_chains(self.subject, [tf.constant(x) for x in xs], order,
                                        RunOptions(upstream=self.tables is not None), progress, self.tables)
        except Exception as e:  # noqa: BLE001 - the case's own code, at a shifted point
            raise _CaseRaised(e) from e
        finally:
            for j, v in enumerate(variables):
                v.assign(self.bases[offset + j])
        targets = [t for t in orders[order] if is_target(t)]
        if self.wide and any(t.dtype != tf.float64 for t in targets):
            raise _NotWide(", ".join(sorted({t.dtype.name for t in targets})))
        plain = float(sum(np.sum(t.numpy().astype(np.float64)) for t in targets))
        if self.tables is None or progress.upstream_error is not None:
            if progress.upstream_error is not None:
                info = error_info(*progress.upstream_error)
                self.weighted_error = f"{info.type} at {info.stage}: {info.first_line}"
            return plain, None
        below = [t for t in ([orders[0]] + chain)[order] if is_target(t)]
        weighted = float(sum(np.sum(t.numpy().astype(np.float64) * upstream.weights(self.seed, order + 1, i, t.shape))
                             for i, t in enumerate(below)))
        return plain, weighted


def _upcast(value: np.ndarray) -> np.ndarray:
    value = np.asarray(value)
    return value.astype(np.float64) if value.dtype.kind == "f" or value.dtype.name == "bfloat16" else value


def _upcast_variable(next_creator, **kwargs):
    """Creates a floating variable as float64, from the value the builder gave."""
    initial = kwargs.get("initial_value")
    value = initial() if callable(initial) else initial
    dtype = kwargs.get("dtype")
    if (tf.as_dtype(dtype) if dtype is not None else tf.convert_to_tensor(value).dtype).is_floating:
        kwargs.update(initial_value=tf.cast(value, tf.float64), dtype=tf.float64)
    return next_creator(**kwargs)


def _seed(case: Case, point: Point) -> int:
    return int.from_bytes(hashlib.sha256(f"{case.id}[{point.label}]".encode()).digest()[:4], "little")


@dataclasses.dataclass(frozen=True)
class _Direction:
    """A unit shift of every source: one element (`element` = (source slot, flat index)) or random.

    For a symmetric source an element direction moves (i, j) and (j, i) together:
    `mirror` is the flat index of (j, i), or None on the diagonal."""

    unit: list
    element: Optional[tuple[int, int]] = None
    label: str = ""
    mirror: Optional[int] = None


def _directions(bases: Sequence[np.ndarray], full: bool, seed: int, symmetric: Sequence[bool]) -> list[_Direction]:
    """One-hot elements (with `full`, or when there are no more elements than directions),
    else DIRECTIONS seeded random unit vectors. A symmetric source is moved along
    symmetric directions only: its element pairs, or a symmetrised random part."""
    if full or sum(b.size for b in bases) <= DIRECTIONS:
        return _element_directions(bases, symmetric)
    rng = np.random.default_rng(seed)
    found = []
    for d in range(DIRECTIONS):
        parts = [rng.standard_normal(b.shape) for b in bases]
        parts = [(p + np.swapaxes(p, -1, -2)) / 2 if sym else p for p, sym in zip(parts, symmetric)]
        norm = np.sqrt(sum(np.sum(p * p) for p in parts))
        found.append(_Direction([p / norm for p in parts], label=f"random direction {d + 1} of {DIRECTIONS}"))
    return found


def _element_directions(bases: Sequence[np.ndarray], symmetric: Sequence[bool]) -> list[_Direction]:
    found = []
    for slot, base in enumerate(bases):
        for flat in range(base.size):
            unit = [np.zeros(b.shape) for b in bases]
            mirror = None
            if symmetric[slot]:
                index = np.unravel_index(flat, base.shape)
                i, j = index[-2], index[-1]
                if i > j:
                    continue  # moved with its mirror (j, i)
                if i < j:
                    mirror = int(np.ravel_multi_index(index[:-2] + (j, i), base.shape))
                    unit[slot].flat[mirror] = 1.0
            unit[slot].flat[flat] = 1.0
            found.append(_Direction(unit, element=(slot, flat), mirror=mirror))
    return found


def _fmt(value: Optional[float]) -> str:
    return "None (unconnected)" if value is None else f"{value:.8g}"


@dataclasses.dataclass
class _Check:
    """One chain's result at one order: its worst difference and the counts."""

    worst: str = ""
    worst_excess: float = 0.0
    failures: int = 0
    skipped: int = 0
    total: int = 0
    kind: str = "directions"
    failed: list = dataclasses.field(default_factory=list)  # (direction, analytic, differences.Judged)
    failed_here: list = dataclasses.field(default_factory=list)  # those of the worst element's source
    extra: str = ""  # a sentence saying what the failures mean, when the pattern says it
    worst_slot: Optional[int] = None  # the source of the worst element, when checked by element
    count: int = 0  # the directions (or elements) tried, of every source
    compared: int = 0  # of those, the ones whose difference quotient was finite and compared
    seen: list = dataclasses.field(default_factory=list)  # (direction, differences.Judged) of every one compared
    reasons: dict = dataclasses.field(default_factory=dict)  # why one was not checked -> how many
    kinks: list = dataclasses.field(default_factory=list)  # the matches at a kink (differences.Judged)

    def kinked(self, order: int) -> str:
        """A sentence when some matches were at a kink, or ""."""
        if not self.kinks:
            return ""
        what = "the function" if order == 1 else f"the order {order - 1} gradient"
        first = self.kinks[0]
        return (f"order {order}: {what} has a kink at the point along {len(self.kinks)} of {self.count} "
                f"{self.kind.split()[0]} (one-sided derivatives {first.left:.8g} and {first.right:.8g} along the "
                "first), where the gradient lies between them: judged against each side, not their average")

    def unchecked(self) -> str:
        """How many could not be checked and why, in words, or ""."""
        return "; ".join(f"{n} of {self.count} {self.kind.split()[0]} not checked: {why}"
                         for why, n in self.reasons.items())

    def line(self) -> str:
        if not self.worst:
            return ""
        failed = self.failed_here or self.failed
        nonfinite = sum(1 for _, analytic, _ in failed if analytic is not None and not np.isfinite(analytic))
        counts = f"{len(failed)} of {self.total} {self.kind} differ"
        if nonfinite:
            counts += f", {nonfinite} of them with a NaN or infinite gradient"
        return f"{self.worst} ({counts}){self.extra}"


def _numeric(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions,
             checked_note: str) -> tuple[OracleOutcome, Optional[OracleOutcome]]:
    """The numeric oracle and, when the weighted chain was computed, the upstream one."""
    with_upstream = options.upstream and bool(agreed.upstream or agreed.upstream_error)

    def both(status: str, note: str) -> tuple[OracleOutcome, Optional[OracleOutcome]]:
        note += checked_note
        if not options.upstream:
            return OracleOutcome(name="numeric", status=status, note=note), None
        # What the weighted chain raised needs no differences to be seen.
        weighted = (_upstream_failed(agreed, note) if agreed.upstream_error is not None
                    else OracleOutcome(name="upstream", status=status, note=note))
        return OracleOutcome(name="numeric", status=status, note=note), weighted

    why_not = _why_not_numeric(case, point, agreed)
    if why_not:
        return both("skip", why_not)
    evaluator, why = None, []
    for wide in (True, False):
        try:
            candidate = _Evaluator(case, point, wide, with_upstream)
            candidate.base(case.order - 1)
            evaluator = candidate
            break
        except _NotWide as e:
            why.append(f"float64 inputs give {e} outputs")
        except _CaseRaised as e:
            why.append(f"{'float64' if wide else 'its own dtype'}: {e.info.type}: {e.info.first_line}")
    if evaluator is None:
        return both("skip", "the function could not be evaluated for differences: " + "; ".join(why))
    symmetric = [s.name in case.symmetric for s in agreed.sources]
    directions = _directions(evaluator.bases, options.numeric_full, _seed(case, point), symmetric)
    step = NUMERIC_STEPS[evaluator.dtype()]
    how = "every element" if directions[0].element else f"{len(directions)} random directions"
    if any(symmetric):
        how += " (symmetric for " + ", ".join(s.name for s, sym in zip(agreed.sources, symmetric) if sym) + ")"
    note = f"central differences in {evaluator.dtype()} with step {step:g}, {how}" + checked_note
    plain_lines: list[tuple[int, str]] = []
    weighted_lines: list[tuple[int, str]] = []
    both_lines: list[tuple[int, str]] = []
    untrue: set[int] = set()  # orders whose plain values differ by finite amounts
    unchecked, weighted_unchecked = [], []
    plain_compared = weighted_compared = 0
    stopped = ""
    for order in range(1, case.order + 1):
        try:
            plain, weighted = _check_order(case, agreed, evaluator, order, directions, symmetric)
        except _CaseRaised as e:  # the unshifted point, in the oracle's own evaluation
            # What the orders below found stands; this one and those above are not checked.
            stopped = (f"; the oracle's {evaluator.dtype()} evaluation of order {order - 1} at the point raises "
                       f"{e.info.type}: {e.info.first_line}, so orders {order} to {case.order} are not checked")
            break
        plain_compared += plain.compared
        if plain.skipped:
            unchecked.append(f"order {order}: {plain.unchecked()}")
        if plain.kinks:
            unchecked.append(plain.kinked(order))
        if plain.worst:
            plain_lines.append((order, plain.line()))
        if weighted is None:
            continue
        weighted_compared += weighted.compared
        if weighted.skipped:
            weighted_unchecked.append(f"order {order}: {weighted.unchecked()}")
        if weighted.worst and plain.worst:
            both_lines.append((order, f"with upstream weights too: {weighted.line()}"))
            if all(analytic is not None and np.isfinite(analytic) for _, analytic, _ in plain.failed):
                untrue.add(order)
        elif weighted.worst:
            weighted_lines.append((order, _upstream_line(order, weighted, agreed, evaluator, plain)))
    numeric_note = note + stopped
    if unchecked:
        numeric_note += "; " + "; ".join(unchecked)
    numeric = _outcome("numeric", range(1, case.order + 1), plain_lines, numeric_note)
    if not plain_compared:  # nothing was checked at all
        numeric = OracleOutcome(name="numeric", status="skip", note=numeric_note)
    if not options.upstream:
        return numeric, None
    return numeric, _upstream_outcome(case, agreed, evaluator, note + stopped, weighted_lines, both_lines,
                                      weighted_unchecked, not weighted_compared, untrue,
                                      [u for u in unchecked if "has a kink" not in u])


def _upstream_outcome(case: Case, agreed: ModeOutcome, evaluator: _Evaluator, note: str,
                      lines: list[tuple[int, str]], both_lines: list[tuple[int, str]], unchecked: list[str],
                      nothing_checked: bool, untrue: set[int], numeric_unchecked: list[str]) -> OracleOutcome:
    if agreed.upstream_error is not None:
        return _upstream_failed(agreed, note)
    if not agreed.upstream:
        return OracleOutcome(name="upstream", status="skip", note="the weighted chain was not computed")
    note = f"upstream weights seeded by case and point (harness.upstream); {note}"
    if unchecked:
        note += "; " + "; ".join(unchecked)
    if evaluator.weighted_error:
        note += (f"; the weighted chain raises {evaluator.weighted_error} at some shifted points in the oracle's "
                 f"{evaluator.dtype()} evaluation, which are not checked")
    if nothing_checked:
        if unchecked == numeric_unchecked:  # said once, by the numeric oracle
            return OracleOutcome(name="upstream", status="skip",
                                 note="not checked, for the reason the numeric oracle gives")
        return OracleOutcome(name="upstream", status="skip", note=note)
    if both_lines and not lines:
        # Every weighted difference sits at an order where the plain contraction differs too: the
        # numeric derivative cannot tell there whether grad_fn also mishandles its upstream gradient.
        orders = [order for order, _ in both_lines]
        at = f"order{'s' if len(orders) > 1 else ''} {', '.join(map(str, orders))}"
        if _has_custom_gradient(agreed) and set(orders) <= untrue:
            why = (f"cannot tell whether grad_fn handles its upstream gradient at {at}, where the plain values "
                   "already differ from the numeric derivative (a surrogate or deliberately untrue gradient?); "
                   "a reference implementation of the intended gradient (Case(reference=...)) checks both chains")
        else:
            why = f"not checked at {at}: the plain values already differ from the numeric derivative there"
        return OracleOutcome(name="upstream", status="skip", note=why)
    outcome = _outcome("upstream", range(1, case.order + 1), lines, note)
    return dataclasses.replace(outcome, details=outcome.details + tuple(line for _, line in both_lines))


def _upstream_line(order: int, check: _Check, agreed: ModeOutcome, evaluator: _Evaluator, plain: _Check) -> str:
    surrogate = _surrogate(check, agreed) if order == 1 else ""
    if surrogate:
        # Where the function is flat its derivative is 0 whatever the upstream gradient: a nonzero
        # gradient there is a surrogate's, however it treats dy.
        return (f"the values with upstream weights differ from the numeric derivative at order 1: {check.line()}"
                f"{surrogate}")
    below = agreed.orders[order - 1]
    parts = [upstream.weights(evaluator.seed, order, i, o.shape).ravel()
             for i, o in enumerate(x for x in below if x.value is not None and _floating(x.dtype))]
    weights = upstream.describe(np.concatenate(parts)) if parts else "[]"
    if plain.compared:
        at_plain = "at the plain contraction (every upstream gradient 1) both agree"
    else:
        at_plain = "at the plain contraction (every upstream gradient 1) nothing could be compared at this order"
    return (f"grad_fn mishandles its upstream gradient: at order {order} with upstream weights {weights} (the "
            f"dy passed to grad_fn in place of ones, as a loss other than a plain sum passes), {check.line()}; "
            f"{at_plain}")


def _floating(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat", "complex"))


def _why_not_numeric(case: Case, point: Point, agreed: ModeOutcome) -> str:
    """Why the numeric oracle cannot check `agreed` at `point`; empty when it can."""
    reason = case.kinks.get(point.label, case.kinks.get("*"))
    if reason:
        return f"declared not checked numerically here: {reason}"
    if any(s.dtype.startswith("complex") for s in agreed.sources):
        return ("complex sources: TensorFlow's gradient of a real function of z is the conjugate of its "
                "Wirtinger derivative; real directions do not check it")
    for order, outputs in enumerate(agreed.orders[1:], start=1):
        for out, source in zip(outputs, agreed.sources):
            if out.value is not None and (out.shape != source.shape or out.dtype != source.dtype):
                return (f"the order {order} gradient wrt {source.name} is {out.dtype}{list(out.shape)}, not "
                        "shaped like its source: no derivative to check")
    return ""


def _gradients(outputs: Sequence[Output]) -> list[Optional[np.ndarray]]:
    return [None if o.value is None else o.value.astype(np.float64) for o in outputs]


def _check_order(case: Case, agreed: ModeOutcome, evaluator: _Evaluator, order: int,
                 directions: Sequence[_Direction], symmetric: Sequence[bool]) -> tuple[_Check, Optional[_Check]]:
    """Both chains at `order` along `directions`; where a random direction fails and the
    sources are small enough, again element by element, so the message names the element."""
    plain_grads = _gradients(agreed.orders[order])
    weighted_grads = (_gradients(agreed.upstream[order - 1])
                      if order - 1 < len(agreed.upstream) and evaluator.tables is not None else None)
    plain, weighted = _along(case, agreed, evaluator, order, directions, plain_grads, weighted_grads)

    def again_wanted(check: Optional[_Check]) -> bool:
        # A failure is named by its element; a direction that crossed a jump or left the domain
        # leaves the elements it did not need to move unjudged.
        return check is not None and bool(check.failures or check.skipped)

    if directions[0].element is None and (again_wanted(plain) or again_wanted(weighted)):
        elements = _element_directions(evaluator.bases, symmetric)
        if len(elements) <= RECHECK_LIMIT:
            again = _along(case, agreed, evaluator, order, elements,
                           plain_grads if again_wanted(plain) else None,
                           weighted_grads if again_wanted(weighted) else None)
            if again_wanted(plain) and (again[0].failures or not plain.failures):
                plain = again[0]
            if again_wanted(weighted) and again[1] is not None and (again[1].failures or not weighted.failures):
                weighted = again[1]
    if plain.failures and plain.worst_slot is not None:
        plain.extra = _triangle(plain, agreed, evaluator, symmetric)
    if plain.failures and order == 1:
        plain.extra += _surrogate(plain, agreed)
    return plain, weighted


def _along(case: Case, agreed: ModeOutcome, evaluator: _Evaluator, order: int, directions: Sequence[_Direction],
           plain_grads, weighted_grads) -> tuple[_Check, Optional[_Check]]:
    """Checks the chains whose gradients are given (None: not this time) along `directions`."""
    dtype = evaluator.dtype()
    step, eps = NUMERIC_STEPS[dtype], differences.epsilon(dtype)
    names = [s.name for s in agreed.sources]
    # A random direction mixes every source: judge it with the loosest of their tolerances.
    loosest = max((s.dtype for s in agreed.sources),
                  key=lambda d: numeric_tolerance_for(d, case.oracle_tolerance).rtol)
    element = directions[0].element is not None
    checks = [None if grads is None else _Check(kind="elements" if element else "directions", total=len(directions),
                                                count=len(directions))
              for grads in (plain_grads, weighted_grads)]
    base = evaluator.base(order - 1)  # the unshifted point: what the agreed mode computed, so it must run
    for direction in directions:
        if element:
            slot, flat = direction.element
            h = step * max(1.0, abs(float(evaluator.bases[slot].flat[flat])))
            tol_dtype = agreed.sources[slot].dtype
            tol = numeric_tolerance_for(tol_dtype, case.oracle_tolerance)
            at = where(order, slot, names) + _element_label(evaluator.bases[slot].shape, flat, direction.mirror)
        else:
            h = step * max([1.0] + [float(np.max(np.abs(b))) for b in evaluator.bases if b.size])
            tol_dtype = loosest
            tol = numeric_tolerance_for(loosest, case.oracle_tolerance)
            at = f"order {order} along {direction.label}"
        along = _Along(evaluator, order - 1, direction, base)
        for chain, (check, grads) in enumerate(zip(checks, (plain_grads, weighted_grads))):
            if check is None:
                continue
            analytic, unconnected = _directional(grads, direction)
            # The gradient's own rounding in its dtype: relative to the size of the terms it sums, which
            # a gradient that cancels to about 0 (a Hessian times ones) does not show, but the weighted
            # chain's gradient of the same order, computed with other upstream weights, does.
            terms = max(_scale(g, direction) for g in (plain_grads, weighted_grads) if g is not None)
            floor = max(_GRADIENT_ULPS * differences.epsilon(tol_dtype) * terms,
                        _own_rounding(agreed, evaluator, order, chain, direction, analytic, tol_dtype),
                        differences.tiny(tol_dtype))
            judged = differences.assess(0.0 if analytic is None else analytic, lambda t: along(t)[chain], h,
                                        eps=eps, rtol=tol.rtol, atol=tol.atol + floor,
                                        scale=_scale(grads, direction))
            if judged.outcome == "unresolved":
                check.skipped += 1
                why = _unresolved(judged, order, along.raised if chain == 0 else evaluator.weighted_error)
                check.reasons[why] = check.reasons.get(why, 0) + 1
                continue
            check.compared += 1
            check.seen.append((direction, judged))
            if judged.outcome == "match":
                if judged.kind == differences.KINK:
                    check.kinks.append(judged)
                continue
            check.failures += 1
            check.failed.append((direction, analytic, judged))
            if not check.worst or judged.excess > check.worst_excess:
                check.worst_excess = judged.excess
                check.worst_slot = direction.element[0] if element else None
                counted = (f" (the None gradient of {', '.join(names[i] for i in unconnected)} counted as 0)"
                           if unconnected and analytic is not None else "")
                check.worst = (f"{at}: {agreed.mode}={_fmt(analytic)} numeric={judged.numeric:.8g} "
                               f"{_error_words(0.0 if analytic is None else analytic, judged, tol)}{counted}")
    for check in checks:
        if check is not None and element and check.failed:
            # The counts refer to the source the worst element belongs to.
            slot = check.worst_slot
            check.total = sum(1 for d in directions if d.element[0] == slot)
            check.failed_here = [f for f in check.failed if f[0].element[0] == slot]
            check.kind = f"elements of {names[slot]}"
    return checks[0], checks[1]


class _Along:
    """The evaluator's (plain, weighted) sums along one direction, at shift t, memoised: both
    chains and every step the differences ask for share the evaluations."""

    def __init__(self, evaluator: _Evaluator, order: int, direction: _Direction, base):
        self.evaluator, self.order, self.direction = evaluator, order, direction
        self.found = {0.0: base}
        self.raised = ""  # what a shifted point raised, if one did

    def __call__(self, t: float) -> tuple[Optional[float], Optional[float]]:
        if t not in self.found:
            try:
                self.found[t] = self.evaluator.total(self.order, [t * u for u in self.direction.unit])
            except _CaseRaised as e:  # outside the function's domain, say: a shorter step is tried
                self.raised = self.raised or f"{e.info.type}: {e.info.first_line}"
                self.found[t] = (None, None)
        return self.found[t]


def _own_rounding(agreed: ModeOutcome, evaluator: _Evaluator, order: int, chain: int, direction: _Direction,
                  analytic: Optional[float], dtype: str) -> float:
    """How far the gradient's own computation in its dtype strays from the same code's gradient in
    float64 at this point: the dtype's rounding of what the gradient is computed from (1 - s with s
    near 1, say), which the gradient's own size does not show. Capped by the rounding of the order
    below's values, so that a gradient wrong only in the narrow dtype is still called wrong."""
    if not evaluator.wide or analytic is None or dtype == "float64":
        return 0.0
    try:
        wide = evaluator.gradients(order)[chain]
    except _CaseRaised:
        return 0.0
    if wide is None:
        return 0.0
    value, _ = _directional(wide, direction)
    if value is None or not np.isfinite(value) or not np.isfinite(analytic):
        return 0.0
    if order == 1:
        below = max([0.0] + [float(np.max(np.abs(o.value))) for o in agreed.orders[0]
                             if o.value is not None and o.value.size and np.all(np.isfinite(o.value))])
    else:
        below = _scale(_gradients(agreed.orders[order - 1]), direction)
    cap = _GRADIENT_ULPS * differences.epsilon(dtype) * below
    return min(2.0 * abs(analytic - value), cap)


def _scale(grads: Sequence[Optional[np.ndarray]], direction: _Direction) -> float:
    """The size the directional derivative's rounding is relative to: the sum of |g_i u_i|."""
    return float(sum(np.sum(np.abs(g[u != 0] * u[u != 0])) for g, u in zip(grads, direction.unit)
                     if g is not None and np.all(np.isfinite(g[u != 0]))))


def _error_words(analytic: float, judged: differences.Judged, tol) -> str:
    """The difference in words, with what was allowed and, at a kink, both sides."""
    if not np.isfinite(analytic):
        words = f"the gradient is {analytic:g} where the numeric derivative is finite"
    else:
        err = abs(analytic - judged.numeric)
        words = f"abs err {err:.3g}"
        words += f" rel err {err / abs(judged.numeric):.3g}" if judged.numeric else " (the numeric derivative is 0)"
        words += (f" (allowed {judged.allowed:.3g}: rtol {tol.rtol:g}" + (f", atol {tol.atol:g}" if tol.atol else "")
                  + f" and rounding, at step {judged.step:.3g})")
    if judged.kind == differences.KINK:
        words += (f"; the function has a kink here: its one-sided derivatives are {judged.left:.8g} from the left "
                  f"and {judged.right:.8g} from the right, and the gradient lies outside them")
    return words


def _unresolved(judged: differences.Judged, order: int, raised: str) -> str:
    """Why a direction could not be judged, in words (the same words count them together)."""
    what = "the function's value" if order == 1 else f"the order {order - 1} gradient"
    if judged.kind == differences.JUMP:
        if order == 1:
            return ("the function's value jumps within a step of the point (a discontinuous forward, or one "
                    "computed only to a tolerance), so its numeric derivative is no evidence")
        return (f"the order {order - 1} gradient jumps within a step of the point, so a numeric order {order} "
                "taken across it is no evidence")
    if judged.kind == differences.NOISY:
        return (f"{what} is too noisy at this step: central differences at two steps disagree by more than the "
                "gradient differs from them")
    if judged.kind == differences.COARSE:
        return f"the rounding of {what} at this step could hide a wrong sign of a derivative this small"
    return "not finite within a step of the point" + (f" (a shifted point raises {raised})" if raised else "")


def _directional(grads: Sequence[Optional[np.ndarray]], direction: _Direction) -> tuple[Optional[float], list[int]]:
    """The gradients' derivative along `direction`: None when every gradient it moves is
    None (unconnected), and the slots of the None gradients counted as 0."""
    moved = [i for i, u in enumerate(direction.unit) if np.any(u)]
    unconnected = [i for i in moved if grads[i] is None]
    if len(unconnected) == len(moved):
        return None, unconnected
    # Only the elements the direction moves: a NaN gradient elsewhere is not this direction's.
    return float(sum(np.sum(g[u != 0] * u[u != 0]) for g, u in zip(grads, direction.unit) if g is not None)), \
        unconnected


def _element_label(shape: tuple, flat: int, mirror: Optional[int]) -> str:
    if not shape:
        return ""
    index = [int(i) for i in np.unravel_index(flat, shape)]
    if mirror is None:
        return f"{index}"
    return f"{index} and {[int(i) for i in np.unravel_index(mirror, shape)]} together (symmetric)"


def _triangle(check: _Check, agreed: ModeOutcome, evaluator: _Evaluator, symmetric: Sequence[bool]) -> str:
    """A sentence when every failing element of a square source sits in one strict triangle."""
    slots = {d.element[0] for d, *_ in check.failed}
    if len(slots) != 1:
        return ""
    slot = slots.pop()
    shape = evaluator.bases[slot].shape
    if symmetric[slot] or len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] < 2:
        return ""
    failed = {d.element[1] for d, *_ in check.failed}
    name = agreed.sources[slot].name
    for side, inside in (("upper", lambda i, j: i < j), ("lower", lambda i, j: i > j)):
        # Every element of that strict triangle differs (of every matrix in a batch), and no other.
        triangle = {flat for flat in range(int(np.prod(shape))) if inside(*np.unravel_index(flat, shape)[-2:])}
        if failed == triangle:
            return (f"; every difference sits in the strict {side} triangle of {name}: the function reads "
                    f"one triangle of it. If {name} is meant to be symmetric, declare it "
                    f"(Case(symmetric=['{name}']), or --symmetric {name} with check), so it is moved along "
                    "symmetric directions only")
    return ""


def _has_custom_gradient(agreed: ModeOutcome) -> bool:
    """Whether the function under test ran a tf.custom_gradient (unknown counts as yes: the probe
    sees only the functions decorated after it was installed, as in a worker)."""
    return agreed.usage is None or bool(agreed.usage.ran)


def _flat(judged: differences.Judged) -> bool:
    """The same value at -h, 0 and +h: the function does not change along the direction."""
    return judged.base is not None and judged.plus == judged.base == judged.minus


def _surrogate(check: _Check, agreed: ModeOutcome) -> str:
    """At order 1, a sentence when the function does not change at all within a step along every
    failing direction, so its derivative there is 0 and a nonzero custom gradient is a surrogate
    (a straight-through estimator's, a quantizer's, a bound's that passes the gradient one way)."""
    failed = check.failed
    if not _has_custom_gradient(agreed) or not failed or any(
            j.numeric != 0.0 or analytic in (None, 0.0) or not np.isfinite(analytic) or not _flat(j)
            for _, analytic, j in failed):
        return ""
    names = [s.name for s in agreed.sources]
    if failed[0][0].element is None:
        # Random directions move every source: the function must be flat along each of them.
        if not all(_flat(j) for _, j in check.seen):
            return ""
        where_flat = "the function is locally constant here"
    else:
        parts = []
        for slot in sorted({d.element[0] for d, *_ in failed}):
            seen = [d for d, j in check.seen if d.element[0] == slot]
            flat = [d for d, j in check.seen if d.element[0] == slot and _flat(j)]
            shape = agreed.sources[slot].shape
            if len(flat) == len(seen) or not shape:
                parts.append(names[slot])
            else:  # only some elements: name the failing ones
                failing = [d for d, *_ in failed if d.element[0] == slot]
                shown = ", ".join(names[slot] + _element_label(tuple(shape), d.element[1], d.mirror)
                                  for d in failing[:4]) + (", ..." if len(failing) > 4 else "")
                parts.append(shown)
        where_flat = ("the function is locally constant here" if parts == names and len(names) == 1
                      else f"the function is locally constant in {', '.join(parts)} here")
    return (f"; {where_flat} (the same value at every shift of up to ±h checked), so its true derivative is 0 "
            f"and the custom gradient ({agreed.mode}'s) is a surrogate, not a derivative (a straight-through "
            "estimator's or a quantizer's). If that is intended, declare it: Expectation(modes=('numeric',), "
            "outcome=VALUES_DIFFER, reason=...) in the case, or --expect 'numeric:values differ' with check or replay")
