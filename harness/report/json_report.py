"""The JSON report, schema "harness.report/2": the contract other tools read.

Each output of a mode is {"value", "dtype", "shape"} where it has at most FULL_UP_TO elements, or
with every_value (--json_values=full); a larger one is {"dtype", "shape", "summary"}, the summary
holding its number of "elements", the first HEAD of them in C order ("head"), the "min" and "max"
of its finite elements (of a complex one "max_abs"), how many are "nan", "inf" and "-inf" (of a
complex one "nan" and "inf", either part), and in a mode that is not the result's "yardstick" the
largest absolute difference from the yardstick's output at the same place where both are finite
("max_abs_diff", absent where their shapes or kinds differ). Schema 1 wrote every value in full,
which made the report of a few hundred thousand elements megabytes long; what a verdict found (the
worst element, its error, the tolerance) is in its reason and details, which are never cut, and
nothing the harness reads of a report (merge, bisect, replay's check and --accept) is a value.

Values are nested lists; NaN, +Inf and -Inf are the strings "nan", "inf" and
"-inf" so the file stays strict JSON; a complex number is [real, imag]; a None
(unconnected) gradient's "value" is null. A mode's "upstream" holds the weighted chain's
orders 1.. (harness.measure.upstream), and the "upstream" oracle its numeric check. Floats are
written with the shortest digits that read back to the same value in their own dtype (1.3132616 for
float32).

Times are wall-clock seconds, rounded to milliseconds. The top level has
"started", the run's start as an ISO 8601 UTC timestamp
("2025-01-31T12:00:00.000+00:00", null when unknown), and "seconds", the run's
total. Each result has "seconds": a case's points run together (the modes
batch them), so a point's own time cannot be measured, and each point gets its
case's time divided by its number of points; a crash or timeout counts up to
the worker's death or kill. These fields were added within schema 1: a reader
must not require them (older reports lack them).

Each result has "unchecked": on a pass, why nothing but the modes' agreement stands behind it (no
oracle could judge its values, or every value is NaN or infinite), else ""; the top level's
"unchecked" counts those passes, which "summary" counts among "pass". Both were added within
schema 1: a reader must not require them. So was each result's "undeclared": on a fail, each
deviation no expectation declares, as --expect spells it ("graph:values differ"), where one can
declare it; else [].

"explore" (also added within schema 1, and absent from older reports) lists what
each explored case found: its domains, the examples tried ("tried", of them
"shrinking" after the first failing one) and their limit, the seconds, the seed,
the verdict ("error" when no example failed but none was judged, or Hypothesis ended the
search early: "stopped" says why), and, when an example failed, "found" (the shrunk point's
result, as in "results"), "inputs" (that point as an --inputs literal) and
"check" (a command that reruns it). Its results are not in "results", which
holds the case library's own points only (what a version matrix compares).
"""

from __future__ import annotations

import datetime
import json
import math
from typing import Any, Optional, Sequence

import numpy as np

from harness.records import Explored, ModeOutcome, OracleOutcome, Output, Report, Result, Verdict

__all__ = ["FULL_UP_TO", "HEAD", "SCHEMA", "explored_dict", "render", "result_dict", "to_dict"]

SCHEMA = "harness.report/2"

# An output of at most this many elements is written in full; a larger one as a summary.
FULL_UP_TO = 16
# How many elements a summary shows, the first in C order.
HEAD = 8


def _seconds(value: float) -> float:
    """A duration as the reports write it: seconds, rounded to milliseconds."""
    return round(float(value), 3)


def _timestamp(started: Optional[float]) -> Optional[str]:
    """`started` (seconds since the Unix epoch) as ISO 8601 in UTC, to the millisecond; None
    stays None."""
    if started is None:
        return None
    return datetime.datetime.fromtimestamp(started,
                                           datetime.timezone.utc).isoformat(timespec="milliseconds")


def _number(x: Any) -> Any:
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (complex, np.complexfloating)):
        return [_number(x.real), _number(x.imag)]
    f = float(x)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    # str() of a NumPy scalar is the shortest text that reads back to it in its dtype.
    return float(str(x)) if isinstance(x, np.generic) else f


def _value(value: Optional[np.ndarray]) -> Any:
    if value is None:
        return None
    if value.ndim == 0:
        return _number(value[()])
    return [_value(v) for v in value]


def _finite_range(flat: np.ndarray) -> dict:
    """What a summary says of the size of an array's values, and of those not finite."""
    if flat.dtype.kind in "biu":
        return {"min": _number(flat.min()), "max": _number(flat.max())}
    if flat.dtype.kind not in "fc":
        return {}
    finite = flat[np.isfinite(flat)]
    nan = int(np.isnan(flat).sum())
    if flat.dtype.kind == "c":
        return {"max_abs": _number(np.abs(finite).max()) if finite.size else None, "nan": nan,
                "inf": int(np.isinf(flat).sum())}
    return {"min": _number(finite.min()) if finite.size else None,
            "max": _number(finite.max()) if finite.size else None,
            "nan": nan, "inf": int(np.isposinf(flat).sum()), "-inf": int(np.isneginf(flat).sum())}


def _max_abs_diff(value: np.ndarray, like: Optional[np.ndarray]) -> dict:
    """{"max_abs_diff": the largest |value - like| where both are finite} (null where none is),
    or {} where the two cannot be compared element by element."""
    if (like is None or like.shape != value.shape
            or value.dtype.kind not in "iufc" or like.dtype.kind not in "iufc"):
        return {}
    wide = np.complex128 if "c" in (value.dtype.kind, like.dtype.kind) else np.float64
    a, b = value.astype(wide), like.astype(wide)
    both = np.isfinite(a) & np.isfinite(b)
    diff = np.abs(a[both] - b[both])
    return {"max_abs_diff": _number(diff.max()) if diff.size else None}


