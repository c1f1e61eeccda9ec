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

from harness.case import Case, Point
from harness.compare import compare_outcomes, compare_outputs, where
from harness.modes import eager
from harness.modes._tf import Progress, build_subject, error_info, is_target, tape_orders, tf
from harness.records import ModeOutcome, OracleOutcome, Output, RunOptions, Status
from harness.tolerance import NUMERIC_STEPS, numeric_tolerance_for, tolerance_for

__all__ = ["check", "DIRECTIONS"]

# Random directions per order: enough to catch a wrong derivative with
# probability one, while costing two evaluations each.
DIRECTIONS = 2


def check(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions) -> dict[str, OracleOutcome]:
    """Every oracle the case has (and the numeric one unless turned off) on `agreed`."""
    wanted = [name for name, present in (("numeric", options.numeric), ("reference", case.reference is not None),
                                         ("analytic", case.analytic is not None)) if present]
    if agreed.status is not Status.OK:
        note = f"{agreed.mode} computed no values to check"
        return {name: OracleOutcome(name=name, status="skip", note=note) for name in wanted}
    run = {"numeric": lambda: _numeric(case, point, agreed, options),
           "reference": lambda: _reference(case, point, agreed, options),
           "analytic": lambda: _analytic(case, point, agreed)}
    return {name: run[name]() for name in wanted}


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


# -- numeric --------------------------------------------------------------------------------

class _NotWide(Exception):
    """The function computed in another dtype than float64: its differences would be noise."""


class _Evaluator:
    """The sum of a case's order-k outputs at shifted sources, in eager mode."""

    def __init__(self, case: Case, point: Point, wide: bool):
        self.case = case
        self.wide = wide
        values = [_upcast(v) if wide else v for v in point.values]
        self.args = values
        if wide:
            with tf.variable_creator_scope(_upcast_variable):
                self.subject = build_subject(case)
        else:
            self.subject = build_subject(case)
        self.bases = [np.array(values[i]) for i in case.wrt_indices] + [v.numpy() for v in self.subject.variables]

    def dtype(self) -> str:
        if self.wide:
            return "float64"
        # The coarsest dtype among the sources sets the step.
        return max((b.dtype.name for b in self.bases), key=lambda n: NUMERIC_STEPS.get(n, 0.0))

    def total(self, order: int, shifts: Sequence[np.ndarray]) -> float:
        """sum(order `order` outputs) with every source moved by its shift."""
        case = self.case
        xs = list(self.args)
        for slot, i in enumerate(case.wrt_indices):
            xs[i] = (self.bases[slot] + shifts[slot]).astype(self.bases[slot].dtype)
        variables = self.subject.variables
        offset = len(case.wrt_indices)
        try:
            for j, v in enumerate(variables):
                v.assign((self.bases[offset + j] + shifts[offset + j]).astype(self.bases[offset + j].dtype))
            orders = tape_orders(self.subject, [tf.constant(x) for x in xs], order, RunOptions(), Progress())
        finally:
            for j, v in enumerate(variables):
                v.assign(self.bases[offset + j])
        targets = [t for t in orders[order] if is_target(t)]
        if self.wide and any(t.dtype != tf.float64 for t in targets):
            raise _NotWide(", ".join(sorted({t.dtype.name for t in targets})))
        return float(sum(np.sum(t.numpy().astype(np.float64)) for t in targets))


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
    """A unit shift of every source: one element (`element` = (source slot, flat index)) or random."""

    unit: list
    element: Optional[tuple[int, int]] = None
    label: str = ""


def _directions(bases: Sequence[np.ndarray], full: bool, seed: int) -> list[_Direction]:
    """One-hot elements (with `full`, or when there are no more elements than directions),
    else DIRECTIONS seeded random unit vectors."""
    if full or sum(b.size for b in bases) <= DIRECTIONS:
        found = []
        for slot, base in enumerate(bases):
            for flat in range(base.size):
                unit = [np.zeros(b.shape) for b in bases]
                unit[slot].flat[flat] = 1.0
                found.append(_Direction(unit, element=(slot, flat)))
        return found
    rng = np.random.default_rng(seed)
    found = []
    for d in range(DIRECTIONS):
        parts = [rng.standard_normal(b.shape) for b in bases]
        norm = np.sqrt(sum(np.sum(p * p) for p in parts))
        found.append(_Direction([p / norm for p in parts], label=f"random direction {d + 1} of {DIRECTIONS}"))
    return found


def _close(analytic: float, numeric: float, tol) -> tuple[float, float, float]:
    """How far `analytic` is beyond `tol` from `numeric` (<= 0 when close), and the abs and rel error."""
    if not np.isfinite(analytic):
        return float("inf"), float("inf"), float("inf")
    err = abs(analytic - numeric)
    rel = err / abs(numeric) if numeric else float("inf")
    return err - (tol.atol + tol.rtol * abs(numeric)), err, rel


