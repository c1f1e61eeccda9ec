"""Measures the harness on a generated suite of order-2 custom-gradient cases.

scripts/_suite.py writes, into a temporary folder, for each size N: a case file
of N cases (an elementwise op f of s * x under @tf.custom_gradient, the grad_fn
its true derivative by hand; one or two np.float32 points each) and a
hand-written script computing the same orders in the same three modes (eager
nested tapes, one tf.function per case, one v1 graph per case fed in a Session).
It first checks once that the harness passes every case of the largest suite,
then times whole processes, alternating their order each round:
  python -m harness --case_file gen_N.py --jobs 1   (and --jobs 2)
  python hand_N.py
and prints, from the medians of the runs (wall clock, and CPU time as user +
sys of the process and its workers):
  (a) harness --jobs 1 / hand-written at N = --n     target <= 1.3
  (b) harness --jobs 1 / harness --jobs 2 at --n     target >= 1.6 (speed-up)
  (c) the totals at every size, with the slope (seconds per extra case) and
      the fixed cost (intercept) of a least-squares line through them.
The load average is printed before and after: on a shared machine wall times
move with it, CPU times far less. Exit status: 0 whatever the figures;
non-zero only when a run itself fails or the suite does not pass.

Usage (from the repository root):
  python scripts/bench_suite.py --runs 3
  python scripts/bench_suite.py --runs 5 --sizes 50,100,200 --n 200 --python
  /path/to/venv/bin/python
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _suite  # noqa: E402 - the generator lives beside this script

ROOT = Path(__file__).resolve().parent.parent
RATIO_TARGET = 1.3
SPEEDUP_TARGET = 1.6
KINDS = ("harness j1", "harness j2", "handwritten")


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def timed_run(name: str, command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds the process (with its waited-for workers) took; exits if it failed."""
    cpu, start = child_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed, cpu = time.perf_counter() - start, child_cpu() - cpu
    if done.returncode != 0:
        sys.stderr.write(f"{name} failed with exit status "
                         f"{done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}\n")
        sys.exit(done.returncode if done.returncode > 0 else 1)
    return elapsed, cpu


def commands(python: str, gen: Path, hand: Path) -> dict[str, list[str]]:
    harness = [python, "-m", "harness", "--mode", "all", "--case_file", str(gen)]
    return {"harness j1": harness + ["--jobs", "1"], "harness j2": harness + ["--jobs", "2"],
            "handwritten": [python, str(hand)]}


def fit(xs: list[int], ys: list[float]) -> tuple[float, float]:
    """Slope and intercept of the least-squares line through (xs, ys)."""
    if len(xs) < 2:
        return float("nan"), float("nan")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return slope, my - slope * mx


def verify(command: list[str], env: dict[str, str]) -> None:
    """Runs the harness once; stops the benchmark unless every case passes."""
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    summary = done.stdout.strip().splitlines()[-1:] or ["(no output)"]
    if done.returncode != 0:
        failing = [line for line in done.stdout.splitlines() if not line.startswith("PASS")]
        sys.stderr.write(f"the generated suite does not pass (exit status {done.returncode}):\n"
                         + "\n".join(failing[-60:]) + f"\n{done.stderr[-3000:]}\n")
        sys.exit(1)
    print(f"verified: {summary[0]}", flush=True)


def table_row(cells: list[str]) -> str:
    return "  ".join(f"{c:>15}" for c in cells)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3,
                        help="timed runs of each command at each size (default 3)")
    parser.add_argument("--sizes", default="50,100,200",
                        help="suite sizes for the growth table (default 50,100,200)")
    parser.add_argument("--n", type=int, default=200,
                        help="suite size for figures (a) and (b) (default 200)")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter to run everything with")
    parser.add_argument("--keep", action="store_true",
                        help="keep the generated suites (default: removed)")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()} | {args.n})
    if args.runs < 1 or sizes[0] < 1:
        parser.error("--runs and every size must be at least 1")

    # The harness sets this itself (setdefault); give the hand-written script the same.
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    folder = Path(tempfile.mkdtemp(prefix="bench-suite-"))
    try:
        return measure(args, sizes, env, folder)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


