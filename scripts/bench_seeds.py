"""Measures the harness's overhead on the seed cases against hand-written TensorFlow.

Times whole processes, N times each, by wall clock:
  (a) python -m harness --mode all --cases 'seeds.*'
  (b) python scripts/_handwritten_seeds.py, the same values computed by hand in
      the same three modes (eager, tf.function, v1 graph and Session).
Both include interpreter start-up and the TensorFlow import, which dominate.
The ratio of the wall-clock medians (harness / hand-written) is the cost of the
harness; the target is <= 1.10. CPU time (user + sys) is printed beside it, as
on a shared machine it moves far less than wall time.

The hand-written script's exit includes the interpreter's teardown of TensorFlow
(1.6 s when this was written), which a harness worker skips (it ends with os._exit once its
results are sent). So a third command, (c) the same script with --skip_teardown,
exiting the same way, gives a second ratio: the harness's cost over hand-written
code that also skips it. Exit status: 0 whatever the ratios; non-zero only when a
run itself fails.

Usage (from the repository root):
  python scripts/bench_seeds.py --runs 5
  python scripts/bench_seeds.py --runs 5 --python /path/to/venv/bin/python
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
TARGET = 1.10


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(name: str, command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds the process took; exits with its status if it failed."""
    cpu, start = child_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed, cpu = time.perf_counter() - start, child_cpu() - cpu
    if done.returncode != 0:
        sys.stderr.write(f"{name} failed with exit status "
                         f"{done.returncode}:\n{done.stderr[-3000:]}\n")
        sys.exit(done.returncode if done.returncode > 0 else 1)
    return elapsed, cpu


def tensorflow_version(python: str) -> str:
    # Read from the package metadata, so asking costs no TensorFlow import.
    code = "import importlib.metadata as m; print(m.version('tensorflow'))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return done.stdout.strip() or f"unknown ({done.stderr.strip()[-200:]})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5,
                        help="timed runs of each command (default 5)")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter to run every command with")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    # The harness silences TensorFlow's C++ logging itself (setdefault); give the
    # hand-written script the same, so neither pays for log lines the other skips.
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    cmds = {"harness": [args.python, "-m", "harness", "--mode", "all", "--cases", "seeds.*"],
            "handwritten": [args.python, str(ROOT / "scripts" / "_handwritten_seeds.py")],
            "no_teardown": [args.python, str(ROOT / "scripts" / "_handwritten_seeds.py"),
                            "--skip_teardown"]}
    print(f"tensorflow {tensorflow_version(args.python)}, python {args.python}")

    # One untimed run of each first: the first process to load TensorFlow's
    # shared libraries reads them from disk, which would penalize whichever went first.
    for name, command in cmds.items():
        timed_run(name, command, env)

    wall: dict[str, list[float]] = {name: [] for name in cmds}
    cpu: dict[str, list[float]] = {name: [] for name in cmds}
    for i in range(args.runs):
        # Reverse the order every other round, so a drift in machine load hits all alike.
        for name in (list(cmds) if i % 2 == 0 else list(reversed(cmds))):
            w, c = timed_run(name, cmds[name], env)
            wall[name].append(w)
            cpu[name].append(c)
            print(f"run {i + 1}  {name:<11}  wall {w:.3f} s  cpu {c:.3f} s", flush=True)

    median = {name: statistics.median(t) for name, t in wall.items()}
    median_cpu = {name: statistics.median(t) for name, t in cpu.items()}
    for name in cmds:
        print(f"{name:<11}  median wall {median[name]:.3f} s  cpu {median_cpu[name]:.3f} s")
    ratio = median["harness"] / median["handwritten"]
    print(f"ratio harness/handwritten (wall medians) {ratio:.3f}  target <= {TARGET}  "
          f"{'met' if ratio <= TARGET else 'NOT met'}")
    print("ratio harness/handwritten (cpu medians)  "
          f"{median_cpu['harness'] / median_cpu['handwritten']:.3f}")
    print("ratio harness/no_teardown (wall medians) "
          f"{median['harness'] / median['no_teardown']:.3f}  "
          "(the hand-written script exiting as a worker does, without the interpreter's teardown)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
