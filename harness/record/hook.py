"""Recording any Python process, started through the environment: `python -m harness record DIR --
CMD`.

The record command makes a new session folder in DIR, puts harness/record/_site first on
PYTHONPATH, the session folder in $HARNESS_RECORD and
the folder holding this harness in $HARNESS_RECORD_PATH (appended to sys.path only where the
process cannot import harness itself);
Python imports the sitecustomize there as it starts, which calls `start()`: the recorder is
installed (TensorFlow is patched the moment it is imported), unittest's TestCase.run (absltest's
too) notes each test's id as the node that made a call and writes this process's
recorded-<pid>.json into the session folder after each test, and again at exit. Every Python process
CMD starts is recorded the same way, each into its own file; replay reads them together.
"""

from __future__ import annotations

import atexit
import os
import sys

__all__ = ["ENV_EAGER", "ENV_FOLDER", "ENV_INCLUDE", "ENV_PATH", "ENV_POINTS", "start"]

ENV_FOLDER = "HARNESS_RECORD"
ENV_POINTS = "HARNESS_RECORD_POINTS"
ENV_EAGER = "HARNESS_RECORD_EAGER"  # "1": run the process's tf.functions eagerly while recording
ENV_INCLUDE = "HARNESS_RECORD_INCLUDE"  # packages whose own custom gradients are recorded too
ENV_PATH = (  # the folder holding the harness package, for a process that lacks it
    "HARNESS_RECORD_PATH"
)


def start() -> None:
    folder = os.environ.get(ENV_FOLDER)
    if not folder:
        return
    from harness.record import recorder, store  # noqa: PLC0415

    session = recorder.Session(folder, store.Limits(points=int(os.environ.get(ENV_POINTS) or 3)),
                               eager=os.environ.get(ENV_EAGER) == "1",
                               include=[p for p in os.environ.get(ENV_INCLUDE, "").split(",") if p])
    session.say_stopped_at_once = False  # said once at exit, not in the middle of the tests' output
    recorder.install(session)
    _note_unittest(session)

    def finish() -> None:
        # The record command sums up every process's file; this one says only what went wrong.
        session.command = " ".join(getattr(sys, "argv", []) or [])
        session.flush(finished=True)
        for name in session.skipped:
            sys.stderr.write(session.skipped_line(name) + "\n")
        if session.stopped:
            sys.stderr.write(session.stopped_line() + "\n")
        if session.write_error:
            sys.stderr.write(session.summary() + "\n")

    atexit.register(finish)


def _note_unittest(session) -> None:
    import unittest  # noqa: PLC0415 - the standard library's, imported by absltest anyway

    run = unittest.TestCase.run

    def noting_run(self, result=None):
        session.node, session.test = self.id(), session.tests
        try:
            return run(self, result)
        finally:
            session.node, session.test = "", -1
            session.tests += 1
            session.flush()

    unittest.TestCase.run = noting_run