def measure(args: argparse.Namespace, sizes: list[int], env: dict[str, str], folder: Path) -> int:
    cmds = {n: commands(args.python, *_suite.write(folder, n)) for n in sizes}
    print(f"python {args.python}, {os.cpu_count()} cores, sizes {sizes}, {args.runs} runs, suites "
          f"in {folder}")
    print(f"load average (1/5/15 min) at start: {load()}", flush=True)

    # Also the untimed first run that reads TensorFlow's libraries from disk.
    verify(cmds[sizes[-1]]["harness j1"], env)
    timed_run("handwritten", cmds[sizes[-1]]["handwritten"], env)

    wall = {(n, k): [] for n in sizes for k in KINDS}
    cpu = {(n, k): [] for n in sizes for k in KINDS}
    for i in range(args.runs):
        for n in sizes:
            # Rotate the order each round, so a drift in machine load hits all alike.
            for kind in KINDS[i % 3:] + KINDS[:i % 3]:
                w, c = timed_run(kind, cmds[n][kind], env)
                wall[n, kind].append(w)
                cpu[n, kind].append(c)
                print(f"run {i + 1}  N={n:<4} {kind:<11}  wall {w:7.2f} s  cpu {c:7.2f} s  load "
                      f"{load()}",
                      flush=True)
    print(f"load average (1/5/15 min) at end: {load()}")

    med = {key: statistics.median(v) for key, v in wall.items()}
    med_cpu = {key: statistics.median(v) for key, v in cpu.items()}
    print("\n(c) medians in seconds, wall / cpu")
    print(table_row(["N"] + list(KINDS)))
    for n in sizes:
        print(table_row([str(n)] + [f"{med[n, k]:.2f} / {med_cpu[n, k]:.2f}" for k in KINDS]))
    slopes = {}
    for label, source in (("wall", med), ("cpu", med_cpu)):
        fits = [fit(sizes, [source[n, k] for n in sizes]) for k in KINDS]
        slopes[label] = dict(zip(KINDS, (s for s, _ in fits)))
        print(table_row([f"{label} s/case"] + [f"{s:.4f}" for s, _ in fits]))
        print(table_row([f"{label} fixed"] + [f"{b:.2f}" for _, b in fits]))
    for a, b in zip(sizes, sizes[1:]):
        print(table_row([f"{a}->{b} s/case"]
                        + [f"{(med[b, k] - med[a, k]) / (b - a):.4f}" for k in KINDS]))

    n = args.n
    ratio = med[n, "harness j1"] / med[n, "handwritten"]
    ratio_cpu = med_cpu[n, "harness j1"] / med_cpu[n, "handwritten"]
    speedup = med[n, "harness j1"] / med[n, "harness j2"]
    print(f"\n(a) N={n} harness --jobs 1 / handwritten: wall {ratio:.3f} (cpu {ratio_cpu:.3f})  "
          f"target <= {RATIO_TARGET}  {'met' if ratio <= RATIO_TARGET else 'NOT met'}")
    print(f"(b) N={n} speed-up --jobs 2 over --jobs 1: wall {speedup:.3f} "
          f"(cpu j2/j1 {med_cpu[n, 'harness j2'] / med_cpu[n, 'harness j1']:.3f})  "
          f"target >= {SPEEDUP_TARGET}  {'met' if speedup >= SPEEDUP_TARGET else 'NOT met'}")
    # What --jobs 2 does to the per-case part alone, without the fixed cost (TensorFlow import).
    print(f"    per-case slope speed-up (wall s/case j1 / j2): "
          f"{slopes['wall']['harness j1'] / slopes['wall']['harness j2']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
