"""One case never changes the next one's verdict: what a case leaves behind is blamed on it, and
the next case runs as it would alone."""

import json

import pytest

from tests.helpers import DATA, harness, make_case, run

POLLUTING = str(DATA / "polluting_cases.py")

# Each polluter, the innocent case that runs right after it (tests/data/polluting_cases.py says how
# the change would break it), and what its verdict must name.
PAIRS = [
    ("enables_check_numerics", "then_nan_branch",
     "check numerics (tf.debugging.enable_check_numerics): off -> on"),
    ("sets_grappler_option", "then_matmul", "grappler option auto_mixed_precision_onednn_bfloat16 "
                                            "(tf.config.optimizer.set_experimental_options): unset "
                                            "-> True"),
    ("disables_control_flow_v2", "then_while_loop",
     "control flow v2 (tf.compat.v1.disable_control_flow_v2): True -> False"),
    ("starts_flipper", "then_set_flip",
     "left a thread running: flipper (target _flip, polluting_cases.py line"),
    ("starts_exiter", "then_set_exit",
     "left a thread running: exiter (daemon, target _exit, polluting_cases.py line"),
]
INNOCENT = [innocent for _, innocent, _ in PAIRS]


def _results(tmp_path, *args):
    out = tmp_path / "r.json"
    proc = harness(f"--case_file={POLLUTING}", "--jobs=1", f"--json_out={out}", *args, timeout=600)
    assert out.exists(), proc.stdout + proc.stderr
    found = {}
    for r in json.loads(out.read_text())["results"]:
        r.pop("seconds")  # each run times itself
        # How an oracle evaluated (eagerly, or traced once an eager evaluation took longer than
        # evaluate.TRACE_AFTER_S) follows the wall clock, which a busy machine moves; its note
        # says which. What it found is the rest of its record, compared in full.
        for oracle in r.get("oracles", {}).values():
            oracle.pop("note", None)
        found[r["case"].removeprefix("polluting.")] = r
    return found


@pytest.fixture(scope="module")
def in_turn(tmp_path_factory):
    """Every case in one worker, in file order: each innocent case right after its polluter."""
    return _results(tmp_path_factory.mktemp("in_turn"))


@pytest.fixture(scope="module")
def innocent_alone(tmp_path_factory):
    """The innocent cases only, with no polluter before them."""
    return _results(tmp_path_factory.mktemp("alone"),
                    "--cases=" + ",".join(f"polluting.{c}" for c in INNOCENT))


@pytest.mark.slow
@pytest.mark.parametrize("polluter, innocent, change", PAIRS, ids=[p for p, _, _ in PAIRS])
def test_the_polluter_is_an_error_naming_its_change(in_turn, polluter, innocent, change):
    result = in_turn[polluter]
    assert result["verdict"] == "error", result
    assert change in result["reason"], result["reason"]


@pytest.mark.slow
@pytest.mark.parametrize("polluter, innocent, change", PAIRS, ids=[i for _, i, _ in PAIRS])
def test_the_case_after_a_polluter_gets_the_verdict_it_gets_alone(in_turn, innocent_alone,
                                                                  polluter, innocent, change):
    assert innocent_alone[innocent]["verdict"] == "pass", innocent_alone[innocent]
    after, alone = in_turn[innocent], innocent_alone[innocent]
    assert after == alone, {k: (after.get(k), alone.get(k)) for k in set(after) | set(alone)
                            if after.get(k) != alone.get(k)}


def test_a_case_judged_in_this_process_is_blamed_for_check_numerics_it_leaves_on():
    import tensorflow as tf

    def build():
        tf.debugging.enable_check_numerics()
        return lambda x: x * x

    try:
        [result] = run(make_case(build=build), modes=("eager",))
    finally:
        tf.debugging.disable_check_numerics()
    assert result.verdict.value == "error"
    assert (
        "check numerics (tf.debugging.enable_check_numerics): off -> on" in result.reason
    ), result.reason


def test_a_case_judged_in_this_process_is_blamed_for_a_thread_it_leaves_running():
    import threading

    release = threading.Event()

    def build():
        threading.Thread(target=release.wait, name="left behind", daemon=True).start()
        return lambda x: x * x

    try:
        [result] = run(make_case(build=build), modes=("eager",))
    finally:
        release.set()
    assert result.verdict.value == "error"
    assert (
        "left a thread running: left behind (daemon, target Event.wait, threading.py line"
        in result.reason
    ), result.reason
