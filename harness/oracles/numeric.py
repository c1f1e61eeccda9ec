"""The numeric and upstream oracles: each order against central differences of the order below.

Order k is the gradient of the sum of the order k-1 outputs, so it is checked against central
differences of that sum, computed with the case's own order k-1, along a few seeded directions or
element by element (harness.oracles.directions); the weighted chain (harness.upstream) the same way
with its upstream weights. The evaluations are harness.oracles.evaluate's; the sentences that
explain a difference are harness.oracles.words'.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from harness import differences, upstream
from harness.case import Case, Point
from harness.compare import where
from harness.oracles.directions import (
    Direction,
    choose,
    directional,
    element_label,
    elements,
    scale,
    seed,
)
from harness.oracles.evaluate import CaseRaised, Evaluator, NotWide
from harness.oracles.outcomes import oracle_outcome, upstream_failed
from harness.oracles.words import (
    error_words,
    has_custom_gradient,
    surrogate,
    triangle,
    unresolved,
)
from harness.records import ModeOutcome, OracleOutcome, Output, RunOptions
from harness.tolerance import NUMERIC_STEPS, numeric_tolerance_for

__all__ = ["RECHECK_LIMIT", "run"]

# Most source elements an order is checked again one by one after a random
# direction failed there (each costs two evaluations), so that the message can
# name the worst element; a point with more says which direction failed instead.
RECHECK_LIMIT = 64

# The rounding a gradient carries in its own dtype, in ulps of the terms it sums.
GRADIENT_ULPS = 16.0



def _fmt(value: Optional[float]) -> str:
    return "None (unconnected)" if value is None else f"{value:.8g}"


@dataclasses.dataclass
class Check:
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


def run(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions,
             checked_note: str) -> tuple[OracleOutcome, Optional[OracleOutcome]]:
    """The numeric oracle and, when the weighted chain was computed, the upstream one."""
    with_upstream = options.upstream and bool(agreed.upstream or agreed.upstream_error)

    def both(status: str, note: str) -> tuple[OracleOutcome, Optional[OracleOutcome]]:
        note += checked_note
        if not options.upstream:
            return OracleOutcome(name="numeric", status=status, note=note), None
        # What the weighted chain raised needs no differences to be seen.
        weighted = (upstream_failed(agreed, note) if agreed.upstream_error is not None
                    else OracleOutcome(name="upstream", status=status, note=note))
        return OracleOutcome(name="numeric", status=status, note=note), weighted

    why_not = _why_not_numeric(case, point, agreed)
    if why_not:
        return both("skip", why_not)
    evaluator, why = None, []
    for wide in (True, False):
        try:
            candidate = Evaluator(case, point, wide, with_upstream)
            candidate.base(case.order - 1)
            evaluator = candidate
            break
        except NotWide as e:
            why.append(f"float64 inputs give {e} outputs")
        except CaseRaised as e:
            why.append(f"{'float64' if wide else 'its own dtype'}: {e.info.type}: {e.info.first_line}")
    if evaluator is None:
        return both("skip", "the function could not be evaluated for differences: " + "; ".join(why))
    symmetric = [s.name in case.symmetric for s in agreed.sources]
    directions = choose(evaluator.bases, options.numeric_full, seed(case, point), symmetric)
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
        except CaseRaised as e:  # the unshifted point, in the oracle's own evaluation
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
    numeric = oracle_outcome("numeric", range(1, case.order + 1), plain_lines, numeric_note)
    if not plain_compared:  # nothing was checked at all
        numeric = OracleOutcome(name="numeric", status="skip", note=numeric_note)
    if not options.upstream:
        return numeric, None
    return numeric, _upstream_outcome(case, agreed, evaluator, note + stopped, weighted_lines, both_lines,
                                      weighted_unchecked, not weighted_compared, untrue,
                                      [u for u in unchecked if "has a kink" not in u])


def _upstream_outcome(case: Case, agreed: ModeOutcome, evaluator: Evaluator, note: str,
                      lines: list[tuple[int, str]], both_lines: list[tuple[int, str]], unchecked: list[str],
                      nothing_checked: bool, untrue: set[int], numeric_unchecked: list[str]) -> OracleOutcome:
    if agreed.upstream_error is not None:
        return upstream_failed(agreed, note)
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
        if has_custom_gradient(agreed) and set(orders) <= untrue:
            why = (f"cannot tell whether grad_fn handles its upstream gradient at {at}, where the plain values "
                   "already differ from the numeric derivative (a surrogate or deliberately untrue gradient?); "
                   "a reference implementation of the intended gradient (Case(reference=...)) checks both chains")
        else:
            why = f"not checked at {at}: the plain values already differ from the numeric derivative there"
        return OracleOutcome(name="upstream", status="skip", note=why)
    outcome = oracle_outcome("upstream", range(1, case.order + 1), lines, note)
    return dataclasses.replace(outcome, details=outcome.details + tuple(line for _, line in both_lines))


def _upstream_line(order: int, check: Check, agreed: ModeOutcome, evaluator: Evaluator, plain: Check) -> str:
    flat = surrogate(check, agreed) if order == 1 else ""
    if flat:
        # Where the function is flat its derivative is 0 whatever the upstream gradient: a nonzero
        # gradient there is a surrogate's, however it treats dy.
        return (f"the values with upstream weights differ from the numeric derivative at order 1: {check.line()}"
                f"{flat}")
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


def _check_order(case: Case, agreed: ModeOutcome, evaluator: Evaluator, order: int,
                 directions: Sequence[Direction], symmetric: Sequence[bool]) -> tuple[Check, Optional[Check]]:
    """Both chains at `order` along `directions`; where a random direction fails and the
    sources are small enough, again element by element, so the message names the element."""
    plain_grads = _gradients(agreed.orders[order])
    weighted_grads = (_gradients(agreed.upstream[order - 1])
                      if order - 1 < len(agreed.upstream) and evaluator.tables is not None else None)
    plain, weighted = _along(case, agreed, evaluator, order, directions, plain_grads, weighted_grads)

    def again_wanted(check: Optional[Check]) -> bool:
        # A failure is named by its element; a direction that crossed a jump or left the domain
        # leaves the elements it did not need to move unjudged.
        return check is not None and bool(check.failures or check.skipped)

    if directions[0].element is None and (again_wanted(plain) or again_wanted(weighted)):
        each = elements(evaluator.bases, symmetric)
        if len(each) <= RECHECK_LIMIT:
            again = _along(case, agreed, evaluator, order, each,
                           plain_grads if again_wanted(plain) else None,
                           weighted_grads if again_wanted(weighted) else None)
            if again_wanted(plain) and (again[0].failures or not plain.failures):
                plain = again[0]
            if again_wanted(weighted) and again[1] is not None and (again[1].failures or not weighted.failures):
                weighted = again[1]
    if plain.failures and plain.worst_slot is not None:
        plain.extra = triangle(plain, agreed, evaluator, symmetric)
    if plain.failures and order == 1:
        plain.extra += surrogate(plain, agreed)
    return plain, weighted


def _along(case: Case, agreed: ModeOutcome, evaluator: Evaluator, order: int, directions: Sequence[Direction],
           plain_grads, weighted_grads) -> tuple[Check, Optional[Check]]:
    """Checks the chains whose gradients are given (None: not this time) along `directions`."""
    dtype = evaluator.dtype()
    step, eps = NUMERIC_STEPS[dtype], differences.epsilon(dtype)
    names = [s.name for s in agreed.sources]
    # A random direction mixes every source: judge it with the loosest of their tolerances.
    loosest = max((s.dtype for s in agreed.sources),
                  key=lambda d: numeric_tolerance_for(d, case.oracle_tolerance).rtol)
    element = directions[0].element is not None
    checks = [None if grads is None else Check(kind="elements" if element else "directions", total=len(directions),
                                                count=len(directions))
              for grads in (plain_grads, weighted_grads)]
    base = evaluator.base(order - 1)  # the unshifted point: what the agreed mode computed, so it must run
    for direction in directions:
        if element:
            slot, flat = direction.element
            h = step * max(1.0, abs(float(evaluator.bases[slot].flat[flat])))
            tol_dtype = agreed.sources[slot].dtype
            tol = numeric_tolerance_for(tol_dtype, case.oracle_tolerance)
            at = where(order, slot, names) + element_label(evaluator.bases[slot].shape, flat, direction.mirror)
        else:
            h = step * max([1.0] + [float(np.max(np.abs(b))) for b in evaluator.bases if b.size])
            tol_dtype = loosest
            tol = numeric_tolerance_for(loosest, case.oracle_tolerance)
            at = f"order {order} along {direction.label}"
        along = _Along(evaluator, order - 1, direction, base)
        for chain, (check, grads) in enumerate(zip(checks, (plain_grads, weighted_grads))):
            if check is None:
                continue
            analytic, unconnected = directional(grads, direction)
            # The gradient's own rounding in its dtype: relative to the size of the terms it sums, which
            # a gradient that cancels to about 0 (a Hessian times ones) does not show, but the weighted
            # chain's gradient of the same order, computed with other upstream weights, does.
            terms = max(scale(g, direction) for g in (plain_grads, weighted_grads) if g is not None)
            floor = max(GRADIENT_ULPS * differences.epsilon(tol_dtype) * terms,
                        _own_rounding(agreed, evaluator, order, chain, direction, analytic, tol_dtype),
                        differences.tiny(tol_dtype))
            judged = differences.assess(0.0 if analytic is None else analytic, lambda t: along(t)[chain], h,
                                        eps=eps, rtol=tol.rtol, atol=tol.atol + floor,
                                        scale=scale(grads, direction))
            if judged.outcome == "unresolved":
                check.skipped += 1
                why = unresolved(judged, order, along.raised if chain == 0 else evaluator.weighted_error)
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
                               f"{error_words(0.0 if analytic is None else analytic, judged, tol)}{counted}")
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

    def __init__(self, evaluator: Evaluator, order: int, direction: Direction, base):
        self.evaluator, self.order, self.direction = evaluator, order, direction
        self.found = {0.0: base}
        self.raised = ""  # what a shifted point raised, if one did

    def __call__(self, t: float) -> tuple[Optional[float], Optional[float]]:
        if t not in self.found:
            try:
                self.found[t] = self.evaluator.total(self.order, [t * u for u in self.direction.unit])
            except CaseRaised as e:  # outside the function's domain, say: a shorter step is tried
                self.raised = self.raised or f"{e.info.type}: {e.info.first_line}"
                self.found[t] = (None, None)
        return self.found[t]


def _own_rounding(agreed: ModeOutcome, evaluator: Evaluator, order: int, chain: int, direction: Direction,
                  analytic: Optional[float], dtype: str) -> float:
    """How far the gradient's own computation in its dtype strays from the same code's gradient in
    float64 at this point: the dtype's rounding of what the gradient is computed from (1 - s with s
    near 1, say), which the gradient's own size does not show. Capped by the rounding of the order
    below's values, so that a gradient wrong only in the narrow dtype is still called wrong."""
    if not evaluator.wide or analytic is None or dtype == "float64":
        return 0.0
    try:
        wide = evaluator.gradients(order)[chain]
    except CaseRaised:
        return 0.0
    if wide is None:
        return 0.0
    value, _ = directional(wide, direction)
    if value is None or not np.isfinite(value) or not np.isfinite(analytic):
        return 0.0
    if order == 1:
        below = max([0.0] + [float(np.max(np.abs(o.value))) for o in agreed.orders[0]
                             if o.value is not None and o.value.size and np.all(np.isfinite(o.value))])
    else:
        below = scale(_gradients(agreed.orders[order - 1]), direction)
    cap = GRADIENT_ULPS * differences.epsilon(dtype) * below
    return min(2.0 * abs(analytic - value), cap)

