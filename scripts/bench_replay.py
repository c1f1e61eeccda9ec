"""Measures a replay: each point's seconds (as the report gives them, the time its job took in
its worker) and the peak memory of every worker process, sampled from /proc while it runs.

    python scripts/bench_replay.py RECORDING [--jobs N] [-- EXTRA REPLAY FLAGS]

Prints one line per point over --slow seconds, the slowest points, the verdicts and each worker's
peak resident memory (VmHWM); Linux only. Run it with nothing else running.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _children(pid: int) -> set:
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        try:
            kids = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        for kid in map(int, kids):
            if kid not in found:
                found.add(kid)
                todo.append(kid)
    return found


def _peak_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recording")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--slow", type=float, default=10.0)
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.extra = extra
    out = Path(tempfile.mkdtemp()) / "replay.json"
    command = [sys.executable, "-m", "harness", "replay", args.recording, "--mode=all",
               f"--jobs={args.jobs}", f"--json_out={out}", *args.extra]
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peaks: dict = {}
    while proc.poll() is None:
        for pid in _children(proc.pid):
            peaks[pid] = max(peaks.get(pid, 0), _peak_kib(pid))
        time.sleep(0.2)
    wall = time.monotonic() - started
    stderr = proc.stderr.read()
    if not out.is_file():
        sys.stderr.write(stderr)
        return 1
    results = json.loads(out.read_text())["results"]
    seconds = sorted(((r["seconds"], r["case"], r["point"], r["verdict"]) for r in results),
                     reverse=True)
    verdicts: dict = {}
    for r in results:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    print(f"replay: {len(results)} points in {wall:.1f} s wall; verdicts {verdicts}")
    for s, case, point, verdict in seconds[:5]:
        print(f"  {s:8.1f} s  {verdict:7s} {case}[{point[:60]}]")
    over = [s for s in seconds if s[0] > args.slow]
    print(f"points over {args.slow:g} s: {len(over)}; the slowest {seconds[0][0]:.1f} s")
    worst = max(peaks.values(), default=0)
    print(f"processes: {len(peaks)}; the largest peak resident memory {worst / 1024:.0f} MiB; "
          f"each one's, largest first: "
          f"{', '.join(f'{kib / 1024:.0f}' for kib in sorted(peaks.values(), reverse=True))} MiB")
    print(stderr.strip().splitlines()[-1] if stderr.strip() else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
