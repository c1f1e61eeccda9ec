"""The verdict rules: outcomes and expectations in, one Result out. Pure.

Working out which expectations apply (`applicable`, in harness.criteria.rules with the other rules
the measuring side reads too) is kept apart from deciding what happened (`judge`), which is the one
place an outcome becomes a verdict; and deciding is kept apart from wording: what the modes and the
oracles show is gathered first, into frozen records, the verdict is decided from them, and only
then put into words. A run judges in the main process, which never imports TensorFlow or the
user's code: workers send plain `Measured` records and `judge_measured` turns them into Results,
so nothing a case file does to the harness inside its own process can change a verdict.

`case` here is anything carrying the rules a verdict reads: a Case, or the CaseInfo the main
process holds (id, order, expectations, tolerance).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Sequence

import numpy as np

from harness import mode_names, oracle_names
from harness.case import BAD_GRADIENT, GRADIENT_UNUSED, SURROGATE, VALUES_DIFFER, Expectation
from harness.criteria.compare import Mismatch, check_gradients, compare_outcomes
from harness.judge.explain import (
    deviation_lines,
    distinct,
    fallback,
    hints,
    ladder,
    listed,
    modes_of,
    no_gradient_line,
    oracle_line,
    partly_outside_line,
    raised_line,
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
from harness.jobs import ORACLES, SETUP
from harness.oracle_names import LINEARITY, NUMERIC, UPSTREAM

__all__ = ["died", "judge", "judge_measured", "skipped"]

# Repeated runs of one mode must give the same bits.
EXACT = Tol(rtol=0.0, atol=0.0)

# An exception at these stages is the case's (or the harness's) own fault, not
# TensorFlow's behaviour: the builder raised, or a mode runner broke.
_CASE_STAGES = frozenset({"build", "harness"})


def _met(e: Expectation, outcome: ModeOutcome, disagreements: list[Mismatch],
         malformed: list[Mismatch]) -> Optional[bool]:
    """True if `outcome` is the declared deviation, False if it is the normal behaviour instead,
    None if it is some other deviation."""
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


_Pairs = tuple[tuple[str, Expectation], ...]  # (mode or oracle, its expectation)
# (the first, all) of the modes whose build step raised where that is the whole story
_CaseError = Optional[tuple[ModeOutcome, tuple[ModeOutcome, ...]]]


@dataclasses.dataclass(frozen=True)
class _Said:
    """A verdict in words: what a Result says of its point besides the outcomes."""

    verdict: Verdict
    reason: str
    details: tuple[str, ...] = ()
    unchecked: str = ""  # on a pass: why nothing checked its values (Result.unchecked)
    undeclared: tuple[str, ...] = ()  # on a fail: Result.undeclared


@dataclasses.dataclass(frozen=True)
class _Seen:
    """What the modes or the oracles show against their expectations, before any verdict: each
    helper returns one, and they add up in the order a fail lists them."""

    deviations: tuple[str, ...] = ()
    # Differences only in the weighted chain, as (mode, line), the mode "" where its plain values
    # differ too. They come after the oracles' lines: when the upstream oracle says why (a grad_fn
    # mishandling its upstream gradient), that leads.
    weighted_only: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    met: _Pairs = ()
    unmet: _Pairs = ()
    # Each undeclared deviation's outcome as an Expectation spells it, with the mode or oracle
    # showing it: what an expectation would declare.
    spelled: tuple[tuple[str, str], ...] = ()

    def __add__(self, other: "_Seen") -> "_Seen":
        return _Seen(*(getattr(self, f.name) + getattr(other, f.name)
                       for f in dataclasses.fields(self)))


@dataclasses.dataclass(frozen=True)
class _Evidence:
    """Everything the verdict on one point is decided from and worded with, gathered first."""

    active: Mapping[str, ModeOutcome]  # the modes that ran
    oracles: Mapping[str, OracleOutcome]  # every oracle's outcome
    judged_oracles: Mapping[str, OracleOutcome]  # the oracles that said match or differ
    expected: Mapping[str, Expectation]  # the expectations that apply, and this run can observe
    yardstick: str
    disagree: bool  # whether any mode's values differ from the yardstick's
    failed_oracle: Optional[tuple[str, str]]  # (name, note) of the first oracle that raised
    case_error: _CaseError
    deviations: tuple[str, ...]  # in the order a fail lists them
    mode_deviations: bool  # whether modes deviate, so that the ladder says where they part
    notes: tuple[str, ...]
    met: _Pairs
    unmet: _Pairs
    undeclared: tuple[str, ...]  # each undeclared deviation as --expect spells it
    skipped_lines: tuple[str, ...]


# Which rule decided a verdict: each is worded its own way.
_ORACLE_RAISED = "an oracle raised"
_CASE_RAISED = "the case's own step raised"
_DEVIATES = "a deviation no expectation declares"
_AGREES = "nothing deviates, nothing declared"
_AS_DECLARED = "every declared deviation happened"
_NOT_HAPPENED = "a declared deviation did not happen"


@dataclasses.dataclass(frozen=True)
class _Decision:
    """The verdict on a point, and the rule that gave it."""

    verdict: Verdict
    rule: str


@dataclasses.dataclass(frozen=True)
class _Point:
    """The point judged, and what every Result for it carries whatever its verdict."""

    case: Rules
    label: str
    outcomes: Mapping[str, ModeOutcome]
    oracles: dict[str, OracleOutcome]
    rerun: str

    def result(self, said: _Said, evidence: Optional[_Evidence] = None) -> Result:
        return Result(case=self.case.id, point=self.label, order=self.case.order,
                      verdict=said.verdict, reason=said.reason, details=said.details,
                      outcomes=dict(self.outcomes), rerun=self.rerun, oracles=self.oracles,
                      modes_disagree=evidence.disagree if evidence else False,
                      yardstick=evidence.yardstick if evidence else "",
                      unchecked=said.unchecked, undeclared=said.undeclared)


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
      reference: the default yardstick mode; the one every other mode is compared with is
        yardstick()'s choice from it, as for the oracles.
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
    """`judge`, with every undeclared deviation of a fail spelled as --expect would.

    First whether the modes can be judged at all and which expectations apply; then the evidence
    (what the modes and the oracles show against those expectations), the verdict decided from
    it, and its words."""
    at = _Point(case, point, outcomes, dict(oracles or {}), rerun)
    skipped_lines = tuple(_skipped_lines(outcomes))
    active = {m: o for m, o in outcomes.items() if o.status is not Status.SKIP}
    stopped = _unjudgeable(case, point, outcomes, active, skipped_lines, repeats or {})
    if stopped is not None:
        return at.result(stopped)
    judged_oracles = {name: o for name, o in at.oracles.items() if o.status.judged}
    try:
        expected = applicable(case, point, tuple(active) + tuple(judged_oracles), tf_version)
    except ValueError as e:  # two expectations cover one mode here
        return at.result(_Said(Verdict.ERROR, str(e)))

    evidence = _gathered(at, active, judged_oracles, expected, tf_version, reference,
                         skipped_lines)
    decision = _decided(evidence, strict_xpass)
    return at.result(_worded(decision, evidence, case, tf_version), evidence)


# -- whether the modes can be judged at all -------------------------------------------------

def _unjudgeable(case: Rules, point: str, outcomes: Mapping[str, ModeOutcome],
                 active: Mapping[str, ModeOutcome], skipped_lines: tuple[str, ...],
                 repeats: Mapping[str, Sequence[ModeOutcome]]) -> Optional[_Said]:
    """The verdict when the modes cannot be compared at all: a mode crashed or timed out, a mode's
    values changed between runs, no mode ran, or a drawn point is outside the function's domain;
    None when they can be."""
    for verdict, status in ((Verdict.CRASH, Status.CRASH), (Verdict.TIMEOUT, Status.TIMEOUT)):
        dead = [o for o in outcomes.values() if o.status is status]
        if dead:
            lines = [f"{o.mode}: {o.error.first_line if o.error else status.value}" for o in dead]
            return _Said(verdict, lines[0], tuple(lines))

    changing = _flaky(outcomes, repeats)
    if changing:
        return _Said(Verdict.FLAKY, changing[0], tuple(changing))
    if not active:
        return _Said(Verdict.SKIP, skipped_lines[0], skipped_lines)
    if point in case.drawn and _outside_domain(active):
        line = ("outside the function's domain: the values were drawn (no recorded value to "
                "replay), and its forward is NaN or infinite at every element in every mode, so "
                "nothing here can be judged")
        return _Said(Verdict.SKIP, line, (line,))
    return None


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
    forwards = [o.orders[0] for o in active.values()
                if o.status is Status.OK and o.orders and o.orders[0]]
    if not forwards or len(forwards) < sum(1 for o in active.values() if o.top_order is None):
        return False
    for outputs in forwards:
        for output in outputs:
            value = np.asarray(output.value) if output.value is not None else None
            if (value is None or value.dtype.kind not in "fc" or value.size == 0
                    or np.isfinite(value).any()):
                return False
    return True


# -- gathering the evidence ------------------------------------------------------------------

def _gathered(at: _Point, active: Mapping[str, ModeOutcome],
              judged_oracles: Mapping[str, OracleOutcome], expected: Mapping[str, Expectation],
              tf_version: str, reference: str, skipped_lines: tuple[str, ...]) -> _Evidence:
    """What the modes and the oracles show at the point, against the expectations that apply."""
    case = at.case
    expected, unobserved = _unobservable(expected, active)
    chosen = yardstick(case, at.label, at.outcomes, tf_version, reference)
    outside = (partly_outside_line(_non_finite(at.outcomes[chosen])) if at.label in case.drawn
               else [])
    modes, disagree = _modes_seen(case, active, chosen, expected)
    failed = next(((name, o.note) for name, o in at.oracles.items()
                   if o.status is OracleStatus.ERROR), None)
    read = _Seen() if failed else sum(
        (_oracle_seen(name, o, expected.get(name), modes.weighted_only)
         for name, o in at.oracles.items()), _Seen())
    seen = modes + read
    weighted_only = tuple(line for _, line in modes.weighted_only)
    unbuilt, case_error = _case_broken(active, seen.met)
    return _Evidence(
        active=active, oracles=at.oracles, judged_oracles=judged_oracles, expected=expected,
        yardstick=chosen, disagree=disagree, failed_oracle=failed, case_error=case_error,
        deviations=unbuilt + seen.deviations + weighted_only,
        mode_deviations=bool(modes.deviations or weighted_only),
        notes=(tuple(unobserved) + tuple(outside) + seen.notes
               + tuple(_no_gradient_notes(at.oracles, active, chosen))),
        met=seen.met, unmet=seen.unmet, undeclared=_spelled(seen.spelled),
        skipped_lines=skipped_lines)


def _unobservable(expected: Mapping[str, Expectation],
                  active: Mapping[str, ModeOutcome]) -> tuple[dict[str, Expectation], list[str]]:
    """`expected` without what this run cannot see (gradient use where the probe did not watch),
    like an oracle that did not run; and a note for each left out."""
    unseen = {mode: e for mode, e in expected.items()
              if e.outcome == GRADIENT_UNUSED and mode in active and active[mode].usage is None}
    notes = [f"{mode}: gradient use is not observed in this run, so '{e.describe()}' is not judged"
             for mode, e in unseen.items()]
    return {mode: e for mode, e in expected.items() if mode not in unseen}, notes


def _modes_seen(case: Rules, active: Mapping[str, ModeOutcome], chosen: str,
                expected: Mapping[str, Expectation]) -> tuple[_Seen, bool]:
    """What every mode shows against the yardstick, and against its expectation if it has one;
    and whether any mode's values differ from the yardstick's."""
    each = {mode: _mode_seen(case, mode, outcome, active, chosen, expected.get(mode))
            for mode, outcome in active.items()}
    for mode, line in _raising_alone(case, active, chosen, expected).items():
        seen, differ = each[mode]
        each[mode] = dataclasses.replace(seen, deviations=(line,) if line else ()), differ
    return (sum((seen for seen, _ in each.values()), _Seen()),
            any(differ for _, differ in each.values()))


def _raising_alone(case: Rules, active: Mapping[str, ModeOutcome], chosen: str,
                   expected: Mapping[str, Expectation]) -> dict[str, str]:
    """The modes whose one deviation is an error they raise where the yardstick `chosen` computed,
    by the error they raise: one line says a group of them, and that the yardstick computed here.
    Each mode's line: its group's for the group's first mode, "" for the others."""
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    for mode, o in active.items():
        partner = partner_of(mode, o, active, chosen)
        if (mode == partner or mode in expected or o.status is not Status.ERROR or o.error is None
                or active[partner].status is not Status.OK):
            continue
        found = compare_outcomes(active[partner], o, tolerance=case.tolerance)
        if [m.kind for m in found] == ["status"] and not check_gradients(o):
            key = (o.error.type, o.error.stage, o.error.first_line, partner)
            groups.setdefault(key, []).append(mode)
    lines = {}
    for (*_, partner), modes in groups.items():
        lines.update(dict.fromkeys(modes, ""))
        lines[modes[0]] = raised_line(modes, active[modes[0]].error, partner)
    return lines


