"""Hardening: bad outputs, inputs, flags and paths get a clear error, never a crash."""

import contextlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from harness.cli import options as cli_options
from harness.cli import repro as cli_repro
from harness.cli import settings as cli_settings
from tests.helpers import REPO, assert_usage_error, harness

# -- 1. an output that is not a number -------------------------------------------------------

def test_flat_outputs_refuses_strings():
    from harness.measure.modes.shared import flat_outputs, tf

    for value in ("abc", b"abc", (tf.constant(1.0), "abc")):
        with pytest.raises(TypeError,
                           match="returned a tf.string output; return numbers or tensors"):
            flat_outputs(value)
    assert [t.dtype.name for t in flat_outputs((1.0, np.int32(2), True))] == ["float32", "int32",
                                                                              "bool"]


def test_a_string_output_is_the_points_error_and_the_reports_are_written():
    from harness import api
    from harness.records import Report
    from harness.report import json_report, junit

    results = api.check(lambda x: "abc", [1.0], modes="all")
    assert [r.verdict.value for r in results] in (["error"], ["fail"])
    for outcome in results[0].outcomes.values():
        assert outcome.status.value == "error" and "tf.string output" in outcome.error.message
    report = Report(environment={}, modes=("eager", "function", "graph"), results=tuple(results))
    assert (
        json.loads(json_report.render(report))["results"][0]["verdict"] == results[0].verdict.value
    )
    assert "<testcase" in junit.render(report)


# -- one small run, for items 3 and 10 --------------------------------------------------------

LONG_ID = "long." + "a" * 295  # a valid id of 300 characters

CASE_FILE = f'''
import numpy as np
import tensorflow as tf
from harness import Case


@tf.custom_gradient
def wrong_square(x):
    return x * x, lambda dy: dy * 3.0  # not 2 x


CASES = [Case(id="small.square", points=[{{"x": np.float32(3.0)}}], fn=lambda x: x * x,
              description="a plain square", source="test_hardening"),
         Case(id="{LONG_ID}", points=[{{"x": np.float32(3.0)}}], fn=wrong_square,
              description="a wrong gradient, with a long id", source="test_hardening")]
'''


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """One run of a small case file with --timeout inf and --repro_dir."""
    folder = tmp_path_factory.mktemp("small")
    (folder / "cases.py").write_text(CASE_FILE)
    proc = harness(f"--case_file={folder / 'cases.py'}", "--timeout=inf", "--mode=eager",
                   f"--json_out={folder / 'r.json'}", f"--repro_dir={folder / 'repro'}",
                   cwd=str(folder))
    return folder, proc


# -- 3. --timeout nan and inf ------------------------------------------------------------------

def test_timeout_nan_is_a_usage_error():
    assert_usage_error(harness("--timeout=nan", "--cases=nothing.x"), "'inf' for no timeout")


@pytest.mark.slow
def test_timeout_inf_means_no_timeout(small_run):
    folder, proc = small_run
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    verdicts = [r["verdict"] for r in json.loads((folder / "r.json").read_text())["results"]]
    assert verdicts == ["pass", "fail"]


# -- 5. output paths that are one file ---------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--json_out=r.json", "--junit_out=./sub/../r.json"],
     "--json_out and --junit_out are the same file"),
    (["--json_out=r.jsonl"],
     "--json_out and the JSON Lines stream (--json_out with the suffix .jsonl)"),
    (["--json_out=r.json", "--jsonl_out=r.json"], "--json_out and --jsonl_out are the same file"),
    (["--junit_out=r.xml", "--jsonl_out=r.xml"], "--junit_out and --jsonl_out are the same file"),
    (["merge", "a.json", "b.json", "--json_out=./b.json"],
     "input report b.json and --json_out are the same file"),
    (["merge", "a.json", "--markdown_out=m.md", "--html_out=m.md"],
     "--markdown_out and --html_out"),
])
def test_colliding_paths_are_a_usage_error(tmp_path, args, message):
    (tmp_path / "sub").mkdir()
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text("{}")
    # selects nothing if it ever got that far
    select = [] if args[0] == "merge" else ["--cases=nothing.x"]
    assert_usage_error(harness(*args, *select, cwd=str(tmp_path)), message)
    assert (tmp_path / "b.json").read_text() == "{}"


