"""A real suite nobody here wrote: larq's own quantizer tests, recorded, replayed and checked.

larq ships its pytest tests inside its wheel (larq/quantizers_test.py). larq 0.14.0 defines six
custom gradients there: its straight-through estimators (ste_sign, approx_sign, swish_sign,
ste_tern, ste_heaviside) and DoReFa's identity gradient. Its tests draw random inputs and random
SteTern thresholds, so a case id must not carry a captured value and the check must be green on
unchanged code run after run, serially and under pytest-xdist. Recording them and replaying must
show every one, each passing: where the forward is locally constant, as a surrogate checked for its
direction and its linearity in dy, with no reviewed file. A sign flip or a dropped dy planted in
ste_sign fails, and so does a sign flip made after the right one was declared a surrogate.
DoReFa's closes over a tf_keras layer (its `threading.local` among the layer's attributes): it is
replayed with the layer made again, and judged as the others. Skipped where larq is not
installed (it is no requirement of the harness); CI
runs it in an environment of its own with larq 0.14.0 (.ci/libraries.txt):
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
CHECKED = "where the forward is locally constant (its derivative 0), and points the way the forward"


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


def test_every_larq_custom_gradient_is_replayed_and_passes_a_surrogate_as_checked(recorded):
    proc, results = replay(recorded)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert {r["case"] for r in results} == LARQ_FUNCTIONS, proc.stdout[-3000:]
    surrogates = set()
    for r in results:
        assert r["verdict"] == "pass", r
        assert r["oracles"]["linearity"]["status"] == "match", r
        if CHECKED in r["reason"]:
            surrogates.add(r["case"])
            assert "the custom gradient is a surrogate at " in r["reason"], r
        assert any(d.startswith("recorded: ") and "larq.quantizers_test::" in d
                   for d in r["details"]), r
    # Every estimator is a checked surrogate at one point at least (the 4x11 one of its tests),
    # DoReFa's k-bit rounding too.
    assert surrogates == LARQ_FUNCTIONS
    assert not any("cannot be made again" in r["reason"] for r in results)


def test_strict_surrogate_fails_them_until_they_are_declared(recorded):
    proc, results = replay(recorded, "--strict_surrogate")
    assert proc.returncode == 1, proc.stdout[-3000:]
    failed = [r for r in results if r["verdict"] == "fail"]
    assert failed and all(r["undeclared"] == ["numeric:surrogate"] for r in failed), failed
    assert all("--expect 'numeric:surrogate' with check or replay" in r["reason"]
               for r in failed)
    proc, results = replay(recorded, "--strict_surrogate",
                           "--expect=numeric:surrogate:larq's straight-through estimators")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert {r["verdict"] for r in results} <= {"pass", "xfail", "xpass", "skip"}


# -- the check a library leaves on --------------------------------------------------------------

def _check(folder, env, name, *args):
    """larq's quantizer tests under --harness-check: (exit status, output, point ids replayed)."""
    out = folder / f"{name}.json"
    reviewed = folder / "reviewed.json"
    given = [f"--harness-expectations={reviewed}"] if reviewed.exists() else []
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *helpers.RECORD_PLUGIN, "--pyargs", "larq.quantizers_test",
                           f"--harness-check={folder / 'check'}", f"--harness-check-json={out}",
                           *given, "-rfEX", *args],
                          capture_output=True, text=True, cwd=str(folder), env=env, timeout=1800)
    ids = sorted((r["case"], r["point"]) for r in json.loads(out.read_text())["results"])
    return proc.returncode, proc.stdout, ids


@pytest.fixture(scope="module")
def larq_copy(tmp_path_factory):
    """A copy of the installed larq, first on the path, whose quantizers a test may change."""
    folder = tmp_path_factory.mktemp("larq-copy")
    shutil.copytree(Path(larq.__file__).parent, folder / "src" / "larq")
    return folder


def _plant(quantizers, original, gradient):
    right = "            return _clipped_gradient(x, dy, clip_value)\n\n        return math.sign(x)"
    assert original.count(right) == 1
    quantizers.write_text(original.replace(right, right.replace(
        "_clipped_gradient(x, dy, clip_value)", gradient)))


