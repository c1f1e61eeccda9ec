"""What the numeric oracle costs on a heavy forward: a series summed by an eager tf.while_loop.

The case (written to a temporary case file) is the Gauss hypergeometric series 2F1(a, b; c; z)
summed term by term in a tf.while_loop until the terms stop mattering, with its custom gradient
d/dz 2F1(a, b; c; z) = ab/c 2F1(a+1, b+1; c+1; z), at three points (two scalars near the edge of
convergence, where a few hundred terms are needed, and a vector of four), to orders 1 and 2. In
eager mode a tf.while_loop runs its body in Python once per term, so every evaluation the oracle
makes at a shifted point costs what the eager mode's own forward does.

Each run is `python -m harness --case_file ... --mode all --jobs 1 --json_out ...`, with the
numeric oracle on and off (--nonumeric), alternating the order every round; the seconds per point
are the JSON report's per-result `seconds` (the case's time divided by its points, process start
excluded), and the medians of --runs rounds are printed. Give --root another checkout to measure
that one (its harness is imported from there). The figures move with the machine's load: compare
runs made side by side. It measures and prints; it asserts no time. Exit status: 0, or non-zero
when a run itself fails.

Usage (from the repository root):
  python scripts/bench_numeric.py --runs 3
  python scripts/bench_numeric.py --runs 3 --root ../other-checkout
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASE_FILE = '''
import numpy as np
import tensorflow as tf

from harness import Case


def series(a, b, c, z):
    """2F1(a, b; c; z), term by term in a tf.while_loop until a term is below 1e-17 of the sum."""
    def body(k, term, total):
        kf = tf.cast(k, z.dtype)
        term = term * (a + kf) * (b + kf) / ((c + kf) * (kf + 1.0)) * z
        return k + 1, term, total + term

    def more(k, term, total):
        return tf.reduce_any(tf.abs(term) > 1e-17 * tf.abs(total))

    one = tf.ones_like(z)
    return tf.while_loop(more, body, (tf.constant(0), one, one))[2]


@tf.custom_gradient
def hyp2f1(z):
    y = series(0.5, 1.5, 2.0, z)
    return y, lambda dy: dy * (0.5 * 1.5 / 2.0) * series(1.5, 2.5, 3.0, z)


CASES = [
    Case(id=f"bench.hyp2f1_order{order}", fn=hyp2f1, order=order, source="scripts/bench_numeric.py",
         description="2F1(1/2, 3/2; 2; z) by an eager tf.while_loop series, custom d/dz",
         points=[{"z": np.float64(0.9)}, {"z": np.float64(0.95)},
                 {"z": np.array([0.3, 0.6, 0.8, 0.9])}])
    for order in (1, 2)
]
'''


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _seconds(python: str, root: Path, case_file: Path, numeric: bool,
             folder: Path) -> tuple[list[float], float]:
    """Each result's seconds, and the CPU seconds of the whole run (its process and threads)."""
    report = folder / "report.json"
    command = [python, "-m", "harness", "--case_file", str(case_file), "--mode", "all",
               "--jobs", "1", "--timeout", "inf", "--json_out", str(report)]
    command += [] if numeric else ["--nonumeric"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(root))
    cpu = _cpu()
    done = subprocess.run(command, cwd=folder, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    cpu = _cpu() - cpu
    # A fail verdict (exit 1) is a result too; only a usage error or a crash of the run is not.
    if done.returncode not in (0, 1):
        sys.exit(f"bench_numeric: {' '.join(command)} exited {done.returncode}:\n"
                 f"{done.stdout[-3000:]}")
    results = json.loads(report.read_text())["results"]
    return [r["seconds"] for r in results], cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="rounds (medians are printed)")
    parser.add_argument("--root", default=str(ROOT), help="the checkout whose harness is measured")
    parser.add_argument("--python", default=sys.executable, help="the Python with TensorFlow")
    args = parser.parse_args()
    root = Path(args.root).resolve()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        case_file = folder / "bench_cases.py"
        case_file.write_text(CASE_FILE)
        per_point: dict[bool, list[float]] = {True: [], False: []}
        cpu: dict[bool, list[float]] = {True: [], False: []}
        for run in range(args.runs):
            for numeric in ((True, False) if run % 2 == 0 else (False, True)):
                seconds, used = _seconds(args.python, root, case_file, numeric, folder)
                per_point[numeric].append(sum(seconds) / len(seconds))
                cpu[numeric].append(used / len(seconds))
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average after: {load}; harness from {root}")
    on, off = (statistics.median(per_point[k]) for k in (True, False))
    print(f"seconds per point, median of {args.runs} (6 points, orders 1 and 2, modes eager, "
          f"function, graph): with the numeric oracle {on:.2f}, without {off:.2f}: the oracle's "
          f"share {on - off:.2f}")
    print("each round, with / without: " + ", ".join(
        f"{a:.2f} / {b:.2f}" for a, b in zip(per_point[True], per_point[False])))
    on, off = (statistics.median(cpu[k]) for k in (True, False))
    print(f"CPU seconds per point (the whole process, import included; less moved by the load): "
          f"with {on:.2f}, without {off:.2f}: the oracle's share {on - off:.2f}")


if __name__ == "__main__":
    main()
