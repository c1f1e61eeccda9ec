"""A real suite nobody here wrote: larq's own quantizer tests, recorded and replayed.

larq ships its pytest tests inside its wheel (larq/quantizers_test.py). Recording them and
replaying must show every custom gradient larq defines (its straight-through estimators and
DoReFa's), each failing the numeric oracle only as a surrogate gradient, with the sentence that
says how to declare one; declared with replay's --expect, none fails. Skipped where larq is not
installed (it is no requirement of the harness): run it in an environment with larq 0.14.0, e.g.
  TF_USE_LEGACY_KERAS=1 python -m pytest -m slow tests/test_record_larq.py
"""

import json
import os
import subprocess
import sys

import pytest

from tests import helpers
from tests.helpers import REPO

pytestmark = pytest.mark.slow
pytest.importorskip("larq", reason="larq is not installed; its suite is what this records")

LARQ_FUNCTIONS = {f"recorded.larq.quantizers.{name}" for name in (
    "ste_sign._call", "approx_sign", "swish_sign._call", "ste_tern._call", "ste_heaviside._call",
    "DoReFa.call._k_bit_with_identity_grad")}
SURROGATE = (
    "is a surrogate, not a derivative (a straight-through estimator's or a quantizer's). If that is"
    " intended"
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("larq")
    env = dict(os.environ, PYTHONPATH=REPO, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2")
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
    assert {r["verdict"] for r in results} <= {"pass", "fail"}
    for r in results:
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
    assert {r["verdict"] for r in results} <= {"pass", "xfail", "xpass"}