def _summary(value: np.ndarray, like: Optional[np.ndarray]) -> dict:
    flat = value.reshape(-1)
    return {"elements": int(flat.size), "head": _value(flat[:HEAD]), **_finite_range(flat),
            **_max_abs_diff(value, like)}


def _output(out: Output, every_value: bool, like: Optional[Output] = None) -> dict:
    """One output: its value in full where it is small or every_value asks for it, else a summary
    of it, with its largest difference from `like` (the yardstick's output at the same place)."""
    if out.value is None or every_value or out.value.size <= FULL_UP_TO:
        return {"value": _value(out.value), "dtype": out.dtype, "shape": list(out.shape)}
    return {"dtype": out.dtype, "shape": list(out.shape),
            "summary": _summary(out.value, like.value if like is not None else None)}


def _orders(orders: Sequence[Sequence[Output]], every_value: bool,
            like: Sequence[Sequence[Output]]) -> list:
    """Orders of outputs as the report writes them, each beside the yardstick's (`like`, the same
    nesting, or () for the yardstick itself)."""
    def beside(k: int, j: int) -> Optional[Output]:
        return like[k][j] if k < len(like) and j < len(like[k]) else None

    return [[_output(o, every_value, beside(k, j)) for j, o in enumerate(order)]
            for k, order in enumerate(orders)]


def _mode(outcome: ModeOutcome, every_value: bool = False,
          yardstick: Optional[ModeOutcome] = None) -> dict:
    like = yardstick if yardstick is not None and yardstick is not outcome else None
    entry: dict[str, Any] = {"status": outcome.status.value,
                             "orders": _orders(outcome.orders, every_value,
                                               like.orders if like else ()),
                             "sources": [{"name": s.name, "dtype": s.dtype, "shape": list(s.shape)}
                                         for s in outcome.sources]}
    if outcome.error is not None:
        entry.update(error_type=outcome.error.type, error_message=outcome.error.message,
                     stage=outcome.error.stage, error_bases=list(outcome.error.bases))
    if outcome.note:
        entry["note"] = outcome.note
    if outcome.usage is not None:
        entry["custom_gradients"] = {"ran": list(outcome.usage.ran),
                                     "unused": list(outcome.usage.unused)}
    if outcome.upstream:
        # Orders 1.. of the weighted chain (harness.measure.upstream), like "orders" without order
        # 0.
        entry["upstream"] = _orders(outcome.upstream, every_value, like.upstream if like else ())
    if outcome.upstream_error is not None:
        e = outcome.upstream_error
        entry["upstream_error"] = {"type": e.type, "message": e.message, "stage": e.stage,
                                   "bases": list(e.bases)}
    return entry


def _oracle(o: OracleOutcome) -> dict:
    made = {"status": o.status.value, "orders": list(o.orders), "differ": list(o.differ),
            "details": list(o.details), "note": o.note}
    if o.surrogate:  # where the gradient is a checked surrogate, and which way it points
        made["surrogate"] = o.surrogate
    return made


def result_dict(result: Result, every_value: bool = False) -> dict:
    """One result as the report and its JSON Lines stream write it; `every_value` writes each
    value in full, not a summary of a large one."""
    yardstick = result.outcomes.get(result.yardstick)
    return {
        "case": result.case,
        "point": result.point,
        "order": result.order,
        "verdict": result.verdict.value,
        "yardstick": result.yardstick,
        "reason": result.reason,
        "unchecked": result.unchecked,
        "undeclared": list(result.undeclared),
        "details": list(result.details),
        "rerun": result.rerun,
        "seconds": _seconds(result.seconds),
        "modes": {mode: _mode(o, every_value, yardstick) for mode, o in result.outcomes.items()},
        "oracles": {name: _oracle(o) for name, o in result.oracles.items()},
    }


def explored_dict(e: Explored, every_value: bool = False) -> dict:
    return {
        "case": e.case,
        "domains": {name: text for name, text in e.domains},
        "tried": e.tried,
        "shrinking": e.shrinking,
        "stopped": e.stopped,
        "limit": e.limit,
        "seconds": _seconds(e.seconds),
        "seed": e.seed,
        "verdict": e.found.verdict.value if e.found else "error" if e.incomplete else "pass",
        "found": result_dict(e.found, every_value) if e.found else None,
        "inputs": e.inputs,
        "check": e.check,
        "note": e.note,
    }


def to_dict(report: Report, every_value: bool = False) -> dict:
    """The report as JSON data; `every_value` writes each value in full (--json_values=full)."""
    explore = ({"explore": [explored_dict(e, every_value) for e in report.explore]}
               if report.explore else {})
    return {
        "schema": SCHEMA,
        "started": _timestamp(report.started),
        "seconds": _seconds(report.seconds),
        "environment": dict(report.environment),
        "modes": list(report.modes),
        "results": [result_dict(r, every_value) for r in report.results],
        "summary": report.summary,
        "unchecked": sum(1 for r in report.results if r.verdict is Verdict.PASS and r.unchecked),
        **explore,
    }


def render(report: Report, every_value: bool = False) -> str:
    return json.dumps(to_dict(report, every_value), indent=1, allow_nan=False) + "\n"
