"""The numeric and upstream oracles: each order against central differences of the order below.

Order k is the gradient of the sum of the order k-1 values, so each element of it is checked
against central differences of that sum, computed with the case's own order k-1: element by
element, or, where the order k-1 values are elementwise in a source (a diagonal Jacobian, which a
probe shows), every element of that source from one shift of all of them. The weighted chain
(harness.measure.upstream) is checked the same way with its upstream weights.

This module evaluates, and decides each direction's match or differ where it evaluates, with the
criteria the judge reads too: the differences' own error (harness.criteria.differences) and the
numeric tolerances (harness.criteria.tolerance). What it finds is plain data
(harness.measure.oracles.findings), put into words by harness.measure.oracles.words, and sent back
as the oracle's outcome; it decides no verdict (harness.measure.oracles says why the line runs
there).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Optional, Sequence

import numpy as np

from harness.criteria import differences
from harness.case import Case, Point
from harness.measure.oracles import surrogate, words
from harness.measure.oracles.directions import (
    Direction,
    directional,
    element_steps,
    elements,
    per_source,
    scale,
    seed,
    swept,
)
from harness.measure.oracles.evaluate import CaseRaised, Evaluator, NotWide
from harness.measure.oracles.findings import (OVERFLOW, PARTIAL, OrderFindings, Finding,
                                              flat_nonzero)
from harness.measure.oracles.outcomes import oracle_outcome, upstream_failed
from harness.oracle_names import NUMERIC, UPSTREAM
from harness.records import ModeOutcome, OracleOutcome, OracleStatus, Output, RunOptions
from harness.criteria.tolerance import (
    NUMERIC_STEPS,
    gradient_rounding,
    numeric_atol,
    numeric_tolerance_for,
)
from harness.measure.modes.shared import tf

__all__ = ["ELEMENT_LIMIT", "run"]

# Most elements the sources of a point may have, outside those of elementwise sources, for each to
# get a direction of its own: each costs two evaluations or more. A point with more is checked
# along seeded random directions, as its note says (--numeric_full lifts the limit).
ELEMENT_LIMIT = 1024


def run(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions,
        checked_note: str) -> tuple[OracleOutcome, Optional[OracleOutcome]]:
    """The numeric oracle and, when the weighted chain was computed, the upstream one."""
    with_upstream = options.upstream and bool(agreed.upstream or agreed.upstream_error)
    why_not = _why_not_numeric(case, point, agreed)
    evaluator, why = (None, why_not) if why_not else _evaluator(case, point, agreed, with_upstream)
    if evaluator is None:
        return _both(agreed, options, OracleStatus.SKIP, why + checked_note)
    symmetric = tuple(s.name in case.symmetric for s in agreed.sources)
    aside = _none_by_design(case, agreed, options)
    checks: list[tuple[OrderFindings, Optional[OrderFindings]]] = []
    stopped = ""
    for order in range(1, case.order + 1):
        try:
            checks.append(_check_order(case, agreed, evaluator, order, options, symmetric,
                                       seed(case, point), aside))
        except CaseRaised as e:  # the unshifted point, in the oracle's own evaluation
            # What the orders below found stands; this one and those above are not checked.
            stopped = (f"; the oracle's {evaluator.dtype()} evaluation of order {order - 1} at "
                       f"the point raises {e.info.type}: {e.info.first_line}, so orders {order} "
                       f"to {case.order} are not checked")
            break
    if checks:
        # Order 1's differences where the forward is locally constant: a surrogate's, judged by
        # which way it points (harness.measure.oracles.surrogate). A custom gradient need not be
        # seen: tf.grad_pass_through's is made where the probe does not watch, and
        # x + tf.stop_gradient(q(x) - x) has none at all.
        strict = options.strict_surrogate and not surrogate.declared(case, point, tf.__version__)
        checks[0] = surrogate.judge(agreed, evaluator, checks[0], strict)
    step = NUMERIC_STEPS[evaluator.dtype()]
    note = words.numeric_note(evaluator, agreed, checks, symmetric, step) + checked_note
    found = _Lines.collect(checks, agreed, evaluator, symmetric)
    numeric_note = (note + words.none_by_design([agreed.sources[slot].name for slot in aside])
                    + stopped + "".join("; " + u for u in found.unchecked))
    numeric = oracle_outcome(NUMERIC, range(1, case.order + 1), found.plain, numeric_note)
    if not any(plain.compared for plain, _ in checks):  # nothing was checked at all
        numeric = OracleOutcome(name=NUMERIC, status=OracleStatus.SKIP, note=numeric_note)
    no_gradient = tuple(agreed.sources[slot].name for slot in aside)
    numeric = dataclasses.replace(
        numeric, no_gradient=no_gradient,
        surrogate=words.surrogate_passed(*checks[0], agreed) if checks else "",
        strict_surrogate=bool(checks) and words.strict_surrogate_only(checks[0][0], options),
        surrogate_all=bool(checks) and case.order == 1 and words.surrogate_everywhere(checks[0][0]))
    numeric = _against_intended(case, point, agreed, numeric)
    if not options.upstream:
        return numeric, None
    nothing = not any(w is not None and w.compared for _, w in checks)
    return numeric, _upstream_outcome(case, agreed, evaluator, note + stopped, found, nothing)


def _against_intended(case: Case, point: Point, agreed: ModeOutcome,
                      numeric: OracleOutcome) -> OracleOutcome:
    """The numeric oracle's outcome with the differences from the intended surrogate an
    expectation names, where there are any."""
    try:
        lines = surrogate.intended(case, point, agreed, tf.__version__)
    except Exception as e:  # noqa: BLE001 - the named function's import, or its own code
        return OracleOutcome(name=NUMERIC, status=OracleStatus.ERROR,
                             note=f"the intended surrogate the expectation names cannot be "
                                  f"compared: {type(e).__name__}: {e} (name a module:function "
                                  "importable where the harness runs, called with the function's "
                                  "arguments and dy=)")
    if not lines:
        return numeric
    return dataclasses.replace(numeric, status=OracleStatus.DIFFER, strict_surrogate=False,
                               differ=tuple(sorted(set(numeric.differ) | {1})),
                               orders=numeric.orders or (1,),
                               details=tuple(lines) + numeric.details)


@dataclasses.dataclass
class _Lines:
    """The sentences of every order's checks, sorted by where they go: (order, line) pairs of the
    numeric oracle, of weighted differences alone, and of weighted differences where the plain
    values differ too; the orders whose plain values differ by finite amounts; what was not
    checked and why, of each chain."""

    plain: list = dataclasses.field(default_factory=list)
    weighted: list = dataclasses.field(default_factory=list)
    both: list = dataclasses.field(default_factory=list)
    untrue: set = dataclasses.field(default_factory=set)
    flat: set = dataclasses.field(default_factory=set)  # orders whose differences are all flat
    unchecked: list = dataclasses.field(default_factory=list)
    weighted_unchecked: list = dataclasses.field(default_factory=list)

    @classmethod
    def collect(cls, checks, agreed: ModeOutcome, evaluator: Evaluator,
                symmetric: Sequence[bool]) -> "_Lines":
        found = cls()
        names = [s.name for s in agreed.sources]
        shapes = [b.shape for b in evaluator.bases]
        for plain, weighted in checks:
            order = plain.order
            said = (words.unchecked(plain, names, shapes), words.kinked(plain))
            found.unchecked += [u for u in said if u]
            if plain.failed:
                found.plain.append((order, words.line(plain, agreed, evaluator, symmetric)))
            if weighted is None:
                continue
            if weighted.unresolved:
                found.weighted_unchecked.append(words.unchecked(weighted, names, shapes))
            if weighted.failed and plain.failed:
                line = words.line(weighted, agreed, evaluator, symmetric, extra=False)
                found.both.append((order, "with upstream weights too: " + line))
                if all(f.analytic is not None and np.isfinite(f.analytic) for f in plain.failed):
                    found.untrue.add(order)
                if order == 1 and all(flat_nonzero(f) for f in plain.failed):
                    found.flat.add(order)
            elif weighted.failed:
                line = words.upstream_line(weighted, agreed, evaluator, plain, symmetric)
                found.weighted.append((order, line))
        return found


def _upstream_outcome(case: Case, agreed: ModeOutcome, evaluator: Evaluator, note: str,
                      found: _Lines, nothing_checked: bool) -> OracleOutcome:
    if agreed.upstream_error is not None:
        return upstream_failed(agreed, note)
    if not agreed.upstream:
        return OracleOutcome(name=UPSTREAM, status=OracleStatus.SKIP,
                             note="the weighted chain was not computed")
    note = f"upstream weights seeded by case and point (harness.measure.upstream); {note}"
    note += "".join("; " + u for u in found.weighted_unchecked)
    if evaluator.weighted_error:
        note += (f"; the weighted chain raises {evaluator.weighted_error} at some shifted points "
                 f"in the oracle's {evaluator.dtype()} evaluation, which are not checked")
    if nothing_checked:
        numeric_unchecked = [u for u in found.unchecked if "has a kink" not in u]
        if found.weighted_unchecked == numeric_unchecked:  # said once, by the numeric oracle
            return OracleOutcome(name=UPSTREAM, status=OracleStatus.SKIP,
                                 note="not checked, for the reason the numeric oracle gives")
        return OracleOutcome(name=UPSTREAM, status=OracleStatus.SKIP, note=note)
    if found.both and not found.weighted:
        # Every weighted difference sits at an order where the plain contraction differs too: the
        # numeric derivative cannot tell there whether grad_fn also mishandles its upstream
        # gradient.
        orders = [order for order, _ in found.both]
        untrue = words.has_custom_gradient(agreed) and set(orders) <= found.untrue
        return OracleOutcome(name=UPSTREAM, status=OracleStatus.SKIP,
                             note=words.cannot_tell(orders, untrue, set(orders) <= found.flat))
    outcome = oracle_outcome(UPSTREAM, range(1, case.order + 1), found.weighted, note)
    both = tuple(line for _, line in found.both)
    return dataclasses.replace(outcome, details=outcome.details + both)


def _both(agreed: ModeOutcome, options: RunOptions, status: OracleStatus,
          note: str) -> tuple[OracleOutcome, Optional[OracleOutcome]]:
    """Both oracles with one status and note; what the weighted chain raised is seen regardless."""
    numeric = OracleOutcome(name=NUMERIC, status=status, note=note)
    if not options.upstream:
        return numeric, None
    weighted = (upstream_failed(agreed, note) if agreed.upstream_error is not None
                else OracleOutcome(name=UPSTREAM, status=status, note=note))
    return numeric, weighted


def _evaluator(case: Case, point: Point, agreed: ModeOutcome,
               with_upstream: bool) -> tuple[Optional[Evaluator], str]:
    """The evaluator in float64 where the function allows it, else in its own dtype; it keeps
    why float64 was not used, for the note."""
    why = []
    made: dict[bool, Evaluator] = {}

    def evaluator(wide: bool) -> Evaluator:
        if wide not in made:
            made[wide] = Evaluator(case, point, wide, with_upstream, agreed.orders,
                                   agreed_seconds=agreed.seconds)
        return made[wide]

    def own() -> Optional[tuple[np.ndarray, str]]:
        """The forward's values in the sources' own dtype (None: it raises there)."""
        with contextlib.suppress(CaseRaised, NotWide):
            narrow = evaluator(False)
            return narrow.base(0)[0], narrow.dtype()
        return None

    for wide in (True, False):
        try:
            candidate = evaluator(wide)
            # The forward first: how long it takes says whether to trace the orders above.
            candidate.base(0)
            narrower = candidate.narrower_inside(own) if wide else ""
            if narrower:
                why.append(narrower)
                continue
            candidate.base(case.order - 1)
            candidate.not_float64 = "; ".join(why)
            return candidate, ""
        except NotWide as e:
            why.append(f"float64 inputs give {e} outputs")
        except CaseRaised as e:
            where = "in float64 it raises" if wide else "in its own dtype it raises"
            why.append(f"{where} {e.info.type}: {e.info.first_line}")
    return None, "the function could not be evaluated for differences: " + "; ".join(why)


def _why_not_numeric(case: Case, point: Point, agreed: ModeOutcome) -> str:
    """Why the numeric oracle cannot check `agreed` at `point`; empty when it can."""
    reason = case.kinks.get(point.label, case.kinks.get("*"))
    if reason:
        return f"declared not checked numerically here: {reason}"
    if agreed.sources and all(0 in tuple(s.shape) for s in agreed.sources):
        shapes = ", ".join(f"{s.name} {list(s.shape)}" for s in agreed.sources)
        return (f"every differentiated argument is empty ({shapes}): there is no element whose "
                "derivative could be checked")
    if any(s.dtype.startswith("complex") for s in agreed.sources):
        return ("complex sources: TensorFlow's gradient of a real function of z is the conjugate "
                "of its Wirtinger derivative; real directions do not check it")
    for order, outputs in enumerate(agreed.orders[1:], start=1):
        for out, source in zip(outputs, agreed.sources):
            if out.value is not None and (out.shape != source.shape or out.dtype != source.dtype):
                return (f"the order {order} gradient wrt {source.name} is "
                        f"{out.dtype}{list(out.shape)}, not shaped like its source: no derivative "
                        "to check")
    return ""


def gradients(outputs: Sequence[Output]) -> list[Optional[np.ndarray]]:
    return [None if o.value is None else o.value.astype(np.float64) for o in outputs]


def _directions(evaluator: Evaluator, order: int, options: RunOptions, symmetric: Sequence[bool],
                point_seed: int,
                aside: Sequence[int] = ()) -> tuple[list[Direction], tuple[int, ...], dict]:
    """Every element's direction and the slots read from one shift of all their elements; or
    random directions, for a point too large for that whose function is not elementwise. The
    sources `aside` are never moved. Also what the probes of single sources already read of
    those shifts: {slot: {tau: values}} (`_elementwise`)."""
    bases = evaluator.bases
    kept = [slot for slot in range(len(bases)) if slot not in aside]
    shapes = evaluator.shapes[order - 1]
    # The sources shaped like every order k-1 value: probed together first, since a function
    # elementwise in each (a * x, say) is so in all at once; one by one where that fails.
    like = [slot for slot in kept if not symmetric[slot] and bases[slot].size > 1 and shapes
            and all(shape == bases[slot].shape for shape in shapes)]
    read: dict[int, dict] = {}
    if len(like) > 1 and _elementwise(evaluator, order, like) is not None:
        flat = tuple(like)
    else:
        read = {slot: _elementwise(evaluator, order, [slot]) for slot in like}
        flat = tuple(slot for slot in like if read[slot] is not None)
    rest = [slot for slot in kept if slot not in flat]
    randoms: list[int] = []
    if not options.numeric_full and sum(bases[slot].size for slot in rest) > ELEMENT_LIMIT:
        # The smallest sources element by element while they fit in ELEMENT_LIMIT, every other one
        # along random directions of its own: each source's elements judged at its own dtype's
        # tolerance, never at another's (a source of 2 wrong elements beside one of 1,000).
        budget = ELEMENT_LIMIT
        for slot in sorted(rest, key=lambda s: (bases[s].size, s)):
            if bases[slot].size <= budget:
                budget -= bases[slot].size
            else:
                randoms.append(slot)
        rest = [slot for slot in rest if slot not in randoms]
    # An elementwise source's element reads its own values, also when moved alone (numeric_full):
    # one of them not finite is then that element's, not every element's.
    outputs = len(evaluator.shapes[order - 1])
    found = [d for slot in flat for d in swept(bases, slot, outputs)]
    found += elements(bases, symmetric, rest) + per_source(bases, randoms, point_seed, symmetric)
    if options.numeric_full:
        return found, (), {}
    kept = {slot: read[slot] for slot in read if slot in flat}
    return found, flat, kept


def _elementwise(evaluator: Evaluator, order: int, slots: Sequence[int]) -> Optional[dict]:
    """Whether each element of the order k-1 values depends on the same element of the sources
    `slots` only (a diagonal Jacobian in each), all shaped like every value: for each bit of the
    flat index, moving the elements with that bit set (or clear) by their step leaves every value
    element with it clear (or set) exactly as it was. That is 2 ceil(log2 n) evaluations for n
    elements. None when it does not; else, for one source, the values of a shift of all its
    elements by +- its step (tau = +-1, as _Along keys them), put together from these
    evaluations, where each element moved alone reads what it would read moved with the others:
    the bits alternate the sign of their shifts, so that with two bits or more every element was
    moved both ways (a downward shift that raises or moves another element is tried upward)."""
    base = evaluator.base(order - 1)
    size = evaluator.bases[slots[0]].size
    index = np.arange(size)
    outputs = len(evaluator.shapes[order - 1])
    alone = len(slots) == 1  # shifts of several sources together read none of them alone
    read: dict[float, list] = {}
    covered: dict[float, np.ndarray] = {}
    for bit in range(int(np.ceil(np.log2(size)))):
        has = (index >> bit) & 1 == 1
        for moved in (has, ~has):
            sign = -1.0 if bit % 2 else 1.0
            now = _moved_alone(evaluator, order, slots, moved, sign, base)
            if now is None and sign < 0:
                sign = 1.0
                now = _moved_alone(evaluator, order, slots, moved, sign, base)
            if now is None:
                return None
            if not alone:
                continue
            where = np.tile(moved, outputs)
            kept = read.setdefault(sign, [None if v is None else np.full(v.shape, np.nan)
                                          for v in now])
            for into, v in zip(kept, now):
                if into is not None:
                    into[where] = v[where]
            covered[sign] = covered.get(sign, np.zeros(size, bool)) | moved
    return {sign: tuple(values) for sign, values in read.items() if covered[sign].all()}


def _moved_alone(evaluator: Evaluator, order: int, slots: Sequence[int], moved: np.ndarray,
                 sign: float, base) -> Optional[tuple]:
    """The order k-1 values with the `moved` elements of the sources `slots` shifted by `sign`
    times their step, where every other value element is exactly as it was at the point; else
    None (and None where the function raises there)."""
    shape = evaluator.bases[slots[0]].shape
    shifts = [np.zeros(b.shape) for b in evaluator.bases]
    for slot in slots:
        steps = element_steps(evaluator.bases[slot], NUMERIC_STEPS[evaluator.dtype()])
        shifts[slot] = sign * steps * moved.reshape(shape)
    try:
        now = evaluator.values(order - 1, shifts)
    except CaseRaised:
        return None
    still = np.tile(~moved, len(evaluator.shapes[order - 1]))
    if not all(_unmoved(after, before, still) for after, before in zip(now, base)):
        return None
    return now


def _unmoved(after: Optional[np.ndarray], before: Optional[np.ndarray], still: np.ndarray) -> bool:
    """Whether the `still` elements are exactly what they were (NaN where they were NaN)."""
    if after is None or before is None:
        return after is None and before is None
    if after.shape != still.shape or before.shape != still.shape:
        return False
    return bool(np.array_equal(after[still], before[still], equal_nan=True))


def _none_by_design(case: Case, agreed: ModeOutcome, options: RunOptions) -> tuple[int, ...]:
    """The arguments whose gradient the function returns as None, where the case did not name
    what to differentiate: the function saying it has none (a special function differentiates
    some arguments only, as documented), set aside rather than judged against the numeric
    derivative, unless --strict_none. A gradient the modes disagree on is the modes'
    comparison's."""
    if options.strict_none or case.wrt_named or len(agreed.orders) < 2:
        return ()
    arguments = len(case.wrt)
    return tuple(slot for slot, out in enumerate(agreed.orders[1][:arguments]) if out.value is None)


