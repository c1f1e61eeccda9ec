"""Recording (harness.record): the parts that need no TensorFlow.

The pytest plugin's options and its inertness without them, the entry point that registers it,
the recorded folder's format and its refusals, copies of closures, replay's labels and notes,
and the command line's refusals of a bad recording. The end-to-end runs (record a suite, replay
it) start TensorFlow and are in tests/test_record.py.
"""

import argparse
import configparser
import json
import os
import shlex
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from harness.cli import settings as cli_settings
from harness.record import recorder, replay, serial, store
from harness.records import CaseInfo, RunOptions
from harness.judge.verdict import judge_measured
from tests import helpers
from tests.helpers import REPO
from tests.unit import in_process


def pytest_run(env, folder, *args):
    # Only the recording plugin is loaded: the installed ones (Hypothesis, xdist, ...) would take
    # most of the child's second and have no part in what these tests check.
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *helpers.RECORD_PLUGIN,
                           *args], capture_output=True, text=True, cwd=folder,
                          env=dict(env, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"), timeout=120)


class _EarlyConfig:
    """What pytest hands the plugin's pytest_load_initial_conftests: the options parsed so far and
    pytest's own plugin manager, which checks each hook the plugin registers against pytest's
    hook specifications."""

    def __init__(self, **options):
        self.known_args_namespace = argparse.Namespace(**options)
        self.pluginmanager = pytest.PytestPluginManager()


class _Terminal:
    def __init__(self):
        self.lines = []

    def write_line(self, line, **markup):
        self.lines.append(line)


def _start_recording(folder, points=3):
    """The plugin's start as pytest calls it, in this process: what it registered (by its hooks'
    names) and the lines it writes at the end of the session."""
    from harness.record import plugin

    early = _EarlyConfig(harness_record=str(folder), harness_record_points=points,
                         harness_record_eager=False)
    plugin.pytest_load_initial_conftests(early, parser=None, args=[f"--harness-record={folder}"])
    early.pluginmanager.check_pending()
    hooks = sorted(caller.name for caller in early.pluginmanager.get_hookcallers(
        early.pluginmanager.get_plugin("harness-record-session")))
    terminal = _Terminal()
    early.pluginmanager.hook.pytest_terminal_summary(terminalreporter=terminal, exitstatus=0,
                                                     config=None)
    return hooks, terminal.lines


# -- the plugin ----------------------------------------------------------------------------------

def test_the_plugin_is_registered_through_the_pytest11_entry_point():
    config = configparser.ConfigParser()
    config.read(f"{REPO}/setup.cfg")
    entries = [line.strip() for line in config["options.entry_points"]["pytest11"].splitlines()
               if line.strip()]
    assert "harness-record = harness.record.plugin" in entries
    assert "harness.record" in config["options"]["packages"].split()


def test_without_the_flag_the_plugin_imports_neither_the_recorder_nor_tensorflow(monkeypatch):
    # pytest loads the plugin in every session of a user who installed harness: loaded afresh here,
    # with the recorder unloaded, and its hooks called as pytest calls them without the flag.
    import importlib

    import harness.record

    for name in ("plugin", "recorder", "store"):
        # else `from harness.record import` finds it
        monkeypatch.delattr(harness.record, name, raising=False)
        monkeypatch.delitem(sys.modules, f"harness.record.{name}", raising=False)
    loaded, finders = set(sys.modules), list(sys.meta_path)
    plugin = importlib.import_module("harness.record.plugin")
    # A hook added later must be called here too.
    assert sorted(name for name in vars(plugin) if name.startswith("pytest_")) == [
        "pytest_addoption", "pytest_load_initial_conftests"]
    options = []

    class Group:
        def addoption(self, *names, **how):
            options.append(names[0])

    class Parser:
        def getgroup(self, name, description=""):
            return Group()

    plugin.pytest_addoption(Parser())
    early = _EarlyConfig(harness_record=None, harness_record_points=3, harness_record_eager=False)
    plugin.pytest_load_initial_conftests(early, parser=None, args=[])
    assert options == ["--harness-record", "--harness-check", "--harness-check-mode",
                       "--harness-check-jobs", "--harness-check-timeout", "--harness-check-json",
                       "--harness-expectations",
                       "--harness-accept", "--harness-strict", "--harness-record-points",
                       "--harness-record-include", "--harness-record-eager"]
    assert early.pluginmanager.get_plugin("harness-record-session") is None
    assert sorted(set(sys.modules) - loaded) == ["harness.record.plugin"]
    assert sys.meta_path == finders


@pytest.mark.subprocess
def test_with_the_flag_the_recorder_is_installed_before_the_first_conftest_is_imported(
    tmp_path, no_tensorflow
):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    # conftest.py is the first user code pytest imports: the recorder must already be waiting for
    # TensorFlow's import then, so a module decorating at import time is seen.
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        from harness.record import recorder

        SEEN_AT_CONFTEST = recorder.installed_session() is not None
    """))
    (tmp_path / "test_early.py").write_text(textwrap.dedent("""
        import sys

        import conftest

        def test_the_recorder_was_there_before_conftest():
            assert conftest.SEEN_AT_CONFTEST
            assert any(type(f).__name__ == "_Finder" for f in sys.meta_path)
    """))
    proc = pytest_run(no_tensorflow, tmp_path, f"--harness-record={tmp_path / 'rec'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr


# A recorder that cannot start is a usage error before any test runs: a recording (or a check)
# that would record nothing must not pass as one that did.

def test_a_recorder_that_cannot_start_is_a_usage_error_naming_the_folder(tmp_path):
    (tmp_path / "a_file").write_text("")
    with pytest.raises(pytest.UsageError) as raised:
        _start_recording(tmp_path / "a_file")
    assert str(raised.value).startswith(f"--harness-record={tmp_path / 'a_file'}: cannot make the "
                                        "recording's folder there (FileExistsError")
    assert str(raised.value).endswith("; name a folder you can write")


def test_record_points_below_one_is_a_usage_error(tmp_path):
    with pytest.raises(pytest.UsageError) as raised:
        _start_recording(tmp_path / "rec", points=0)
    assert str(raised.value) == "--harness-record-points=0: keep at least 1 point per function"
    assert not (tmp_path / "rec").exists()


# -- the folder ------------------------------------------------------------------------------------

def recording(folder, functions, **extra):
    folder.mkdir(parents=True, exist_ok=True)
    (folder
     / "recorded-1.json").write_text(json.dumps(dict({"schema": store.SCHEMA,
                                                      "functions": functions},
                                                          **extra)))
    return folder


def test_reading_a_missing_folder_says_how_to_record_one(tmp_path):
    with pytest.raises(store.RecordError,
                       match=r"no such directory; record one with python -m pytest "
                                                r"--harness-record=DIR"):
        store.read(str(tmp_path / "absent"))


def test_reading_a_folder_without_a_recording_says_so(tmp_path):
    with pytest.raises(store.RecordError,
                       match=r"holds no recording \(session-\*/recorded-\*\.json\)"):
        store.read(str(tmp_path))


def test_a_file_that_is_not_json_is_refused_naming_it(tmp_path):
    (tmp_path / "recorded-7.json").write_text("{not json")
    with pytest.raises(store.RecordError, match=r"recorded-7\.json: cannot read it as JSON"):
        store.read(str(tmp_path))


def test_a_file_of_another_schema_is_refused(tmp_path):
    recording(tmp_path, [], schema="harness.report/1")
    (tmp_path
     / "recorded-1.json").write_text(json.dumps({"schema": "harness.report/1", "functions": []}))
    with pytest.raises(store.RecordError,
                       match=r"schema 'harness.report/1', not harness.recorded/2"):
        store.read(str(tmp_path))


def test_a_value_file_that_is_gone_costs_the_points_that_use_it_not_the_recording(tmp_path):
    recording(tmp_path, [{"module": "m", "qualname": "f", "parameters": ["x"], "points": [
        {"args": [{"array": "values/1-0.npy", "dtype": "float32", "shape": []}]},
        {"args": [{"array": "values/1-1.npy", "dtype": "float32", "shape": []}]}]}])
    (tmp_path / "values").mkdir()
    np.save(tmp_path / "values" / "1-1.npy", np.float32(2.5))
    data = store.read(str(tmp_path))  # the folder is read whole, though one file is gone
    record, loader = data["functions"][0], replay._Loader(data["folder"])
    gone, kept = (replay._point(record, p, ["x"], loader, 0, False, set())
                  for p in record["points"])
    assert gone.problem == (f"the recorded value of its argument x is missing (values/1-0.npy is "
                            f"not in {tmp_path}: removed after recording, or never written)")
    assert gone.point.label == "x=missing"
    assert not kept.problem and kept.point.label == "x=2.5"


def test_values_round_trip_through_the_folder_with_their_dtype_and_shape(tmp_path):
    value = np.arange(6, dtype=np.float64).reshape(2, 3) / 7
    entry = {"array": "values/1-0.npy", "dtype": "float64", "shape": [2, 3]}
    writer = store.Writer(str(tmp_path))
    writer.write({"functions": [{"module": "m", "qualname": "f", "points": [{"args": [entry]}]}]},
                 {"1-0.npy": value})
    [written] = tmp_path.glob("recorded-*.json")
    read = store.read(str(tmp_path))
    assert read["functions"][0]["points"][0]["args"][0] == entry
    loaded = store.load_array(str(tmp_path), entry)
    assert loaded.dtype == np.float64 and loaded.shape == (2, 3) and np.array_equal(loaded, value)
    assert json.loads(written.read_text())["schema"] == "harness.recorded/2"


def test_writing_again_adds_only_new_values_and_replaces_the_file_whole(tmp_path):
    writer = store.Writer(str(tmp_path))
    writer.write({"functions": []}, {"1-0.npy": np.zeros(2)})
    # a value already written is not rewritten
    (tmp_path / "values" / "1-0.npy").write_bytes(b"left alone")
    writer.write({"functions": [], "ended": "finished"}, {"1-0.npy": np.zeros(2),
                                                          "1-1.npy": np.ones(3)})
    assert (tmp_path / "values" / "1-0.npy").read_bytes() == b"left alone"
    assert np.array_equal(np.load(tmp_path / "values" / "1-1.npy"), np.ones(3))
    assert json.loads(writer.path.read_text())["ended"] == "finished"
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_session_gets_a_new_folder_and_deletes_nothing_of_the_user_s_or_an_earlier_session_s(
    tmp_path,
):
    (tmp_path / "values").mkdir()
    (tmp_path / "values" / "golden.npy").write_bytes(b"mine")
    first = store.new_session(str(tmp_path))
    recording(Path(first), [], tensorflow="2.20.0")
    second = store.new_session(str(tmp_path))
    recording(Path(second), [], tensorflow="2.21.0")
    assert first != second and Path(first).parent == Path(second).parent == tmp_path
    assert (tmp_path / "values" / "golden.npy").read_bytes() == b"mine"
    # A folder of sessions reads as its latest; a session's own folder reads as itself.
    assert store.read(str(tmp_path))["folder"] == second
    assert store.read(str(tmp_path))["sessions"][0]["tensorflow"] == "2.21.0"
    assert store.read(first)["sessions"][0]["tensorflow"] == "2.20.0"
    assert store.session_folder(str(tmp_path)) == (second, 2)


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), 2 ** 70, -(2 ** 64) - 1, 0.1, 7,
                                   True, None, "s"])
def test_a_python_argument_json_cannot_hold_is_kept_exactly(value):
    entry = json.loads(json.dumps(store.python_entry(value), allow_nan=False))
    back = store.python_value(entry)
    assert back == value and type(back) is type(value)


def test_a_nan_argument_is_kept_as_nan():
    entry = json.loads(json.dumps(store.python_entry(float("nan")), allow_nan=False))
    assert np.isnan(store.python_value(entry))


def test_how_a_session_ended_is_said_naming_a_process_that_did_not_finish():
    data = {"sessions": [{"file": "recorded-1.json", "ended": "finished"},
                         {"file": "recorded-2.json", "ended": "running"}]}
    assert store.ending(data) == ("2 processes recorded; 1 did not end normally (killed, os._exit "
                                  "or a crash: recorded-2.json): what each recorded up to its last "
                                  "finished test is kept")
    assert (
        store.ending({"sessions": data["sessions"][:1]})
        == "1 process recorded, each ended normally"
    )


# -- copies of closures ----------------------------------------------------------------------------

def make_affine(scale, shift=(1.0, 2.0)):
    def affine(x, bias=0.5):
        return x * scale + shift[1] + bias
    return affine


class Opaque:
    pass


def keep(arrays):
    def store_array(value):
        arrays.append(value)
        return {"array": len(arrays) - 1}
    return store_array


def test_a_factory_s_closure_is_copied_and_made_again_over_its_module_s_globals():
    arrays = []
    copy = serial.dump_function(make_affine(3.0), keep(arrays))
    made = serial.load_function(json.loads(json.dumps(copy)), lambda e: arrays[e["array"]],
                                lambda entry: globals())
    assert made(2.0) == 3.0 * 2.0 + 2.0 + 0.5 and made(2.0, bias=0.0) == 8.0
    assert made.__qualname__ == "make_affine.<locals>.affine"


def test_a_closure_over_an_object_is_copied_with_its_state_set_outside_any_config():
    opaque = Opaque()
    opaque.factor, opaque.table = 2.5, {0: (1, 2)}  # set after construction, as quantize() does

    def uses(x):
        return x * opaque.factor + opaque.table[0][1]

    made = serial.load_function(json.loads(json.dumps(serial.dump_function(uses, keep([])))),
                                lambda e: None, lambda entry: globals())
    assert made(2.0) == 7.0


def test_an_object_whose_attribute_the_function_reads_cannot_be_copied_is_refused_naming_it():
    opaque = Opaque()
    opaque.lock, opaque.unread = threading.Lock(), threading.Lock()

    def uses():
        return opaque.lock

    with pytest.raises(serial.Unserialisable,
                       match=r"its closure variable 'opaque' holds a Opaque object whose attribute "
                             r"'lock', which the function reads, cannot be copied"):
        serial.dump_function(uses, keep([]))

    def reads_neither():
        return opaque

    assert "unread" in serial.dump_function(reads_neither, keep([]))["closure"][0]["object"][
        "left_out"]


def test_an_object_of_a_class_replay_cannot_import_is_refused_naming_the_variable():
    class Local:
        pass

    local = Local()

    def uses():
        return local

    with pytest.raises(serial.Unserialisable,
                       match=r"its closure variable 'local' holds a Local object, which is not "
                             r"plain data"):
        serial.dump_function(uses, keep([]))


def test_a_copy_made_under_another_python_is_refused_naming_both_versions():
    copy = dict(serial.dump_function(make_affine(1.0), keep([])), python="2.7")
    with pytest.raises(
        serial.Unserialisable,
        match=rf"recorded under Python 2.7 and this is Python "
        rf"{sys.version_info.major}\.{sys.version_info.minor}",
    ):
        serial.load_function(copy, lambda e: None, lambda entry: globals())


# -- replay's ids, labels and notes ----------------------------------------------------------------

def test_a_case_id_leaves_out_locals_and_names_a_lambda():
    assert replay._case_id("mylib.ops",
                           "make_power.<locals>.power") == "recorded.mylib.ops.make_power.power"
    assert replay._case_id("t", "f.<locals>.<lambda>") == "recorded.t.f.lambda"


def test_a_drawn_point_says_drawn_and_a_repeated_label_gets_a_number():
    taken = set()
    big = np.zeros((3, 4), np.float32)
    assert replay._label(["x"], [big], {}, False, taken) == "x=float32[3,4]"
    assert replay._label(["x"], [big + 1], {}, False, taken) == "x=float32[3,4]#2"
    assert replay._label(["x"], [np.float32(0.5)], {}, True, taken) == "drawn:x=0.5"
    assert replay._label(["x", "c"], [np.float32(1.5), 2.0], {"k": 3}, False,
                         taken) == "x=1.5,c=2.0,k=3"


def test_a_point_s_note_is_said_with_its_result():
    info = CaseInfo(id="recorded.m.f", description="d", source="s", order=1,
                    points=("x=1.0", "x=2.0"),
                    notes=(("x=2.0", "recorded: an eager call made by tests/test_m.py::test_two"),))
    results = judge_measured(info, [], points=info.points, modes=("eager",), options=RunOptions(),
                             tf_version="2.21.0", reference="eager",
                             reruns={p: "" for p in info.points})
    assert "recorded: an eager call made by tests/test_m.py::test_two" in results[1].details
    assert not any("test_two" in d for d in results[0].details)


# -- the command line ------------------------------------------------------------------------------

def test_replay_of_a_missing_folder_is_a_usage_error(tmp_path):
    proc = in_process.harness("replay", str(tmp_path / "absent"))
    helpers.assert_usage_error(proc, "absent: no such directory; record one with")


def test_replay_of_a_garbled_recording_is_a_usage_error(tmp_path):
    (tmp_path / "recorded-3.json").write_text("[1, 2")
    proc = in_process.harness("replay", str(tmp_path))
    helpers.assert_usage_error(proc, "recorded-3.json: cannot read it as JSON")


def test_replay_takes_one_folder(tmp_path):
    proc = in_process.harness("replay")
    helpers.assert_usage_error(proc, "replay takes one target, got 0")


def test_record_without_a_command_is_a_usage_error(tmp_path):
    proc = in_process.harness("record", str(tmp_path / "rec"))
    helpers.assert_usage_error(proc, "record takes a folder and the command to run")


@pytest.mark.subprocess
def test_record_of_a_command_that_does_not_exist_is_a_usage_error(tmp_path):
    proc = in_process.harness("record", str(tmp_path / "rec"), "--", "no-such-command-here")
    helpers.assert_usage_error(proc, "cannot run no-such-command-here")


@pytest.mark.subprocess
def test_record_runs_the_command_with_the_recorder_in_its_environment_and_returns_its_status(
    no_tensorflow, tmp_path, monkeypatch, capfd
):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        from harness.record import recorder
        print(os.environ["HARNESS_RECORD"], os.environ["HARNESS_RECORD_POINTS"],
              recorder.installed_session() is not None)
        sys.exit(3)
    """))
    # The command is a process of its own, started with this one's environment and what record adds.
    monkeypatch.setenv("PYTHONPATH", no_tensorflow["PYTHONPATH"])
    proc = in_process.harness("record", str(tmp_path / "rec"), "--record_points=5", "--",
                              sys.executable, str(script))
    assert proc.returncode == 3, proc.stderr
    session, points, installed = capfd.readouterr().out.split()
    assert Path(session).parent == tmp_path / "rec" and Path(session).name.startswith("session-")
    assert (points, installed) == ("5", "True")


