"""The SavedModel modes' restorer process: loads what a worker saved and differentiates it.

It runs as `python -m harness.measure.modes._saved_model_restorer`, started by
harness/measure/modes/saved_model.py, and must stay a process that never ran the
case's Python code: it imports TensorFlow, NumPy and harness.measure.modes.shared (with
harness.case and harness.records), never a case module, so the only gradients
it knows are TensorFlow's own and those the SavedModel brought
(tensorflow#40166).

Protocol, one JSON line each way, arrays in pickle files (np.savez would turn
ml_dtypes' bfloat16 into raw bytes):

  request on stdin: {"folder": F, "points": [i, ...], "order": K, "wrt": [argument index, ...],
                     "unconnected_zero": bool, "upstream": null or [seed per point of the case]}
    F/model is the SavedModel: one tf.function per input signature, each returning its
    outputs as a flat list, and `sources`, the differentiated variables in order;
    F/points.pkl holds, for every point of the case, (function name, [NumPy value per argument]).
  one reply line per requested point, in order, as soon as it is done:
    {"point": i, "error": null or {"type", "bases", "message", "stage"}}
    with F/result-i.pkl holding {"orders": the orders computed (all of them, or those before
    the error), "upstream": the weighted chain's orders 1.. (harness.measure.upstream),
    "upstream_error": null or the error dict of what the weighted chain alone raised}, each order a
    list of NumPy values or None.

Stages: "load", "forward", "order K".

Loading a SavedModel with saved gradients registers each under a new name
from this process's counter, "CustomGradient-N" (function_deserialization.py),
and a gradient that was not saved keeps the saving process's name verbatim
(_fix_fdef_in_place). Had an earlier case left a registration of the same
name behind, that op would silently get the earlier case's gradient instead
of none; so each request's registrations are removed when it is done, and
every case meets the registry of a process that never loaded anything.

Replies go to a private copy of the original stdout; file descriptor 1 then
points at stderr, so nothing else TensorFlow or Python prints can corrupt them. The process exits at
the end of stdin, and also, from a watchdog thread, when its parent (the worker) is gone while it is
busy: a worker killed for a timeout must not leave a restorer running a hung function.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import sys
from typing import Iterator, Sequence

__all__ = ["main", "serve"]


class _Loaded:
    """What tape_orders needs of a Subject: the loaded function and the sources at xs."""

    def __init__(self, fn, wrt: Sequence[int], variables: Sequence):
        self.fn = fn
        self.wrt = list(wrt)
        self.variables = list(variables)

    def sources(self, xs: Sequence) -> list:
        return [xs[i] for i in self.wrt] + self.variables


def serve(request: dict) -> Iterator[dict]:
    """Runs the requested points of one saved case; yields one reply per point.

    A failed load is every point's error: each point tries again, so the reply
    for each says what happened to it.
    """
    from tensorflow.python.framework import ops  # noqa: PLC0415 - loaded in main

    registry = ops.gradient_registry
    before = set(registry.list())
    try:
        yield from _run_points(request)
    finally:
        # Only the loaded custom gradients: a TensorFlow module imported on the way
        # may have registered the gradients of ordinary ops, which must stay.
        for name in set(registry.list()) - before:
            if name.startswith("CustomGradient-"):
                del registry._registry[name]  # noqa: SLF001 - Registry has no public way to forget


def _run_points(request: dict) -> Iterator[dict]:
    from harness.measure import upstream  # noqa: PLC0415
    from harness.measure.modes.shared import (
        Steps,
        portable,
        restored,
        tape_chains,
        tf,
    )  # noqa: PLC0415 - loaded in main
    from harness.records import error_info  # noqa: PLC0415
    from harness.records import RunOptions  # noqa: PLC0415

    folder = request["folder"]
    with open(os.path.join(folder, "points.pkl"), "rb") as f:
        points = restored(pickle.load(f))
    options = RunOptions(unconnected_zero=request["unconnected_zero"])
    loaded = None
    for index in request["points"]:
        name, values = points[index]
        progress = Steps()
        error = None
        try:
            if loaded is None:
                progress.stage = "load"
                loaded = tf.saved_model.load(os.path.join(folder, "model"))
            subject = _Loaded(getattr(loaded, name), request["wrt"], loaded.sources)
            seeds = request.get("upstream")
            tables = (None if seeds is None
                      else tf.constant(upstream.flat_tables(seeds[index], request["order"])))
            tape_chains(subject, [tf.constant(v) for v in values], request["order"], options,
                        progress, tables)
        # TensorFlow's and the saved function's errors are results.
        except Exception as e:  # noqa: BLE001
            error = dataclasses.asdict(error_info(e, progress.stage))
        raised = progress.upstream_error
        with open(os.path.join(folder, f"result-{index}.pkl"), "wb") as f:
            pickle.dump(portable({"orders": _values(progress.done),
                                  "upstream": _values(progress.upstream),
                                  "upstream_error": None if raised is None
                                  else dataclasses.asdict(error_info(*raised))}),
                        f)
        yield {"point": index, "error": error}


def _values(orders) -> list:
    return [[None if t is None else t.numpy() for t in o] for o in orders]


def main() -> None:
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # TensorFlow comes in here, before the first request.
    import harness.measure.modes.shared  # noqa: F401, PLC0415
    from harness import lifetime  # noqa: PLC0415

    lifetime.exit_with_parent()
    for line in sys.stdin:
        for reply in serve(json.loads(line)):
            replies.write(json.dumps(reply) + "\n")
            replies.flush()


if __name__ == "__main__":
    main()