def test_symlinked_outputs_collide(tmp_path):

    (tmp_path / "r.json").write_text("")
    (tmp_path / "link.xml").symlink_to(tmp_path / "r.json")
    with pytest.raises(cli_options.UsageError, match="same file"):
        cli_settings.distinct_outputs(
            [("--json_out", str(tmp_path / "r.json")), ("--junit_out", str(tmp_path / "link.xml"))]
        )
    cli_settings.distinct_outputs([("--json_out", str(tmp_path / "r.json")), ("--junit_out", None)])


# -- 6. a complex literal under a real dtype ---------------------------------------------------

def test_complex_input_under_a_real_dtype_is_refused():
    from harness.checking import InputError, parse_inputs

    for dtype in ("float32", "float64", "bfloat16"):
        with pytest.raises(InputError, match="is complex.*give --dtype complex64"):
            parse_inputs(["(1.0, [1.0, 2j])"], dtype)
    assert parse_inputs(["(1+2j)"], "complex64")[0][0] == np.complex64(1 + 2j)


def test_check_with_a_complex_literal_suggests_a_complex_dtype(tmp_path):
    (tmp_path / "f.py").write_text("def f(x):\n    return x * x\n")
    proc = harness("check", "f.py:f", "--inputs=(1+2j)", cwd=str(tmp_path))
    assert_usage_error(proc, "give --dtype complex64")


# -- 7. point values bind by name --------------------------------------------------------------

def _case(**fields):
    from harness.case import Case

    return Case(**{"id": "tests.bind", "source": "tests", "description": "binding by name",
                   **fields})


def _minus(x, y):
    return x - y


def test_points_bind_by_name_in_the_functions_order():
    case = _case(fn=_minus, points=[{"y": np.float32(1.0), "x": np.float32(5.0)}])
    point = case.points[0]
    assert point.names == ("x", "y") and [float(v) for v in point.values] == [5.0, 1.0]
    assert point.label == "x=5.0,y=1.0" and case.wrt == ("x", "y")
    # Points giving the names in different orders are the same arguments.
    case = _case(fn=_minus, points=[{"x": np.float32(5.0), "y": np.float32(1.0)},
                                    {"y": np.float32(2.0), "x": np.float32(3.0)}])
    assert [p.label for p in case.points] == ["x=5.0,y=1.0", "x=3.0,y=2.0"]


def test_a_bound_point_computes_with_its_named_values():
    from harness.measure.modes import eager
    from harness.records import RunOptions

    case = _case(fn=_minus, points=[{"y": np.float32(1.0), "x": np.float32(5.0)}])
    outcome, = eager.run(case, RunOptions(numeric=False, upstream=False))
    assert float(outcome.orders[0][0].value) == 4.0
    assert [s.name for s in outcome.sources] == ["x", "y"]


@pytest.mark.parametrize("fn, point, message", [
    (_minus, {"x": np.float32(1.0), "z": np.float32(2.0)},
     "'z', which is not an argument of 'fn'; its arguments: x"),
    (lambda x, *, y: x, {"x": np.float32(1.0), "y": np.float32(2.0)},
     "'y', which is not an argument of 'fn'"),
    (lambda x, y=1.0: x, {"y": np.float32(2.0)}, "leaves out argument 'x'"),
])
def test_a_point_name_the_function_cannot_take_is_refused(fn, point, message):
    from harness.case import CaseError

    with pytest.raises(CaseError, match="field 'points'") as info:
        _case(fn=fn, points=[point])
    assert "'tests.bind'" in str(info.value) and message in str(info.value)


def test_names_stay_as_given_for_a_builder_and_for_star_args():
    case = _case(build=lambda: _minus, points=[{"y": np.float32(1.0), "x": np.float32(5.0)}])
    assert case.points[0].names == ("y", "x")
    case = _case(fn=lambda x, *rest: x, points=[{"b": np.float32(1.0), "x": np.float32(5.0)}])
    assert case.points[0].names == ("x", "b")
    case = _case(fn=lambda a, *rest: a, points=[{"x1": np.float32(1.0), "x0": np.float32(5.0)}])
    assert case.points[0].names == ("x1", "x0")  # *args takes them all, in the point's order


# -- 10. repro folders for long ids ------------------------------------------------------------

def test_repro_folder_names_are_bounded_readable_and_unique():

    assert cli_repro.safe_name("x=1.0,y=2.0") == "x=1.0_y=2.0"  # short names are as before
    a, b = cli_repro.safe_name(LONG_ID), cli_repro.safe_name(LONG_ID[:-1] + "b")
    assert len(a) <= 100 and len(b) <= 100 and a != b and a.startswith("long.aaaa")
    assert cli_repro.safe_name("\u00e9"
                               * 200).isascii() and len(cli_repro.safe_name("\u00e9" * 200)) <= 100
    assert cli_repro.safe_name("..") not in ("", ".", "..")


