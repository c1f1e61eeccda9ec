"""One record per function, however many processes recorded it and however they were scheduled.

A session folder holds one file per process (pytest, or each pytest-xdist worker), and each file
one record per function it saw, with the K lowest-ranked distinct calls that process saw
(harness.record.recorder). `merged` makes them one record per function definition:

- A function is its definition: module, qualified name, file, line and code (identity's
  `site`). A factory's closures over different values (larq's `SteTern(threshold_value=...)`
  with a random threshold) are variants of that one function, each point saying what its closure
  held; so a case id never carries a captured value, and one entry of the reviewed file covers
  every variant.
- Identical calls are one point: a point's digest is its arguments', variables' and copy's bytes
  (values by their content, not by the file a process stored them in) and its variant's, so the
  same call seen in two workers is one point, kept at its lowest rank (and its test named).
- The K kept are the K of lowest rank: calls with values before calls seen only while tracing,
  then by where the call was made (the test's place in the collection, the call's number in the
  test), then by digest. Each process kept its own lowest K, so the lowest K of their union is
  the lowest K of every call the suite made: serial, `-n 2` and `-n 2 --dist loadfile` keep the
  same points, in the same order, so under the same labels.

Importing this imports neither TensorFlow nor NumPy.
"""

from __future__ import annotations

import hashlib
import json
from typing import Sequence

__all__ = ["definition", "digest_of", "merged", "order_of", "without_values"]

_DEFAULT_POINTS = 3
_UNRANKED = 1 << 62  # a point of a recording made before points were ranked: after every ranked


def definition(record: dict) -> tuple:
    """What makes two records one function: where and how it is defined, not what it captured."""
    return (record["module"], record["qualname"], record.get("file") or "",
            record.get("line") or 0, record.get("site") or "")


def without_values(point: dict) -> bool:
    """Whether a point has an argument known by dtype and shape only (seen while tracing, or
    over the byte limit)."""
    return (any("spec" in a for a in point["args"])
            or any("spec" in a for a in (point.get("kwargs") or {}).values()))


def _by_content(value):
    """`value` with every stored array named by its content's digest, not its file."""
    if isinstance(value, dict):
        if "array" in value and "sha1" in value:
            return {k: v for k, v in value.items() if k != "array"}
        return {k: _by_content(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_by_content(v) for v in value]
    return value


def digest_of(point: dict, fingerprint: str = "") -> str:
    """The digest of one call: the same for the same call, byte for byte, in any process."""
    kept = {k: v for k, v in point.items() if k not in ("node", "rank", "digest")}
    text = json.dumps([fingerprint, _by_content(kept)], sort_keys=True, default=repr)
    return hashlib.sha1(text.encode()).hexdigest()[:20]


def order_of(point: dict, fallback: int = 0) -> tuple:
    """The rank a point is kept by: values first, then where its call was made, then digest."""
    rank = tuple(point.get("rank") or (_UNRANKED, fallback))
    return (int(without_values(point)), rank, point.get("digest") or "")


def _variant_label(record: dict) -> str:
    return ",".join(f"{name}={text}" for name, text in record.get("captured") or ())


def _merge(records: Sequence[dict], limit: int) -> dict:
    variants = {r.get("fingerprint", "") for r in records}
    best: dict = {}
    position = 0
    for record in records:
        for point in record["points"]:
            position += 1
            point = dict(point)
            if len(variants) > 1 and record.get("captured") and not point.get("captured"):
                point["captured"] = _variant_label(record)
            digest = point.get("digest") or digest_of(point, record.get("fingerprint", ""))
            order = order_of(dict(point, digest=digest), position)
            if digest not in best or order < best[digest][0]:
                best[digest] = (order, point)
    points = [point for _, point in sorted(best.values(), key=lambda kept: kept[0])][:limit]
    first = records[0]
    merged = dict(first, points=points,
                  calls=sum(r.get("calls", 0) for r in records),
                  calls_not_examined=sum(r.get("calls_not_examined", 0) for r in records),
                  importable=all(r.get("importable") for r in records),
                  grad_takes_variables=any(r.get("grad_takes_variables") for r in records))
    if len(variants) > 1:
        merged["captured"] = []  # each point says its own
        merged["variants"] = len(variants)
    return merged


def merged(data: dict) -> list[dict]:
    """One record per function definition (a factory's variants in one), its points the lowest K
    distinct calls of every process's file, in rank order; the records sorted by definition."""
    limit = max([s.get("limits", {}).get("points", _DEFAULT_POINTS) for s in data["sessions"]]
                or [_DEFAULT_POINTS])
    groups: dict = {}
    for record in data["functions"]:
        groups.setdefault(definition(record), []).append(record)
    return [_merge(groups[key], limit) for key in sorted(groups, key=_in_source_order)]


def _in_source_order(key: tuple) -> tuple:
    """Definitions by module and name, then where they start (two lambdas on one line: the
    first one first, `_2` the second), then their code."""
    module, qualname, file, line, site = key
    column, _, code = site.partition(":")
    return (module, qualname, file, line, int(column) if column.isdigit() else 0, code)
