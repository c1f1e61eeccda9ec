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
  (tolerance.NUMERIC_STEPS). Every element of every source is judged: an
  elementwise function's from one shift of all of them, any other's element by
  element (a few seeded random directions only above ELEMENT_LIMIT elements,
  unless `numeric_full`).
- reference: the case's plain implementation, differentiated by ordinary
  autodiff in eager mode, compared order by order.
- analytic: the case's closed-form values, compared where given.

Each runs in eager mode on the point's values; none can make the modes'
results agree or disagree, they only say whether the agreed values are right.

The package: this module runs them (`consult`, each oracle by its run in RUNS) and holds the
reference and analytic oracles; `numeric` the numeric and upstream ones, with `evaluate` (the
shifted evaluations), `directions` (where to move), `findings` (what was found, as data) and
`words` (the sentences that explain it).

To add an oracle, write two things:

1. its row in harness.oracle_names.ROWS: its name, its words (what a verdict says the values were
   checked against), what turns it on (a RunOptions flag, or a Case field the case sets), and, for
   one computed by another oracle's run, which oracle it is beside and the words joined to that
   one's; the rows' order is the order the reports show them in;
2. its run, here or in a module of this package that this module imports: a function registered
   with `@runs(name)`, taking (case, point, agreed, options, note) and returning {name:
   OracleOutcome} (harness.measure.oracles.outcomes.oracle_outcome builds one from the orders it
   checked and a line per difference), with `note` at the end of the outcome's own note.

Nothing else names an oracle: which ones a point must come back with (harness.criteria.rules), the
case API's validation of expectations, the verdict's and the bug report's words read the rows.

