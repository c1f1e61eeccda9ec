"""The pytest plugin: `python -m pytest --harness-record=DIR` records the custom gradients the tests
run.

Registered through the `pytest11` entry point, so installing harness makes pytest load it; without
--harness-record it only adds its two options: it imports nothing more and hooks nothing else.
With the flag it installs the recorder while pytest loads the first conftest files, before any
test module is imported, keeps the running test's node id for each call, writes its file in a
new session folder inside DIR after each test, and at the end says in one line what was kept,
dropped or lost. Under pytest-xdist the controller makes the session folder, each worker writes
its own file there, and the controller's line sums up every worker's file.
"""

from __future__ import annotations

import os

__all__ = ["pytest_addoption", "pytest_load_initial_conftests"]

_DEFAULT_POINTS = 3


def pytest_addoption(parser) -> None:
    group = parser.getgroup("harness", "harness: record the custom gradients the tests run")
    group.addoption("--harness-record", dest="harness_record", metavar="DIR", default=None,
                    help="Record every tf.custom_gradient the tests call into DIR; replay them "
                         "with python -m harness replay DIR.")
    group.addoption("--harness-check", dest="harness_check", metavar="DIR", nargs="?", const="",
                    default=None,
                    help="Record as --harness-record does (into DIR; default .harness/check under "
                         "the rootdir), and once the tests have ended, replay every recorded "
                         "function: each point is reported as a test of its own, and pytest "
                         "fails when one fails.")
    group.addoption("--harness-check-mode", dest="harness_check_mode", metavar="MODES",
                    default="all",
                    help="With --harness-check: the modes to replay in (python -m harness "
                         "--mode; default all).")
    group.addoption("--harness-check-jobs", dest="harness_check_jobs", metavar="N", type=int,
                    default=1, help="With --harness-check: the replay's worker processes.")
    group.addoption("--harness-check-timeout", dest="harness_check_timeout", metavar="S",
                    type=float, default=None,
                    help="With --harness-check: each point's timeout in seconds (default the "
                         "harness's).")
    group.addoption("--harness-check-json", dest="harness_check_json", metavar="PATH",
                    default=None,
                    help="With --harness-check: keep the replay's JSON report at PATH (as "
                         "python -m harness --json_out writes it), to merge across TensorFlow "
                         "versions with python -m harness merge.")
    group.addoption("--harness-expectations", dest="harness_expectations", metavar="FILE",
                    default=None,
                    help="With --harness-check: the reviewed file of known deviations (default: "
                         "harness-expectations.json at the rootdir, or where the rootdir's "
                         "pyproject.toml's [tool.harness] expectations says; never one above "
                         "it).")
    group.addoption("--harness-accept", dest="harness_accept", action="store_true", default=False,
                    help="With --harness-check: write the expectations file from this run: an "
                         "entry for each new deviation, none for a function that now passes, "
                         "the reasons written by hand kept.")
    group.addoption("--harness-strict", dest="harness_strict", action="store_true", default=False,
                    help="With --harness-check: an entry that no longer deviates (xpass) fails.")
    group.addoption("--harness-record-points", dest="harness_record_points", metavar="K", type=int,
                    default=_DEFAULT_POINTS,
                    help="With --harness-record: the distinct points kept per function (default "
                         f"{_DEFAULT_POINTS}).")
    group.addoption("--harness-record-include", dest="harness_record_include", metavar="PKG",
                    action="append", default=[],
                    help="With --harness-record: also record the custom gradients that these "
                         "packages define themselves (keras, tf_keras, tensorflow: left out by "
                         "default as the framework's own); repeat it or give a comma-separated "
                         "list.")
    group.addoption("--harness-record-eager", dest="harness_record_eager", action="store_true",
                    default=False,
                    help="With --harness-record: run the tests' tf.functions (and model.fit's "
                         "train function) eagerly, so that calls made inside them are recorded "
                         "with their values instead of being replayed at drawn values. The tests "
                         "then run eagerly, and slower.")