def test_replay_and_a_run_with_recorded_replace_the_library_and_rerun_through_replay(tmp_path):
    from absl import flags
    from absl.testing import flagsaver


    folder = recording(tmp_path
                       / "rec", [{"module": "m", "qualname": "f",
                                  "points": [{"args": [{"python": 1.0}]}]}])
    with flagsaver.flagsaver():
        flags.FLAGS(["harness", "--order=2",
                     "--expect=numeric:values differ:a straight-through estimator"])
        replayed = cli_settings.settings_for("replay", [str(folder)])
    with flagsaver.flagsaver():
        flags.FLAGS(["harness", f"--recorded={folder}"])
        run = cli_settings.settings_for("run", [])
    for settings in (replayed, run):
        assert settings.origins.recorded[0] == str(folder) and not settings.origins.library
    # No expectations file in this folder or above it: none is read.
    assert replayed.origins.recorded[1:] == (2, ("numeric:values differ:a straight-through "
                                                 "estimator",), "")
    rerun = cli_settings.rerun_command("recorded.m.f", "x=1.0", replayed)
    assert shlex.split(rerun) == ["python", "-m", "harness", "replay", str(folder), "--order=2",
                                  "--expect=numeric:values differ:a straight-through estimator",
                                  "--mode=all", "--cases=recorded.m.f[x=1.0]"]
    assert shlex.split(cli_settings.rerun_command("recorded.m.f", "x=1.0", run))[:5] == ["python",
                                                                                         "-m",
                                                                                         "harness",
                                                                                         "replay",
                                                                              str(folder)]
    with flagsaver.flagsaver():  # the rerun command parses and takes its flags
        command, args = cli_settings.split_command(flags.FLAGS(["harness",
                                                                *shlex.split(rerun)[3:]]))
        cli_settings.refuse_other_flags(command, args)
    assert (command, args) == ("replay", [str(folder)])


