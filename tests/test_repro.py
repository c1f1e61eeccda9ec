"""Standalone reproductions: repro.py runs without this package and says what the harness says."""

import json
import subprocess
import sys
import textwrap

import pytest

from harness import loader
from harness.report.json_report import result_dict
from harness.repro import script
from tests import helpers
from tests.helpers import harness

MODES = ("eager", "function", "graph")


def _without_harness(tmp_path):
    return helpers.without_harness_env(tmp_path)


@pytest.fixture(scope="module")
def seed_points(library_cases, library_results):
    """(result as JSON, repro script) per seed point, from the session's one run of the library."""
    found = []
    for case in loader.pick(library_cases, ["seeds.*"]):
        for result in library_results[case.id]:  # the three core modes, default options
            point = next(p for p in case.points if p.label == result.point)
            text = script.render(loader.narrow(case, [point.label]), point, MODES, False,
                                 result.rerun)
            found.append((result_dict(result), text))
    return found


@pytest.mark.slow
def test_seed_reproductions_print_what_the_harness_reports(seed_points, tmp_path):
    env = _without_harness(tmp_path)
    procs = []
    for i, (_, text) in enumerate(seed_points):
        path = tmp_path / f"repro_{i}.py"
        path.write_text(text)
        assert "import harness" not in text and "from harness" not in text
        procs.append(subprocess.Popen([sys.executable, str(path), "--json"], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, cwd=str(tmp_path),
                                      env=env))
    assert len(procs) == 8  # six seed cases, eight points
    for (expected, _), proc in zip(seed_points, procs):
        stdout, stderr = proc.communicate(timeout=300)
        printed = json.loads(stdout.strip().splitlines()[-1])
        name = f"{expected['case']}[{expected['point']}]"
        # The script compares the modes only: the oracles are the harness's.
        modes_agree = expected["verdict"] == "pass" or (
            expected["verdict"] == "xfail"
            and all(d.startswith(("as declared: numeric", "numeric: ",
                                  "upstream oracle not checked"))
                    for d in expected["details"]))
        assert proc.returncode == (0 if modes_agree else 1), (name, stderr[-2000:])
        for mode, want in expected["modes"].items():
            got = printed["modes"][mode]
            assert got["status"] == want["status"], (name, mode)
            if want["status"] == "ok":
                assert got["orders"] == [[o["value"] for o in order]
                                         for order in want["orders"]], (name, mode)
            else:
                assert (got["error_type"], got["stage"]) == (want["error_type"],
                                                             want["stage"]), (name, mode)


@pytest.mark.slow
def test_repro_command_writes_script_and_issue(tmp_path):
    out = tmp_path / "out"
    proc = harness("repro", "seeds.docstring_nested", f"--out={out}")
    assert proc.returncode == 0, proc.stderr
    issue = (out / "ISSUE.md").read_text()
    for heading in ("### TensorFlow version", "### Current behavior?",
                    "### Standalone code to reproduce the issue", "### Relevant log output"):
        assert heading in issue
    # The short script's output, as running it printed it.
    assert (
        "function: InternalError: Recorded operation" in issue
        and "eager: ValueError: custom_gradient" in issue
    )
    assert "python -m harness --mode=all '--cases=seeds.docstring_nested[x=1.0]'" in issue
    assert (out / "repro.py").read_text() in issue
    assert "already holds" not in proc.stderr
    # The script's check (a fresh Python and TensorFlow: seconds of silence) is said before it runs.
    assert proc.stderr.splitlines() == [f"harness: wrote {out / 'repro.py'}",
                                        f"harness: running {out / 'repro.py'} to check that it "
                                        "shows what the harness saw",
                                        f"harness: wrote {out / 'ISSUE.md'}"], proc.stderr
    # A second repro into the same folder replaces both files, and says so.
    again = harness("repro", "seeds.docstring_nested", f"--out={out}")
    assert again.returncode == 0, again.stderr
    assert (
        f"harness: {out} already holds repro.py and ISSUE.md, from before: replacing them"
        in again.stderr
    )


BROKEN = """
    import numpy as np
    import tensorflow as tf
    from harness import Case


    def doubled(x):
        return x * x * (2.0 if tf.executing_eagerly() else 2.5)


    CASES = [Case(id="mine.doubled", fn=doubled, points=[{"x": np.float32(4.0)},
                                                         {"x": np.float32(0.0)}],
                  source="test", description="traced modes use another constant")]
"""


