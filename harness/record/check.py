"""`pytest --harness-check`: the recording replayed once the tests have ended, its verdicts in
pytest's own reports.

The plugin (harness.record.plugin) records as `--harness-record` does; this part runs in the
process that owns the session (pytest itself, or pytest-xdist's controller once its workers have
ended), before pytest writes its reports: it replays the session's recording with `python -m
harness replay` in a process of its own (which starts the workers), and hands pytest one report
per replayed point, as if a test had run: named `harness::<case>[<point>]`, passed, failed (the
verdicts that fail a run: fail, flaky, error, crash, timeout), skipped, or an xfail/xpass as
declared. So each point is counted in pytest's
last line, a failing one has its line in the short test summary (its explanation's first line
and the test that made the call) and its whole explanation among the failures, `--junitxml`
holds a testcase for each, and pytest exits non-zero when one fails, whatever the tests did. The
tests' own outcomes are not touched.

A check that did not check never passes: a replay that was stopped (a signal, Ctrl-C) or
replayed fewer points than were kept fails the session with a line saying how many did not run
and why; tests that were interrupted or stopped by -x start no replay, and say so. Ctrl-C during
the replay stops it and keeps what ran: pytest's summary and its JUnit file are written as after
any interrupted run. An output that cannot be written (the JSON report, the reviewed file under
--harness-accept) is a usage error before any test runs. A suite that calls no custom gradient of
its own keeps its exit status, with a line saying that nothing was checked. Importing this
imports no TensorFlow.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import pytest

from harness.printable import printable
from harness.records import VERDICTS

__all__ = ["Checking", "DEFAULT_FOLDER", "reviewed_file"]

DEFAULT_FOLDER = (".harness", "check")  # under the rootdir, where --harness-check names none
# The verdicts that fail a run, from the one table of verdicts (fail, flaky, error, crash,
# timeout; an xpass too where --strict_xpass made it a fail).
_FAILING = tuple(v.value for v, style in VERDICTS.items() if style.fails)


def reviewed_file(rootdir: Path, options) -> tuple:
    """(the expectations file or None, accept, strict) from pytest's options, the file read once
    now so that a malformed one stops pytest before any test runs.

    Raises:
      pytest.UsageError: the file is malformed; the message names its line.
    """
    from harness.record import expectations  # noqa: PLC0415

    named = getattr(options, "harness_expectations", None)
    path = Path(named) if named else expectations.find(Path(rootdir))
    accept = bool(getattr(options, "harness_accept", False))
    strict = bool(getattr(options, "harness_strict", False))
    if path is None and accept:
        path = Path(rootdir) / expectations.FILE_NAME
    if accept:
        problem = _unwritable(path)
        if problem:
            raise pytest.UsageError(f"--harness-accept cannot write {path}: {problem}; make it "
                                    "writable, or name another file with --harness-expectations")
    if path is not None and path.is_file():
        try:
            expectations.load(path)
        except expectations.ExpectationsError as e:
            raise pytest.UsageError(str(e)) from None
    elif path is not None and named and not accept:
        raise pytest.UsageError(f"--harness-expectations={named}: no such file; give an existing "
                                "file, or write one with --harness-accept")
    return (str(path.resolve()) if path else None), accept, strict


def _unwritable(path: Path) -> str:
    """Why a file cannot be written at `path` (made, or replaced whole), or "" if it can: tried,
    not judged from mode bits, which a superuser's writes ignore."""
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        return "it is a folder"
    if folder.exists() and not folder.is_dir():
        return f"its folder {folder} is not a folder"
    if not folder.is_dir():
        return f"its folder {folder} does not exist"
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        return f"its folder {folder} is not writable ({e.strerror or e})"
    if path.exists() and not os.access(path, os.W_OK):
        return "it is not writable"
    return ""


def json_out(option: Optional[str]) -> Optional[str]:
    """--harness-check-json's path, checked before any test runs: the tests' own reports must
    never be lost to a report the check cannot write after them.

    Raises:
      pytest.UsageError: it cannot be written.
    """
    if option is None:
        return None
    problem = _unwritable(Path(option)) if option else "it is empty"
    if problem:
        raise pytest.UsageError(f"--harness-check-json={option}: cannot write the report there: "
                                f"{problem}; name a file in a folder that exists and is "
                                "writable")
    return option