def test_replaying_a_session_that_recorded_no_call_is_a_usage_error_saying_so(tmp_path):
    from absl import flags
    from absl.testing import flagsaver

    folder = recording(tmp_path / "rec", [], tests=3)
    with flagsaver.flagsaver(), pytest.raises(cli_settings.UsageError,
                                              match=r"holds no recorded call: its 3 tests called "
                                                    r"no custom-gradient function through "
                                                    r"tf.custom_gradient"):
        flags.FLAGS(["harness"])
        cli_settings.settings_for("replay", [str(folder)])


def test_replaying_a_session_whose_calls_were_all_dropped_says_so_not_that_none_was_called(
    tmp_path,
):
    from absl import flags
    from absl.testing import flagsaver

    folder = recording(tmp_path
                       / "rec", [{"module": "m", "qualname": "f", "calls": 5, "points": []}],
                       tests=3)
    with flagsaver.flagsaver(), pytest.raises(cli_settings.UsageError,
                                              match=r"1 custom-gradient function was called, but "
                                                    r"no point was kept \(the recording's limits"):
        flags.FLAGS(["harness"])
        cli_settings.settings_for("replay", [str(folder)])


def test_the_session_s_last_line_says_what_was_kept_and_each_kind_of_drop():
    from harness.record import recorder

    square = {
        "points": [
            {"args": [{"array": "values/1-0.npy"}]},
            {"args": [{"spec": {"dtype": "float32"}}]},
        ]
    }
    line = recorder.summary_line("/rec", [square], {}, tests=2)
    assert line == ("harness record: 1 custom-gradient function called, 2 points kept (1 without "
                    "values, to be replayed at drawn values) in /rec; nothing dropped")
    dropped = dict(points_over_total=2, values_over_bytes=1, functions_not_copied=1)
    assert recorder.summary_line("/rec", [square], dropped, tests=2).endswith(
        "; dropped: 2 points over the total limit, the values of 1 point over the byte limit (kept "
        "as a signature); 1 closure could not be copied (replay skips it, saying why)")