def test_repro_folder_stays_inside_repro_dir(tmp_path):

    root = tmp_path / "repro"
    folder = cli_repro.repro_folder(str(root), LONG_ID, "x=3.0")
    assert folder.parent.parent == root and len(folder.parent.name) <= 100
    root.mkdir()
    (root / "small.square").symlink_to(tmp_path)
    with pytest.raises(ValueError, match="outside --repro_dir"):
        cli_repro.repro_folder(str(root), "small.square", "x=3.0")


@pytest.mark.slow
def test_a_long_case_id_gets_its_repro(small_run):
    folder, proc = small_run
    written = list((folder / "repro").glob("*/*/repro.py"))
    assert len(written) == 1 and written[0].parent.parent.name.startswith("long.aaa"), proc.stderr
    assert "File name too long" not in proc.stderr


# -- 12. messages and flags --------------------------------------------------------------------

def test_an_output_under_a_file_says_it_is_a_file(tmp_path):
    from harness import report

    (tmp_path / "afile").write_text("")
    for path in ("afile/x.json", "afile/sub/x.json"):
        with pytest.raises(ValueError, match="afile is a file, not a directory"):
            report.check_writable(str(tmp_path / path))
    with pytest.raises(ValueError, match="directory .*nodir does not exist"):
        report.check_writable(str(tmp_path / "nodir" / "x.json"))


def test_an_unknown_point_lists_the_cases_points():
    from harness import loader
    from harness.records import CaseInfo

    catalogue = [CaseInfo(id="seeds.sq", description="", source="", order=1,
                          points=("x=1.0", "x=2.0"))]
    with pytest.raises(loader.LoadError,
                       match=r"seeds.sq has no point 'x=3.0'; its points: x=1.0, x=2.0"):
        loader.select(catalogue, ["seeds.sq[x=3.0]"])
    assert loader.select(catalogue, ["seeds.sq[x=2.0]"])[0].points == ("x=2.0",)
    assert loader.select(catalogue, ["seeds.s[pq]"])[0].id == "seeds.sq"  # still a glob


@pytest.mark.parametrize("args, message", [
    (["--order=2"], "--order is a flag of python -m harness check"),
    # --dtype is explore's too, so each is said with its own commands.
    (["--inputs=1.0", "--dtype=float64"],
     "--inputs is a flag of python -m harness check and repro; --dtype is a "
                                          "flag of python -m harness check, repro and explore, not "
                                          "of a plain run"),
    (["--point=x=1.0"], "--point is a flag of python -m harness repro"),
    (["--out=somewhere"], "--out is a flag of python -m harness repro"),
    (["--markdown_out=m.md", "--html_out=m.html"],
     "--markdown_out, --html_out are flags of python -m harness merge"),
])
def test_a_commands_flags_are_refused_by_a_plain_run(tmp_path, args, message):
    assert_usage_error(harness(*args, "--cases=nothing.x", cwd=str(tmp_path)), message)


def test_every_verdict_has_its_junit_element_and_flaky_fails():
    from harness.records import Report, Result, Verdict
    from harness.report import junit

    assert set(junit._ELEMENT) == set(Verdict)
    flaky = Result(case="tests.case", point="x=1.0", order=1, verdict=Verdict.FLAKY,
                   reason="values changed", details=(), outcomes={},
                   rerun="python -m harness --cases tests.case")
    text = junit.render(Report(environment={}, modes=("eager",), results=(flaky,)))
    assert (
        'failures="1"' in text and '<failure message="flaky: values changed" type="flaky">' in text
    )


# -- in this process: cli.run with its flags, restored after ----------------------------------

def run_here(*args):
    """cli.run in this process (its workers are still processes); flags and SIGTERM restored
    after."""
    import signal

    from absl import flags
    from absl.testing import flagsaver

    from harness import cli

    handler = signal.getsignal(signal.SIGTERM)
    try:
        with flagsaver.flagsaver():
            return cli.run(flags.FLAGS(["harness", *args]))
    finally:
        signal.signal(signal.SIGTERM, handler)


# -- 2. --jobs: no more workers than cases, and a bound -----------------------------------------

