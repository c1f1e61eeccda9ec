"""`python -m harness matrix` and `python -m harness bisect`: the harness run under TensorFlow
builds, each in its own cached environment (harness.matrix.envs).

matrix runs the cases under every build of `--versions` and merges the reports into the matrix
(harness.matrix.outputs); a build that cannot be installed is a column saying why. bisect observes
one target (a case id, or a repro.py) under builds from a good one to a bad one and names the
first that differs (harness.matrix.bisect). The command line reads the flags into a MatrixPlan or
BisectPlan; nothing here reads a flag.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from harness.matrix import bisect, builds, envs, nightly, pins

__all__ = ["BisectPlan", "MatrixPlan", "Observer", "Where", "answer", "resolve", "run_bisect",
           "run_matrix", "stamp_line"]


@dataclasses.dataclass(frozen=True)
class Where:
    """Where environments come from: the cache, the interpreter, the installer and the index."""

    cache_dir: Path
    python: str
    installer: str
    index_url: str


@dataclasses.dataclass(frozen=True)
class MatrixPlan:
    """What matrix does, checked before any install.

    Attributes:
      versions: the builds, as `builds.expand` gives them ("nightly" still unresolved).
      harness_args: the arguments every harness run gets.
      command_line: the matrix command's arguments as the Markdown's stamp shows them: the
        flags that change results, not where the environments are cached or how installed.
    """

    versions: tuple[str, ...]
    where: Where
    out_dir: Path
    harness_args: tuple[str, ...]
    markdown_out: Path
    html_out: Path
    json_out: Path
    command_line: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class BisectPlan:
    """What bisect does, checked before any install.

    Attributes:
      good, bad: the ends: a release, "nightly" or a nightly's version.
      script: a repro.py to run under each build, or None to run the harness with harness_args.
      out_dir: where each build's report and log go; None: a temporary folder, removed after.
      json_out: where the answer goes as JSON (for repro --bisect_json), or None.
    """

    good: str
    bad: str
    where: Where
    harness_args: tuple[str, ...]
    script: Optional[Path] = None
    out_dir: Optional[Path] = None
    json_out: Optional[Path] = None


def say(line: str) -> None:
    """One line of the command's progress on stdout, at once (the runs take minutes)."""
    print(line, flush=True)


def _not_listed(version: str, listed: Sequence[str], index: nightly.Index, python: str) -> str:
    span = (f"its builds for Python {python} here run from {listed[0]} to {listed[-1]}" if listed
            else f"it has none for Python {python} here")
    if version in index.listed(nightly.PACKAGE):
        return (f"tf-nightly {version} has no wheel for Python {python} on this machine on "
                f"{index.url} ({span}); pick another")
    return f"{index.url} has no tf-nightly {version} ({span}); pick one of those"


def _nightly(version: str, index: nightly.Index, python: str) -> envs.Wanted:
    """A nightly's environment: what it installs is read from the index only when it is built,
    so a cached one is reused without the index."""
    def requirements() -> list[str]:
        """tf-nightly==VERSION, its day's keras-nightly and its minor release's tf-keras-nightly
        (nightly.tf_keras_for), once the index is seen to have it."""
        try:
            listed = index.versions(nightly.PACKAGE, python)
        except nightly.IndexReadError as e:
            raise envs.InstallError(version, str(e)) from None
        if version not in listed:
            raise envs.InstallError(version, _not_listed(version, listed, index, python))
        try:
            keras, _ = nightly.keras_for(version, index.versions(nightly.KERAS, python))
        except nightly.IndexReadError:
            keras = None  # tf-nightly's own requirement picks one; the install log says which
        # Keras 2 too: the library's tf_keras cases and its keras mode run under the nightly.
        try:
            tf_keras, _ = nightly.tf_keras_for(version, index.versions(nightly.TF_KERAS, python))
        except nightly.IndexReadError:
            tf_keras = None  # none installed: what needs tf_keras skips, saying so
        return nightly.requirements(version, keras, tf_keras)

    return envs.Wanted(version=version, key=(f"{nightly.PACKAGE}=={version}", nightly.KERAS_RULE),
                       requirements=requirements, index_url=index.url)


def resolve(name: str, index: nightly.Index, python: str,
            log: Callable[[str], None] = say) -> envs.Wanted:
    """The environment a build name asks for: a release with its pins, the newest nightly, or a
    named nightly.

    Raises:
      envs.InstallError: "nightly" and the index cannot be read or has none for `python`.
    """
    if not (name == builds.NIGHTLY or builds.is_nightly(name)):
        return envs.release(name)
    if builds.is_nightly(name):
        return _nightly(name, index, python)
    try:
        listed = index.versions(nightly.PACKAGE, python)
    except nightly.IndexReadError as e:
        raise envs.InstallError(name, str(e)) from None
    if not listed:
        raise envs.InstallError(name, f"{index.url} has no tf-nightly for Python {python} on this "
                                      "machine")
    log(f"nightly is tf-nightly {listed[-1]}, the newest of {len(listed)} on {index.url} for "
        f"Python {python}")
    return _nightly(listed[-1], index, python)