def _check_order(case: Case, agreed: ModeOutcome, evaluator: Evaluator, order: int,
                 options: RunOptions, symmetric: Sequence[bool],
                 point_seed: int,
                 aside: Sequence[int] = ()) -> tuple[OrderFindings, Optional[OrderFindings]]:
    """Both chains at `order`, along every element's direction (or random ones)."""
    plain_grads = gradients(agreed.orders[order])
    weighted_grads = None
    if order - 1 < len(agreed.upstream) and evaluator.tables is not None:
        weighted_grads = gradients(agreed.upstream[order - 1])
    evaluator.base(order - 1)  # the unshifted point: what the agreed mode computed, so it must run
    directions, flat, read = _directions(evaluator, order, options, symmetric, point_seed, aside)
    step = NUMERIC_STEPS[evaluator.dtype()]
    # Every element of a swept source is read from the same shifts of all its elements at once,
    # starting from those its probe read.
    sweeps = {slot: _Along(evaluator, order - 1,
                           [element_steps(b, step) if i == slot else np.zeros(b.shape)
                            for i, b in enumerate(evaluator.bases)], read.get(slot))
              for slot in flat}
    found: list[list[Finding]] = [[], []]
    for direction in directions:
        along = sweeps.get(direction.element[0]) if direction.picks is not None else None
        if along is None:
            h = _tolerance(case, agreed, evaluator, direction)[1]
            along = _Along(evaluator, order - 1, [h * u for u in direction.unit])
        for chain, grads in enumerate((plain_grads, weighted_grads)):
            if grads is not None:
                found[chain].append(_finding(case, agreed, evaluator, order, direction, chain,
                                             along, (plain_grads, weighted_grads)))
        if weighted_grads is not None:
            found[1][-1] = _overflowed(found[0][-1], found[1][-1])
    # No direction at all: every source set aside (a gradient None by design for each); nothing
    # is compared, and the oracle says so.
    by_element = bool(directions) and all(d.element is not None for d in directions)
    plain = OrderFindings(order, tuple(found[0]), by_element, flat)
    if weighted_grads is None:
        return plain, None
    return plain, OrderFindings(order, tuple(found[1]), by_element, flat)


