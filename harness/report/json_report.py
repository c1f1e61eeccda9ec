"""The JSON report, schema "harness.report/1": the contract other tools read.

Values are nested lists; NaN, +Inf and -Inf are the strings "nan", "inf" and
"-inf" so the file stays strict JSON; a complex number is [real, imag]; a None
(unconnected) gradient is null. A mode's "upstream" holds the weighted chain's
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
from typing import Any, Optional

import numpy as np

from harness.records import Explored, ModeOutcome, OracleOutcome, Output, Report, Result, Verdict

__all__ = ["SCHEMA", "render", "to_dict"]

SCHEMA = "harness.report/1"


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


def _output(out: Output) -> dict:
    return {"value": _value(out.value), "dtype": out.dtype, "shape": list(out.shape)}


def _mode(outcome: ModeOutcome) -> dict:
    entry: dict[str, Any] = {"status": outcome.status.value,
                             "orders": [[_output(o) for o in order] for order in outcome.orders],
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
        entry["upstream"] = [[_output(o) for o in order] for order in outcome.upstream]
    if outcome.upstream_error is not None:
        e = outcome.upstream_error
        entry["upstream_error"] = {"type": e.type, "message": e.message, "stage": e.stage,
                                   "bases": list(e.bases)}
    return entry


def _oracle(o: OracleOutcome) -> dict:
    return {"status": o.status.value, "orders": list(o.orders), "differ": list(o.differ),
            "details": list(o.details), "note": o.note}


def result_dict(result: Result) -> dict:
    return {
        "case": result.case,
        "point": result.point,
        "order": result.order,
        "verdict": result.verdict.value,
        "reason": result.reason,
        "unchecked": result.unchecked,
        "undeclared": list(result.undeclared),
        "details": list(result.details),
        "rerun": result.rerun,
        "seconds": _seconds(result.seconds),
        "modes": {mode: _mode(o) for mode, o in result.outcomes.items()},
        "oracles": {name: _oracle(o) for name, o in result.oracles.items()},
    }


def explored_dict(e: Explored) -> dict:
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
        "found": result_dict(e.found) if e.found else None,
        "inputs": e.inputs,
        "check": e.check,
        "note": e.note,
    }


def to_dict(report: Report) -> dict:
    explore = {"explore": [explored_dict(e) for e in report.explore]} if report.explore else {}
    return {
        "schema": SCHEMA,
        "started": _timestamp(report.started),
        "seconds": _seconds(report.seconds),
        "environment": dict(report.environment),
        "modes": list(report.modes),
        "results": [result_dict(r) for r in report.results],
        "summary": report.summary,
        "unchecked": sum(1 for r in report.results if r.verdict is Verdict.PASS and r.unchecked),
        **explore,
    }


def render(report: Report) -> str:
    return json.dumps(to_dict(report), indent=1, allow_nan=False) + "\n"
