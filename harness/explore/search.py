"""Explore: search a case's declared domains for a point where its verdict fails, and shrink it.

Hypothesis draws the points (its float strategies reach the bounds, zero, integers
and large magnitudes), each point is measured by a worker and judged here exactly as
a point of a normal run is, and the search stops at the first failing verdict, then
shrinks it to the simplest point that fails with the same cause (`cause`). A crash or
a timeout stops the search at once, without shrinking: every try would cost a worker.

This module runs in the main process and never imports TensorFlow; Hypothesis is
imported only when a search starts (`require`), so a missing install is one line.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import math
import os
import random
import re
from typing import Callable, Optional, Sequence

import numpy as np

from harness.case import Domain, point_label
from harness.records import CaseInfo, OracleStatus, Result, Status, Verdict

__all__ = ["DATABASE", "MAX_ELEMENTS", "ExploreError", "Search", "cause", "validate_domains",
           "inputs_literal", "parse_domain", "points", "require", "search"]

# The example database, in the working directory: a failure found is tried first next time.
DATABASE = ".harness/explore-db"
# The dtypes explore draws; bfloat16 has no NumPy type in this process, and complex numbers
# have no ordered bounds.
_WIDTHS = {"float16": 16, "float32": 32, "float64": 64}
_INSTALL = (
    "pip install '.[explore]' in the harness checkout (pip install -e '.[explore]' for an editable"
    " install)"
)


class ExploreError(ValueError):
    """A domain or search that cannot be run; the message says what to do."""


def require():
    """Hypothesis, imported.

    Raises:
      ExploreError: it is not installed (one line saying how to install it).
    """
    try:
        import hypothesis  # noqa: PLC0415 - an extra: only explore needs it
        import hypothesis.strategies  # noqa: F401, PLC0415
    except ImportError:
        raise ExploreError("explore needs Hypothesis, which is not installed; install it with "
                           f"{_INSTALL}") from None
    return hypothesis


# -- --domain texts --------------------------------------------------------------------------

_FORM = ("NAME=[LOW, HIGH] (brackets: inclusive; parentheses: open), then ;shape=(2, 2)|(3, 3), "
         ";symmetric, ;positive, ;exclude=0,1 and ;near=0.01 as needed, e.g. 'x=[-100, 100]' or "
         "'a=(0, 5];shape=(3,)'")


def parse_domain(text: str) -> tuple[str, Domain]:
    """(argument name, Domain) from a --domain text.

    Raises:
      ExploreError: the text does not have the form, or no value satisfies the domain.
    """
    name, equals, rest = text.partition("=")
    name = name.strip()
    if not equals or not name.isidentifier():
        raise ExploreError(f"--domain {text!r} names no argument; write {_FORM}")
    parts = [p.strip() for p in rest.split(";")]
    interval = parts[0]
    if (len(interval) < 2 or interval[0] not in "[(" or interval[-1] not in "])"
        or interval.count(",") != 1):
        raise ExploreError(f"--domain {text!r}: {interval!r} is not an interval; write {_FORM}")
    try:
        low, high = (float(ast.literal_eval(b.strip())) for b in interval[1:-1].split(","))
    except (ValueError, SyntaxError, TypeError):
        raise ExploreError(f"--domain {text!r}: the bounds of {interval!r} are not numbers; write "
                           f"{_FORM}") from None
    fields: dict = {"low": low, "high": high, "open_low": interval[0] == "(",
                    "open_high": interval[-1] == ")"}
    for part in parts[1:]:
        key, _, value = (s.strip() for s in part.partition("="))
        try:
            if key in ("symmetric", "positive") and not value:
                fields[key] = True
            elif key == "shape" and value:
                fields[key] = tuple(tuple(_shape(s)) for s in value.split("|"))
            elif key == "exclude" and value:
                fields[key] = tuple(float(ast.literal_eval(v.strip())) for v in value.split(","))
            elif key == "near" and value:
                fields[key] = float(ast.literal_eval(value))
            else:
                raise ValueError(part)
        except (ValueError, SyntaxError, TypeError):
            raise ExploreError(f"--domain {text!r}: cannot read {part!r}; write {_FORM}") from None
    domain = Domain(**fields)
    problem = domain.problem()
    if problem is not None:
        raise ExploreError(f"--domain {text!r} cannot be satisfied: {problem}")
    return name, domain


def _shape(text: str) -> tuple[int, ...]:
    value = ast.literal_eval(text.strip())
    value = (value,) if isinstance(value, int) else value
    if not isinstance(value, tuple) or not all(isinstance(d, int) and d >= 0 for d in value):
        raise ValueError(text)
    return value


# -- strategies ------------------------------------------------------------------------------

# Hypothesis draws one example from a buffer of 8 KiB: a number costs about 8 bytes of it, and one
# of a domain with exclusions another choice (which interval it comes from). An example of more
# numbers than this is drawn rarely or never, so such a domain is refused before the search.
MAX_ELEMENTS = 600


def _inward(bound: float, dtype: str, up: bool) -> float:
    """`bound` as the nearest `dtype` number on its inward side (Hypothesis wants bounds it can
    hold)."""
    kind = np.dtype(dtype).type
    with np.errstate(over="ignore"):
        value = kind(bound)
    # Compared as Python floats: NumPy compares a float32 with a Python float in float32, where
    # float32(0.1) equals 0.1 though it is above it.
    if math.isinf(value) or (float(value) < bound if up else float(value) > bound):
        value = np.nextafter(value, kind(np.inf if up else -np.inf))
    return float(value)


def _pieces(domain: Domain, dtype: str, what: str) -> list[tuple[float, float, bool, bool]]:
    """The intervals (low, high, open low, open high) of `dtype` numbers that `domain` lets explore
    draw: its bounds, less the values near an excluded one, each end moved inward to a `dtype`
    number and off the subnormals (zero stays).

    Raises:
      ExploreError: nothing is left (the message says why and what to do).
    """
    low, high = domain.bounds
    open_low, open_high = domain.open_bounds
    pieces = [(low, high, open_low, open_high)]
    for x in sorted(domain.exclude):
        if domain.near <= 0:
            break  # |v - x| >= 0 holds for every v
        cut = []
        for a, b, oa, ob in pieces:  # what is left of each once (x - near, x + near) is out
            if x - domain.near < b or x - domain.near == b and not ob:
                cut.append((a, min(b, x - domain.near), oa, ob and b <= x - domain.near))
            else:
                cut.append((a, b, oa, ob))
                continue
            if x + domain.near < b or x + domain.near == b and not ob:
                cut.append((max(a, x + domain.near), b, oa and a >= x + domain.near, ob))
        pieces = [(a, b, oa, ob) for a, b, oa, ob in cut if a < b or a == b and not (oa or ob)]
    if not pieces:
        raise ExploreError(f"{what}: every value of {domain.describe()} is within {domain.near:g} "
                           "of an excluded value, so nothing can be drawn; narrow exclude or near, "
                           "or widen the bounds")
    tiny = float(np.finfo(dtype).tiny)
    drawn, subnormal = [], False
    for a, b, oa, ob in pieces:
        lo, hi = _inward(a, dtype, up=True), _inward(b, dtype, up=False)
        oa, ob = oa and lo == a, ob and hi == b
        if not (lo < hi or lo == hi and not (oa or ob)):
            continue  # no `dtype` number lies in it
        # No subnormals: TensorFlow flushes them to zero in some kernels, so such a point tests the
        # CPU's flush-to-zero setting, not the gradient. An end among them moves to the nearest
        # number that is not one, inward: zero, or the smallest normal number.
        if 0 < lo < tiny:
            lo, oa = tiny, False
        elif -tiny < lo < 0 or lo == 0 and oa and hi > 0:
            lo, oa = (0.0, False) if lo < 0 else (tiny, False)
        if -tiny < hi < 0:
            hi, ob = -tiny, False
        elif 0 < hi < tiny or hi == 0 and ob and lo < 0:
            hi, ob = (0.0, False) if hi > 0 else (-tiny, False)
        if lo < hi or lo == hi and not (oa or ob):
            drawn.append((lo, hi, oa, ob))
        else:
            subnormal = True
    if not drawn and subnormal:
        raise ExploreError(f"{what}: no {dtype} number in {domain.describe()} can be drawn: "
                           "explore draws no subnormal numbers (TensorFlow flushes them to zero "
                           f"in some kernels), and {dtype}'s normal numbers start at {tiny:.3g}; "
                           "widen the domain, or draw in a wider dtype")
    if not drawn:
        raise ExploreError(f"{what}: no {dtype} number lies in {domain.describe()}; widen it, or "
                           "draw in a wider dtype")
    return drawn


def _elements(st, domain: Domain, dtype: str, what: str):
    parts = [st.floats(lo, hi, width=_WIDTHS[dtype], allow_nan=False, allow_infinity=False,
                       exclude_min=oa, exclude_max=ob, allow_subnormal=False)
             for lo, hi, oa, ob in _pieces(domain, dtype, what)]
    elements = parts[0] if len(parts) == 1 else st.one_of(*parts)
    if domain.exclude:
        # The pieces' ends were rounded to `dtype` numbers: this keeps what rounding let in out.
        elements = elements.filter(lambda v: all(abs(v - x) >= domain.near for x in domain.exclude))
    return elements


def _array(st, domain: Domain, dtype: str, shape: tuple[int, ...], what: str):
    size = int(np.prod(shape, dtype=np.int64))

    def made(values: list) -> np.ndarray:
        a = np.asarray(values, dtype=dtype).reshape(shape)
        if domain.symmetric and domain.positive:
            a64 = a.astype(np.float64)
            n = shape[-1]
            return (a64 @ np.swapaxes(a64, -1, -2) + n * np.eye(n)).astype(dtype)
        if domain.symmetric:
            return ((a + np.swapaxes(a, -1, -2)) / 2).astype(dtype)
        return a

    return st.lists(_elements(st, domain, dtype, what), min_size=size, max_size=size).map(made)


def points(info: CaseInfo, domains: Sequence[tuple[str, Domain]]):
    """The Hypothesis strategy of `info`'s points: (name, NumPy value) for every argument, drawn
    from its domain or, without one, the value at the case's first point.

    Raises:
      ExploreError: a domain names no argument, an argument's dtype cannot be drawn, a domain
        leaves no number to draw, or an example would hold more numbers than Hypothesis can draw.
    """
    st = require().strategies
    by_name = dict(domains)
    names = [a[0] for a in info.arguments]
    unknown = [n for n in by_name if n not in names]
    if unknown:
        raise ExploreError(f"--domain names {unknown[0]!r}, which is not an argument of {info.id}; "
                           f"its arguments: {', '.join(names)}")
    if not by_name:
        raise ExploreError(f"{info.id} declares no domains; give --domain NAME=[LOW, HIGH] for an "
                           f"argument ({', '.join(names)})")
    parts, sizes = [], []
    for i, (name, dtype, shape) in enumerate(info.arguments):
        what = f"{info.id} argument {name!r}"
        if name not in by_name:
            try:
                parts.append(st.just(np.asarray(info.fixed[i], dtype=dtype)))
            except TypeError:
                raise ExploreError(
                    f"{what} is {dtype}, which explore cannot hold; give it a domain"
                ) from None
            continue
        if dtype not in _WIDTHS:
            raise ExploreError(f"{what} is {dtype}; explore draws {', '.join(_WIDTHS)}")
        domain = by_name[name]
        shapes = domain.shape or (tuple(shape),)
        _pieces(domain, dtype, what)  # something to draw, or why not
        largest = max(shapes, key=lambda s: int(np.prod(s, dtype=np.int64)))
        sizes.append((name, largest, int(np.prod(largest, dtype=np.int64))))
        parts.append(
            st.sampled_from(shapes).flatmap(
                lambda s, d=domain, t=dtype, w=what: _array(st, d, t, s, w)
            )
        )
    total = sum(size for _, _, size in sizes)
    if total > MAX_ELEMENTS:
        name, shape, size = max(sizes, key=lambda s: s[2])
        held = (f"{size} numbers" if len(sizes) == 1
                else f"{total} numbers ({size} of them {name}'s)")
        raise ExploreError(f"{info.id}: an example with {name} of shape {list(shape)} holds "
                           f"{held}, more than the {MAX_ELEMENTS} explore can draw in one example "
                           "(Hypothesis draws each example from a buffer of 8 KiB); give a smaller "
                           "shape")
    return st.tuples(*parts).map(lambda values: tuple(zip(names, values)))


class _Stopped(BaseException):
    """Out of Hypothesis at once (it would retry and shrink an Exception): a crash or a timeout, or
    the one example `validate_domains` draws."""


def validate_domains(info: CaseInfo, domains: Sequence[tuple[str, Domain]]) -> None:
    """Refuses, before any example is measured, domains from which no example can be drawn: one
    is drawn here, nothing measured.

    Raises:
      ExploreError: what `points` refuses, or Hypothesis could draw no example (the message says
      what
        to change).
    """
    hypothesis = _hypothesis()
    from hypothesis.errors import HypothesisException, NoSuchExample, Unsatisfiable  # noqa: PLC0415

    strategy = points(info, domains)
    settings = hypothesis.settings(max_examples=10, deadline=None, database=None,
                                   verbosity=hypothesis.Verbosity.quiet,
                                   suppress_health_check=list(hypothesis.HealthCheck))
    over = ", ".join(f"{n}={d.describe()}" for n, d in domains)

    def drawn(values) -> bool:
        raise _Stopped  # one example is enough: out at once, without shrinking it

    try:
        hypothesis.find(strategy, drawn, settings=settings, random=random.Random(0))
    except _Stopped:
        return
    except (NoSuchExample, Unsatisfiable):
        raise ExploreError(f"{info.id}: Hypothesis could draw no example from {over}; give wider "
                           "bounds, fewer exclusions or smaller shapes") from None
    except HypothesisException as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExploreError(f"{info.id}: Hypothesis cannot draw from {over}: {first}; change the "
                           "domain") from None


def _hypothesis():
    """Hypothesis, its own files (a cache of the constants in the code it runs) beside the example
    database rather than in a .hypothesis folder of the user's working directory."""
    hypothesis = require()
    from hypothesis.configuration import set_hypothesis_home_dir  # noqa: PLC0415

    set_hypothesis_home_dir(os.path.join(os.path.dirname(DATABASE), "hypothesis"))
    return hypothesis


