"""Measuring and judging a case in this one process: harness.check, the catalogue and the tests.

A run of the command line measures in its workers (harness.measure.execute) and judges in the main
process (harness.judge.verdict); here both happen in the caller's process, with the same rules.
"""

from __future__ import annotations

from typing import Callable, Iterator, Sequence

from harness import loader
from harness.measure import execute
from harness.process import state
from harness.case import Case, Point
from harness.mode_names import reference_of
from harness.measure.modes.shared import tf
from harness.records import Result, RunOptions
from harness.judge.verdict import judge_measured

__all__ = ["run_case", "run_cases"]

# Rerun command for one case and point, given by the caller (it knows the flags).
RerunFn = Callable[[Case, Point], str]


def run_case(case: Case, modes: Sequence[str], options: RunOptions, rerun: RerunFn,
             strict_xpass: bool = False) -> list[Result]:
    """Measures `case` and judges each of its points, all in this process (harness.check, tests).

    What the case changes of global state (harness.process.state) is reported on it as a worker's
    would be, but stays: nothing here can replace the process.
    """
    settings, threads = state.snapshot(), state.threads()
    measured = execute.measure(case, modes, options)
    running = state.left_running(threads)
    return judge_measured(loader.info(case), measured, points=[p.label for p in case.points],
                          modes=modes, options=options, tf_version=tf.version.VERSION,
                          reference=reference_of(tuple(modes)),
                          reruns={p.label: rerun(case, p) for p in case.points},
                          strict_xpass=strict_xpass,
                          changed=state.changes(settings, state.snapshot()) + running)


def run_cases(cases: Sequence[Case], modes: Sequence[str], options: RunOptions, rerun: RerunFn,
              strict_xpass: bool = False) -> Iterator[Result]:
    """Yields each case's results as soon as that case has run, in this process."""
    for case in cases:
        yield from run_case(case, modes, options, rerun, strict_xpass)
