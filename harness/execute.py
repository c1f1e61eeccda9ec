"""Running selected cases in the selected modes and judging each point.

This is where TensorFlow is first imported on a normal run (through the mode
runners), and the only place that joins the runners with the verdict rules.
"""

from __future__ import annotations

import platform
from typing import Callable, Iterator, Sequence

import numpy as np

from harness import modes as _modes
from harness.case import Case, Point
from harness.modes._tf import error_info, tf
from harness.records import ModeOutcome, Result, RunOptions, Status
from harness.verdict import judge, skipped

__all__ = ["environment", "run_cases"]

# Rerun command for one case and point, given by the caller (it knows the flags).
RerunFn = Callable[[Case, Point], str]


def environment() -> dict[str, str]:
    """The versions a report was produced with."""
    return {
        "tensorflow": tf.version.VERSION,
        "tensorflow_git": tf.version.GIT_VERSION,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def _run_mode(mode: str, case: Case, options: RunOptions) -> list[ModeOutcome]:
    try:
        return _modes.runner(mode).run(case, options)
    except Exception as e:  # noqa: BLE001 - a runner bug must not lose the other cases
        return [ModeOutcome(mode=mode, status=Status.ERROR, error=error_info(e, "harness"))
                for _ in case.points]


def run_case(case: Case, modes: Sequence[str], options: RunOptions, rerun: RerunFn,
             strict_xpass: bool = False, on_mode: Callable[[str], None] = lambda mode: None) -> list[Result]:
    """Runs `case` in every mode and judges each of its points.

    `on_mode` is called as each mode starts, so a supervisor knows where a
    case was when its process died.
    """
    version = tf.version.VERSION
    if not case.runs_on(version):
        reason = f"the case needs TensorFlow {case.tf_versions}; this is {version}"
        return [skipped(case, p, reason, rerun(case, p)) for p in case.points]
    by_mode = {}
    for mode in modes:
        on_mode(mode)
        by_mode[mode] = _run_mode(mode, case, options)
    reference = _modes.reference_of(tuple(modes))
    return [
        judge(case, point, {m: by_mode[m][i] for m in modes}, tf_version=version, reference=reference,
              rerun=rerun(case, point), strict_xpass=strict_xpass)
        for i, point in enumerate(case.points)
    ]


def run_cases(cases: Sequence[Case], modes: Sequence[str], options: RunOptions, rerun: RerunFn,
              strict_xpass: bool = False) -> Iterator[Result]:
    """Yields each case's results as soon as that case has run, in this process."""
    for case in cases:
        yield from run_case(case, modes, options, rerun, strict_xpass)
