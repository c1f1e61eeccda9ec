"""The command line: flags, their checks, and the run loop.

TensorFlow is imported only once the flags are valid and cases are about to
load, so `--help` and every usage error answer in a fraction of a second.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from typing import Sequence

from absl import app, flags, logging

from harness import modes as _modes
from harness import report as _report
from harness.case import Case, Point
from harness.records import RunOptions

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
UNCONNECTED = flags.DEFINE_enum(
    "unconnected_gradients", "none", ["none", "zero"],
    "What an unconnected gradient is in every mode: None (kept apart from zeros) or zeros.")

_OUTPUT_FLAGS = (JSON_OUT, JUNIT_OUT)


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


def rerun_command(case: Case, point: Point, modes: Sequence[str]) -> str:
    """The command line that reruns `case` at `point` alone with this run's settings."""
    mode = "all" if tuple(modes) == _modes.CORE_MODES else ",".join(modes)
    parts = ["python", "-m", "harness", f"--mode={mode}", f"--cases={case.id}[{point.label}]"]
    parts += [f"--case_file={path}" for path in CASE_FILES.value]
    if LIBRARY.value and CASE_FILES.value:
        parts.append("--library")
    if UNCONNECTED.value != "none":
        parts.append(f"--unconnected_gradients={UNCONNECTED.value}")
    if STRICT_XPASS.value:
        parts.append("--strict_xpass")
    return shlex.join(parts)


def _list(cases: Sequence[Case]) -> None:
    width = max(len(c.id) for c in cases)
    for case in cases:
        points = f"{len(case.points)} point{'s' if len(case.points) != 1 else ''}"
        print(f"{case.id:<{width}}  order {case.order}  {points:<9}  {case.description}")


def run(argv: Sequence[str]) -> int:
    """Runs the harness for parsed flags; returns the exit status."""
    # TensorFlow's C++ INFO and WARNING lines would bury the report; set the
    # variable yourself to see them. The case library imports TensorFlow.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from harness import loader  # noqa: PLC0415

    if len(argv) > 1:
        raise UsageError(f"unexpected argument {argv[1]!r}; select cases with --cases")
    modes = _modes.parse_modes(MODE.value)
    try:
        with_library = LIBRARY.value if LIBRARY.value is not None else not CASE_FILES.value
        available = (loader.builtin_cases() if with_library else []) + loader.case_file_cases(CASE_FILES.value)
        if not available:
            raise loader.LoadError("no cases: give --case_file, or drop --nolibrary")
        cases = loader.select(available, CASES.value)
    except loader.LoadError as e:
        raise UsageError(str(e)) from None
    if LIST.value:
        _list(cases)
        return 0

    from harness import execute  # noqa: PLC0415
    from harness.records import Report  # noqa: PLC0415
    from harness.report import json_report, junit, text  # noqa: PLC0415

    options = RunOptions(unconnected_zero=UNCONNECTED.value == "zero")
    results = []
    start = time.monotonic()
    interrupted = False
    try:
        for result in execute.run_cases(cases, modes, options, lambda c, p: rerun_command(c, p, modes),
                                        strict_xpass=STRICT_XPASS.value):
            results.append(result)
            print(text.line(result), flush=True)
    except KeyboardInterrupt:
        interrupted = True
    report = Report(environment=execute.environment(), modes=modes, results=tuple(results))
    for flag, renderer in ((JSON_OUT, json_report), (JUNIT_OUT, junit)):
        if flag.value:
            _report.write(flag.value, renderer.render(report))
            logging.info("wrote %s", flag.value)
    total = sum(len(c.points) for c in cases)
    print(text.summary(report.results, time.monotonic() - start, not_run=total - len(results)))
    if interrupted:
        return 130
    return 1 if report.failed else 0


def main(argv: Sequence[str]) -> int:
    try:
        return run(argv)
    except UsageError as e:
        _usage_exit(str(e))


def entry() -> None:
    app.run(main, flags_parser=_parse_flags)