def test_a_session_whose_tests_called_no_custom_gradient_says_so_naming_the_routes_it_watched():
    from harness.record import recorder

    line = recorder.summary_line("/rec", [], {}, tests=3)
    assert line.startswith("harness record: no custom-gradient function called in /rec: 3 tests "
                           "ran, and none called one through tf.custom_gradient, "
                           "tf.compat.v1.custom_gradient, tf.compat.v2.custom_gradient, ")
    assert "keras.ops.custom_gradient" in line and "nothing dropped" not in line


def test_a_write_error_is_in_the_last_line_with_what_it_cost():
    from harness.record import recorder

    line = recorder.summary_line("/rec", [{"points": [{"args": []}]}], {}, tests=1,
                                 write_error="OSError: [Errno 28] No space left on device",
                                 unwritten=4)
    assert line.endswith("; could not write the recording (OSError: [Errno 28] No space left on "
                         "device): 4 points recorded since the last write are lost")
    assert "nothing dropped" not in line


# -- drawing values for calls seen only while tracing ----------------------------------------------

class Arrays:
    """A stand-in for replay's loader: the recorded values by their entry's name."""

    def __init__(self, **arrays):
        self.arrays = arrays

    def array(self, entry):
        return self.arrays[entry["array"]]


def test_a_drawn_float_lies_in_the_range_of_the_function_s_recorded_values_and_says_so():
    record = {"points": [{"args": [{"array": "a", "shape": [2]}]}, {"args": [{"array": "b",
                                                                              "shape": [2]}]}]}
    traced = {"args": [{"spec": {"dtype": "float32", "shape": [None]}}]}
    known = replay._known(record, Arrays(a=np.array([0.5, 2.0]), b=np.array([1.0, np.nan])), 0,
                          traced)
    value, how = replay._draw(traced["args"][0]["spec"], 7, known)
    assert value.dtype == np.float32 and value.shape == (2,)
    assert np.all((value >= 0.5) & (value <= 2.0))  # log's domain, say, as its tests called it
    assert how == "uniform in [0.5, 2] (the range of its recorded values)"


