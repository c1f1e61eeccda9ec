"""The sentences a verdict says: what differs and where along the ladder, what an oracle found,
why a pass checked nothing, each exception's message once, and a fix hint for the common causes.
Pure: harness.judge.verdict decides, this module words it.
"""

from __future__ import annotations

import re
from typing import Mapping, Optional, Sequence

import numpy as np

from harness import mode_names, oracle_names
from harness.case import Expectation
from harness.criteria.compare import Mismatch, compare_outcomes
from harness.records import ErrorInfo, ModeOutcome, OracleOutcome, OracleStatus, Status

__all__ = ["MISHANDLES", "NO_GRADIENT", "PARTLY_OUTSIDE", "REGISTERED",
           "partly_outside_line", "deviation_lines", "distinct", "fallback", "hints", "ladder",
           "listed", "modes_of", "no_gradient_line", "oracle_line", "raised_line", "said_once",
           "unchecked"]


def fallback(outcome: ModeOutcome, order: int) -> Optional[str]:
    """A line saying that `outcome` never called a custom gradient function whose forward it ran."""
    usage = outcome.usage
    if order < 1 or outcome.status is not Status.OK or usage is None or not usage.unused:
        return None
    names = ", ".join(usage.unused)
    return (f"{outcome.mode} never called the custom gradient of {names} although its forward ran: "
            "the gradient came from somewhere else, usually ordinary autodiff of its body")


def deviation_lines(mode: str, outcome: ModeOutcome, disagreements: list[Mismatch],
                     malformed: list[Mismatch], ref_mode: str,
                     active: Mapping[str, ModeOutcome]) -> list[str]:
    lines = [m.message for m in disagreements + malformed]
    if not lines and outcome.status is Status.ERROR:
        e = outcome.error
        others = [m for m in active if m != mode]
        raising = [m for m in others if active[m].status is Status.ERROR
                   and active[m].error is not None]
        same = [m for m in raising if active[m].error.type == e.type]
        if not others:
            said = f"{mode} is the only mode that ran"
        elif len(same) == len(others):
            said = "every other mode that ran raises it too"
        else:
            # Each other mode as it is: raising this, raising something else, or computing values.
            parts = ([f"{', '.join(same)} raise{'s' if len(same) == 1 else ''} it too"] if same
                     else [])
            parts += [f"{m} raises {active[m].error.type}" for m in raising if m not in same]
            calm = [m for m in others if m not in raising]
            if calm and not parts:
                parts.append("no other mode that ran raises it")
            elif calm:
                parts.append(f"{listed(calm)} computed at this point")
            said = "; ".join(parts)
        lines.append(f"{mode} raises {e.type} at {e.stage}: {e.first_line} ({said}; a case must "
                     "compute its values, or declare the error with an Expectation)")
    return lines


def listed(names: Sequence[str]) -> str:
    """Names as a sentence lists them: "graph", "function and graph", "xla, function and graph"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def raised_line(modes: Sequence[str], error: ErrorInfo, computed: str) -> str:
    """The deviation of `modes`, which raise `error` where the mode they are compared with,
    `computed`, computed its values at this point; said once for them all."""
    verb = "raises" if len(modes) == 1 else "raise"
    return (f"{listed(modes)} {verb} {error.type} at {error.stage}, where {computed} computed at "
            f"this point: {error.first_line}")


def ladder(outcomes: Mapping[str, ModeOutcome], tolerance,
           said: Sequence[str] = ()) -> Optional[str]:
    """Where along eager, no_autograph, function, xla, graph the results first part; the
    difference itself only when no line in `said` already says it."""
    steps = [m for m in mode_names.LADDER
             if m in outcomes and outcomes[m].status is not Status.SKIP]
    if len(steps) < 2:
        return None
    for before, after in zip(steps, steps[1:]):
        found = compare_outcomes(outcomes[before], outcomes[after], tolerance=tolerance)
        if found:
            same = " = ".join(steps[:steps.index(before) + 1])
            prefix = f"{same} agree; " if before != steps[0] else ""
            what = "" if _said(found[0], outcomes[before], outcomes[after], said) else (
                f": {found[0].message}")
            return (
                f"along the ladder {' > '.join(steps)}: {prefix}the results part between {before}"
                f" and {after}{what}"
            )
    return None


def _said(found: Mismatch, before: ModeOutcome, after: ModeOutcome, said: Sequence[str]) -> bool:
    """Whether a line in `said` already says the difference `found` between two steps: its own
    words, or, where one step raises and the other computes, that step's error."""
    if any(found.message in line for line in said):
        return True
    raised = [o.error for o in (before, after) if o.status is Status.ERROR and o.error is not None]
    return (found.kind == "status" and len(raised) == 1
            and any(f": {raised[0].first_line}" in line for line in said))


