"""Surrogate gradients: where the forward is locally constant and the custom gradient is not.

A straight-through estimator or a quantizer's gradient is deliberately not the forward's
derivative: the forward is a step function, flat within any step of the numeric oracle, so its
derivative there is 0, and the custom gradient is something else on purpose. The numeric derivative
cannot judge it, but what a surrogate can get wrong still can be:

- its direction: following the gradient must move the loss the way the forward goes at the scale
  where the forward moves. Along the surrogate (restricted to the elements where it is one), the
  loss (the plain contraction's sum of the outputs, or the weighted chain's sum of the outputs
  times their upstream weights) is moved by steps growing from the numeric oracle's by a factor of
  GROWTH until it changes (the step found from the forward itself, and said); its secant slope over
  that step must be positive. The direction is judged as a whole: a right surrogate may be negative
  in places (larq's swish_sign is, far from 0) while its elements near the jump, which the forward
  crosses first, point the right way. Where the loss does not move up to half the point's own
  scale (REACH), the direction is unchecked, and said so.
- its linearity in the upstream gradient, which the linearity oracle checks at every point
  (harness.measure.oracles.linearity).

A finding that passes is a match of kind SURROGATE; one pointing the other way differs (WRONG_WAY);
one whose loss does not move up to REACH is unresolved (STILL), unless it does not move even at the
FAR steps, where the forward does not depend on those elements at all: their derivative is 0 at any
scale, and a nonzero gradient is neither a derivative nor a surrogate of anything the forward does
(INDEPENDENT, a difference; Keras's float8 layers return a new scale and history in place of their
gradients, by design, which an expectation then declares). With --strict_surrogate an undeclared
surrogate still differs, as before the direction was checked, its words saying which way it
points. An expectation naming the intended surrogate (Expectation.intended) has the gradient
compared with it (`intended`).
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from harness.case import SURROGATE as DECLARED
from harness.case import Case, Point
from harness.measure.oracles.findings import (FAR, GROWTH, INDEPENDENT, SHALLOW, STILL, SURROGATE,
                                              WRONG_WAY, Finding, Heading, OrderFindings,
                                              flat_nonzero)
from harness.measure.oracles.evaluate import CaseRaised, Evaluator
from harness.oracle_names import NUMERIC, UPSTREAM
from harness.records import ModeOutcome
from harness.criteria.tolerance import NUMERIC_STEPS

__all__ = ["FAR", "GROWTH", "INDEPENDENT", "SHALLOW", "SURROGATE", "STILL", "WRONG_WAY",
           "candidate", "declared", "judge"]

# A step function's slope over the step that first crosses a jump is its jump over the step, at
# least of the order of a surrogate's value per element (sign's 2 over a step of at most half the
# point's scale against a straight-through 1; round's 0.25 over at most 0.25 against 1). A forward
# that moves at less than this fraction of the gradient's value per element is a smooth function
# rounded finely (0.5 + 1e-8 x rounded to 1e-12 moves at 1e-8 where the gradient says 1): its
# gradient is judged as a derivative, and differs.
SHALLOW_RATIO = 1e-3

# How far the element with the largest surrogate is moved at most, in units of the point's size
# (at least 1): beyond half of it the step measures the function somewhere else, every element
# pushed across its jumps wholesale. larq's swish_sign at x = +-1 (a binarised input its tests
# pass) is negative at every element, as it is meant to be that far from its jump at 0, and sign
# moves only at a step of 1 there: unchecked, not judged.
REACH = 0.5


def candidate(f: Finding) -> bool:
    """A difference where the forward stays exactly at its value at -h, 0 and +h (its numeric
    derivative 0) and the gradient is finite and not 0: only a surrogate can give that."""
    return f.judged.outcome == "differ" and flat_nonzero(f)


def intended(case: Case, point: Point, agreed: ModeOutcome, tf_version: str) -> list[str]:
    """Where the custom gradient is not the surrogate an expectation says is intended
    (Expectation.intended, "module:function"), at dy = 1 and with the upstream weights: one line
    per gradient that differs, at the case's tolerance; [] where it is, or none is named.

    Raises:
      ImportError, AttributeError: the module or the function cannot be found (said by the oracle
        as its error: the expectation names something that is not there).
    """
    import importlib  # noqa: PLC0415

    from harness.criteria.compare import compare_outputs, where  # noqa: PLC0415
    from harness.criteria.tolerance import tolerance_for  # noqa: PLC0415
    from harness.measure import upstream  # noqa: PLC0415
    from harness.measure.modes.shared import tf  # noqa: PLC0415
    from harness.records import Output  # noqa: PLC0415

    named = next((e.intended for e in case.expectations if e.outcome == DECLARED and e.intended
                  and e.applies(tf_version, point.label)), None)
    if named is None or len(agreed.orders) < 2:
        return []
    module, _, name = named.partition(":")
    fn = getattr(importlib.import_module(module), name)
    outputs = [o for o in agreed.orders[0] if o.value is not None]
    seed = upstream.seed(case.id, point.label)
    chains = [("", agreed.orders[1], [np.ones(o.shape) for o in outputs])]
    if agreed.upstream:
        chains.append((" with upstream weights", agreed.upstream[0],
                       [upstream.weights(seed, 1, i, o.shape) for i, o in enumerate(outputs)]))
    names = [s.name for s in agreed.sources]
    lines = []
    for label, got, dys in chains:
        dy = [tf.constant(d.astype(o.value.dtype)) for d, o in zip(dys, outputs)]
        found = fn(*[tf.constant(v) for v in point.values], dy=dy[0] if len(dy) == 1 else dy)
        found = list(found) if isinstance(found, (list, tuple)) else [found]
        for slot, (want, mine) in enumerate(zip(found, got[:len(case.wrt)])):
            if want is None or mine.value is None:
                continue
            m = compare_outputs(Output.of(np.asarray(want).astype(mine.value.dtype)), mine,
                                tolerance_for(mine.dtype, case.tolerance), ref_mode=named,
                                mode=agreed.mode, at=where(1, slot, names) + label)
            if m:
                lines.append(f"the gradient is not the intended surrogate {named}: {m.message}")
    return lines


def declared(case: Case, point: Point, tf_version: str) -> bool:
    """Whether an expectation declares the gradient a surrogate at `point`."""
    return any(e.outcome == DECLARED and e.applies(tf_version, point.label)
               and (NUMERIC in e.modes or UPSTREAM in e.modes) for e in case.expectations)


def judge(agreed: ModeOutcome, evaluator: Evaluator,
          checks: tuple[OrderFindings, Optional[OrderFindings]],
          strict: bool) -> tuple[OrderFindings, Optional[OrderFindings]]:
    """Order 1's findings of both chains, with each surrogate candidate judged by its direction:
    a match of kind SURROGATE (a difference still with `strict`), a difference of kind WRONG_WAY,
    or unresolved (STILL); each chain's OrderFindings carries the Heading it was judged by."""
    plain, weighted = checks
    grads = [_gradients(agreed.orders[1]) if len(agreed.orders) > 1 else None,
             _gradients(agreed.upstream[0]) if agreed.upstream else None]
    judged = []
    for chain, checked in enumerate((plain, weighted)):
        if checked is None or grads[chain] is None or not any(map(candidate, checked.findings)):
            judged.append(checked)
            continue
        found = heading(evaluator, grads[chain], [f for f in checked.findings if candidate(f)],
                        chain)
        judged.append(dataclasses.replace(
            checked, heading=found,
            findings=tuple(_rejudged(f, found, strict) if candidate(f) else f
                           for f in checked.findings)))
    return judged[0], judged[1]


