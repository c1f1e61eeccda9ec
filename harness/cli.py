"""The command line: flags, their checks, and the run loop.

TensorFlow is imported only once the flags are valid and cases are about to
load, so `--help` and every usage error answer in a fraction of a second.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from absl import app, flags, logging

from harness import modes as _modes
from harness import report as _report
from harness.progress import Progress
from harness.records import CaseInfo, RunOptions

__all__ = ["main", "run"]

MODE = flags.DEFINE_string(
    "mode", "all", f"'all' (= {','.join(_modes.CORE_MODES)}) or a comma list of modes to run.")
CASES = flags.DEFINE_list(
    "cases", None, "Comma list of globs on case ids (e.g. 'seeds.*'), or CASE_ID[POINT] for one point. "
    "Default: every case.")
CASE_FILES = flags.DEFINE_multi_string(
    "case_file", [], "A Python file defining CASES with the harness case API (repeatable). Its cases "
    "run instead of the built-in library, unless --library is given.")
LIBRARY = flags.DEFINE_bool(
    "library", None, "Include the built-in case library (default: yes, unless --case_file is given).")
LIST = flags.DEFINE_bool("list", False, "List the selected cases with their descriptions, and exit.")
JSON_OUT = flags.DEFINE_string("json_out", None, "Write the JSON report (schema harness.report/1) here.")
JUNIT_OUT = flags.DEFINE_string("junit_out", None, "Write a JUnit XML report here.")
STRICT_XPASS = flags.DEFINE_bool(
    "strict_xpass", False, "Count an xpass (a declared deviation that did not happen) as a failure.")
JSONL_OUT = flags.DEFINE_string(
    "jsonl_out", None, "Append each result to this JSON Lines file as it finishes (default: next to "
    "--json_out, with the suffix .jsonl).")
JOBS = flags.DEFINE_integer("jobs", 0, "Worker processes running cases in parallel (0: one per core; at "
                            "most one per selected case).", lower_bound=0)
TIMEOUT = flags.DEFINE_float("timeout", 300.0, "Seconds one case may run (all its modes and points) before "
                             "its worker is killed and the case is reported as timeout.", lower_bound=0.1)
INPROCESS = flags.DEFINE_bool(
    "inprocess", False, "Run every case in this process, without workers, crash isolation or timeouts "
    "(for debugging with pdb).")
UNCONNECTED = flags.DEFINE_enum(
    "unconnected_gradients", "none", ["none", "zero"],
    "What an unconnected gradient is in every mode: None (kept apart from zeros) or zeros.")

_OUTPUT_FLAGS = (JSON_OUT, JUNIT_OUT, JSONL_OUT)


class UsageError(Exception):
    """A user mistake: printed as one line, exit status 2."""


def _mode_ok(value: str) -> bool:
    try:
        _modes.parse_modes(value)
    except ValueError as e:
        raise flags.ValidationError(str(e)) from None
    return True


def _output_ok(value) -> bool:
    if value is not None:
        try:
            _report.check_writable(value)
        except ValueError as e:
            raise flags.ValidationError(str(e)) from None
    return True


flags.register_validator("mode", _mode_ok)
for _flag in _OUTPUT_FLAGS:
    flags.register_validator(_flag.name, _output_ok)


def _parse_flags(argv: list[str]) -> list[str]:
    try:
        return flags.FLAGS(argv)
    except flags.Error as e:
        _usage_exit(str(e))


def _usage_exit(message: str) -> None:
    sys.stderr.write(f"harness: error: {message}\n")
    sys.exit(2)


def rerun_command(case_id: str, point: str, modes: Sequence[str]) -> str:
    """The command line that reruns one case at one point alone with this run's settings."""
    mode = "all" if tuple(modes) == _modes.CORE_MODES else ",".join(modes)
    parts = ["python", "-m", "harness", f"--mode={mode}", f"--cases={case_id}[{point}]"]
    parts += [f"--case_file={path}" for path in CASE_FILES.value]
    if LIBRARY.value and CASE_FILES.value:
        parts.append("--library")
    if UNCONNECTED.value != "none":
        parts.append(f"--unconnected_gradients={UNCONNECTED.value}")
    if STRICT_XPASS.value:
        parts.append("--strict_xpass")
    return shlex.join(parts)


