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
tests' own outcomes are not touched. Importing this imports no TensorFlow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import pytest

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
    if path is not None and path.is_file():
        try:
            expectations.load(path)
        except expectations.ExpectationsError as e:
            raise pytest.UsageError(str(e)) from None
    elif path is not None and named and not accept:
        raise pytest.UsageError(f"--harness-expectations={named}: no such file; give an existing "
                                "file, or write one with --harness-accept")
    if path is None and accept:
        path = Path(rootdir) / expectations.FILE_NAME
    return (str(path.resolve()) if path else None), accept, strict


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


def _report(result: dict, session_folder: str):
    """pytest's report of one replayed point."""
    from _pytest.reports import TestReport  # noqa: PLC0415 - pytest runs this

    nodeid = f"harness::{result['case']}[{result['point']}]"
    verdict = result["verdict"]
    reason = result.get("reason") or verdict
    caller = _caller(result)
    first = reason.splitlines()[0] + (f" (called by {caller})" if caller else "")
    text = "\n".join([reason] + [f"- {d}" for d in result.get("details") or () if d != reason]
                     + ([f"rerun: {result['rerun']}"] if result.get("rerun") else []))
    location = (session_folder, 0, nodeid)
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


class Checking:
    """The hooks that replay the recording at the end of the session and report its points."""

    def __init__(self, recording, modes: str, jobs: int, timeout: Optional[float],
                 reviewed: tuple = (None, False, False), json_out: Optional[str] = None):
        self.recording = recording  # harness.record.recorder.Session
        self.modes, self.jobs, self.timeout = modes, jobs, timeout
        self.json_out = json_out  # where the replay's JSON report is kept (None: not kept)
        # The expectations file (or None), whether to write it from the run, whether xpass fails.
        self.reviewed, self.accept, self.strict = reviewed
        self.changes: list = []
        self.stale: list = []
        self.results: list = []
        self.line = ""
        self.problem = ""

    def _replay(self) -> None:
        if self.json_out:
            kept = Path(self.json_out).resolve()
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.unlink(missing_ok=True)  # an earlier run's report must not pass for this one's
            self._replay_into(kept)
            return
        with tempfile.TemporaryDirectory(prefix="harness-check-") as scratch:
            self._replay_into(Path(scratch) / "replay.json")

    def _replay_into(self, out: Path) -> None:
        folder = self.recording.folder
        command = [sys.executable, "-m", "harness", "replay", folder, f"--mode={self.modes}",
                   f"--jobs={self.jobs}", f"--json_out={out}"]
        if self.timeout:
            command.append(f"--timeout={self.timeout:g}")
        # Under accept every deviation is seen as it is, the file written from what was found.
        reviewed = self.reviewed if self.reviewed and not self.accept else ""
        command.append(f"--expectations={reviewed}")
        if self.strict:
            command.append("--strict_xpass")
        env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_RECORD")}
        started = time.monotonic()
        proc = subprocess.run(command, capture_output=True, text=True, env=env)
        took = time.monotonic() - started
        if not out.is_file():
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            self.problem = lines[-1] if lines else f"replay exited with status {proc.returncode}"
            return
        report = json.loads(out.read_text(encoding="utf-8"))
        self.results = report["results"]
        self._review(report.get("environment", {}).get("tensorflow", "?"))
        counts: dict = {}
        for r in self.results:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        said = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        self.line = (f"harness check: {len(self.results)} point"
                     f"{'s' if len(self.results) != 1 else ''} of the recorded custom gradients "
                     f"replayed in {took:.1f} s ({said or 'none'})")

    def _review(self, tf_version: str) -> None:
        """Stale entries, and under accept the file written from the run."""
        from harness.record import expectations  # noqa: PLC0415

        if self.reviewed is None:
            return
        entries = (expectations.load(Path(self.reviewed)) if Path(self.reviewed).is_file()
                   else [])
        self.stale = expectations.stale(entries, sorted({r["case"] for r in self.results}))
        if not self.accept:
            return
        self.changes, undeclarable = expectations.accept_into(Path(self.reviewed), self.results,
                                                              tf_version)
        # What was accepted is expected from now on: the points are reported as such.
        for r in self.results:
            if r["verdict"] == "fail" and f"{r['case']}[{r['point']}]" not in undeclarable:
                r["verdict"] = "xfail"

    @pytest.hookimpl(tryfirst=True)  # before --junitxml writes its file and the summary is shown
    def pytest_sessionfinish(self, session, exitstatus):
        if hasattr(session.config, "workerinput"):  # an xdist worker: the controller replays
            return
        self.recording.flush(finished=True)
        from harness.record import store  # noqa: PLC0415

        try:
            store.read(self.recording.folder)
        except store.RecordError:
            self.line = "harness check: no custom-gradient function was recorded, so none replayed"
            return
        self._replay()
        hook = session.config.hook
        # Counted as collected, so that pytest's progress (its [NN%]) goes on to 100% over them.
        session.testscollected += len(self.results)
        for result in self.results:
            report = _report(result, self.recording.folder)
            hook.pytest_runtest_logstart(nodeid=report.nodeid, location=report.location)
            hook.pytest_runtest_logreport(report=report)
            hook.pytest_runtest_logfinish(nodeid=report.nodeid, location=report.location)
        failed = self.problem or any(r["verdict"] in _FAILING for r in self.results)
        if failed and session.exitstatus == 0:
            session.exitstatus = 1  # pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if self.problem:
            terminalreporter.write_line(f"harness check: error: the replay did not run: "
                                        f"{self.problem}")
        elif self.line:
            terminalreporter.write_line(self.line)
        for entry in self.stale:
            terminalreporter.write_line(f"harness check: stale entry in {self.reviewed}: "
                                        f"{entry.function} ({entry.expect}) names no function "
                                        "this run called")
        if self.accept and self.reviewed:
            said = "; ".join(self.changes) if self.changes else "no change"
            terminalreporter.write_line(f"harness check: wrote {self.reviewed}: {said}")
