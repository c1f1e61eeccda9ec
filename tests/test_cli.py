"""The command line end to end, in subprocesses: exit codes, reports, messages."""

import json
import os
import shlex
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

from tests.helpers import REPO, assert_usage_error, harness


@pytest.fixture
def case_file(tmp_path):
    def write(body):
        path = tmp_path / "my_cases.py"
        path.write_text(textwrap.dedent(body))
        return str(path)
    return write


def test_help_does_not_import_tensorflow():
    proc = harness("--help", python=("-X", "importtime"), timeout=60)
    assert proc.returncode == 0 and "--mode" in proc.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()]
    assert "numpy" in imported  # the import log is really there
    assert not [m for m in imported if m.startswith("tensorflow")]


@pytest.mark.parametrize("args, message", [
    (["--mode=eager,xla_typo"], "unknown mode 'xla_typo'"),
    (["--json_out=/nonexistent-dir/r.json"], "directory /nonexistent-dir does not exist"),
    (["--junit_out=."], "is a directory"),
    # A value float16 cannot hold would become inf with only a NumPy warning, and pass.
    (["check", "tests/data/explore_grads.py:softplus", "--inputs=70000", "--dtype=float16"],
     "70000 does not fit --dtype=float16 (magnitudes from 5.96046e-08 to 65504): it would become "
     "infinite"),
    (["check", "tests/data/explore_grads.py:softplus", "--inputs=1e-50"],
     "1e-50 does not fit --dtype=float32"),
])
def test_usage_errors_exit_2_with_one_line_before_loading_cases(args, message):
    proc = harness(*args)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr


@pytest.mark.slow
def test_glob_that_selects_nothing_exits_2_and_suggests():
    proc = harness("--cases=seed.*")
    assert proc.returncode == 2
    assert "selects no case" in proc.stderr and "seeds.*" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_list_shows_ids_and_descriptions():
    proc = harness("--list", "--cases=seeds.*")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert any(l.startswith("seeds.log1pexp2 ") and "nested custom gradient" in l for l in lines)
    assert len(lines) == 6


def test_seed_run_writes_the_json_contract_and_junit(seed_run):
    proc, json_path, junit_path = seed_run  # --mode=all --cases=seeds.* --json_out --junit_out
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(json_path.read_text(),
                        parse_constant=lambda c: pytest.fail(f"non-strict {c}"))
    assert report["schema"] == "harness.report/2"
    assert set(report["environment"]) >= {"tensorflow", "tensorflow_git", "numpy", "python",
                                          "platform"}
    assert report["modes"] == ["eager", "function", "graph"]
    by_name = {(r["case"], r["point"]): r for r in report["results"]}
    x100 = by_name[("seeds.log1pexp2", "x=100.0")]
    # The modes agree on the seed's numbers; the numeric oracle declares its 1 - e second
    # derivative.
    assert x100["verdict"] == "xfail"
    assert x100["oracles"]["numeric"]["differ"] == [2]
    for mode in report["modes"]:
        orders = x100["modes"][mode]["orders"]
        assert [o[0]["value"] for o in orders] == ["inf", 1.0, "-inf"]  # the seed's printout
        assert orders[2][0]["dtype"] == "float32" and orders[2][0]["shape"] == []
    nested = by_name[("seeds.docstring_nested", "x=1.0")]
    assert nested["verdict"] == "xfail"
    assert nested["modes"]["function"]["status"] == "error"
    assert nested["modes"]["function"]["error_type"] == "InternalError"
    assert nested["modes"]["graph"]["stage"] == "order 2"
    # log1pexp2 at both points is xfail: its 1 - e second derivative is declared untrue.
    assert report["summary"]["pass"] == 3 and report["summary"]["xfail"] == 5
    suite = ET.parse(junit_path).getroot().find("testsuite")
    assert (
        suite.get("tests") == "8" and suite.get("skipped") == "5" and suite.get("failures") == "0"
    )


DISAGREEING = """
    import numpy as np
    import tensorflow as tf
    from harness import Case, Expectation

    def scale(x):
        # A different constant when traced: the traced modes disagree with eager.
        return x * (2.0 if tf.executing_eagerly() else 2.5)

    CASES = [
        Case(id="mine.scale", fn=scale, points=[{"x": np.float32(4.0)}], order=1,
             source="test", description="traced modes use another constant"),
        Case(id="mine.fine", fn=lambda x: x * x, points=[{"x": np.float32(3.0)}], order=2,
             source="test", description="agrees everywhere",
             expectations=[Expectation(modes=["graph"], outcome="ValueError",
                                       reason="declared, but graph mode does not raise")]),
    ]
"""