def partner_of(mode: str, outcome: ModeOutcome, active: Mapping[str, ModeOutcome],
               chosen: str) -> str:
    """The mode `mode`, whose outcome is `outcome`, is compared with: a context's base mode where
    it ran (a call inside tf.cond under tf.function is compared with the plain call under
    tf.function, so that what the context alone changes is what it is judged by) and computed, or
    raised as the context did; else the yardstick `chosen` (a context computing where its base
    raised is judged by the yardstick's values)."""
    row = mode_names.ROWS.get(mode)
    base = row.base if row is not None else ""
    if not base or base not in active or base == mode:
        return chosen
    status = active[base].status
    if status is Status.OK or status is Status.ERROR and outcome.status is Status.ERROR:
        return base
    return chosen


def _mode_seen(case: Rules, mode: str, outcome: ModeOutcome, active: Mapping[str, ModeOutcome],
               chosen: str, e: Optional[Expectation]) -> tuple[_Seen, bool]:
    """What one mode shows against the yardstick mode `chosen`, and against its expectation `e` if
    it has one; and whether its values differ from the yardstick's."""
    partner = partner_of(mode, outcome, active, chosen)
    disagreements = ([] if mode == partner
                     else compare_outcomes(active[partner], outcome, tolerance=case.tolerance))
    differ = bool(disagreements)
    malformed = check_gradients(outcome)
    no_custom = fallback(outcome, case.order)
    if partner != chosen and mode != partner:
        # A context whose base shows the same is judged by what the context alone changes: it
        # raising where its base raises (its error may be another class: the route is another), or
        # repeating its base's malformed or unused gradient, is the base's deviation (judged
        # there), not the context's.
        if e is None and outcome.status is active[partner].status is Status.ERROR:
            return _Seen(), False
        malformed = malformed if not check_gradients(active[partner]) else []
        no_custom = no_custom if not fallback(active[partner], case.order) else None
    plain = [m for m in disagreements if not m.upstream]
    weighted = [m.message for m in disagreements if m.upstream]
    if e is None:
        lines = deviation_lines(mode, outcome, plain, malformed, partner, active)
        return _Seen(deviations=tuple(([no_custom] if no_custom else []) + lines),
                     weighted_only=tuple(("" if plain else mode, line) for line in weighted),
                     spelled=_spelled_mode(mode, outcome, plain, malformed, no_custom)), differ
    if e.outcome == GRADIENT_UNUSED:
        # the fallback explains every difference, weighted ones too
        happened = _met(e, outcome, disagreements, malformed)
        weighted_only = ()
    else:
        # A declared deviation is met at the plain contraction; a weighted difference where the
        # plain values agree is not what it declares.
        happened = _met(e, outcome, plain, malformed)
        weighted_only = tuple((mode, line) for line in weighted) if happened is False else ()
    notes = (no_custom,) if no_custom and e.outcome != GRADIENT_UNUSED else ()
    if happened is None:
        got = deviation_lines(mode, outcome, disagreements, malformed, partner, active)
        deviation = (f"{mode}: expected {e.describe()}; got instead: "
                     + " | ".join(got or [outcome.status.value]))
        return _Seen(deviations=(deviation,), weighted_only=weighted_only, notes=notes), differ
    declared = ((mode, e),)
    return _Seen(weighted_only=weighted_only, notes=notes, met=declared if happened else (),
                 unmet=() if happened else declared), differ


