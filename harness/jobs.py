"""A job and what comes back of it: the records the run hands to a worker and the pool carries
back to be judged.

The run loop makes the jobs (harness.cli), a worker runs them (harness.process.worker), the pool
carries each one back as it ended (harness.process.pool), and the main process judges it
(harness.judge.judging). Plain frozen records, below all four, so that none of them imports
another's module for a record's sake.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

from harness.records import Measured, RunOptions, Status

__all__ = ["Carried", "Death", "Job", "ORACLES", "SETUP"]

# What a worker runs besides the modes, as Death.mode names it: setting the case up, before its
# first mode starts (the pool's name for a job until then), and the oracles' checks after the last
# mode (harness.measure.execute names them as they start).
SETUP = "setup"
ORACLES = "oracles"


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
    # Also write each point's standalone script with this builder, called as repro(case, job)
    # before the case runs; the command line hands it in (harness.repro.script.for_points), so the
    # worker imports no repro code. None: no scripts.
    repro: Optional[Callable[..., dict]] = None
    # explore: run the case at this one point, (name, value) for every argument, instead of its own
    # points (`points` holds its label); what the modes build is kept for the next such job.
    values: Optional[tuple] = None
    # Modes stopped in an earlier run of this job, each with why (the pool stops a mode that grows
    # its worker past --mode_memory_mib): reported skipped with that reason, not run again.
    stopped: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class Death:
    """How a job's worker ended before it sent a measurement."""

    status: Status  # Status.CRASH or Status.TIMEOUT
    mode: str  # the mode it was running, or SETUP or ORACLES
    how: str  # e.g. "killed by SIGABRT" or "ran past the 60 s timeout; its worker was killed"
    output: str  # the last lines the worker wrote


@dataclasses.dataclass(frozen=True)
class Carried:
    """One job at its end, as its worker left it, judged by no one yet: its index in the run, the
    job, the seconds it took, any reproduction scripts, and what was measured or how the worker
    died."""

    index: int
    job: Job
    seconds: float
    scripts: dict  # point label -> (ok, script text or why there is none)
    measured: Sequence[Measured] = ()
    changed: Sequence[str] = ()  # the process-wide state the case changed, and threads it left
    lost: str = ""  # why nothing measured could be sent, when it could not
    death: Optional[Death] = None
    # --inprocess: the cases before this one whose process-wide changes this process still carries.
    after: tuple[str, ...] = ()
