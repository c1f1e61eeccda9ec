"""The numeric oracle's sentences: a difference in words, why a direction was not judged, and what a
pattern of failures means (one triangle of a square source; a surrogate gradient)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from harness import differences
from harness.oracles.directions import element_label
from harness.records import ModeOutcome

if TYPE_CHECKING:
    from harness.oracles.evaluate import Evaluator
    from harness.oracles.numeric import Check

__all__ = ["error_words", "has_custom_gradient", "surrogate", "triangle", "unresolved"]


def error_words(analytic: float, judged: differences.Judged, tol) -> str:
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


def unresolved(judged: differences.Judged, order: int, raised: str) -> str:
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



def triangle(check: Check, agreed: ModeOutcome, evaluator: Evaluator, symmetric: Sequence[bool]) -> str:
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
        cells = {flat for flat in range(int(np.prod(shape))) if inside(*np.unravel_index(flat, shape)[-2:])}
        if failed == cells:
            return (f"; every difference sits in the strict {side} triangle of {name}: the function reads "
                    f"one triangle of it. If {name} is meant to be symmetric, declare it "
                    f"(Case(symmetric=['{name}']), or --symmetric {name} with check), so it is moved along "
                    "symmetric directions only")
    return ""


def has_custom_gradient(agreed: ModeOutcome) -> bool:
    """Whether the function under test ran a tf.custom_gradient (unknown counts as yes: the probe
    sees only the functions decorated after it was installed, as in a worker)."""
    return agreed.usage is None or bool(agreed.usage.ran)


def is_flat(judged: differences.Judged) -> bool:
    """The same value at -h, 0 and +h: the function does not change along the direction."""
    return judged.base is not None and judged.plus == judged.base == judged.minus


def surrogate(check: Check, agreed: ModeOutcome) -> str:
    """At order 1, a sentence when the function does not change at all within a step along every
    failing direction, so its derivative there is 0 and a nonzero custom gradient is a surrogate
    (a straight-through estimator's, a quantizer's, a bound's that passes the gradient one way)."""
    failed = check.failed
    if not has_custom_gradient(agreed) or not failed or any(
            j.numeric != 0.0 or analytic in (None, 0.0) or not np.isfinite(analytic) or not is_flat(j)
            for _, analytic, j in failed):
        return ""
    names = [s.name for s in agreed.sources]
    if failed[0][0].element is None:
        # Random directions move every source: the function must be flat along each of them.
        if not all(is_flat(j) for _, j in check.seen):
            return ""
        where_flat = "the function is locally constant here"
    else:
        parts = []
        for slot in sorted({d.element[0] for d, *_ in failed}):
            seen = [d for d, j in check.seen if d.element[0] == slot]
            flat = [d for d, j in check.seen if d.element[0] == slot and is_flat(j)]
            shape = agreed.sources[slot].shape
            if len(flat) == len(seen) or not shape:
                parts.append(names[slot])
            else:  # only some elements: name the failing ones
                failing = [d for d, *_ in failed if d.element[0] == slot]
                shown = ", ".join(names[slot] + element_label(tuple(shape), d.element[1], d.mirror)
                                  for d in failing[:4]) + (", ..." if len(failing) > 4 else "")
                parts.append(shown)
        where_flat = ("the function is locally constant here" if parts == names and len(names) == 1
                      else f"the function is locally constant in {', '.join(parts)} here")
    return (f"; {where_flat} (the same value at every shift of up to ±h checked), so its true derivative is 0 "
            f"and the custom gradient ({agreed.mode}'s) is a surrogate, not a derivative (a straight-through "
            "estimator's or a quantizer's). If that is intended, declare it: Expectation(modes=('numeric',), "
            "outcome=VALUES_DIFFER, reason=...) in the case, or --expect 'numeric:values differ' with check or replay")