def _spelled_mode(mode: str, outcome: ModeOutcome, plain: Sequence[Mismatch],
                  malformed: Sequence[Mismatch],
                  no_custom: Optional[str]) -> tuple[tuple[str, str], ...]:
    """A mode's undeclared deviation, as the expectation that `_met` finds met would declare it:
    the error it raises; else the custom gradient unused (which explains any difference), a
    malformed gradient (which cannot agree), or values that differ from the yardstick's (not
    where only the yardstick raises: its own error is the deviation then)."""
    if outcome.status is Status.ERROR and outcome.error is not None:
        return ((outcome.error.type, mode),)
    if outcome.status is not Status.OK:
        return ()
    if no_custom:
        return ((GRADIENT_UNUSED, mode),)
    if malformed:
        return ((BAD_GRADIENT, mode),)
    if any(m.kind not in ("status", "error_type") for m in plain):
        return ((VALUES_DIFFER, mode),)
    return ()


def _oracle_seen(name: str, o: OracleOutcome, e: Optional[Expectation],
                 weighted_only: Sequence[tuple[str, str]]) -> _Seen:
    """What one oracle that did not raise says, against its expectation `e` if it has one;
    `weighted_only` is what the modes showed in the weighted chain alone."""
    if o.status is OracleStatus.SKIP:
        return _Seen(notes=(f"{name} oracle not checked: {o.note}",))
    if e is None:
        if o.status is not OracleStatus.DIFFER:
            return _Seen()
        # Modes whose plain values agree but weighted ones do not (forward mode aside).
        blamed = [m for m, _ in weighted_only if m not in ("", "forward")]
        return _Seen(deviations=((oracle_line(o, blamed),)
                                 + tuple(f"{name}: {line}" for line in o.details[1:])),
                     spelled=((SURROGATE if o.strict_surrogate else VALUES_DIFFER, name),))
    if e.outcome == SURROGATE:
        return _surrogate_seen(name, o, e)
    if o.status is OracleStatus.DIFFER and e.orders and not set(o.differ) <= set(e.orders):
        return _Seen(deviations=(f"{name}: expected {e.describe()}; got instead: "
                                 + oracle_line(o),))
    declared = ((name, e),)
    return _Seen(notes=tuple(f"{name}: {line}" for line in o.details),
                 met=declared if o.status is OracleStatus.DIFFER else (),
                 unmet=() if o.status is OracleStatus.DIFFER else declared)


