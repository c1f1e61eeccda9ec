"""`harness record`'s exit status is the command's as a shell reports it: a command a signal
ended exits 128 + the signal, said in one line. Real processes, killed by real signals; the
command imports no TensorFlow, so each takes a second or two."""

import os
import signal
import sys

import pytest

from tests import helpers

pytestmark = pytest.mark.subprocess


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGSEGV],
                         ids=["SIGTERM", "SIGKILL", "SIGSEGV"])
def test_a_command_killed_by_a_signal_exits_as_a_shell_reports_it(tmp_path, sig):
    # Before: 241, 247 and 245 (Python's negative returncode taken modulo 256), nothing said.
    env = dict(os.environ, PYTHONPATH=helpers.REPO)
    proc = helpers.harness("record", str(tmp_path / "rec"), "--", sys.executable, "-c",
                           f"import os; os.kill(os.getpid(), {int(sig)})", env=env, timeout=120)
    assert proc.returncode == 128 + sig, proc.stderr
    assert (f"harness record: the command was killed by {sig.name} (exit status {128 + sig}, "
            "as a shell reports it)") in proc.stderr.splitlines(), proc.stderr


def test_a_command_s_own_exit_status_is_kept(tmp_path):
    env = dict(os.environ, PYTHONPATH=helpers.REPO)
    proc = helpers.harness("record", str(tmp_path / "rec"), "--", sys.executable, "-c",
                           "raise SystemExit(3)", env=env, timeout=120)
    assert proc.returncode == 3 and "killed" not in proc.stderr, proc.stderr