def test_a_drawn_integer_stays_below_the_smallest_dimension_of_the_other_arguments():
    traced = {"args": [{"spec": {"dtype": "float32", "shape": [3, 5]}}, {"spec": {"dtype": "int32",
                                                                                  "shape": [40]}}]}
    known = replay._known({"points": [traced]}, Arrays(), 1, traced)
    value, how = replay._draw(traced["args"][1]["spec"], 11, known)
    assert value.dtype == np.int32 and value.min() >= 0 and value.max() <= 2 and len(set(value)) > 1
    assert (
        how
        == "integers in [0, 3) (the smallest dimension of the other arguments, which it may index)"
    )


def test_with_nothing_recorded_a_drawn_float_says_where_it_came_from():
    value, how = replay._draw({"dtype": "bfloat16", "shape": []}, 3)
    assert value.dtype.name == "bfloat16" and -2 <= float(value) <= 2
    assert how == "uniform in [-2, 2] (nothing recorded to draw from)"


def test_a_closure_over_a_dict_with_int_keys_is_plain_data_and_made_again():
    table = {0: (2, 3), "scale": 1.5}

    def uses(x):
        return x * table["scale"] + table[0][1]

    made = serial.load_function(json.loads(json.dumps(serial.dump_function(uses, keep([])))),
                                lambda e: None, lambda entry: globals())
    assert made(2.0) == 6.0


