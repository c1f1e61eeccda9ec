"""python -m harness explore, and a run's --explore: search domains for a failing input."""

from __future__ import annotations

import dataclasses
import shlex
import sys
import time
from typing import Sequence

from harness.cli.options import UsageError
from harness.cli.repro import repro_folder, write_repro
from harness.cli.settings import (
    Settings,
    explore_module,
    rerun_command,
    runner_for,
    say,
    write_outputs,
)
from harness.cli.progress import Progress
from harness.records import CaseInfo


def explore_command(s: Settings, target: str) -> int:
    """python -m harness explore TARGET: one case's search, its reports and its repro."""
    from harness import loader  # noqa: PLC0415
    from harness.process import pool  # noqa: PLC0415
    from harness.records import Report  # noqa: PLC0415
    from harness.report import json_report, junit, text  # noqa: PLC0415

    explore = explore_module()
    pattern = s.patterns[0]
    start = time.monotonic()
    runner = runner_for(s, at_once=1)  # one case, one point at a time: one worker
    try:
        environment, catalogue = runner.start()
        selected = loader.select(catalogue, [pattern])
        if len(selected) != 1:
            raise UsageError(f"explore takes one case; {pattern!r} selects {len(selected)}: "
                             f"{', '.join(c.id for c in selected[:5])}")
        found = explore_case(runner, selected[0], s.domains, s, s.examples, s.check, environment)
    except (loader.LoadError, explore.ExploreError) as e:
        raise UsageError(str(e)) from None
    except pool.PoolError as e:
        sys.stderr.write(f"harness: {e}\n")
        return 1
    except KeyboardInterrupt:
        runner.kill()
        sys.stderr.write("harness: interrupted; nothing was found before it\n")
        return 130
    finally:
        runner.close()
    seconds = time.monotonic() - start
    report = Report(environment=environment, modes=s.modes, results=(),
                    started=time.time() - seconds, seconds=seconds, explore=(found,))
    renders = ((s.json_out, lambda: json_report.render(report, s.every_value)),
               (s.junit_out, lambda: junit.render(report)))
    written = write_outputs([(path, render()) for path, render in renders if path])
    print(text.explored(found))
    return 1 if found.failed or not written else 0


def explore_case(runner, info: CaseInfo, given: Sequence, s: Settings, limit: int, check,
                 environment: dict):
    """Explores one case: its declared domains, with `given` (argument, Domain) pairs over them."""
    from harness.explore import search as explore  # noqa: PLC0415
    from harness.judge.judging import judged  # noqa: PLC0415
    from harness.records import Explored  # noqa: PLC0415
    from harness.jobs import Job  # noqa: PLC0415

    domains = {**dict(info.domains), **dict(given)}
    described = tuple((n, d.describe()) for n, d in domains.items())
    progress = Progress(total=limit)
    tried = [0]

    def run_at(values, repro=None):
        label = explore.label_of(values)
        command, _ = explore_rerun(info, values, s, check)
        job = Job(case_id=info.id, order=info.order, points=(label,), modes=s.modes,
                  options=s.options, strict_xpass=s.strict_xpass, repro=repro,
                  reruns=((label, command),), values=tuple(values))
        return judged(next(iter(runner.run([job], lambda job: None, 1))), {info.id: info},
                      environment)

    def measure(values):
        tried[0] += 1
        progress.started(f"explore {info.id}: example {tried[0]} at {explore.label_of(values)}")
        return run_at(values).results[0]

    key = repr((info.id, info.target, sorted(described), info.arguments, info.order, s.modes,
                s.options, check and (check.target, check.dtype, check.wrt, check.expect)))
    start = time.monotonic()
    try:
        search = explore.search(info, list(domains.items()), measure, examples=limit, seed=s.seed,
                                key=key, strict_xpass=s.strict_xpass)
    finally:
        progress.close()
    seconds = time.monotonic() - start
    if search.result is None:
        return Explored(case=info.id, domains=described, tried=search.tried, limit=limit,
                        seconds=seconds, seed=s.seed, note=search.note,
                        stopped=search.stopped
                        or ("Hypothesis drew no example" if not search.tried else ""))
    command, why = explore_rerun(info, search.values, s, check)
    if s.repro_dir:
        from harness.repro.script import for_points  # noqa: PLC0415

        _write_repro(run_at(search.values, repro=for_points), environment, info, s)
    if check is None and not why:
        why = ("the check command calls the function alone: the case's tolerance, expectations and "
               "oracles are not in it")
        command_kept = command
    else:
        command_kept = "" if why else command
    return Explored(case=info.id, domains=described, tried=search.tried, limit=limit,
                    seconds=seconds, seed=s.seed, found=search.result,
                    inputs=explore.inputs_literal(search.values), check=command_kept,
                    note="; ".join(n for n in (search.note, why) if n), shrinking=search.shrinking)


def _write_repro(done, environment: dict, info: CaseInfo, s: Settings) -> None:
    """The reproduction of the failing example `done` measured, in --repro_dir."""
    r = done.results[0]
    try:
        folder = repro_folder(s.repro_dir, r.case, r.point)
    except ValueError as e:
        say(f"no reproduction for {r.name}: {e}; remove the link")
    else:
        write_repro(folder, r, done.scripts, environment, info, s)


def explore_rerun(info: CaseInfo, values, s: Settings, check) -> tuple[str, str]:
    """(a command that reruns `info` at `values`, "" or why it is not a check command)."""

    from harness.explore import search as explore  # noqa: PLC0415
    from harness.checking import CheckSpec  # noqa: PLC0415

    literal = explore.inputs_literal(values)
    label = explore.label_of(values)
    if check is not None:
        spec = dataclasses.replace(check, inputs=(literal,), domains=())
        return rerun_command(f"check.{check.name}", label, s, spec), ""
    dtypes = {dtype for _, dtype, _ in info.arguments}
    again = shlex.join(["python", "-m", "harness", "explore", info.id,
                        f"--mode={','.join(s.modes)}"]
                       + [f"--case_file={p}" for p in s.case_files]
                       + ([f"--seed={s.seed}"] if s.seed is not None else []))
    if not info.target or len(dtypes) != 1 or not dtypes <= {"float16", "float32", "float64"}:
        return again, (f"{info.id}'s function cannot be named to check (a builder, or arguments of "
                       f"several dtypes); rerun the search: {again}")
    spec = CheckSpec(target=info.target, inputs=(literal,), dtype=dtypes.pop(), order=info.order)
    name = info.target.rsplit(":", 1)[1]
    command = rerun_command(f"check.{name}", label, s, spec)
    return command, ""
