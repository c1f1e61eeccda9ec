"""Replay refuses a recording others can change, before it imports anything: a recording holds
code (copies of functions, the modules it names), and replaying one, `--list` included, imports
and runs it. Records a script that calls one custom gradient (TensorFlow starts: slow)."""

import os
import sys

import pytest

from tests import helpers

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")]

PLANTED = """
import pathlib

import tensorflow as tf

pathlib.Path(__file__).with_name("imported").write_text("the module ran")


@tf.custom_gradient
def double(x):
    def grad(dy):
        return 2.0 * dy
    return 2.0 * x, grad
"""


def test_a_group_writable_recording_is_refused_before_its_module_is_imported(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "plantedlib.py").write_text(PLANTED)
    (project / "main.py").write_text(
        "import tensorflow as tf\nimport plantedlib\n\nx = tf.constant(1.0)\n"
        "with tf.GradientTape() as tape:\n    tape.watch(x)\n    y = plantedlib.double(x)\n"
        "tape.gradient(y, x)\n")
    env = dict(os.environ, PYTHONPATH=helpers.REPO, TF_CPP_MIN_LOG_LEVEL="2")
    recorded = helpers.harness("record", str(tmp_path / "rec"), "--", sys.executable, "main.py",
                               cwd=str(project), env=env, timeout=300)
    assert recorded.returncode == 0, recorded.stderr[-2000:]
    [session] = (tmp_path / "rec").iterdir()
    marker = project / "imported"
    marker.unlink()
    os.chmod(session, 0o775)  # anyone in the group could now put code in it
    refused = helpers.harness("replay", str(tmp_path / "rec"), "--list", cwd=str(tmp_path),
                              env=env, timeout=300)
    assert refused.returncode != 0
    assert (f"{session} can be changed by its group (mode 775): a recording holds code that "
            "replaying it imports and runs, so it is refused") in refused.stderr, refused.stderr
    assert "--trust_recording" in refused.stderr
    assert not marker.exists()  # nothing of the recording was imported
    trusted = helpers.harness("replay", str(tmp_path / "rec"), "--list", "--trust_recording",
                              cwd=str(tmp_path), env=env, timeout=300)
    assert trusted.returncode == 0, trusted.stderr[-2000:]
    assert "recorded.plantedlib.double" in trusted.stdout


TRAIN = """
import argparse
import pathlib

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, required=True)
args = parser.parse_args()
with pathlib.Path(__file__).with_name("ran.log").open("a") as log:
    log.write(f"top level ran with --steps {args.steps}\\n")


@tf.custom_gradient
def scaled(x):
    def grad(dy):
        return 3.0 * args.steps * dy
    return 3.0 * args.steps * x, grad


if __name__ == "__main__":
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x)
    tape.gradient(y, x)
"""


def test_a_script_s_function_is_replayed_with_its_top_level_run_under_the_argv_it_was_recorded_with(
    tmp_path,
):
    # Before: the replay worker ran the script's top level with its own argv (replay ...
    # --mode=all): argparse exited 2, reported as "while importing TensorFlow and the cases", and
    # the gradient got no verdict.
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN)
    env = dict(os.environ, PYTHONPATH=helpers.REPO, TF_CPP_MIN_LOG_LEVEL="2")
    proc = helpers.harness("record", str(tmp_path / "rec"), "--check", "--", sys.executable,
                           "train.py", "--steps", "1", cwd=str(project), env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "PASS     recorded.__main__.scaled[x=2.0]" in proc.stdout, proc.stdout[-3000:]
    log = (project / "ran.log").read_text().splitlines()
    # Once when recorded, again in the replay (each worker that defined it), always with --steps 1.
    assert len(log) >= 2 and set(log) == {"top level ran with --steps 1"}, log