def _list(cases: Sequence[CaseInfo]) -> None:
    width = max(len(c.id) for c in cases)
    for case in cases:
        points = f"{len(case.points)} point{'s' if len(case.points) != 1 else ''}"
        print(f"{case.id:<{width}}  order {case.order}  {points:<9}  {case.description}")


def _jsonl_path() -> Optional[str]:
    if JSONL_OUT.value:
        return JSONL_OUT.value
    if JSON_OUT.value:
        return str(Path(JSON_OUT.value).with_suffix(".jsonl"))
    return None


def _runner(with_library: bool):
    from harness import pool  # noqa: PLC0415 - no TensorFlow unless in-process

    if INPROCESS.value:
        return pool.InProcess(with_library, CASE_FILES.value)
    size = 1 if LIST.value else (JOBS.value or os.cpu_count() or 1)
    return pool.WorkerPool(size, TIMEOUT.value, with_library, CASE_FILES.value)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def run(argv: Sequence[str]) -> int:
    """Runs the harness for parsed flags; returns the exit status."""
    from harness import loader, pool  # noqa: PLC0415
    from harness.records import Report  # noqa: PLC0415
    from harness.report import json_report, junit, text  # noqa: PLC0415
    from harness.worker import Job  # noqa: PLC0415

    if len(argv) > 1:
        raise UsageError(f"unexpected argument {argv[1]!r}; select cases with --cases")
    modes = _modes.parse_modes(MODE.value)
    with_library = LIBRARY.value if LIBRARY.value is not None else not CASE_FILES.value
    if not with_library and not CASE_FILES.value:
        raise UsageError("no cases: give --case_file, or drop --nolibrary")
    signal.signal(signal.SIGTERM, _raise_interrupt)
    start = time.monotonic()
    runner = None
    results: dict[int, list] = {}
    selected = []
    environment: dict = {}
    jsonl = None
    try:
        runner = _runner(with_library)
        environment, catalogue = runner.start()
        selected = loader.select(catalogue, CASES.value)
        if LIST.value:
            _list(selected)
            return 0
        options = RunOptions(unconnected_zero=UNCONNECTED.value == "zero")
        jobs = [Job(case_id=c.id, order=c.order, points=c.points, modes=modes, options=options,
                    strict_xpass=STRICT_XPASS.value,
                    reruns=tuple((p, rerun_command(c.id, p, modes)) for p in c.points)) for c in selected]
        jsonl_path = _jsonl_path()
        jsonl = open(jsonl_path, "w", encoding="utf-8") if jsonl_path else None
        progress = Progress(total=sum(len(c.points) for c in selected))
        try:
            for index, found in runner.run(jobs, lambda job: progress.started(job.case_id)):
                results[index] = found
                for result in found:
                    if jsonl:
                        jsonl.write(json.dumps(json_report.result_dict(result), allow_nan=False) + "\n")
                        jsonl.flush()
                progress.finished(index, "\n".join(text.line(r) for r in found), len(found))
        finally:
            progress.close()
        interrupted = False
    except loader.LoadError as e:
        raise UsageError(str(e)) from None
    except pool.PoolError as e:
        sys.stderr.write(f"harness: {e}\n")
        return 1
    except KeyboardInterrupt:
        interrupted = True
        if runner is not None:
            runner.kill()
    finally:
        if runner is not None:
            runner.close()
        if jsonl:
            jsonl.close()
    finished = tuple(r for index in sorted(results) for r in results[index])
    report = Report(environment=environment, modes=modes, results=finished)
    for flag, renderer in ((JSON_OUT, json_report), (JUNIT_OUT, junit)):
        if flag.value:
            _report.write(flag.value, renderer.render(report))
            logging.info("wrote %s", flag.value)
    not_run = sum(len(c.points) for c in selected) - len(finished)
    print(text.summary(report.results, time.monotonic() - start, not_run=not_run))
    if interrupted:
        sys.stderr.write(f"harness: interrupted; {not_run} case points did not run; reports hold what finished\n")
        return 130
    return 1 if report.failed else 0


def main(argv: Sequence[str]) -> int:
    try:
        return run(argv)
    except UsageError as e:
        _usage_exit(str(e))


def entry() -> None:
    app.run(main, flags_parser=_parse_flags)
