"""Frozen records that cross module boundaries: what a mode produced, and the verdict.

Plain data and NumPy only: the mode runners fill them, the judge reads them,
the reporters render them.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Mapping, Optional

import numpy as np

from harness.versions import parse_range

__all__ = ["CaseInfo", "Output", "ErrorInfo", "Status", "ModeOutcome", "Differentiated",
           "RunOptions", "Usage", "error_info", "OracleStatus", "OracleOutcome", "Measured",
           "Verdict", "Result", "Explored", "Report"]


# The linearity check's upstream gradient a + b w (w the weighted chain's order 1 weights), as
# (a, b): harness.measure.upstream says why these; the modes' comparison of that chain scales its
# tolerance by them (harness.criteria.compare).
LINEAR = (0.5, -2.0)


@dataclasses.dataclass(frozen=True)
class Output:
    """One output of one order: a value, or None for an unconnected gradient."""

    value: Optional[np.ndarray]
    dtype: str
    shape: tuple[int, ...]

    def portable(self) -> "Output":
        """This output with a value any process can unpickle: bfloat16 values become float32
        (exactly: every bfloat16 is a float32), the dtype staying "bfloat16". TensorFlow 2.12 and
        2.13 have a bfloat16 NumPy type of their own that pickle cannot find."""
        if self.value is None or self.dtype != "bfloat16":
            return self
        return dataclasses.replace(self, value=np.asarray(self.value, dtype=np.float32))

    @classmethod
    def of(cls, value: Optional[np.ndarray], dtype: str = "",
           shape: tuple[int, ...] = ()) -> "Output":
        """An Output for `value`; for None, the dtype and shape of what it stands for."""
        if value is None:
            return cls(value=None, dtype=dtype, shape=tuple(shape))
        value = np.asarray(value)
        return cls(value=value, dtype=value.dtype.name, shape=tuple(value.shape))


@dataclasses.dataclass(frozen=True)
class ErrorInfo:
    """An exception raised by a mode.

    Attributes:
      type: the exception's class name, e.g. "InternalError".
      bases: the names of every class in its MRO, so an expectation of
        "TypeError" matches OperatorNotAllowedInGraphError.
      message: the full message.
      stage: where it happened: "build", "forward", "order K", or "run" when
        a compiled function failed as a whole and the order is unknown.
    """

    type: str
    bases: tuple[str, ...]
    message: str
    stage: str

    @property
    def first_line(self) -> str:
        """The line that says what went wrong, without its class name and cut to HEADLINE_WIDTH
        (error_headline); `message` keeps the whole text for the JSON report."""
        return error_headline(self.message, self.type)

    def is_a(self, class_name: str) -> bool:
        return class_name == self.type or class_name in self.bases

    @property
    def order(self) -> Optional[int]:
        """The derivative order the stage names ("order 2", "order 1, while recording for order 2",
        "order 1 with upstream weights"), or None for the forward, the build or a whole run."""
        words = self.stage.replace(",", " ").split()
        return (int(words[1]) if len(words) > 1 and words[0] == "order"
                and words[1].isdigit() else None)


# An explanation quotes an exception in one line of at most this many characters.
HEADLINE_WIDTH = 160


def error_headline(message: str, type_name: str = "") -> str:
    """The line of an exception's `message` that says what went wrong, in one short line.

    tf.function prefixes its errors with "in user code:" and a traceback, and puts the exception's
    own line last, after the class name ("OperatorNotAllowedInGraphError: Using a symbolic ..."),
    which the explanation already says: it is left out. A line longer than HEADLINE_WIDTH keeps its
    first sentence when that fits, else it is cut with "...".
    """
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if lines[0] == "in user code:" else lines[0]
    if type_name and line.startswith(f"{type_name}: "):
        line = line[len(type_name) + 2:]
    if len(line) <= HEADLINE_WIDTH:
        return line
    end = line.find(". ", 20, HEADLINE_WIDTH)  # past a short lead such as "e.g."
    return line[:end] if end >= 0 else line[:HEADLINE_WIDTH - 3].rstrip() + "..."


def error_info(exc: BaseException, stage: str) -> ErrorInfo:
    """The record of an exception raised at `stage`, with the names of its classes."""
    bases = tuple(c.__name__ for c in type(exc).__mro__[1:] if c not in (object, BaseException))
    return ErrorInfo(type=type(exc).__name__, bases=bases, message=str(exc), stage=stage)


@dataclasses.dataclass(frozen=True)
class CaseInfo:
    """A case as the main process sees it: no function, so no TensorFlow needed.

    It holds everything the verdict rules read (harness.judge.verdict), so the main
    process judges what a worker measured without trusting code in the
    worker's process. `oracles` names the case's own oracles ("reference",
    "analytic").
    """

    id: str
    description: str
    source: str
    order: int
    points: tuple[str, ...]
    expectations: tuple = ()  # harness.case.Expectation
    tolerance: object = None  # harness.criteria.tolerance.ToleranceOverride
    tf_versions: Optional[str] = None
    oracles: tuple[str, ...] = ()
    # For explore (harness.explore.search): each argument's (name, dtype, shape) at the first point,
    # the declared (name, Domain) pairs, and "PATH.py:NAME" when `check` can call the case's
    # function by that name ("" when it cannot: a builder, a lambda, a closure).
    arguments: tuple[tuple[str, str, tuple[int, ...]], ...] = ()
    domains: tuple = ()
    target: str = ""
    fixed: tuple = ()  # with domains: the first point's values as nested Python numbers
    notes: tuple = ()  # (point label, a line said with that point's result): Case.notes
    drawn: tuple = ()  # labels of points whose values were drawn: Case.drawn

    def runs_on(self, tf_version: str) -> bool:
        return self.tf_versions is None or parse_range(self.tf_versions).contains(tf_version)


@dataclasses.dataclass(frozen=True)
class Differentiated:
    """What one gradient slot is taken with respect to: an argument or a variable.

    Arguments keep their names; trainable variables created by a case's
    builder are "var0", "var1", ... in creation order, the same in every mode.
    """

    name: str
    dtype: str
    shape: tuple[int, ...]


class Status(enum.Enum):
    """How one mode's run of one point ended."""

    OK = "ok"  # every order computed
    ERROR = "error"  # an exception; orders holds what was computed before it
    CRASH = "crash"  # the process running it died
    TIMEOUT = "timeout"  # it ran past its time limit
    SKIP = "skip"  # the mode does not apply to this case; `note` says why


