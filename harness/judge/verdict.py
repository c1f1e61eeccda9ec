"""The verdict rules: outcomes and expectations in, one Result out. Pure.

Working out which expectations apply (`applicable`, in harness.criteria.rules with the
other rules the measuring side reads too) is kept apart from deciding what
happened (`judge`), which is the one place an outcome becomes a verdict. A run judges in the main
process, which never imports TensorFlow or the user's code: workers send plain `Measured` records
and `judge_measured` turns them into Results, so nothing a case file does to the harness inside its
own process can change a verdict.

`case` here is anything carrying the rules a verdict reads: a Case, or the
CaseInfo the main process holds (id, order, expectations, tolerance).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Sequence

import numpy as np

from harness.case import BAD_GRADIENT, GRADIENT_UNUSED, VALUES_DIFFER, Expectation
from harness.criteria.compare import Mismatch, check_gradients, compare_outcomes
from harness.judge.explain import (
    ORACLE_WORDS,
    deviation_lines,
    distinct,
    fallback,
    hints,
    ladder,
    modes_of,
    no_gradient_line,
    oracle_line,
    partly_outside_line,
    said_once,
    unchecked,
)
from harness.records import (
    CaseInfo,
    ErrorInfo,
    Measured,
    ModeOutcome,
    OracleOutcome,
    OracleStatus,
    Result,
    RunOptions,
    Status,
    Verdict,
)
from harness.criteria.rules import Rules, applicable, required_oracles, yardstick
from harness.criteria.tolerance import Tol

__all__ = ["died", "judge", "judge_measured", "skipped"]

# Repeated runs of one mode must give the same bits.
EXACT = Tol(rtol=0.0, atol=0.0)

# An exception at these stages is the case's (or the harness's) own fault, not
# TensorFlow's behaviour: the builder raised, or a mode runner broke.
_CASE_STAGES = frozenset({"build", "harness"})


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


def _flaky(outcomes: Mapping[str, ModeOutcome],
           repeats: Mapping[str, Sequence[ModeOutcome]]) -> list[str]:
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


class _ResultFor:
    """Makes the Result for one point: what the judging found so far goes into every verdict."""

    def __init__(self, case: Rules, point: str, outcomes: Mapping[str, ModeOutcome],
                 oracles: dict[str, OracleOutcome], rerun: str):
        self.case, self.point, self.outcomes, self.oracles, self.rerun = (case, point, outcomes,
                                                                          oracles, rerun)
        self.disagree = False
        self.yardstick = ""  # once chosen
        self.undeclared: tuple[str, ...] = ()  # on a fail: Result.undeclared

    def __call__(self, verdict: Verdict, reason: str, details: Sequence[str] = ()) -> Result:
        return Result(case=self.case.id, point=self.point, order=self.case.order, verdict=verdict,
                      reason=reason, details=tuple(details), outcomes=dict(self.outcomes),
                      rerun=self.rerun, oracles=self.oracles, modes_disagree=self.disagree,
                      yardstick=self.yardstick,
                      undeclared=self.undeclared if verdict is Verdict.FAIL else ())


@dataclasses.dataclass
class _Findings:
    """What comparing the modes and reading the oracles found, before the verdict."""

    notes: list[str]
    deviations: list[str] = dataclasses.field(default_factory=list)
    # Differences only in the weighted chain come after the oracles' lines: when the
    # upstream oracle says why (a grad_fn mishandling its upstream gradient), that leads.
    weighted_only: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    met: list[tuple[str, Expectation]] = dataclasses.field(default_factory=list)
    unmet: list[tuple[str, Expectation]] = dataclasses.field(default_factory=list)
    mode_deviations: bool = False
    # Each undeclared deviation's outcome as an Expectation spells it, with the modes or oracles
    # showing it: what an expectation would declare.
    undeclared: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def spell(self, where: str, outcome: str) -> None:
        self.undeclared.setdefault(outcome, [])
        if where not in self.undeclared[outcome]:
            self.undeclared[outcome].append(where)


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
    result = _judged(case, point, outcomes, tf_version=tf_version, reference=reference,
                     rerun=rerun, strict_xpass=strict_xpass, oracles=oracles, repeats=repeats)
    if result.undeclared:
        # What a fail says would declare it is kept only where declaring exactly that makes the
        # point an xfail: a deviation no expectation can spell (values that differ with upstream
        # weights only, a declared deviation that happened otherwise) beside a spelled one would
        # otherwise be accepted as declared and fail again on the next run.
        declared = [Expectation(modes=tuple(where.split(",")), outcome=outcome,
                                reason="declared as the fail spelled it")
                    for where, outcome in (text.split(":", 1) for text in result.undeclared)]
        again = _judged(dataclasses.replace(case, expectations=[*case.expectations, *declared]),
                        point, outcomes, tf_version=tf_version, reference=reference, rerun=rerun,
                        strict_xpass=strict_xpass, oracles=oracles, repeats=repeats)
        if again.verdict is not Verdict.XFAIL:
            result = dataclasses.replace(result, undeclared=())
    return result


def _judged(case: Rules, point: str, outcomes: Mapping[str, ModeOutcome], *, tf_version: str,
            reference: str, rerun: str, strict_xpass: bool,
            oracles: Optional[Mapping[str, OracleOutcome]],
            repeats: Optional[Mapping[str, Sequence[ModeOutcome]]]) -> Result:
    """`judge`, with every undeclared deviation of a fail spelled as --expect would."""
    oracles = dict(oracles or {})
    result_for = _ResultFor(case, point, outcomes, oracles, rerun)
    skipped_lines = _skipped_lines(outcomes)
    active = {m: o for m, o in outcomes.items() if o.status is not Status.SKIP}
    early = _unjudgeable(result_for, case, point, outcomes, active, skipped_lines, repeats or {})
    if early is not None:
        return early
    judged_oracles = {name: o for name, o in oracles.items() if o.status.judged}
    try:
        expected = applicable(case, point, tuple(active) + tuple(judged_oracles), tf_version)
    except ValueError as e:
        return result_for(Verdict.ERROR, str(e))

    expected, unobserved = _unobservable(expected, active)
    found = _Findings(notes=unobserved)
    reference = result_for.yardstick = yardstick(case, point, outcomes, tf_version, reference)
    if point in case.drawn:
        found.notes += partly_outside_line(_non_finite(outcomes[reference]))
    result_for.disagree = _compare_modes(case, active, reference, expected, found)
    failed_oracle = _read_oracles(oracles, expected, found)
    found.notes += _no_gradient_notes(oracles, active, result_for.yardstick)
    if failed_oracle is not None:
        name, note = failed_oracle
        return result_for(Verdict.ERROR, f"{name} oracle: {note}", [note])
    if found.weighted_only:
        found.mode_deviations = True
        found.deviations += [line for _, line in found.weighted_only]
    broken = _case_broken(active, found)
    if broken is not None:
        o, raising = broken
        return result_for(Verdict.ERROR,
                          f"the case's {o.error.stage} step raises {o.error.type} in {o.mode}: "
                          f"{o.error.first_line}",
                          [f"{b.mode}: {b.error.type}: {b.error.first_line}" for b in raising])
    if found.deviations:
        return _failed(result_for, case, active, expected, found, skipped_lines)
    return _conclude(result_for, active, judged_oracles, expected, found, skipped_lines, tf_version,
                     strict_xpass)


def _unjudgeable(result_for: _ResultFor, case: Rules, point: str,
                 outcomes: Mapping[str, ModeOutcome], active: Mapping[str, ModeOutcome],
                 skipped_lines: list[str],
                 repeats: Mapping[str, Sequence[ModeOutcome]]) -> Optional[Result]:
    """The verdict when the modes cannot be compared at all: a mode crashed or timed out, a mode's
    values changed between runs, no mode ran, or a drawn point is outside the function's domain;
    None when they can be."""
    for verdict, status in ((Verdict.CRASH, Status.CRASH), (Verdict.TIMEOUT, Status.TIMEOUT)):
        dead = [o for o in outcomes.values() if o.status is status]
        if dead:
            lines = [f"{o.mode}: {o.error.first_line if o.error else status.value}" for o in dead]
            return result_for(verdict, lines[0], lines)

    changing = _flaky(outcomes, repeats)
    if changing:
        return result_for(Verdict.FLAKY, changing[0], changing)
    if not active:
        return result_for(Verdict.SKIP, skipped_lines[0], skipped_lines)
    if point in case.drawn and _outside_domain(active):
        line = ("outside the function's domain: the values were drawn (no recorded value to "
                "replay), and its forward is NaN or infinite at every element in every mode, so "
                "nothing here can be judged")
        return result_for(Verdict.SKIP, line, [line])
    return None


def _no_gradient_notes(oracles: Mapping[str, OracleOutcome], active: Mapping[str, ModeOutcome],
                       yardstick_mode: str) -> list[str]:
    """The line naming the sources the numeric oracle found no gradient for, if it found any."""
    unjudged = oracles["numeric"].no_gradient if "numeric" in oracles else ()
    if not unjudged:
        return []
    judged = oracles["numeric"].status.judged
    others = len(active[yardstick_mode].sources) - len(unjudged) if judged else 0
    return [no_gradient_line(unjudged, others)]


def _failed(result_for: _ResultFor, case: Rules, active: Mapping[str, ModeOutcome],
            expected: Mapping[str, Expectation], found: _Findings,
            skipped_lines: list[str]) -> Result:
    """A fail: the first deviation leads, then where along the ladder the results part (when modes
    deviate), the other deviations, the notes, and the hints that fit."""
    # Along the ladder, only modes without a declared deviation say where the results part.
    undeclared = {m: o for m, o in active.items() if m not in expected}
    ladder_line = (ladder(undeclared, case.tolerance, said=found.deviations)
                   if found.mode_deviations else None)
    result_for.undeclared = tuple(f"{','.join(where)}:{outcome}"
                                  for outcome, where in sorted(found.undeclared.items()))
    lines = said_once(found.deviations[:1] + ([ladder_line] if ladder_line else [])
                      + found.deviations[1:]
                      + found.notes + skipped_lines, active)
    return result_for(Verdict.FAIL, found.deviations[0],
                      lines + hints(active, result_for.oracles, lines))


def _skipped_lines(outcomes: Mapping[str, ModeOutcome]) -> list[str]:
    """One line per reason a mode was skipped, naming every mode skipped for it."""
    by_reason: dict[str, list[str]] = {}
    for o in outcomes.values():
        if o.status is Status.SKIP:
            by_reason.setdefault(o.note, []).append(o.mode)
    return [f"{', '.join(modes)} skipped: {note}" for note, modes in by_reason.items()]


def _non_finite(outcome: ModeOutcome) -> tuple[int, int]:
    """(forward elements not finite, forward elements) of a mode's floating outputs."""
    bad = total = 0
    for output in (outcome.orders[0] if outcome.status is Status.OK and outcome.orders else ()):
        value = np.asarray(output.value) if output.value is not None else None
        if value is not None and value.dtype.kind in "fc":
            bad, total = bad + int(np.sum(~np.isfinite(value))), total + value.size
    return bad, total


