"""A real suite nobody here wrote: larq's own quantizer tests, recorded, replayed and checked.

larq ships its pytest tests inside its wheel (larq/quantizers_test.py). larq 0.14.0 defines six
custom gradients there: its straight-through estimators (ste_sign, approx_sign, swish_sign,
ste_tern, ste_heaviside) and DoReFa's identity gradient. Its tests draw random inputs and random
SteTern thresholds, so a case id must not carry a captured value and the check must be green on
unchanged code run after run, serially and under pytest-xdist. Recording them and replaying must
show every one, each failing the numeric oracle only as a surrogate gradient; DoReFa's closes over
a tf_keras layer, whose `threading.local` the copy cannot make again, and is skipped saying so.
Skipped where larq is not installed (it is no requirement of the harness); CI runs it in an
environment of its own with larq 0.14.0 (.ci/libraries.txt):
  TF_USE_LEGACY_KERAS=1 python -m pytest -m slow tests/test_record_larq.py
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import helpers
from tests.helpers import REPO

pytestmark = pytest.mark.slow
larq = pytest.importorskip("larq", reason="larq is not installed; its suite is what this records")

LARQ_FUNCTIONS = {f"recorded.larq.quantizers.{name}" for name in (
    "ste_sign._call", "approx_sign", "swish_sign._call", "ste_tern._call", "ste_heaviside._call",
    "DoReFa.call._k_bit_with_identity_grad")}
DOREFA = "recorded.larq.quantizers.DoReFa.call._k_bit_with_identity_grad"
SURROGATE = (
    "is a surrogate, not a derivative (a straight-through estimator's or a quantizer's). If that is"
    " intended"
)


def _env(*front):
    path = os.pathsep.join([*map(str, front), REPO])
    return dict(os.environ, PYTHONPATH=path, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2",
                CI="1")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("larq")
    env = _env()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *helpers.RECORD_PLUGIN, "--pyargs", "larq.quantizers_test",
                           f"--harness-record={folder / 'rec'}"], capture_output=True, text=True,
                          cwd=str(folder), env=env, timeout=1800)
    assert "harness record: 6 custom-gradient functions called" in proc.stdout, proc.stdout[-3000:]
    return proc, folder, env


def replay(recorded, *args):
    _, folder, env = recorded
    out = folder / f"r{len(list(folder.glob('r*.json')))}.json"
    proc = helpers.harness("replay", str(folder / "rec"), "--mode=all", f"--json_out={out}", *args,
                           cwd=str(folder), env=env, timeout=1800)
    return proc, json.loads(out.read_text())["results"]


def test_every_larq_custom_gradient_is_replayed_and_each_failure_is_a_surrogate_said_so(recorded):
    proc, results = replay(recorded)
    assert {r["case"] for r in results} == LARQ_FUNCTIONS, proc.stdout[-3000:]
    for r in results:
        if r["case"] == DOREFA:
            assert r["verdict"] == "skip" and "_thread._local" in r["reason"], r
            continue
        assert r["verdict"] in ("pass", "fail"), r
        if r["verdict"] == "fail":
            assert r["reason"].startswith("the agreed values differ from the numeric derivative at "
                                          "order 1"), r
            assert (
                SURROGATE in r["reason"]
                and "--expect 'numeric:values differ' with check or replay" in r["reason"]
            )
        assert any(d.startswith("recorded: ") and "larq.quantizers_test::" in d
                   for d in r["details"]), r


def test_declared_as_straight_through_estimators_no_larq_gradient_fails(recorded):
    proc, results = replay(recorded,
                           "--expect=numeric:values differ:larq's straight-through estimators")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert {r["verdict"] for r in results} <= {"pass", "xfail", "xpass", "skip"}


# -- the check a library leaves on --------------------------------------------------------------

def _check(folder, env, name, *args):
    """larq's quantizer tests under --harness-check: (exit status, output, point ids replayed)."""
    out = folder / f"{name}.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *helpers.RECORD_PLUGIN, "--pyargs", "larq.quantizers_test",
                           f"--harness-check={folder / 'check'}", f"--harness-check-json={out}",
                           f"--harness-expectations={folder / 'reviewed.json'}", "-rfEX", *args],
                          capture_output=True, text=True, cwd=str(folder), env=env, timeout=1800)
    ids = sorted((r["case"], r["point"]) for r in json.loads(out.read_text())["results"])
    return proc.returncode, proc.stdout, ids


@pytest.fixture(scope="module")
def larq_copy(tmp_path_factory):
    """A copy of the installed larq, first on the path, whose quantizers a test may change."""
    folder = tmp_path_factory.mktemp("larq-copy")
    shutil.copytree(Path(larq.__file__).parent, folder / "src" / "larq")
    return folder


def test_accepted_once_the_check_is_green_serially_and_under_xdist_and_a_change_is_seen(larq_copy):
    pytest.importorskip("xdist", reason="pytest-xdist is the test extra's")
    folder = larq_copy
    env = _env(folder / "src")
    status, out, accepted = _check(folder, env, "accept", "--harness-accept")
    assert status == 0, out[-3000:]
    # Unchanged code, random inputs and thresholds drawn anew: green every time, the same points.
    for name, args in (("serial", ()), ("xdist", ("-n", "2"))):
        status, out, ids = _check(folder, env, name, *args)
        assert status == 0, (name, out[-3000:])
        assert ids == accepted, name
    # A planted change: ste_sign's gradient doubled in graphs only. Red.
    quantizers = folder / "src" / "larq" / "quantizers.py"
    original = quantizers.read_text()
    right = "            return _clipped_gradient(x, dy, clip_value)\n\n        return math.sign(x)"
    assert original.count(right) == 1
    quantizers.write_text(original.replace(right, right.replace(
        "_clipped_gradient(x, dy, clip_value)",
        "_clipped_gradient(x, dy, clip_value) * (1.0 if tf.executing_eagerly() else 2.0)")))
    status, out, ids = _check(folder, env, "planted")
    assert status == 1 and "FAILED harness::recorded.larq.quantizers.ste_sign._call[" in out, \
        out[-3000:]
    assert ids == accepted
    # The function made a true derivative (sign's is 0): its accepted surrogate entry no longer
    # deviates, and the xpass says that the function's code changed. (larq's own gradient tests
    # fail now, rightly: they test the estimator; no replayed point fails.)
    quantizers.write_text(original.replace(right, right.replace(
        "_clipped_gradient(x, dy, clip_value)", "tf.zeros_like(dy)")))
    status, out, ids = _check(folder, env, "mended")
    assert "FAILED src/larq/quantizers_test.py::TestGradients::test_ste_grad" in out, out[-3000:]
    assert "FAILED harness::" not in out, out[-3000:]
    xpassed = [line for line in out.splitlines()
               if line.startswith("XPASS harness::recorded.larq.quantizers.ste_sign._call[")]
    assert xpassed and all("code changed" in line for line in xpassed), out[-3000:]
