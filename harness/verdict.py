"""The verdict rules: outcomes and expectations in, one Result out. Pure.

Working out which expectations apply (`applicable`) is kept apart from
deciding what happened (`judge`), which is the one place an outcome becomes a
verdict. A run judges in the main process, which never imports TensorFlow or
the user's code: workers send plain `Measured` records and `judge_measured`
turns them into Results, so nothing a case file does to the harness inside
its own process can change a verdict.

`case` here is anything carrying the rules a verdict reads: a Case, or the
CaseInfo the main process holds (id, order, expectations, tolerance).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Mapping, Optional, Sequence, Union

import numpy as np

from harness.case import BAD_GRADIENT, GRADIENT_UNUSED, VALUES_DIFFER, Case, Expectation
from harness.compare import Mismatch, check_gradients, compare_outcomes
from harness.modes import LADDER, STEP_MODES
from harness.records import (CaseInfo, ErrorInfo, Measured, ModeOutcome, OracleOutcome, Result, RunOptions,
                             Status, Verdict)
from harness.tolerance import Tol

__all__ = ["applicable", "died", "judge", "judge_measured", "oracle_subject", "required_oracles", "skipped",
           "yardstick"]

Rules = Union[Case, CaseInfo]

# Repeated runs of one mode must give the same bits.
EXACT = Tol(rtol=0.0, atol=0.0)

# An exception at these stages is the case's (or the harness's) own fault, not
# TensorFlow's behaviour: the builder raised, or a mode runner broke.
_CASE_STAGES = frozenset({"build", "harness"})


def applicable(case: Rules, point: str, modes: Sequence[str],
               tf_version: str) -> dict[str, Expectation]:
    """The expectation covering each selected mode at `point` on `tf_version`.

    Raises:
      ValueError: two expectations cover the same mode here.
    """
    by_mode: dict[str, Expectation] = {}
    for e in case.expectations:
        if not e.applies(tf_version, point):
            continue
        for mode in e.modes:
            if mode not in modes:
                continue
            if mode in by_mode:
                raise ValueError(
                    f"two expectations cover mode {mode!r} at {point} on TensorFlow {tf_version}: "
                    f"{by_mode[mode].describe()!r} and {e.describe()!r}; narrow their points or tf_versions"
                )
            by_mode[mode] = e
    return by_mode


def yardstick(case: Rules, point: str, outcomes: Mapping[str, ModeOutcome], tf_version: str, default: str) -> str:
    """The mode the others are compared with at `point`: `default`, unless it was skipped or
    an expectation declares that it deviates there; then the first selected mode with neither.

    The one place this is decided: the judge compares the modes with it, and the
    oracles check its values (see oracle_subject). A GRADIENT_UNUSED expectation
    on a mode that cannot observe gradient use is not judged, so it does not
    disqualify that mode.
    """
    active = tuple(m for m, o in outcomes.items() if o.status is not Status.SKIP)
    try:
        expected = applicable(case, point, active, tf_version)
    except ValueError:
        expected = {}
    expected = {m: e for m, e in expected.items()
                if not (e.outcome == GRADIENT_UNUSED and outcomes[m].usage is None)}
    return _yardstick(default, active, expected)


def oracle_subject(outcomes: Mapping[str, ModeOutcome], reference: str) -> tuple[str, str]:
    """The mode whose values the oracles check, and a note saying so when it is not `reference`:
    the reference's, unless it computed none; then the first selected mode that did. A training
    step (an outcome with `top_order`) computes order 1 only and is never checked."""
    ref = outcomes.get(reference)
    if ref is None or ref.status is Status.OK and ref.top_order is None:
        return reference, ""
    for mode, outcome in outcomes.items():
        if outcome.status is Status.OK and outcome.top_order is None:
            how = (f"computes order {ref.top_order} only" if ref.top_order is not None
                   else f"raised {ref.error.type}" if ref.error else ref.status.value)
            return mode, f"; checked on {mode}'s values, since {reference} (the yardstick mode) {how}"
    if ref.top_order is not None:
        return next((m for m, o in outcomes.items() if o.top_order is None), reference), ""
    return reference, ""


def _yardstick(default: str, modes: Sequence[str], expected: Mapping[str, Expectation]) -> str:
    # A mode declared to deviate, or skipped, is no yardstick: the first that is neither is, a
    # training step (which computes order 1 only) only when no other mode is left.
    if default in modes and default not in expected:
        return default
    ordered = [m for m in modes if m not in STEP_MODES] + [m for m in modes if m in STEP_MODES]
    return next((m for m in ordered if m not in expected),
                default if default in modes else next(iter(ordered), default))


def _met(e: Expectation, outcome: ModeOutcome, disagreements: list[Mismatch],
         malformed: list[Mismatch]) -> Optional[bool]:
    """True if `outcome` is the declared deviation, False if it is the normal
    behaviour instead, None if it is some other deviation."""
    if e.outcome == VALUES_DIFFER:
        if outcome.status is not Status.OK:
            return None
        if e.orders and any(m.order not in e.orders for m in disagreements):
            return None
        return bool(disagreements)
    if e.outcome == BAD_GRADIENT:
        # A malformed gradient cannot agree with well-formed ones, so disagreements are part of it.
        if outcome.status is not Status.OK:
            return None
        return bool(malformed)
    if e.outcome == GRADIENT_UNUSED:
        # The fallback explains any difference in values, so those are part of it.
        if outcome.status is not Status.OK or outcome.usage is None:
            return None
        if outcome.usage.unused:
            return True
        return False if not disagreements and not malformed else None
    if outcome.status is Status.ERROR and outcome.error.is_a(e.outcome):
        return True
    if outcome.status is Status.OK and not disagreements and not malformed:
        return False
    return None


def _fallback(outcome: ModeOutcome, order: int) -> Optional[str]:
    """A line saying that `outcome` never called a custom gradient function whose forward it ran."""
    usage = outcome.usage
    if order < 1 or outcome.status is not Status.OK or usage is None or not usage.unused:
        return None
    names = ", ".join(usage.unused)
    return (f"{outcome.mode} never called the custom gradient of {names} although its forward ran: the "
            "gradient came from somewhere else, usually ordinary autodiff of its body")


def _deviation_lines(mode: str, outcome: ModeOutcome, disagreements: list[Mismatch],
                     malformed: list[Mismatch], ref_mode: str, active: Mapping[str, ModeOutcome]) -> list[str]:
    lines = [m.message for m in disagreements + malformed]
    if not lines and outcome.status is Status.ERROR:
        e = outcome.error
        others = [m for m in active if m != mode]
        raising = [m for m in others if active[m].status is Status.ERROR and active[m].error is not None]
        same = [m for m in raising if active[m].error.type == e.type]
        if not others:
            said = f"{mode} is the only mode selected"
        elif len(same) == len(others):
            said = "every selected mode raises it too"
        else:
            # Each other mode as it is: raising this, raising something else, or computing values.
            parts = [f"{', '.join(same)} raise{'s' if len(same) == 1 else ''} it too"] if same else []
            parts += [f"{m} raises {active[m].error.type}" for m in raising if m not in same]
            calm = [m for m in others if m not in raising]
            if calm and not parts:
                parts.append("no other selected mode raises it")
            elif calm:
                parts.append(f"{', '.join(calm)} do{'es' if len(calm) == 1 else ''} not raise")
            said = "; ".join(parts)
        lines.append(f"{mode} raises {e.type} at {e.stage}: {e.first_line} ({said}; a case must "
                     "compute its values, or declare the error with an Expectation)")
    return lines


def _flaky(outcomes: Mapping[str, ModeOutcome], repeats: Mapping[str, Sequence[ModeOutcome]]) -> list[str]:
    """One line per mode whose results changed between repeated runs (compared exactly)."""
    lines = []
    for mode, again in repeats.items():
        first = outcomes.get(mode)
        if first is None or first.status is Status.SKIP:
            continue
        for run, later in enumerate(again, start=2):
            found = compare_outcomes(dataclasses.replace(first, mode=f"{mode} run 1"),
                                     dataclasses.replace(later, mode=f"{mode} run {run}"),
                                     tolerance=EXACT)
            if found:
                lines.append(f"{mode}: results change between runs: {found[0].message}")
                break
    return lines


def _ladder(outcomes: Mapping[str, ModeOutcome], tolerance, said: Sequence[str] = ()) -> Optional[str]:
    """Where along eager, no_autograph, function, xla, graph the results first part; the
    difference itself only when no line in `said` already says it."""
    steps = [m for m in LADDER if m in outcomes and outcomes[m].status is not Status.SKIP]
    if len(steps) < 2:
        return None
    for before, after in zip(steps, steps[1:]):
        found = compare_outcomes(outcomes[before], outcomes[after], tolerance=tolerance)
        if found:
            same = " = ".join(steps[:steps.index(before) + 1])
            prefix = f"{same} agree; " if before != steps[0] else ""
            what = "" if any(found[0].message in line for line in said) else f": {found[0].message}"
            return f"along the ladder {' > '.join(steps)}: {prefix}the results part between {before} and {after}{what}"
    return None


_ORACLE_WORDS = {"numeric": "the numeric derivative", "upstream": "the numeric derivative with upstream weights",
                 "reference": "the reference implementation", "analytic": "the analytic values"}


_MISHANDLES = "grad_fn mishandles its upstream gradient: "


def _oracle_line(o: OracleOutcome, weighted_disagree: Sequence[str] = ()) -> str:
    """The oracle's headline. The upstream oracle blames grad_fn only while the modes that take
    reverse-mode gradients agree on the weighted values (forward mode uses the body's JVP where
    it has one, so it may well differ); otherwise a mode may be at fault, and it says so."""
    if o.name == "upstream" and o.details:
        line = o.details[0]
        if weighted_disagree and line.startswith(_MISHANDLES):
            line = ("the values with upstream weights differ from the numeric derivative, and "
                    f"{', '.join(dict.fromkeys(weighted_disagree))} disagree with them, so a mode rather than "
                    "grad_fn may be at fault: " + line[len(_MISHANDLES):])
        return line
    orders = ", ".join(map(str, o.differ))
    first = f": {o.details[0]}" if o.details else ""
    return f"the agreed values differ from {_ORACLE_WORDS[o.name]} at order {orders}{first}"


def judge(case: Rules, point: str, outcomes: Mapping[str, ModeOutcome], *, tf_version: str,
          reference: str, rerun: str, strict_xpass: bool = False,
          oracles: Optional[Mapping[str, OracleOutcome]] = None,
          repeats: Optional[Mapping[str, Sequence[ModeOutcome]]] = None) -> Result:
    """Decides the verdict on `case` at `point` from every selected mode's outcome.

    Args:
      case: the case.
      point: the label of the point judged.
      outcomes: mode name to outcome; must include `reference`.
      tf_version: the running TensorFlow version, for version-ranged expectations.
      reference: the default yardstick mode; the one every other mode is
        compared with is yardstick()'s choice from it, as for the oracles.
      rerun: the command line that reruns this case and point alone.
      strict_xpass: make an unmet expectation a failure.
      oracles: what each oracle said about the yardstick mode's values.
      repeats: the later runs of each mode, when modes were run more than once.
    """
    oracles = dict(oracles or {})

    disagree = [False]
    chosen = [""]  # the yardstick, once chosen

    def result(verdict: Verdict, reason: str, details: Sequence[str] = ()) -> Result:
        return Result(case=case.id, point=point, order=case.order, verdict=verdict,
                      reason=reason, details=tuple(details), outcomes=dict(outcomes), rerun=rerun,
                      oracles=oracles, modes_disagree=disagree[0], yardstick=chosen[0])

    for verdict, status in ((Verdict.CRASH, Status.CRASH), (Verdict.TIMEOUT, Status.TIMEOUT)):
        dead = [o for o in outcomes.values() if o.status is status]
        if dead:
            lines = [f"{o.mode}: {o.error.first_line if o.error else status.value}" for o in dead]
            return result(verdict, lines[0], lines)

    changing = _flaky(outcomes, repeats or {})
    if changing:
        return result(Verdict.FLAKY, changing[0], changing)

    skipped_lines = [f"{o.mode} skipped: {o.note}" for o in outcomes.values() if o.status is Status.SKIP]
    active = {m: o for m, o in outcomes.items() if o.status is not Status.SKIP}
    if not active:
        return result(Verdict.SKIP, skipped_lines[0], skipped_lines)
    judged_oracles = {name: o for name, o in oracles.items() if o.status in ("match", "differ")}
    broken = [o for o in active.values() if o.status is Status.ERROR and o.error.stage in _CASE_STAGES]
    try:
        expected = applicable(case, point, tuple(active) + tuple(judged_oracles), tf_version)
    except ValueError as e:
        return result(Verdict.ERROR, str(e))

    notes: list[str] = []
    for mode, e in list(expected.items()):
        if e.outcome == GRADIENT_UNUSED and mode in active and active[mode].usage is None:
            # Like an oracle that did not run: what cannot be seen is not judged.
            notes.append(f"{mode}: gradient use is not observed in this run, so '{e.describe()}' is not judged")
            del expected[mode]
    reference = chosen[0] = yardstick(case, point, outcomes, tf_version, reference)
    ref = active[reference]
    deviations: list[str] = []
    # Differences only in the weighted chain come after the oracles' lines: when the
    # upstream oracle says why (a grad_fn mishandling its upstream gradient), that leads.
    weighted_only: list[tuple[str, str]] = []
    met: list[tuple[str, Expectation]] = []
    unmet: list[tuple[str, Expectation]] = []
    for mode, outcome in active.items():
        disagreements = [] if mode == reference else compare_outcomes(ref, outcome, tolerance=case.tolerance)
        disagree[0] = disagree[0] or bool(disagreements)
        malformed = check_gradients(outcome)
        fallback = _fallback(outcome, case.order)
        e = expected.get(mode)
        if e is None:
            plain = [m for m in disagreements if not m.upstream]
            deviations += ([fallback] if fallback else []) + _deviation_lines(mode, outcome, plain, malformed,
                                                                              reference, active)
            weighted_only += [(mode if not plain else "", m.message) for m in disagreements if m.upstream]
            continue
        if e.outcome == GRADIENT_UNUSED:  # the fallback explains every difference, weighted ones too
            happened = _met(e, outcome, disagreements, malformed)
        else:
            # A declared deviation is met at the plain contraction; a weighted difference where the
            # plain values agree is not what it declares.
            happened = _met(e, outcome, [m for m in disagreements if not m.upstream], malformed)
            if happened is False:
                weighted_only += [(mode, m.message) for m in disagreements if m.upstream]
        if fallback and e.outcome != GRADIENT_UNUSED:
            notes.append(fallback)
        if happened is None:
            got = _deviation_lines(mode, outcome, disagreements, malformed, reference, active)
            deviations.append(f"{mode}: expected {e.describe()}; got instead: "
                              + " | ".join(got or [outcome.status.value]))
        else:
            (met if happened else unmet).append((mode, e))
    mode_deviations = bool(deviations)

    for name, o in oracles.items():
        if o.status == "error":
            return result(Verdict.ERROR, f"{name} oracle: {o.note}", [o.note])
        e = expected.get(name)
        if o.status == "skip":
            notes.append(f"{name} oracle not checked: {o.note}")
        elif e is None:
            if o.status == "differ":
                # Modes whose plain values agree but weighted ones do not (forward mode aside).
                deviations.append(_oracle_line(o, [m for m, _ in weighted_only if m not in ("", "forward")]))
                deviations += [f"{name}: {line}" for line in o.details[1:]]
        elif o.status == "differ" and e.orders and not set(o.differ) <= set(e.orders):
            deviations.append(f"{name}: expected {e.describe()}; got instead: " + _oracle_line(o))
        else:
            (met if o.status == "differ" else unmet).append((name, e))
            notes += [f"{name}: {line}" for line in o.details]

    if weighted_only:
        mode_deviations = True
        deviations += [line for _, line in weighted_only]
    unexpected_build = [o for o in broken if o.mode not in dict(met)]
    if unexpected_build and len(unexpected_build) < len(active) and all(o.error.stage == "build"
                                                                        for o in unexpected_build):
        # Built in some modes and not in others: a difference between the modes, not a broken case.
        built = [m for m in active if m not in {o.mode for o in unexpected_build}]
        o = unexpected_build[0]
        raising = ", ".join(b.mode for b in unexpected_build)
        lead = (f"the case's build step raises {o.error.type} in {raising} but not in {', '.join(built)}: "
                f"{o.error.first_line}")
        deviations.insert(0, lead)
        unexpected_build = []
    if unexpected_build:
        o = unexpected_build[0]
        return result(Verdict.ERROR,
                      f"the case's {o.error.stage} step raises {o.error.type} in {o.mode}: {o.error.first_line}",
                      [f"{b.mode}: {b.error.type}: {b.error.first_line}" for b in unexpected_build])
    if deviations:
        # Along the ladder, only modes without a declared deviation say where the results part.
        undeclared = {m: o for m, o in active.items() if m not in expected}
        ladder = _ladder(undeclared, case.tolerance, said=deviations) if mode_deviations else None
        lines = _said_once(deviations[:1] + ([ladder] if ladder else []) + deviations[1:] + notes + skipped_lines,
                           active)
        return result(Verdict.FAIL, deviations[0], lines + _hints(active, oracles, lines))
    checked = [n for n in ("numeric", "reference", "analytic") if n in judged_oracles and n not in expected]
    words = [_ORACLE_WORDS[n] for n in checked]
    if "upstream" in judged_oracles and "upstream" not in expected:
        if "numeric" in checked:
            words[0] += " (with and without upstream weights)" if len(words) > 1 else ", with and without upstream weights"
        else:
            checked, words = checked + ["upstream"], words + [_ORACLE_WORDS["upstream"]]
    matched = (", and match " + " and ".join(words)) if checked else ""
    if not expected:
        agree = "all modes agree" if len(active) > 1 else f"{reference} computes its values"
        unchecked = _unchecked(ref, oracles, checked)
        if unchecked:
            return dataclasses.replace(
                result(Verdict.PASS, f"{agree}, but nothing checked that the values are right: {unchecked}",
                       notes + skipped_lines), unchecked=unchecked)
        return result(Verdict.PASS, f"{agree}{matched}" if checked else "", notes + skipped_lines)
    met_lines = [f"as declared: {_modes_of(e, met)} {e.outcome}: {e.reason}" for e in _distinct(met)]
    if not unmet:
        return result(Verdict.XFAIL, "declared: " + ", ".join(f"{m} {e.outcome}" for m, e in met),
                      met_lines + notes + skipped_lines)
    unmet_lines = [f"declared but did not happen on TensorFlow {tf_version}: {_modes_of(e, unmet)} "
                   f"{e.outcome} ({e.reason}); they agree with {reference}: if TensorFlow fixed it, "
                   "narrow the expectation's tf_versions" for e in _distinct(unmet)]
    verdict = Verdict.FAIL if strict_xpass else Verdict.XPASS
    return result(verdict, unmet_lines[0], unmet_lines + met_lines + notes + skipped_lines)


def _unchecked(ref: ModeOutcome, oracles: Mapping[str, OracleOutcome], checked: Sequence[str]) -> str:
    """Why a pass shows only that the modes agree; empty when an oracle judged the values."""
    values = [o.value for order in ref.orders for o in order
              if o.value is not None and o.value.size and np.asarray(o.value).dtype.kind in "fc"]
    if values and not any(np.isfinite(v).any() for v in values):
        return (f"every value {ref.mode} computes is NaN or infinite, and modes agreeing on NaN say nothing "
                "about the function")
    if checked:
        return ""
    if not oracles:
        return "no oracle ran"
    skipped = [name for name, o in oracles.items() if o.status == "skip"]
    if len(skipped) == len(oracles):
        names = skipped[0] if len(skipped) == 1 else f"{', '.join(skipped[:-1])} and {skipped[-1]}"
        return f"the {names} oracle{'s' if len(skipped) > 1 else ''} could not judge them (see below)"
    return "no oracle judged them"


def _said_once(lines: Sequence[str], outcomes: Mapping[str, ModeOutcome]) -> list[str]:
    """`lines` with each exception's message quoted once: a later line quoting the same message
    points to it instead (three modes raising one error once printed its paragraph three times)."""
    texts = {o.error.first_line for o in outcomes.values() if o.error is not None and len(o.error.first_line) >= 30}
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


# The modes that trace the case's code through AutoGraph.
_AUTOGRAPH_MODES = frozenset({"function", "xla", "saved_model", "keras_fit", "keras_xla", "keras_mixed",
                              "keras_mirrored"})
_WRONG_COUNT = re.compile(r"expected to return (\d+) gradients?, but returned (\d+)")
_NONE_GRADIENT = re.compile(r"gradient wrt (\S+): \w+=None \(unconnected\) numeric=")


def _hints(outcomes: Mapping[str, ModeOutcome], oracles: Mapping[str, OracleOutcome],
           lines: Sequence[str]) -> list[str]:
    """What to do, for the common causes, each only where its cause is what happened here."""
    hints = []
    errors = [o.error for o in outcomes.values() if o.status is Status.ERROR and o.error is not None]
    custom = any(o.usage is not None and o.usage.ran for o in outcomes.values())
    branching = [m for m, o in outcomes.items() if o.status is Status.ERROR and o.error is not None
                 and (o.error.is_a("OperatorNotAllowedInGraphError")
                      or "as a Python `bool` is not allowed" in o.error.message)]
    if branching:
        # Where a mode that runs AutoGraph raises it too, AutoGraph left the `if` alone; else only the
        # modes without AutoGraph (graph, no_autograph, ...) do, and AutoGraph converted it.
        if not any(m in _AUTOGRAPH_MODES for m in branching):
            hints.append("hint: a Python `if` or bool() on a tensor cannot run in graph code without AutoGraph "
                         "(a tf.compat.v1 graph, autograph=False): use tf.cond or tf.where")
        elif custom:
            hints.append("hint: a Python `if` or bool() on a tensor inside a custom gradient cannot run in graph code, "
                         "and AutoGraph does not convert a function under @tf.custom_gradient: use tf.cond or "
                         "tf.where (TensorFlow's advice to decorate it with @tf.function does not help there)")
        else:
            hints.append("hint: a Python `if` or bool() on a tensor that AutoGraph did not convert (its source "
                         "cannot be read, or it is in code AutoGraph leaves alone) cannot run in graph code: use "
                         "tf.cond or tf.where")
    counts = next((m for m in (_WRONG_COUNT.search(e.message) for e in errors) if m), None)
    if counts or any("Num gradients" in e.message for e in errors):
        wanted = int(counts.group(1)) if counts else 0
        got = f" (it returned {counts.group(2)} for {wanted} input{'s' if wanted != 1 else ''})" if counts else ""
        hints.append(f"hint: grad_fn must return one gradient per input of the function, in order{got}; a function "
                     "that uses variables returns a pair: the input gradients, and a list with one per variable")
    upstream = oracles.get("upstream")
    if upstream is not None and upstream.status == "differ" and any(line.startswith(_MISHANDLES) for line in lines):
        hints.append("hint: multiply the gradient by dy: grad_fn must return the upstream gradient dy times the "
                     "derivative, not the derivative alone nor a sum over dy")
    unconnected = next((m.group(1) for m in (_NONE_GRADIENT.search(line) for line in lines) if m), None)
    if unconnected and custom:
        hints.append(f"hint: grad_fn returned None for {unconnected}, whose derivative is not zero here: None tells "
                     f"TensorFlow that {unconnected} does not affect the output; return its gradient")
    elif unconnected:
        hints.append(f"hint: the gradient of {unconnected} is None (unconnected), though its derivative is not zero "
                     "here: an op on its path has no gradient, or tf.stop_gradient cuts it")
    return hints


def _distinct(pairs: list[tuple[str, Expectation]]) -> list[Expectation]:
    found: list[Expectation] = []
    for _, e in pairs:
        if not any(e is f for f in found):
            found.append(e)
    return found


def _modes_of(e: Expectation, pairs: list[tuple[str, Expectation]]) -> str:
    return "/".join(m for m, f in pairs if f is e)


def skipped(case: Rules, point: str, reason: str, rerun: str) -> Result:
    """A Result for a point that was not run."""
    return Result(case=case.id, point=point, order=case.order, verdict=Verdict.SKIP,
                  reason=reason, details=(), outcomes={}, rerun=rerun)


def died(case_id: str, point: str, order: int, status: Status, mode: str, how: str, output: str,
         rerun: str) -> Result:
    """A Result for a point whose process crashed or timed out while running `mode`.

    Args:
      status: Status.CRASH or Status.TIMEOUT.
      how: what happened, e.g. "killed by SIGABRT" or "ran past the 60 s timeout".
      output: the last lines the process wrote, kept with the outcome.
    """
    verdict = Verdict.CRASH if status is Status.CRASH else Verdict.TIMEOUT
    outcome = ModeOutcome(mode=mode, status=status,
                          error=ErrorInfo(type=status.value, bases=(), message=f"{how}\n{output}".strip(),
                                          stage=mode))
    lines = [line for line in output.splitlines() if line.strip()]
    return Result(case=case_id, point=point, order=order, verdict=verdict, reason=f"{mode} mode: {how}",
                  details=tuple(f"output: {line}" for line in lines), outcomes={mode: outcome}, rerun=rerun)


def required_oracles(options: RunOptions, case_oracles: Sequence[str]) -> tuple[str, ...]:
    """The oracles every point with a mode that ran must come back with: the numeric one (with the
    upstream one when that check is on) unless turned off, and the case's own ("reference",
    "analytic"). The one place this is decided: the oracles run these, the judge demands them."""
    numeric = ("numeric",) + (("upstream",) if options.upstream else ()) if options.numeric else ()
    return numeric + tuple(name for name in ("reference", "analytic") if name in case_oracles)


def judge_measured(case: CaseInfo, measured: Sequence[Measured], *, points: Sequence[str], modes: Sequence[str],
                   options: RunOptions, tf_version: str, reference: str, reruns: Mapping[str, str],
                   strict_xpass: bool = False, changed: Sequence[str] = (), lost: str = "") -> list[Result]:
    """Judges what a worker measured for `case` at `points`: one Result per point.

    A measurement that is not what was asked for (a point, a mode or a
    required oracle missing) is an `error`: something in the process that
    ran the case broke or replaced the harness's measuring; so is a case that `changed` global
    TensorFlow state (each entry says what), as its values were computed
    under, or left behind, a different TensorFlow. `lost` says why the worker
    could send none of its measurement, when it could not.
    """
    if not case.runs_on(tf_version):
        reason = f"the case needs TensorFlow {case.tf_versions}; this is {tf_version}"
        return [skipped(case, p, reason, reruns[p]) for p in points]
    by_point = {m.point: m for m in measured}
    wanted = required_oracles(options, case.oracles)
    results = []
    for label in points:
        if lost:
            results.append(Result(case=case.id, point=label, order=case.order, verdict=Verdict.ERROR,
                                  reason=lost, details=(), outcomes={}, rerun=reruns[label]))
            continue
        m = by_point.get(label)
        broken = _malformed(m, modes, wanted)
        if broken:
            # Whether the case's code or a fault of the harness did it cannot be told from here.
            results.append(Result(case=case.id, point=label, order=case.order, verdict=Verdict.ERROR,
                                  reason=f"{broken}: something in the process that ran the case (its code, or a "
                                         "fault in the harness) broke or replaced the harness's measuring, so "
                                         "nothing measured here is judged",
                                  details=(), outcomes=dict(m.outcomes) if m else {}, rerun=reruns[label],
                                  oracles=dict(m.oracles) if m else {}))
            continue
        results.append(judge(case, label, m.outcomes, tf_version=tf_version, reference=reference,
                             rerun=reruns[label], strict_xpass=strict_xpass, oracles=m.oracles, repeats=m.repeats))
    notes = dict(case.notes)
    results = [dataclasses.replace(r, details=r.details + (notes[r.point],)) if r.point in notes else r
               for r in results]
    if changed:
        reason = (f"the case left process-wide state changed, which later cases in its process would inherit: "
                  f"{'; '.join(changed)}; undo each change, and join each thread it starts, before it returns")
        results = [dataclasses.replace(r, verdict=Verdict.ERROR, reason=reason,
                                       details=(f"verdict before the check: {r.verdict.value}",) + r.details)
                   for r in results]
    return results


def _malformed(m: Optional[Measured], modes: Sequence[str], wanted: Sequence[str]) -> str:
    """What is missing from a measurement, or "" when it is complete."""
    if m is None:
        return "the worker sent no measurement for this point"
    if set(m.outcomes) != set(modes):
        return (f"the worker sent outcomes for {', '.join(m.outcomes) or 'no mode'} where the modes run were "
                f"{', '.join(modes)}")
    ran = any(o.status is not Status.SKIP for o in m.outcomes.values())
    absent = [name for name in wanted if name not in m.oracles] if ran else []
    if absent:
        return f"the worker sent no result for the {' and '.join(absent)} oracle{'s' if len(absent) > 1 else ''}"
    return ""
