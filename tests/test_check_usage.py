"""`pytest --harness-check` before and around the tests, on a project whose tests import no
TensorFlow: a check that cannot check is a usage error before any test runs, the first line names
the reviewed file (the rootdir's, never one above it), and a suite that calls no custom gradient
of its own keeps its exit status. Each starts a pytest of its own, which loads no TensorFlow: a
second or two each.
"""

import json
import os
import subprocess
import sys

import pytest

from harness.record import store
from tests import helpers
from tests.helpers import REPO

pytestmark = pytest.mark.subprocess


@pytest.fixture
def project(tmp_path):
    made = tmp_path / "parent" / "plain"
    made.mkdir(parents=True)
    (made / "pytest.ini").write_text("[pytest]\n")
    (made / "test_plain.py").write_text("def test_one():\n    pass\n\n\ndef test_two():\n"
                                        "    pass\n")
    return made


def check(project, *args):
    env = dict(os.environ, PYTHONPATH=REPO, CI="1")
    env.pop(store.ENV_SESSION, None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *helpers.RECORD_PLUGIN, "--harness-check", *args],
                          capture_output=True, text=True, cwd=project, env=env, timeout=300)


def error_line(proc) -> str:
    lines = [x for x in (proc.stdout + proc.stderr).splitlines() if x.startswith("ERROR")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    return lines[0]


def test_a_suite_calling_no_custom_gradient_keeps_its_exit_status_saying_nothing_was_checked(
    project,
):
    # Before: exit 1, "the replay did not run", though every test passed.
    proc = check(project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("harness check: nothing checked: the tests called no custom gradient of their own"
            in proc.stdout.splitlines()), proc.stdout
    assert "error" not in proc.stdout
    (project / "test_plain.py").write_text("def test_one():\n    assert False\n")
    assert check(project).returncode == 1  # the tests' own failure is theirs still


def test_the_first_line_names_the_rootdir_s_file_and_never_one_above_it(project):
    # Before: a file in a parent of the rootdir (anyone's /tmp, $HOME) was read without a word.
    above = project.parent / "harness-expectations.json"
    above.write_text(json.dumps({"schema": "harness.expectations/1", "expected": [
        {"function": "recorded.*", "points": "*", "expect": "function:ValueError",
         "reason": "planted above the project"}]}))
    proc = check(project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    header = [x for x in proc.stdout.splitlines() if x.startswith("harness check: ")][0]
    assert header == ("harness check: no reviewed file (harness-expectations.json is not in the "
                      f"rootdir {project}; --harness-accept writes one there)"), proc.stdout
    assert str(above) not in proc.stdout
    mine = project / "harness-expectations.json"
    mine.write_text(above.read_text())
    proc = check(project)
    assert f"harness check: reviewed file {mine}" in proc.stdout.splitlines(), proc.stdout


@pytest.mark.parametrize("args, said", [
    (("--harness-record-points=0",),
     "ERROR: --harness-record-points=0: keep at least 1 point per function"),
    (("--harness-check-json=missing/r.json",),
     "ERROR: --harness-check-json=missing/r.json: cannot write the report there: its folder "
     "missing does not exist; name a file in a folder that exists and is writable"),
    (("--harness-check-json=.",),
     "ERROR: --harness-check-json=.: cannot write the report there: it is a folder; name a file "
     "in a folder that exists and is writable"),
], ids=["no points", "json into a missing folder", "json onto a folder"])
def test_a_check_that_could_not_check_or_report_is_a_usage_error_before_any_test(
    project, args, said,
):
    # Before: one warning (or a traceback after the suite), nothing checked, exit 0.
    proc = check(project, *args)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert error_line(proc) == said
    assert "passed" not in proc.stdout  # no test ran


def test_a_recording_folder_that_cannot_be_made_is_a_usage_error_before_any_test(project):
    (project / "a-file").write_text("not a folder")
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop(store.ENV_SESSION, None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *helpers.RECORD_PLUGIN, "--harness-check=a-file"],
                          capture_output=True, text=True, cwd=project, env=env, timeout=300)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    line = error_line(proc)
    assert line.startswith("ERROR: --harness-check=a-file: cannot make the recording's folder "
                           "there (FileExistsError: "), line
    assert line.endswith("; name a folder you can write"), line
    assert "passed" not in proc.stdout


def test_accept_into_a_file_that_cannot_be_written_is_a_usage_error_before_any_test(project):
    (project / "a-file").write_text("not a folder")
    proc = check(project, "--harness-accept", "--harness-expectations=a-file/reviewed.json")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert error_line(proc) == (
        "ERROR: --harness-accept cannot write a-file/reviewed.json: its folder a-file is not a "
        "folder; make it writable, or name another file with --harness-expectations")
    assert "passed" not in proc.stdout