def stamp_line(command_line: Sequence[str]) -> str:
    """The sentence under the Markdown's heading that says which command made it."""
    command = shlex.join(["python", "-m", "harness", *command_line])
    return (f"Generated by `{command}` from a real run under each release; do not edit it by "
            "hand.\n")


def _stamp(markdown: Path, command_line: Sequence[str]) -> None:
    lines = markdown.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1:1] = ["\n", stamp_line(command_line)]
    markdown.write_text("".join(lines), encoding="utf-8")


def _one_version(name: str, plan: MatrixPlan, index: nightly.Index, python: str,
                 reports: list[str], failed: dict[str, str]) -> None:
    """Runs the harness under one build: its report joins `reports`, or why not `failed`."""
    column = name
    try:
        wanted = resolve(name, index, python, log=lambda line: say(f"matrix: {line}"))
        column = builds.column(wanted.version)
        report = plan.out_dir.resolve() / f"{column}.json"
        report.unlink(missing_ok=True)  # a stale report must not stand in for a run that failed
        w = plan.where
        with envs.prepared(wanted, cache_dir=w.cache_dir, python=w.python, installer=w.installer,
                           log=lambda line: say(f"matrix: [{column}] {line}")) as env:
            say(f"matrix: [{column}] environment {env.action} in {env.seconds:.1f} s ({env.path})")
            start = time.monotonic()
            status = envs.run_harness(env, report, args=plan.harness_args,
                                      log_path=plan.out_dir / f"{column}.log",
                                      echo=lambda line: say(f"  [{column}] {line}"))
            say(f"matrix: [{column}] harness exit status {status} in "
                f"{time.monotonic() - start:.1f} s")
    except envs.InstallError as e:
        say(f"matrix: [{column}] not installed: {e.reason}")
        failed[column] = e.reason
        return
    if report.is_file():
        reports.append(str(report))  # exit status 1 is a failing verdict: a result
    else:
        failed[column] = ("installed, but the harness run wrote no report (exit status "
                          f"{status}); see {plan.out_dir / f'{column}.log'}")
        say(f"matrix: [{column}] {failed[column]}")


def run_matrix(plan: MatrixPlan) -> int:
    """Runs the harness under every build of the plan and writes the merged matrix.

    Returns:
      0 when every build gave a report (whatever its verdicts: the matrix shows them), 1 when one
      was not installed or gave none, or the matrix could not be written.
    """
    from harness.matrix import merge, outputs  # noqa: PLC0415

    start = time.monotonic()
    python = envs.python_version(plan.where.python)
    index = nightly.Index(plan.where.index_url)
    say(f"matrix: installer {plan.where.installer}; environments in {plan.where.cache_dir}")
    reports: list[str] = []
    failed: dict[str, str] = {}
    for name in plan.versions:
        _one_version(name, plan, index, python, reports, failed)
    try:
        outputs.main(reports, markdown_out=str(plan.markdown_out), html_out=str(plan.html_out),
                     json_out=str(plan.json_out), failed=failed)
    except merge.MergeError as e:
        sys.stderr.write(f"matrix: cannot merge: {e}\n")
        return 1
    _stamp(plan.markdown_out, plan.command_line)
    say(f"matrix: wrote {plan.markdown_out}, {plan.html_out}, {plan.json_out}")
    say(f"matrix: {len(reports)} of {len(plan.versions)} versions ran, installer "
        f"{plan.where.installer}, {time.monotonic() - start:.1f} s in all")
    return 1 if failed else 0


def _last_line(path: Path) -> str:
    lines = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace")
             .splitlines() if line.strip()] if path.is_file() else []
    return lines[-1] if lines else "no output"