# -- the search ------------------------------------------------------------------------------

def cause(result: Result, info: Optional[CaseInfo] = None) -> tuple:
    """What makes two failing verdicts the same bug, so that shrinking keeps to the one found: the
    verdict; the modes that did not compute, with their exception classes and the order each raised
    at; every difference from the yardstick mode and every malformed gradient that the verdict
    reports as failing (not a declared deviation that happened), each as (mode, kind, order,
    source); every oracle that differs, with the orders, the sources and the kind of its
    difference (a wrong value, a surrogate's, at a kink, a NaN or infinite gradient, an unconnected
    gradient counted as 0, a grad_fn that mishandles its upstream gradient) and what its note says
    of the point (a jump, noise, a kink within a step); and the orders whose values hold an inf or a
    NaN (an overflow is one bug, a gradient that underflows to a wrong finite value another, though
    the same oracle says both). `info` gives the case's tolerance for comparing the modes."""
    modes = tuple(sorted((m, o.status.value, o.error.type if o.error else "", _stage(o.error))
                         for m, o in result.outcomes.items() if o.status is not Status.OK))
    oracles = tuple(sorted(_oracle_cause(o) for o in result.oracles.values()
                           if o.status in (OracleStatus.DIFFER, OracleStatus.ERROR)))
    return result.verdict.value, modes, _differences(result, info), oracles, _non_finite(result)