@pytest.mark.slow
def test_jobs_beyond_the_selection_starts_one_worker_per_case(tmp_path, monkeypatch):
    from harness.process import pool

    started = []

    class Counting(pool._Worker):
        def __init__(self, *args):
            super().__init__(*args)
            started.append(self.process.pid)

    monkeypatch.setattr(pool, "_Worker", Counting)
    (tmp_path / "cases.py").write_text(CASE_FILE)
    status = run_here(f"--case_file={tmp_path / 'cases.py'}", "--cases=small.square", "--jobs=6",
                      "--mode=eager", "--nonumeric", "--noupstream")
    # the worker that loaded the cases runs the one case
    assert status == 0 and len(started) == 1, started


def test_jobs_beyond_four_per_cpu_is_a_usage_error_saying_the_limit():

    limit = 4 * (os.cpu_count() or 1)
    assert cli_options._jobs_ok(limit) and cli_options._jobs_ok(0)
    assert_usage_error(harness(f"--jobs={limit + 1}", "--cases=nothing.x"), f"give at most {limit}")


# -- 4. output paths proven writable, and a late failure that loses nothing else ---------------

@pytest.mark.parametrize("path", ["/proc/x.json", "/sys/x.json"])
def test_an_output_where_no_file_can_be_made_is_a_usage_error(path):
    assert_usage_error(harness(f"--json_out={path}", "--cases=nothing.x"), f"cannot write {path}")


def test_a_derived_jsonl_path_that_is_a_directory_is_a_usage_error(tmp_path):
    (tmp_path / "r.jsonl").mkdir()
    assert_usage_error(harness("--json_out=r.json", "--cases=nothing.x", cwd=str(tmp_path)),
                       "r.jsonl is a directory")


@pytest.mark.slow
def test_a_report_that_fails_at_the_end_is_one_line_and_the_others_are_written(tmp_path,
                                                                               monkeypatch, capsys):
    import shutil

    from harness.cli import run_loop as cli_run

    (tmp_path / "cases.py").write_text(CASE_FILE)
    (tmp_path / "out").mkdir()
    real = cli_settings.runner_for

    def vanish(settings):  # after the checks, before any case: the report's directory goes away
        shutil.rmtree(tmp_path / "out")
        return real(settings)

    monkeypatch.setattr(cli_run, "runner_for", vanish)  # where the run looks it up
    status = run_here(f"--case_file={tmp_path / 'cases.py'}", "--cases=small.square",
                      "--mode=eager", "--nonumeric", "--noupstream",
                      f"--json_out={tmp_path / 'out' / 'r.json'}",
                      f"--junit_out={tmp_path / 'r.xml'}", f"--jsonl_out={tmp_path / 'r.jsonl'}")
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("harness: cannot")]
    assert status == 1 and len(errors) == 1, captured.err
    assert f"cannot write {tmp_path / 'out' / 'r.json'}: No such file or directory" in errors[0]
    assert "Traceback" not in captured.err and "1 case at 1 point: 1 pass" in captured.out
    assert "<testcase" in (tmp_path / "r.xml").read_text()
    assert json.loads((tmp_path / "r.jsonl").read_text())["verdict"] == "pass"


def test_a_merge_output_that_fails_at_the_end_is_one_line_and_the_others_are_written(tmp_path,
                                                                                     monkeypatch,
                                                                                     capsys):
    from harness import report
    from harness.matrix import outputs

    source = tmp_path / "r.json"
    source.write_text(json.dumps({"schema": "harness.report/1",
                                  "environment": {"tensorflow": "2.21.0"}, "modes": ["eager"],
                                  "results": [], "summary": {}}))
    real = report.write

    def full_disk(path, text):
        if path.endswith(".md"):
            raise OSError(28, "No space left on device")
        real(path, text)

    monkeypatch.setattr(report, "write", full_disk)
    status = outputs.main([str(source)], markdown_out=str(tmp_path / "m.md"),
                          json_out=str(tmp_path / "m.json"))
    err = capsys.readouterr().err
    assert status == 1 and err.count("\n") == 1, err
    assert f"harness: cannot write {tmp_path / 'm.md'}: No space left on device" in err
    assert json.loads((tmp_path / "m.json").read_text())


# -- 8. a supervisor killed with SIGKILL leaves nothing behind ---------------------------------

def _state(pid):
    """The process's state letter ("R", "S", "Z", ...), or "" when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return ""
    return stat[stat.rfind(")") + 2:].split()[0]


def _alive(pid):
    return _state(pid) not in ("", "Z", "X")


def _descendants(root):
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rfind(")") + 2:].split()[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _wait_for(condition, seconds):
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


BUSY_CASE_FILE = """
import os, subprocess, time
import numpy as np
from harness import Case


