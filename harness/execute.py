"""Running selected cases in the selected modes and checking the oracles at each point.

This is where TensorFlow is first imported on a normal run (through the mode
runners). `measure` is what a worker runs; `run_case` also judges, for the
in-process uses (harness.check, --inprocess, tests) with the same rules the
main process applies to a worker's measurements.
"""

from __future__ import annotations

import dataclasses
import platform
from typing import Callable, Iterator, Sequence

import numpy as np

from harness import modes as _modes
from harness import loader, oracles, probe, state
from harness.case import Case, Point
from harness.modes.shared import tf
from harness.records import Measured, ModeOutcome, Result, RunOptions, Status, error_info
from harness.verdict import judge_measured, oracle_subject, yardstick

__all__ = ["environment", "measure", "run_case", "run_cases"]

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
    if mode in case.skip_modes:
        return [ModeOutcome(mode=mode, status=Status.SKIP, note=case.skip_modes[mode]) for _ in case.points]
    try:
        runner = _modes.runner(mode)
        observe = probe.installed() and getattr(runner, "OBSERVES_GRADIENTS", True)
        probe.start()
        outcomes = runner.run(case, options)
    except Exception as e:  # noqa: BLE001 - a runner bug must not lose the other cases
        return [ModeOutcome(mode=mode, status=Status.ERROR, error=error_info(e, "harness"))
                for _ in case.points]
    if observe:
        usage = probe.finish()
        outcomes = [dataclasses.replace(o, usage=usage) for o in outcomes]
    return outcomes


def measure(case: Case, modes: Sequence[str], options: RunOptions,
            on_mode: Callable[[str], None] = lambda mode: None) -> list[Measured]:
    """Runs `case` in every mode (`options.repeat` times) and checks the oracles at each point.

    Plain records come back, judged by no one yet (verdict.judge_measured does
    that, in the main process on a normal run). `on_mode` is called as each
    mode starts, so a supervisor knows where a case was when its process died.
    """
    if not case.runs_on(tf.version.VERSION):
        return []  # not measured here; the judge says why
    runs: dict[str, list[list[ModeOutcome]]] = {}
    for mode in modes:
        for _ in range(max(1, options.repeat)):
            on_mode(mode)
            runs.setdefault(mode, []).append(_run_mode(mode, case, options))
    default = _modes.reference_of(tuple(modes))
    measured = []
    for i, point in enumerate(case.points):
        outcomes = {m: runs[m][0][i] for m in modes}
        repeats = {m: tuple(again[i] for again in runs[m][1:]) for m in modes if len(runs[m]) > 1}
        active = [m for m in modes if outcomes[m].status is not Status.SKIP]
        checks = {}
        if active and (options.numeric or options.upstream or case.reference or case.analytic):
            on_mode("oracles")
            subject, note = oracle_subject({m: outcomes[m] for m in active},
                                           yardstick(case, point.label, outcomes, tf.version.VERSION, default))
            checks = oracles.check(case, point, outcomes[subject], options, note)
        measured.append(Measured(point=point.label, outcomes=outcomes, repeats=repeats, oracles=checks))
    return measured


def run_case(case: Case, modes: Sequence[str], options: RunOptions, rerun: RerunFn,
             strict_xpass: bool = False) -> list[Result]:
    """Measures `case` and judges each of its points, all in this process (harness.check, tests).

    What the case changes of global state (harness.state) is reported on it as a worker's would
    be, but stays: nothing here can replace the process.
    """
    settings, threads = state.snapshot(), state.threads()
    measured = measure(case, modes, options)
    running = state.left_running(threads)
    return judge_measured(loader.info(case), measured, points=[p.label for p in case.points],
                          modes=modes, options=options, tf_version=tf.version.VERSION,
                          reference=_modes.reference_of(tuple(modes)),
                          reruns={p.label: rerun(case, p) for p in case.points}, strict_xpass=strict_xpass,
                          changed=state.changes(settings, state.snapshot()) + running)


def run_cases(cases: Sequence[Case], modes: Sequence[str], options: RunOptions, rerun: RerunFn,
              strict_xpass: bool = False) -> Iterator[Result]:
    """Yields each case's results as soon as that case has run, in this process."""
    for case in cases:
        yield from run_case(case, modes, options, rerun, strict_xpass)
