"""What the upstream-gradient check costs : whole processes with it on and off.

Two workloads, each run as `python -m harness ...` with and without
`--noupstream`, alternating the order every round, and the medians compared:
  library: the built-in case library, `--mode all` and `--mode full`;
  suite:   the generated suite of scripts/_suite.py (N order-2 custom-gradient
           cases, N = --n, 200 by default), `--mode all`.
The ratio printed is (median wall time with the check) / (median without);
the target is at most 1.25. CPU time (user + sys of the process and its
workers) is printed beside it: on a shared machine wall times move with the
load, CPU times far less. Exit status: 0 whatever the figures; non-zero only
when a run itself fails.

Usage (from the repository root, with nothing else running):
  python scripts/bench_upstream.py --runs 3
  python scripts/bench_upstream.py --runs 5 --n 200 --python /path/to/venv/bin/python
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _suite  # noqa: E402 - the generator lives beside this script

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.25


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str], env: dict) -> tuple[float, float]:
    cpu, start = _cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - start
    # A fail verdict (exit 1) is a result too; only a usage error or a crash of the run is not.
    if done.returncode not in (0, 1):
        sys.exit(f"bench_upstream: {' '.join(command)} exited "
                 f"{done.returncode}:\n{done.stdout[-3000:]}")
    return wall, _cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3,
                        help="runs of each process (medians are compared)")
    parser.add_argument("--n", type=int, default=200, help="cases in the generated suite")
    parser.add_argument("--python", default=sys.executable,
                        help="the Python with TensorFlow and the harness")
    args = parser.parse_args()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    with tempfile.TemporaryDirectory() as folder:
        suite = Path(folder) / f"gen_{args.n}.py"
        suite.write_text(_suite.case_file(args.n))
        base = [args.python, "-m", "harness"]
        workloads = {
            "library --mode all": base + ["--mode", "all"],
            "library --mode full": base + ["--mode", "full"],
            f"suite of {args.n} order-2 cases --mode all": base
            + ["--case_file", str(suite), "--mode", "all"],
        }
        print(f"load average before: {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
        for name, command in workloads.items():
            times: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}
            for run in range(args.runs):
                order = ("on", "off") if run % 2 == 0 else ("off", "on")
                for which in order:
                    times[which].append(_timed(command
                                               + ([] if which == "on" else ["--noupstream"]), env))
            wall = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
            cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
            ratio = wall["on"] / wall["off"]
            print(f"{name}: with the check {wall['on']:.1f} s, without {wall['off']:.1f} s: ratio "
                  f"{ratio:.2f} (target <= {TARGET}); CPU {cpu['on']:.1f} s vs {cpu['off']:.1f} s: "
                  f"ratio {cpu['on'] / cpu['off']:.2f}")
        print(f"load average after: {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
