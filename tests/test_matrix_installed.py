"""python -m harness matrix and bisect with real TensorFlow: from an installed package, and a
case id refused before any environment is made.

The package is laid out as setup.cfg installs it (harness/, and cases/ as harness/cases) in a
folder of its own, and the command runs from another folder with only that on PYTHONPATH. The
environment of the release is this test's own interpreter, standing in the matrix's cache, so
nothing is downloaded. A case module that exists only in the installed copy proves that the run
inside the environment imported that copy, not this checkout.
"""

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from harness.matrix import envs
from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # TensorFlow starts, in the environment's run or in the check

ONLY_INSTALLED = '''
import numpy as np
import tensorflow as tf

from harness import Case


@tf.custom_gradient
def square(x):
    return x * x, lambda dy: dy * 2 * x


CASES = [Case(id="zz_installed.square", fn=square, points=[{"x": np.float32(3.0)}], order=2,
              source="test", description="only in the installed copy")]
'''


def installed_copy(site):
    """The package as a wheel of it holds it: harness/ with the case library as harness/cases."""
    ignore = shutil.ignore_patterns("__pycache__", "cases")
    shutil.copytree(ROOT / "harness", site / "harness", ignore=ignore)
    shutil.copytree(ROOT / "cases", site / "harness" / "cases",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (site / "harness" / "cases" / "zz_installed.py").write_text(ONLY_INSTALLED)


def release_stand_in(cache, version):
    """The cached environment of `version`, whose Python is this test's."""
    python = envs.python_version(sys.executable)
    folder = envs.env_dir(cache, envs.release(version), python)
    (folder / "bin").mkdir(parents=True)
    script = folder / "bin" / "python"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (folder / envs.MARKER).write_text("{}\n")


def test_an_installed_harness_runs_itself_in_each_environment(tmp_path):
    import tensorflow as tf

    site, work = tmp_path / "site", tmp_path / "work"
    installed_copy(site)
    work.mkdir()
    version = tf.version.VERSION
    release_stand_in(tmp_path / "cache", version)
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "harness", "matrix", f"--versions={version}",
                           f"--cache_dir={tmp_path / 'cache'}", "--out_dir=out",
                           "--cases=zz_installed.*"],
                          capture_output=True, text=True, cwd=work,
                          env=dict(environ, PYTHONPATH=str(site)), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((work / "out" / f"{version}.json").read_text())
    assert [(r["case"], r["verdict"]) for r in report["results"]] == [
        ("zz_installed.square", "pass")]
    assert report["environment"]["tensorflow"] == version
    matrix = json.loads((work / "out" / "matrix.json").read_text())
    assert [v["version"] for v in matrix["versions"]] == [version]


def test_a_bisect_of_a_case_that_does_not_exist_is_refused_before_any_environment(tmp_path):
    from tests import helpers

    proc = helpers.harness("bisect", "regressions.no_such_case", "--good=2.21.0", "--bad=nightly",
                           f"--cache_dir={tmp_path / 'cache'}", cwd=str(tmp_path), timeout=300)
    helpers.assert_usage_error(proc, "'regressions.no_such_case' selects no case")
    assert not (tmp_path / "cache").exists()
