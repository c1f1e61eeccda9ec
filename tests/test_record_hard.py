"""Recording a library built to defeat a naive recorder (tests/data/record_hard), end to end.

Each defect class has its function in the library and a test here: routes to custom_gradient
other than tf.custom_gradient, a library decorator whose inner function every function shares,
same-named functions inside two Keras layers that fit converts with AutoGraph, a Python float
that JSON cannot hold, a functools.partial, calls seen only while tracing (drawn values), and
dtypes. The project records into its own folder (`--harness-record=.`), beside a file of its own
and an earlier session's recording. A kill during the tests, pytest-xdist and a failing write are
recorded apart, on the small project of tests/test_record.py. All start TensorFlow: slow.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from harness.record import merging, store
from tests import helpers
from tests.helpers import DATA, REPO

pytestmark = pytest.mark.slow

GOLDEN = b"\x93NUMPY the user's own file"


def user_pytest(folder, *args):
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop(store.ENV_SESSION, None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *helpers.RECORD_PLUGIN,
                           *args], capture_output=True, text=True, cwd=folder, env=env, timeout=600)


def replay(folder, out, *args, project=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(([str(project)] if project else []) + [REPO]),
               TF_CPP_MIN_LOG_LEVEL="2")
    proc = helpers.harness("replay", str(folder), "--mode=all", f"--json_out={out}", *args,
                           cwd=str(Path(out).parent), env=env, timeout=900)
    results = {}
    if Path(out).is_file():
        results = {(r["case"], r["point"]): r for r in json.loads(Path(out).read_text())["results"]}
    return proc, results


@pytest.fixture(scope="module")
def hard(tmp_path_factory):
    """The project recorded into its own folder, and replayed: (pytest run, session, replay run,
    results)."""
    project = tmp_path_factory.mktemp("hard") / "project"
    shutil.copytree(DATA / "record_hard", project)
    (project / "values").mkdir()
    (project / "values" / "golden.npy").write_bytes(GOLDEN)
    earlier = project / "session-20000101-000000-1"
    earlier.mkdir()
    (earlier / "recorded-1.json").write_text(json.dumps({"schema": store.SCHEMA, "functions": []}))
    proc = user_pytest(project, "--harness-record=.")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    session = store.read(str(project))["folder"]
    replayed, results = replay(project, project.parent / "r.json", project=project)
    return proc, session, replayed, results


def cases(results):
    found = {}
    for (case, point), r in results.items():
        found.setdefault(case, {})[point] = r
    return found


def test_a_custom_gradient_is_recorded_and_replayed_whichever_route_reached_it(hard):
    _, _, _, results = hard
    found = cases(results)
    for name in ("cube_v2", "cube_v1", "cube_imported", "cube_module", "cube_keras"):
        assert {p: r["verdict"]
                for p, r in found[f"recorded.hardlib.routes.{name}"].items()} == {"x=2.0": "pass"}


def test_a_library_decorator_s_functions_are_each_their_own_under_the_user_s_name(hard):
    _, session, _, results = hard
    found = cases(results)
    # sine and wrong_tanh were called at the same value: each keeps its own point.
    assert {p: r["verdict"] for p, r in found["recorded.hardlib.deco.sine"].items()} == \
        {"x=0.5": "pass", "x=1.0": "pass"}
    assert {p: r["verdict"]
            for p, r in found["recorded.hardlib.deco.wrong_tanh"].items()} == {"x=0.5": "fail"}
    assert {p: r["verdict"]
            for p, r in found["recorded.hardlib.deco.weighted"].items()} == {"x=0.5,w=2.0": "pass"}
    wrong = results[("recorded.hardlib.deco.wrong_tanh", "x=0.5")]
    # 1 - tanh(0.5) against the true 1 - tanh(0.5)**2, as the numeric derivative sees it.
    assert np.isclose(wrong["modes"]["eager"]["orders"][1][0]["value"], 1 - np.tanh(0.5), rtol=1e-6)
    assert "numeric=0.7864" in wrong["reason"] and "TypeError" not in json.dumps(
        list(results.values())
    )
    deco = [f for f in store.read(session)["functions"] if f["module"] == "hardlib.deco"]
    assert sorted(f["qualname"] for f in deco) == ["sine", "weighted", "wrong_tanh"]
    assert {f["found_through"] for f in deco} == {"closure"}


def test_same_named_functions_of_two_layers_stay_apart_and_replay_their_source_not_autograph_s(
    hard,
):
    _, session, _, results = hard
    found = cases(results)
    [(doubler_point, doubler)] = found["recorded.hardlib.layers.Doubler.call._g"].items()
    [(halver_point, halver)] = found["recorded.hardlib.layers.Halver.call._g"].items()
    assert doubler_point.startswith("drawn:x=") and doubler["verdict"] == "pass"
    # The wrong layer fails on its own gradient, 0.25 where d(x/2)/dx is 0.5.
    assert halver["verdict"] == "fail" and "eager=0.25 numeric=0.5" in halver["reason"], halver[
        "reason"
    ]
    layers = {f["qualname"]: f for f in store.read(session)["functions"] if f["module"]
              == "hardlib.layers"}
    assert set(layers) == {"Doubler.call.<locals>._g", "Halver.call.<locals>._g"}
    assert all(f["found_through"] == "autograph" and f["file"].endswith("layers.py")
               for f in layers.values())
    assert "FunctionScope" not in json.dumps(list(results.values()))


def test_recording_into_the_project_s_own_folder_touches_none_of_its_files_nor_an_earlier_session(
    hard,
):
    proc, session, replayed, _ = hard
    project = Path(session).parent
    assert (project / "values" / "golden.npy").read_bytes() == GOLDEN
    assert (project / "session-20000101-000000-1" / "recorded-1.json").is_file()
    assert (
        Path(session).name.startswith("session-")
        and Path(session) != project / "session-20000101-000000-1"
    )
    assert (
        f"harness: replaying {session} (the latest of 2 sessions in {project}): 1 process recorded,"
        " each ended normally"
        in replayed.stderr
    )


def test_a_python_float_json_cannot_hold_is_kept_exactly_and_replayed(hard):
    _, session, _, results = hard
    [capped] = [f for f in store.read(session)["functions"] if f["qualname"] == "capped"]
    assert capped["points"][0]["args"][1] == {"float": "inf"}
    assert results[("recorded.hardlib.special.capped", "x=2.0,cap=inf")]["verdict"] == "pass"


def test_a_partial_is_one_warning_naming_it_and_the_session_records_on(hard):
    proc, _, _, results = hard
    warnings = [line for line in proc.stdout.splitlines() if "warning" in line]
    assert warnings == ["harness record: warning: not recording by_two (a functools.partial of "
                        "function scaled): the recorder cannot follow it; the tests and the rest "
                        "of the recording go on"]
    assert (
        results[("recorded.hardlib.deco.sine", "x=1.0")]["verdict"] == "pass"
    )  # called after the partial


def test_values_drawn_for_traced_calls_come_from_what_was_recorded_and_say_so(hard):
    _, _, _, results = hard
    found = cases(results)
    [(label, log)] = [(p, r) for p, r in found["recorded.hardlib.special.log_of"].items()
                      if p.startswith("drawn:")]
    values = np.array(json.loads(label.split("=", 1)[1]))
    assert np.all((values >= 0.5) & (values <= 2.0)) and log["verdict"] == "pass"
    note = next(d for d in log["details"] if d.startswith("recorded:"))
    assert "x uniform in [0.5, 2] (the range of its recorded values)" in note
    [(label, pick)] = found["recorded.hardlib.special.pick"].items()
    index = int(label.rsplit("i=", 1)[1])
    assert 0 <= index < 3 and pick["verdict"] == "pass", pick
    assert (
        "i integers in [0, 3) (the smallest dimension of the other arguments, which it may index)"
        in next(d for d in pick["details"] if d.startswith("recorded:"))
    )


def test_a_gradient_none_by_design_is_said_and_the_argument_differentiated_is_judged(hard):
    _, _, replayed, results = hard
    power = results[("recorded.hardlib.special.power_of", "x=2.0,n=3.0")]
    assert power["verdict"] == "pass" and power["oracles"]["numeric"]["status"] == "match", power
    assert (
        "    - no gradient for n (the function returns None): not judged, the function"
        " differentiating only its other arguments (--strict_none judges the None); the other"
        " arguments are judged"
        in replayed.stdout
    )


def test_a_variable_given_as_the_argument_is_an_input_not_a_variable_the_function_reads(hard):
    _, _, _, results = hard
    assert results[("recorded.hardlib.special.log_of", "x=[1.5]")]["verdict"] == "pass"


def test_a_call_with_values_takes_the_place_of_one_seen_only_while_tracing(hard):
    _, session, _, results = hard
    [twice] = [f for f in store.read(session)["functions"] if f["qualname"] == "twice"]
    # K = 3 points were kept from the three traced calls; the eager call's values replaced one.
    assert twice["calls"] == 4 and len(twice["points"]) == 3
    assert sorted(p["context"] for p in twice["points"]) == ["eager", "tf.function", "tf.function"]
    # Replayed in rank order: the call with values first (harness.record.merging).
    [merged] = [f for f in merging.merged(store.read(session)) if f["qualname"] == "twice"]
    assert [p["context"] for p in merged["points"]] == ["eager", "tf.function", "tf.function"]
    assert results[("recorded.hardlib.special.twice", "x=[0.25]")]["verdict"] == "pass"


def test_a_function_recorded_at_several_dtypes_shows_each_point_s_dtype(hard):
    _, _, _, results = hard
    assert set(cases(results)["recorded.hardlib.special.square_any"]) == {"x:float16=[1.5,-2.0]",
                                                                          "x:bfloat16=[1.5,-2]"}


def test_with_eager_recording_a_call_made_inside_fit_is_recorded_with_its_values(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(DATA / "record_hard", project)
    proc = user_pytest(project, "-k", "fit", f"--harness-record={tmp_path / 'rec'}",
                       "--harness-record-eager")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = store.read(str(tmp_path / "rec"))
    assert data["sessions"][0]["eager"]
    layers = {f["qualname"]: f for f in data["functions"] if f["module"] == "hardlib.layers"}
    assert set(layers) == {"Doubler.call.<locals>._g", "Halver.call.<locals>._g"}
    for f in layers.values():
        # Keras builds the model on a symbolic input (a graph, a signature only); fit's step, run
        # eagerly, makes the call with the batch's values.
        assert [(p["context"], "array" in p["args"][0])
                for p in f["points"]] == [("tf.function", False),
                                                                                  ("eager", True)]
        assert f["points"][1]["args"][0]["shape"] == [4, 1]


def test_a_closure_over_a_variable_is_replayed_with_the_variable_made_again_and_judged_for_it(hard):
    _, _, _, results = hard
    [(point,
      scaled)] = cases(results)["recorded.hardlib.special.make_scaler.scaled_by_variable"].items()
    assert point == "x=2.0" and scaled["verdict"] == "fail"
    # d(x v)/dx = v = 3 is right; d(x v)/dv = x = 2, where the grad_fn says -2.
    assert [o["value"] for o in scaled["modes"]["eager"]["orders"][1]] == [3.0, -2.0]
    assert "wrt var0: eager=-2 numeric=2" in scaled["reason"], scaled["reason"]


# -- the session's file survives what happens to its process ---------------------------------------

def small_project(tmp_path, tests, conftest=""):
    folder = tmp_path / "small"
    shutil.copytree(DATA / "record_project" / "mylib", folder / "mylib")
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "conftest.py").write_text(textwrap.dedent(conftest))
    (folder / "test_small.py").write_text(textwrap.dedent(tests))
    return folder


def test_a_process_killed_during_the_tests_keeps_what_it_recorded_and_replay_says_how_it_ended(
    tmp_path,
):
    folder = small_project(tmp_path, """
        import os
        import tensorflow as tf
        from mylib import ops

        def test_one():
            assert float(ops.square(tf.constant(2.0))) == 4.0

        def test_two():
            ops.scaled_square(tf.constant(3.0))
            os._exit(3)  # no atexit, no pytest hook: as a kill or a crash would end it
    """)
    proc = user_pytest(folder, f"--harness-record={tmp_path / 'rec'}")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    data = store.read(str(tmp_path / "rec"))
    assert [f["qualname"] for f in data["functions"]] == ["square"]  # test_two never finished
    assert data["sessions"][0]["ended"] == "running"
    replayed, results = replay(tmp_path / "rec", tmp_path / "r.json", project=folder)
    assert results[("recorded.mylib.ops.square", "x=2.0")]["verdict"] == "pass"
    assert (
        "1 process recorded; 1 did not end normally (killed, os._exit or a crash: recorded-"
        in replayed.stderr
    )


def test_under_xdist_every_worker_s_recording_is_kept_and_the_controller_sums_them_up(tmp_path):
    pytest.importorskip("xdist",
                        reason="pytest-xdist is the test extra's; without it there are no workers")
    project = tmp_path / "project"
    shutil.copytree(DATA / "record_project", project)
    proc = user_pytest(project, "tests", "-n", "2", f"--harness-record={tmp_path / 'rec'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = store.read(str(tmp_path / "rec"))
    assert len(data["sessions"]) == 2 and {s["ended"] for s in data["sessions"]} == {"finished"}
    assert sum(s["tests"] for s in data["sessions"]) == 6
    qualnames = sorted(f["qualname"] for f in data["functions"])
    assert qualnames == sorted(["square", "scaled_square", "clipped_relu",
                                "make_power.<locals>.power", "make_power.<locals>.power",
                                "softsign", "test_scaled_by_an_object.<locals>.times"])
    summary = [line for line in proc.stdout.splitlines() if line.startswith("harness record:")]
    # Counted as replay counts them: make_power's two closures are one function.
    assert summary == ["harness record: 6 custom-gradient functions called, 7 points kept (1 "
                       f"without values, to be replayed at drawn values) in {data['folder']}; "
                       "nothing dropped; 1 closure could not be copied (replay skips it, saying "
                       "why) (2 processes wrote their files)"]


def test_a_write_that_fails_is_in_the_last_line_with_what_it_cost(tmp_path):
    folder = small_project(tmp_path, """
        import tensorflow as tf
        from mylib import ops

        def test_one():
            assert float(ops.square(tf.constant(2.0))) == 4.0
    """, conftest="""
        from pathlib import Path
        from harness.record import recorder

        # A folder that cannot be written, as on a full disk: its values/ is a file.
        blocked = Path(recorder.installed_session().folder) / "blocked"
        blocked.mkdir()
        (blocked / "values").write_text("")
        recorder.installed_session().writer.folder = blocked
    """)
    proc = user_pytest(folder, f"--harness-record={tmp_path / 'rec'}")
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout + proc.stderr
    [line] = [line for line in proc.stdout.splitlines() if line.startswith("harness record:")]
    assert "could not write the recording (FileExistsError" in line, line
    assert (
        line.endswith("1 point recorded since the last write is lost")
        and "nothing dropped" not in line
    )
