"""Measures the harness against the hand-written floors of ../shared/bench, side by side.

Two pairs of whole processes (TensorFlow import included), each run --runs times, the order of
the pair reversed every other round so that a drift in machine load hits both alike:
  generated: python -m harness --case_file BENCH/harness_generated.py   (200 order-2 cases, every
             check on: eager, function, graph, the numeric and upstream oracles, the probe)
             against python BENCH/floor_upstream_generated.py 200   (the same gradients and the
             same weighted chains by hand, no oracle)
  seeds:     python -m harness --mode all --cases 'seeds.*'
             against python BENCH/limit_seeds.py
For each it prints every run, the medians of wall time and of CPU time (user + sys of the process
and its workers), and the ratios harness / floor of both. It asserts nothing about time: exit
status 0 whatever the ratios, non-zero only when a run fails or the harness's generated run does
not pass every case. Run it with nothing else running: on two cores, anything else moves the
wall times.

Usage (from the repository root, ../shared beside it):
  python scripts/bench_floors.py --runs 3
  python scripts/bench_floors.py --runs 5 --only seeds --bench_dir /path/to/shared/bench
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT.parent / "shared" / "bench"
# The ratios the speed issue asks for (harness wall / floor wall): printed beside the figures.
TARGETS = {"generated": 0.8, "seeds": 1.0}


def pairs(bench: Path, python: str) -> dict[str, dict[str, list[str]]]:
    harness = [python, "-m", "harness"]
    return {
        "generated": {"harness": harness + ["--case_file", str(bench / "harness_generated.py")],
                      "floor": [python, str(bench / "floor_upstream_generated.py"), "200"]},
        "seeds": {"harness": harness + ["--mode", "all", "--cases", "seeds.*"],
                  "floor": [python, str(bench / "limit_seeds.py")]},
    }


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(name: str, command: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one run, and its output; exits with its status if it failed."""
    cpu, start = child_cpu(), time.perf_counter()
    # Both sides silence TensorFlow's C++ log the same way, so neither pays for lines the other
    # skips.
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, child_cpu() - cpu
    if done.returncode != 0:
        sys.stderr.write(f"{name} failed with exit status {done.returncode}:\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}\n")
        sys.exit(done.returncode if done.returncode > 0 else 1)
    return wall, cpu, done.stdout


def tensorflow_version(python: str) -> str:
    code = "import importlib.metadata as m; print(m.version('tensorflow'))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def measure(work: str, commands: dict[str, list[str]], runs: int) -> None:
    # One untimed run of each first: the first process to read TensorFlow's shared libraries
    # from disk would be charged for it.
    for side, command in commands.items():
        _, _, out = timed(f"{work} {side}", command)
        if work == "generated" and side == "harness" and "200 pass in" not in out:
            sys.stderr.write(f"the harness did not pass every generated case:\n{out[-2000:]}\n")
            sys.exit(1)
    wall: dict[str, list[float]] = {side: [] for side in commands}
    cpu: dict[str, list[float]] = {side: [] for side in commands}
    for i in range(runs):
        for side in (list(commands) if i % 2 == 0 else list(reversed(commands))):
            w, c, _ = timed(f"{work} {side}", commands[side])
            wall[side].append(w)
            cpu[side].append(c)
            print(f"{work:<9} run {i + 1}  {side:<7}  wall {w:6.2f} s  cpu {c:6.2f} s", flush=True)
    median = {side: statistics.median(wall[side]) for side in commands}
    median_cpu = {side: statistics.median(cpu[side]) for side in commands}
    for side in commands:
        print(f"{work:<9} {side:<7}  median wall {median[side]:6.2f} s  "
              f"cpu {median_cpu[side]:6.2f} s")
    ratio = median["harness"] / median["floor"]
    print(f"{work:<9} harness/floor: wall {ratio:.3f} (target <= {TARGETS[work]}: "
          f"{'met' if ratio <= TARGETS[work] else 'not met'}), "
          f"cpu {median_cpu['harness'] / median_cpu['floor']:.3f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each command")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter every command runs with")
    parser.add_argument("--bench_dir", default=str(BENCH),
                        help="the folder of the floors (default: ../shared/bench)")
    parser.add_argument("--only", choices=sorted(TARGETS), help="measure one pair only")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    bench = Path(args.bench_dir)
    if not (bench / "floor_upstream_generated.py").is_file():
        parser.error(f"no floors in {bench}: give --bench_dir the folder of floor_*.py")
    print(f"tensorflow {tensorflow_version(args.python)}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}")
    for work, commands in pairs(bench, args.python).items():
        if args.only in (None, work):
            measure(work, commands, args.runs)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
