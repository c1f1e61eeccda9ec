"""Measures what recording costs a test session, and what replay costs per point.

Two measurements, each by whole processes, N times, wall clock (CPU time beside it):

  recording: the same pytest session without and with --harness-record=DIR. The target is a
    ratio of CPU-time medians <= 1.05 (CPU_TARGET: within 5% of the suite's CPU time), and of
    wall-clock medians <= 1.20 (RECORD_TARGET). By default the session is
    tests/data/record_project's tests; give the larq suite with --python (an environment with
    larq 0.14.0) and --suite, e.g.
      --suite "--pyargs larq.quantizers_test larq.layers_test" --env TF_USE_LEGACY_KERAS=1
    or --hot N: one test calling one custom gradient N times (default 100000) with the same
    value, the case where looking at every call for a new point would cost the most.
  replay: the record_project recording replayed (python -m harness replay DIR) against a case
    file holding the same functions at the same recorded values (written here from the
    recording: the importable functions, with fn= and their points), run with
    python -m harness --case_file; both with --cases for the same functions, so both run the
    same points. The ratio of wall-clock medians per point is replay's cost; the target is ~1.

Both include interpreter start-up and the TensorFlow import, which dominate; run it on an idle
machine. Exit status: 0 whatever the ratios; non-zero only when a run itself fails.

Usage (from the repository root):
  python scripts/bench_record.py --runs 5
  python scripts/bench_record.py --runs 3 --check --skip_replay \
      --python /path/to/tfp-venv/bin/python \
      --suite "/path/to/tfp/special_test.py -k 'Dawsn or Erfcx'"
  python scripts/bench_record.py --runs 3 --python /path/to/larq-venv/bin/python \
      --suite "--pyargs larq.quantizers_test larq.layers_test" --env TF_USE_LEGACY_KERAS=1
      --skip_replay
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "tests" / "data" / "record_project"
RECORD_TARGET = 1.20
CPU_TARGET = 1.05


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], cwd: str, env: dict, ok=(0,)) -> tuple[float, float]:
    cpu, start = child_cpu(), time.monotonic()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if proc.returncode not in ok:
        sys.exit(f"{shlex.join(command)} exited "
                 f"{proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return seconds, child_cpu() - cpu


def plugin_args(python: str) -> list[str]:
    """Load the recording plugin by its entry point where the install registered it, else by module
    (naming the module where the entry point exists registers it twice, which pytest refuses)."""
    probe = ("from importlib.metadata import entry_points; "
             "print(any(e.name == 'harness-record' for e in entry_points(group='pytest11')))")
    found = subprocess.run([python, "-c", probe], capture_output=True,
                           text=True).stdout.strip() == "True"
    return ["-p", "harness-record"] if found else ["-p", "harness.record.plugin"]


def medians(command: list[str], cwd: str, env: dict, runs: int, ok=(0,)) -> tuple[float, float]:
    walls, cpus = zip(*(timed(command, cwd, env, ok) for _ in range(runs)))
    return statistics.median(walls), statistics.median(cpus)


HOT_TEST = """
import tensorflow as tf


@tf.custom_gradient
def square(x):
    def grad(dy):
        return 2.0 * x * dy
    return x * x, grad


def test_the_same_call_again_and_again():
    x = tf.constant([1.0, 2.0])
    for _ in range({calls}):
        square(x)
"""


def bench_recording(args, work: Path, env: dict) -> None:
    folder = work / "project"
    cwd = str(folder) if not args.suite else str(work)
    suite = shlex.split(args.suite) if args.suite else ["tests"]
    if args.hot:
        (work / "hot").mkdir()
        (work / "hot" / "test_hot.py").write_text(HOT_TEST.format(calls=args.hot))
        cwd, suite = str(work / "hot"), ["test_hot.py"]
    base = [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin_args(args.python),
            *suite]
    # The suite's own exit status (larq's has errors under recent TensorFlow) is the same either
    # way.
    ok = tuple(range(0, 6))
    plain = medians(base, cwd, env, args.runs, ok)
    recording = medians(base + [f"--harness-record={work / 'rec-bench'}"], cwd, env, args.runs, ok)
    print(f"recording: session without {plain[0]:.2f} s wall ({plain[1]:.2f} s CPU), with "
          f"--harness-record {recording[0]:.2f} s wall ({recording[1]:.2f} s CPU): ratio "
          f"{recording[0] / plain[0]:.3f} wall, {recording[1] / plain[1]:.3f} CPU (targets <= "
          f"{RECORD_TARGET} wall, <= {CPU_TARGET} CPU)")
    if args.eager:
        eager = medians(base
                        + [f"--harness-record={work / 'rec-eager'}", "--harness-record-eager"], cwd,
                        env, args.runs, ok)
        print(f"recording with --harness-record-eager: {eager[0]:.2f} s wall ({eager[1]:.2f} s "
              f"CPU): ratio {eager[0] / plain[0]:.3f} wall to the session without recording; "
              f"{_drawn(work / 'rec-bench')} drawn points without it, {_drawn(work / 'rec-eager')} "
              "with it")


def bench_check(args, work: Path, env: dict) -> None:
    """The whole session under --harness-check, and what its last line says of the replay: the
    points and the replay's own seconds (median over the runs)."""
    cwd = str(work / "project") if not args.suite else str(work)
    suite = shlex.split(args.suite) if args.suite else ["tests"]
    base = [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin_args(args.python),
            *suite]
    walls, cpus, replays, said = [], [], [], ""
    for run in range(args.runs):
        command = base + [f"--harness-check={work / f'check-{run}'}"]
        cpu, start = child_cpu(), time.monotonic()
        proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
        walls.append(time.monotonic() - start)
        cpus.append(child_cpu() - cpu)
        lines = [line for line in proc.stdout.splitlines()
                 if line.startswith("harness check: ") and " replayed in " in line]
        if not lines:
            sys.exit(f"{shlex.join(command)} said no replay:\n{proc.stdout[-2000:]}")
        said = lines[0]
        replays.append(float(said.split(" replayed in ")[1].split(" s")[0]))
    print(f"--harness-check: session {statistics.median(walls):.2f} s wall "
          f"({statistics.median(cpus):.2f} s CPU), of which the replay "
          f"{statistics.median(replays):.1f} s; its line: {said}")


