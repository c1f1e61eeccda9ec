"""The worker side: load the cases once, then run one case per request.

A worker is a separate Python process (see harness/pool.py), so a case that
aborts, hangs or poisons TensorFlow's global state costs only that process.
This module imports TensorFlow only inside the functions that run cases, so
the supervising process can import it for `serve`'s name alone.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
from typing import Callable, Sequence

from harness.records import Result, RunOptions, Verdict

__all__ = ["Job", "Loaded", "load", "run_job", "serve"]


@dataclasses.dataclass(frozen=True)
class Job:
    """One case to run: which points, in which modes, with what settings."""

    case_id: str
    order: int
    points: tuple[str, ...]
    modes: tuple[str, ...]
    options: RunOptions
    strict_xpass: bool
    reruns: tuple[tuple[str, str], ...]  # (point label, rerun command)


@dataclasses.dataclass(frozen=True)
class Loaded:
    """What loading the cases gives: the case objects by id, and the environment."""

    cases: dict
    environment: dict
    baseline: dict  # the global-state snapshot every case must leave as it found


def load(library: bool, case_files: Sequence[str]) -> Loaded:
    """Imports the case library and case files, and TensorFlow with them.

    Raises:
      loader.LoadError: a file is broken or a case is invalid.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from harness import execute, loader, state  # noqa: PLC0415 - TensorFlow comes in here

    cases = (loader.builtin_cases() if library else []) + loader.case_file_cases(case_files)
    loader.select([loader.info(c) for c in cases], None)  # refuses duplicate ids
    return Loaded(cases={c.id: c for c in cases}, environment=execute.environment(),
                  baseline=state.snapshot())


def run_job(loaded: Loaded, job: Job, on_mode: Callable[[str], None]) -> tuple[list[Result], list[str]]:
    """Runs `job`; returns its results and the global settings the case changed.

    When the case changed a setting, its results become `error` verdicts that
    say what changed: its values were computed under, or left behind, a
    different TensorFlow.
    """
    from harness import execute, loader, state  # noqa: PLC0415

    reruns = dict(job.reruns)
    case = loader.narrow(loaded.cases[job.case_id], job.points)
    results = execute.run_case(case, job.modes, job.options, lambda c, p: reruns[p.label],
                               job.strict_xpass, on_mode)
    changed = state.changes(loaded.baseline, state.snapshot())
    if changed:
        reason = f"the case changed global TensorFlow state: {'; '.join(changed)}"
        results = [dataclasses.replace(r, verdict=Verdict.ERROR, reason=reason,
                                       details=(f"verdict before the check: {r.verdict.value}",) + r.details)
                   for r in results]
    return results, changed


def _redirect_output(path: str) -> None:
    # Case code and TensorFlow's C++ runtime write to fds 1 and 2; keep both in
    # a file the supervisor reads when this process dies.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def serve(conn, library: bool, case_files: Sequence[str], output_path: str) -> None:
    """The worker process's main loop.

    Sends ("ready", environment, catalogue) or ("load_error", message); then for
    each ("run", job) sends ("mode", mode) as each mode starts and
    ("done", results, changed). Exits on ("stop",), or after a case that
    changed global state.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides when to stop
    _redirect_output(output_path)
    from harness import loader  # noqa: PLC0415

    try:
        loaded = load(library, case_files)
    except loader.LoadError as e:
        conn.send(("load_error", str(e)))
        return
    conn.send(("ready", loaded.environment, [loader.info(c) for c in loaded.cases.values()]))
    while True:
        message = conn.recv()
        if message[0] == "stop":
            return
        job: Job = message[1]
        results, changed = run_job(loaded, job, lambda mode: conn.send(("mode", mode)))
        conn.send(("done", results, changed))
        if changed:
            return  # a fresh worker takes the next case