def _tolerance(case: Case, agreed: ModeOutcome, evaluator: Evaluator,
               direction: Direction) -> tuple[str, float]:
    """The dtype whose tolerance judges `direction`, and its starting step."""
    step = NUMERIC_STEPS[evaluator.dtype()]
    if direction.element is not None:
        slot, flat = direction.element
        value = evaluator.bases[slot].flat[flat]
        return agreed.sources[slot].dtype, float(element_steps(np.asarray(value), step))
    if direction.source is not None:  # a random direction within one source: its own dtype's
        base = evaluator.bases[direction.source]
        largest = max([1.0] + ([float(np.max(np.abs(base)))] if base.size else []))
        return agreed.sources[direction.source].dtype, step * largest
    # A random direction mixing every source: judged with the loosest of their tolerances.
    loosest = max((s.dtype for s in agreed.sources),
                  key=lambda d: numeric_tolerance_for(d, case.oracle_tolerance).rtol)
    largest = max([1.0] + [float(np.max(np.abs(b))) for b in evaluator.bases if b.size])
    return loosest, step * largest


def _finding(case: Case, agreed: ModeOutcome, evaluator: Evaluator, order: int,
             direction: Direction, chain: int, along: "_Along", both: tuple) -> Finding:
    """One chain's gradient along `direction` against the differences of its order k-1 values."""
    grads = both[chain]
    tol_dtype, h = _tolerance(case, agreed, evaluator, direction)
    tol = numeric_tolerance_for(tol_dtype, case.oracle_tolerance)
    analytic, unconnected = directional(grads, direction)
    # The size of the terms the gradient sums, whose rounding in its dtype widens its atol
    # (numeric_atol): a gradient that cancels to about 0 (a Hessian times ones) does not show it,
    # but the weighted chain's gradient of the same order, computed with other upstream weights,
    # does.
    terms = max(scale(g, direction) for g in both if g is not None)
    picks, left_out = _picks(direction, along(0.0)[chain])
    size = h / NUMERIC_STEPS[evaluator.dtype()]  # the point's size along the direction, at least 1
    # The gradient's own rounding takes an evaluation of the case's gradients in float64: asked
    # for only where the first step does not match without it.
    judged = differences.assess(0.0 if analytic is None else analytic,
                                lambda t: _readout(along(t / h)[chain], picks), h,
                                eps=differences.epsilon(evaluator.dtype()), rtol=tol.rtol,
                                atol=numeric_atol(tol, tol_dtype, terms),
                                scale=scale(grads, direction),
                                wider=lambda: numeric_atol(tol, tol_dtype, terms, _own_rounding(
                                    agreed, evaluator, order, chain, direction, analytic,
                                    tol_dtype, size)),
                                least=differences.epsilon(evaluator.dtype()) * size)
    if judged.outcome == "differ" and left_out and direction.picks is None:
        judged = dataclasses.replace(judged, outcome="unresolved", kind=PARTIAL)
    if judged.outcome == "differ" and _rounds_to_infinity(analytic, judged.numeric, tol_dtype,
                                                          tol.rtol, direction):
        judged = dataclasses.replace(judged, outcome="match")
    raised = along.raised if chain == 0 else evaluator.weighted_error
    return Finding(direction, analytic, judged, tol, tuple(unconnected), raised, left_out)