@dataclasses.dataclass(frozen=True)
class ModeOutcome:
    """What one mode produced for one point.

    `orders[0]` holds the function's outputs (flattened with tf.nest), and
    `orders[k]` one gradient per entry of `sources` (the differentiated
    arguments, then any variables).

    `upstream[k - 1]` holds order k of the weighted chain (harness.measure.upstream):
    the same gradients with the seeded upstream weights instead of ones; empty
    when the check is off. `upstream_error` is what the weighted chain raised
    where the plain one did not, with the order it raised at.

    `linear` holds order 1 once more, with the linearity check's upstream gradient
    (harness.measure.upstream.LINEAR: a + b w, w the weighted chain's order 1 weights), one
    gradient per source; empty where the mode does not compute it. `linear_error` is what that
    chain raised.

    `top_order` is set by a mode that computes fewer orders than the case asks for: a training
    step (harness.measure.modes.keras_step) computes order 1 only, and its `orders[0]` is empty (a
    step returns no outputs); only order 1 is compared. `computed_in` names the dtype the values
    were computed in when it is narrower than their own (float16 under a mixed-precision policy, for
    float32 weights): they are judged with that dtype's tolerance.
    """

    mode: str
    status: Status
    orders: tuple[tuple[Output, ...], ...] = ()
    error: Optional[ErrorInfo] = None
    sources: tuple[Differentiated, ...] = ()
    note: str = ""  # why the mode was skipped, or what else is worth knowing about this run
    usage: Optional["Usage"] = None  # None: this mode cannot observe the gradient functions
    upstream: tuple[tuple[Output, ...], ...] = ()
    upstream_error: Optional[ErrorInfo] = None
    linear: tuple[Output, ...] = ()
    linear_error: Optional[ErrorInfo] = None
    top_order: Optional[int] = None
    computed_in: str = ""
    # This mode's time for the case, shared evenly among its points (its repeats included): what
    # the run's time by mode adds up. Not part of what the mode computed, so never compared.
    seconds: float = dataclasses.field(default=0.0, compare=False)

    def portable(self) -> "ModeOutcome":
        """This outcome with every value portable (Output.portable), to send to another process."""
        return dataclasses.replace(self,
                                   orders=tuple(tuple(o.portable() for o in order)
                                                for order in self.orders),
                                   upstream=tuple(tuple(o.portable() for o in order)
                                                  for order in self.upstream),
                                   linear=tuple(o.portable() for o in self.linear))


