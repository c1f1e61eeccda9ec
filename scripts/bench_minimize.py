"""Measures repro --minimize on the padded case (tests/data/padded.py).

Runs, N times, by wall clock:
  python -m harness repro tests/data/padded.py:padded --inputs 1.5 --out TMP --minimize
and prints, per run, the whole command's wall and CPU seconds, the minimiser's own
seconds and candidates (from its summary line) and the script's lines before and after.
The whole command includes the harness run that finds the deviation and the final
check of the script in a fresh process. Exit status: 0 unless a run fails.

Usage (from the repository root, on an otherwise idle machine):
  python scripts/bench_minimize.py --runs 3
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"minimised repro\.py from (\d+) to (\d+) lines in (\d+) s, (\d+) candidates "
                     r"tried")


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--budget", type=float, default=600.0, help="--minimize_seconds")
    args = parser.parse_args()
    walls = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as out:
            command = [args.python, "-m", "harness", "repro", "tests/data/padded.py:padded",
                       "--inputs=1.5", f"--out={out}", "--minimize",
                       f"--minimize_seconds={args.budget:g}"]
            cpu, start = child_cpu(), time.perf_counter()
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
            wall, cpu = time.perf_counter() - start, child_cpu() - cpu
            found = SUMMARY.search(done.stdout)
            if found is None or not (Path(out) / "repro.py").exists():
                sys.stderr.write(f"run {run + 1} failed (exit "
                                 f"{done.returncode}):\n{done.stderr[-3000:]}\n")
                return 1
            before, after, seconds, candidates = map(int, found.groups())
            walls.append(wall)
            print(f"run {run + 1}: {wall:.1f} s wall, {cpu:.1f} s CPU for the command; minimiser "
                  f"{seconds} s, {candidates} candidates ({candidates / max(seconds, 1):.1f} a "
                  f"second); repro.py {before} -> {after} lines", flush=True)
    print(f"median wall: {statistics.median(walls):.1f} s over {len(walls)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
