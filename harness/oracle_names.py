"""Oracle names: one row per oracle (ROWS), what turns it on and how a verdict words it.

Plain data, apart from the oracles' runs (harness.measure.oracles, where each run registers under
its row's name), so that the case API, the rules both sides read (harness.criteria.rules), the
verdict and its sentences (harness.judge) and the bug report (harness.repro.issue) name oracles
without importing the code that runs them or TensorFlow. A new oracle is one row here and its run
in harness.measure.oracles (that package says how); nothing else names it.

ORACLES (every name) and STANDALONE (the oracles not beside another), in the rows' order, are
derived from ROWS each time one is read as an attribute of this module (`oracle_names.ORACLES`),
so that a row added to ROWS is in them.
"""

from __future__ import annotations

import dataclasses
__all__ = ["ANALYTIC", "LINEARITY", "NUMERIC", "ORACLES", "Oracle", "REFERENCE", "ROWS",
           "STANDALONE", "UPSTREAM", "case_oracles"]

# The oracles that code apart from their own runs names one by one.
NUMERIC = "numeric"
UPSTREAM = "upstream"
REFERENCE = "reference"
ANALYTIC = "analytic"
LINEARITY = "linearity"


@dataclasses.dataclass(frozen=True)
class Oracle:
    """One oracle, as everything outside its run sees it.

    Attributes:
      name: what an OracleOutcome, the reports and an expectation (with outcome VALUES_DIFFER)
        call it.
      words: what the agreed values are checked against, as a verdict says it: "the agreed values
        differ from {words}", "all modes agree, and match {words}".
      option: the RunOptions flag that turns it on; empty for an oracle a case gives.
      case_field: the Case field that gives it (the oracle runs where the case sets it); empty for
        an oracle the options turn on.
      beside: the oracle whose run computes this one's outcome too: this one is on only while that
        one is, shares its outcome when that run raises, and a pass words the two together.
      joined: for an oracle `beside` another, the words a pass adds to that oracle's when both
        judged the values.
    """

    name: str
    words: str
    option: str = ""
    case_field: str = ""
    beside: str = ""
    joined: str = ""

    def __post_init__(self) -> None:
        if bool(self.option) == bool(self.case_field):
            raise ValueError(f"oracle {self.name!r}: give an option or a case field, one of them")
        if bool(self.beside) != bool(self.joined):
            raise ValueError(f"oracle {self.name!r}: an oracle beside another gives the words "
                             "joined to that one's")


# Every oracle, in the order the reports show them and a point comes back with them.
ROWS: dict[str, Oracle] = {row.name: row for row in (
    # Central differences of the order below, for every order (harness.measure.oracles.numeric).
    Oracle(NUMERIC, "the numeric derivative", option="numeric"),
    # Order 1 with the upstream gradient a + b w against a (dy = 1) + b (dy = w): a gradient is
    # linear in dy, derivative or surrogate (harness.measure.oracles.linearity). On with the
    # weighted chain it reads.
    Oracle(LINEARITY, "linearity in the upstream gradient", option="upstream"),
    # The same check of the weighted chain (harness.measure.upstream), run by the numeric oracle.
    Oracle(UPSTREAM, "the numeric derivative with upstream weights", option="upstream",
           beside=NUMERIC, joined="with and without upstream weights"),
    # Ordinary autodiff of the case's plain implementation, in eager mode.
    Oracle(REFERENCE, "the reference implementation", case_field="reference"),
    # The case's closed-form values.
    Oracle(ANALYTIC, "the analytic values", case_field="analytic"),
)}


def __getattr__(name: str) -> tuple[str, ...]:
    if name == "ORACLES":
        return tuple(ROWS)
    if name == "STANDALONE":
        return tuple(n for n, row in ROWS.items() if not row.beside)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def case_oracles(case) -> tuple[str, ...]:
    """The oracles `case` gives itself: those whose case field it sets."""
    return tuple(name for name, row in ROWS.items()
                 if row.case_field and getattr(case, row.case_field, None) is not None)

