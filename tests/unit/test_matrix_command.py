"""python -m harness matrix and bisect end to end over stand-in environments: no download, no
TensorFlow.

Each stand-in is a cached environment (a folder with its marker, where the matrix's cache would
hold one) whose `bin/python` is a small script: it writes a harness.report/1 report whose verdict
depends on its build, and records how it was called. The package index is a folder of simple-API
pages listing made-up tf-nightly wheels. Everything else is the real command: the flags, the
index reading, the cache lookup, a real install that fails, the search and the merged matrix.
"""

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from harness.cli import matrix as cli_matrix
from harness.matrix import command, envs, nightly
from tests.helpers import DATA
from tests.unit.in_process import harness

pytestmark = pytest.mark.subprocess  # the stand-ins and the installer are processes

STAND_IN = '''
import json, os, sys
here = os.path.dirname(os.path.abspath(sys.argv[0]))
build = json.load(open(os.path.join(here, "build.json")))
path = os.environ.get("PYTHONPATH", "")
with open(os.path.join(here, "calls.jsonl"), "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "path": path,
                        "linked": sorted(os.listdir(path)) if path else [],
                        "harness": os.path.realpath(os.path.join(path, "harness"))}) + "\\n")
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--json_out="))
mode = {"status": "ok", "orders": []}
report = {"schema": "harness.report/1", "environment": {"tensorflow": build["tensorflow"],
          "tensorflow_git": build["git"], "numpy": "2.0", "python": "3.11"},
          "modes": ["eager", "function"],
          "results": [{"case": "fake.case", "point": "x=1.0", "verdict": build["verdict"],
                       "reason": "", "details": [], "modes": {"eager": mode, "function": mode}}],
          "summary": {}}
with open(out, "w") as f:
    json.dump(report, f)
sys.exit(0)
'''

NIGHTLIES = ["2.21.0.dev20260202", *(f"2.22.0.dev2026020{d}" for d in range(4, 10)),
             "2.23.0.dev20261026"]
FIRST_BAD = "2.22.0.dev20260207"


@pytest.fixture(scope="module")
def python():
    return envs.python_version(sys.executable)


