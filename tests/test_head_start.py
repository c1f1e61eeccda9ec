"""The worker started before the command line is read is the run's first worker
(harness.head_start, harness.pool). With TensorFlow: the worker loads and runs cases."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import REPO, harness

# In a fresh process, as `python -m harness` does: start ahead, then build the pool.
_TAKEN_OVER = """
import json, os, sys
from harness import head_start
head_start.start(["--cases", "seeds.custom_square"])
started = head_start._started
heavy = sorted(m for m in ("numpy", "absl", "tensorflow") if m in sys.modules)
from harness import pool, worker
runner = pool.WorkerPool(120, worker.Origins(library=True, themes=("seeds",)))
first = runner._workers[0].process.pid
environment, catalogue = runner.start()
runner.close()
print(json.dumps({"heavy": heavy, "same": first == started.process.pid, "taken": head_start.take() is None,
                  "ids": sorted(c.id for c in catalogue), "folder_left": os.path.exists(started.folder)}))
"""


@pytest.mark.slow  # a worker of its own imports TensorFlow
def test_the_pool_takes_over_the_worker_started_ahead_and_sends_it_the_origins():
    done = subprocess.run([sys.executable, "-c", _TAKEN_OVER], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=REPO), timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["heavy"] == []  # starting it imports none of what the command line's reading imports
    assert seen["same"] and seen["taken"]
    assert "seeds.custom_square" in seen["ids"]  # it loaded what the pool sent, after it started
    assert not seen["folder_left"]


# A case file that, as --inprocess imports it in the main process, writes down whether the
# worker started ahead (found in the record of Python processes) is still running.
_LOOKS = """
import os
from pathlib import Path

import numpy as np
import tensorflow as tf

from harness import Case

def _running(pid):
    try:
        return "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False

_workers = [int(line.split(" ", 1)[0]) for line in Path(os.environ["HARNESS_TEST_PROCESSES"]).read_text().splitlines()
            if "spawn_main" in line and "resource_tracker" not in line]
Path(os.environ["HARNESS_TEST_SEEN"]).write_text(f"{len(_workers)} {sum(_running(p) for p in _workers)}")

CASES = [Case(id="t.square", fn=lambda x: x * x, points=[{"x": np.float32(3.0)}], order=1, source="test",
              description="x**2")]
"""

_RECORDER = ("import os\n"
             "with open(os.environ['HARNESS_TEST_PROCESSES'], 'a') as f:\n"
             "    f.write(f\"{os.getpid()} {open('/proc/self/cmdline').read().replace(chr(0), ' ')}\\n\")\n")


@pytest.mark.slow  # a command-line run that loads cases
def test_a_flagfile_that_says_inprocess_ends_the_worker_started_ahead_before_the_cases_load(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(_RECORDER)
    (tmp_path / "looks.py").write_text(_LOOKS)
    flagfile = tmp_path / "flags.txt"
    flagfile.write_text(f"--inprocess\n--case_file={tmp_path / 'looks.py'}\n--mode=eager\n")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    seen = tmp_path / "seen.txt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, str(tmp_path / "site")]), TMPDIR=str(temporary),
               HARNESS_TEST_PROCESSES=str(tmp_path / "processes.txt"), HARNESS_TEST_SEEN=str(seen))
    proc = harness(f"--flagfile={flagfile}", f"--json_out={tmp_path / 'r.json'}", cwd=str(tmp_path), env=env)
    assert proc.returncode == 0, proc.stderr
    assert [r["verdict"] for r in json.loads((tmp_path / "r.json").read_text())["results"]] == ["pass"]
    assert seen.read_text() == "1 0"  # one worker was started ahead, and it had ended
    assert list(temporary.iterdir()) == []