def _rounds_to_infinity(analytic: Optional[float], numeric: float, dtype: str, rtol: float,
                        direction: Direction) -> bool:
    """Whether one element's infinite gradient is its derivative rounded to its dtype: a derivative
    beyond the dtype's largest value (to the tolerance), of the same sign, rounds to infinity
    (e^89 in float32)."""
    if direction.element is None or analytic is None or not np.isinf(analytic):
        return False
    if not np.isfinite(numeric) or np.sign(numeric) != np.sign(analytic):
        return False
    return abs(numeric) * (1.0 + rtol) >= float(tf.as_dtype(dtype).max)


def _overflowed(plain: Finding, weighted: Finding) -> Finding:
    """`weighted`, unresolved where an element's plain gradient is an infinity that matched (its
    derivative beyond the dtype's range) and its weighted gradient, infinite too, differs: the
    weighted derivative may be in range, and the infinity is the same overflow, whatever grad_fn
    does with dy."""
    infinite = [f.analytic is not None and np.isinf(f.analytic) for f in (plain, weighted)]
    if (weighted.judged.outcome == "differ" and plain.judged.outcome == "match" and all(infinite)
            and weighted.direction.element is not None):
        return dataclasses.replace(weighted, judged=dataclasses.replace(
            weighted.judged, outcome="unresolved", kind=OVERFLOW))
    return weighted


