"""The numeric oracle's sentences, built from what it found (harness.measure.oracles.findings): a
difference in words, how many elements were checked and how many not and why, and what a pattern
of differences means (one triangle of a square source; a surrogate gradient)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from harness.criteria import differences
from harness.measure import upstream
from harness.criteria.compare import where
from harness.measure.oracles.directions import DIRECTIONS, element_label
from harness.measure.oracles.findings import (FAR, GROWTH, INDEPENDENT, OVERFLOW, PARTIAL, SHALLOW,
                                              STILL, SURROGATE, WRONG_WAY, Finding, Heading,
                                              OrderFindings, flat_nonzero)
from harness.records import ModeOutcome

if TYPE_CHECKING:
    from harness.measure.oracles.evaluate import Evaluator

__all__ = ["cannot_tell", "error_words", "has_custom_gradient", "kinked", "line", "numeric_note",
           "surrogate", "triangle", "unchecked", "unresolved", "upstream_line"]

# Most elements a sentence names one by one.
_NAMED = 4


def error_words(analytic: float, judged: differences.Judged, tol) -> str:
    """The difference in words, with what was allowed and, at a kink, both sides."""
    if not np.isfinite(analytic):
        words = f"the gradient is {analytic:g} where the numeric derivative is finite"
    else:
        err = abs(analytic - judged.numeric)
        words = f"abs err {err:.3g}"
        words += (f" rel err {err / abs(judged.numeric):.3g}" if judged.numeric
                  else " (the numeric derivative is 0)")
        atol = f", atol {tol.atol:g}" if tol.atol else ""
        words += (f" (allowed {judged.allowed:.3g}: rtol {tol.rtol:g}{atol} and rounding, at step "
                  f"{judged.step:.3g})")
    if judged.kind == differences.KINK:
        words += (f"; the function has a kink here: its one-sided derivatives are "
                  f"{judged.left:.8g} from the left and {judged.right:.8g} from the right, and the "
                  "gradient lies outside them")
    return words


def unresolved(judged: differences.Judged, order: int, raised: str,
               heading: Optional[Heading] = None) -> str:
    """Why a direction could not be judged, in words (the same words count them together)."""
    what = "the function's value" if order == 1 else f"the order {order - 1} gradient"
    if judged.kind == differences.JUMP:
        if order == 1:
            return ("the function's value jumps within a step of the point (a discontinuous "
                    "forward, or one computed only to a tolerance), so its numeric derivative is "
                    "no evidence")
        return (f"the order {order - 1} gradient jumps within a step of the point, so a numeric "
                f"order {order} taken across it is no evidence")
    if judged.kind == differences.NOISE:
        forward = "the forward" if order == 1 else f"the order {order - 1} gradient"
        return (f"{forward}'s noise ({judged.noise:.1g}) at this step ({judged.step:.2g}) is "
                "larger than the gradient")
    if judged.kind == differences.NOISY:
        measured = f", with a measured noise of {judged.noise:.1g}," if judged.noise else ""
        return (f"{what} is too noisy at this step{measured}: central differences at two steps "
                "disagree by more than the gradient differs from them")
    if judged.kind == OVERFLOW:
        return ("the gradient without upstream weights is already infinite here, its derivative "
                "beyond the dtype's range, so the weighted gradient's infinity says nothing of how "
                "grad_fn handles its upstream gradient")
    if judged.kind == STILL and heading is not None:
        return still(heading)
    if judged.kind == PARTIAL:
        values = "the function's values" if order == 1 else f"the order {order - 1} values"
        return (f"some of {values} are not finite at the point and were left out, and the "
                "gradient may hold their derivative")
    if judged.kind == differences.FLAT:
        return (f"{what} stays exactly where it was at steps up to {judged.step:.2g}, where the "
                "gradient would move it by less than a value of the point's size is rounded to (a "
                "larger term inside may have absorbed the move), so its numeric derivative of 0 "
                "is no evidence")
    if judged.kind == differences.ROUNDED:
        return (f"at this step ({judged.step:.2g}), rounding a value of the point's size (a larger "
                f"term inside may be one) could account for how far the gradient is from the "
                f"numeric derivative of {what}, so the difference is no evidence")
    if judged.kind == differences.COARSE:
        return (f"the rounding of {what} at this step could hide a wrong sign of a derivative "
                "this small")
    return (f"{what} is not finite within a step of the point"
            + (f" (a shifted point raises {raised})" if raised else ""))


def triangle(checked: OrderFindings, agreed: ModeOutcome, evaluator: "Evaluator",
             symmetric: Sequence[bool]) -> str:
    """A sentence when every failing element of a square source sits in one strict triangle."""
    slots = {f.direction.element[0] for f in checked.failed}
    if len(slots) != 1:
        return ""
    slot = slots.pop()
    shape = evaluator.bases[slot].shape
    if symmetric[slot] or len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] < 2:
        return ""
    failed = {f.direction.element[1] for f in checked.failed}
    name = agreed.sources[slot].name
    for side, inside in (("upper", lambda i, j: i < j), ("lower", lambda i, j: i > j)):
        # Every element of that strict triangle differs (of every matrix in a batch), and no other.
        cells = {flat for flat in range(int(np.prod(shape)))
                 if inside(*np.unravel_index(flat, shape)[-2:])}
        if failed == cells:
            return (f"; every difference sits in the strict {side} triangle of {name}: the "
                    f"function reads one triangle of it. If {name} is meant to be symmetric, "
                    f"declare it (Case(symmetric=['{name}']), or --symmetric {name} with check), "
                    "so it is moved along symmetric directions only")
    return ""


def _gradient(agreed: ModeOutcome) -> str:
    """What a sentence calls the gradient: the custom gradient, or (none seen to run: a
    tf.grad_pass_through's, or x + tf.stop_gradient(q(x) - x)) the gradient."""
    return "custom gradient" if has_custom_gradient(agreed) else "gradient"


def has_custom_gradient(agreed: ModeOutcome) -> bool:
    """Whether the function under test ran a tf.custom_gradient (unknown counts as yes: the probe
    sees only the functions decorated after it was installed, as in a worker)."""
    return agreed.usage is None or bool(agreed.usage.ran)


def is_flat(judged: differences.Judged) -> bool:
    """The same value at -h, 0 and +h: the function does not change along the direction."""
    return judged.base is not None and judged.plus == judged.base == judged.minus


def surrogate(checked: OrderFindings, agreed: ModeOutcome) -> str:
    """At order 1, a sentence when the function does not change at all within a step along every
    failing direction, so its derivative there is 0 and a nonzero custom gradient is a surrogate
    (a straight-through estimator's, a quantizer's, a bound's that passes the gradient one way),
    failed here by --strict_surrogate (or by pointing the wrong way: `wrong_way`)."""
    failed = checked.failed
    if not failed or not all(flat_nonzero(f) for f in failed):
        return ""
    where_flat = _where_flat(checked, failed, agreed)
    if not where_flat:
        return ""
    sentence = (f"; {where_flat} (the same value at every shift of up to ±h checked), so its true "
                f"derivative is 0 and the {_gradient(agreed)} ({agreed.mode}'s) is a surrogate, "
                "not a derivative (a straight-through estimator's or a quantizer's)")
    h = checked.heading
    if h is not None and h.step is not None and h.slope > 0:
        sentence += f", which points the way the forward moves ({heading_words(h)})"
    return (sentence + ". --strict_surrogate fails a surrogate no expectation declares: declare "
            "it, Expectation(modes=('numeric',), outcome=SURROGATE, reason=...) in the case, or "
            "--expect 'numeric:surrogate' with check or replay")


def wrong_way(checked: OrderFindings, agreed: ModeOutcome) -> str:
    """A sentence for a surrogate pointing against the way the forward moves."""
    h = checked.heading
    failed = [f for f in checked.failed if f.judged.kind == WRONG_WAY]
    where_flat = _where_flat(checked, failed, agreed) if failed else ""
    if h is None or h.step is None or not where_flat:
        return ""
    return (f"; {where_flat} (the same value at every shift of up to ±h checked), so the "
            f"{_gradient(agreed)} ({agreed.mode}'s) is a surrogate there, and it points the wrong "
            f"way: {heading_words(h)}, so following the gradient would move the loss the wrong way")


def independent(checked: OrderFindings, agreed: ModeOutcome) -> str:
    """A sentence for a gradient where the forward does not depend on the elements at all."""
    h = checked.heading
    failed = [f for f in checked.failed if f.judged.kind == INDEPENDENT]
    where_flat = _where_flat(checked, failed, agreed) if failed else ""
    if h is None or not where_flat:
        return ""
    return (f"; {where_flat}, and the loss does not move along the gradient even at steps of "
            f"{FAR[0]:g} and {FAR[-1]:g} times the point's size: the forward does not depend on "
            f"these elements, so their derivative is 0 at any scale, and the {_gradient(agreed)} "
            f"({agreed.mode}'s) is neither a derivative nor a surrogate of anything the forward "
            "does (a gradient returning a new value for its variable, say)")


def shallow(checked: OrderFindings, agreed: ModeOutcome) -> str:
    """A sentence for a forward flat within the step that moves along the gradient at a slope far
    below the gradient's: a finely rounded smooth function, judged as such."""
    h = checked.heading
    if h is None or h.step is None:
        return ""
    return (f"; the function does not change within the step, but along the gradient it moves at "
            f"a slope of {h.slope:.3g} over a step of {h.step:.3g}, {h.per_element / h.slope:.3g} "
            f"times less than the gradient's {h.per_element:.3g} per element moved: a smooth "
            "function computed to a coarse resolution, not a step function, so the gradient is "
            "judged as its derivative, which it is not")


def heading_words(h: Heading, weighted: Optional[Heading] = None) -> str:
    """Which way the loss moves along a surrogate, over which step, found how; with `weighted`,
    the weighted chain's too."""
    with_weights = " with upstream weights" if h.chain == 1 else ""
    slopes = f"at a slope of {h.slope:.3g}{with_weights}"
    if weighted is not None and weighted.step == h.step:
        slopes += f" ({weighted.slope:.3g} with upstream weights)"
    elif weighted is not None:
        slopes += (f" ({weighted.slope:.3g} with upstream weights, over a step of "
                   f"{weighted.step:.3g})")
    return (f"along it the loss changes {slopes} over a step of {h.step:.3g}, the largest "
            f"element's move: the shortest of {h.first:.3g} × {GROWTH:g}^k at which the forward "
            "moves")


def still(h: Heading) -> str:
    """Why a surrogate's direction is unchecked: the loss did not move along it."""
    if h.raised:
        return (f"the forward is locally constant and its gradient a surrogate, whose "
                f"direction is unchecked: moving along it raised or left the domain "
                f"({h.raised})")
    return (f"the forward is locally constant and its gradient a surrogate, whose direction "
            f"is unchecked: the loss does not move along it over steps from {h.first:.3g} to "
            f"{h.longest:.3g} (half the point's own scale)")


def surrogate_passed(checked: OrderFindings, weighted: Optional[OrderFindings],
                     agreed: ModeOutcome) -> str:
    """Where the custom gradient is a surrogate that passed its direction check, and which way it
    points (with upstream weights too), as a passing verdict says it (or "")."""
    passed = _passed_surrogates(checked)
    if not passed or checked.heading is None:
        return ""
    names = [s.name for s in agreed.sources]
    parts = []
    for slot in dict.fromkeys(f.direction.slot for f in passed):
        here = [f for f in checked.findings if f.direction.slot == slot]
        mine = [f for f in passed if f.direction.slot == slot]
        if slot is None:
            parts.append(f"{len(mine)} of {len(here)} random directions")
        elif mine[0].direction.element is not None:
            parts.append(f"{len(mine)} of {len(here)} elements of {names[slot]}")
        else:
            parts.append(f"{len(mine)} of {len(here)} random directions of {names[slot]}")
    also = None
    if weighted is not None and weighted.heading is not None and _passed_surrogates(weighted):
        also = weighted.heading
    return (f"the {_gradient(agreed)} is a surrogate at {', '.join(parts)}, where the forward is "
            f"locally constant (its derivative 0), and points the way the forward moves "
            f"({heading_words(checked.heading, also)})")


def surrogate_everywhere(checked: OrderFindings) -> bool:
    """Whether every direction compared at order 1 is a surrogate's that passed: nothing there
    matched the numeric derivative as a derivative."""
    return bool(checked.compared) and len(_passed_surrogates(checked)) == len(checked.compared)


def _passed_surrogates(checked: OrderFindings) -> list[Finding]:
    return [f for f in checked.findings
            if f.judged.outcome == "match" and f.judged.kind == SURROGATE]


def strict_surrogate_only(checked: OrderFindings, options) -> bool:
    """Whether order 1's every difference is a surrogate that points the right way, failed by
    --strict_surrogate alone."""
    h = checked.heading
    return (bool(options.strict_surrogate) and bool(checked.failed) and h is not None
            and h.step is not None and h.slope > 0
            and all(flat_nonzero(f) for f in checked.failed))


def _where_flat(checked: OrderFindings, failed: Sequence[Finding], agreed: ModeOutcome) -> str:
    """Where the function is locally constant, as a sentence says it ("" where not along every
    compared direction of a random direction's source)."""
    names = [s.name for s in agreed.sources]
    if any(f.direction.element is None for f in failed):
        slots = {f.direction.slot for f in failed}
        # Random directions: the function must be flat along each compared one of their sources.
        if not all(is_flat(f.judged) for f in checked.compared if f.direction.slot in slots):
            return ""
        if None in slots or len(names) == 1:
            return "the function is locally constant here"
        return ("the function is locally constant in "
                f"{', '.join(names[slot] for slot in sorted(slots))} here")
    parts = [_flat_in(checked, slot, agreed) for slot in
             sorted({f.direction.element[0] for f in failed})]
    return ("the function is locally constant here" if parts == names and len(names) == 1
            else f"the function is locally constant in {', '.join(parts)} here")


def _flat_in(checked: OrderFindings, slot: int, agreed: ModeOutcome) -> str:
    """The source, when flat along every element compared, else its failing elements."""
    name = agreed.sources[slot].name
    shape = tuple(agreed.sources[slot].shape)
    here = [f for f in checked.compared if f.direction.element[0] == slot]
    if all(is_flat(f.judged) for f in here) or not shape:
        return name
    failing = [f.direction for f in checked.failed if f.direction.element[0] == slot]
    return ", ".join(name + element_label(shape, d.element[1], d.mirror)
                     for d in failing[:_NAMED]) + (", ..." if len(failing) > _NAMED else "")


def _fmt(value: Optional[float]) -> str:
    return "None (unconnected)" if value is None else f"{value:.8g}"


def _at(finding: Finding, order: int, names: Sequence[str], shapes: Sequence[tuple]) -> str:
    d = finding.direction
    if d.element is None:
        within = f" of {names[d.source]}" if d.source is not None else ""
        return f"order {order} along {d.label}{within}"
    slot, flat = d.element
    return where(order, slot, names) + element_label(tuple(shapes[slot]), flat, d.mirror)


def line(checked: OrderFindings, agreed: ModeOutcome, evaluator: "Evaluator",
         symmetric: Sequence[bool], extra: bool = True) -> str:
    """The worst difference, the counts (of its source, when checked by element) and, with
    `extra`, what the pattern of differences means."""
    worst = checked.worst
    names = [s.name for s in agreed.sources]
    shapes = [b.shape for b in evaluator.bases]
    unconnected = ", ".join(names[i] for i in worst.unconnected)
    counted = (f" (the None gradient of {unconnected} counted as 0)"
               if worst.unconnected and worst.analytic is not None else "")
    analytic = 0.0 if worst.analytic is None else worst.analytic
    head = (f"{_at(worst, checked.order, names, shapes)}: {agreed.mode}={_fmt(worst.analytic)} "
            f"numeric={worst.judged.numeric:.8g} "
            f"{error_words(analytic, worst.judged, worst.tol)}{counted}")
    more = ""
    if extra and checked.by_element:
        more = triangle(checked, agreed, evaluator, symmetric)
    if extra and checked.order == 1:
        more += (wrong_way(checked, agreed) if worst.judged.kind == WRONG_WAY
                 else independent(checked, agreed) if worst.judged.kind == INDEPENDENT
                 else shallow(checked, agreed) if worst.judged.kind == SHALLOW
                 else surrogate(checked, agreed))
    if extra and not more:
        more = ("; the numeric derivative is the slope of the forward as computed, so the forward "
                "and the gradient disagree here, and either may be the wrong one")
    return f"{head} ({_counts(checked, worst, names)}){more}"


def _counts(checked: OrderFindings, worst: Finding, names: Sequence[str]) -> str:
    """How many of the worst's source (of the directions, when random) differ, how many of them
    with a non-finite gradient, and how many were not checked and why."""
    slot = worst.direction.slot
    if slot is not None:
        here = [f for f in checked.findings if f.direction.slot == slot]
        kind = (f"elements of {names[slot]}" if worst.direction.element is not None
                else f"random directions of {names[slot]}")
    else:
        here, kind = list(checked.findings), "directions"
    failed = [f for f in here if f.judged.outcome == "differ"]
    counts = f"{len(failed)} of {len(here)} {kind} differ"
    nonfinite = sum(1 for f in failed if f.analytic is not None and not np.isfinite(f.analytic))
    if nonfinite:
        counts += f", {nonfinite} of them with a NaN or infinite gradient"
    for why, found in _reasons(here, checked.order, checked.heading).items():
        counts += f"; {len(found)} of {len(here)} not checked: {why}"
    return counts


def _reasons(found: Sequence[Finding], order: int,
             heading: Optional[Heading] = None) -> dict[str, list[Finding]]:
    """The findings not judged, by why (the same words count them together)."""
    reasons: dict[str, list[Finding]] = {}
    for f in found:
        if f.judged.outcome == "unresolved":
            reasons.setdefault(unresolved(f.judged, order, f.raised, heading), []).append(f)
    return reasons


def _named(found: Sequence[Finding], names: Sequence[str], shapes: Sequence[tuple]) -> str:
    """The elements of `found`, when few enough to name, in parentheses; else ""."""
    if len(found) > _NAMED or any(f.direction.element is None for f in found):
        return ""
    labels = [names[f.direction.element[0]]
              + element_label(tuple(shapes[f.direction.element[0]]), f.direction.element[1],
                              f.direction.mirror)
              for f in found]
    return f" ({', '.join(labels)})"


def unchecked(checked: OrderFindings, names: Sequence[str], shapes: Sequence[tuple]) -> str:
    """How many were checked at this order, and how many not and why, naming the elements when
    few; or "" when every one was checked."""
    if not checked.unresolved:
        return ""
    kind = _kind(checked)
    parts = [f"order {checked.order}: {len(checked.compared)} of {len(checked.findings)} {kind} "
             "checked"]
    for why, found in _reasons(checked.findings, checked.order, checked.heading).items():
        parts.append(f"{len(found)} not checked{_named(found, names, shapes)}: {why}")
    return "; ".join(parts)


def _kind(checked: OrderFindings) -> str:
    """What the findings are counted as: elements, directions, or both."""
    if checked.by_element:
        return "elements"
    if any(f.direction.element is not None for f in checked.findings):
        return "elements and random directions"
    return "directions"


def kinked(checked: OrderFindings) -> str:
    """A sentence when some matches were at a kink, or ""."""
    kinks = checked.kinks
    if not kinks:
        return ""
    order = checked.order
    what = "the function" if order == 1 else f"the order {order - 1} gradient"
    first = kinks[0].judged
    kind = _kind(checked)
    return (f"order {order}: {what} has a kink at the point along {len(kinks)} of "
            f"{len(checked.findings)} {kind} (one-sided derivatives {first.left:.8g} and "
            f"{first.right:.8g} along the first), where the gradient lies between them: judged "
            "against each side, not their average")


def none_by_design(names: Sequence[str]) -> str:
    """What is said of the arguments the function returns no gradient for (or "")."""
    if not names:
        return ""
    listed = ", ".join(names)
    return (f"; no gradient for {listed} (the function returns None): not judged, the function "
            "differentiating only its other arguments (--strict_none judges the None)")


def numeric_note(evaluator: "Evaluator", agreed: ModeOutcome, checks: Sequence,
                 symmetric: Sequence[bool], step: float) -> str:
    """How the differences were taken: dtype, step, directions, and which sources were read
    element by element from one shift of all their elements (an elementwise function)."""
    names = [s.name for s in agreed.sources]
    randoms = sorted({f.direction.source for plain, _ in checks for f in plain.findings
                      if f.direction.element is None and f.direction.source is not None})
    mixed = any(f.direction.element is None and f.direction.source is None
                for plain, _ in checks for f in plain.findings)
    if mixed:
        how = "random directions (more elements than checked one by one)"
    elif randoms:
        listed = ", ".join(names[slot] for slot in randoms)
        how = (f"every element, but {listed} along {DIRECTIONS} random directions of "
               f"{'its' if len(randoms) == 1 else 'each one'} own (more elements than checked one "
               "by one; each source judged at its own dtype's tolerance)")
        if len(randoms) == len(names):
            how = (f"{DIRECTIONS} random directions within each source (more elements than "
                   "checked one by one; each source judged at its own dtype's tolerance)")
    else:
        how = "every element"
    if any(symmetric):
        how += " (symmetric for " + ", ".join(n for n, sym in zip(names, symmetric) if sym) + ")"
    swept = sorted({slot for plain, _ in checks for slot in plain.swept})
    if swept:
        how += (f"; {', '.join(names[slot] for slot in swept)} read element by element from one "
                "shift of all its elements, its values being elementwise in it")
    if evaluator.traced_orders or evaluator.traced_against:
        # Only the case's own gradients (for their rounding) may have been traced, the values
        # differenced being eager.
        what = "evaluated" if evaluator.traced_orders else "the case's own gradients evaluated"
        how += f"; {what} through a tf.function" + _traced_check(evaluator, agreed)
    if evaluator.not_float64 and not evaluator.wide:
        how += f"; not in float64: {evaluator.not_float64}"
    return f"central differences in {evaluator.dtype()} with step {step:g}, {how}"


def _traced_check(evaluator: "Evaluator", agreed: ModeOutcome) -> str:
    """What the traced function's values at the point were found equal to."""
    # "eager": the oracle's own eager evaluation of the function, not eager mode's outcome (which
    # may have been skipped).
    said = [f"{'an eager evaluation' if against == 'eager' else agreed.mode + ' mode'}'s to a "
            f"relative {rtol:.2g}"
            for against, rtol in sorted(evaluator.traced_against.items())]
    return f" (its values at the point are {' and '.join(said)})" if said else ""


def cannot_tell(orders: Sequence[int], untrue: bool, flat: bool = False) -> str:
    """Why the upstream oracle says nothing where the plain values already differ."""
    at = f"order{'s' if len(orders) > 1 else ''} {', '.join(map(str, orders))}"
    if flat:
        return (f"not checked at {at}: where the plain values differ the forward is locally "
                "constant, so the numeric derivative with upstream weights is 0 there whatever "
                "grad_fn does with its upstream gradient (the linearity oracle checks that)")
    if untrue:
        return (f"cannot tell whether grad_fn handles its upstream gradient at {at}, where the "
                "plain values already differ from the numeric derivative (the gradient and the "
                "forward's own slope disagree there, and either may be the wrong one); a "
                "reference implementation of the intended gradient (Case(reference=...)) checks "
                "both chains")
    return f"not checked at {at}: the plain values already differ from the numeric derivative there"


def upstream_line(checked: OrderFindings, agreed: ModeOutcome, evaluator: "Evaluator",
                  plain: OrderFindings, symmetric: Sequence[bool]) -> str:
    """A difference of the weighted chain where the plain contraction has none."""
    order = checked.order
    text = line(checked, agreed, evaluator, symmetric, extra=False)
    flat = ""
    if order == 1:
        flat = (wrong_way(checked, agreed) if checked.worst.judged.kind == WRONG_WAY
                else surrogate(checked, agreed))
    if flat:
        # Where the function is flat its derivative is 0 whatever the upstream gradient: a nonzero
        # gradient there is a surrogate's, however it treats dy.
        return ("the values with upstream weights differ from the numeric derivative at order 1: "
                f"{text}{flat}")
    floating = [x for x in agreed.orders[order - 1]
                if x.value is not None and x.dtype.startswith(("float", "bfloat", "complex"))]
    parts = [upstream.weights(evaluator.seed, order, i, o.shape).ravel()
             for i, o in enumerate(floating)]
    weights = upstream.describe(np.concatenate(parts)) if parts else "[]"
    compared = "both agree" if plain.compared else "nothing could be compared at this order"
    if has_custom_gradient(agreed):
        who, taker = "grad_fn mishandles its upstream gradient", "grad_fn"
    else:
        who, taker = ("a gradient TensorFlow registers for an op mishandles its upstream gradient "
                      "(no custom gradient was seen to run)", "the op's gradient")
    return (f"{who}: at order {order} with upstream weights {weights} (the dy passed to {taker} in "
            f"place of ones, as a loss other than a plain sum passes), {text}; at the plain "
            f"contraction (every upstream gradient 1) {compared}")