def _outside_domain(active: Mapping[str, ModeOutcome]) -> bool:
    """Whether every mode computed a forward, and not one element of it is finite."""
    forwards = [o.orders[0] for o in active.values() if o.status is Status.OK and o.orders
                and o.orders[0]]
    if not forwards or len(forwards) < sum(1 for o in active.values() if o.top_order is None):
        return False
    for outputs in forwards:
        for output in outputs:
            value = np.asarray(output.value) if output.value is not None else None
            if (value is None or value.dtype.kind not in "fc" or value.size == 0
                or np.isfinite(value).any()):
                return False
    return True


def _unobservable(expected: Mapping[str, Expectation],
                  active: Mapping[str, ModeOutcome]) -> tuple[dict[str, Expectation], list[str]]:
    """`expected` without what this run cannot see (gradient use where the probe did not watch),
    like an oracle that did not run; and a note for each left out."""
    unseen = {mode: e for mode, e in expected.items()
              if e.outcome == GRADIENT_UNUSED and mode in active and active[mode].usage is None}
    notes = [f"{mode}: gradient use is not observed in this run, so '{e.describe()}' is not judged"
             for mode, e in unseen.items()]
    return {mode: e for mode, e in expected.items() if mode not in unseen}, notes


def _spell_mode(found: _Findings, mode: str, outcome: ModeOutcome, plain: Sequence,
                malformed: Sequence, no_custom: Optional[str]) -> None:
    """A mode's undeclared deviation, as the expectation that `_met` finds met would declare it:
    the error it raises; else the custom gradient unused (which explains any difference), a
    malformed gradient (which cannot agree), or values that differ from the yardstick's (not
    where only the yardstick raises: its own error is the deviation then)."""
    if outcome.status is Status.ERROR and outcome.error is not None:
        found.spell(mode, outcome.error.type)
    elif outcome.status is not Status.OK:
        return
    elif no_custom:
        found.spell(mode, GRADIENT_UNUSED)
    elif malformed:
        found.spell(mode, BAD_GRADIENT)
    elif any(m.kind not in ("status", "error_type") for m in plain):
        found.spell(mode, VALUES_DIFFER)