def _surrogate_seen(name: str, o: OracleOutcome, e: Expectation) -> _Seen:
    """What an oracle shows against an expectation that the gradient is a surrogate: met where a
    surrogate passed its checks (or was failed by --strict_surrogate alone), a deviation where the
    values differ otherwise (a surrogate pointing the wrong way, a wrong derivative elsewhere),
    unmet where the values match with no surrogate (the gradient is a derivative there)."""
    declared = ((name, e),)
    if o.status is OracleStatus.DIFFER and not o.strict_surrogate:
        return _Seen(deviations=(f"{name}: expected {e.describe()}; got instead: "
                                 + oracle_line(o),))
    if o.surrogate or o.strict_surrogate:
        notes = (f"{name}: {o.surrogate}",) if o.surrogate else ()
        return _Seen(notes=notes, met=declared)
    return _Seen(unmet=declared)


def _no_gradient_notes(oracles: Mapping[str, OracleOutcome], active: Mapping[str, ModeOutcome],
                       yardstick_mode: str) -> list[str]:
    """The line naming the sources the numeric oracle found no gradient for, if it found any."""
    unjudged = oracles[NUMERIC].no_gradient if NUMERIC in oracles else ()
    if not unjudged:
        return []
    judged = oracles[NUMERIC].status.judged
    others = len(active[yardstick_mode].sources) - len(unjudged) if judged else 0
    return [no_gradient_line(unjudged, others)]


