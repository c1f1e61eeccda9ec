"""The worker started before the command line is read (harness.process.head_start): when it is
started, and that a command which turns out to need none leaves neither it nor its folder behind.

Every Python process of a command is seen through a sitecustomize that records its id and
command line as the interpreter starts: the command's own process and any worker it spawned.
No TensorFlow here: a stand-in `tensorflow` either fails at once, as on a machine without
TensorFlow, or takes a minute to import, so the worker is still importing when the command ends.
"""

import json
import subprocess
import sys

import pytest

from harness.process import head_start
from tests.helpers import (REPO, assert_usage_error, harness, no_tensorflow_env, record_processes,
                           recorded_processes, recorded_workers)


@pytest.mark.parametrize("args, wanted", [
    ([], True),
    (["--mode", "all", "--cases", "seeds.*"], True),
    (["check", "my.py:f", "--inputs", "1.0"], True),
    (["repro", "seeds.docstring_nested", "--out", "o"], True),
    (["explore", "my.py:f", "--domain", "x=[-1, 1]"], True),
    (["--list"], True),
    (["--help"], False),
    (["check", "-h"], False),
    (["--helpfull"], False),
    (["merge", "a.json", "b.json"], False),
    (["merge", "--help"], False),
    (["--inprocess", "--cases", "seeds.*"], False),
    (["--inprocess=true"], False),
    (["-inprocess"], False),  # absl takes one dash as two
    (["-helpfull"], False),
    (["--noinprocess"], True),
])
def test_a_worker_is_started_ahead_unless_help_merge_or_inprocess(args, wanted):
    assert head_start.wanted(args) is wanted


@pytest.fixture
def recorded(tmp_path):
    """(an environment whose Python processes are recorded, the record, its own temporary folder).
    Its `import tensorflow` takes a minute."""
    env = no_tensorflow_env(tmp_path / "guard")
    (tmp_path / "guard" / "tensorflow" / "__init__.py").write_text("import time\ntime.sleep(60)\n")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env["TMPDIR"] = str(temporary)
    return env, record_processes(env, tmp_path), temporary


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return "spawn_main" in f.read()
    except OSError:
        return False


@pytest.mark.subprocess
def test_a_usage_error_ends_the_worker_started_ahead_and_removes_its_folder(recorded, tmp_path):
    # The worker is still importing "TensorFlow" when the error is found: the command ends it
    # before it exits (its own watch for a parent that is gone looks only four times a second).
    env, record, temporary = recorded
    proc = harness("--mode", "bogus", env=env, cwd=str(tmp_path))
    assert_usage_error(proc, "unknown mode 'bogus'")
    workers = recorded_workers(record)
    assert len(workers) == 1, recorded_processes(record)  # it was started ahead
    assert not _alive(workers[0])
    assert list(temporary.iterdir()) == []


# Which words start none is the test above; these see it of the whole command, whose help and
# merge must not start a worker later either.
@pytest.mark.subprocess
@pytest.mark.parametrize("args", [("--help",), ("merge", "missing.json")])
def test_help_and_merge_start_no_worker(recorded, tmp_path, args):
    env, record, temporary = recorded
    proc = harness(*args, env=env, cwd=str(tmp_path))
    assert proc.returncode in (0, 2), proc.stderr
    assert recorded_workers(record) == []
    assert list(temporary.iterdir()) == []


# As harness/__main__ does it: start ahead first, then see what that imported here.
_STARTS = """
import json, sys
from harness.process import head_start
head_start.start(["--cases", "seeds.*"])
print(json.dumps({"started": head_start._started is not None,
                  "heavy": sorted(m for m in ("numpy", "absl", "tensorflow") if m in sys.modules)}))
"""


@pytest.mark.subprocess
def test_starting_ahead_imports_none_of_numpy_absl_or_tensorflow(recorded, tmp_path):
    env, record, temporary = recorded
    done = subprocess.run([sys.executable, "-c", _STARTS], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"started": True, "heavy": []}
    assert list(temporary.iterdir()) == []  # ended at exit, its folder with it


@pytest.mark.subprocess
def test_a_supervisor_killed_before_its_worker_starts_serving_leaves_no_worker_or_folder(recorded,
                                                                                         tmp_path):
    # The worker is held in its interpreter's start-up for a second, before any harness code
    # runs, and the command is killed with SIGKILL meanwhile: the worker must still see that
    # its parent is gone (it is told the parent's id, not left to find it), remove the folder
    # and exit, instead of importing "TensorFlow" for a minute and leaving the folder behind.
    import signal
    import time

    env, record, temporary = recorded
    record_processes(env, tmp_path, extra=(
        "import time\nif 'spawn_main' in open('/proc/self/cmdline').read():\n    "
        "time.sleep(1.5)\n"))
    command = subprocess.Popen([sys.executable, "-m", "harness", "--cases", "seeds.*"], env=env,
                               cwd=str(tmp_path), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not recorded_workers(record):
        assert time.monotonic() < deadline, "no worker was started"
        time.sleep(0.05)
    command.send_signal(signal.SIGKILL)
    command.wait()
    [worker] = recorded_workers(record)
    while (_alive(worker) or list(temporary.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker)
    assert list(temporary.iterdir()) == []


@pytest.mark.parametrize("cores, jobs, variable, at_once", [
    (1, 0, None, 1),  # one core: the second would only slow the first's import
    (2, 0, None, 2),
    (16, 0, None, 2),  # two at once, the others once the cases say they are needed
    (16, 1, None, 1),  # --jobs 1: never a second
    (16, 3, None, 2),
    (16, 0, "1", 1),  # HARNESS_WORKERS_AT_ONCE lowers it
    (16, 3, "3", 3),
    (16, 0, "0", 2),  # not a count of workers: the default
    (16, 0, "two", 2),
])
def test_two_workers_start_at_once_where_there_are_cores_and_jobs_for_them(monkeypatch, cores,
                                                                            jobs, variable,
                                                                            at_once):
    from harness.cli import settings

    monkeypatch.setattr(settings.os, "cpu_count", lambda: cores)
    if variable is None:
        monkeypatch.delenv("HARNESS_WORKERS_AT_ONCE", raising=False)
    else:
        monkeypatch.setenv("HARNESS_WORKERS_AT_ONCE", variable)
    assert settings.workers_at_once(jobs) == at_once


@pytest.mark.parametrize("cases, jobs, started, size", [
    (1, 0, 2, 2),  # the pool ends the one it has no case for (WorkerPool.run)
    (6, 0, 2, 2),  # both imported TensorFlow already: both run cases
    (6, 0, 1, 1),
    (79, 0, 2, 10),  # one more per 8 cases, up to the 16 cores
    (200, 0, 2, 16),
    (200, 3, 2, 3),  # --jobs decides
])
def test_a_run_uses_the_workers_started_at_once_and_more_for_many_cases(monkeypatch, cases, jobs,
                                                                        started, size):
    from harness.cli import settings

    monkeypatch.setattr(settings.os, "cpu_count", lambda: 16)
    assert settings.pool_size(cases, jobs, started) == size


def test_without_tensorflow_no_worker_starts_and_a_run_says_what_to_install(monkeypatch):
    import importlib.util

    from harness.cli import settings
    from harness.cli.options import UsageError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tensorflow" else real(name, *a))
    head_start.start(["--mode", "all"])
    assert head_start.take() is None
    with pytest.raises(UsageError) as caught:
        settings.runner_for(None)
    said = str(caught.value)
    assert said.startswith("TensorFlow is not installed") and "\n" not in said
    assert "pip install tensorflow, or tf-nightly" in said and "tensorflow extra" in said