def _compare_modes(case: Rules, active: Mapping[str, ModeOutcome], reference: str,
                   expected: Mapping[str, Expectation], found: _Findings) -> bool:
    """Compares every mode with the yardstick, against its expectation if it has one; whether any
    mode's values differ from the yardstick's."""
    ref = active[reference]
    disagree = False
    for mode, outcome in active.items():
        disagreements = ([] if mode == reference
                         else compare_outcomes(ref, outcome, tolerance=case.tolerance))
        disagree = disagree or bool(disagreements)
        malformed = check_gradients(outcome)
        no_custom = fallback(outcome, case.order)
        e = expected.get(mode)
        if e is None:
            plain = [m for m in disagreements if not m.upstream]
            _spell_mode(found, mode, outcome, plain, malformed, no_custom)
            found.deviations += (([no_custom] if no_custom else [])
                                 + deviation_lines(mode, outcome, plain, malformed, reference,
                                                   active))
            found.weighted_only += [(mode if not plain else "", m.message) for m in disagreements
                                    if m.upstream]
            continue
        # the fallback explains every difference, weighted ones too
        if e.outcome == GRADIENT_UNUSED:
            happened = _met(e, outcome, disagreements, malformed)
        else:
            # A declared deviation is met at the plain contraction; a weighted difference where the
            # plain values agree is not what it declares.
            happened = _met(e, outcome, [m for m in disagreements if not m.upstream], malformed)
            if happened is False:
                found.weighted_only += [(mode, m.message) for m in disagreements if m.upstream]
        if no_custom and e.outcome != GRADIENT_UNUSED:
            found.notes.append(no_custom)
        if happened is None:
            got = deviation_lines(mode, outcome, disagreements, malformed, reference, active)
            found.deviations.append(f"{mode}: expected {e.describe()}; got instead: "
                                    + " | ".join(got or [outcome.status.value]))
        else:
            (found.met if happened else found.unmet).append((mode, e))
    found.mode_deviations = bool(found.deviations)
    return disagree