def test_a_function_exec_made_over_its_own_globals_is_copied_with_them():
    scope = {"K": 3.0}
    exec("def gen(x):\n    return x * K\n", scope)
    copy = json.loads(json.dumps(serial.dump_function(scope["gen"], keep([]))))
    assert copy["globals"] == {"K": {"python": 3.0}}
    made = serial.load_function(copy, lambda e: None,
                                lambda entry: pytest.fail("its own globals, not a module's"))
    assert made(2.0) == 6.0


def test_a_string_tensor_s_values_are_kept_as_bytes_a_npy_file_holds():
    strings = np.array([b"a", b"bc"], dtype=object)
    kept = recorder._saveable(strings)
    assert kept.dtype.kind == "S" and kept.tolist() == [b"a", b"bc"]
    assert recorder._saveable(np.array([object()], dtype=object)) is None


def test_a_value_npy_cannot_hold_costs_its_point_and_later_writes_go_on(tmp_path):
    writer = store.Writer(str(tmp_path))
    writer.write({"functions": []}, {"1-0.npy": np.array([object()], dtype=object),
                                     "1-1.npy": np.float32(1.0)})
    assert not (tmp_path / "values" / "1-0.npy").exists()
    assert (tmp_path / "values" / "1-1.npy").is_file()
    writer.write({"functions": []}, {"1-2.npy": np.float32(2.0)})
    assert (tmp_path / "values" / "1-2.npy").is_file()
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_failed_write_leaves_no_temporary_file_and_replay_says_what_happened(tmp_path,
                                                                             monkeypatch):
    writer = store.Writer(str(tmp_path))
    writer.write({"functions": [], "ended": "running"}, {})

    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.os, "replace", full)
    with pytest.raises(OSError):
        writer.write({"functions": [], "ended": "finished"}, {})
    monkeypatch.undo()
    assert not list(tmp_path.rglob("*.tmp"))
    data = store.read(str(tmp_path))
    assert store.ending(data) == (
        f"1 process recorded; {writer.path.name} stopped being written (OSError: [Errno 28] No "
        "space left on device): what it wrote before is kept, and what it recorded after is lost")


