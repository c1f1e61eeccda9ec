"""Measures what the numeric oracle and each extra mode cost on the whole case library.

Times whole processes of `python -m harness` on the library, N times each, by
wall clock (CPU time beside it), and prints each variant's median as a ratio
to the baseline, the three core modes without the numeric oracle:

  baseline       --mode all --nonumeric
  numeric        --mode all                      (the default: directions)
  numeric_full   --mode all --numeric_full       (every element)
  +no_autograph  --mode all,no_autograph --nonumeric
  +xla           --mode all,xla --nonumeric
  +forward       --mode all,forward --nonumeric
  +saved_model   --mode all,saved_model --nonumeric
  full           --mode full                     (every mode but saved_model_nocg, numeric on)

Every process includes interpreter start-up and the TensorFlow import
(several seconds), so the added seconds are printed beside the ratios, and a
`startup` run (the baseline on one cheap case, seeds.subtract_square) is
subtracted from every median to give the ratio of the cases' own time. A
variant whose run ends with failing verdicts (exit 1) is still timed; exit
status 2 or a signal stops the benchmark.

With --breakdown it also times, in one process and without workers, each
mode's runner and the oracles on every library case (`--runs` passes, the
median per part), which separates a small cost from the noise of whole
processes.

Usage (from the repository root):
  python scripts/bench_modes.py --runs 3
  python scripts/bench_modes.py --runs 3 --variants baseline,numeric,+xla
  python scripts/bench_modes.py --runs 3 --variants baseline --breakdown
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_seeds import ROOT, child_cpu, tensorflow_version  # noqa: E402

VARIANTS = {
    "startup": ["--mode", "all", "--nonumeric", "--cases", "seeds.subtract_square"],
    "baseline": ["--mode", "all", "--nonumeric"],
    "numeric": ["--mode", "all"],
    "numeric_full": ["--mode", "all", "--numeric_full"],
    "+no_autograph": ["--mode", "all,no_autograph", "--nonumeric"],
    "+xla": ["--mode", "all,xla", "--nonumeric"],
    "+forward": ["--mode", "all,forward", "--nonumeric"],
    "+saved_model": ["--mode", "all,saved_model", "--nonumeric"],
    "full": ["--mode", "full"],
}


def timed(name: str, command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    cpu, start = child_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed, cpu = time.perf_counter() - start, child_cpu() - cpu
    if done.returncode not in (0, 1):
        sys.stderr.write(f"{name} failed with exit status "
                         f"{done.returncode}:\n{done.stderr[-3000:]}\n")
        sys.exit(1)
    summary = (done.stdout.strip().splitlines() or [""])[-1]
    return elapsed, cpu, summary


def breakdown(runs: int) -> None:
    """Seconds per mode runner and for the oracles over the whole library, in this process."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, str(ROOT))
    from harness.measure import modes  # noqa: PLC0415 - TensorFlow comes in here
    from harness.measure import oracles  # noqa: PLC0415 - TensorFlow comes in here
    from harness.measure import probe  # noqa: PLC0415 - TensorFlow comes in here
    from harness.loader import builtin_cases  # noqa: PLC0415
    from harness.records import RunOptions, Status  # noqa: PLC0415

    probe.install()
    cases = builtin_cases()
    parts: dict[str, list[float]] = {}
    for _ in range(runs + 1):  # the first pass warms caches and is not counted
        times: dict[str, float] = {}
        for case in cases:
            eager = None
            for mode in modes.FULL_MODES:
                start = time.perf_counter()
                outcomes = modes.runner(mode).run(case, RunOptions())
                times[mode] = times.get(mode, 0.0) + time.perf_counter() - start
                eager = outcomes if mode == "eager" else eager
            for full, name in ((False, "numeric"), (True, "numeric_full")):
                start = time.perf_counter()
                for point, outcome in zip(case.points, eager):
                    if outcome.status is Status.OK:
                        oracles.consult(case, point, outcome, RunOptions(numeric_full=full))
                times[name] = times.get(name, 0.0) + time.perf_counter() - start
        for name, seconds in times.items():
            parts.setdefault(name, []).append(seconds)
    print_breakdown(parts, len(cases), runs, modes.CORE_MODES)


def print_breakdown(parts: dict, cases: int, runs: int, core_modes, totals: dict = ()) -> None:
    """The table of an in-process breakdown: each part's median (the first pass, a warm-up, left
    out) against the three core modes' sum, then each named total of parts (`totals`: name ->
    the parts it sums), the core modes first."""
    def median(name):
        return statistics.median(parts[name][1:])

    core = sum(median(m) for m in core_modes)
    print(f"\nin-process breakdown over {cases} cases ({runs} passes, medians):")
    print(f"{'part':<16} {'seconds':>8} {'vs the 3 core modes':>20}")
    for name in parts:
        print(f"{name:<16} {median(name):8.2f} {median(name) / core:20.2f}")
    for name, members in {"core modes": core_modes, **dict(totals)}.items():
        total = sum(median(m) for m in members)
        print(f"{name:<16} {total:8.2f} {total / core:20.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3,
                        help="timed runs of each variant (default 3)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes (default 1: the steadiest figures)")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma list from " + ",".join(VARIANTS))
    parser.add_argument("--python", default=sys.executable, help="interpreter to run with")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time each part in this process")
    args = parser.parse_args()
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown or args.runs < 1:
        parser.error(f"unknown variant {unknown[0]!r}" if unknown else "--runs must be at least 1")
    for required in ("baseline", "startup"):
        if required not in names:
            names.insert(0, required)

    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    commands = {n: [args.python, "-m", "harness", f"--jobs={args.jobs}", *VARIANTS[n]]
                for n in names}
    print(f"tensorflow {tensorflow_version(args.python)}, jobs {args.jobs}, runs {args.runs}")
    # the first load of TensorFlow's libraries reads the disk
    timed("warm-up", commands["baseline"], env)

    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for i in range(args.runs):
        for name in (names if i % 2 == 0 else list(reversed(names))):
            w, c, summary = timed(name, commands[name], env)
            wall[name].append(w)
            cpu[name].append(c)
            print(f"run {i + 1}  {name:<14} wall {w:7.2f} s  cpu {c:7.2f} s  {summary}", flush=True)

    base, base_cpu = statistics.median(wall["baseline"]), statistics.median(cpu["baseline"])
    fixed = statistics.median(wall["startup"])
    print(f"\n{'variant':<14} {'median wall':>11} {'ratio':>6} {'added':>8} {'cpu ratio':>9} "
          f"{'case-time ratio':>15}")
    for name in names:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        cases = (w - fixed) / (base - fixed) if name != "startup" else float("nan")
        print(f"{name:<14} {w:9.2f} s {w / base:6.2f} {w - base:+7.2f}s {c / base_cpu:9.2f} "
              f"{cases:15.2f}")
    if args.breakdown:
        breakdown(args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