def _rejudged(f: Finding, found: Heading, strict: bool) -> Finding:
    if found.step is None and found.independent:
        outcome, kind = "differ", INDEPENDENT
    elif found.step is None:
        outcome, kind = "unresolved", STILL
    elif found.slope < 0:
        outcome, kind = "differ", WRONG_WAY
    elif found.slope < SHALLOW_RATIO * found.per_element:
        outcome, kind = "differ", SHALLOW
    else:
        outcome, kind = ("differ", f.judged.kind) if strict else ("match", SURROGATE)
    return dataclasses.replace(f, judged=dataclasses.replace(f.judged, outcome=outcome, kind=kind))


def heading(evaluator: Evaluator, grads: Sequence[Optional[np.ndarray]],
            candidates: Sequence[Finding], chain: int) -> Heading:
    """The loss's secant slope along the gradient, restricted to where the candidates move the
    sources, over the shortest step (from the numeric oracle's, by GROWTH) at which it moves."""
    bases = evaluator.bases
    masks = [np.zeros(b.shape, bool) for b in bases]
    for f in candidates:
        for slot, unit in enumerate(f.direction.unit):
            masks[slot] |= np.asarray(unit) != 0
    parts = [np.zeros(b.shape) if g is None else np.where(m, g, 0.0)
             for b, g, m in zip(bases, grads, masks)]
    largest = max(float(np.max(np.abs(p))) if p.size else 0.0 for p in parts)
    moved = sum(int(np.count_nonzero(p)) for p in parts)
    size = max([1.0] + [float(np.max(np.abs(b[m]))) for b, m in zip(bases, masks) if m.any()])
    first = NUMERIC_STEPS[evaluator.dtype()] * size
    longest = REACH * size
    if not largest:
        return Heading(chain, None, first, longest, 0.0)
    unit = [p / largest for p in parts]  # the element with the largest surrogate moves by the step
    step = first
    while step <= longest:
        try:
            plus, minus = (_loss(evaluator, chain, [sign * step * u for u in unit])
                           for sign in (1.0, -1.0))
        except CaseRaised as e:
            return Heading(chain, None, first, longest, 0.0,
                           raised=f"{e.info.type}: {e.info.first_line}")
        if plus is None or minus is None:
            return Heading(chain, None, first, longest, 0.0,
                           raised="the loss is not finite there")
        if plus != minus:
            per_element = sum(float(np.sum(p * u)) for p, u in zip(parts, unit)) / moved
            return Heading(chain, step, first, longest, (plus - minus) / (2.0 * step),
                           per_element=per_element)
        step *= GROWTH
    return Heading(chain, None, first, longest, 0.0,
                   independent=_independent(evaluator, chain, unit, size))


def _independent(evaluator: Evaluator, chain: int, unit: list, size: float) -> bool:
    """Whether the loss stays exactly at its value at the point at every FAR step both ways: the
    forward does not depend on the elements moved (False where a step raises or is not finite)."""
    try:
        base = _loss(evaluator, chain, [np.zeros(u.shape) for u in unit])
        found = [_loss(evaluator, chain, [sign * far * size * u for u in unit])
                 for far in FAR for sign in (1.0, -1.0)]
    except CaseRaised:
        return False
    return base is not None and all(v == base for v in found)


def _loss(evaluator: Evaluator, chain: int, shifts: list) -> Optional[float]:
    values = evaluator.values(0, shifts)[chain]
    if values is None:
        return None
    total = float(np.sum(values))
    return total if np.isfinite(total) else None


def _gradients(outputs) -> list:
    return [None if o.value is None else np.asarray(o.value, np.float64) for o in outputs]
