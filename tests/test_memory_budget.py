"""A mode that grows its worker past --mode_memory_mib is stopped, and the point is judged by the
other modes, the stopped one reported skipped with what it took; within the budget it runs on.

tests/data/heavy_eager.py's case holds 1 GiB while it runs eagerly, and nothing more when traced.
"""

import json

import pytest

from tests.helpers import DATA, harness

pytestmark = pytest.mark.subprocess

HEAVY = str(DATA / "heavy_eager.py")


def _result(tmp_path, budget):
    out = tmp_path / f"budget-{budget}.json"
    proc = harness(f"--case_file={HEAVY}", "--mode=all", "--jobs=1", f"--json_out={out}",
                   f"--mode_memory_mib={budget}")
    assert out.exists(), proc.stdout + proc.stderr
    [result] = json.loads(out.read_text())["results"]
    return proc, result


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/status"),
                    reason="a worker's size is read from /proc, which only Linux has")
def test_eager_mode_past_the_budget_is_stopped_and_the_traced_modes_judge_the_point(tmp_path):
    proc, r = _result(tmp_path, 256)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert r["verdict"] == "pass", r
    assert {m: o["status"] for m, o in r["modes"].items()} == \
        {"eager": "skip", "function": "ok", "graph": "ok"}, r["modes"]
    # x * x at 3: the traced modes' gradient, 6, checked numerically.
    assert r["oracles"]["numeric"]["status"] == "match", r["oracles"]
    [line] = [d for d in r["details"] if d.startswith("eager skipped: ")]
    assert line.startswith("eager skipped: its worker grew by "), line
    grown = int(line.split("grew by ")[1].split(" MiB")[0].replace(",", ""))
    assert 256 < grown < 1024, line  # stopped on the way to its 1 GiB, not after it
    assert line.endswith(" MiB running it here, past the 256 MiB a mode may add "
                         "(--mode_memory_mib; 0: no limit), and was stopped; the point was run "
                         "again without it"), line


def test_a_mode_within_the_budget_runs_to_its_end(tmp_path):
    proc, r = _result(tmp_path, 2048)
    assert r["verdict"] == "pass", r
    assert {m: o["status"] for m, o in r["modes"].items()} == \
        {"eager": "ok", "function": "ok", "graph": "ok"}, r["modes"]
    assert not any("skipped" in d for d in r["details"]), r["details"]
