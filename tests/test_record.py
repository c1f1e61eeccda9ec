"""Recording a user's own test suite and replaying it (harness.record), end to end.

The user project is tests/data/record_project: a library of custom gradients (one right, one
that ignores dy, one with a Python `if` on a tensor, a factory's closure, one its tests call only
inside tf.function) and its own pytest tests, which all pass, plus a test whose custom gradient
closes over an object. It is recorded once, with the plugin, and replayed once; the tests below
read those runs. Each starts TensorFlow in processes of its own, so all are slow.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from harness.record import store
from tests import helpers
from tests.helpers import DATA, REPO

pytestmark = pytest.mark.slow


def user_pytest(folder, *args, env=None):
    environment = dict(env or os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *helpers.RECORD_PLUGIN,
                           *args], capture_output=True, text=True, cwd=folder,
                          env=environment, timeout=600)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("user") / "project"
    shutil.copytree(DATA / "record_project", folder)
    return folder


@pytest.fixture(scope="module")
def plain(project):
    return user_pytest(project, "tests")


@pytest.fixture(scope="module")
def recorded(project):
    folder = project.parent / "recorded"
    proc = user_pytest(project, "tests", f"--harness-record={folder}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, folder


@pytest.fixture(scope="module")
def replayed(recorded):
    _, folder = recorded
    out = folder.parent / "out"
    out.mkdir()
    proc = helpers.harness("replay", str(folder), "--mode=all", f"--json_out={out / 'r.json'}",
                           f"--junit_out={out / 'r.xml'}", f"--repro_dir={out / 'repros'}",
                           cwd=str(out), env=dict(os.environ, PYTHONPATH=REPO), timeout=600)
    results = {(r["case"], r["point"]): r
               for r in json.loads((out / "r.json").read_text())["results"]}
    return proc, results, out


def by_case(results):
    found = {}
    for (case, _), r in results.items():
        found.setdefault(case, []).append(r)
    return found


def test_recording_keeps_every_called_function_with_the_test_and_the_context_of_its_call(recorded):
    proc, folder = recorded
    read = store.read(str(folder))
    functions = {(f["qualname"], tuple(map(tuple, f["captured"]))): f for f in read["functions"]}
    assert set(functions) == {("square", ()), ("scaled_square", ()), ("clipped_relu", ()),
                              ("make_power.<locals>.power", (("p", "3.0"),)),
                              ("make_power.<locals>.power", (("p", "2.0"),)), ("softsign", ()),
                              ("test_scaled_by_an_object.<locals>.times", ())}
    assert Path(read["folder"]).parent == folder and Path(read["folder"]).name.startswith(
        "session-"
    )
    square = functions[("square", ())]
    assert (
        square["module"] == "mylib.ops"
        and square["file"].endswith("mylib/ops.py")
        and square["line"] == 6
    )
    assert square["importable"] and square["points"][0]["node"] == "tests/test_ops.py::test_square"
    assert square["points"][0]["context"] == "eager"
    assert square["points"][0]["args"][0]["dtype"] == "float32" and square["points"][0]["args"][0][
        "shape"
    ] == [2]
    for p in ("3.0", "2.0"):  # a closure each, each copied with its own p
        power = functions[("make_power.<locals>.power", (("p", p),))]
        assert not power["importable"]
        assert [pt["function"]["copy"]["closure"]
                for pt in power["points"]] == [[{"python": float(p)}]]
    softsign = functions[("softsign", ())]["points"][0]
    assert softsign["context"] == "tf.function" and softsign["args"] == [
        {"spec": {"dtype": "float32", "shape": [2]}}
    ]
    times = functions[("test_scaled_by_an_object.<locals>.times", ())]["points"][0]
    assert "its closure variable 'scale' holds a Scale object" in times["function"]["problem"]
    assert [s["ended"] for s in read["sessions"]] == ["finished"]
    summary = [line for line in proc.stdout.splitlines() if line.startswith("harness record:")]
    # make_power's two closures are one function, as replay makes them one case: six.
    assert summary == ["harness record: 6 custom-gradient functions called, 7 points kept (1 "
                       "without values, to be "
                       f"replayed at drawn values) in {read['folder']}; nothing dropped; 1 closure "
                       "could not be copied (replay skips it, saying why)"]


def test_the_tests_outcomes_and_output_are_the_same_with_recording_on(plain, recorded):
    def said(proc):
        lines = [line for line in proc.stdout.splitlines()
                 if not line.startswith("harness record:")]
        # the last line ends with the session's time
        return [line.split(" in ")[0] for line in lines]

    assert plain.returncode == recorded[0].returncode == 0
    assert said(plain) == said(recorded[0]) and "6 passed" in said(plain)[-1]


def test_replay_finds_the_two_bugs_and_names_the_test_that_called_each(replayed, recorded):
    proc, results, _ = replayed
    assert proc.returncode == 1, proc.stdout + proc.stderr
    verdicts = {case: [r["verdict"] for r in rs] for case, rs in by_case(results).items()}
    assert verdicts == {"recorded.mylib.ops.square": ["pass"],
                        "recorded.mylib.ops.scaled_square": ["fail"],
                        "recorded.mylib.ops.clipped_relu": ["fail"],
                        "recorded.mylib.ops.make_power.power": ["pass", "pass"],
                        "recorded.mylib.ops.softsign": ["pass"],
                        "recorded.test_ops.test_scaled_by_an_object.times":
                        ["skip"]}
    scaled = results[("recorded.mylib.ops.scaled_square", "x=3.0")]
    # Linearity in dy leads (it needs no numeric derivative); the upstream oracle's line follows.
    assert scaled["reason"].startswith("grad_fn is not linear in its upstream gradient")
    assert "grad_fn drops its upstream gradient" in scaled["reason"]
    assert any(d.startswith("grad_fn mishandles its upstream gradient") for d in scaled["details"])
    assert (
        "recorded: an eager call made by tests/test_ops.py::test_scaled_square" in scaled["details"]
    )
    relu = results[("recorded.mylib.ops.clipped_relu", "x=1.5")]
    assert "OperatorNotAllowedInGraphError" in relu["reason"]
    assert "recorded: an eager call made by tests/test_ops.py::test_clipped_relu" in relu["details"]
    text = proc.stdout
    assert "    - recorded: an eager call made by tests/test_ops.py::test_scaled_square" in text


def test_a_function_that_cannot_be_replayed_is_skipped_with_the_reason(replayed):
    _, results, _ = replayed
    [times] = by_case(results)["recorded.test_ops.test_scaled_by_an_object.times"]
    # named as the function names it, though it cannot be made again
    assert times["point"] == "x=1.0"
    assert "cannot be replayed: it cannot be imported by name" in times["reason"]
    assert (
        "its closure variable 'scale' holds a Scale object, which is not plain data" in times[
            "reason"
        ]
    )


def test_a_point_seen_only_while_tracing_is_replayed_at_drawn_values_labelled_so(replayed):
    _, results, _ = replayed
    [softsign] = by_case(results)["recorded.mylib.ops.softsign"]
    assert softsign["point"].startswith("drawn:x=[") and softsign["verdict"] == "pass"
    note = next(d for d in softsign["details"] if d.startswith("recorded:"))
    assert note.startswith("recorded: a call while tracing a tf.function made by "
                           "tests/test_ops.py::test_softsign_in_function; it had no values then, "
                           "so they are drawn")
    assert "stand-ins for values the trace did not show" in note


def test_recorded_points_are_labelled_from_their_values(replayed):
    _, results, _ = replayed
    assert ("recorded.mylib.ops.square", "x=[1.0,2.0]") in results
    # The factory's two closures are one case, the second point labelled apart.
    assert {p for c, p in results if c == "recorded.mylib.ops.make_power.power"} == {
        "x=2.0", "x=2.0#2"}


def test_a_factory_s_closures_with_different_values_are_one_case_each_point_saying_its_closure(
    replayed,
):
    # The case id names where the function is defined, never what it captured: a closure over
    # another value (a random one, in a real suite) is a point of the same case, not a new case.
    _, results, _ = replayed
    power = {r["point"]: r for (case, _), r in results.items()
             if case == "recorded.mylib.ops.make_power.power"}
    by_closure = {next(d.split("its closure holding ")[1] for d in r["details"]
                       if "its closure holding " in d): r for r in power.values()}
    assert set(by_closure) == {"p=3.0", "p=2.0"}
    # d/dx x**3 = 12 and d/dx x**2 = 4 at x = 2: each point ran its own closure's p.
    assert by_closure["p=3.0"]["modes"]["eager"]["orders"][1][0]["value"] == 12.0
    assert by_closure["p=2.0"]["modes"]["eager"]["orders"][1][0]["value"] == 4.0


def test_a_rerun_command_reruns_its_point_through_replay(replayed, recorded):
    _, results, out = replayed
    _, folder = recorded
    session = store.read(str(folder))["folder"]  # the rerun names the session it replayed
    command = results[("recorded.mylib.ops.scaled_square", "x=3.0")]["rerun"]
    assert command == (f"python -m harness replay {session} --mode=all "
                       "'--cases=recorded.mylib.ops.scaled_square[x=3.0]'")
    proc = subprocess.run([sys.executable] + shlex.split(command)[1:], capture_output=True,
                          text=True, cwd=str(out), timeout=600,
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 1 and proc.stdout.startswith(
        "FAIL     recorded.mylib.ops.scaled_square[x=3.0]"
    )
    assert proc.stdout.splitlines()[-1].startswith("1 case at 1 point: 1 fail in ")


def test_replay_accept_writes_the_expectations_file_and_the_next_replay_reads_it(recorded,
                                                                                  tmp_path):
    # As pytest --harness-accept does, for a recording made by any command: judged without the
    # file, the file written from what failed, and then found from this folder without a flag.
    _, folder = recorded
    env = dict(os.environ, PYTHONPATH=REPO)
    chosen = "--cases=recorded.mylib.ops.scaled_square,recorded.mylib.ops.clipped_relu"
    accepted = helpers.harness("replay", str(folder), chosen, "--accept", cwd=str(tmp_path),
                               env=env, timeout=600)
    reviewed = tmp_path / "harness-expectations.json"
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert (f"harness: accepted into {reviewed}: 2 changes\n"
            "harness:   + recorded.mylib.ops.clipped_relu function,graph:"
            "OperatorNotAllowedInGraphError\n"
            "harness:   + recorded.mylib.ops.scaled_square linearity,upstream:values differ\n") \
        in accepted.stderr
    assert "2 fail" in accepted.stdout.splitlines()[-1]  # judged as found, then accepted
    again = helpers.harness("replay", str(folder), chosen, cwd=str(tmp_path), env=env,
                            timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines()[-1].startswith("2 cases at 2 points: 2 xfail in ")
    helpers.assert_usage_error(
        helpers.harness("replay", str(folder), "--accept", "--expectations=", cwd=str(tmp_path)),
        "--accept writes the expectations file, and --expectations='' names none")


def test_repro_dir_writes_a_reproduction_of_each_recorded_failure(replayed):
    _, _, out = replayed
    for case, point in (("recorded.mylib.ops.scaled_square",
                         "x=3.0"), ("recorded.mylib.ops.clipped_relu", "x=1.5")):
        folder = out / "repros" / case / point
        assert (folder / "repro.py").is_file() and (folder
                                                    / "ISSUE.md").is_file(), sorted(out.rglob("*"))
    assert "def clipped_relu(x):" in (out / "repros" / "recorded.mylib.ops.clipped_relu" / "x=1.5"
                                      / "repro.py").read_text()


def test_a_replay_report_goes_into_junit_and_the_version_matrix(replayed):
    _, _, out = replayed
    assert (
        '<testcase classname="recorded.mylib.ops.scaled_square" name="x=3.0"' in (
            out / "r.xml"
        ).read_text()
    )
    xmlschema = pytest.importorskip("xmlschema", reason="xmlschema is the test extra's")
    xmlschema.XMLSchema(str(DATA / "junit-10.xsd")).validate(str(out / "r.xml"))
    proc = helpers.harness("merge", str(out / "r.json"), f"--markdown_out={out / 'm.md'}",
                           timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "recorded.mylib.ops.scaled_square" in (out / "m.md").read_text()


def test_repro_of_a_recorded_case_reads_the_recorded_folder(recorded, tmp_path):
    _, folder = recorded
    proc = helpers.harness("repro", "recorded.mylib.ops.clipped_relu", f"--recorded={folder}",
                           f"--out={tmp_path / 'r'}", cwd=str(tmp_path),
                           env=dict(os.environ, PYTHONPATH=REPO), timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (tmp_path / "r" / "repro.py").is_file() and (tmp_path / "r" / "ISSUE.md").is_file()


def test_the_record_command_records_a_unittest_suite_naming_each_test(project, tmp_path):
    (tmp_path / "test_plain_unittest.py").write_text(textwrap.dedent("""
        import unittest

        import tensorflow as tf

        from mylib import ops


        class Square(unittest.TestCase):
            def test_square(self):
                self.assertEqual(float(ops.square(tf.constant(4.0))), 16.0)


        if __name__ == "__main__":
            unittest.main()
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(project), REPO]),
               TF_CPP_MIN_LOG_LEVEL="2")
    proc = helpers.harness("record", str(tmp_path / "rec"), "--", sys.executable, "-m", "unittest",
                           "test_plain_unittest", cwd=str(tmp_path), env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    [function] = store.read(str(tmp_path / "rec"))["functions"]
    assert function["qualname"] == "square"
    assert function["points"][0]["node"] == "test_plain_unittest.Square.test_square"
    assert "harness record: 1 custom-gradient function called, 1 point kept" in proc.stderr


def test_a_recorder_failure_in_a_test_is_one_warning_line_and_the_tests_pass(project, tmp_path):
    folder = tmp_path / "broken"
    shutil.copytree(project / "mylib", folder / "mylib")
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "conftest.py").write_text(textwrap.dedent("""
        from harness.record import recorder

        def broken(self, *args, **kwargs):
            raise ZeroDivisionError("a recorder fault")

        recorder.Session.record = broken
    """))
    (folder / "test_two.py").write_text(textwrap.dedent("""
        import tensorflow as tf
        from mylib import ops

        def test_one():
            assert float(ops.square(tf.constant(2.0))) == 4.0

        def test_two():
            assert float(ops.square(tf.constant(3.0))) == 9.0
    """))
    proc = user_pytest(folder, f"--harness-record={tmp_path / 'rec'}")
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout + proc.stderr
    warnings = [line for line in (proc.stdout + proc.stderr).splitlines() if "warning" in line]
    assert warnings == ["harness record: warning: recording stopped (ZeroDivisionError: a recorder "
                        "fault); the tests went on, and what was recorded before is kept"]