def _drawn(folder: Path) -> int:
    sys.path.insert(0, str(ROOT))
    from harness.record import store  # noqa: PLC0415

    data = store.read(str(folder))
    return sum(1 for f in data["functions"] for p in f["points"]
               if any("spec" in a for a in p["args"]))


def case_file(recorded: Path, out: Path) -> list[str]:
    """A case file with the recording's importable functions at their recorded values; their ids."""
    sys.path.insert(0, str(ROOT))
    from harness.record import store  # noqa: PLC0415

    data = store.read(str(recorded))
    lines = ["import numpy as np", "from harness import Case", "from mylib import ops", "",
             "CASES = ["]
    ids = []
    for f in data["functions"]:
        if not f["importable"] or any("array" not in a for p in f["points"] for a in p["args"]):
            continue
        session = Path(data["folder"])
        points = ", ".join("{" + ", ".join(f"{n!r}: np.load({str(session / a['array'])!r})"
                                           for n, a in zip(f["parameters"], p["args"])) + "}"
                           for p in f["points"])
        ids.append(f"recorded.{f['module']}.{f['qualname']}")
        lines.append(f"    Case(id={ids[-1]!r}, fn=ops.{f['qualname']}, points=[{points}], "
                     "source='bench', description='the recorded function, written as a case'),")
    out.write_text("\n".join(lines + ["]", ""]))
    return ids


def bench_replay(args, work: Path, env: dict) -> None:
    folder = work / "project"
    recorded = work / "rec"
    proc = subprocess.run([args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *plugin_args(args.python), "tests",
                           f"--harness-record={recorded}"], cwd=folder, env=env,
                          capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"recording record_project failed:\n{proc.stdout[-2000:]}")
    ids = case_file(recorded, work / "cases_file.py")
    env = dict(env, PYTHONPATH=os.pathsep.join([str(ROOT), str(folder)]))
    selection = f"--cases={','.join(ids)}"
    common = ["--mode=all", selection, "--jobs=1"]
    replay = medians([args.python, "-m", "harness", "replay", str(recorded), *common], str(work),
                     env, args.runs, (0, 1))
    written = medians([args.python, "-m", "harness", f"--case_file={work / 'cases_file.py'}",
                       *common], str(work),
                      env, args.runs, (0, 1))
    report = work / "r.json"
    subprocess.run([args.python, "-m", "harness", "replay", str(recorded), *common,
                    f"--json_out={report}"],
                   cwd=work, env=env, capture_output=True)
    points = len(json.loads(report.read_text())["results"])
    print(f"replay: {points} points of {len(ids)} functions; replay {replay[0]:.2f} s wall "
          f"({replay[1]:.2f} s CPU), the same as a case file {written[0]:.2f} s wall "
          f"({written[1]:.2f} s CPU): per point {replay[0] / points:.3f} s against "
          f"{written[0] / points:.3f} s, ratio {replay[0] / written[0]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--suite", default="",
                        help="pytest arguments of the suite to record (default: "
                                                    "record_project's tests)")
    parser.add_argument("--env", action="append", default=[],
                        help="NAME=VALUE for the suite's environment")
    parser.add_argument("--skip_replay", action="store_true")
    parser.add_argument("--check", action="store_true",
                        help="also run the session under --harness-check: its time, and the "
                             "replay's time and points as its last line gives them")
    parser.add_argument("--eager", action="store_true",
                        help="also record with --harness-record-eager, and count the drawn points "
                             "of each")
    parser.add_argument("--hot", type=int, nargs="?", const=100000, default=0,
                        help="record one test calling one custom gradient N times with the same "
                             "value")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="2",
               **dict(e.split("=", 1) for e in args.env))
    with tempfile.TemporaryDirectory(prefix="bench-record-") as work:
        work = Path(work)
        shutil.copytree(PROJECT, work / "project")
        bench_recording(args, work, env)
        if args.check and not args.hot:
            bench_check(args, work, env)
        if not args.skip_replay and not args.hot:
            bench_replay(args, work, env)


if __name__ == "__main__":
    main()
