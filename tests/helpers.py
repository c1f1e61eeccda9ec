"""Helpers the test modules share (fixtures are in conftest.py). Importing this imports no
TensorFlow."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the checkout
REPO = str(ROOT)
DATA = ROOT / "tests" / "data"


def _record_plugin_args():
    """How a child pytest loads the recording plugin: by its entry point's name where the install
    registered it (`-p harness.record.plugin` there would register the same module twice, which
    pytest refuses), by its module where it did not (an install older than the entry point)."""
    from importlib.metadata import entry_points

    if any(ep.name == "harness-record" for ep in entry_points(group="pytest11")):
        return ["-p", "harness-record"]
    return ["-p", "harness.record.plugin"]


RECORD_PLUGIN = _record_plugin_args()


def harness(*args, cwd=None, env=None, python=(), timeout=300):
    """`python [PYTHON...] -m harness ARGS` in a subprocess, from the checkout unless `cwd` is
    given."""
    return subprocess.run([sys.executable, *python, "-m", "harness", *args], capture_output=True,
                          text=True, cwd=cwd or REPO, env=env, timeout=timeout)


def assert_usage_error(proc, message):
    """Exit status 2 and one line on stderr, `harness: error: ...`, that says `message`."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("harness: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert message in proc.stderr, proc.stderr


def imported(proc):
    """The modules a `python -X importtime` run imported."""
    return [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:")]


def no_tensorflow_env(folder):
    """An environment whose `import tensorflow` fails, this checkout's harness first on the path.

    `folder` receives the stand-in package; the caller owns it.
    """
    guard = Path(folder)
    (guard / "tensorflow").mkdir(parents=True, exist_ok=True)
    (guard / "tensorflow"
     / "__init__.py").write_text("raise ImportError('this test imports no TensorFlow')\n")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, str(guard)]))


def without_harness_env(folder):
    """An environment in which `import harness` fails loudly: for running a reproduction as a
    maintainer would. `folder` receives the stand-in package; the caller owns it."""
    stub = Path(folder) / "stub" / "harness"
    stub.mkdir(parents=True, exist_ok=True)
    (stub
     / "__init__.py").write_text("raise ImportError('a reproduction must not import harness')\n")
    return dict(os.environ, PYTHONPATH=str(stub.parent), TF_CPP_MIN_LOG_LEVEL="2")


def make_case(fn=None, build=None, points=None, id="t.case", **kw):
    """A small Case at x = 3.0 (float32) unless `points` are given."""
    import numpy as np

    from harness import Case

    return Case(id=id, fn=fn, build=build, points=points or [{"x": np.float32(3.0)}],
                source="test", description="test case", **kw)


def values(outcome, order):
    """The values of one order of a mode's outcome, None for an unconnected gradient."""
    return [None if o.value is None else o.value for o in outcome.orders[order]]


CORE_MODES = ("eager", "function", "graph")


def run(case, modes=CORE_MODES, **options):
    """`case` judged in this process in `modes` with RunOptions(**options): one Result per point."""
    from harness.run_here import run_case
    from harness.records import RunOptions

    return run_case(case, modes, RunOptions(**options),
                    rerun=lambda c, p: f"rerun {c.id}[{p.label}]")


# A sitecustomize that records each Python process as its interpreter starts: "pid command line",
# one line each.
_PROCESS_RECORDER = ("import os\nwith open(os.environ['HARNESS_TEST_PROCESSES'], 'a') as f:\n    "
                     "f.write(f\"{os.getpid()} {open('/proc/self/cmdline').read().replace(chr(0), "
                     "' ').replace(chr(10), ' ')}\\n\")\n")


def record_processes(env, folder, extra=""):
    """Changes `env` so that every Python process started with it is recorded as it starts (its
    sitecustomize, with `extra` code after it, goes in `folder`); returns the record's path."""
    site = Path(folder) / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(_PROCESS_RECORDER + extra)
    record = Path(folder) / "processes.txt"
    env["PYTHONPATH"] = os.pathsep.join([p for p in (env.get("PYTHONPATH"), str(site)) if p])
    env["HARNESS_TEST_PROCESSES"] = str(record)
    return record


def recorded_processes(record):
    """[(pid, command line)] of every process `record_processes` saw start, in order."""
    if not Path(record).exists():
        return []
    return [(int(pid), command)
            for pid, command in (line.split(" ", 1)
                                 for line in Path(record).read_text().splitlines())]


def recorded_workers(record):
    """The process ids of the worker processes among them (multiprocessing's spawn children; its
    resource tracker is not one)."""
    return [pid for pid, command in recorded_processes(record) if "spawn_main" in command]