@dataclasses.dataclass(frozen=True)
class Usage:
    """Whether a mode called the case's custom gradient functions.

    Attributes:
      ran: names of the tf.custom_gradient functions whose forward ran outside
        any gradient function (the function under test's own), in first-call order.
      unused: those of them whose gradient function was never called: the
        gradient came from somewhere else, usually ordinary autodiff of the body.
    """

    ran: tuple[str, ...] = ()
    unused: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """Run-wide choices every mode applies the same way.

    Attributes:
      unconnected_zero: return zeros instead of None for a gradient that does
        not depend on its input (tf.UnconnectedGradients.ZERO in every mode).
      numeric: check the agreed values against central finite differences.
      numeric_full: move every element on its own, also at a point too large
        for that by default (the numeric oracle's ELEMENT_LIMIT).
      repeat: run every mode this many times; values that change between the
        runs make the verdict `flaky`.
      upstream: also compute every order with seeded upstream weights
        (harness.measure.upstream), compare it across modes and check it numerically.
      strict_none: judge a None gradient against the numeric derivative also
        for an argument the case did not name in `wrt`, where it is otherwise
        the function saying it has none.
      strict_surrogate: fail a surrogate gradient (where the forward is locally
        constant) that no expectation declares, even where it points the way
        the forward moves and is linear in dy.
    """

    unconnected_zero: bool = False
    numeric: bool = True
    numeric_full: bool = False
    repeat: int = 1
    upstream: bool = True
    strict_none: bool = False
    strict_surrogate: bool = False


class Verdict(enum.Enum):
    """The judgement on one case at one point."""

    PASS = "pass"  # every mode agrees with the yardstick mode, no gradient is malformed
    FAIL = "fail"  # a disagreement or a malformed gradient that no expectation declares
    XFAIL = "xfail"  # the declared deviation happened
    XPASS = "xpass"  # a declared deviation did not happen: often a TensorFlow fix
    ERROR = "error"  # the case itself is broken (builder raised, bad definition)
    CRASH = "crash"  # a mode killed the process running it
    TIMEOUT = "timeout"  # a mode ran past its time limit
    FLAKY = "flaky"  # a mode's values changed between repeated runs (--repeat)
    SKIP = "skip"  # not run, with the reason

    @property
    def is_failure(self) -> bool:
        """Whether this verdict fails the run (exit status 1)."""
        return VERDICTS[self].fails

    @property
    def style(self) -> "VerdictStyle":
        return VERDICTS[self]


@dataclasses.dataclass(frozen=True)
class VerdictStyle:
    """How every reporter shows one verdict.

    Attributes:
      word: the text report's word.
      fails: whether it fails the run (exit status 1).
      junit: the JUnit element of its testcase; None for a bare, passing testcase.
      colour, text_colour: the version matrix page's cell colours.
      meaning: one line for the page's legend.
    """

    word: str
    fails: bool
    junit: Optional[str]
    colour: str
    text_colour: str
    meaning: str


# The one table of verdicts: the text report, the exit status, the help, JUnit and the matrix
# page all read it, in this order.
VERDICTS: Mapping[Verdict, VerdictStyle] = {
    Verdict.PASS: VerdictStyle(
        "PASS",
        False,
        None,
        "#c9f0d3",
        "#0f3d1e",
        "every mode agrees with the yardstick mode, and the oracles match "
        "(a pass marked unchecked had no oracle that could judge its values)",
    ),
    Verdict.XFAIL: VerdictStyle(
        "XFAIL", False, "skipped", "#d3e3ff", "#10305f", "the declared deviation happened"
    ),
    Verdict.XPASS: VerdictStyle(
        "XPASS",
        False,
        "system-out",
        "#ffe39a",
        "#4d3800",
        "a declared deviation did not happen: often a TensorFlow fix",
    ),
    Verdict.FAIL: VerdictStyle(
        "FAIL",
        True,
        "failure",
        "#ffb8b8",
        "#5c0000",
        "modes disagree, an oracle differs, or a gradient is malformed",
    ),
    Verdict.FLAKY: VerdictStyle(
        "FLAKY",
        True,
        "failure",
        "#ff8fd0",
        "#4d0030",
        "a mode's values changed between repeated runs",
    ),
    Verdict.ERROR: VerdictStyle(
        "ERROR", True, "error", "#e4c6ff", "#3d0a66", "the case itself is broken"
    ),
    Verdict.CRASH: VerdictStyle(
        "CRASH", True, "error", "#4a4a4a", "#ffffff", "a mode killed the process running it"
    ),
    Verdict.TIMEOUT: VerdictStyle(
        "TIMEOUT", True, "error", "#ffc58f", "#5c2d00", "a mode ran past its time limit"
    ),
    Verdict.SKIP: VerdictStyle(
        "SKIP", False, "skipped", "#e6e9ec", "#3c4650", "not run, with the reason"
    ),
}


