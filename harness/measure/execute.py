"""Running selected cases in the selected modes and checking the oracles at each point.

This is where TensorFlow is first imported on a normal run (through the mode
runners). `measure` is what a worker runs; it judges nothing, and imports
nothing that judges: the main process judges what it measured
(verdict.judge_measured), and harness.run_here measures and judges in one
process for harness.check and the tests.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import platform
import time
from typing import Callable, Sequence

import numpy as np

from harness.measure import modes as _modes
from harness.measure import oracles
from harness.measure import probe
from harness.measure import release
from harness.case import Case
from harness.jobs import ORACLES
from harness.measure.modes.shared import tf
from harness.records import Measured, ModeOutcome, RunOptions, Status, error_info
from harness.criteria.rules import oracle_subject, yardstick

__all__ = ["environment", "measure"]


def _installed(*distributions: str) -> str:
    """The version of the first of `distributions` installed ("keras" or "keras-nightly"), read
    from its metadata without importing it; "none" where none is."""
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "none"


def environment() -> dict[str, str]:
    """The versions a report was produced with: TensorFlow, and the Keras 3 (`keras`: Keras 2
    itself up to TensorFlow 2.15) and Keras 2 (`tf_keras`) installed beside it, a release's or a
    nightly's."""
    return {
        "tensorflow": tf.version.VERSION,
        "tensorflow_git": tf.version.GIT_VERSION,
        "keras": _installed("keras", "keras-nightly"),
        "tf_keras": _installed("tf-keras", "tf-keras-nightly"),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def _run_mode(mode: str, case: Case, options: RunOptions) -> list[ModeOutcome]:
    if mode in case.skip_modes:
        return [ModeOutcome(mode=mode, status=Status.SKIP, note=case.skip_modes[mode])
                for _ in case.points]
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
    took: dict[str, float] = {}
    for mode in modes:
        for _ in range(max(1, options.repeat)):
            on_mode(mode)
            start = time.perf_counter()
            with release.released():
                runs.setdefault(mode, []).append(_run_mode(mode, case, options))
            took[mode] = took.get(mode, 0.0) + time.perf_counter() - start
    for mode in modes:  # each point's share of the mode's time
        share = took[mode] / max(1, len(case.points))
        runs[mode][0] = [dataclasses.replace(o, seconds=share) for o in runs[mode][0]]
    default = _modes.reference_of(tuple(modes))
    measured = []
    for i, point in enumerate(case.points):
        outcomes = {m: runs[m][0][i] for m in modes}
        repeats = {m: tuple(again[i] for again in runs[m][1:]) for m in modes if len(runs[m]) > 1}
        active = [m for m in modes if outcomes[m].status is not Status.SKIP]
        checks = {}
        if active and (options.numeric or options.upstream or case.reference or case.analytic):
            on_mode(ORACLES)
            subject, note = oracle_subject({m: outcomes[m] for m in active},
                                           yardstick(case, point.label, outcomes,
                                                     tf.version.VERSION, default))
            with release.released():
                checks = oracles.consult(case, point, outcomes[subject], options, note)
        measured.append(Measured(point=point.label, outcomes=outcomes, repeats=repeats,
                                 oracles=checks))
    return measured
