"""The pytest plugin: `python -m pytest --harness-record=DIR` records the custom gradients the tests run.

Registered through the `pytest11` entry point, so installing harness makes pytest load it; without
--harness-record it only adds its two options: it imports nothing more and hooks nothing else.
With the flag it installs the recorder while pytest loads the first conftest files, before any
test module is imported, keeps the running test's node id for each call, and at the end writes
DIR and says in one line what was kept and what was dropped.
"""

from __future__ import annotations

import os
import sys

__all__ = ["pytest_addoption", "pytest_load_initial_conftests"]

_DEFAULT_POINTS = 3


def pytest_addoption(parser) -> None:
    group = parser.getgroup("harness", "harness: record the custom gradients the tests run")
    group.addoption("--harness-record", dest="harness_record", metavar="DIR", default=None,
                    help="Record every tf.custom_gradient the tests call into DIR; replay them with "
                         "python -m harness replay DIR.")
    group.addoption("--harness-record-points", dest="harness_record_points", metavar="K", type=int,
                    default=_DEFAULT_POINTS,
                    help=f"With --harness-record: the distinct points kept per function (default {_DEFAULT_POINTS}).")


class _Recording:
    """The hooks that run only while recording."""

    def __init__(self, session):
        self.session = session

    def pytest_runtest_protocol(self, item, nextitem):
        node = item.nodeid
        if node.startswith("::"):  # a test module outside the rootdir (--pyargs): name it by its module
            module = getattr(getattr(item, "module", None), "__name__", None)
            node = f"{module or item.path}{node}"
        self.session.node = node
        return None  # pytest's own protocol runs the test

    def pytest_runtest_logfinish(self, nodeid, location):
        self.session.node = ""

    def pytest_terminal_summary(self, terminalreporter):
        terminalreporter.write_line(self.session.summary())
        if self.session.stopped:
            terminalreporter.write_line(self.session.stopped_line())

    def pytest_unconfigure(self, config):
        session = self.session
        if not any(f.calls for f in session.functions.values()):
            return
        try:
            session.write()
        except Exception as e:  # noqa: BLE001 - the tests' outcome stands whatever happens here
            sys.stderr.write(f"harness record: warning: could not write {session.folder} "
                             f"({type(e).__name__}: {e}); the tests' outcome is unchanged\n")


def pytest_load_initial_conftests(early_config, parser, args) -> None:
    """Installs the recorder before any conftest or test module runs, when --harness-record is given."""
    options = early_config.known_args_namespace
    folder = getattr(options, "harness_record", None)
    if not folder:
        return
    try:
        from harness.record import recorder, store  # noqa: PLC0415

        points = getattr(options, "harness_record_points", _DEFAULT_POINTS)
        if points < 1:
            raise ValueError(f"--harness-record-points={points}: keep at least 1 point per function")
        os.makedirs(folder, exist_ok=True)
        store.clear(folder)
        session = recorder.Session(os.path.abspath(folder), store.Limits(points=points),
                                   command=" ".join(["pytest"] + list(args)))
        recorder.install(session)
    except Exception as e:  # noqa: BLE001 - a recorder that cannot start leaves the tests alone
        early_config.pluginmanager.register(_NotRecording(f"{type(e).__name__}: {e}"), "harness-record-session")
        return
    session.say_stopped_at_once = False
    early_config.pluginmanager.register(_Recording(session), "harness-record-session")


class _NotRecording:
    """Says, once, at the end where pytest's capturing cannot hide it, why nothing was recorded."""

    def __init__(self, why: str):
        self.why = why

    def pytest_terminal_summary(self, terminalreporter):
        terminalreporter.write_line(f"harness record: warning: not recording ({self.why}); the tests ran as "
                                    "without --harness-record")
