"""The worker started before the command line is read is the run's first worker
(harness.process.head_start, harness.process.pool). With TensorFlow: the worker loads and runs
cases. The seed run is the shared fixture's; the --inprocess one needs a run of its own."""

import json
import os

import pytest

from harness.process import head_start
from tests.helpers import REPO, harness, record_processes, recorded_workers

SEED_RUN_ARGS = ["--mode=all", "--cases=seeds.*"]  # what the seed_run fixture runs, reports aside


def test_the_seed_run_had_one_worker_the_one_started_ahead(seed_run):
    # The command line starts a worker ahead (head_start.wanted), and the suite starts no second
    # one beside it (tests/conftest.py: HARNESS_WORKERS_AT_ONCE), so six cases need only that one;
    # had the pool not taken it over, there would be two, the first ended at exit.
    proc, json_path, _ = seed_run
    assert proc.returncode == 0, proc.stderr
    assert head_start.wanted(SEED_RUN_ARGS)
    assert os.environ["HARNESS_WORKERS_AT_ONCE"] == "1"
    assert len(recorded_workers(json_path.parent / "processes.txt")) == 1
    # It loaded the cases the pool sent: the seeds' 8 points (cases/seeds.py).
    assert len(json.loads(json_path.read_text())["results"]) == 8
    assert list((json_path.parent / "tmp").iterdir()) == []  # and its folder is gone


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

_listed = Path(os.environ["HARNESS_TEST_PROCESSES"]).read_text().splitlines()
_workers = [int(line.split(" ", 1)[0]) for line in _listed
            if "spawn_main" in line and "resource_tracker" not in line]
_seen = f"{len(_workers)} {sum(_running(p) for p in _workers)}"
Path(os.environ["HARNESS_TEST_SEEN"]).write_text(_seen)

CASES = [Case(id="t.square", fn=lambda x: x * x, points=[{"x": np.float32(3.0)}], order=1,
              source="test",
              description="x**2")]
"""


@pytest.mark.slow  # a command-line run that loads cases
def test_a_flagfile_that_says_inprocess_ends_the_worker_started_ahead_before_the_cases_load(
    tmp_path,
):
    (tmp_path / "looks.py").write_text(_LOOKS)
    flagfile = tmp_path / "flags.txt"
    flagfile.write_text(f"--inprocess\n--case_file={tmp_path / 'looks.py'}\n--mode=eager\n")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    seen = tmp_path / "seen.txt"
    env = dict(os.environ, PYTHONPATH=REPO, TMPDIR=str(temporary), HARNESS_TEST_SEEN=str(seen))
    record_processes(env, tmp_path)
    proc = harness(f"--flagfile={flagfile}", f"--json_out={tmp_path / 'r.json'}",
                   cwd=str(tmp_path), env=env)
    assert proc.returncode == 0, proc.stderr
    assert [r["verdict"]
            for r in json.loads((tmp_path / "r.json").read_text())["results"]] == ["pass"]
    assert seen.read_text() == "1 0"  # one worker was started ahead, and it had ended
    assert list(temporary.iterdir()) == []