def _stage(error) -> str:
    """Where an exception happened: "order K", or the stage's first word (forward, build, ...)."""
    if error is None:
        return ""
    return (f"order {error.order}" if error.order is not None
            else error.stage.split(" ", 1)[0].rstrip(","))


def _source(where: str) -> str:
    """The source a Mismatch's `where` or an oracle's line names ("order 2 gradient wrt x[0]":
    "x")."""
    found = re.search(r"gradient wrt ([A-Za-z_][A-Za-z0-9_]*)", where)
    return found[1] if found else ""


def _differences(result: Result, info: Optional[CaseInfo]) -> tuple:
    """(mode, kind, order, source, weighted) for every difference from the yardstick mode and every
    malformed gradient (harness.criteria.compare: "value", "none", "nonfinite", "dtype", "shape",
    "status", "error_type", "count", "gradient") that the verdict's lines report: a declared
    deviation that happened is not part of the failure, and may come and go while shrinking."""
    from harness.criteria.compare import check_gradients, compare_outcomes  # noqa: PLC0415

    said = "\n".join((result.reason,) + tuple(result.details))
    ref = result.outcomes.get(result.yardstick)
    found = set()
    for mode, outcome in result.outcomes.items():
        if outcome.status is Status.SKIP:
            continue
        if ref is not None and mode != result.yardstick and ref.status is not Status.SKIP:
            for m in compare_outcomes(ref, outcome, tolerance=info.tolerance if info else None):
                if m.message in said:
                    found.add((mode, m.kind, -1 if m.order is None else m.order, _source(m.where),
                               m.upstream))
        if outcome.status is Status.OK:
            for m in check_gradients(outcome):
                if m.message in said:
                    order = re.match(r"order (\d+)", m.where)
                    found.add((mode, m.kind, int(order[1]) if order else -1, _source(m.where),
                               False))
    return tuple(sorted(found))