def test_a_script_s_functions_replay_with_their_arguments_as_called_and_the_variable_read(
    tmp_path,
):
    """`record` on a script: its functions live in __main__ (copied, over the script's globals made
    again), a Python scalar and a keyword argument are passed as recorded and shown in the label
    (the keyword argument makes the graph modes fail, as custom_gradient takes one in eager code
    only), and a function that reads a variable is replayed with the variable made again in each
    mode."""
    (tmp_path / "script.py").write_text(textwrap.dedent("""
        import tensorflow as tf

        SCALE = tf.Variable(3.0, name="scale")


        @tf.custom_gradient
        def shifted_cube(x, shift, power=3.0):
            def grad(dy):  # shift is an input too (a Python float made a tensor), with no gradient
                return power * tf.pow(x + shift, power - 1.0) * dy, None
            return tf.pow(x + shift, power), grad


        @tf.custom_gradient
        def scaled(x):
            def grad(dy, variables=None):
                return dy * SCALE, [dy * x]
            return x * SCALE, grad


        if __name__ == "__main__":
            with tf.GradientTape() as tape:
                x = tf.constant(2.0)
                tape.watch(x)
                y = shifted_cube(x, 0.5, power=2.0) + scaled(x)
            print(float(tape.gradient(y, x)))
    """))
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    folder = tmp_path / "rec"
    proc = helpers.harness("record", str(folder), "--", sys.executable, "script.py",
                           cwd=str(tmp_path), env=env, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "8.0", proc.stdout + proc.stderr
    functions = {f["qualname"]: f for f in store.read(str(folder))["functions"]}
    assert functions["scaled"]["points"][0]["variables"][0]["name"] == "scale:0"
    assert functions["scaled"]["grad_takes_variables"]
    proc = helpers.harness("replay", str(folder), "--mode=all", f"--json_out={tmp_path / 'r.json'}",
                           cwd=str(tmp_path), env=env, timeout=600)
    results = {r["case"]: r for r in json.loads((tmp_path / "r.json").read_text())["results"]}
    cube = results["recorded.__main__.shifted_cube"]
    assert cube["point"] == "x=2.0,shift=0.5,power=2.0"
    # Passed as the script passed it, the keyword argument is what TensorFlow refuses in graphs.
    assert (
        cube["verdict"] == "fail"
        and "supports keywords arguments only when eager execution is enabled" in cube["reason"]
    ), cube
    [note] = [d for d in cube["details"] if d.startswith("recorded: ")]
    assert note.startswith("recorded: an eager call made by code outside any test (an import, a "
                           "fixture or the script itself)"), note
    # Its copy reads the script's globals: the script's top level ran again to define it, said.
    assert note.endswith("; its script's top level ran again in the replay's worker to define it "
                         "(as a module not named __main__, with the argv it was recorded with), so "
                         "what that top level does (a log line, a file written) happened again")
    # The variable it reads, a global of the script, is made again at its recorded value (3) in
    # each mode, and judged too: d(x s)/dx = s = 3, d(x s)/ds = x = 2.
    scaled = results["recorded.__main__.scaled"]
    assert scaled["verdict"] == "pass", scaled
    assert [o["value"] for o in scaled["modes"]["graph"]["orders"][1]] == [3.0, 2.0]


def test_a_point_over_the_byte_limit_keeps_its_signature_and_the_drop_is_said(project, tmp_path):
    folder = tmp_path / "small"
    shutil.copytree(project / "mylib", folder / "mylib")
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "conftest.py").write_text(textwrap.dedent("""
        from harness.record import recorder, store

        recorder.installed_session().limits = store.Limits(points=3, function_bytes=16)
    """))
    (folder / "test_big.py").write_text(textwrap.dedent("""
        import numpy as np
        import tensorflow as tf
        from mylib import ops

        def test_small_then_big():
            ops.square(tf.constant([1.0, 2.0]))           # 8 bytes: kept
            # 64 more bytes: over the 16 of a function
            ops.square(tf.constant(np.ones(16, np.float32)))
    """))
    rec = tmp_path / "rec"
    proc = user_pytest(folder, f"--harness-record={rec}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("1 custom-gradient function called, 2 points kept (1 without values, to be replayed at "
            "drawn values)"
            in proc.stdout
            and "dropped: the values of 1 point over the byte limit (kept as a signature)"
            in proc.stdout), proc.stdout
    [square] = store.read(str(rec))["functions"]
    small, big = square["points"]
    assert "array" in small["args"][0] and big["args"][0] == {"spec": {"dtype": "float32",
                                                                       "shape": [16]}}
    assert big["note"] == "values over the recording's byte limit: replayed at drawn values"


# -- a Keras 3 model trained with fit --------------------------------------------------------------

@pytest.fixture(scope="module")
def keras3_replayed(project):
    pytest.importorskip("keras", minversion="3")
    folder = project.parent / "recorded-keras3"
    proc = user_pytest(project, "keras3_tests", f"--harness-record={folder}",
                       env={k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = project.parent / "out-keras3"
    out.mkdir()
    replay = helpers.harness("replay", str(folder), "--mode=all,keras3",
                             f"--json_out={out / 'r.json'}", cwd=str(out),
                             env=dict(os.environ, PYTHONPATH=REPO), timeout=900)
    return store.read(str(folder)), replay, json.loads((out / "r.json").read_text())["results"]


def test_a_keras3_layer_s_custom_gradient_trained_by_fit_is_recorded_and_judged_in_the_keras3_steps(
        keras3_replayed):
    read, proc, results = keras3_replayed
    [softplus] = read["functions"]
    assert (softplus["module"], softplus["qualname"]) == ("mylib.layers", "softplus")
    # fit calls the layer while it builds the model from a symbolic batch and while it traces its
    # train function: points without values, replayed at drawn ones.
    assert {p["node"] for p in softplus["points"]} == {
        "keras3_tests/test_layers.py::test_softplus_dense_trains_with_fit"}
    assert {p["context"] for p in softplus["points"]} == {"tf.function"}
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert results and all(r["case"] == "recorded.mylib.layers.softplus" for r in results)
    for r in results:
        assert r["verdict"] == "pass", r["reason"]
        assert r["oracles"]["numeric"]["status"] == "match"
        # d softplus(x) / dx = sigmoid(x) = 1 - exp(-softplus(x)): read from the forward, as the
        # plain contraction's upstream is ones.
        y = np.array(r["modes"]["eager"]["orders"][0][0]["value"], np.float64)
        for mode in ("keras3_eager", "keras3_fit", "keras3_xla", "keras3_mixed", "keras3_mirrored"):
            outcome = r["modes"][mode]
            assert outcome["status"] == "ok", (mode, outcome)
            np.testing.assert_allclose(outcome["orders"][1][0]["value"], 1 - np.exp(-y),
                                       rtol=2e-3 if mode == "keras3_mixed" else 1e-5, err_msg=mode)