class _Crash:
    def __init__(self, message: str):
        self.message = message


class _Explanation:
    """A replayed point's explanation as pytest's reports take a failure: `reprcrash.message` is
    the line of the short summary and of JUnit's message, `toterminal` the whole text."""

    def __init__(self, text: str, first: str):
        self.text = text
        self.reprcrash = _Crash(first)

    def toterminal(self, tw) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text


def _caller(result: dict) -> str:
    for detail in result.get("details") or ():
        if detail.startswith("recorded: ") and " made by " in detail:
            return detail.split(" made by ", 1)[1].split(", its closure", 1)[0]
    return ""


def node_id(result: dict) -> str:
    """The node id of a replayed point, escaped as every text the harness prints is (a label
    holding a newline or an escape sequence is one line, and repaints nothing)."""
    return f"harness::{printable(result['case'])}[{printable(result['point'])}]"


# pytest's JUnit writer keeps at most this many characters of a failure's message attribute
# (_pytest.junitxml.MESSAGE_ATTR_BUDGET); the full explanation is the element's text.
_MESSAGE_BUDGET = 500


def _first_line(head: str, line: str, caller: str) -> str:
    """The explanation's first line with the test that made the call after it, the line cut at a
    word (and "…" said) where "HEAD LINE CALLER" would be longer than a JUnit message keeps, so
    that the caller is never what is cut."""
    if len(head) + len(caller) > _MESSAGE_BUDGET // 2:  # a caller of a very long parametrised id
        caller = caller[:_MESSAGE_BUDGET // 2 - len(head) - 2] + "…)"
    room = _MESSAGE_BUDGET - len(head) - len(caller)
    if len(line) > room:
        line = line[:room - 1].rsplit(" ", 1)[0] + "…"
    return line + caller


def _report(result: dict, session_folder: str):
    """pytest's report of one replayed point."""
    from _pytest.reports import TestReport  # noqa: PLC0415 - pytest runs this

    nodeid = node_id(result)
    verdict = result["verdict"]
    reason = result.get("reason") or verdict
    caller = _caller(result)
    first = _first_line(f"{verdict}: ", printable(reason.splitlines()[0]),
                        printable(f" (called by {caller})") if caller else "")
    # The explanation keeps its lines; a detail and the rerun command are one line each.
    text = "\n".join([printable(reason, newlines=True)]
                     + [f"- {printable(d)}" for d in result.get("details") or () if d != reason]
                     + ([f"rerun: {printable(result['rerun'])}"] if result.get("rerun") else []))
    # No domain: pytest's -v line is then the node id itself, as the summary and JUnit show it.
    location = ("harness", None, "")
    if verdict in _FAILING:
        outcome, longrepr = "failed", _Explanation(text, f"{verdict}: {first}")
    elif verdict in ("skip", "xfail"):
        outcome, longrepr = "skipped", (session_folder, 0, f"{verdict}: {first}")
    else:
        outcome, longrepr = "passed", None
    report = TestReport(nodeid=nodeid, location=location, keywords={nodeid: 1}, outcome=outcome,
                        longrepr=longrepr, when="call", sections=[],
                        duration=float(result.get("seconds") or 0.0), user_properties=[])
    if verdict in ("xfail", "xpass"):
        report.wasxfail = first
    return report


_GRACE = 60.0  # seconds a replay told to stop (Ctrl-C) has to write what it replayed
_NOT_RUN = re.compile(r"harness: interrupted; (\d+) case points? did not run")
_DECLARE = re.compile(r"declare it: Expectation\(.*?\) in the case, or --expect '([^']*)' with "
                      r"check or replay")


def _stopped(session) -> str:
    """Why the tests stopped before their end ("" if they ran to it): no replay then."""
    if session.exitstatus == pytest.ExitCode.INTERRUPTED:
        return "the tests were interrupted"
    if session.shouldstop:
        return f"the tests were stopped ({session.shouldstop})"
    if session.shouldfail:
        return f"the tests were stopped ({session.shouldfail})"
    return ""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class Checking:
    """The hooks that replay the recording at the end of the session and report its points."""

    def __init__(self, recording, modes: str, jobs: int, timeout: Optional[float],
                 reviewed: tuple = (None, False, False), json_out: Optional[str] = None,
                 rootdir: str = ""):
        self.recording = recording  # harness.record.recorder.Session
        self.modes, self.jobs, self.timeout = modes, jobs, timeout
        self.json_out = json_out  # where the replay's JSON report is kept (None: not kept)
        self.rootdir = rootdir
        # The expectations file (or None), whether to write it from the run, whether xpass fails.
        self.reviewed, self.accept, self.strict = reviewed
        self.changes: list = []
        self.stale: list = []
        self.results: list = []
        self.tf_version = ""  # the replay's TensorFlow, from its report
        self.line = ""
        self.problem = ""  # why the check did not check all it kept: the session fails
        self.notes: list = []  # lines said after the summary line
        self.interrupted = False  # Ctrl-C during the replay
        self.kept = 0  # the points the recording keeps, which the replay should replay
        self.wrote = False  # whether --harness-accept wrote the reviewed file
        self.file_line = self._file_line()  # as the run began, before accept writes the file

    def _file_line(self) -> str:
        """The first line of the check: the reviewed file it reads, or that there is none."""
        from harness.record import expectations  # noqa: PLC0415

        if self.reviewed and Path(self.reviewed).is_file():
            return (f"harness check: reviewed file {self.reviewed}"
                    + (" (--harness-accept rewrites it from this run)" if self.accept else ""))
        if self.accept:
            return f"harness check: no reviewed file yet; --harness-accept writes {self.reviewed}"
        return (f"harness check: no reviewed file ({expectations.FILE_NAME} is not in the rootdir "
                f"{self.rootdir}; --harness-accept writes one there)")

    def _replay(self) -> None:
        if self.json_out:
            kept = Path(self.json_out).resolve()
            kept.unlink(missing_ok=True)  # an earlier run's report must not pass for this one's
            self._replay_into(kept)
            return
        with tempfile.TemporaryDirectory(prefix="harness-check-") as scratch:
            self._replay_into(Path(scratch) / "replay.json")

    def _command(self, out: Path) -> list:
        command = [sys.executable, "-m", "harness", "replay", self.recording.folder,
                   f"--mode={self.modes}", f"--jobs={self.jobs}", f"--json_out={out}"]
        if self.timeout:
            command.append(f"--timeout={self.timeout:g}")
        # Under accept every deviation is seen as it is, the file written from what was found.
        reviewed = self.reviewed if self.reviewed and not self.accept else ""
        command.append(f"--expectations={reviewed}")
        if self.strict:
            command.append("--strict_xpass")
        return command

    def _wait(self, proc: subprocess.Popen) -> int:
        """The replay's exit status. Ctrl-C stops it: it is told to stop (SIGINT, as a terminal
        tells it), given time to write what it replayed, and killed if it does not; a second
        Ctrl-C kills it at once."""
        try:
            return proc.wait()
        except KeyboardInterrupt:
            self.interrupted = True
        try:
            try:
                return proc.wait(timeout=2.0)  # a terminal's Ctrl-C reached it too
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)
            return proc.wait(timeout=_GRACE)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            proc.kill()
            return proc.wait()

    def _replay_into(self, out: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_RECORD")}
        started = time.monotonic()
        with tempfile.TemporaryFile("w+") as said:
            proc = subprocess.Popen(self._command(out), stdout=said, stderr=subprocess.STDOUT,
                                    text=True, env=env)
            status = self._wait(proc)
            said.seek(0)
            lines = said.read().strip().splitlines()
        took = time.monotonic() - started
        if out.is_file():
            report = json.loads(out.read_text(encoding="utf-8"))
            self.results = report["results"]
            self._review(report.get("environment", {}).get("tensorflow", "?"))
        self.problem = self._incomplete(status, lines)
        counts: dict = {}
        for r in self.results:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        said_counts = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        self.line = (f"harness check: {len(self.results)} point"
                     f"{'s' if len(self.results) != 1 else ''} of the recorded custom gradients "
                     f"replayed in {took:.1f} s ({said_counts or 'none'})")

    def _incomplete(self, status: int, lines: list) -> str:
        """Why the replay did not replay every point it kept ("" if it did), from its status and
        its last lines: a signal, an interruption, an error before any point ran."""
        replayed = len(self.results)
        not_run = next((int(m.group(1)) for m in map(_NOT_RUN.search, reversed(lines)) if m),
                       None)
        if status < 0 or status in (128 + signal.SIGKILL, 128 + signal.SIGTERM):
            name = _signal_name(-status if status < 0 else status - 128)
            missing = max(self.kept - replayed, 0)
            return (f"the replay was killed by {name}: {replayed} of the {self.kept} recorded "
                    f"points replayed, {missing} did not run")
        if status == 130 or not_run is not None:
            how = "by Ctrl-C" if self.interrupted else "(SIGINT or SIGTERM)"
            # The replay's own count, or what the recording kept, whichever is more: a replay
            # stopped before it chose its cases counts none of them.
            missing = max(not_run or 0, self.kept - replayed, 0)
            return (f"the replay was stopped {how}: {replayed} of the "
                    f"{replayed + missing} points replayed, {missing} did not run")
        if status not in (0, 1) or not self.results:
            last = lines[-1] if lines else "it said nothing"
            return f"the replay ended with status {status} before judging every point: {last}"
        return ""

    def _review(self, tf_version: str) -> None:
        """Stale entries, the cause of each xpass, and under accept the file written from the
        run."""
        from harness.record import expectations, replay  # noqa: PLC0415 - no TensorFlow

        self.tf_version = tf_version
        if self.reviewed is None:
            return
        entries = (expectations.load(Path(self.reviewed)) if Path(self.reviewed).is_file()
                   else [])
        self.stale = expectations.stale(entries, sorted({r["case"] for r in self.results}))
        codes = replay.case_codes(self.recording.folder)
        if not self.accept:
            for r in self.results:  # an xpass, or the fail --harness-strict makes of one
                if r["verdict"] == "xpass" or (r["verdict"] == "fail" and (
                        r.get("reason") or "").startswith("declared but did not happen")):
                    self._xpass_cause(r, entries, codes.get(r["case"], ""), tf_version)
            return
        self.changes, undeclarable = expectations.accept_into(Path(self.reviewed), self.results,
                                                              tf_version, codes=codes)
        self.wrote = True
        # What was accepted is expected from now on: the points are reported as such.
        for r in self.results:
            if r["verdict"] == "fail" and f"{r['case']}[{r['point']}]" not in undeclarable:
                r["verdict"] = "xfail"

    def _xpass_cause(self, result: dict, entries: list, code: str, tf_version: str) -> None:
        """An xpass's first line says what changed since its entry was accepted: the function's
        code, TensorFlow, or nothing (the entry is broader than what deviates)."""
        from harness.record import expectations  # noqa: PLC0415

        covering = [e for e in entries if e.covers(result["case"], result["point"])]
        if not covering:
            return
        entry = covering[0]
        numeric = (result.get("oracles") or {}).get("numeric") or {}
        cause = expectations.xpass_cause(entry, code, tf_version,
                                         surrogate=bool(numeric.get("surrogate")))
        result["reason"] = (f"the reviewed entry {entry.function} ({entry.expect}) no longer "
                            f"deviates here: {cause}\n{result.get('reason') or ''}").rstrip()

    @pytest.hookimpl(tryfirst=True)  # before --junitxml writes its file and the summary is shown
    def pytest_sessionfinish(self, session, exitstatus):
        if hasattr(session.config, "workerinput"):  # an xdist worker: the controller replays
            return
        try:
            self._finish(session)
        except KeyboardInterrupt:  # while reporting: what was reported stays
            self.interrupted = True
            self.problem = self.problem or "interrupted by Ctrl-C while reporting the replay"
        except Exception as e:  # noqa: BLE001 - the tests' own reports must still be written
            self.problem = (f"the check failed ({type(e).__name__}: {e}); this is a fault of the "
                            "harness, please report it")
        if self.interrupted:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        elif (self.problem or any(r["verdict"] in _FAILING for r in self.results)) \
                and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _finish(self, session) -> None:
        from harness.record import merging, recorder, store  # noqa: PLC0415

        self.recording.flush(finished=True)
        stopped = _stopped(session)
        if stopped:  # the session fails already; its summary comes now, not after a replay
            self.problem = f"nothing replayed: {stopped}; run the tests to their end to check"
            return
        try:
            data = store.read(self.recording.folder)
        except store.RecordError:
            data = {"sessions": [], "functions": []}
        self.kept = sum(len(r["points"]) for r in merging.merged(data)) if data["sessions"] else 0
        if not self.kept:
            left_out = recorder.left_out_words(
                {k: v for s in data["sessions"] for k, v in (s.get("left_out") or {}).items()},
                "--harness-record-include")
            self.line = ("harness check: nothing checked: the tests called no custom gradient of "
                         "their own" + (f"; {left_out}" if left_out else ""))
            return
        self._replay()
        self._log(session)

    def _log(self, session) -> None:
        """Hands pytest a report per replayed point; under -x or --maxfail, stops at the failure
        that stops the session, as pytest does, and says how many were not reported."""
        hook = session.config.hook
        # Counted as collected, so that pytest's progress (its [NN%]) goes on to 100% over them.
        session.testscollected += len(self.results)
        stopped_before = session.shouldfail
        for index, result in enumerate(self.results):
            if result["verdict"] in _FAILING:
                result["reason"] = self._accept_words(result)
            report = _report(result, self.recording.folder)
            hook.pytest_runtest_logstart(nodeid=report.nodeid, location=report.location)
            hook.pytest_runtest_logreport(report=report)
            hook.pytest_runtest_logfinish(nodeid=report.nodeid, location=report.location)
            if session.shouldfail and not stopped_before:
                left = len(self.results) - index - 1
                session.testscollected -= left
                if left:
                    self.notes.append(f"harness check: {session.shouldfail}: {left} more replayed "
                                      f"point{'s' if left != 1 else ''} not reported")
                return

    def _accept_words(self, result: dict) -> str:
        """A failure's words in the pytest flow: it is accepted with --harness-accept, into the
        reviewed file, not declared with a case's Expectation or replay's --expect."""
        from harness.record import expectations  # noqa: PLC0415

        target = self.reviewed or str(Path(self.rootdir) / expectations.FILE_NAME)
        reason = result.get("reason") or ""
        how = f"accept it: --harness-accept writes it into {target}"
        reason = _DECLARE.sub(lambda m: f"{how} (as '{m.group(1)}')", reason)
        if result.get("undeclared") and "--harness-accept" not in reason:
            reason += (f"\nto accept it as it is: rerun with --harness-accept, which writes "
                       f"{', '.join(result['undeclared'])} into {target}")
        return reason

    def pytest_terminal_summary(self, terminalreporter):
        from harness.matrix import pins  # noqa: PLC0415 - the standard library only

        terminalreporter.write_line(self.file_line)
        if self.line:
            terminalreporter.write_line(self.line)
        # The replay's own line, which its captured output would hide: said once, here.
        untested = (pins.untested(self.tf_version) if self.results
                    and self.tf_version not in ("", "?") else "")
        if untested:
            terminalreporter.write_line(f"harness check: {untested}")
        if self.problem:
            terminalreporter.write_line(f"harness check: error: not every recorded point was "
                                        f"checked: {self.problem}")
        for line in self.notes:
            terminalreporter.write_line(line)
        for entry in self.stale:
            terminalreporter.write_line(f"harness check: stale entry in {self.reviewed}: "
                                        f"{entry.function} ({entry.expect}) names no function "
                                        "this run called")
        if self.wrote:
            said = "; ".join(self.changes) if self.changes else "no change"
            terminalreporter.write_line(f"harness check: wrote {self.reviewed}: {said}")