# The kinds of an oracle's difference, from the words of its lines (harness.measure.oracles says
# them).
_LINE_KINDS = (
    ("surrogate", "a surrogate, not a derivative"),
    ("kink", "has a kink here"),
    ("non-finite", "NaN or infinite gradient"),
    ("non-finite", "where the numeric derivative is finite"),
    ("unconnected", "counted as 0"),
    ("triangle", "strict upper triangle"),
    ("triangle", "strict lower triangle"),
    ("upstream", "mishandles its upstream gradient"),
    ("upstream raises", "grad_fn fails when its upstream gradient"),
    ("impure", "runs it a second time"),
)
# What an oracle's note says of the point: why some directions could not be judged there.
_NOTE_KINDS = (("jump", "jumps within a step"), ("noisy", "too noisy at this step"),
               ("kink", "has a kink at the point"), ("coarse", "could hide a wrong sign"),
               ("flat", "may have absorbed the move"),
               ("rounded", "rounding a value of the point's size"))


def _oracle_cause(o) -> tuple:
    """(oracle, its status, the orders that differ, the sources its lines name, the kinds of
    difference they say, what its note says of the point)."""
    sources = tuple(sorted({_source(line) for line in o.details}))
    kinds = tuple(sorted({kind for line in o.details for kind, words in _LINE_KINDS
                          if words in line} or {"value"}))
    notes = tuple(sorted({kind for kind, words in _NOTE_KINDS if words in o.note}))
    return o.name, o.status, tuple(o.differ), sources, kinds, notes


