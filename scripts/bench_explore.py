"""How fast explore judges examples: examples per second after warm-up.

A scalar order-2 custom-gradient function (cases/seeds.py:custom_square) is explored
over x=[-10, 10] in the three core modes with the oracles on (the defaults: numeric
and upstream), through the same worker pool and judging as `python -m harness
explore`. No example fails, so the search draws every one of --examples. The figure
is the rate over the examples after the first --warmup (the first traces the
tf.function and builds the graph; later ones of that signature only call and feed).
The target is at least 50 examples a second. The load average is printed beside it:
on a shared machine the figure is pessimistic.

Usage (from the repository root):
  python scripts/bench_explore.py --examples 200
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import loader  # noqa: E402
from harness.explore import search as explore  # noqa: E402
from harness.judge import judging  # noqa: E402
from harness.process import pool  # noqa: E402
from harness.checking import CheckSpec  # noqa: E402
from harness.measure.modes import CORE_MODES  # noqa: E402
from harness.records import RunOptions  # noqa: E402
from harness.jobs import Job  # noqa: E402
from harness.process.worker import Origins  # noqa: E402

TARGET = 50.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    domain = explore.parse_domain("x=[-10, 10]")
    spec = CheckSpec(target=str(ROOT / "cases" / "seeds.py") + ":custom_square", inputs=(), order=2,
                     domains=(domain,))
    runner = pool.WorkerPool(300.0, Origins(library=False, check=spec))
    options = RunOptions()
    stamps: list[float] = []
    try:
        environment, catalogue = runner.start()
        (info,) = loader.select(catalogue, ["check.custom_square"])

        def measure(values):
            label = explore.label_of(values)
            job = Job(case_id=info.id, order=info.order, points=(label,), modes=CORE_MODES,
                      options=options, strict_xpass=False, reruns=((label, ""),),
                      values=tuple(values))
            done = judging.judged(next(iter(runner.run([job], lambda job: None,
                                                       1))), {info.id: info}, environment)
            result = done.results[0]
            stamps.append(time.monotonic())
            return result

        start = time.monotonic()
        found = explore.search(info, [domain], measure, examples=args.examples, seed=args.seed,
                               key="bench", database=None)
    finally:
        runner.close()
    if found.result is not None:
        print(f"an example failed: {found.result.reason}")
        return 1
    warm = stamps[args.warmup:]
    rate = (len(warm) - 1) / (warm[-1] - warm[0]) if len(warm) > 1 else float("nan")
    load = os.getloadavg()
    print(f"{len(stamps)} examples in {stamps[-1] - start:.1f} s; after the first {args.warmup}: "
          f"{rate:.1f} examples/s (target {TARGET:g}); load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