class _Recording:
    """The hooks that run only while recording."""

    def __init__(self, session):
        self.session = session
        self.places: dict = {}  # node id -> its place in the collection

    def pytest_runtest_protocol(self, item, nextitem):
        node = item.nodeid
        # The test's place in the collection, the same in every xdist worker (each collects the
        # whole suite), ranks the points it records (harness.record.merging).
        if not self.places:
            self.places = {it.nodeid: i for i, it in enumerate(item.session.items)}
        self.session.test = self.places.get(node, len(self.places))
        # a test module outside the rootdir (--pyargs): name it by its module
        if node.startswith("::"):
            module = getattr(getattr(item, "module", None), "__name__", None)
            node = f"{module or item.path}{node}"
        self.session.node = node
        return None  # pytest's own protocol runs the test

    def pytest_runtest_logfinish(self, nodeid, location):
        if not self.session.node:  # xdist's controller hears of its workers' tests: not run here
            return
        self.session.node, self.session.test = "", -1
        self.session.tests += 1
        self.session.flush()  # a kill during the next test keeps this one's points

    def pytest_sessionfinish(self, session, exitstatus):
        # Before an xdist worker reports itself finished, so the controller reads a whole file.
        self.session.flush(finished=True)

    def pytest_terminal_summary(self, terminalreporter):
        session = self.session
        for name in session.skipped:
            terminalreporter.write_line(session.skipped_line(name))
        if session.stopped:
            terminalreporter.write_line(session.stopped_line())
        if _is_controller(terminalreporter.config):
            # loaded already: the session is its
            from harness.record import recorder  # noqa: PLC0415

            terminalreporter.write_line(recorder.folder_summary(session.folder, session))
        else:
            terminalreporter.write_line(session.summary())


def _is_controller(config) -> bool:
    """Whether this is pytest-xdist's controller, whose workers ran the tests. A worker is told by
    the `workerinput` xdist gives its config, not by PYTEST_XDIST_WORKER: a pytest started from
    inside another run's xdist worker inherits that variable, controller or not."""
    return bool(getattr(config.option, "numprocesses", None)
                or getattr(config.option, "dist", "no") != "no") \
        and not hasattr(config, "workerinput")


def pytest_load_initial_conftests(early_config, parser, args) -> None:
    """Installs the recorder before any conftest or test module runs, when --harness-record is
    given."""
    options = early_config.known_args_namespace
    folder = getattr(options, "harness_record", None)
    check = getattr(options, "harness_check", None)
    if check is not None and not folder:
        from harness.record import check as checking  # noqa: PLC0415 - imports no TensorFlow

        folder = check or str(early_config.rootpath.joinpath(*checking.DEFAULT_FOLDER))
    if not folder:
        return
    import pytest  # noqa: PLC0415 - pytest runs this

    flag = "--harness-check" if check is not None and not getattr(options, "harness_record",
                                                                   None) else "--harness-record"
    points = getattr(options, "harness_record_points", _DEFAULT_POINTS)
    if points < 1:
        raise pytest.UsageError(f"--harness-record-points={points}: keep at least 1 point per "
                                "function")
    checking_now = None
    if check is not None:  # read before any test runs: a malformed file stops pytest now
        from harness.record import check as checking  # noqa: PLC0415

        checking_now = checking.Checking(
            None, getattr(options, "harness_check_mode", "all"),
            getattr(options, "harness_check_jobs", 1),
            getattr(options, "harness_check_timeout", None),
            checking.reviewed_file(early_config.rootpath, options),
            json_out=checking.json_out(getattr(options, "harness_check_json", None)),
            rootdir=str(early_config.rootpath))
    session = _start(early_config, options, folder, flag, points, args)
    session.say_stopped_at_once = False
    early_config.pluginmanager.register(_Recording(session), "harness-record-session")
    if checking_now is not None:
        checking_now.recording = session
        early_config.pluginmanager.register(checking_now, "harness-check-session")


def _start(early_config, options, folder: str, flag: str, points: int, args):
    """The recording session, installed; a recorder that cannot start is a usage error before
    any test runs: a check that would check nothing must not pass.

    Raises:
      pytest.UsageError: the folder cannot be made or written, or the recorder cannot start.
    """
    import pytest  # noqa: PLC0415

    from harness.record import recorder, store  # noqa: PLC0415

    try:
        # One session folder for the whole run: the first process (pytest, or xdist's controller)
        # makes it, and the workers it starts find it in their environment.
        session_folder = os.environ.get(store.ENV_SESSION)
        if not session_folder or os.path.dirname(session_folder) != os.path.abspath(folder):
            session_folder = store.new_session(folder)
            os.environ[store.ENV_SESSION] = session_folder
    except (OSError, store.RecordError) as e:
        raise pytest.UsageError(f"{flag}={folder}: cannot make the recording's folder there "
                                f"({type(e).__name__}: {e}); name a folder you can write") from None
    try:
        session = recorder.Session(session_folder, store.Limits(points=points),
                                   command=" ".join(["pytest"] + list(args)),
                                   eager=bool(getattr(options, "harness_record_eager", False)),
                                   include=[p for given in
                                            getattr(options, "harness_record_include", None) or ()
                                            for p in given.split(",") if p])
        recorder.install(session)
    except Exception as e:  # noqa: BLE001 - said, and pytest stops before any test
        raise pytest.UsageError(f"{flag}: the recorder cannot start ({type(e).__name__}: {e}); "
                                "this is a fault of the harness, please report it") from None
    return session
