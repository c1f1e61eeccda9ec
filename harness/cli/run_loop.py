"""The run loop (run, check and repro): workers, streaming results, reports, then reproductions and
the summary.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from harness.cli.explore import explore_case
from harness.cli.options import REPRO_CMD, UsageError
from harness.cli.repro import REPRO_VERDICTS, repro_folder, write_repros
from harness.cli.settings import (
    Settings,
    explore_module,
    pool_size,
    rerun_command,
    runner_for,
    say,
    write_outputs,
)
from harness.cli.progress import Progress
from harness.records import CaseInfo


def list_cases(cases: Sequence[CaseInfo]) -> None:
    width = max(len(c.id) for c in cases)
    for case in cases:
        points = f"{len(case.points)} point{'s' if len(case.points) != 1 else ''}"
        print(f"{case.id:<{width}}  order {case.order}  {points:<9}  {case.description}")


class Signals:
    """SIGINT and SIGTERM: a KeyboardInterrupt while cases run; once every case has run, only
    noted, so that the reports of what ran are written whole before the run stops."""

    def __init__(self):
        self.defer = False
        self.caught: Optional[int] = None

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self.handle)
        signal.signal(signal.SIGINT, self.handle)

    def handle(self, signum, frame):
        if self.defer:
            self.caught = signum
            return
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def deferred(self):
        self.defer = True
        try:
            yield
        finally:
            self.defer = False


class Run:
    """One run of cases, in named steps: start the workers and select the cases; run them,
    streaming each result; explore; then the reports, the reproductions and the summary.
    Every step reads the Settings, never a flag."""

    def __init__(self, s: Settings):
        self.s = s
        self.start = time.monotonic()
        self.environment: dict = {}
        # every loaded case's, by id: what its results are judged by
        self.infos: dict[str, CaseInfo] = {}
        self.selected: list[CaseInfo] = []
        self.finished: dict[int, object] = {}
        self.explored: list = []
        self.written = True  # every output written so far
        self.interrupted = False
        self.jsonl = None
        self.jsonl_opened = False  # the stream was opened (it may have been closed since)
        self.signals = Signals()
        self.accepted: set = set()  # replay --accept: the failing points written as expected

    def main(self) -> int:
        self.signals.install()
        stop = self.run_cases()
        if stop is not None:
            return stop
        with self.signals.deferred():  # a signal now waits until what ran is on disk
            report = self.report()
            if self.s.accept_into and not self.interrupted:
                self.accept(report)
        if self.signals.caught is not None:
            return self.summary(report)
        written = self.write_reproductions(report)
        # Ctrl-C or SIGTERM while writing them: exits as an interrupted run
        if isinstance(written, str):
            self.summary(report)
            sys.stderr.write(written + "\n")
            return 130
        self.written = written and self.written
        return self.summary(report)

    def run_cases(self) -> Optional[int]:
        """Starts the workers, selects, runs and explores; an exit status when the run ends here."""
        from harness import loader  # noqa: PLC0415
        from harness.matrix import pins  # noqa: PLC0415
        from harness.process import pool  # noqa: PLC0415

        runner = None
        try:
            runner = runner_for(self.s)
            self.environment, catalogue = runner.start()
            tensorflow = self.environment.get("tensorflow", "")
            untested = pins.untested(tensorflow) if tensorflow not in ("", "?") else ""
            if untested:
                say(untested)
            self.infos = {c.id: c for c in catalogue}
            self.selected = loader.shard(loader.select(catalogue, self.s.patterns), *self.s.shard)
            if self.s.list_only:
                list_cases(self.selected)
                return 0
            self.check_domains()
            self.open_stream()
            self.stream(runner)
            self.explore(runner)
        except loader.LoadError as e:
            raise UsageError(str(e)) from None
        except pool.PoolError as e:
            sys.stderr.write(f"harness: {e}\n")
            return 1
        except KeyboardInterrupt:
            self.interrupted = True
            if runner is not None:
                runner.kill()
        finally:
            if runner is not None:
                # every case has run or been stopped: let the workers go
                with self.signals.deferred():
                    runner.close()
            if self.jsonl:
                with contextlib.suppress(OSError):  # a full disk: what was flushed stays
                    self.jsonl.close()
        return None

    def jobs(self) -> list:
        from harness.jobs import Job  # noqa: PLC0415

        s = self.s
        repro = None  # the builder of each point's script, imported only when scripts are wanted
        if s.repro_dir or s.command == REPRO_CMD:
            from harness.repro import script  # noqa: PLC0415

            repro = script.for_points
        # A recorded function's points are one job each: a heavy call a test made (10,000
        # elements of a slow special function) has its own timeout and result, and never sinks
        # the cheap calls beside it. A library case's points share one job, its traces and graphs.
        return [Job(case_id=c.id, order=c.order, points=points, modes=s.modes, options=s.options,
                    strict_xpass=s.strict_xpass, repro=repro,
                    reruns=tuple((p, rerun_command(c.id, p, s, s.check, self.inputs_of(c, p)))
                                 for p in points))
                for c in self.selected
                for points in ([(p,) for p in c.points] if s.recorded else [c.points])]

    def inputs_of(self, case: CaseInfo, point: str) -> Optional[tuple[str, ...]]:
        """The --inputs of `point` of a check, which makes one point per --inputs, in order."""
        check = self.s.check
        if check is None or len(case.points) != len(check.inputs):
            return None
        return (check.inputs[case.points.index(point)],)

    def open_stream(self) -> None:
        """Opens the JSON Lines stream, refusing one that another live run is writing: two runs
        appending to one file would interleave their results (the lock goes with the process)."""
        import fcntl  # noqa: PLC0415 - POSIX only, like the worker pool

        path = self.s.jsonl_out
        if not path:
            return
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
        except OSError as e:
            raise UsageError(
                f"cannot write {path}: {e.strerror or e}; choose another path"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            flag = "--jsonl_out" if self.s.jsonl_named else "--json_out (its .jsonl stream)"
            raise UsageError(f"another harness run is writing {path}; give this run another "
                             f"{flag}, or wait for that run to end") from None
        os.ftruncate(fd, 0)
        self.jsonl = os.fdopen(fd, "w", encoding="utf-8")
        self.jsonl_opened = True

    def stream(self, runner) -> None:
        """Runs every job, judging each as it comes back (here, in the main process), printing each
        result and appending it to the JSON Lines stream."""
        from harness.judge.judging import each_judged  # noqa: PLC0415
        from harness.report import json_report, text  # noqa: PLC0415

        jobs = self.jobs()
        progress = Progress(total=sum(len(c.points) for c in self.selected))
        try:
            carried = runner.run(jobs, lambda job: progress.started(job.case_id),
                                 pool_size(len(jobs), self.s.jobs, runner.at_once))
            for done in each_judged(carried, self.infos, self.environment):
                self.finished[done.index] = done
                for result in done.results:
                    self.append(json_report.result_dict(result, self.s.every_value))
                progress.finished(done.index, "\n".join(text.line(r) for r in done.results),
                                  len(done.results))
        finally:
            progress.close()

    def append(self, record: dict) -> None:
        if not self.jsonl:
            return
        try:
            self.jsonl.write(json.dumps(record, allow_nan=False) + "\n")
            self.jsonl.flush()
        except OSError as e:
            sys.stderr.write(f"harness: cannot write {self.s.jsonl_out}: {e.strerror or e}; it "
                             "holds the results before this one, rerun with another path\n")
            self.written = False
            with contextlib.suppress(OSError):
                self.jsonl.close()
            self.jsonl = None

    def check_domains(self) -> None:
        """--explore N: refuses, before any case runs, a selected case's domains that cannot be
        drawn."""
        explore = explore_module() if self.s.explore else None
        for info in (c for c in self.selected if explore and c.domains):
            try:
                explore.validate_domains(info, list(info.domains))
            except explore.ExploreError as e:
                raise UsageError(f"--explore: {e}") from None

    def explore(self, runner) -> None:
        """--explore N: after the run, every selected case that declares domains."""
        from harness.report import text  # noqa: PLC0415

        for info in (c for c in self.selected if self.s.explore and c.domains):
            found = explore_case(runner, info, (), self.s, self.s.explore, None, self.environment)
            self.explored.append(found)
            print(text.explored(found), flush=True)

    def report(self):
        """The run's Report, written to --json_out and --junit_out."""
        from harness.records import Report  # noqa: PLC0415
        from harness.report import json_report, junit  # noqa: PLC0415

        ordered = [self.finished[i] for i in sorted(self.finished)]
        # the start's wall-clock time from it, so both agree
        seconds = time.monotonic() - self.start
        report = Report(environment=self.environment, modes=self.s.modes,
                        results=tuple(r for done in ordered for r in done.results),
                        started=time.time() - seconds, seconds=seconds,
                        explore=tuple(self.explored))
        renders = ((self.s.json_out, lambda: json_report.render(report, self.s.every_value)),
                   (self.s.junit_out, lambda: junit.render(report)))
        self.written = write_outputs([(path, render()) for path, render in renders
                                      if path]) and self.written
        if self.s.jsonl_out and self.jsonl_opened:
            how = "--jsonl_out" if self.s.jsonl_named else "beside --json_out"
            say(f"streamed each result as it finished to {self.s.jsonl_out} ({how}, JSON Lines)")
        return report

    def accept(self, report) -> None:
        """replay --accept: the expectations file written from the run, and what changed said;
        the failing points it now declares no longer fail the run."""
        from harness.record import expectations  # noqa: PLC0415
        from harness.report import json_report  # noqa: PLC0415

        path = Path(self.s.accept_into)
        changes, undeclarable = expectations.accept_into(
            path, [json_report.result_dict(r) for r in report.results],
            self.environment.get("tensorflow", "?"))
        say(f"accepted into {path}: " + (f"{len(changes)} change{'s' if len(changes) != 1 else ''}"
                                         if changes else "no change"))
        for line in changes:
            say(f"  {line}")
        self.accepted = {r.name for r in report.results
                         if r.verdict.value == "fail" and r.name not in undeclarable}

    def write_reproductions(self, report):
        """repro's one reproduction into --out, or --repro_dir's for every fail, xpass and crash:
        whether all went well, or the line to say when a stop was asked for (see write_repros)."""
        ordered = [self.finished[i] for i in sorted(self.finished)]
        infos = {c.id: c for c in self.selected}
        wanted = []
        if self.s.command == REPRO_CMD and ordered:
            done = ordered[0]
            chosen = next((r for r in done.results if r.verdict.value != "pass"), done.results[0])
            wanted.append((Path(self.s.out), chosen, done.scripts, infos[chosen.case]))
        elif self.s.repro_dir:
            for done in ordered:
                for r in done.results:
                    if r.verdict.value in REPRO_VERDICTS:
                        try:
                            folder = repro_folder(self.s.repro_dir, r.case, r.point)
                        except ValueError as e:
                            say(f"no reproduction for {r.name}: {e}; remove the link")
                            continue
                        wanted.append((folder, r, done.scripts, infos[r.case]))
        return write_repros(wanted, self.environment, self.s)

    def summary(self, report) -> int:
        from harness.report import text  # noqa: PLC0415

        not_run = sum(len(c.points) for c in self.selected) - len(report.results)
        seconds = time.monotonic() - self.start
        shares = text.time_by_mode(report.results, seconds)
        if shares:
            print(shares)
        print(text.summary(report.results, seconds, not_run=not_run))
        if self.interrupted:
            if not self.selected:  # stopped while the cases were still being loaded
                sys.stderr.write("harness: interrupted before the cases were loaded; none ran\n")
                return 130
            sys.stderr.write(f"harness: interrupted; {not_run} case points did not run; reports "
                             "hold what finished\n")
            return 130
        if self.signals.caught is not None:
            name = signal.Signals(self.signals.caught).name
            skipped = ("; no reproductions were written" if self.s.repro_dir
                       or self.s.command == REPRO_CMD else "")
            sys.stderr.write(f"harness: {name} after every case had run; the reports were written "
                             f"first{skipped}\n")
            return 130
        failed = (any(r.verdict.is_failure and r.name not in self.accepted for r in report.results)
                  or any(e.failed for e in report.explore))
        return 1 if failed or not self.written else 0