MISHANDLES = "grad_fn mishandles its upstream gradient: "
# The same finding where no custom gradient was seen to run (harness.measure.oracles.words).
REGISTERED = ("a gradient TensorFlow registers for an op mishandles its upstream gradient (no "
              "custom gradient was seen to run): ")


def oracle_line(o: OracleOutcome, weighted_disagree: Sequence[str] = ()) -> str:
    """The oracle's headline. The upstream oracle blames grad_fn only while the modes that take
    reverse-mode gradients agree on the weighted values (forward mode uses the body's JVP where
    it has one, so it may well differ); otherwise a mode may be at fault, and it says so."""
    if o.name == oracle_names.LINEARITY and o.details:
        return o.details[0]  # a whole sentence: what is not linear, where
    if o.name == oracle_names.NUMERIC and o.details and o.details[0].startswith(
            "the gradient is not the intended surrogate "):
        return o.details[0]  # not a difference from the numeric derivative
    if o.name == oracle_names.UPSTREAM and o.details:
        line = o.details[0]
        for prefix, blamed in ((MISHANDLES, "grad_fn"), (REGISTERED, "the op's gradient")):
            if weighted_disagree and line.startswith(prefix):
                line = ("the values with upstream weights differ from the numeric derivative, and "
                        f"{', '.join(dict.fromkeys(weighted_disagree))} disagree with them, so a "
                        f"mode rather than {blamed} may be at fault: " + line[len(prefix):])
        return line
    orders = ", ".join(map(str, o.differ))
    first = f": {o.details[0]}" if o.details else ""
    words = oracle_names.ROWS[o.name].words
    return f"the agreed values differ from {words} at order {orders}{first}"


def unchecked(ref: ModeOutcome, oracles: Mapping[str, OracleOutcome],
              checked: Sequence[str]) -> str:
    """Why a pass shows only that the modes agree; empty when an oracle judged the values."""
    values = [o.value for order in ref.orders for o in order
              if o.value is not None and o.value.size and np.asarray(o.value).dtype.kind in "fc"]
    # Infinities an oracle judged (a derivative beyond the dtype's range rounds to one) are checked.
    judged_infinities = checked and not any(np.isnan(v).any() for v in values)
    if values and not any(np.isfinite(v).any() for v in values) and not judged_infinities:
        return (f"every value {ref.mode} computes is NaN or infinite, and modes agreeing on NaN "
                "say nothing about the function")
    if checked:
        return ""
    if not oracles:
        return "no oracle ran"
    skipped = [name for name, o in oracles.items() if o.status is OracleStatus.SKIP]
    if len(skipped) == len(oracles):
        names = skipped[0] if len(skipped) == 1 else f"{', '.join(skipped[:-1])} and {skipped[-1]}"
        return (
            f"the {names} oracle{'s' if len(skipped) > 1 else ''} could not judge them (see below)"
        )
    return "no oracle judged them"


def said_once(lines: Sequence[str], outcomes: Mapping[str, ModeOutcome]) -> list[str]:
    """`lines` with each exception's message quoted once: a later line quoting the same message
    points to it instead (three modes raising one error once printed its paragraph three times)."""
    texts = {o.error.first_line for o in outcomes.values() if o.error is not None
             and len(o.error.first_line) >= 30}
    seen: set[str] = set()
    kept = []
    for line in lines:
        for text in texts:
            if f": {text}" in line:
                if text in seen:
                    line = line.replace(f": {text}", " (the message above)")
                seen.add(text)
        kept.append(line)
    return kept


_WRONG_COUNT = re.compile(r"expected to return (\d+) gradients?, but returned (\d+)")
_NONE_GRADIENT = re.compile(r"gradient wrt (\S+): \w+=None \(unconnected\) numeric=")