def busy(x):
    child = subprocess.Popen(["sleep", "600"])
    with open(os.environ["MARKER"] + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {child.pid}")
    os.replace(os.environ["MARKER"] + ".tmp", os.environ["MARKER"])
    time.sleep(600)
    return x


CASES = [Case(id="busy.sleeper", points=[{"x": np.float32(1.0)}], fn=busy,
              description="sleeps in its case",
              source="test_hardening")]
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table from /proc")
def test_a_killed_supervisor_leaves_no_worker_child_or_folder(tmp_path):
    import signal

    (tmp_path / "cases.py").write_text(BUSY_CASE_FILE)
    (tmp_path / "tmp").mkdir()
    marker = tmp_path / "marker"
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"), MARKER=str(marker))
    main = subprocess.Popen([sys.executable, "-m", "harness",
                             f"--case_file={tmp_path / 'cases.py'}", "--mode=eager",
                             "--timeout=inf", "--nonumeric", "--noupstream"],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _wait_for(marker.exists, 240), "the case never started"
        worker, child = map(int, marker.read_text().split())
        left = _descendants(main.pid)
        assert worker in left and child in left and os.listdir(tmp_path / "tmp")
        main.kill()  # SIGKILL: the supervisor runs no clean-up
        main.wait()
        assert _wait_for(lambda: not any(_alive(pid) for pid in left), 20), \
            [(pid, _state(pid)) for pid in left if _alive(pid)]
        assert os.listdir(tmp_path / "tmp") == []  # the workers' folder is gone too
    finally:
        main.kill()
        for pid in _descendants(main.pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# -- 9. what a case starts ends with the case --------------------------------------------------

SPAWNING_CASE_FILE = """
import os, subprocess
import numpy as np
from harness import Case

FOLDER = os.environ["PIDS"]


def spawns(x):
    child = subprocess.Popen(["sleep", "600"])
    # A grandchild whose parent exits at once: init adopts it, and only its process group knows it.
    orphan = subprocess.run(["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"],
                            capture_output=True,
                            text=True).stdout.strip()
    with open(os.path.join(FOLDER, "started"), "w") as f:
        f.write(f"{child.pid} {orphan}")
    return x


def looks(x):
    pids = open(os.path.join(FOLDER, "started")).read().split()
    alive = []
    for pid in pids:
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2:].split()[0] not in "ZX":
            alive.append(pid)
    with open(os.path.join(FOLDER, "alive during the next case"), "w") as f:
        f.write(" ".join(alive))
    return x


CASES = [Case(id="spawn.a", points=[{"x": np.float32(1.0)}], fn=spawns,
              description="starts processes",
              source="test_hardening"),
         Case(id="spawn.b", points=[{"x": np.float32(1.0)}], fn=looks, description="looks for them",
              source="test_hardening")]
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table from /proc")
def test_processes_a_case_starts_end_with_the_case(tmp_path):
    (tmp_path / "cases.py").write_text(SPAWNING_CASE_FILE)
    env = dict(os.environ, PIDS=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "harness", f"--case_file={tmp_path / 'cases.py'}",
                           "--mode=eager", "--nonumeric", "--noupstream", "--jobs=1"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    started = [int(pid) for pid in (tmp_path / "started").read_text().split()]
    try:
        assert proc.returncode == 0 and "2 cases at 2 points: 2 pass" in proc.stdout, (
            proc.stdout + proc.stderr
        )
        assert len(started) == 2
        assert (tmp_path / "alive during the next case").read_text() == ""
        assert not any(_alive(pid) for pid in started)
    finally:
        for pid in started:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)


# -- 11. judging happens in the main process, out of the case's reach ------------------------

TAMPERING_CASE_FILE = """
import dataclasses
import numpy as np
import tensorflow as tf
import harness.measure.execute
import harness.measure.oracles
import harness.judge.verdict
from harness import Case
from harness.records import Verdict

TAMPER = {tamper!r}


def forged(real):
    def judge(*args, **kwargs):
        found = real(*args, **kwargs)
        passed = lambda r: dataclasses.replace(r, verdict=Verdict.PASS, reason="", details=())
        return [passed(r) for r in found] if isinstance(found, list) else passed(found)
    return judge


if TAMPER == "judge":  # every judging function the worker's process can reach
    for module in (harness.measure.execute, harness.judge.verdict):
        for name in ("judge", "judge_measured", "run_case"):
            if hasattr(module, name):
                setattr(module, name, forged(getattr(module, name)))
else:  # the oracles come back with nothing to say
    harness.measure.oracles.consult = lambda *args, **kwargs: {{}}


@tf.custom_gradient
def wrong_square(x):
    return x * x, lambda dy: dy * 3.0  # not 2 x: every mode agrees, the numeric derivative does not


CASES = [Case(id="tamper.square", points=[{{"x": np.float32(3.0)}}], fn=wrong_square,
              description="a wrong gradient in a case file that tampers with the harness",
              source="test_hardening")]
"""


@pytest.mark.slow
@pytest.mark.parametrize("tamper, verdict, words", [
    ("judge", "fail", "differ from the numeric derivative"),
    ("oracles", "error",
     "the worker sent no result for the numeric, linearity and upstream oracles"),
])
def test_a_case_file_cannot_change_its_own_verdict(tmp_path, tamper, verdict, words):
    (tmp_path / "cases.py").write_text(TAMPERING_CASE_FILE.format(tamper=tamper))
    proc = harness(f"--case_file={tmp_path / 'cases.py'}", "--mode=eager,graph",
                   f"--json_out={tmp_path / 'r.json'}")
    result = json.loads((tmp_path / "r.json").read_text())["results"][0]
    assert proc.returncode == 1 and result["verdict"] == verdict, proc.stdout + proc.stderr
    assert words in result["reason"], result["reason"]


def test_a_measurement_missing_a_mode_or_point_is_an_error():
    from harness.case import Case
    from harness.loader import info
    from harness.records import Measured, ModeOutcome, OracleOutcome, Output, RunOptions, Status
    from harness.judge.verdict import judge_measured

    case = info(Case(id="t.sq", fn=lambda x: x * x,
                     points=[{"x": np.float32(1.0)}, {"x": np.float32(2.0)}], description="d",
                     source="s"))
    ok = ModeOutcome(mode="eager", status=Status.OK, orders=((Output.of(np.float32(1.0)),),))
    oracles = {"numeric": OracleOutcome(name="numeric", status="match")}
    measured = [Measured(point="x=1.0", outcomes={"eager": ok}, oracles=oracles)]
    results = judge_measured(case, measured, points=case.points, modes=("eager", "graph"),
                             options=RunOptions(upstream=False), tf_version="2.21.0",
                             reference="eager", reruns={p: "rerun" for p in case.points})
    assert [r.verdict.value for r in results] == ["error", "error"]
    assert results[0].reason.startswith("the worker sent outcomes for eager where the modes run "
                                        "were eager, graph")
    assert results[1].reason.startswith("the worker sent no measurement for this point")


@pytest.mark.slow
def test_a_worker_that_exits_on_its_own_is_not_reported_as_killed(tmp_path):
    # Ending a dead worker's process group must not overwrite how it ended: this one closes its
    # pipe (the supervisor sees end-of-file) a second before it ends with status 3.
    (tmp_path
     / "cases.py").write_text("import atexit, time\natexit.register(time.sleep, 1)\nraise "
                              "SystemExit(3)\n")
    proc = harness(f"--case_file={tmp_path / 'cases.py'}", "--mode=eager")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "a worker exited with status 3 while importing TensorFlow and the cases" in proc.stderr
    ), proc.stderr


def test_measurements_travel_as_portable_values_and_a_lost_one_is_each_points_error():
    import ml_dtypes

    from harness.case import Case
    from harness.loader import info
    from harness.records import ModeOutcome, Output, RunOptions, Status
    from harness.judge.verdict import judge_measured

    value = np.array([1.5, -0.0078125, 3.0e38], dtype=ml_dtypes.bfloat16)
    out = ModeOutcome(mode="eager", status=Status.OK,
                      orders=((Output.of(value),),)).portable().orders[0][0]
    assert out.dtype == "bfloat16" and out.value.dtype == np.float32
    # exact: every bfloat16 is a float32
    np.testing.assert_array_equal(out.value, value.astype(np.float64))
    case = info(Case(id="t.sq", fn=lambda x: x * x, points=[{"x": np.float32(1.0)}],
                     description="d", source="s"))
    lost = (
        "the worker could not send what it measured: PicklingError: Can't pickle <class 'bfloat16'>"
    )
    (result,) = judge_measured(case, [], points=case.points, modes=("eager",), options=RunOptions(),
                               tf_version="2.13.1", reference="eager", reruns={"x=1.0": "rerun"},
                               lost=lost)
    assert result.verdict.value == "error" and result.reason == lost
