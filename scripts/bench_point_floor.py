"""What one recorded point costs TensorFlow itself, with no harness code: the floor under what
replaying it in each mode can cost.

    python scripts/bench_point_floor.py RECORDING FUNCTION POINT

FUNCTION is a recorded function's qualname (or the end of module.qualname), POINT the index of its
recorded call (0 first). Reads the recording's JSON and value files directly, imports the function,
and runs it in a fresh process per way: the forward alone, an eager GradientTape watching every
floating argument (as the eager mode does), and the same tape inside a tf.function (as the
function mode does, tracing included), and tf.gradients in a tf.compat.v1 graph run by a Session
(as the graph mode does, building included). Prints each way's seconds and peak resident memory.
The harness's modes compute the plain chain and, by default, the weighted one (--upstream), each
on its own forward: a traced mode's floor there is about twice its way's.
Only points whose arguments are recorded values (not drawn stand-ins, objects or variables).
"""

import argparse
import importlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

WAYS = ("forward", "eager tape", "tf.function tape", "graph tf.gradients")


def _record(recording: Path, name: str) -> tuple[dict, Path]:
    for path in sorted(recording.glob("recorded-*.json")):
        for record in json.loads(path.read_text())["functions"]:
            full = f"{record['module']}.{record['qualname']}"
            if full == name or full.endswith("." + name):
                return record, path.parent
    raise SystemExit(f"error: no recorded function {name!r} in {recording}; "
                     "name one as `python -m harness replay RECORDING --list` shows it")


def _argument(entry: dict, folder: Path):
    import numpy as np

    if "array" in entry:
        return np.load(folder / entry["array"])
    if "python" in entry:
        return entry["python"]
    raise SystemExit(f"error: this point has an argument that is not a recorded value ({entry}); "
                     "the floor is measured for points of recorded values only")


def _measure(recording: Path, name: str, index: int, way: str) -> None:
    import tensorflow as tf

    record, folder = _record(recording, name)
    point = record["points"][index]
    module = importlib.import_module(record["module"])
    fn = module
    for part in record["qualname"].split("."):
        fn = getattr(fn, part)
    args = [tf.constant(_argument(a, folder)) if "array" in a else _argument(a, folder)
            for a in point["args"]]
    kwargs = {k: _argument(v, folder) for k, v in point.get("kwargs", {}).items()}
    slots = [i for i, a in enumerate(args) if isinstance(a, tf.Tensor) and a.dtype.is_floating]
    watched = [args[i] for i in slots]

    def taped(*xs):
        called = list(args)
        with tf.GradientTape() as tape:
            tape.watch(list(xs))
            for i, x in zip(slots, xs):
                called[i] = x
            out = fn(*called, **kwargs)
        return tape.gradient(out, list(xs))

    started = time.perf_counter()
    if way == "forward":
        fn(*args, **kwargs)
    elif way == "eager tape":
        taped(*watched)
    elif way == "tf.function tape":
        tf.function(taped)(*watched)
    else:
        _graph_gradients(fn, args, kwargs, slots)
    took = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{way:18s} {took:8.1f} s  peak resident {peak:8.0f} MiB")


def _graph_gradients(fn, args, kwargs, slots) -> None:
    import tensorflow as tf

    with tf.Graph().as_default() as graph:
        fed = {i: tf.compat.v1.placeholder(args[i].dtype, args[i].shape) for i in slots}
        called = [fed.get(i, a.numpy() if isinstance(a, tf.Tensor) else a)
                  for i, a in enumerate(args)]
        out = [t for t in tf.nest.flatten(fn(*called, **kwargs)) if t.dtype.is_floating]
        grads = [g for g in tf.compat.v1.gradients(out, [fed[i] for i in slots]) if g is not None]
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(grads, {fed[i]: args[i].numpy() for i in slots})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recording", type=Path)
    parser.add_argument("function")
    parser.add_argument("point", type=int)
    parser.add_argument("--way", choices=WAYS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.way:
        _measure(args.recording, args.function, args.point, args.way)
        return 0
    record, _ = _record(args.recording, args.function)
    if not 0 <= args.point < len(record["points"]):
        raise SystemExit(f"error: {args.function} has {len(record['points'])} recorded points; "
                         f"give POINT from 0 to {len(record['points']) - 1}")
    print(f"{record['module']}.{record['qualname']}, point {args.point} "
          f"(called by {record['points'][args.point].get('node') or '?'})")
    for way in WAYS:  # a fresh process each: its peak memory is that way's alone
        proc = subprocess.run([sys.executable, __file__, str(args.recording), args.function,
                               str(args.point), "--way", way], capture_output=True, text=True)
        lines = proc.stdout.strip().splitlines()
        print(lines[-1] if proc.returncode == 0 and lines
              else f"{way:18s} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
