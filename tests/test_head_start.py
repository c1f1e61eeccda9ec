"""The worker started before the command line is read is the run's first worker
(harness.head_start, harness.pool). With TensorFlow: the worker loads and runs cases."""

import json
import os
import subprocess
import sys

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


def test_the_pool_takes_over_the_worker_started_ahead_and_sends_it_the_origins():
    done = subprocess.run([sys.executable, "-c", _TAKEN_OVER], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=REPO), timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["heavy"] == []  # starting it imports none of what the command line's reading imports
    assert seen["same"] and seen["taken"]
    assert "seeds.custom_square" in seen["ids"]  # it loaded what the pool sent, after it started
    assert not seen["folder_left"]


def test_a_flagfile_that_says_inprocess_ends_the_worker_started_ahead(tmp_path):
    flagfile = tmp_path / "flags.txt"
    flagfile.write_text("--inprocess\n--cases=seeds.custom_square\n--mode=eager\n")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    proc = harness(f"--flagfile={flagfile}", f"--json_out={tmp_path / 'r.json'}", cwd=str(tmp_path),
                   env=dict(os.environ, PYTHONPATH=REPO, TMPDIR=str(temporary)))
    assert proc.returncode == 0, proc.stderr
    assert [r["verdict"] for r in json.loads((tmp_path / "r.json").read_text())["results"]] == ["pass"]
    assert list(temporary.iterdir()) == []