def _numeric(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions) -> OracleOutcome:
    why_not = _why_not_numeric(case, point, agreed)
    if why_not:
        return OracleOutcome(name="numeric", status="skip", note=why_not)
    evaluator, why = None, []
    for wide in (True, False):
        try:
            candidate = _Evaluator(case, point, wide)
            candidate.total(case.order - 1, [np.zeros(b.shape) for b in candidate.bases])
            evaluator = candidate
            break
        except _NotWide as e:
            why.append(f"float64 inputs give {e} outputs")
        except Exception as e:  # noqa: BLE001 - the case's own code, at another dtype
            info = error_info(e, "")
            why.append(f"{'float64' if wide else 'its own dtype'}: {info.type}: {info.first_line}")
    if evaluator is None:
        return OracleOutcome(name="numeric", status="skip",
                             note="the function could not be evaluated for differences: " + "; ".join(why))
    directions = _directions(evaluator.bases, options.numeric_full, _seed(case, point))
    kind = "elements" if directions[0].element else "directions"
    note = (f"central differences in {evaluator.dtype()} with step {NUMERIC_STEPS[evaluator.dtype()]:g}, "
            + ("every element" if directions[0].element else f"{len(directions)} random directions"))
    lines: list[tuple[int, str]] = []
    unchecked: list[str] = []
    skipped_in_all = 0
    try:
        for order in range(1, case.order + 1):
            worst, failures, skipped = _check_order(case, agreed, evaluator, order, directions)
            if worst:
                lines.append((order, f"{worst} ({failures} of {len(directions)} {kind})"))
            if skipped:
                unchecked.append(f"order {order}: {skipped} of {len(directions)} {kind}")
                skipped_in_all += skipped
    except Exception as e:  # noqa: BLE001 - a shifted point may leave the function's domain
        info = error_info(e, "")
        return OracleOutcome(name="numeric", status="skip",
                             note=f"a shifted point raises {info.type}: {info.first_line}")
    if unchecked:
        note += "; not finite within a step of the point, so not checked: " + ", ".join(unchecked)
        if skipped_in_all == case.order * len(directions):  # nothing was checked at all
            return OracleOutcome(name="numeric", status="skip", note=note)
    return _outcome("numeric", range(1, case.order + 1), lines, note)


def _why_not_numeric(case: Case, point: Point, agreed: ModeOutcome) -> str:
    """Why the numeric oracle cannot check `agreed` at `point`; empty when it can."""
    reason = case.kinks.get(point.label, case.kinks.get("*"))
    if reason:
        return f"declared not smooth here: {reason}"
    if any(s.dtype.startswith("complex") for s in agreed.sources):
        return ("complex sources: TensorFlow's gradient of a real function of z is the conjugate of its "
                "Wirtinger derivative; real directions do not check it")
    for order, outputs in enumerate(agreed.orders[1:], start=1):
        for out, source in zip(outputs, agreed.sources):
            if out.value is not None and (out.shape != source.shape or out.dtype != source.dtype):
                return (f"the order {order} gradient wrt {source.name} is {out.dtype}{list(out.shape)}, not "
                        "shaped like its source: no derivative to check")
    return ""


def _check_order(case: Case, agreed: ModeOutcome, evaluator: _Evaluator, order: int,
                 directions: Sequence[_Direction]) -> tuple[str, int, int]:
    """The worst difference at `order` (a line, or ""), how many directions differ, how many
    could not be checked because the difference quotient is not finite."""
    step = NUMERIC_STEPS[evaluator.dtype()]
    names = [s.name for s in agreed.sources]
    gradients = [np.zeros(b.shape) if o.value is None else o.value.astype(np.float64)
                 for o, b in zip(agreed.orders[order], evaluator.bases)]
    # A random direction mixes every source: judge it with the loosest of their tolerances.
    loosest = max((s.dtype for s in agreed.sources),
                  key=lambda d: numeric_tolerance_for(d, case.oracle_tolerance).rtol)
    worst, worst_excess, failures, skipped = "", 0.0, 0, 0
    for direction in directions:
        if direction.element:
            slot, flat = direction.element
            h = step * max(1.0, abs(float(evaluator.bases[slot].flat[flat])))
            tol = numeric_tolerance_for(agreed.sources[slot].dtype, case.oracle_tolerance)
            index = np.unravel_index(flat, evaluator.bases[slot].shape)
            at = where(order, slot, names) + (f"{[int(i) for i in index]}" if len(index) else "")
        else:
            h = step * max([1.0] + [float(np.max(np.abs(b))) for b in evaluator.bases if b.size])
            tol = numeric_tolerance_for(loosest, case.oracle_tolerance)
            at = f"order {order} along {direction.label}"
        plus = evaluator.total(order - 1, [h * u for u in direction.unit])
        minus = evaluator.total(order - 1, [-h * u for u in direction.unit])
        numeric = (plus - minus) / (2 * h)
        if not np.isfinite(numeric):
            skipped += 1  # the function overflows or leaves its domain within a step
            continue
        analytic = float(sum(np.sum(g * u) for g, u in zip(gradients, direction.unit)))
        excess, err, rel = _close(analytic, numeric, tol)
        if excess <= 0:
            continue
        failures += 1
        if not worst or excess > worst_excess:
            worst_excess = excess
            worst = (f"{at}: {agreed.mode}={analytic:.8g} numeric={numeric:.8g} abs err {err:.3g} "
                     f"rel err {rel:.3g} (rtol {tol.rtol:g}, atol {tol.atol:g})")
    return worst, failures, skipped
