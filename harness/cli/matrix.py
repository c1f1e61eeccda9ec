"""python -m harness matrix and python -m harness bisect: the harness under other TensorFlow builds
(harness.matrix.command), their flags read and checked here before any environment is made.

Both take the run flags of the table that name ACROSS (the cases, the modes, the judging, the time
limits) and pass each one given on to every run, paths made absolute, since each run has a folder
of its own; the arguments after `--` go on unchanged.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from absl import flags

from harness.cli.options import (
    ACROSS,
    BISECT_CMD,
    BAD,
    CACHE_DIR,
    CASE_FILES,
    FLAG_TABLE,
    GOOD,
    HTML_OUT,
    INDEX_URL,
    INSTALLER,
    JSON_OUT,
    MARKDOWN_OUT,
    OUT_DIR,
    PYTHON,
    RECORDED,
    RUN_CMD,
    VERSIONS,
    UsageError,
)
from harness.cli.settings import distinct_outputs, recorded_folder

if TYPE_CHECKING:  # the command line imports the matrix's modules only when a command runs
    from harness.matrix import command

__all__ = ["bisect_command", "matrix_command"]

# The flags of the table a matrix or bisect takes that are its own, not a run's.
_OWN = ("versions", "out_dir", "cache_dir", "python", "installer", "index_url", "good", "bad",
        "json_out", "markdown_out", "html_out")


def _passthrough(args: Sequence[str], what: str) -> list[str]:
    """The arguments after `--`, refused when the first is not a flag: a version or a case id
    written without its flag would otherwise reach every run as a stray argument."""
    if args and not args[0].startswith("-"):
        raise UsageError(f"{what} got the argument {args[0]!r}; give builds with --versions, and "
                         "harness flags after --, e.g. -- --mode full")
    return list(args)


def _shown(passthrough: Sequence[str]) -> list[str]:
    """The matrix command as its stamp shows it: the builds, the outputs and the run flags as
    given; where the environments are cached and how they are installed change no result."""
    hidden = ("cache_dir", "python", "installer", "index_url")
    first = ("versions", "out_dir", "markdown_out", "html_out", "json_out")
    found = ["matrix"]
    for name in (*first, *(n for n in FLAG_TABLE if n not in first)):
        flag = flags.FLAGS[name]
        if "matrix" in FLAG_TABLE[name][1] and flag.present and name not in hidden:
            found += flag.serialize().splitlines()
    return found + (["--", *passthrough] if passthrough else [])


def _run_args(passthrough: Sequence[str]) -> list[str]:
    """The run flags given (every one the table lets matrix and bisect take, their own aside),
    as each run gets them, then the arguments after `--`."""
    found: list[str] = []
    for name, (_, commands) in FLAG_TABLE.items():
        flag = flags.FLAGS[name]
        if name in _OWN or not set(ACROSS) & set(commands) or not flag.present:
            continue
        if name == CASE_FILES.name:
            for path in flag.value:
                if not Path(path).is_file():
                    raise UsageError(f"--case_file {path} does not exist; give the Python file "
                                     "that defines CASES")
            found += [f"--case_file={os.path.abspath(path)}" for path in flag.value]
        elif name == RECORDED.name:
            found.append(f"--recorded={recorded_folder(RUN_CMD, [])}")
        else:
            found.append(flag.serialize())
    return found + list(passthrough)


def _where() -> command.Where:
    """Where the environments come from, checked: the cache folder, the interpreter (run once),
    the installer and the index."""
    from harness.matrix import command, envs, nightly  # noqa: PLC0415

    python = PYTHON.value or sys.executable
    try:
        installer = envs.pick_installer(INSTALLER.value)
        envs.python_version(python)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return command.Where(cache_dir=Path(os.path.expanduser(CACHE_DIR.value)), python=python,
                         installer=installer,
                         index_url=(INDEX_URL.value or nightly.default_index_url()).rstrip("/"))


def matrix_command(args: Sequence[str]) -> int:
    """python -m harness matrix --versions ... --out_dir DIR [-- HARNESS_ARGS]."""
    from harness.matrix import builds, command, pins  # noqa: PLC0415

    if not VERSIONS.value:
        raise UsageError("matrix needs --versions, e.g. --versions 2.16.2,2.21.0 (or all, a range "
                         "such as 2.16..2.21, nightly)")
    if not OUT_DIR.value:
        raise UsageError("matrix needs --out_dir DIR, the folder for each build's report and the "
                         "merged matrix")
    try:
        versions = builds.expand(VERSIONS.value, pins.versions())
    except builds.BuildsError as e:
        raise UsageError(str(e)) from None
    passthrough = _passthrough(args, "matrix")
    harness_args = _run_args(passthrough)
    out_dir = Path(OUT_DIR.value)
    outputs = {name: Path(flag.value) if flag.value else out_dir / f"matrix.{suffix}"
               for name, flag, suffix in (("--markdown_out", MARKDOWN_OUT, "md"),
                                          ("--html_out", HTML_OUT, "html"),
                                          ("--json_out", JSON_OUT, "json"))}
    distinct_outputs([(name, str(path)) for name, path in outputs.items()])
    plan = command.MatrixPlan(
        versions=tuple(versions), where=_where(), out_dir=out_dir,
        harness_args=tuple(harness_args), markdown_out=outputs["--markdown_out"],
        html_out=outputs["--html_out"], json_out=outputs["--json_out"],
        command_line=tuple(_shown(passthrough)))
    _writable(out_dir, plan.markdown_out, plan.html_out, plan.json_out)
    return command.run_matrix(plan)


def _writable(out_dir: Path, *paths: Path) -> None:
    from harness import report as report_io  # noqa: PLC0415

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot make --out_dir {out_dir}: {e.strerror or e}; choose another "
                         "folder") from None
    for path in paths:
        try:
            report_io.check_writable(str(path))
        except ValueError as e:
            raise UsageError(str(e)) from None


def _end(name: str, value: str) -> str:
    """A --good or --bad build, checked: one release of the pin table, nightly or a nightly."""
    from harness.matrix import builds, pins  # noqa: PLC0415

    if not value:
        raise UsageError(f"bisect needs --{name}, e.g. --good 2.21.0 --bad nightly")
    if value == "all" or ".." in value or "," in value:
        raise UsageError(f"--{name} {value}: give one build, a release (2.21.0), nightly or a "
                         "tf-nightly build (2.22.0.dev20260601)")
    try:
        builds.expand(value, pins.versions())
    except builds.BuildsError as e:
        raise UsageError(f"--{name}: {e}") from None
    return value


def check_cases(harness_args: Sequence[str]) -> None:
    """Refuses a case id or case file that selects no case, before any environment is made: the
    harness here lists what the runs would select (one TensorFlow import, seconds, against the
    minutes an environment takes)."""
    from harness.matrix import envs  # noqa: PLC0415

    with envs.harness_environ() as environ:  # this harness, from a checkout or installed
        done = subprocess.run([sys.executable, "-m", "harness", "--list", *harness_args],
                              capture_output=True, text=True, check=False, env=environ)
    if done.returncode == 2:
        lines = done.stderr.strip().splitlines() or ["it selects no case"]
        raise UsageError(lines[-1].removeprefix("harness: error: "))


def _target(args: Sequence[str]) -> tuple[str, Optional[Path], list[str]]:
    """(the target in words, the repro.py to run or None, the arguments after `--`)."""
    target = args[0] if args and not args[0].startswith("-") else None
    passthrough = _passthrough(args[1:] if target else args, "bisect")
    if target and target.endswith(".py"):
        script = Path(target)
        if not script.is_file():
            raise UsageError(f"{target} does not exist; give a repro.py that python -m harness "
                             "repro wrote, or a case id")
        given = [f"--{n}" for n, (_, commands) in FLAG_TABLE.items() if BISECT_CMD in commands
                 and n not in _OWN and flags.FLAGS[n].present]
        if given or passthrough:
            raise UsageError(f"a repro.py runs as it is: drop {', '.join(given or passthrough)}")
        return str(script), script, []
    if not target and not (CASE_FILES.value or RECORDED.value):
        raise UsageError("give the case id to bisect (python -m harness bisect CASE_ID --good V "
                         "--bad V), a repro.py, or --case_file/--recorded for all their cases")
    return target or "the selected cases", None, ([f"--cases={target}"] if target else []) + \
        passthrough


def bisect_command(args: Sequence[str]) -> int:
    """python -m harness bisect CASE_ID|repro.py --good V --bad V [-- HARNESS_ARGS]."""
    from harness.matrix import builds, command  # noqa: PLC0415

    good, bad = _end("good", GOOD.value), _end("bad", BAD.value)
    if good == builds.NIGHTLY:
        raise UsageError("--good nightly: nothing lies after the newest nightly; give it as --bad")
    if good == bad or (bad != builds.NIGHTLY
                       and builds.order_key(good) >= builds.order_key(bad)):
        raise UsageError(f"--good {good} does not lie before --bad {bad}; give the older build as "
                         "--good (a fix is bisected as a change too)")
    label, script, rest = _target(args)
    harness_args = [] if script else _run_args(rest)
    out_dir = Path(OUT_DIR.value) if OUT_DIR.value else None
    if out_dir is not None:
        _writable(out_dir)
    if JSON_OUT.value:
        distinct_outputs([("--json_out", JSON_OUT.value)])
    where = _where()
    if script is None:
        check_cases(harness_args)
    plan = command.BisectPlan(good=good, bad=bad, where=where, harness_args=tuple(harness_args),
                              script=script, out_dir=out_dir,
                              json_out=Path(JSON_OUT.value) if JSON_OUT.value else None)
    return command.run_bisect(plan, label)