def exit_status_text() -> str:
    """The help's sentence on the exit status, from VERDICTS."""
    def words(fails: bool) -> str:
        names = [v.value for v, s in VERDICTS.items() if s.fails is fails]
        return ", ".join(names[:-1]) + " or " + names[-1]

    return (f"Exit status: 0 when every verdict is {words(False)}; 1 when any is {words(True)}; "
            "2 for a usage error.")


class OracleStatus(str, enum.Enum):
    """How one oracle's check of the agreed values at one point ended.

    A str, equal to its value, so that the JSON report, JUnit and the text report write the same
    words as before and a status read back from a report's JSON compares equal to it.
    """

    MATCH = "match"  # the agreed values match the oracle at every order it checked
    DIFFER = "differ"  # they differ from it at some order: `differ` says which
    SKIP = "skip"  # not checked: `note` says why
    ERROR = "error"  # the oracle itself could not be computed: `note` says why

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def judged(self) -> bool:
        """Whether the oracle judged the values (they match it or differ from it)."""
        return self in (OracleStatus.MATCH, OracleStatus.DIFFER)


@dataclasses.dataclass(frozen=True)
class OracleOutcome:
    """What one oracle said about the agreed values at one point.

    Attributes:
      name: its row's name in harness.oracle_names: "numeric", "upstream" (the numeric check of
        the weighted chain), "reference" or "analytic".
      status: an OracleStatus (a plain string given here is read as one).
      orders: the orders that were checked.
      differ: the orders where the values differ from the oracle.
      details: one line per difference: where, both values, the error and the tolerance.
      note: how it was computed ("float64, 2 random directions"), or why it was not.
      no_gradient: the arguments left unjudged because the function returns None
        for their gradient and the case did not name them (RunOptions.strict_none).
      surrogate: where the custom gradient is a surrogate that passed its checks (the forward
        locally constant, the gradient not): where, and which way it points, as a verdict
        says it ("at 7 of 12 elements of x, where ..."); empty where there is none.
      strict_surrogate: every difference is a surrogate's that passed its checks, failed by
        --strict_surrogate alone (what an expectation of outcome SURROGATE declares).
      surrogate_all: every direction compared is a surrogate's (a case of order 1): nothing
        matched the numeric derivative as a derivative.
    """

    name: str
    status: OracleStatus
    orders: tuple[int, ...] = ()
    differ: tuple[int, ...] = ()
    details: tuple[str, ...] = ()
    note: str = ""
    no_gradient: tuple[str, ...] = ()
    surrogate: str = ""
    strict_surrogate: bool = False
    surrogate_all: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", OracleStatus(self.status))


@dataclasses.dataclass(frozen=True)
class Measured:
    """What a worker measured at one point, before any judgement: plain data.

    Attributes:
      point: the point's label.
      outcomes: mode name to outcome, in run order.
      repeats: mode name to its later runs, when modes ran more than once.
      oracles: oracle name to what it said about the agreed values.
    """

    point: str
    outcomes: Mapping[str, ModeOutcome]
    repeats: Mapping[str, tuple[ModeOutcome, ...]] = dataclasses.field(default_factory=dict)
    oracles: Mapping[str, OracleOutcome] = dataclasses.field(default_factory=dict)

    def portable(self) -> "Measured":
        """This measurement with every value portable (Output.portable), to send to another
        process."""
        return dataclasses.replace(self,
                                   outcomes={m: o.portable() for m, o in self.outcomes.items()},
                                   repeats={m: tuple(o.portable() for o in again)
                                            for m, again in self.repeats.items()})


