"""The main process's side of a job: the verdicts on what the pool carried back, timed.

The pool (harness.process.pool) only carries a job's measurement, or how its worker ended; its
caller judges each job here as it arrives, so the transport and the workers import no verdict rule.

A job's points run together (the modes batch them), so each point's Result gets the job's time
divided by its points.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator, Mapping, Sequence

from harness import loader
from harness.criteria.rules import required_oracles
from harness.jobs import Carried, Death, Job
from harness.mode_names import reference_of
from harness.records import CaseInfo, Measured, Result, Status
from harness.judge.verdict import died, judge_measured

__all__ = ["Finished", "each_judged", "judged"]


@dataclasses.dataclass(frozen=True)
class Finished:
    """One job done: its index in the run, its results, and any reproduction scripts."""

    index: int
    results: list
    scripts: dict  # point label -> (ok, script text or why there is none)


def judged(carried: Carried, infos: Mapping[str, CaseInfo], environment: dict) -> Finished:
    """The verdicts on one job the pool carried back; `infos` holds its case's CaseInfo by id, and
    `environment` the workers' (harness.measure.execute.environment)."""
    job = carried.job
    if carried.death is not None:
        info = infos.get(job.case_id)
        results = _dead_results(job, carried.death,
                                required_oracles(job.options, info.oracles if info else ()))
    else:
        results = _judge(infos, environment, job, carried.measured, carried.changed, carried.lost)
    if carried.after:
        note = (f"ran after {', '.join(carried.after)} left process-wide state changed, which "
                "--inprocess cannot undo: run it without --inprocess for a verdict of its own")
        results = [dataclasses.replace(r, details=(note,) + r.details) for r in results]
    return Finished(carried.index, _timed(results, carried.seconds), carried.scripts)


def each_judged(carried: Iterable[Carried], infos: Mapping[str, CaseInfo],
                environment: dict) -> Iterator[Finished]:
    """Each job of a run judged as the pool yields it (see judged)."""
    for one in carried:
        yield judged(one, infos, environment)


def _judge(infos: Mapping[str, CaseInfo], environment: dict, job: Job, measured: Sequence[Measured],
           changed: Sequence[str], lost: str = "") -> list[Result]:
    """The verdicts on what a worker measured for `job`."""
    info = (infos[job.case_id] if job.values is None
            else loader.info_at(infos[job.case_id], job.points[0]))
    return judge_measured(info, measured, points=job.points, modes=job.modes, options=job.options,
                          tf_version=environment["tensorflow"], reference=reference_of(job.modes),
                          reruns=dict(job.reruns), strict_xpass=job.strict_xpass, changed=changed,
                          lost=lost)


def _dead_results(job: Job, death: Death, oracles: Sequence[str]) -> list[Result]:
    """Each point's crash or timeout, saying also which modes an earlier run of the job stopped
    (the memory budget), whose time a timeout counts; `oracles` are those the job runs."""
    reruns = dict(job.reruns)
    stopped = tuple(f"{mode} skipped: {why}" for mode, why in job.stopped)
    if stopped and death.status is Status.TIMEOUT:
        stopped += ("the timeout counts the time of the run that was stopped",)
    return [dataclasses.replace(r, details=stopped + r.details) for r in (
        died(job.case_id, label, job.order, death.status, death.mode, death.how, death.output,
             reruns[label], oracles) for label in job.points)]


def _timed(results: Sequence[Result], seconds: float) -> list[Result]:
    """`results` of one job that took `seconds`, each point given an equal share: the points ran
    together, so no point's own time can be told apart."""
    share = max(0.0, seconds) / len(results) if results else 0.0
    return [dataclasses.replace(r, seconds=share) for r in results]
