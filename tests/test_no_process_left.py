"""A run leaves no process of its own behind: run to the end, with --jobs 2, and interrupted.

Each run goes under a watcher, this file run as a script: a child subreaper (Linux's prctl
PR_SET_CHILD_SUBREAPER), so that any process of the run not reaped by its parent before that
parent exits is handed to the watcher, not to init. Once the run's main process has exited and
been reaped, every child the watcher has is such a process, alive or a zombie, and fails the test
at once: the workers, the worker started ahead (harness.process.head_start) and multiprocessing's
resource tracker must all be ended and reaped by the main process before it exits. A process that
carries the run's marker in its environment and is still alive after a few seconds is left behind
too (that wait is only for one on its way out; nothing passes for being slow). The watcher ends and
reaps whatever it found, so a failing test leaves nothing either.
"""

import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

# whose harness `-m harness` runs
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED_RUN = ("-m", "harness", "--mode", "all", "--cases", "seeds.*")
SCENARIOS = {
    "to the end": ((), None),
    "--jobs 2": (("--jobs", "2"), None),
    # A SIGTERM there takes the same way (harness.cli.run_loop.Signals), so it is not run too.
    # The whole library, so that the run is still going when the signal comes: the seeds alone
    # can all finish first on a loaded machine, and the run then ends without an interrupt.
    "SIGINT after the first result": (("--cases", "*"), "SIGINT"),
    # Most often while the command line is still read, before the run's own handlers are in place.
    "SIGTERM once the worker started ahead exists": ((), "SIGTERM at start"),
}
# How long a process with the marker may take to finish exiting once the main process has.
_EXITING_S = 5.0
_RESULT_LINE = re.compile(r"^\S+\s+seeds\.\S+\s+order \d")
_PR_SET_CHILD_SUBREAPER = 36


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:  # gone, another user's, or exiting
        return b""


def _processes():
    """{pid: (parent, state, environment, command line)} of every process whose status this user
    can read; one on its way out may show no environment or command line, but its parent and state.
    """
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        stat = _read(f"/proc/{name}/stat").decode("ascii", "replace")
        # state ppid ...; the name before may hold spaces
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) < 2:  # gone
            continue
        command = _read(f"/proc/{name}/cmdline").replace(b"\0", b" ").decode("utf-8",
                                                                             "replace").strip()
        found[int(name)] = (int(fields[1]), fields[0], _read(f"/proc/{name}/environ"), command)
    return found


def _marked(marker: bytes):
    """{pid: command line} of the live processes whose environment holds `marker`."""
    return {pid: command for pid, (_, state, environ, command) in _processes().items()
            if state != "Z" and marker in environ}


def _adopted():
    """{pid: (state, command line)} of this process's children (all handed to it: it started the
    run's main process alone, and has reaped that)."""
    me = os.getpid()
    return {pid: (state, command) for pid, (parent, state, _, command) in _processes().items()
            if parent == me}


def _follow(run: subprocess.Popen, marker: bytes):
    """Starts threads that keep the run's output and the command line of each of its processes as
    they come; returns (lines, {pid: command line}, an Event set at the first result line or the
    output's end)."""
    lines, seen, first, ended = [], {}, threading.Event(), threading.Event()

    def read():
        for line in run.stdout:
            lines.append(line)
            if _RESULT_LINE.match(line):
                first.set()
        first.set()
        ended.set()

    def sample():  # a zombie's command line is gone: this says which process one was
        while not ended.wait(0.2):
            seen.update(_marked(marker))

    for target in (read, sample):
        threading.Thread(target=target, daemon=True).start()
    return lines, seen, first


def _interrupt(run: subprocess.Popen, how: str, marker: bytes, first: threading.Event) -> None:
    """Sends the signal of `how` to the run when it is due."""
    if how == "SIGTERM at start":
        deadline = time.monotonic() + 120
        while (not any("spawn_main" in c for c in _marked(marker).values()) and run.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.01)
    else:
        first.wait(600)
    run.send_signal(signal.SIGTERM if how == "SIGTERM at start" else signal.SIGINT)


def _tidy(pids) -> list:
    """Kills what the run left and reaps every child of this process; returns the ids it reaped."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    reaped = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            reaped.append(pid)
        else:
            time.sleep(0.05)
    return reaped


def watch(scenario: str) -> dict:
    """Runs the scenario under this process as a subreaper; returns what is left once it ended."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return {"error": f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}"}
    args, how = SCENARIOS[scenario]
    marker = uuid.uuid4().hex.encode()
    # The default's workers: two at once where there are two cores (the suite's conftest sets one).
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_WORKERS_AT_ONCE"}
    run = subprocess.Popen([sys.executable, *SEED_RUN, *args],
                           env=dict(env, HARNESS_TEST_MARKER=marker.decode()),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, seen, first = _follow(run, marker)
    if how:
        _interrupt(run, how, marker, first)
    try:  # not the output's end: a process left behind may hold the pipe open
        run.wait(timeout=600)
    except subprocess.TimeoutExpired:
        run.kill()
        run.wait()
    adopted = _adopted()
    deadline = time.monotonic() + _EXITING_S
    while (alive := {p: c for p, c in _marked(marker).items() if p not in adopted}) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in _tidy(list(adopted) + list(alive)):  # every child it has now was handed to it
        adopted.setdefault(pid, ("reaped", ""))
    return {"returncode": run.returncode, "output": "".join(lines)[-3000:],
            "adopted": {p: [state, command or seen.get(p, "?")]
                        for p, (state, command) in adopted.items()},
            "alive": alive}


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux") or not os.path.isdir("/proc/self"),
                    reason="Linux only: finds the run's processes in /proc, and adopts what it "
                           "leaves with prctl(PR_SET_CHILD_SUBREAPER)")
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_run_leaves_no_process_behind(scenario):
    done = subprocess.run([sys.executable, os.path.abspath(__file__), scenario],
                          capture_output=True, text=True, cwd=_CHECKOUT, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    left = json.loads(done.stdout)
    assert "error" not in left, left["error"]
    output = left["output"]
    how = SCENARIOS[scenario][1]
    if how is None:
        assert left["returncode"] == 0, output
    elif how == "SIGTERM at start":  # before the run's handlers (killed by it, as ever) or after
        assert left["returncode"] in (-signal.SIGTERM, 130), output
    else:
        assert left["returncode"] == 130 and "harness: interrupted;" in output, output
    assert left["adopted"] == {}, ("not reaped by their parent before the run ended (state, "
                                   f"command): {left['adopted']}\n{output}")
    assert (
        left["alive"] == {}
    ), f"still running {_EXITING_S:g} s after the run ended: {left['alive']}\n{output}"


if __name__ == "__main__":
    print(json.dumps(watch(sys.argv[1])))