def wheel(version):
    return f"tf_nightly-{version}-cp311-cp311-manylinux_2_27_x86_64.whl"


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A simple-API folder listing the nightlies (and one more with no stand-in environment)."""
    monkeypatch.setattr(nightly, "wheel_fits", lambda name, version: name.endswith(".whl"))
    folder = tmp_path / "index"
    keras = "keras_nightly-3.16.0.dev2026020104-py3-none-any.whl"
    for package, names in (("tf-nightly", [wheel(v) for v in NIGHTLIES]
                            + [wheel("2.22.0.dev20260301")]), ("keras-nightly", [keras])):
        (folder / package).mkdir(parents=True)
        links = "".join(f'<a href="{n}">{n}</a>\n' for n in names)
        (folder / package / "index.html").write_text(f"<html><body>{links}</body></html>\n")
    return folder.as_uri()


def stand_in(cache, version, python, index, bad):
    """A ready environment for `version` whose report says xpass from FIRST_BAD on."""
    folder = envs.env_dir(cache, command.resolve(version, nightly.Index(index), python), python)
    (folder / "bin").mkdir(parents=True)
    tensorflow = version.replace(".dev", "-dev")
    at = NIGHTLIES.index(version) if version in NIGHTLIES else 0
    (folder / "build.json").write_text(json.dumps({
        "tensorflow": tensorflow, "git": f"v1.12.1-{at}-g{at:07x}",
        "verdict": "xpass" if bad else "xfail"}))
    (folder / "stand_in.py").write_text(STAND_IN)
    script = folder / "bin" / "python"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{folder / "stand_in.py"}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (folder / envs.MARKER).write_text("{}\n")
    return folder


@pytest.fixture
def cache(tmp_path, python, index):
    found = tmp_path / "cache"
    stand_in(found, "2.21.0", python, index, bad=False)
    for version in NIGHTLIES:
        stand_in(found, version, python, index, bad=version >= FIRST_BAD)
    return found


def calls(cache):
    return [json.loads(line) for f in sorted(cache.glob("*/calls.jsonl"))
            for line in f.read_text().splitlines()]


def test_bisect_names_the_first_bad_nightly_its_commits_and_observes_few(cache, index, tmp_path,
                                                                          monkeypatch):
    checked = []
    monkeypatch.setattr(cli_matrix, "check_cases", checked.append)  # it lists with TensorFlow
    answer = tmp_path / "bisect.json"
    proc = harness("bisect", "fake.case", "--good=2.21.0", "--bad=nightly",
                   f"--cache_dir={cache}", f"--index_url={index}", f"--json_out={answer}",
                   "--mode=eager,function")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    # The chain: 2.21.0, the seven 2.22.0 nightlies and the newest; 2.21.0.dev20260202 lies
    # before 2.21.0.
    assert "n = 9 builds from 2.21.0 to 2.23.0.dev20261026" in out
    assert ("bisect: last good: tf-nightly 2.22.0.dev20260206 (2026-02-06, GIT_VERSION "
            "v1.12.1-3-g0000003): fake.case[x=1.0] xfail") in out
    assert "bisect: first bad: tf-nightly 2.22.0.dev20260207 (2026-02-07, " in out
    assert ("bisect: commits: https://github.com/tensorflow/tensorflow/compare/0000003...0000004"
            in out)
    ran = calls(cache)
    assert 3 <= len(ran) <= 6, "ceil(log2 9) + 2 = 6 builds at most, the two ends at least"
    assert f"tried {len(ran)} of n = 9 builds" in out and "0 environments installed" in out
    assert checked == [["--mode=eager,function", "--cases=fake.case"]]
    assert all(c["argv"][-2:] == ["--mode=eager,function", "--cases=fake.case"] for c in ran)
    data = json.loads(answer.read_text())
    assert (data["good"]["version"], data["bad"]["version"]) == ("2.22.0.dev20260206", FIRST_BAD)
    assert data["bad"]["git"] == "v1.12.1-4-g0000004" and data["n"] == 9


def test_each_run_finds_only_this_harness_on_its_path(cache, index, tmp_path, monkeypatch):
    monkeypatch.setattr(cli_matrix, "check_cases", lambda args: None)
    harness("bisect", "fake.case", "--good=2.21.0", "--bad=2.22.0.dev20260205",
            f"--cache_dir={cache}", f"--index_url={index}")
    ran = calls(cache)
    assert ran
    import harness as package
    for call in ran:
        assert call["linked"] == ["harness"], "nothing of this environment but the harness"
        assert call["harness"] == os.path.realpath(os.path.dirname(package.__file__))
    assert not any(Path(call["path"]).exists() for call in ran), "the link folder is removed"


def test_the_matrix_has_a_column_per_build_and_says_why_one_was_not_installed(cache, index,
                                                                             tmp_path):
    out = tmp_path / "out"
    proc = harness("matrix", "--versions=2.21.0,nightly,2.22.0.dev20260301,2.22.0.dev20260631",
                   f"--cache_dir={cache}", f"--index_url={index}", f"--out_dir={out}",
                   "--case_file=tests/data/my_cases.py", "--", "--nonumeric")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # two builds were not installed
    assert "nightly is tf-nightly 2.23.0.dev20261026, the newest of 9" in proc.stdout
    columns = {v["version"]: v for v in json.loads((out / "matrix.json").read_text())["versions"]}
    assert list(columns) == ["2.21.0", "2.22.0-dev20260301", "2.22.0-dev20260631",
                             "2.23.0-dev20261026"]
    assert columns["2.23.0-dev20261026"]["environment"]["tensorflow_git"] == "v1.12.1-7-g0000007"
    listed_but_broken = columns["2.22.0-dev20260301"]["not_installed_reason"]
    assert "installing TensorFlow" in listed_but_broken and "failed" in listed_but_broken
    assert columns["2.22.0-dev20260631"]["not_installed_reason"].startswith(
        f"{index} has no tf-nightly 2.22.0.dev20260631 (its builds for Python ")
    ran = calls(cache)
    assert len(ran) == 2
    assert all(c["argv"][-2:] == [f"--case_file={DATA / 'my_cases.py'}", "--nonumeric"]
               for c in ran)
    stamp = (out / "matrix.md").read_text().splitlines()[2]
    assert stamp.startswith("Generated by `python -m harness matrix "
                            "--versions=2.21.0,nightly,2.22.0.dev20260301,2.22.0.dev20260631 "
                            f"--out_dir={out} --case_file=tests/data/my_cases.py -- --nonumeric`")
    assert "--cache_dir" not in stamp and "--index_url" not in stamp and stamp.endswith(
        "-- --nonumeric` from a real run under each release; do not edit it by hand.")


def test_uv_compiles_the_bytecode_once_at_install(tmp_path, monkeypatch, python):
    # Without .pyc files, every worker of a run would compile TensorFlow's modules on import where
    # PYTHONDONTWRITEBYTECODE is set (uv writes none by default).
    steps = []
    monkeypatch.setattr(envs, "_step", lambda version, what, command, log: steps.append(command))
    wanted = envs.release("2.21.0")
    envs._create(tmp_path / "env", wanted, ["tensorflow==2.21.0"], sys.executable, "uv",
                 tmp_path / "log")
    [install] = [c for c in steps if c[:3] == ["uv", "pip", "install"]]
    assert "--compile-bytecode" in install and install[-1] == "tensorflow==2.21.0"


def test_a_nightly_environment_holds_the_tf_keras_nightly_of_its_minor_release(tmp_path,
                                                                              monkeypatch, python):
    # The library's Keras 2 cases and its keras mode run under the nightly too: its environment
    # installs the tf-keras-nightly built for its minor release on or before its day.
    monkeypatch.setattr(nightly, "wheel_fits", lambda name, version: name.endswith(".whl"))
    folder = tmp_path / "index"
    listed = {"tf-nightly": [wheel("2.23.0.dev20261026")],
              "keras-nightly": ["keras_nightly-3.16.0.dev2026102604-py3-none-any.whl"],
              "tf-keras-nightly": [f"tf_keras_nightly-{v}-py3-none-any.whl"
                                   for v in ("2.21.0.dev2026102609", "2.23.0.dev2026102618")]}
    for package, names in listed.items():
        (folder / package).mkdir(parents=True)
        links = "".join(f'<a href="{n}">{n}</a>\n' for n in names)
        (folder / package / "index.html").write_text(f"<html><body>{links}</body></html>\n")
    wanted = command.resolve("nightly", nightly.Index(folder.as_uri()), python, log=lambda _: None)
    assert list(wanted.requirements()) == ["tf-nightly==2.23.0.dev20261026",
                                           "keras-nightly==3.16.0.dev2026102604",
                                           "tf-keras-nightly==2.23.0.dev2026102618"]
    assert nightly.KERAS_RULE in wanted.key