def _picks(direction: Direction, base: Optional[np.ndarray]) -> tuple[Optional[np.ndarray], int]:
    """The value elements a direction reads, and how many it leaves out for not being finite at
    the point (all but those, where the direction has no elements of its own; all of them where
    none is finite, so that the direction is seen not to be finite)."""
    if direction.picks is not None or base is None:
        return direction.picks, 0
    finite = np.flatnonzero(np.isfinite(base))
    if not finite.size:
        return None, 0
    return finite, base.size - finite.size


def _readout(values: Optional[np.ndarray], picks: Optional[np.ndarray]) -> Optional[float]:
    if values is None:
        return None
    total = float(np.sum(values[picks])) if picks is not None else float(np.sum(values))
    return total if np.isfinite(total) else None


class _Along:
    """The evaluator's order-k values at `tau` times a shift, memoised: both chains and every step
    the differences ask for share the evaluations, and every element of a swept source shares
    those of one shift of all its elements (tau being a multiple of each element's own step)."""

    def __init__(self, evaluator: Evaluator, order: int, shift: list,
                 found: Optional[dict] = None):
        self.evaluator, self.order, self.shift = evaluator, order, shift
        self.found: dict = dict(found or {})  # tau: values, read already
        self.raised = ""  # what a shifted point raised, if one did

    def __call__(self, tau: float) -> tuple:
        key = round(tau, 12)
        if key == 0.0:
            return self.evaluator.base(self.order)
        if key not in self.found:
            try:
                self.found[key] = self.evaluator.values(self.order, [key * s for s in self.shift])
            except CaseRaised as e:  # outside the function's domain, say: a shorter step is tried
                self.raised = self.raised or f"{e.info.type}: {e.info.first_line}"
                self.found[key] = (None, None)
        return self.found[key]


def _own_rounding(agreed: ModeOutcome, evaluator: Evaluator, order: int, chain: int,
                  direction: Direction, analytic: Optional[float], dtype: str,
                  size: float) -> float:
    """How far the gradient's own computation in its dtype strays from the same code's gradient
    in float64 at this point: the dtype's rounding of what the gradient is computed from (1 - s
    with s near 1, say), which the gradient's own size does not show. Capped by the rounding of
    the order below's values, or of a value of the point's `size` where that is larger (softmax's
    s near 1 beside a loss -log s near 0), so that a gradient wrong only in the narrow dtype is
    still called wrong."""
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
                             if o.value is not None and o.value.size
                             and np.all(np.isfinite(o.value))])
    else:
        below = scale(gradients(agreed.orders[order - 1]), direction)
    cap = gradient_rounding(dtype, max(below, size))
    return min(2.0 * abs(analytic - value), cap)