# -- trust ----------------------------------------------------------------------------------------

def _session(root, name, started, functions=()):
    folder = recording(root / name, list(functions), started=started, sessions=[])
    os.chmod(folder, 0o755)
    os.chmod(folder / "recorded-1.json", 0o644)
    return folder


def test_the_session_read_is_the_newest_by_when_its_recorder_started_not_by_its_name(tmp_path):
    # Before, a planted session-99991231-000000-1 was read because it sorts last.
    real = _session(tmp_path, "session-20261207-050000-7", started=1796620000.0)
    _session(tmp_path, "session-99991231-000000-1", started=1000.0)
    assert store.session_folder(str(tmp_path)) == (str(real), 2)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
@pytest.mark.parametrize("mode, who", [(0o775, "its group"), (0o757, "anyone")])
def test_a_recording_others_can_change_is_refused_before_anything_is_read(tmp_path, mode, who,
                                                                          monkeypatch):
    monkeypatch.delenv(store.ENV_TRUST, raising=False)
    folder = _session(tmp_path, "session-20261207-050000-7", started=1.0)
    os.chmod(folder, mode)
    with pytest.raises(store.RecordError) as raised:
        store.read(str(folder))
    assert str(raised.value) == (
        f"{folder} can be changed by {who} (mode {mode:o}): a recording holds code that "
        "replaying it imports and runs, so it is refused; make it writable by its owner alone "
        "(chmod go-w), or give --trust_recording if you trust everyone who can write it")
    os.chmod(folder, 0o755)
    os.chmod(folder / "recorded-1.json", 0o666)
    with pytest.raises(store.RecordError, match="recorded-1.json can be changed by anyone"):
        store.read(str(folder))
    monkeypatch.setenv(store.ENV_TRUST, "1")  # what --trust_recording sets
    assert store.read(str(folder))["folder"] == str(folder)


def test_a_session_folder_the_recorder_makes_is_its_owner_s_alone_whatever_the_umask(tmp_path):
    old = os.umask(0o002)
    try:
        made = store.new_session(str(tmp_path / "rec"))
    finally:
        os.umask(old)
    assert os.stat(made).st_mode & 0o777 == 0o755
