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
(several seconds), so the added seconds are printed beside the ratios. A
variant whose run ends with failing verdicts (exit 1) is still timed; exit
status 2 or a signal stops the benchmark.

Usage (from the repository root):
  python scripts/bench_modes.py --runs 3
  python scripts/bench_modes.py --runs 3 --variants baseline,numeric,+xla
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
        sys.stderr.write(f"{name} failed with exit status {done.returncode}:\n{done.stderr[-3000:]}\n")
        sys.exit(1)
    summary = (done.stdout.strip().splitlines() or [""])[-1]
    return elapsed, cpu, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each variant (default 3)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1: the steadiest figures)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma list from " + ",".join(VARIANTS))
    parser.add_argument("--python", default=sys.executable, help="interpreter to run with")
    args = parser.parse_args()
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown or args.runs < 1:
        parser.error(f"unknown variant {unknown[0]!r}" if unknown else "--runs must be at least 1")
    if "baseline" not in names:
        names.insert(0, "baseline")

    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    commands = {n: [args.python, "-m", "harness", f"--jobs={args.jobs}", *VARIANTS[n]] for n in names}
    print(f"tensorflow {tensorflow_version(args.python)}, jobs {args.jobs}, runs {args.runs}")
    timed("warm-up", commands["baseline"], env)  # the first load of TensorFlow's libraries reads the disk

    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for i in range(args.runs):
        for name in (names if i % 2 == 0 else list(reversed(names))):
            w, c, summary = timed(name, commands[name], env)
            wall[name].append(w)
            cpu[name].append(c)
            print(f"run {i + 1}  {name:<14} wall {w:7.2f} s  cpu {c:7.2f} s  {summary}", flush=True)

    base, base_cpu = statistics.median(wall["baseline"]), statistics.median(cpu["baseline"])
    print(f"\n{'variant':<14} {'median wall':>11} {'ratio':>6} {'added':>8} {'cpu ratio':>9}")
    for name in names:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"{name:<14} {w:9.2f} s {w / base:6.2f} {w - base:+7.2f}s {c / base_cpu:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