@pytest.mark.slow
def test_repro_dir_writes_one_folder_per_failing_point(tmp_path):
    cases = tmp_path / "my_cases.py"
    cases.write_text(textwrap.dedent(BROKEN))
    proc = harness(f"--case_file={cases}", f"--repro_dir={tmp_path / 'r'}")
    assert proc.returncode == 1
    # At x = 0 the value c x**2 and the gradient 2 c x are 0 whatever c is, so only x = 4
    # fails and gets a folder.
    assert sorted(p.name for p in (tmp_path / "r" / "mine.doubled").iterdir()) == ["x=4.0"]
    folder = tmp_path / "r" / "mine.doubled" / "x=4.0"
    run = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True,
                         cwd=str(tmp_path), env=_without_harness(tmp_path), timeout=300)
    assert run.returncode == 1 and "DIFFERS: function, graph differ from eager" in run.stdout
    # 2 * 4**2 = 32 and its gradient 16 in eager; 2.5 * 4**2 = 40 and 20 traced.
    assert "eager: ok 32.0 16.0" in run.stdout and "function: ok 40.0 20.0" in run.stdout
    assert "graph: ok 40.0 20.0" in run.stdout


VARIABLES = """
    import numpy as np
    import tensorflow as tf


    def build_scaled():
        w = tf.Variable(np.float32(2.0))

        @tf.custom_gradient
        def scaled(x):
            def grad(dy, variables):
                return dy * w, [tf.reduce_sum(dy * x)]
            return w * x, grad
        return scaled
"""


@pytest.mark.slow
def test_check_with_a_variable_builder_runs_in_all_three_modes(tmp_path):
    target = tmp_path / "mine.py"
    target.write_text(textwrap.dedent(VARIABLES))
    out = tmp_path / "r.json"
    proc = harness("check", f"{target}:build_scaled", "--inputs=[1.0, 3.0]", f"--json_out={out}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [result] = json.loads(out.read_text())["results"]
    for mode in MODES:
        got = result["modes"][mode]
        # The builder makes no variable differentiation unless asked: x only, d(wx)/dx = w = 2.
        assert got["orders"][1][0]["value"] == [2.0, 2.0], mode
        assert got["orders"][0][0]["value"] == [2.0, 6.0], mode


@pytest.mark.parametrize("literal", ["__import__('os').getcwd()", "x", "[1.0, 'a']", "{1: 2}"])
def test_check_refuses_what_is_not_a_literal_of_numbers(literal, tmp_path):
    target = tmp_path / "mine.py"
    target.write_text("def f(x):\n    return x\n")
    proc = harness("check", f"{target}:f", f"--inputs={literal}", timeout=60)
    assert proc.returncode == 2
    assert (
        proc.stderr.startswith("harness: error: --inputs") and proc.stderr.count("\n") == 1
    ), proc.stderr


KERAS_OPS = """
    import keras
    import numpy as np
    from harness import Case


    @keras.ops.custom_gradient
    def log1pexp(x):
        e = keras.ops.exp(x)

        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            # twice the derivative
            return keras.ops.multiply(upstream, 2.0 - 2.0 / keras.ops.add(1.0, e))

        return keras.ops.log(1.0 + e), grad


    CASES = [Case(id="mine.log1pexp", fn=log1pexp, points=[{"x": np.float32(0.5)}],
                  source="test",
                  description="keras.ops.custom_gradient, its grad twice the derivative")]
"""


@pytest.mark.slow
def test_a_reproduction_of_a_keras_ops_custom_gradient_imports_keras_and_shows_the_failure(
    tmp_path,
):
    pytest.importorskip("keras", minversion="3")
    cases = tmp_path / "my_cases.py"
    cases.write_text(textwrap.dedent(KERAS_OPS))
    proc = harness(f"--case_file={cases}", f"--repro_dir={tmp_path / 'r'}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    script_path = tmp_path / "r" / "mine.log1pexp" / "x=0.5" / "repro.py"
    text = script_path.read_text()
    assert "import keras\n" in text and "@keras.ops.custom_gradient" in text
    run = subprocess.run([sys.executable, str(script_path)], capture_output=True, text=True,
                         cwd=str(tmp_path), env=_without_harness(tmp_path), timeout=300)
    # d/dx log(1 + e^x) at 0.5 is the logistic 0.6224593; the grad gives twice that in every mode.
    assert run.returncode == 1, run.stdout + run.stderr
    # log(1 + e^0.5) = 0.974077; 2 * 0.6224593 = 1.2449187, to float32's rounding.
    assert "eager: ok 0.974077 1.244918" in run.stdout, run.stdout
    assert "numeric: order 1 0.62245933" in run.stdout and "DIFFERS: order 1 1.244918" in run.stdout
