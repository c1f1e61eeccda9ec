"""What the linearity and direction checks cost: this checkout against one without them.

Two workloads, each run with this checkout's harness and with a checkout of the commit before the
checks (`--before`, a `git worktree` of it), alternating the order every round, medians compared:
  library: the built-in cases both checkouts have (every module but surrogates), `--mode all`;
  larq:    larq 0.14.0's quantizer tests under `--harness-check` (needs `--larq_python`, an
           environment with larq, tf-keras and the harness's test extra; TF_USE_LEGACY_KERAS=1).
The harness a run uses is chosen by PYTHONPATH, which comes before an editable install.
The ratio printed is (median with the checks) / (median without); the target is at most 1.10.

Usage (from the repository root, with nothing else running):
  git worktree add /tmp/before <commit before the checks>
  python scripts/bench_surrogates.py --before /tmp/before --runs 3 --larq_python /path/bin/python
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.10
MODULES = ("docs", "dtypes", "keras", "keras3", "patterns", "regressions", "seeds", "structure",
           "training", "variables")


def _timed(command: list[str], env: dict, cwd: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"bench_surrogates: {' '.join(command)} exited {done.returncode}:\n"
                 f"{done.stdout[-3000:]}")
    return time.perf_counter() - start


def _library(python: str, tree: Path, folder: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree), TF_CPP_MIN_LOG_LEVEL="2")
    cases = ",".join(f"{m}.*" for m in MODULES)
    return _timed([python, "-m", "harness", "--mode=all", f"--cases={cases}"], env, folder)


def _larq(python: str, tree: Path, folder: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree), TF_CPP_MIN_LOG_LEVEL="2",
               TF_USE_LEGACY_KERAS="1", CI="1")
    check = tempfile.mkdtemp(dir=folder)
    return _timed([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
                   "larq.quantizers_test", "--pyargs", "larq.layers_test",
                   f"--harness-check={check}"], env, folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, type=Path,
                        help="a checkout of the commit before the checks")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--larq_python", default="")
    args = parser.parse_args()
    workloads = [("library", _library, args.python)]
    if args.larq_python:
        workloads.append(("larq", _larq, args.larq_python))
    with tempfile.TemporaryDirectory() as folder:
        for name, run, python in workloads:
            times: dict[str, list[float]] = {"with": [], "without": []}
            for i in range(args.runs):
                order = [("with", ROOT), ("without", args.before)]
                for label, tree in (order if i % 2 == 0 else order[::-1]):
                    times[label].append(run(python, tree, folder))
            with_, without = (statistics.median(times[k]) for k in ("with", "without"))
            print(f"{name}: with the checks {with_:.1f} s, without {without:.1f} s (medians of "
                  f"{args.runs}): {with_ / without:.3f}x (target {TARGET:.2f}x)")


if __name__ == "__main__":
    main()