@dataclasses.dataclass(frozen=True)
class Result:
    """A case at one point, its outcomes in every mode, and the verdict on them.

    Attributes:
      case: the case id.
      point: the point's label.
      order: the case's derivative order.
      verdict: the judgement.
      reason: one line saying why (empty for a plain pass).
      details: further lines: each disagreement with its worst element, or
        each expectation and whether it was met.
      outcomes: mode name to outcome, in run order.
      rerun: a command line that reruns just this case and point.
      oracles: oracle name to what it said, for the oracles that ran.
      modes_disagree: some mode's outcome differs from the yardstick mode's
        (declared or not), in the plain or the weighted chain.
      yardstick: the mode every other mode was compared with (harness.judge.verdict.yardstick's
        choice); empty when the judging stopped before choosing it (a crash, flaky values,
        every mode skipped).
      unchecked: on a pass, why nothing checked that its values are right (no oracle could judge
        them, or every value is NaN or infinite), so that agreement alone is all it shows; empty
        when an oracle did, and for every other verdict.
      undeclared: on a fail, each deviation that no expectation declares, as --expect spells
        it ("function,graph:values differ", "graph:TypeError", "numeric:values differ"), where
        one can declare it: what accepting writes into an expectations file. Empty otherwise,
        and where declaring exactly these would not make the point an xfail (a deviation beside
        them that no expectation spells).
      seconds: wall time of this point: its job's (one case, all its points,
        as the modes batch them) divided by the job's number of points, since
        a point's own time cannot be told apart (harness.process.pool); 0.0 when not
        measured.
    """

    case: str
    point: str
    order: int
    verdict: Verdict
    reason: str
    details: tuple[str, ...]
    outcomes: Mapping[str, ModeOutcome]
    rerun: str
    oracles: Mapping[str, OracleOutcome] = dataclasses.field(default_factory=dict)
    modes_disagree: bool = False
    seconds: float = 0.0
    yardstick: str = ""
    unchecked: str = ""
    undeclared: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.case}[{self.point}]"


@dataclasses.dataclass(frozen=True)
class Explored:
    """What exploring one case's domains found (harness.explore.search).

    Attributes:
      case: the case id.
      domains: (argument, domain as --domain writes it) for every explored argument.
      tried: the examples judged, shrinking's included.
      shrinking: of those, the ones judged while shrinking, after the first failing one (0 when
        none failed, or the search stopped at a crash or a timeout without shrinking).
      limit: the examples the search could draw (--examples, or --explore N).
      seconds: the search's wall time.
      seed: the --seed it ran with; None when Hypothesis chose.
      found: the failing verdict at the shrunk point; None when no example failed.
      inputs: the shrunk point as an --inputs literal ("" when nothing failed).
      check: a command that reruns the shrunk point ("" when none can: `note` says why).
      note: what else a reader needs: the search stopped without shrinking, say.
      stopped: why Hypothesis ended the search before the examples asked for were judged (too
        many draws rejected, a health check), or "" when it did not; such a search with no
        failing example is no pass.
    """

    case: str
    domains: tuple[tuple[str, str], ...]
    tried: int
    limit: int
    seconds: float
    seed: Optional[int]
    found: Optional[Result] = None
    inputs: str = ""
    check: str = ""
    note: str = ""
    shrinking: int = 0
    stopped: str = ""

    @property
    def searched(self) -> int:
        """The examples judged up to and including the first failing one (all when none failed)."""
        return self.tried - self.shrinking

    @property
    def incomplete(self) -> bool:
        """No example failed, but none was judged, or Hypothesis ended the search early: no pass."""
        return self.found is None and (self.tried == 0 or bool(self.stopped))

    @property
    def failed(self) -> bool:
        """Whether it fails the run: an example failed, or the search was incomplete (never a
        pass)."""
        return self.found is not None or self.incomplete


@dataclasses.dataclass(frozen=True)
class Report:
    """Everything one run produced: what every reporter renders.

    Attributes:
      started: when the run started, in seconds since the Unix epoch
        (time.time()); None when not known.
      seconds: the run's total wall time; 0.0 when not measured.
    """

    environment: Mapping[str, str]
    modes: tuple[str, ...]
    results: tuple[Result, ...]
    started: Optional[float] = None
    seconds: float = 0.0
    explore: tuple[Explored, ...] = ()

    @property
    def summary(self) -> dict[str, int]:
        counts = {v.value: 0 for v in Verdict}
        for r in self.results:
            counts[r.verdict.value] += 1
        return counts

    @property
    def failed(self) -> bool:
        return (any(r.verdict.is_failure for r in self.results)
                or any(e.failed for e in self.explore))