class Observer:
    """Observes one build for the bisect: its environment prepared (from the cache when it is
    there), then the harness's report or the script's ending read."""

    def __init__(self, plan: BisectPlan, index: nightly.Index, python: str,
                 folder: Path) -> None:
        self.plan, self.index, self.python, self.folder = plan, index, python, folder

    def __call__(self, version: str) -> bisect.Observation:
        w = self.plan.where
        column = builds.column(version)
        say(f"bisect: [{version}] preparing its environment")
        try:
            with envs.prepared(resolve(version, self.index, self.python), cache_dir=w.cache_dir,
                               python=w.python, installer=w.installer,
                               log=lambda line: say(f"bisect: [{version}] {line}")) as env:
                say(f"bisect: [{version}] environment {env.action} in {env.seconds:.1f} s")
                seen = (self._script(env, version, column) if self.plan.script
                        else self._harness(env, version, column))
                seen = dataclasses.replace(seen, installed=env.action == "created")
        except envs.InstallError as e:
            seen = bisect.Observation(version=version, failed=f"not installed: {e.reason}")
        say(f"bisect: [{version}] {seen.failed or seen.summary}")
        return seen

    def _harness(self, env: envs.Env, version: str, column: str) -> bisect.Observation:
        report, log = self.folder / f"{column}.json", self.folder / f"{column}.log"
        report.unlink(missing_ok=True)
        status = envs.run_harness(env, report, args=self.plan.harness_args, log_path=log)
        if not report.is_file():
            return bisect.Observation(version=version, failed=(
                f"the harness run wrote no report (exit status {status}): {_last_line(log)}"))
        data = json.loads(report.read_text(encoding="utf-8"))
        found, words = bisect.signature(data)
        environment = data.get("environment", {})
        return bisect.Observation(version=version, signature=found, summary=words,
                                  tensorflow=environment.get("tensorflow", ""),
                                  git=environment.get("tensorflow_git", ""))

    def _script(self, env: envs.Env, version: str, column: str) -> bisect.Observation:
        assert self.plan.script is not None
        ended, tensorflow, git = envs.run_script(env, self.plan.script,
                                                 log_path=self.folder / f"{column}.log",
                                                 timeout=_SCRIPT_SECONDS)
        if not tensorflow:
            return bisect.Observation(version=version, failed=(
                f"TensorFlow did not import: {_last_line(self.folder / f'{column}.log')}"))
        return bisect.Observation(version=version, signature=(ended,),
                                  summary=f"{self.plan.script.name}: {ended}",
                                  tensorflow=tensorflow, git=git)


# A repro.py runs every mode of one point: minutes would be a hang.
_SCRIPT_SECONDS = 600.0


def _chain(plan: BisectPlan, index: nightly.Index, python: str) -> list[str]:
    """Every build from the good end to the bad one: the pin table's releases and the index's
    nightlies for `python` between them; without the index, releases only (said)."""
    ends = []
    for name in (plan.good, plan.bad):
        try:
            ends.append(resolve(name, index, python, log=lambda line: say(f"bisect: {line}"))
                        .version)
        except envs.InstallError as e:
            raise bisect.BisectError(f"--{'good' if name is plan.good else 'bad'} {name}: "
                                     f"{e.reason}") from None
    try:
        nightlies = index.versions(nightly.PACKAGE, python)
    except nightly.IndexReadError as e:
        if any(builds.is_nightly(v) for v in ends):
            raise bisect.BisectError(str(e)) from None
        say(f"bisect: {e}; bisecting the releases only")
        nightlies = []
    return bisect.candidates(ends[0], ends[1], pins.versions(), nightlies)


@contextlib.contextmanager
def _work_folder(out_dir: Optional[Path]) -> Iterator[Path]:
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        yield out_dir.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="harness-bisect-") as folder:
        yield Path(folder)


def _is_release(version: str) -> bool:
    return not builds.is_nightly(version)


def answer(found: bisect.Found, target: str, seconds: float) -> dict:
    """The bisect's answer as JSON data (schema harness.bisect/1), for repro --bisect_json."""
    released = pins.released()

    def build(o: bisect.Observation) -> dict:
        """One end of the answer: the build, its day, GIT_VERSION and result."""
        return {"version": o.version, "tensorflow": o.tensorflow, "git": o.git,
                "date": builds.date_of(o.version, released), "result": o.summary}

    return {"schema": "harness.bisect/1", "target": target, "good": build(found.good),
            "bad": build(found.bad), "compare": bisect.compare_url(found.good, found.bad),
            "n": len(found.chain), "observed": len(found.taken),
            "installed": sum(1 for o in found.taken if o.installed), "seconds": round(seconds, 1),
            "lines": bisect.render(found, released, _is_release)}


def run_bisect(plan: BisectPlan, target: str) -> int:
    """Bisects between the plan's good and bad builds; prints the answer (and writes it to
    json_out).

    Returns:
      0 when the first differing build was found; 1 when the search could not start or go on
      (said on stderr), or the answer could not be written.
    """
    from harness import report as report_io  # noqa: PLC0415

    start = time.monotonic()
    index = nightly.Index(plan.where.index_url)
    try:
        python = envs.python_version(plan.where.python)
        chain = _chain(plan, index, python)
        releases = sum(map(_is_release, chain))
        say(f"bisect: {target}: n = {len(chain)} builds from {chain[0]} to {chain[-1]} "
            f"({releases} release{'s' if releases != 1 else ''}, {len(chain) - releases} "
            f"nightl{'ies' if len(chain) - releases != 1 else 'y'}); at most "
            f"{bisect.limit(len(chain))} observed")
        with _work_folder(plan.out_dir) as folder:
            found = bisect.search(chain, Observer(plan, index, python, folder), _is_release)
    except (bisect.BisectError, ValueError) as e:
        sys.stderr.write(f"bisect: {e}\n")
        return 1
    data = answer(found, target, time.monotonic() - start)
    for line in data["lines"]:
        say(f"bisect: {line}")
    say(f"bisect: {time.monotonic() - start:.0f} s in all")
    if plan.json_out and not report_io.write_each(
            [(str(plan.json_out), lambda: json.dumps(data, indent=1) + "\n")]):
        return 1
    return 0
