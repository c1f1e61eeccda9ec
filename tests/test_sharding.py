"""Shards split the selected cases deterministically, and together give one run's report."""

import json
import os

import pytest

from harness.loader import shard
from harness.matrix import outputs
from harness.records import CaseInfo
from tests.helpers import harness


def _infos(n):
    return [CaseInfo(id=f"t.c{i}", description="d", source="s", order=1, points=("x=1.0",))
            for i in range(n)]


def test_shards_partition_the_selection_in_order_and_differ_by_at_most_one():
    infos = _infos(7)
    parts = [shard(infos, i, 3) for i in range(3)]
    assert sorted(c.id for p in parts for c in p) == sorted(c.id for c in infos)
    assert [len(p) for p in parts] == [3, 2, 2]
    assert [c.id for c in parts[1]] == ["t.c1", "t.c4"]


def test_one_shard_is_everything():
    infos = _infos(4)
    assert shard(infos, 0, 1) == infos


def _run(tmp_path, name, *args, env=None):
    out = tmp_path / f"{name}.json"
    proc = harness("--cases=seeds.*", f"--json_out={out}", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    return str(out)


@pytest.mark.slow
def test_merged_shards_equal_one_run(tmp_path, seed_run):
    proc, whole, _ = seed_run  # the whole selection, --cases=seeds.* in the default --mode=all
    assert proc.returncode == 0, proc.stderr
    whole = str(whole)
    first = _run(tmp_path, "s0", "--shard_index=0", "--num_shards=2")
    # The second shard comes from the variables test runners set, as Bazel does.
    status = tmp_path / "status"
    env = dict(os.environ, TEST_SHARD_INDEX="1", TEST_TOTAL_SHARDS="2",
               TEST_SHARD_STATUS_FILE=str(status))
    second = _run(tmp_path, "s1", env=env)
    assert status.exists()
    cases = [{r["case"] for r in json.loads(open(p).read())["results"]} for p in (first, second)]
    assert cases[0] and cases[1] and not cases[0] & cases[1]

    def merged(paths, name):
        target = tmp_path / f"{name}.matrix.json"
        assert outputs.main(paths, json_out=str(target)) == 0
        return json.loads(target.read_text())

    assert merged([first, second], "shards")["rows"] == merged([whole], "whole")["rows"]


def test_shard_index_out_of_range_is_a_usage_error():
    proc = harness("--shard_index=2", "--num_shards=2", timeout=60)
    assert (
        proc.returncode == 2 and "shard index 2 is not below the number of shards 2" in proc.stderr
    )