@pytest.mark.slow
def test_disagreement_fails_with_worst_element_and_a_rerun_that_reproduces_it(case_file, tmp_path):
    path = case_file(DISAGREEING)
    proc = harness(f"--case_file={path}", cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    # x * 2.5 = 10 vs x * 2 = 8 at x = 4: abs error 2, rel error 0.25.
    assert "forward output 0: function vs eager" in out
    assert "function=10 eager=8 abs err 2 rel err 0.25 (rtol 1.3e-06, atol 1e-05)" in out
    assert "XPASS" in out and "1 fail, 1 xpass" in out
    rerun = next(l.split("rerun: ", 1)[1] for l in out.splitlines() if "rerun: " in l
                 and "mine.scale" in l)
    argv = shlex.split(rerun)
    assert argv[:3] == ["python", "-m", "harness"]
    again = harness(*argv[3:], cwd=str(tmp_path))
    assert again.returncode == 1 and "1 case at 1 point: 1 fail" in again.stdout


@pytest.mark.slow
def test_xpass_passes_unless_strict(case_file, tmp_path):
    path = case_file(DISAGREEING)
    assert harness(f"--case_file={path}", "--cases=mine.fine").returncode == 0
    strict = harness(f"--case_file={path}", "--cases=mine.fine", "--strict_xpass")
    assert strict.returncode == 1 and "FAIL" in strict.stdout


@pytest.mark.slow
@pytest.mark.parametrize("body, message", [
    ("x = (\n", "my_cases.py:1: syntax error"),
    ("CASES = 3\n", "define CASES"),
    ("import numpy as np\nfrom harness import Case\n"
     "CASES = [Case(id='mine.bad', fn=lambda x: x, points=[{'x': np.float32(1)}], order=0,"
     " source='s', description='d')]\n", "case 'mine.bad': field 'order'"),
])
def test_broken_case_file_is_a_one_line_usage_error(case_file, body, message):
    proc = harness(f"--case_file={case_file(body)}")
    assert proc.returncode == 2
    assert message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


@pytest.mark.slow
def test_missing_case_file_is_a_usage_error(tmp_path):
    proc = harness(f"--case_file={tmp_path / 'nope.py'}")
    assert proc.returncode == 2
    assert "nope.py: no such file" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_check_target_without_the_function_names_what_is_there(tmp_path):
    target = tmp_path / "grads.py"
    target.write_text("def square(x):\n    return x * x\n")
    proc = harness("check", f"{target}:cube", "--inputs=1.0")
    assert proc.returncode == 2
    assert f"{target} defines no function 'cube'; functions there: square" in proc.stderr


def test_check_target_that_is_not_path_colon_name_is_refused():
    proc = harness("check", "grads.py", "--inputs=1.0")
    assert proc.returncode == 2 and "is not PATH.py:NAME" in proc.stderr


@pytest.mark.skipif(os.geteuid() == 0,
                    reason="root writes into read-only directories and reads 0o000 files")
def test_read_only_output_directory_and_unreadable_case_file(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    proc = harness(f"--json_out={locked / 'r.json'}")
    assert proc.returncode == 2 and "is not writable" in proc.stderr
    secret = tmp_path / "secret.py"
    secret.write_text("CASES = []\n")
    secret.chmod(0)
    proc = harness(f"--case_file={secret}")
    assert proc.returncode == 2 and "cannot read it" in proc.stderr


def test_merge_refuses_a_file_that_is_not_a_report(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}')
    proc = harness("merge", str(bad), f"--markdown_out={tmp_path / 'm.md'}")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "bad.json: not a harness report" in proc.stderr
    assert not (tmp_path / "m.md").exists()


@pytest.mark.slow
def test_case_file_can_import_a_module_beside_it(tmp_path):
    (tmp_path / "helpers_mod.py").write_text("def triple(x):\n    return x * 3\n")
    cases = tmp_path / "beside.py"
    cases.write_text("import numpy as np\nfrom helpers_mod import triple\nfrom harness import "
                     "Case\nCASES = [Case(id='mine.triple', fn=triple, points=[{'x': "
                     "np.float32(1.0)}], source='test', description='imports a neighbour')]\n")
    proc = harness(f"--case_file={cases}")  # run from the repository, not from tmp_path
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS     mine.triple[x=1.0]" in proc.stdout


@pytest.mark.slow
def test_workers_see_the_keyword_call_fall_back_and_repeat_finds_a_flaky_case(tmp_path):
    # One run, two checks that need the real workers (they install the probe before loading cases).
    out = tmp_path / "r.json"
    flaky = os.path.join(REPO, "tests", "data", "flaky_cases.py")
    proc = harness("--cases=regressions.kwargs_65839,flaky.*", "--library", f"--case_file={flaky}",
                   "--repeat=2", "--nonumeric", f"--json_out={out}")
    assert proc.returncode == 1, proc.stderr[-2000:]
    results = {r["case"]: r for r in json.loads(out.read_text())["results"]}
    kwargs = results["regressions.kwargs_65839"]
    # tensorflow#65839: eager runs bar_65839's forward and never its grad; the others raise at the
    # call.
    assert kwargs["verdict"] == "xfail", kwargs["reason"]
    assert kwargs["modes"]["eager"]["custom_gradients"] == {"ran": ["bar_65839"],
                                                            "unused": ["bar_65839"]}
    assert any("as declared: eager gradient unused" in d for d in kwargs["details"])
    noisy = results["flaky.unseeded_uniform"]
    assert noisy["verdict"] == "flaky"
    assert "results change between runs" in noisy["reason"]
    assert "--repeat=2" in noisy["rerun"] and "--nonumeric" in noisy["rerun"]
    assert "1 flaky" in proc.stdout


def test_full_selects_the_extra_modes_but_not_saved_model_nocg():
    proc = harness("--mode=full,bogus", "--list")
    assert proc.returncode == 2
    assert (
        "unknown mode 'bogus'" in proc.stderr
        and "'full' (all but saved_model_nocg and the training-step modes)" in proc.stderr
    )


COMMA_POINTS = """
import numpy as np
import tensorflow as tf
from harness import Case

@tf.custom_gradient
def mul(x, y):
    return x * y, lambda dy: (dy * y, dy * y)  # the y gradient should be dy * x

@tf.custom_gradient
def scale(x):
    return 2.0 * x, lambda dy: 3.0 * dy  # the derivative is 2

CASES = [
    Case(id="mine.mul", fn=mul, source="test",
         description="a wrong y gradient at two scalar inputs",
         points=[{"x": np.float32(2.0), "y": np.float32(3.0)},
                 {"x": np.float32(5.0), "y": np.float32(7.0)}]),
    Case(id="mine.scale", fn=scale, source="test", description="a wrong gradient of a matrix input",
         points=[{"x": np.ones((8, 64), np.float32)}, {"x": np.ones((2, 3), np.float32)}]),
]
"""


@pytest.mark.slow
def test_printed_rerun_commands_with_commas_in_the_point_run_that_point_alone(case_file, tmp_path):
    # A printed ID[x=2.0,y=3.0] has a comma inside its point: --cases must not split there.
    path = case_file(COMMA_POINTS)
    proc = harness(f"--case_file={path}", cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    reruns = [l.split("rerun: ", 1)[1] for l in proc.stdout.splitlines() if "rerun: " in l]
    labels = ["mine.mul[x=2.0,y=3.0]", "mine.mul[x=5.0,y=7.0]", "mine.scale[x=float32[8,64]]",
              "mine.scale[x=float32[2,3]]"]
    assert [r.split("--cases=", 1)[1].split("'")[0].split()[0] for r in reruns] == labels, reruns
    # one with a comma between arguments, one inside a shape
    for rerun, label in zip(reruns[1:3], labels[1:3]):
        argv = shlex.split(rerun)
        again = harness(*argv[3:], cwd=str(tmp_path))
        assert again.returncode == 1, again.stdout + again.stderr
        assert "1 case at 1 point: 1 fail" in again.stdout and label in again.stdout, again.stdout


ODD_TEXT = """
import numpy as np
import tensorflow as tf
from harness import Case

def build():
    def f(*xs):
        # a file name that is not UTF-8, as os.listdir gives it
        raise ValueError("cannot open caf\\udce9.txt")
    return f

def build_scaled():
    return lambda x: x * 2.0

CASES = [
    Case(id="odd.surrogate", build=build, source="test", description="raises with a lone surrogate",
         points=[{"x": np.float32(1.0)}]),
    Case(id="odd.label", build=build_scaled, source="test",
         description="a control character in a name",
         points=[{"x\\x1b[2K\\rPASS     fake\\x00": np.float32(1.0)}]),
]
"""


@pytest.mark.slow
def test_control_characters_and_surrogates_reach_no_terminal_or_report_raw(case_file, tmp_path):
    # A lone surrogate must not crash the main process, and ESC, CR and NUL in a point label must
    # neither paint the terminal nor make the JUnit XML invalid.
    path = case_file(ODD_TEXT)
    out = tmp_path / "out"
    out.mkdir()
    proc = harness(f"--case_file={path}", f"--json_out={out / 'r.json'}",
                   f"--junit_out={out / 'r.xml'}", cwd=str(tmp_path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert not any(c in proc.stdout for c in "\x1b\r\x00"), repr(proc.stdout)
    assert "caf\\udce9.txt" in proc.stdout and "x\\x1b[2K\\rPASS     fake\\x00=1.0" in proc.stdout
    names = [c.get("name") for c in ET.parse(out / "r.xml").getroot().iter("testcase")]
    assert "x\\x1b[2K\rPASS     fake\\x00=1.0" in names or any("\\x1b" in n and "\\x00" in n
                                                               for n in names), names
    data = json.loads((out / "r.json").read_text())
    assert {r["case"] for r in data["results"]} == {"odd.surrogate", "odd.label"}
    merged = harness("merge", str(out / "r.json"), f"--markdown_out={out / 'm.md'}",
                     f"--html_out={out / 'm.html'}", cwd=str(tmp_path))
    assert merged.returncode == 0, merged.stderr
    assert "\x1b" not in (out / "m.md").read_text() and "\x00" not in (out / "m.html").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_a_signal_while_the_reports_are_written_still_writes_them_and_exits_130(case_file,
                                                                                tmp_path, signum):
    # The signal is sent from inside the first report write, so it arrives then, every time.
    path = case_file(COMMA_POINTS)
    json_out, junit_out = tmp_path / "r.json", tmp_path / "r.xml"
    code = ("import os, signal, runpy, sys\nimport harness.report as r\nwrite = r.write\ndef "
            "signalled(path, text):\n    if path.endswith('r.json'):\n        "
            f"os.kill(os.getpid(), signal.{signum})\n    write(path, text)\nr.write = "
            f"signalled\nsys.argv = ['harness', '--case_file={path}', '--cases=mine.mul', "
            f"'--json_out={json_out}', '--junit_out={junit_out}']\nrunpy.run_module('harness', "
            "run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          timeout=300)
    assert proc.returncode == 130, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines() == [
        f"harness: wrote {json_out}", f"harness: wrote {junit_out}",
        f"harness: streamed each result as it finished to {tmp_path / 'r.jsonl'} (beside "
        "--json_out, JSON Lines)",
        f"harness: {signum} after every case had run; the reports were written first"], proc.stderr
    assert len(json.loads(json_out.read_text())["results"]) == 2
    assert len(list(ET.parse(junit_out).getroot().iter("testcase"))) == 2


@pytest.mark.slow
def test_a_stream_another_live_run_writes_is_refused_and_left_whole(case_file, tmp_path):
    # Two runs with one --json_out would interleave the .jsonl stream into torn lines.
    import fcntl

    path = case_file(COMMA_POINTS)
    stream = tmp_path / "r.jsonl"
    stream.write_text('{"held": true}\n')
    with open(stream, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a live run holds it
        proc = harness(f"--case_file={path}", f"--json_out={tmp_path / 'r.json'}",
                       cwd=str(tmp_path))
    assert_usage_error(proc,
                       f"another harness run is writing {stream}; give this run another --json_out")
    assert stream.read_text() == '{"held": true}\n'
    again = harness(f"--case_file={path}", "--cases=mine.scale",
                    f"--json_out={tmp_path / 'r.json'}",
                    cwd=str(tmp_path))  # the lock went with its holder
    assert again.returncode == 1 and len(stream.read_text().splitlines()) == 2, again.stderr


@pytest.mark.slow
def test_a_check_rerun_line_gives_only_its_points_inputs(tmp_path):
    # --cases means nothing for one function: a check's rerun gives that point's --inputs alone.
    (tmp_path / "mine.py").write_text(textwrap.dedent("""
        import tensorflow as tf

        @tf.custom_gradient
        def cube(x):
            return x ** 3, lambda dy: dy * 3 * x  # the derivative is 3 x**2: right at x = 1 only
    """))
    proc = harness("check", "mine.py:cube", "--inputs=1.0", "--inputs=2.0", cwd=str(tmp_path))
    assert proc.returncode == 1 and "1 case at 2 points: 1 pass, 1 fail" in proc.stdout, (
        proc.stdout + proc.stderr
    )
    [rerun] = [l.split("rerun: ", 1)[1] for l in proc.stdout.splitlines() if "rerun: " in l]
    assert "--inputs=2.0" in rerun and "--inputs=1.0" not in rerun and "--cases" not in rerun, rerun
    again = harness(*shlex.split(rerun)[3:], cwd=str(tmp_path))
    assert again.returncode == 1 and "1 case at 1 point: 1 fail" in again.stdout, (
        again.stdout + again.stderr
    )
