"""Measures what the five training-step modes cost on the whole case library, against `--mode all`.

Times whole processes of `python -m harness` on the library, N times each, by wall clock (CPU
time beside it), and prints each variant's median against `--mode all`:

  startup     --mode all --cases seeds.subtract_square   (interpreter, TensorFlow import, one case)
  all         --mode all                                  (the three core modes, numeric on)
  all+keras   --mode all,keras                            (and the five training-step modes)

The issue's budget is on the cost the five modes add: (all+keras - all) / (all - startup), the
cases' own time; the plain wall-clock ratio all+keras / all is printed beside it. A variant whose
run ends with failing verdicts (exit 1) is still timed; exit status 2 or a signal stops it.

With --breakdown it also times, in one process and without workers, each step mode's runner
and the three core modes' runners on every library case (`--runs` passes after a warm-up, the
median per part); the process splits its CPU into two logical devices first, as a worker does.

Usage (from the repository root, on an otherwise idle machine):
  python scripts/bench_keras.py --runs 3
  python scripts/bench_keras.py --runs 1 --breakdown
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


def breakdown(runs: int) -> None:
    """Seconds per mode runner over the whole library, in this process."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, str(ROOT))
    from harness.modes import _devices  # noqa: PLC0415

    _devices.split_cpu()  # before TensorFlow starts, as a worker does
    from harness import modes, probe  # noqa: PLC0415 - TensorFlow comes in here
    from harness.loader import builtin_cases  # noqa: PLC0415
    from harness.records import RunOptions  # noqa: PLC0415

    probe.install()
    cases = builtin_cases()
    parts: dict[str, list[float]] = {}
    for _ in range(runs + 1):  # the first pass warms caches and is not counted
        times: dict[str, float] = {}
        for case in cases:
            for mode in modes.CORE_MODES + modes.STEP_MODES:
                start = time.perf_counter()
                modes.runner(mode).run(case, RunOptions())
                times[mode] = times.get(mode, 0.0) + time.perf_counter() - start
        for name, seconds in times.items():
            parts.setdefault(name, []).append(seconds)
    print_breakdown(parts, len(cases), runs, modes.CORE_MODES, {"step modes": modes.STEP_MODES})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each variant (default 3)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1: the steadiest figures)")
    parser.add_argument("--python", default=sys.executable, help="interpreter to run with")
    parser.add_argument("--breakdown", action="store_true", help="also time each mode's runner in this process")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    commands = {n: [args.python, "-m", "harness", f"--jobs={args.jobs}", *flags] for n, flags in VARIANTS.items()}
    print(f"tensorflow {tensorflow_version(args.python)}, jobs {args.jobs}, runs {args.runs}")
    timed("warm-up", commands["startup"], env)  # the first load of TensorFlow's libraries reads the disk
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
        print(f"{name:<10} {statistics.median(wall[name]):9.2f} s {statistics.median(cpu[name]):7.2f}s")
    print(f"\nthe five step modes add {both - base:.2f} s: {(both - base) / (base - fixed):.2f} x the cases' own time "
          f"in --mode all (budget 2.00); all+keras / all = {both / base:.2f}")
    if args.breakdown:
        breakdown(args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