def _non_finite(result: Result) -> tuple:
    """(order, "inf" or "nan") for each order of the first mode that computed, where its values
    have one."""
    computed = next((o for o in result.outcomes.values() if o.status is Status.OK), None)
    if computed is None:
        return ()
    found = set()
    for k, order in enumerate(computed.orders):
        for out in order:
            if out.value is None or np.asarray(out.value).dtype.kind not in "fc":
                continue
            value = np.asarray(out.value)
            if np.isnan(value).any():
                found.add((k, "nan"))
            if np.isinf(value).any():
                found.add((k, "inf"))
    return tuple(sorted(found))


def inputs_literal(values: Sequence[tuple[str, np.ndarray]]) -> str:
    """The point as an --inputs literal: one value, or a tuple of one per argument."""
    def text(v: np.ndarray) -> str:
        if v.ndim == 0:
            return str(v[()])  # the shortest text that reads back to it in its dtype
        return "[" + ", ".join(text(x) for x in v) + "]"

    parts = [text(np.asarray(v)) for _, v in values]
    return parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"


def label_of(values: Sequence[tuple[str, np.ndarray]]) -> str:
    return point_label([n for n, _ in values], [v for _, v in values])


@dataclasses.dataclass(frozen=True)
class Search:
    """What `search` found: the failing point and its verdict (None when none failed), the
    examples judged (`tried`), of them those judged while shrinking, after the first failing one
    (`shrinking`), why Hypothesis ended the search before the examples asked for were judged
    (`stopped`), and a note (the search stopped without shrinking at a crash, say)."""

    values: Optional[tuple]
    result: Optional[Result]
    tried: int
    note: str = ""
    shrinking: int = 0
    stopped: str = ""

    @property
    def searched(self) -> int:
        """The examples judged up to and including the first failing one (all of them when none
        failed)."""
        return self.tried - self.shrinking


