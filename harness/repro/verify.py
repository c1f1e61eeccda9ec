"""Runs a reproduction script in a fresh process and checks that it shows what the harness saw.

The script runs with this environment's Python in isolated mode (-I: no
PYTHONPATH, no user site, not the current directory), in an empty directory,
with every import of `harness` refused: what it shows, it shows with
TensorFlow and NumPy alone.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

from harness.repro.short import Expected

__all__ = ["Interrupted", "Ran", "run", "shows"]

# How often a wait for the script looks whether a stop was asked for.
_SLICE_S = 0.1

_BOOT = """\
import runpy, sys
class NoHarness:
    def find_spec(self, name, path=None, target=None):
        if name == "harness" or name.startswith("harness."):
            raise ModuleNotFoundError("a reproduction must not need the harness", name=name)
sys.meta_path.insert(0, NoHarness())
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
_MODE_LINE = re.compile(r"^(\w+): (\w+)")


@dataclasses.dataclass(frozen=True)
class Ran:
    """What running a script gave: its exit status (negative: killed by that signal; None: it
    ran past the timeout), its standard output and its standard error."""

    exit: Optional[int]
    stdout: str
    stderr: str


class Interrupted(Exception):
    """A stop was asked for (Ctrl-C, SIGTERM) while a script ran; the script's processes are
    ended."""


def run(script: str, timeout: float, stop: Optional[threading.Event] = None) -> Ran:
    """Runs the text `script` as repro.py in a fresh, isolated process.

    Raises:
      Interrupted: `stop` was set before it ended; it and whatever it started are killed.
    """
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONDONTWRITEBYTECODE="1")
    with tempfile.TemporaryDirectory(prefix="harness-repro-") as folder:
        path = Path(folder) / "repro.py"
        path.write_text(script, encoding="utf-8")
        process = subprocess.Popen([sys.executable, "-I", "-c", _BOOT, str(path)], cwd=folder,
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, start_new_session=True)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    out, err = process.communicate(timeout=max(0.0,
                                                               min(_SLICE_S,
                                                                   deadline - time.monotonic())))
                    return Ran(exit=process.returncode, stdout=out, stderr=err)
                except subprocess.TimeoutExpired:
                    stopped = stop is not None and stop.is_set()
                    if not stopped and time.monotonic() < deadline:
                        continue
                _end(process)
                out, err = process.communicate()
                if stopped:
                    raise Interrupted("a stop was asked for while the script ran")
                return Ran(exit=None, stdout=out or "", stderr=err or "")
        except BaseException:  # Ctrl-C in this thread too: the script must not outlive the check
            _end(process)
            raise


def _end(process: subprocess.Popen) -> None:
    """Kills the script and everything it started: it leads its own process group."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()


def shows(ran: Ran, expected: Expected) -> Optional[str]:
    """None when `ran` shows what `expected` says; else why not, in one sentence."""
    if ran.exit is None:
        return "it ran past the timeout"
    if expected.exit is None:
        return (None if ran.exit < 0
                else f"it exited {ran.exit} where the harness saw {expected.what}")
    if ran.exit not in (0, 1):
        tail = (ran.stderr.strip().splitlines() or [""])[-1]
        return f"it exited {ran.exit}" + (f": {tail}" if tail else "")
    printed = {m[1]: m[2] for m in map(_MODE_LINE.match, ran.stdout.splitlines()) if m
               and m[1] in expected.outcomes}
    for mode, want in expected.outcomes.items():
        got = printed.get(mode)
        if got != want:
            said = ("printed nothing" if got is None
                    else ("returned values" if got == "ok" else f"raised {got}"))
            saw = "values" if want == "ok" else want
            return f"in it {mode} {said}, where the harness saw {saw}"
    if ran.exit != expected.exit:
        return (f"it exited {ran.exit}: "
                + ("no deviation showed" if ran.exit == 0 else "a deviation showed")
                + f", where the harness saw {expected.what}")
    return None
