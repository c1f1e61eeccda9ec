"""A worker that a heavy job left large is replaced: what the pool reads of a process's memory."""

import os

import pytest

from harness.process import pool

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"),
                                reason="resident memory is read from /proc, which only Linux has")


def test_resident_memory_grows_with_what_a_process_holds():
    before = pool.resident_mib(os.getpid())
    held = bytearray(300 * 2**20)
    held[::4096] = b"x" * len(held[::4096])  # touched, so resident
    after = pool.resident_mib(os.getpid())
    del held
    assert before > 0 and after - before >= 290, (before, after)


def test_a_process_that_is_not_there_has_no_resident_memory():
    # Above Linux's largest pid_max (2**22): no process has it.
    assert pool.resident_mib(2**22 + 7) is None
