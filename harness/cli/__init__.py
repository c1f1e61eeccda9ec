"""The command line: `python -m harness [COMMAND] ...`, one module per room.

    options   every flag, its check, and the table of the --help group and commands of each
    help      --help and COMMAND --help, read from that table; parsing the flags
    settings  the Settings a command runs with, read from the flags once before any case runs;
              the rerun command, the output paths and the workers
    run_loop  the run loop of run, check, repro, replay and list: stream, reports, summary
    repro     repro.py and ISSUE.md for a result: written, checked, minimised
    explore   explore, and a run's --explore
    merge     merge: reports of several releases into one version matrix
    record    record DIR -- CMD
    matrix    matrix and bisect: the harness under other TensorFlow builds; they read their own
              flags, which no other command takes

This process never imports TensorFlow unless --inprocess is given: workers (harness.process.worker,
harness.process.pool) load the cases and run them, so `--help` and every usage error answer in a
fraction of a second. Every flag is in options.FLAG_TABLE with its --help group and the commands
that take it; a command given a flag it does not take refuses it, naming the commands it belongs to.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Sequence

from absl import app

from harness.cli.explore import explore_command
from harness.cli.help import parse_flags, usage_exit
from harness.cli.matrix import bisect_command, matrix_command
from harness.cli.merge import merge_command
from harness.cli.options import (
    BISECT_CMD,
    EXPLORE_CMD,
    MATRIX_CMD,
    MERGE_CMD,
    RECORD_CMD,
    UsageError,
)
from harness.cli.record import record_command
from harness.cli.run_loop import Run
from harness.cli.settings import refuse_other_flags, settings_for, split_command

__all__ = ["main", "run"]


def run(argv: Sequence[str]) -> int:
    """Runs the harness for parsed flags and positional arguments; returns the exit status."""
    command, args = split_command(argv)
    refuse_other_flags(command, args)
    if command == MATRIX_CMD:
        return matrix_command(args)
    if command == BISECT_CMD:
        return bisect_command(args)
    settings = settings_for(command, args)
    if command == MERGE_CMD:
        return merge_command(settings)
    if command == RECORD_CMD:
        return record_command(settings)
    if command == EXPLORE_CMD:
        return explore_command(settings, args[0])
    return Run(settings).main()


def main(argv: Sequence[str]) -> int:
    for stream in (
        sys.stdout,
        sys.stderr,
    ):  # a lone surrogate in a message is printed escaped, never fatal
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")
    try:
        return run(argv)
    except UsageError as e:
        usage_exit(str(e))


def entry() -> None:
    app.run(main, flags_parser=parse_flags)
