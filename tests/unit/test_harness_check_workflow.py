"""The workflow a library calls (.github/workflows/harness-check.yml) and this repository's own call
of it (check-example.yml): read as data, and their scripts run here with stand-ins for pytest and
pip (the versions job's Python in this process, the shell steps in bash). No TensorFlow."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.matrix import pins
from tests.helpers import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
REUSABLE = WORKFLOWS / "harness-check.yml"
CALLER = WORKFLOWS / "check-example.yml"
HARNESS_FOLDER = ".harness-check/harness"

REQUIRED = object()
# Every input: its type and its default (REQUIRED: the caller must give it).
INPUTS = {
    "test-command": ("string", REQUIRED),
    "tensorflow-versions": ("string", REQUIRED),
    "env": ("string", ""),
    "keras-2": ("string", "auto"),
    "python-version": ("string", "3.11"),
    "expectations": ("string", ""),
    "modes": ("string", "all"),
    "working-directory": ("string", "."),
    "requirements": ("string", ""),
    "harness-ref": ("string", ""),
    "harness-repository": ("string", ""),
    "artifact-prefix": ("string", "harness-check"),
    "timeout-minutes": ("number", 60),
}


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the bare key `on` as True
    return data


def jobs() -> dict:
    return load(REUSABLE)["jobs"]


def step(job: str, *, running: str = "", using: str = "") -> dict:
    """The one step of `job` whose run contains `running`, or that uses the action `using`."""
    found = [s for s in jobs()[job]["steps"]
             if (running and running in s.get("run", ""))
             or (using and s.get("uses", "").startswith(using + "@"))]
    assert len(found) == 1, f"{job}: {len(found)} steps running {running!r} / using {using!r}"
    return found[0]


def bash(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """`script` as a GitHub step runs it: bash --noprofile --norc -eo pipefail."""
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                          cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=120)


# --- the inputs -----------------------------------------------------------------------------------

def test_the_workflow_is_only_called_with_these_inputs_types_and_defaults():
    on = load(REUSABLE)["on"]
    assert set(on) == {"workflow_call"}
    inputs = on["workflow_call"]["inputs"]
    assert set(inputs) == set(INPUTS)
    for name, (kind, default) in INPUTS.items():
        spec = inputs[name]
        assert spec["type"] == kind, name
        assert spec.get("description"), f"{name} says nothing of itself"
        if default is REQUIRED:
            assert spec.get("required") is True and "default" not in spec, name
        else:
            assert not spec.get("required") and spec["default"] == default, name


def test_every_input_is_used_and_every_input_used_is_declared():
    text = REUSABLE.read_text(encoding="utf-8")
    used = {name for expression in re.findall(r"\$\{\{(.*?)\}\}", text, re.S)
            for name in re.findall(r"\binputs\.([\w-]+)", expression)}
    assert used == set(INPUTS)


def test_the_example_call_in_the_workflows_header_gives_declared_inputs():
    header = re.search(r"#   jobs:\n(?:#   .*\n)+", REUSABLE.read_text(encoding="utf-8")).group()
    example = yaml.safe_load("\n".join(line[4:] for line in header.splitlines()))
    (call,) = example["jobs"].values()
    assert call["uses"].endswith("/.github/workflows/harness-check.yml@REF")
    required = {n for n, (_, default) in INPUTS.items() if default is REQUIRED}
    assert required <= set(call["with"]) <= set(INPUTS)


# --- the versions job: its Python, run in this process --------------------------------------------

def versions(text, monkeypatch, tmp_path, capsys, harness=ROOT):
    """The versions job's output for tensorflow-versions `text`, or the ::error line it refused
    with."""
    script = step("versions", running="GITHUB_OUTPUT")
    assert script["shell"] == "python"
    output = tmp_path / "github_output"
    output.write_text("", encoding="utf-8")
    monkeypatch.setenv("VERSIONS", text)
    monkeypatch.setenv("HARNESS", str(harness))
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "pins", raising=False)
    try:
        exec(compile(script["run"], "versions job", "exec"), {"__name__": "__main__"})
    except SystemExit as e:
        assert e.code == 1
        (error,) = [line for line in capsys.readouterr().out.splitlines()
                    if line.startswith("::error")]
        return error
    (line,) = output.read_text(encoding="utf-8").splitlines()
    name, _, value = line.partition("=")
    assert name == "versions"
    return json.loads(value)


@pytest.mark.parametrize("text, expected", [
    ("2.21.0", ["2.21.0"]),
    (" 2.12.1, 2.21.0 ,nightly", ["2.12.1", "2.21.0", "nightly"]),
    ('["2.16.2", "nightly"]', ["2.16.2", "nightly"]),
    ("2.21.0,2.21.0,nightly,nightly", ["2.21.0", "nightly"]),
    ("all", pins.versions()),
    ("nightly, all, 2.21.0", ["nightly"] + pins.versions()),
])
def test_versions_are_a_comma_or_json_list_of_releases_all_and_nightly(text, expected,
                                                                       monkeypatch, tmp_path,
                                                                       capsys):
    assert versions(text, monkeypatch, tmp_path, capsys) == expected


@pytest.mark.parametrize("text, said", [
    ("2.21.0, 2.99.0", "no pins for TensorFlow '2.99.0'"),
    ("2.22.0.dev20260601", "or all, or nightly"),
    ("[2.20]", "write each version as a string"),
    ('["2.21.0",', "is not a JSON list"),
    (" , ", "names no version"),
    ("[]", "names no version"),
])
def test_a_version_without_pins_or_a_malformed_list_stops_the_run_saying_why(text, said,
                                                                              monkeypatch,
                                                                              tmp_path, capsys):
    error = versions(text, monkeypatch, tmp_path, capsys)
    assert error.startswith("::error title=harness check::") and said in error


def test_a_checkout_that_is_not_the_harness_is_refused_naming_harness_repository(
        monkeypatch, tmp_path, capsys):
    error = versions("2.21.0", monkeypatch, tmp_path, capsys, harness=tmp_path)
    assert "harness-repository" in error and "harness/matrix/pins.py" in error


# --- the harness each job installs ----------------------------------------------------------------

def test_every_job_checks_out_the_same_harness_the_workflows_own_unless_harness_ref_says():
    checkouts = [s for job in jobs().values() for s in job["steps"]
                 if s.get("uses") == "actions/checkout@v4"
                 and s.get("with", {}).get("path") == HARNESS_FOLDER]
    assert len(checkouts) == 3, "the versions, test and merge jobs each check it out"
    assert all(c["with"] == checkouts[0]["with"] for c in checkouts)
    spec = checkouts[0]["with"]
    # In a called workflow github.repository and github.sha are the caller's; the job context's
    # workflow_repository and workflow_sha are the called workflow's own. A repository given
    # without a ref is installed from its default branch.
    assert spec["repository"] == ("${{ inputs.harness-repository || "
                                  "fromJSON(toJSON(job)).workflow_repository || "
                                  "github.repository }}")
    assert spec["ref"] == ("${{ inputs.harness-ref || (!inputs.harness-repository && "
                           "(fromJSON(toJSON(job)).workflow_sha || github.sha)) || '' }}")
    assert spec["persist-credentials"] is False
    for job in ("test", "merge"):
        assert jobs()[job]["env"]["HARNESS"] == "${{ github.workspace }}/" + HARNESS_FOLDER
    # The library's checkout comes first: it would clean the harness's folder away.
    names = [s.get("name") for s in jobs()["test"]["steps"]]
    assert names.index("Check out the library") < names.index("Check out the harness")


def install(tensorflow: str, tmp_path: Path, *, tf_keras_installed: bool = False,
            nightly_lines: str = "tf-nightly==2.23.0.dev20261026\n"
                                 "keras-nightly==3.16.0.dev2026102604\n",
            tf_keras_line: str = "tf-keras-nightly==2.23.0.dev2026102618\n",
            nightly_status: int = 0,
            **env: str) -> tuple[list[list[str]], Path, subprocess.CompletedProcess]:
    """The install step run under TensorFlow `tensorflow` with a stand-in python that runs only
    pins.py, logs every call, answers `pip show tf-keras` as `tf_keras_installed` says, and prints
    `nightly_lines` (and `tf_keras_line` when asked with --tf-keras) for harness.matrix.nightly."""
    shims = tmp_path / "bin"
    shims.mkdir()
    log = tmp_path / "calls.jsonl"
    (shims / "python").write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "if sys.argv[1] not in ('-m', '-c'):\n"
        f"    os.execv({sys.executable!r}, [{sys.executable!r}] + sys.argv[1:])\n"
        "if sys.argv[1:4] == ['-m', 'pip', 'show']:\n"
        f"    sys.exit(0 if {tf_keras_installed} else 1)\n"
        "if sys.argv[1:3] == ['-m', 'harness.matrix.nightly']:\n"
        "    print('nightly: the choices, said', file=sys.stderr)\n"
        f"    sys.stdout.write({nightly_lines!r})\n"
        "    if '--tf-keras' in sys.argv:\n"
        f"        sys.stdout.write({tf_keras_line!r})\n"
        f"    sys.exit({nightly_status})\n",
        encoding="utf-8")
    (shims / "python").chmod(0o755)
    script = step("test", running="pip install")
    assert script["working-directory"] == "${{ inputs.working-directory }}"
    assert script["env"] == {"REQUIREMENTS": "${{ inputs.requirements }}",
                             "KERAS_2": "${{ inputs.keras-2 }}"}
    (tmp_path / "output").write_text("", encoding="utf-8")
    (tmp_path / "summary").write_text("", encoding="utf-8")
    done = bash(script["run"], tmp_path, PATH=f"{shims}{os.pathsep}{os.environ['PATH']}",
                HARNESS=str(ROOT), TENSORFLOW=tensorflow, RUNNER_TEMP=str(tmp_path),
                REQUIREMENTS="-e .[test]\n  mylib-extras>=1",
                GITHUB_OUTPUT=str(tmp_path / "output"),
                GITHUB_STEP_SUMMARY=str(tmp_path / "summary"), **{"KERAS_2": "auto", **env})
    calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] \
        if log.exists() else []
    return calls, tmp_path, done


@pytest.mark.subprocess
def test_a_release_installs_with_its_pins_the_harness_record_extra_and_the_library_in_one_go(
        tmp_path):
    calls, temp, done = install("2.16.2", tmp_path)
    assert done.returncode == 0, done.stderr
    pip = [c for c in calls if c[:2] == ["-m", "pip"]]
    assert len(pip) == 1 and pip[0][2] == "install"
    (requirements,) = [Path(c[c.index("-r") + 1]) for c in pip if "-r" in c]
    assert requirements.read_text(encoding="utf-8").split() == pins.requirements("2.16.2")
    assert pip[0][-4:] == [f"{ROOT}[record]", "-e", ".[test]", "mylib-extras>=1"]
    assert calls[-1][0] == "-c" and "tf.version.GIT_VERSION" in calls[-1][1]
    assert (temp / "output").read_text(encoding="utf-8") == "installed=true\n"


def _nightly_installed(calls, temp):
    pip = [c[2:] for c in calls if c[:2] == ["-m", "pip"]]
    installs = [c for c in pip if c[0] == "install"]
    (chosen,) = [Path(c[c.index("-r") + 1]) for c in installs if "-r" in c]
    return pip, chosen.read_text(encoding="utf-8").split()


@pytest.mark.subprocess
def test_nightly_installs_tf_nightly_and_keras_nightly_over_no_release_and_no_tf_keras(tmp_path):
    calls, temp, done = install("nightly", tmp_path)
    assert done.returncode == 0, done.stderr
    pip, chosen = _nightly_installed(calls, temp)
    assert [c[0] for c in pip] == ["install", "show", "uninstall", "install"]
    first, _, removed, _ = pip
    assert first[-4:] == [f"{ROOT}[record]", "-e", ".[test]", "mylib-extras>=1"]
    # What the harness's own tensorflow requirement or the library's brought goes first.
    assert {"tensorflow", "keras", "tf-keras", "tensorboard"} <= set(removed)
    assert ["-m", "harness.matrix.nightly"] in calls  # no --tf-keras: Keras 2 is not needed
    assert chosen == ["tf-nightly==2.23.0.dev20261026", "keras-nightly==3.16.0.dev2026102604"]
    assert not any("pins.py" in " ".join(c) for c in calls)
    assert "nightly: the choices, said" in done.stdout
    assert (temp / "output").read_text(encoding="utf-8") == "installed=true\n"


@pytest.mark.subprocess
@pytest.mark.parametrize("why, given", [
    ("the requirements brought tf-keras", dict(tf_keras_installed=True)),
    ("the library runs tf.keras as Keras 2", dict(TF_USE_LEGACY_KERAS="1")),
    ("as TensorFlow's own message spells it", dict(TF_USE_LEGACY_KERAS="True")),
    ("asked for", dict(KERAS_2="true")),
])
def test_a_keras_2_library_gets_the_tf_keras_nightly_of_the_nightlys_day(tmp_path, why, given):
    calls, temp, done = install("nightly", tmp_path, **given)
    assert done.returncode == 0, done.stderr
    assert ["-m", "harness.matrix.nightly", "--tf-keras"] in calls, why
    _, chosen = _nightly_installed(calls, temp)
    assert chosen[-1] == "tf-keras-nightly==2.23.0.dev2026102618"


@pytest.mark.subprocess
def test_keras_2_false_installs_no_tf_keras_nightly_though_the_requirements_brought_tf_keras(
        tmp_path):
    calls, temp, done = install("nightly", tmp_path, tf_keras_installed=True, KERAS_2="false")
    assert done.returncode == 0 and ["-m", "harness.matrix.nightly"] in calls, done.stderr


@pytest.mark.subprocess
@pytest.mark.parametrize("given, said", [
    (dict(nightly_lines="", nightly_status=3),
     "the package index has no tf-nightly to install for this Python"),
    (dict(KERAS_2="true", tf_keras_line=""), "the library needs Keras 2, and no "
     "tf-keras-nightly is built yet for tf-nightly==2.23.0.dev20261026"),
])
def test_a_nightly_that_cannot_be_installed_says_so_in_the_summary_and_runs_no_tests(
        tmp_path, given, said):
    calls, temp, done = install("nightly", tmp_path, **given)
    assert done.returncode == 0, done.stderr
    assert (temp / "output").read_text(encoding="utf-8") == "installed=false\n"
    summary = (temp / "summary").read_text(encoding="utf-8")
    assert summary.startswith("**TensorFlow nightly not installed**: ") and said in summary
    assert "Its tests did not run." in summary
    assert "::warning title=harness check::TensorFlow nightly not installed" in done.stdout
    assert not any(c[:1] == ["-c"] for c in calls)
    tests = step("test", running="eval")
    assert tests["if"] == "${{ steps.install.outputs.installed == 'true' }}"


@pytest.mark.subprocess
def test_a_fault_of_the_nightly_helper_fails_the_step_rather_than_skipping_the_tests(tmp_path):
    _, temp, done = install("nightly", tmp_path, nightly_lines="", nightly_status=1)
    assert done.returncode == 1
    assert (temp / "output").read_text(encoding="utf-8") == ""
    assert (temp / "summary").read_text(encoding="utf-8") == ""


@pytest.mark.subprocess
def test_keras_2_is_auto_true_or_false(tmp_path):
    _, _, done = install("2.21.0", tmp_path, KERAS_2="yes")
    assert done.returncode == 1
    assert "::error title=harness check::keras-2: 'yes' is not auto, true or false" in done.stdout


def set_env(text: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, str]:
    script = step("test", running="GITHUB_ENV")
    assert script["env"] == {"VARIABLES": "${{ inputs.env }}"}
    names = [s.get("name") for s in jobs()["test"]["steps"]]
    assert names[0] == "Set the library's environment variables"  # before the install
    target = tmp_path / "github_env"
    target.write_text("", encoding="utf-8")
    done = bash(script["run"], tmp_path, VARIABLES=text, GITHUB_ENV=str(target))
    return done, target.read_text(encoding="utf-8")


@pytest.mark.subprocess
def test_env_sets_each_name_value_line_for_the_install_and_the_tests(tmp_path):
    done, written = set_env("TF_USE_LEGACY_KERAS=1\n\n  \nXLA_FLAGS=--xla_cpu a=b\r\n", tmp_path)
    assert done.returncode == 0, done.stderr
    assert written == "TF_USE_LEGACY_KERAS=1\nXLA_FLAGS=--xla_cpu a=b\n"


@pytest.mark.subprocess
@pytest.mark.parametrize("text", ["TF_USE_LEGACY_KERAS", "1X=2", "export A=1"])
def test_env_refuses_a_line_that_is_not_name_value(tmp_path, text):
    done, written = set_env(text, tmp_path)
    assert done.returncode == 1 and written == ""
    assert f"::error title=harness check::env: '{text}' is not NAME=value" in done.stdout


# --- the test job: pytest --harness-check, its exit status, the reports ---------------------------

def test_each_version_is_a_job_of_its_own_that_no_other_cancels():
    test = jobs()["test"]
    assert test["needs"] == "versions"
    assert test["strategy"]["fail-fast"] is False
    assert test["strategy"]["matrix"] == {
        "tensorflow": "${{ fromJSON(needs.versions.outputs.versions) }}"}
    assert test["env"]["TENSORFLOW"] == "${{ matrix.tensorflow }}"
    assert test["timeout-minutes"] == "${{ inputs.timeout-minutes }}"
    # The job's status is pytest's: nothing in it may swallow a failure (a nightly that cannot be
    # installed runs no tests, and says so: see above).
    assert not any("continue-on-error" in s for s in test["steps"])
    assert "continue-on-error" not in test


def run_tests(tmp_path: Path, exit_status: int, expectations: str, writes_report: bool):
    """The pytest step, its command a stand-in that records its arguments."""
    script = step("test", running="eval")
    assert script["env"] == {"TEST_COMMAND": "${{ inputs.test-command }}",
                             "MODES": "${{ inputs.modes }}",
                             "EXPECTATIONS": "${{ inputs.expectations }}",
                             "REPORTS": "${{ runner.temp }}/harness-check-reports"}
    assert script["working-directory"] == "${{ inputs.working-directory }}"
    (tmp_path / "fake_pytest.py").write_text(
        "import json, pathlib, sys\n"
        "pathlib.Path('args.json').write_text(json.dumps(sys.argv[1:]))\n"
        "report = [a.split('=', 1)[1] for a in sys.argv if a.startswith('--harness-check-json=')]\n"
        f"if {writes_report}:\n"
        "    pathlib.Path(report[0]).write_text('{}')\n"
        f"sys.exit({exit_status})\n", encoding="utf-8")
    reports = tmp_path / "reports"
    done = bash(script["run"], tmp_path, MODES="eager,function", EXPECTATIONS=expectations,
                REPORTS=str(reports), TENSORFLOW="2.21.0",
                TEST_COMMAND=f'"{sys.executable}" fake_pytest.py tests -k "not slow"')
    args = json.loads((tmp_path / "args.json").read_text(encoding="utf-8"))
    return done, args, reports


@pytest.mark.subprocess
def test_the_librarys_command_runs_as_written_with_the_check_flags_after_it(tmp_path):
    done, args, reports = run_tests(tmp_path, 0, "../reviewed.json", writes_report=True)
    assert done.returncode == 0, done.stderr
    assert args == ["tests", "-k", "not slow", "--harness-check",
                    "--harness-check-mode=eager,function",
                    f"--junitxml={reports}/junit-tf2.21.0.xml",
                    f"--harness-check-json={reports}/report-tf2.21.0.json",
                    "--harness-expectations=../reviewed.json"]
    assert "::warning" not in done.stdout


@pytest.mark.subprocess
def test_the_step_fails_with_pytests_exit_status_and_says_when_no_report_was_left(tmp_path):
    done, args, _ = run_tests(tmp_path, 1, "", writes_report=False)
    assert done.returncode == 1
    assert not any(a.startswith("--harness-expectations") for a in args), \
        "no expectations input: pytest finds the file itself"
    assert "::warning title=harness check::no harness report under TensorFlow 2.21.0" in done.stdout


def test_both_reports_are_uploaded_per_version_even_after_pytest_failed():
    upload = step("test", using="actions/upload-artifact")
    assert upload["if"] == "${{ !cancelled() }}"
    assert upload["with"]["name"] == "${{ inputs.artifact-prefix }}-tf${{ matrix.tensorflow }}"
    # The files the pytest step names, its $REPORTS and $TENSORFLOW written as expressions.
    reports = step("test", running="eval")["env"]["REPORTS"]
    assert upload["with"]["path"].splitlines() == [
        f"{reports}/junit-tf${{{{ matrix.tensorflow }}}}.xml",
        f"{reports}/report-tf${{{{ matrix.tensorflow }}}}.json",
        # and, where a nightly could not be installed, why (the install step writes it there)
        f"{reports}/skipped-tf${{{{ matrix.tensorflow }}}}.txt"]
    assert "harness-check-reports/skipped-tf$TENSORFLOW.txt" in step("test",
                                                                      running="pip install")["run"]


# --- the merge job --------------------------------------------------------------------------------

def test_the_merge_waits_for_every_version_and_runs_unless_the_run_was_cancelled():
    merge = jobs()["merge"]
    assert set(merge["needs"]) == {"versions", "test"}
    assert merge["if"] == "${{ !cancelled() && needs.versions.result == 'success' }}"
    download = step("merge", using="actions/download-artifact")
    upload_name = step("test", using="actions/upload-artifact")["with"]["name"]
    assert download["with"]["pattern"] == upload_name.replace("${{ matrix.tensorflow }}", "*")
    assert download["with"]["merge-multiple"] is True
    assert download["with"]["path"] == step("merge", running="harness merge")["env"]["REPORTS"]
    assert step("test", running="eval")["env"]["REPORTS"] == download["with"]["path"]


def merge_step(tmp_path: Path, *reports: dict, skipped: dict = {}):  # noqa: B006 - read only
    script = step("merge", running="harness merge")
    folder, matrix, summary = tmp_path / "reports", tmp_path / "matrix", tmp_path / "summary.md"
    folder.mkdir()
    for report in reports:
        version = report["environment"]["tensorflow"]
        (folder / f"report-tf{version}.json").write_text(json.dumps(report), encoding="utf-8")
    for version, why in skipped.items():
        (folder / f"skipped-tf{version}.txt").write_text(why + "\n", encoding="utf-8")
    (folder / "junit-tf2.21.0.xml").write_text("<testsuites/>", encoding="utf-8")
    summary.write_text("", encoding="utf-8")
    (tmp_path / "output").write_text("", encoding="utf-8")
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])
    python_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    done = bash(script["run"], tmp_path, REPORTS=str(folder), MATRIX=str(matrix),
                GITHUB_STEP_SUMMARY=str(summary), TEST_COMMAND="python -m pytest tests",
                GITHUB_OUTPUT=str(tmp_path / "output"),
                PATH=path, PYTHONPATH=python_path)
    return done, matrix, summary.read_text(encoding="utf-8")


def report(version: str, verdict: str) -> dict:
    outcome = {"status": "ok", "orders": [[{"value": 1.0, "dtype": "float32", "shape": []}]],
               "sources": []}
    return {"schema": "harness.report/1",
            "environment": {"tensorflow": version, "numpy": "1.26.4", "python": "3.11.7"},
            "modes": ["eager", "function", "graph"], "summary": {},
            "results": [{"case": "recorded.mylib.ops.square", "point": "x=1.0", "order": 2,
                         "verdict": verdict, "reason": "", "details": [], "rerun": "",
                         "modes": {m: outcome for m in ("eager", "function", "graph")}}]}


@pytest.mark.subprocess
def test_the_merge_writes_the_page_and_puts_its_markdown_in_the_job_summary(tmp_path):
    done, matrix, summary = merge_step(tmp_path, report("2.21.0", "pass"),
                                       report("2.23.0-dev20261026", "fail"))
    assert done.returncode == 0, done.stderr
    markdown = (matrix / "matrix.md").read_text(encoding="utf-8")
    assert "recorded.mylib.ops.square" in markdown and "2.23.0-dev20261026" in markdown
    assert summary == "**harness check** of `python -m pytest tests`:\n" + markdown
    assert "<html" in (matrix / "matrix.html").read_text(encoding="utf-8")
    assert json.loads((matrix / "matrix.json").read_text(encoding="utf-8"))["schema"] \
        == "harness.matrix/1"
    upload = step("merge", using="actions/upload-artifact")
    assert upload["with"]["name"] == "${{ inputs.artifact-prefix }}-matrix"
    assert upload["with"]["if-no-files-found"] == "error"
    written = step("merge", running="harness merge")["env"]["MATRIX"]
    assert upload["with"]["path"].splitlines() == [
        f"{written}/matrix.md", f"{written}/matrix.html", f"{written}/matrix.json"]


@pytest.mark.subprocess
def test_a_nightly_that_was_not_installed_is_said_in_the_merge_and_alone_fails_nothing(tmp_path):
    why = "the library needs Keras 2, and no tf-keras-nightly is built yet for tf-nightly==X"
    done, matrix, summary = merge_step(tmp_path, report("2.21.0", "pass"),
                                       skipped={"nightly": why})
    assert done.returncode == 0, done.stderr
    assert f"- TensorFlow nightly not installed: {why}; its tests did not run.\n" in summary
    assert (matrix / "matrix.md").is_file()
    assert (tmp_path / "output").read_text(encoding="utf-8") == "merged=true\n"
    # Only the nightly asked for, and not installed: said, a warning, no page to upload.
    alone = tmp_path / "alone"
    alone.mkdir()
    done, matrix, summary = merge_step(alone, skipped={"nightly": why})
    assert done.returncode == 0, done.stderr
    assert "its tests did not run" in summary and "No TensorFlow version left" not in summary
    assert "::warning title=harness check::no TensorFlow version was installed" in done.stdout
    assert (alone / "output").read_text(encoding="utf-8") == ""
    upload = step("merge", using="actions/upload-artifact")
    assert upload["if"] == "${{ steps.merge.outputs.merged == 'true' }}"


@pytest.mark.subprocess
def test_the_merge_fails_saying_so_when_no_version_left_a_report(tmp_path):
    done, _, summary = merge_step(tmp_path)
    assert done.returncode == 1
    assert "No TensorFlow version left a harness report" in summary
    assert "::error title=harness check::No TensorFlow version" in done.stdout


# --- this repository's call --------------------------------------------------------------------

def test_the_project_calls_the_workflow_on_its_example_project_as_a_library_would():
    caller = load(CALLER)
    assert {"push", "pull_request", "workflow_dispatch"} <= set(caller["on"])
    (call,) = caller["jobs"].values()
    assert call["uses"] == "./.github/workflows/harness-check.yml"
    given = call["with"]
    required = {n for n, (_, default) in INPUTS.items() if default is REQUIRED}
    assert required <= set(given) <= set(INPUTS)
    project = ROOT / given["working-directory"]
    assert given["working-directory"] == "tests/data/record_project"
    assert (project / given["expectations"]).resolve() \
        == ROOT / "tests" / "data" / "record_project_expectations.json"
    # python -m pytest puts the project's folder on sys.path, where its tests import mylib from.
    command = given["test-command"].split()
    assert command[:3] == ["python", "-m", "pytest"]
    assert all((project / arg).is_dir() for arg in command[3:])
    tensorflow = [v.strip() for v in given["tensorflow-versions"].split(",")]
    assert "nightly" in tensorflow and all(v in pins.PINS for v in tensorflow if v != "nightly")
