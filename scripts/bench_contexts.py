"""What the contexts cost: the built-in library under `--mode all,contexts` against `--mode all`.

Each round runs both, alternating which goes first; the medians' ratio is printed, with the target
of at most 2.0 (the contexts issue's). Wall time of the whole command, workers and oracles
included, as a user waits for it.

Usage (from the repository root, with nothing else running):
  python scripts/bench_contexts.py --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 2.0


def _timed(modes: str) -> float:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "harness", f"--mode={modes}"], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"bench_contexts: --mode={modes} exited {done.returncode}:\n"
                 f"{done.stdout[-3000:]}")
    print(f"  --mode={modes}: {seconds:.1f} s, {done.stdout.strip().splitlines()[-1]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="rounds of both runs")
    args = parser.parse_args()
    plain, contexts = [], []
    for i in range(args.runs):
        order = ("all", "all,contexts") if i % 2 == 0 else ("all,contexts", "all")
        for modes in order:
            (plain if modes == "all" else contexts).append(_timed(modes))
    a, b = statistics.median(plain), statistics.median(contexts)
    print(f"median --mode all {a:.1f} s, --mode all,contexts {b:.1f} s: ratio {b / a:.2f} "
          f"(target at most {TARGET})")


if __name__ == "__main__":
    main()