def test_green_with_no_reviewed_file_serially_and_under_xdist_and_each_planted_bug_is_red(
        larq_copy):
    pytest.importorskip("xdist", reason="pytest-xdist is the test extra's")
    folder = larq_copy
    env = _env(folder / "src")
    # Unchanged code, random inputs and thresholds drawn anew, no reviewed file: green every time,
    # the same points.
    found = {}
    for name, args in (("serial", ()), ("xdist", ("-n", "2"))):
        status, out, found[name] = _check(folder, env, name, *args)
        assert status == 0, (name, out[-3000:])
        assert "FAILED harness::" not in out and "XPASS" not in out, (name, out[-3000:])
    assert found["serial"] == found["xdist"]
    quantizers = folder / "src" / "larq" / "quantizers.py"
    original = quantizers.read_text()
    try:
        # ste_sign's gradient doubled in graphs only: the modes part.
        _plant(quantizers, original,
               "_clipped_gradient(x, dy, clip_value) * (1.0 if tf.executing_eagerly() else 2.0)")
        status, out, ids = _check(folder, env, "doubled")
        assert status == 1 and "FAILED harness::recorded.larq.quantizers.ste_sign._call[" in out, \
            out[-3000:]
        assert ids == found["serial"]
        # Its sign flipped: linear in dy, every mode agreeing, pointing the wrong way.
        _plant(quantizers, original, "-_clipped_gradient(x, dy, clip_value)")
        status, out, _ = _check(folder, env, "flipped")
        assert status == 1, out[-3000:]
        assert "FAILED harness::recorded.larq.quantizers.ste_sign._call[" in out
        assert "following the gradient would move the loss the wrong way" in out, out[-3000:]
        # dy dropped: right where dy = 1, not linear in dy.
        _plant(quantizers, original, "_clipped_gradient(x, tf.ones_like(dy), clip_value)")
        status, out, _ = _check(folder, env, "dropped")
        assert status == 1, out[-3000:]
        assert "grad_fn drops its upstream gradient" in out, out[-3000:]
        # Declared a surrogate in the reviewed file, then flipped: still red.
        (folder / "reviewed.json").write_text(json.dumps({
            "schema": "harness.expectations/1",
            "expected": [{"function": "recorded.larq.quantizers.ste_sign._call", "points": "*",
                          "expect": "numeric:surrogate",
                          "reason": "larq's clipped straight-through estimator"}]}))
        quantizers.write_text(original)
        status, out, _ = _check(folder, env, "declared")
        assert status == 0, out[-3000:]
        # ste_sign's one point where it is a checked surrogate is the declared xfail; DoReFa's
        # three points, replayed with their tf_keras layer, pass with the rest.
        assert "(17 pass, 1 xfail)" in out, out[-3000:]
        _plant(quantizers, original, "-_clipped_gradient(x, dy, clip_value)")
        status, out, _ = _check(folder, env, "declared-flipped")
        assert status == 1, out[-3000:]
        assert "expected numeric surrogate: larq's clipped straight-through estimator; got " \
               "instead" in out, out[-3000:]
        # Made a true derivative (sign's is 0): the declared surrogate is an xpass, which says
        # that an entry written by hand records nothing of what it was accepted under (larq's own
        # gradient tests fail now, rightly: they test the estimator; no replayed point fails).
        _plant(quantizers, original, "tf.zeros_like(dy)")
        status, out, _ = _check(folder, env, "mended")
        assert "FAILED src/larq/quantizers_test.py::TestGradients::test_ste_grad" in out, \
            out[-3000:]
        assert "FAILED harness::" not in out, out[-3000:]
        xpassed = [line for line in out.splitlines()
                   if line.startswith("XPASS harness::recorded.larq.quantizers.ste_sign._call[")]
        assert xpassed and all("it was written by hand), so what changed is not known" in line
                               for line in xpassed), out[-3000:]
    finally:
        quantizers.write_text(original)
