"""How long the reviewed expectations file takes to load: a file of N entries (default 40,000),
written here as --harness-accept writes one (each entry a function of its own, some listing
points), read with harness.record.expectations.load, which checks every entry and every overlap
and finds each entry's line. The target: under a second for 40,000 entries (a scan of the whole
text per entry, to find its line, once took 103 s). No TensorFlow.

Usage (from the repository root):
  python scripts/bench_expectations_load.py --entries 40000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.record import expectations  # noqa: E402

TARGET = 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=40000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    entries = [{"function": f"recorded.lib.module{i % 97}.function{i}",
                "points": "*" if i % 3 else [f"x=float32[{i % 5},{i % 7}]"],
                "expect": "function,graph:OperatorNotAllowedInGraphError" if i % 2
                else "numeric:values differ",
                "reason": "the agreed values differ from the numeric derivative at order 1; "
                          "accepted from a run under TensorFlow 2.21.0",
                "accepted": {"tensorflow": "2.21.0", "code": f"{i:012x}"}}
               for i in range(args.entries)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / expectations.FILE_NAME
        path.write_text(json.dumps({"schema": expectations.SCHEMA, "expected": entries},
                                   indent=1))
        seconds = []
        for _ in range(args.runs):
            started = time.perf_counter()
            loaded = expectations.load(path)
            seconds.append(time.perf_counter() - started)
        assert len(loaded) == args.entries
    median = statistics.median(seconds)
    print(f"expectations load: {args.entries} entries in {median:.3f} s (median of {args.runs}; "
          f"target < {TARGET:g} s): "
          f"{'met' if median < TARGET else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