def _case_broken(active: Mapping[str, ModeOutcome],
                 met: _Pairs) -> tuple[tuple[str, ...], _CaseError]:
    """The modes whose build step (or the harness's own code) raised where that was not declared.
    Built in some modes and not in others is a difference between the modes: (the line that leads
    the deviations, None). Where that is the whole story, an error: ((), (the first, all))."""
    declared = dict(met)
    broken = [o for o in active.values()
              if o.status is Status.ERROR and o.error.stage in _CASE_STAGES
              and o.mode not in declared]
    if broken and len(broken) < len(active) and all(o.error.stage == "build" for o in broken):
        built = [m for m in active if m not in {o.mode for o in broken}]
        o = broken[0]
        raising = ", ".join(b.mode for b in broken)
        return (f"the case's build step raises {o.error.type} in {raising} but not in "
                f"{', '.join(built)}: {o.error.first_line}",), None
    return (), ((broken[0], tuple(broken)) if broken else None)


def _spelled(pairs: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """Each undeclared deviation as --expect spells it ("function,graph:values differ"), by
    outcome, from (outcome, mode or oracle) pairs: the modes apart from the oracles, since one
    expectation declares either, never both."""
    where: dict[tuple[str, bool], list[str]] = {}
    for outcome, who in pairs:
        if who not in where.setdefault((outcome, who in oracle_names.ROWS), []):
            where[(outcome, who in oracle_names.ROWS)].append(who)
    return tuple(f"{','.join(whom)}:{outcome}" for (outcome, _), whom in sorted(where.items()))


# -- deciding the verdict --------------------------------------------------------------------

def _decided(evidence: _Evidence, strict_xpass: bool) -> _Decision:
    """The verdict the evidence calls for, and the rule that calls for it, first rule first."""
    if evidence.failed_oracle is not None:
        return _Decision(Verdict.ERROR, _ORACLE_RAISED)
    if evidence.case_error is not None:
        return _Decision(Verdict.ERROR, _CASE_RAISED)
    if evidence.deviations:
        return _Decision(Verdict.FAIL, _DEVIATES)
    if not evidence.expected:
        return _Decision(Verdict.PASS, _AGREES)
    if not evidence.unmet:
        return _Decision(Verdict.XFAIL, _AS_DECLARED)
    return _Decision(Verdict.FAIL if strict_xpass else Verdict.XPASS, _NOT_HAPPENED)


# -- wording it ------------------------------------------------------------------------------

def _worded(decision: _Decision, evidence: _Evidence, case: Rules, tf_version: str) -> _Said:
    """The decided verdict in words: its reason, and the lines that follow it."""
    if decision.rule == _ORACLE_RAISED:
        name, note = evidence.failed_oracle
        return _Said(decision.verdict, f"{name} oracle: {note}", (note,))
    if decision.rule == _CASE_RAISED:
        o, raising = evidence.case_error
        return _Said(decision.verdict,
                     f"the case's {o.error.stage} step raises {o.error.type} in {o.mode}: "
                     f"{o.error.first_line}",
                     tuple(f"{b.mode}: {b.error.type}: {b.error.first_line}" for b in raising))
    if decision.rule == _DEVIATES:
        return _failed(evidence, case)
    if decision.rule == _AGREES:
        return _passed(evidence)
    met_lines = tuple(f"as declared: {modes_of(e, evidence.met)} {e.outcome}: {e.reason}"
                      for e in distinct(evidence.met))
    if decision.rule == _AS_DECLARED:
        return _Said(decision.verdict,
                     "declared: " + ", ".join(f"{m} {e.outcome}" for m, e in evidence.met),
                     met_lines + evidence.notes + evidence.skipped_lines)
    unmet_lines = tuple(f"declared but did not happen on TensorFlow {tf_version}: "
                        f"{modes_of(e, evidence.unmet)} {e.outcome} ({e.reason}); "
                        + _unmet_cause(e, evidence) for e in distinct(evidence.unmet))
    return _Said(decision.verdict, unmet_lines[0],
                 unmet_lines + met_lines + evidence.notes + evidence.skipped_lines)


def _unmet_cause(e: Expectation, evidence: _Evidence) -> str:
    """Why a declared deviation did not happen, and what to do: a numeric difference declared of
    a gradient the numeric oracle passed as a checked surrogate (how surrogates were declared
    before the harness checked them) is no longer one; otherwise the results agree, which a
    TensorFlow that fixed it would explain."""
    numeric = evidence.judged_oracles.get(NUMERIC)
    if (e.outcome == VALUES_DIFFER and any(m == NUMERIC for m, f in evidence.unmet if f is e)
            and numeric is not None
            and numeric.surrogate):
        return ("the numeric oracle now checks a surrogate gradient for its direction and its "
                "linearity in dy instead of calling it a numeric difference, and this one passes "
                "them: declare outcome SURROGATE (--expect 'numeric:surrogate:REASON') to keep it "
                "declared as one, or drop the expectation")
    return (f"they agree with {evidence.yardstick}: if TensorFlow fixed it, narrow the "
            "expectation's tf_versions")


def _failed(evidence: _Evidence, case: Rules) -> _Said:
    """A fail: the first deviation leads, then where along the ladder the results part (when modes
    deviate), the other deviations, the notes, and the hints that fit."""
    deviations, active = evidence.deviations, evidence.active
    # Along the ladder, only modes without a declared deviation say where the results part.
    undeclared = {m: o for m, o in active.items() if m not in evidence.expected}
    ladder_line = (ladder(undeclared, case.tolerance, said=deviations)
                   if evidence.mode_deviations else None)
    lines = said_once(deviations[:1] + ((ladder_line,) if ladder_line else ()) + deviations[1:]
                      + evidence.notes + evidence.skipped_lines, active)
    return _Said(Verdict.FAIL, deviations[0], tuple(lines + hints(active, evidence.oracles, lines)),
                 undeclared=evidence.undeclared)


def _passed(evidence: _Evidence) -> _Said:
    """A pass: the modes agree, and no expectation applies; saying what checked the values, or
    why nothing did."""
    checked = [n for n in oracle_names.STANDALONE if n in evidence.judged_oracles]
    # Linearity in dy is a property, not values matched: said after what the values match.
    linear = LINEARITY in checked
    checked = [n for n in checked if n != LINEARITY]
    words = [oracle_names.ROWS[n].words for n in checked]
    if UPSTREAM in evidence.judged_oracles:
        if oracle_names.ROWS[UPSTREAM].beside in checked:
            both = oracle_names.ROWS[UPSTREAM].joined
            words[0] += f" ({both})" if len(words) > 1 else f", {both}"
        else:
            checked, words = checked + [UPSTREAM], words + [oracle_names.ROWS[UPSTREAM].words]
    # A surrogate gradient that passed its checks (harness.measure.oracles.surrogate) matched the
    # numeric oracle as a surrogate, not as a derivative: said as such, and where it is a surrogate
    # at every element compared, the numeric derivative is not said to be matched at all.
    numeric = evidence.judged_oracles.get(NUMERIC)
    surrogate = numeric.surrogate if numeric is not None else ""
    said = checked
    if surrogate:
        # The numeric derivative last, followed by the exception it has; left out where the
        # gradient is a surrogate's at every element it compared.
        kept = [(n, w) for n, w in zip(checked, words) if n not in (NUMERIC, UPSTREAM)]
        if not numeric.surrogate_all:
            kept += [(n, w) for n, w in zip(checked, words) if n in (NUMERIC, UPSTREAM)]
        said, words = [n for n, _ in kept], [w for _, w in kept]
    matched = (", and match " + " and ".join(words)) if said else ""
    agree = (f"{evidence.yardstick} computes its values" if len(evidence.active) == 1
             else f"the {len(evidence.active)} modes that ran agree" if evidence.skipped_lines
             else "all modes agree")
    lines = evidence.notes + evidence.skipped_lines
    # What checks the values: linearity in dy does not say they are right.
    valued = {n: o for n, o in evidence.oracles.items() if n != LINEARITY}
    why_not = unchecked(evidence.active[evidence.yardstick], valued, checked)
    linear_words = "; the gradient is linear in its upstream gradient dy" if linear else ""
    if why_not:
        return _Said(Verdict.PASS,
                     f"{agree}, but nothing checked that the values are right: {why_not}"
                     f"{linear_words}", lines, unchecked=why_not)
    if surrogate:
        but = ", but for a checked surrogate: " if NUMERIC in said else "; "
        return _Said(Verdict.PASS, f"{agree}{matched}{but}{surrogate}{linear_words}", lines)
    return _Said(Verdict.PASS, f"{agree}{matched}{linear_words}" if checked else "", lines)


def skipped(case: Rules, point: str, reason: str, rerun: str) -> Result:
    """A Result for a point that was not run."""
    return Result(case=case.id, point=point, order=case.order, verdict=Verdict.SKIP,
                  reason=reason, details=(), outcomes={}, rerun=rerun)


def died(case_id: str, point: str, order: int, status: Status, mode: str, how: str, output: str,
         rerun: str, oracles: Sequence[str] = ()) -> Result:
    """A Result for a point whose process crashed or timed out while running `mode`.

    Args:
      status: Status.CRASH or Status.TIMEOUT.
      mode: the mode it was running, or harness.jobs.SETUP or ORACLES.
      how: what happened, e.g. "killed by SIGABRT" or "ran past the 60 s timeout".
      output: the last lines the process wrote, kept with the outcome.
      oracles: the oracles the job runs, which the reason names when they were running.
    """
    verdict = Verdict.CRASH if status is Status.CRASH else Verdict.TIMEOUT
    outcome = ModeOutcome(mode=mode, status=status,
                          error=ErrorInfo(type=status.value, bases=(),
                                          message=f"{how}\n{output}".strip(), stage=mode))
    lines = [line for line in output.splitlines() if line.strip()]
    return Result(case=case_id, point=point, order=order, verdict=verdict,
                  reason=f"{_running(mode, oracles)}: {how}",
                  details=tuple(f"output: {line}" for line in lines),
                  outcomes={mode: outcome}, rerun=rerun)


def _running(mode: str, oracles: Sequence[str]) -> str:
    """What a process was running as it died, named as a reason says it: a mode, the oracles (by
    name), or setting the case up."""
    if mode == ORACLES:
        return f"the oracles ({', '.join(oracles)})" if oracles else "the oracles"
    if mode == SETUP:
        return "setting the case up, before its first mode"
    return f"{mode} mode"


def judge_measured(case: CaseInfo, measured: Sequence[Measured], *, points: Sequence[str],
                   modes: Sequence[str], options: RunOptions, tf_version: str, reference: str,
                   reruns: Mapping[str, str], strict_xpass: bool = False,
                   changed: Sequence[str] = (), lost: str = "") -> list[Result]:
    """Judges what a worker measured for `case` at `points`: one Result per point.

    A measurement that is not what was asked for (a point, a mode or a required oracle missing)
    is an `error`: something in the process that ran the case broke or replaced the harness's
    measuring; so is a case that `changed` global TensorFlow state (each entry says what), as its
    values were computed under, or left behind, a different TensorFlow. `lost` says why the
    worker could send none of its measurement, when it could not.
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
    results = [dataclasses.replace(r, details=r.details + (notes[r.point],))
               if r.point in notes else r for r in results]
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
        return (f"the worker sent no result for the {listed(absent)}"
                f" oracle{'s' if len(absent) > 1 else ''}")
    return ""