def hints(outcomes: Mapping[str, ModeOutcome], oracles: Mapping[str, OracleOutcome],
           lines: Sequence[str]) -> list[str]:
    """What to do, for the common causes, each only where its cause is what happened here."""
    hints = []
    errors = [o.error for o in outcomes.values() if o.status is Status.ERROR
              and o.error is not None]
    custom = any(o.usage is not None and o.usage.ran for o in outcomes.values())
    branching = [m for m, o in outcomes.items() if o.status is Status.ERROR and o.error is not None
                 and (o.error.is_a("OperatorNotAllowedInGraphError")
                      or "as a Python `bool` is not allowed" in o.error.message)]
    if branching:
        # Where a mode that runs AutoGraph raises it too, AutoGraph left the `if` alone; else only
        # the modes without AutoGraph (graph, no_autograph, ...) do, and AutoGraph converted it.
        if not any(m in mode_names.ROWS and mode_names.ROWS[m].autograph for m in branching):
            hints.append("hint: a Python `if` or bool() on a tensor cannot run in graph code "
                         "without AutoGraph (a tf.compat.v1 graph, autograph=False): use tf.cond "
                         "or tf.where")
        elif custom:
            hints.append("hint: a Python `if` or bool() on a tensor inside a custom gradient "
                         "cannot run in graph code, and AutoGraph does not convert a function "
                         "under @tf.custom_gradient: use tf.cond or tf.where (TensorFlow's advice "
                         "to decorate it with @tf.function does not help there)")
        else:
            hints.append("hint: a Python `if` or bool() on a tensor that AutoGraph did not convert "
                         "(its source cannot be read, or it is in code AutoGraph leaves alone) "
                         "cannot run in graph code: use tf.cond or tf.where")
    counts = next((m for m in (_WRONG_COUNT.search(e.message) for e in errors) if m), None)
    if counts or any("Num gradients" in e.message for e in errors):
        wanted = int(counts.group(1)) if counts else 0
        got = (f" (it returned {counts.group(2)} for {wanted} input{'s' if wanted != 1 else ''})"
               if counts else "")
        hints.append("hint: grad_fn must return one gradient per input of the function, in "
                     f"order{got}; a function that uses variables returns a pair: the input "
                     "gradients, and a list with one per variable")
    jacobian = _jacobian_hint(outcomes, oracles, lines)
    if jacobian:
        hints.append(jacobian)
    upstream = oracles.get(oracle_names.UPSTREAM)
    if (upstream is not None and upstream.status is OracleStatus.DIFFER
        and any(line.startswith(MISHANDLES) for line in lines)):
        hints.append("hint: grad_fn must return the upstream gradient dy times the derivative, "
                     "linear in dy as the chain rule is: one that returns the derivative alone, "
                     "sums over dy, or clips or rescales dy departs from it where a loss passes "
                     "a dy other than ones")
    unconnected = next((m.group(1) for m in (_NONE_GRADIENT.search(line) for line in lines) if m),
                       None)
    if unconnected and custom:
        hints.append(f"hint: grad_fn returned None for {unconnected}, whose derivative is not zero "
                     f"here: None tells TensorFlow that {unconnected} does not affect the output; "
                     "return its gradient")
    elif unconnected:
        hints.append(f"hint: the gradient of {unconnected} is None (unconnected), though its "
                     "derivative is not zero here: an op on its path has no gradient, or "
                     "tf.stop_gradient cuts it")
    return hints



def _jacobian_hint(outcomes: Mapping[str, ModeOutcome], oracles: Mapping[str, OracleOutcome],
                   lines: Sequence[str]) -> Optional[str]:
    """Why a jacobian context can part from its base, where one does and grad_fn is not linear in
    dy."""
    rows = [m for m in outcomes if m in mode_names.ROWS and mode_names.ROWS[m].context
            and mode_names.CONTEXTS[mode_names.ROWS[m].context].jacobian]
    linearity = oracles.get(oracle_names.LINEARITY)
    if (linearity is not None and linearity.status is OracleStatus.DIFFER
            and any(f": {m} vs " in line for line in lines for m in rows)):
        return ("hint: a jacobian's rows are grad_fn's answers to one-hot upstream gradients, "
                "one per element of the output, and they add up to tape.gradient's answer only "
                "where grad_fn is linear in dy, which the linearity check finds this one is not: "
                "clipping, normalising or ignoring dy is not (nor is a grad_fn whose Python code "
                "changes something each time it runs, once per row)")
    return None


def distinct(pairs: list[tuple[str, Expectation]]) -> list[Expectation]:
    found: list[Expectation] = []
    for _, e in pairs:
        if not any(e is f for f in found):
            found.append(e)
    return found


def modes_of(e: Expectation, pairs: list[tuple[str, Expectation]]) -> str:
    return "/".join(m for m, f in pairs if f is e)


NO_GRADIENT = "no gradient for "
PARTLY_OUTSIDE = "drawn values partly outside the function's domain: "


def partly_outside_line(counts: tuple[int, int]) -> list[str]:
    """What a drawn point says when some of its forward is not finite (none: [])."""
    bad, total = counts
    if not bad or bad == total:
        return []
    return [f"{PARTLY_OUTSIDE}the forward is NaN or infinite at {bad} of {total} elements, so only "
            "the others can be checked; the drawn values stand in for what the trace did not show"]


def no_gradient_line(names: Sequence[str], others: int) -> str:
    """What is said of arguments whose gradient the function returns as None by design; `others`
    counts the sources the numeric oracle did judge."""
    listed = ", ".join(names)
    # None may mean "does not affect the output" or "not implemented" (a special function's
    # parameter): which one, nothing here can tell, so neither is claimed.
    return (f"{NO_GRADIENT}{listed} (the function returns None): not judged, the function "
            "differentiating only its other arguments (--strict_none judges the None)"
            + ("; the other arguments are judged" if others else ""))