def _failing(info: CaseInfo, measure: Callable[[tuple], Result], strict_xpass: bool,
             state: dict) -> Callable[[tuple], bool]:
    """The predicate Hypothesis searches with: whether `measure` fails at the values, with the same
    cause as the first failure found. It counts the tries in `state`, keeps there the first
    failure's cause and try, and the latest values failing with it; a crash or timeout is kept
    and stops the search (_Stopped)."""

    def failing(values) -> bool:
        result = measure(values)
        state["tried"] += 1
        fails = result.verdict.is_failure or (strict_xpass and result.verdict is Verdict.XPASS)
        if not fails:
            return False
        if result.verdict in (Verdict.CRASH, Verdict.TIMEOUT):
            state["stopped"] = (values, result)
            raise _Stopped
        if state["cause"] is None:
            state["cause"] = cause(result, info)
            state["first"] = state["tried"]
        if cause(result, info) != state["cause"]:
            return False  # another bug: shrink toward the first one found
        state["found"] = (values, result)
        return True

    return failing


def search(info: CaseInfo, domains: Sequence[tuple[str, Domain]],
           measure: Callable[[tuple], Result], *, examples: int, seed: Optional[int], key: str,
           database: Optional[str] = DATABASE, strict_xpass: bool = False) -> Search:
    """Draws up to `examples` points of `domains`, judging each with `measure`, and shrinks the
    first failing one to the simplest that fails with the same `cause`.

    `key` tells the example database this search from others (the case, its domains, modes
    and options). The same `seed` draws the same points; Hypothesis then leaves the database alone.

    Raises:
      ExploreError: no example can be drawn from `domains` (`validate_domains`), before any is
      measured.
    """
    hypothesis = _hypothesis()
    from hypothesis.database import DirectoryBasedExampleDatabase  # noqa: PLC0415
    from hypothesis.errors import (
        Flaky,
        HypothesisException,
        NoSuchExample,
        Unsatisfiable,
    )  # noqa: PLC0415

    validate_domains(info, domains)
    strategy = points(info, domains)
    state: dict = {"tried": 0, "first": None, "cause": None, "found": None, "stopped": None}
    failing = _failing(info, measure, strict_xpass, state)
    settings = hypothesis.settings(
        max_examples=examples, deadline=None, derandomize=False,
        verbosity=hypothesis.Verbosity.quiet,
        database=DirectoryBasedExampleDatabase(database) if database else None,
        suppress_health_check=list(hypothesis.HealthCheck))
    note = stopped = ""
    try:
        hypothesis.find(strategy, failing, settings=settings,
                        database_key=hashlib.sha256(key.encode()).digest(),
                        random=random.Random(seed) if seed is not None else None)
    except _Stopped:
        values, result = state["stopped"]
        return Search(values, result, state["tried"],
                      f"stopped at the first {result.verdict.value}, without "
                                                      "shrinking: each try would cost a worker")
    except NoSuchExample:
        pass
    except Unsatisfiable:
        why = (" (on an excluded value, or too large)" if any(d.exclude for _, d in domains)
               else " (too large)")
        stopped = f"Hypothesis rejected too many of its draws{why}"
    except Flaky:
        note = (
            "the point failed once and passed when tried again: the case is not deterministic there"
        )
    except HypothesisException as e:  # a health check, say: what it says, never a traceback
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        stopped = f"Hypothesis stopped the search: {type(e).__name__}" + (f": {first}" if first
                                                                          else "")
    if state["found"] is None:
        return Search(None, None, state["tried"], note, stopped=stopped)
    values, result = state["found"]
    return Search(values, result, state["tried"], "; ".join(n for n in (note, stopped) if n),
                  shrinking=state["tried"] - state["first"])