Where each thing is decided: an oracle's match or differ is decided here, in the worker, where it
is measured, by the same criteria the judge uses (harness.criteria: the tolerances, the comparison
of values, the differences' own error). The evidence stays here because it is too large to carry
back (every value of the reference implementation, and two shifted evaluations or more per element
for the numeric oracle), and because the numeric oracle's next evaluation depends on what the last
one showed (a shorter step where a step does not settle it, the gradient's own rounding only where
the first step does not match). What goes back is each oracle's outcome, with the numbers its
sentences need. The verdict is decided in the main process alone (harness.judge.verdict), from
those outcomes and the modes'; nothing here imports harness.judge, and harness.criteria imports
neither side (both held by tests/unit/test_imports.py).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

import numpy as np

from harness import oracle_names
from harness.case import Case, Point
from harness.criteria.compare import compare_outcomes, compare_outputs, where
from harness.criteria.rules import required_oracles
from harness.criteria.tolerance import tolerance_for
from harness.measure.oracles.directions import DIRECTIONS
from harness.measure.oracles.outcomes import oracle_outcome, upstream_failed
from harness.oracle_names import ANALYTIC, LINEARITY, NUMERIC, REFERENCE, UPSTREAM, case_oracles
from harness.records import ModeOutcome, OracleOutcome, OracleStatus, Output, RunOptions, Status

__all__ = ["consult", "DIRECTIONS", "RUNS", "runs"]


# Each oracle's run, under its row's name in harness.oracle_names: (case, point, agreed, options,
# note) -> {name: OracleOutcome}, its own outcome and those of the oracles beside it that the same
# run computes. `runs` registers one.
Run = Callable[[Case, Point, ModeOutcome, RunOptions, str], Mapping[str, OracleOutcome]]
RUNS: dict[str, Run] = {}


def runs(name: str) -> Callable[[Run], Run]:
    """Registers the decorated function as the run of the oracle named `name`."""
    def register(run: Run) -> Run:
        RUNS[name] = run
        return run

    return register


def consult(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions,
            note: str = "") -> dict[str, OracleOutcome]:
    """Every oracle the case has (and the numeric and upstream ones unless turned off) on `agreed`.

    `note` says whose values these are when they are not the yardstick mode's
    (it raised): it ends every oracle's note. An exception in an oracle's own
    code is that oracle's "error", never a quiet "not checked".
    """
    wanted = list(required_oracles(options, case_oracles(case)))
    # Without the numeric oracle, the upstream one has something to say only when the
    # weighted chain raised (its values are compared across modes all the same).
    if options.upstream and not options.numeric and agreed.upstream_error is not None:
        wanted.insert(0, UPSTREAM)
    if agreed.status is not Status.OK:
        why = f"{agreed.mode} computed no values to check"
        return {name: OracleOutcome(name=name, status=OracleStatus.SKIP, note=why)
                for name in wanted}
    found: dict[str, OracleOutcome] = {}
    for name in wanted:
        if name in found:  # the run of the oracle it is beside computed it
            continue
        try:
            found.update(RUNS[name](case, point, agreed, options, note))
        except Exception as e:  # noqa: BLE001
            # A fault in the oracle's own code must not pass quietly.
            error = OracleOutcome(name=name, status=OracleStatus.ERROR,
                                  note=f"the {name} oracle itself raised {type(e).__name__}: {e} "
                                       "(a fault in the harness's oracle code, not a verdict on "
                                       "the case)")
            found[name] = error
            # The oracles beside it come from the same run.
            found.update({other: dataclasses.replace(error, name=other) for other in wanted
                          if oracle_names.ROWS[other].beside == name})
    return {name: found[name] for name in wanted if name in found}


@runs(NUMERIC)
def _numeric(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions,
             note: str) -> dict[str, OracleOutcome]:
    # The oracles that run the case import TensorFlow; the package's findings and words do not.
    from harness.measure.oracles import numeric

    plain, weighted = numeric.run(case, point, agreed, options, note)
    return {NUMERIC: plain} if weighted is None else {NUMERIC: plain, UPSTREAM: weighted}


@runs(UPSTREAM)
def _upstream_without_numeric(case: Case, point: Point, agreed: ModeOutcome,
                              options: RunOptions, note: str) -> dict[str, OracleOutcome]:
    # Where the numeric oracle runs, its run gives this one's outcome; it is off here, so only
    # what the weighted chain raised is seen.
    return {UPSTREAM: upstream_failed(agreed, "the numeric oracle is off (--nonumeric): the "
                                              "weighted chain is only compared across modes")}


@runs(LINEARITY)
def _linearity(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions,
               note: str) -> dict[str, OracleOutcome]:
    from harness.measure.oracles import linearity, words

    return {LINEARITY: _with_note(linearity.check(case, agreed, words.has_custom_gradient(agreed)),
                                  note)}


@runs(REFERENCE)
def _run_reference(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions,
                   note: str) -> dict[str, OracleOutcome]:
    return {REFERENCE: _with_note(_reference(case, point, agreed, options), note)}


@runs(ANALYTIC)
def _run_analytic(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions,
                  note: str) -> dict[str, OracleOutcome]:
    return {ANALYTIC: _with_note(_analytic(case, point, agreed), note)}


def _with_note(outcome: OracleOutcome, note: str) -> OracleOutcome:
    return dataclasses.replace(outcome, note=outcome.note + note) if note else outcome


# -- analytic -------------------------------------------------------------------------------

def _analytic(case: Case, point: Point, agreed: ModeOutcome) -> OracleOutcome:
    try:
        expected = case.analytic(*[np.array(v) for v in point.values])
    except Exception as e:  # noqa: BLE001 - the case's own code
        return OracleOutcome(name=ANALYTIC, status=OracleStatus.ERROR,
                             note=f"analytic raises {type(e).__name__}: {e}")
    if not isinstance(expected, dict) or not all(isinstance(k, int) for k in expected):
        return OracleOutcome(name=ANALYTIC, status=OracleStatus.ERROR,
                             note="analytic must return a dict {order: values}, e.g. {1: "
                                  "np.float64(...)}")
    names = [s.name for s in agreed.sources]
    lines: list[tuple[int, str]] = []
    for order in sorted(expected):
        if not 0 <= order < len(agreed.orders):
            return OracleOutcome(name=ANALYTIC, status=OracleStatus.ERROR,
                                 note=f"analytic gives order {order}; the case computes orders 0 "
                                      f"to {case.order}")
        values = expected[order]
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        outputs = agreed.orders[order]
        if len(values) != len(outputs):
            return OracleOutcome(name=ANALYTIC, status=OracleStatus.ERROR,
                                 note=f"analytic gives {len(values)} values at order {order}; the "
                                      f"case has {len(outputs)} "
                                      f"{'outputs' if order == 0 else 'sources'}")
        for index, (value, got) in enumerate(zip(values, outputs)):
            at = where(order, index, names)
            if value is None or got.value is None:
                if (value is None) != (got.value is None):
                    side = ANALYTIC if value is None else agreed.mode
                    lines.append((order,
                                  f"{at}: {side} gives None (unconnected), the other a value"))
                continue
            if np.shape(value) != got.shape:
                lines.append((order,
                              f"{at}: analytic gives shape {list(np.shape(value))}, {agreed.mode} "
                              f"{list(got.shape)}"))
                continue
            want = Output.of(np.asarray(value).astype(got.value.dtype))
            m = compare_outputs(want, got, tolerance_for(got.dtype, case.tolerance),
                                ref_mode=ANALYTIC, mode=agreed.mode, at=at)
            if m:
                lines.append((order, m.message))
    return oracle_outcome(ANALYTIC, sorted(expected), lines, "closed form written in the case")


# -- reference ------------------------------------------------------------------------------

def _reference(case: Case, point: Point, agreed: ModeOutcome, options: RunOptions) -> OracleOutcome:
    from harness.measure.modes import eager

    plain = dataclasses.replace(
        case, points=[point], expectations=(), kinks={}, skip_modes={}, reference=None,
        analytic=None, fn=case.reference if case.fn is not None else None,
        build=case.reference if case.build is not None else None)
    outcome = dataclasses.replace(eager.run(plain, options)[0], mode=REFERENCE)
    if outcome.status is not Status.OK:
        e = outcome.error
        return OracleOutcome(name=REFERENCE, status=OracleStatus.ERROR,
                             note=f"the reference implementation raises {e.type} at {e.stage}: "
                                  f"{e.first_line}")
    found = compare_outcomes(outcome, agreed, tolerance=case.tolerance)
    return oracle_outcome(REFERENCE, range(len(agreed.orders)),
                          [(m.order or 0, m.message) for m in found],
                          "ordinary autodiff of the reference implementation, eager")
