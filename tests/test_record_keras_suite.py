"""Keras's own quantized-layer tests, recorded and replayed: real code nobody here wrote.

The test files come from the source distribution of the Keras release that is installed (the
package registry serves it; the wheel has no tests), so they match the layers they test. They
are run as Keras's developers run them, with `--harness-record-include=keras`, since their custom
gradients are Keras's own. What is checked has reasons of its own: the tests' outcomes with and
without the recorder (every one passes either way), and replay's own promises (every recorded
function replayed in every core mode, no error, no mode raising, one case per function whatever
the number of layer instances). The verdicts themselves are those of straight-through
estimators, tabulated in the closing note; a fail there is the documented rule for a surrogate.
Downloads and runs two test files of about 170 tests: slow.
"""

import os
import shutil
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from harness.record import store
from tests.test_record_hard import replay, user_pytest

pytestmark = pytest.mark.slow

FILES = ("keras/src/layers/core/dense_test.py", "keras/src/layers/core/einsum_dense_test.py")
CACHE = Path(os.environ.get("HARNESS_TEST_CACHE", Path.home() / ".cache" / "harness-tests"))


def _pip() -> list:
    for pip in ([sys.executable, "-m", "pip"], ["python3", "-m", "pip"]):
        try:
            if subprocess.run(pip + ["--version"], capture_output=True).returncode == 0:
                return pip
        except OSError:
            continue
    return []


@pytest.fixture(scope="module")
def keras_tests(tmp_path_factory):
    """The two test files of the installed Keras release, in a folder of their own."""
    keras = pytest.importorskip("keras", reason="Keras 3 is installed with TensorFlow 2.16+")
    if not keras.__version__.startswith("3."):
        pytest.skip(f"keras {keras.__version__} is not Keras 3, whose quantized layers these are")
    folder = CACHE / f"keras-{keras.__version__}"
    sdist = folder / f"keras-{keras.__version__}.tar.gz"
    if not sdist.is_file():
        pip = _pip()
        if not pip:
            pytest.skip("no pip to download Keras's source distribution with")
        folder.mkdir(parents=True, exist_ok=True)
        got = subprocess.run(pip + ["download", "--no-deps", "--no-binary", ":all:",
                                    f"keras=={keras.__version__}", "-d", str(folder)],
                             capture_output=True, text=True, timeout=600)
        if got.returncode != 0 or not sdist.is_file():
            pytest.skip(f"could not download keras=={keras.__version__}'s source distribution: "
                        f"{(got.stderr or got.stdout).strip().splitlines()[-1:]}")
    here = tmp_path_factory.mktemp("keras_suite")
    with tarfile.open(sdist) as archive:
        for name in FILES:
            member = archive.getmember(f"keras-{keras.__version__}/{name}")
            (here / Path(name).name).write_bytes(archive.extractfile(member).read())
    return here


def _run(folder, *args):
    return user_pytest(folder, *[Path(f).name for f in FILES], *args)


@pytest.fixture(scope="module")
def recorded(keras_tests):
    proc = _run(keras_tests, f"--harness-record={keras_tests / 'rec'}",
                "--harness-record-include=keras")
    session = store.read(str(keras_tests / "rec"))["folder"]
    replayed, results = replay(session, keras_tests / "r.json", "--jobs=2")
    return proc, session, replayed, results


def _outcome(proc) -> str:
    return proc.stdout.strip().splitlines()[-1].split(" in ")[0]


def test_recording_keras_s_gradients_leaves_every_test_s_outcome_as_it_was(keras_tests, recorded):
    proc, _, _, _ = recorded
    plain = _run(keras_tests)
    assert plain.returncode == proc.returncode == 0, plain.stdout[-2000:] + proc.stdout[-2000:]
    assert _outcome(plain).split(",")[0] == _outcome(proc).split(",")[0], (_outcome(plain),
                                                                         _outcome(proc))


def test_every_recorded_function_is_replayed_in_every_mode_one_case_per_function(recorded):
    _, session, replayed, results = recorded
    assert replayed.returncode in (0, 1), replayed.stderr[-3000:]
    verdicts = Counter(r["verdict"] for r in results.values())
    assert set(verdicts) <= {"pass", "fail"}, verdicts  # no error, crash, timeout or skip
    for (case, point), r in results.items():
        assert {r["modes"][m]["status"] for m in ("eager", "function", "graph")} == {"ok"}, \
            (case, point, r["reason"])
    functions = {(f["module"], f["qualname"]) for f in store.read(session)["functions"]}
    cases = {case for case, _ in results}
    # Layer instances of one function share its case: no `_2`, `_3` per instance.
    assert len(cases) == len(functions), sorted(cases)


def test_without_asking_the_last_line_counts_keras_s_gradients_left_out(keras_tests, tmp_path):
    proc = _run(keras_tests, f"--harness-record={tmp_path / 'rec'}", "-k", "int8")
    assert proc.returncode == 0, proc.stdout[-2000:]
    [line] = [x for x in proc.stdout.splitlines() if x.startswith("harness record:")]
    assert "custom gradients that keras defines" in line and "were made and left out, as the " \
           "framework's own (record them with --harness-record-include=keras" in line, line
    assert "no custom-gradient function called" not in line
    shutil.rmtree(tmp_path / "rec", ignore_errors=True)