def _read_oracles(oracles: Mapping[str, OracleOutcome], expected: Mapping[str, Expectation],
                  found: _Findings) -> Optional[tuple[str, str]]:
    """Adds what each oracle says to `found`; (name, note) of the first oracle that raised, if
    one did."""
    for name, o in oracles.items():
        if o.status is OracleStatus.ERROR:
            return name, o.note
        e = expected.get(name)
        if o.status is OracleStatus.SKIP:
            found.notes.append(f"{name} oracle not checked: {o.note}")
        elif e is None:
            if o.status is OracleStatus.DIFFER:
                found.spell(name, VALUES_DIFFER)
                # Modes whose plain values agree but weighted ones do not (forward mode aside).
                found.deviations.append(oracle_line(o, [m for m, _ in found.weighted_only
                                                        if m not in ("", "forward")]))
                found.deviations += [f"{name}: {line}" for line in o.details[1:]]
        elif o.status is OracleStatus.DIFFER and e.orders and not set(o.differ) <= set(e.orders):
            found.deviations.append(f"{name}: expected {e.describe()}; got instead: "
                                    + oracle_line(o))
        else:
            (found.met if o.status is OracleStatus.DIFFER else found.unmet).append((name, e))
            found.notes += [f"{name}: {line}" for line in o.details]
    return None


def _case_broken(active: Mapping[str, ModeOutcome], found: _Findings):
    """(the first, all) of the modes whose build step (or the harness's own code) raised where
    that was not declared, when that is the whole story: an error. Built in some modes and not in
    others is a difference between the modes instead, which leads the deviations."""
    declared = dict(found.met)
    broken = [o for o in active.values() if o.status is Status.ERROR
              and o.error.stage in _CASE_STAGES
              and o.mode not in declared]
    if broken and len(broken) < len(active) and all(o.error.stage == "build" for o in broken):
        built = [m for m in active if m not in {o.mode for o in broken}]
        o = broken[0]
        raising = ", ".join(b.mode for b in broken)
        found.deviations.insert(0, f"the case's build step raises {o.error.type} in {raising} but "
                                f"not in {', '.join(built)}: {o.error.first_line}")
        return None
    return (broken[0], broken) if broken else None


