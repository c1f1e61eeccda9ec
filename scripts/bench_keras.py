"""Measures what the five training-step modes of one Keras cost on the whole case library, against
`--mode all`.

Times whole processes of `python -m harness` on the library, N times each, by wall clock (CPU
time beside it), and prints each variant's median against `--mode all`:

  startup     --mode all --cases seeds.subtract_square   (interpreter, TensorFlow import, one case)
  all         --mode all                                  (the three core modes, numeric on)
  all+keras   --mode all,keras                            (and the five training-step modes)

With --keras 3 the steps are the Keras 3 ones (--mode all,keras3, harness.measure.modes.keras3_step)
and the floor's one-weight model is a Keras 3 model, built from a symbolic batch first as Keras 3's
fit does; the default, --keras 2, is tf_keras's.

The issue's budget is on the cost the five modes add: (all+keras - all) / (all - startup), the
cases' own time; the plain wall-clock ratio all+keras / all is printed beside it. A variant whose
run ends with failing verdicts (exit 1) is still timed; exit status 2 or a signal stops it.

With --breakdown it also times, in one process and without workers, each step mode's runner
and the three core modes' runners on every library case (`--runs` passes after a warm-up, the
median per part); the process splits its CPU into two logical devices first, as a worker does.
It then measures Keras's own floor: per mode, what a one-weight model (y = w * x, no custom
gradient, none of the harness's layer or optimizer) costs to build, compile, make its train
function and take the harness's two steps, times the models that mode built on the library (one
per case and input signature). That sum is what the five modes cost with nothing of the harness
in them, against the issue's budget.

Usage (from the repository root, on an otherwise idle machine):
  python scripts/bench_keras.py --runs 3
  python scripts/bench_keras.py --runs 1 --breakdown
  python scripts/bench_keras.py --runs 1 --breakdown --keras 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_modes import print_breakdown, timed  # noqa: E402
from bench_seeds import ROOT, tensorflow_version  # noqa: E402

VARIANTS = {
    "startup": ["--mode", "all", "--cases", "seeds.subtract_square"],
    "all": ["--mode", "all"],
    "all+keras": ["--mode", "all,keras"],
}
# Per Keras: the --mode group of its steps, and the module that runs them.
KERAS = {"2": ("keras", "harness.measure.modes.keras_step"),
         "3": ("keras3", "harness.measure.modes.keras3_step")}


def step_modes(which: str) -> tuple[str, ...]:
    from harness import mode_names  # noqa: PLC0415

    return mode_names.STEP_MODES if which == "2" else mode_names.KERAS3_MODES


def breakdown(runs: int, own: float, which: str) -> None:
    """Seconds per mode runner over the whole library, in this process; `own` is the cases' own time
    in a `--mode all` process (wall, less startup), the budget's unit; `which` Keras's steps."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, str(ROOT))
    from harness.measure.modes import _devices  # noqa: PLC0415

    _devices.split_cpu()  # before TensorFlow starts, as a worker does
    from harness.measure import modes  # noqa: PLC0415 - TensorFlow comes in here
    from harness.measure import probe  # noqa: PLC0415 - TensorFlow comes in here
    from harness.loader import builtin_cases  # noqa: PLC0415
    from harness.measure.modes import keras_step  # noqa: PLC0415
    from harness.records import RunOptions  # noqa: PLC0415

    probe.install()
    cases = builtin_cases()
    built = count_models(keras_step)
    parts: dict[str, list[float]] = {}
    for _ in range(runs + 1):  # the first pass warms caches and is not counted
        times: dict[str, float] = {}
        for case in cases:
            for mode in modes.CORE_MODES + step_modes(which):
                start = time.perf_counter()
                modes.runner(mode).run(case, RunOptions())
                times[mode] = times.get(mode, 0.0) + time.perf_counter() - start
        for name, seconds in times.items():
            parts.setdefault(name, []).append(seconds)
    print_breakdown(parts, len(cases), runs, modes.CORE_MODES, {"step modes": step_modes(which)})
    core = sum(statistics.median(parts[m][1:]) for m in modes.CORE_MODES)
    steps = sum(statistics.median(parts[m][1:]) for m in step_modes(which))
    per_pass = {name: count // (runs + 1) for name, count in built.items()}
    floor = print_floor(per_pass, core, own, runs, which)
    print(f"the step modes take {steps:.2f} s: {steps / floor:.2f} x Keras's own floor")


def count_models(keras_step) -> dict[str, int]:
    """Counts, per step mode, the models (`keras_step._Step`) built from now on."""
    built: dict[str, int] = {}
    make = keras_step._Step.__init__

    def counted(self, mode, *args, **kwargs):
        built[mode.name] = built.get(mode.name, 0) + 1
        make(self, mode, *args, **kwargs)

    keras_step._Step.__init__ = counted
    return built


def floor_seconds(mode_name: str, repeats: int, which: str) -> float:
    """Median seconds of one minimal model in step mode `mode_name`, as the harness drives one: a
    one-weight layer (y = w * x) under the mode's strategy and policy, compiled with the mode's
    options and plain SGD (Keras 3's built from a symbolic batch, as its fit does), its train
    function made on a distributed dataset's iterator and called twice."""
    import importlib  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415
    import tensorflow as tf  # noqa: PLC0415

    from harness.measure.modes import keras_step  # noqa: PLC0415

    steps = importlib.import_module(KERAS[which][1])
    module = keras_step.keras() if which == "2" else steps.keras3()
    mode = steps.runner_for(mode_name)

    class OneWeight(module.layers.Layer):
        def build(self, shape):
            self.w = self.add_weight(name="w", shape=(), initializer="ones")

        def call(self, x):
            return tf.reduce_sum(x, axis=1) * tf.cast(self.w, x.dtype)

    def one() -> float:
        start = time.perf_counter()
        strategy = keras_step._strategy() if mode.mirrored else tf.distribute.get_strategy()
        with strategy.scope(), keras_step._policy(module, "mixed_float16" if mode.mixed else None):
            model = module.Sequential([OneWeight()])
            model.build((None, 1))
            model.compile(optimizer=module.optimizers.SGD(0.5), loss=lambda _, y: y,
                          **mode.compile_options)
            arrays = (np.zeros((2, 1), np.float32), np.zeros((2,), np.float32))
            if which == "3":
                model._symbolic_build(data_batch=arrays)
            batch = tf.data.Dataset.from_tensors(arrays)
            iterator = iter(
                model.distribute_strategy.experimental_distribute_dataset(batch.repeat())
            )
            train = model.make_train_function() or model.train_function
            train(iterator)
            train(iterator)
        return time.perf_counter() - start

    one()  # warm-up
    return statistics.median(one() for _ in range(repeats))


def print_floor(built: dict[str, int], core: float, own: float, runs: int, which: str) -> float:
    """Keras's own floor per step mode, and its sum over the models the library needs (returned)."""
    print(f"\nKeras {which}'s own floor: a one-weight model per case and signature ({max(runs, 5)} "
          "models each, medians):")
    print(f"{'mode':<16} {'per model':>9} {'models':>7} {'floor':>8} {'vs the 3 core modes':>20}")
    total = 0.0
    for name in step_modes(which):
        each = floor_seconds(name, max(runs, 5), which)
        count = built.get(name, 0)
        total += each * count
        print(
            f"{name:<16} {each:8.3f}s {count:7d} {each * count:7.2f}s {each * count / core:20.2f}"
        )
    print(f"{'step modes':<16} {'':>9} {'':>7} {total:7.2f}s {total / core:20.2f}")
    print(f"the floor is {total / own:.2f} x the cases' own time in --mode all ({own:.2f} s)")
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3,
                        help="timed runs of each variant (default 3)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes (default 1: the steadiest figures)")
    parser.add_argument("--python", default=sys.executable, help="interpreter to run with")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time each mode's runner in this process")
    parser.add_argument("--keras", choices=sorted(KERAS), default="2",
                        help="whose training steps: 2 (tf_keras, the default) or 3 (Keras 3)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    variants = dict(VARIANTS, **{"all+keras": ["--mode", "all," + KERAS[args.keras][0]]})
    commands = {n: [args.python, "-m", "harness", f"--jobs={args.jobs}", *flags]
                for n, flags in variants.items()}
    print(f"tensorflow {tensorflow_version(args.python)}, jobs {args.jobs}, runs {args.runs}")
    # the first load of TensorFlow's libraries reads the disk
    timed("warm-up", commands["startup"], env)
    wall: dict[str, list[float]] = {n: [] for n in VARIANTS}
    cpu: dict[str, list[float]] = {n: [] for n in VARIANTS}
    for i in range(args.runs):
        for name in (list(VARIANTS) if i % 2 == 0 else list(reversed(VARIANTS))):
            w, c, summary = timed(name, commands[name], env)
            wall[name].append(w)
            cpu[name].append(c)
            print(f"run {i + 1}  {name:<10} wall {w:7.2f} s  cpu {c:7.2f} s  {summary}", flush=True)
    fixed, base, both = (statistics.median(wall[n]) for n in ("startup", "all", "all+keras"))
    print(f"\n{'variant':<10} {'median wall':>11} {'cpu':>8}")
    for name in VARIANTS:
        print(f"{name:<10} {statistics.median(wall[name]):9.2f} s "
              f"{statistics.median(cpu[name]):7.2f}s")
    print(f"\nthe five step modes add {both - base:.2f} s: {(both - base) / (base - fixed):.2f} x "
          f"the cases' own time in --mode all; all+keras / all = {both / base:.2f} (all+keras: "
          f"--mode {' '.join(variants['all+keras'][1:])})")
    if args.breakdown:
        breakdown(args.runs, own=base - fixed, which=args.keras)
    return 0


if __name__ == "__main__":
    sys.exit(main())