def _conclude(result_for: _ResultFor, active: Mapping[str, ModeOutcome],
              judged_oracles: Mapping[str, OracleOutcome], expected: Mapping[str, Expectation],
              found: _Findings, skipped_lines: list[str], tf_version: str,
              strict_xpass: bool) -> Result:
    """No deviation: a pass (saying what checked the values, or why nothing did), an xfail, or an
    xpass."""
    checked = [n for n in ("numeric", "reference", "analytic") if n in judged_oracles
               and n not in expected]
    words = [ORACLE_WORDS[n] for n in checked]
    if "upstream" in judged_oracles and "upstream" not in expected:
        if "numeric" in checked:
            both = "with and without upstream weights"
            words[0] += f" ({both})" if len(words) > 1 else f", {both}"
        else:
            checked, words = checked + ["upstream"], words + [ORACLE_WORDS["upstream"]]
    matched = (", and match " + " and ".join(words)) if checked else ""
    notes = found.notes
    if not expected:
        agree = ("all modes agree" if len(active) > 1
                 else f"{result_for.yardstick} computes its values")
        why_not = unchecked(active[result_for.yardstick], result_for.oracles, checked)
        if why_not:
            return dataclasses.replace(
                result_for(Verdict.PASS,
                           f"{agree}, but nothing checked that the values are right: {why_not}",
                           notes + skipped_lines), unchecked=why_not)
        return result_for(Verdict.PASS, f"{agree}{matched}" if checked else "",
                          notes + skipped_lines)
    met_lines = [f"as declared: {modes_of(e, found.met)} {e.outcome}: {e.reason}"
                 for e in distinct(found.met)]
    if not found.unmet:
        return result_for(Verdict.XFAIL,
                          "declared: " + ", ".join(f"{m} {e.outcome}" for m, e in found.met),
                          met_lines + notes + skipped_lines)
    unmet_lines = [f"declared but did not happen on TensorFlow {tf_version}: "
                   f"{modes_of(e, found.unmet)} {e.outcome} ({e.reason}); they agree with "
                   f"{result_for.yardstick}: if TensorFlow fixed it, "
                   "narrow the expectation's tf_versions" for e in distinct(found.unmet)]
    verdict = Verdict.FAIL if strict_xpass else Verdict.XPASS
    return result_for(verdict, unmet_lines[0], unmet_lines + met_lines + notes + skipped_lines)


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
                          error=ErrorInfo(type=status.value, bases=(),
                                          message=f"{how}\n{output}".strip(), stage=mode))
    lines = [line for line in output.splitlines() if line.strip()]
    return Result(case=case_id, point=point, order=order, verdict=verdict,
                  reason=f"{mode} mode: {how}", details=tuple(f"output: {line}" for line in lines),
                  outcomes={mode: outcome}, rerun=rerun)


def judge_measured(case: CaseInfo, measured: Sequence[Measured], *, points: Sequence[str],
                   modes: Sequence[str], options: RunOptions, tf_version: str, reference: str,
                   reruns: Mapping[str, str], strict_xpass: bool = False,
                   changed: Sequence[str] = (), lost: str = "") -> list[Result]:
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
            results.append(Result(case=case.id, point=label, order=case.order,
                                  verdict=Verdict.ERROR, reason=lost, details=(), outcomes={},
                                  rerun=reruns[label]))
            continue
        m = by_point.get(label)
        broken = _malformed(m, modes, wanted)
        if broken:
            # Whether the case's code or a fault of the harness did it cannot be told from here.
            results.append(Result(case=case.id, point=label, order=case.order,
                                  verdict=Verdict.ERROR,
                                  reason=f"{broken}: something in the process that ran the case "
                                         "(its code, or a fault in the harness) broke or replaced "
                                         "the harness's measuring, so nothing measured here is "
                                         "judged",
                                  details=(), outcomes=dict(m.outcomes) if m else {},
                                  rerun=reruns[label], oracles=dict(m.oracles) if m else {}))
            continue
        results.append(judge(case, label, m.outcomes, tf_version=tf_version, reference=reference,
                             rerun=reruns[label], strict_xpass=strict_xpass, oracles=m.oracles,
                             repeats=m.repeats))
    notes = dict(case.notes)
    results = [dataclasses.replace(r, details=r.details + (notes[r.point],)) if r.point in notes
               else r
               for r in results]
    if changed:
        reason = ("the case left process-wide state changed, which later cases in its process "
                  f"would inherit: {'; '.join(changed)}; undo each change, and join each thread it "
                  "starts, before it returns")
        results = [dataclasses.replace(r, verdict=Verdict.ERROR, reason=reason,
                                       details=(f"verdict before the check: {r.verdict.value}",)
                                       + r.details)
                   for r in results]
    return results


def _malformed(m: Optional[Measured], modes: Sequence[str], wanted: Sequence[str]) -> str:
    """What is missing from a measurement, or "" when it is complete."""
    if m is None:
        return "the worker sent no measurement for this point"
    if set(m.outcomes) != set(modes):
        return (f"the worker sent outcomes for {', '.join(m.outcomes) or 'no mode'} where the "
                f"modes run were {', '.join(modes)}")
    ran = any(o.status is not Status.SKIP for o in m.outcomes.values())
    absent = [name for name in wanted if name not in m.oracles] if ran else []
    if absent:
        return (
            f"the worker sent no result for the {' and '.join(absent)}"
            f" oracle{'s' if len(absent) > 1 else ''}"
        )
    return ""
