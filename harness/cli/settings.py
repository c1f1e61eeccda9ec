"""The command's Settings, read and checked from the flags once before any case runs, and the rerun
command a result prints.

This is the one module after the flag table that reads a flag: each command's module is given its
settings and reads none, and depends on this module, never the reverse.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence, Union

from absl import flags

from harness import mode_names
from harness import report as _report
from harness.cli.help import COMMANDS
from harness.cli.options import (
    BISECT_JSON,
    CASE_FILES,
    CASES,
    CASES_PER_EXTRA_WORKER,
    CHECK_CMD,
    DOMAIN,
    DTYPE,
    EXAMPLES,
    EXPECT,
    EXPLORE,
    EXPLORE_CMD,
    FLAG_TABLE,
    FULL,
    HTML_OUT,
    INPROCESS,
    INPUTS,
    JOBS,
    JSON_OUT,
    JSON_VALUES,
    JSONL_OUT,
    JUNIT_OUT,
    LIBRARY,
    LIST,
    LIST_CMD,
    MARKDOWN_OUT,
    MATRIX_JSON,
    MINIMIZE,
    MINIMIZE_SECONDS,
    MERGE_CMD,
    MODE,
    MODE_MEMORY_MIB,
    NUM_SHARDS,
    NUMERIC,
    NUMERIC_FULL,
    ORDER,
    OUT,
    POINT,
    RECORD_CMD,
    ACCEPT,
    EXPECTATIONS,
    TRUST_RECORDING,
    RECORD_CHECK,
    RECORD_EAGER,
    RECORD_INCLUDE,
    RECORD_POINTS,
    RECORDED,
    REPEAT,
    REPLAY_CMD,
    REPRO_CMD,
    REPRO_DIR,
    RUN_CMD,
    SEED,
    SHARD_INDEX,
    STRICT_NONE,
    STRICT_SURROGATE,
    STRICT_XPASS,
    SYMMETRIC,
    TIMEOUT,
    UNCONNECTED,
    UPSTREAM,
    WORKERS_AT_ONCE,
    WRT,
    UsageError,
)
from harness.records import CaseInfo, RunOptions

if TYPE_CHECKING:  # for the annotations only: the command line imports neither before it needs them
    from harness.checking import CheckSpec
    from harness.process.worker import Origins


def check_spec(target: str, domains: Sequence = ()) -> CheckSpec:
    from harness.checking import CheckSpec, InputError, parse_expect, parse_inputs  # noqa: PLC0415

    path, colon, name = target.rpartition(":")
    if not colon or not path.endswith(".py") or not name.isidentifier():
        raise UsageError(f"{target!r} is not PATH.py:NAME; e.g. tests/data/my_grads.py:log1pexp")
    try:
        if not domains:
            parse_inputs(INPUTS.value, DTYPE.value)  # refuse bad literals before any case runs
        for text in EXPECT.value:
            parse_expect(text)
    except InputError as e:
        raise UsageError(str(e)) from None
    if not Path(path).is_file():  # said now, not by a worker after TensorFlow's import
        what = "is a directory" if Path(path).is_dir() else "does not exist"
        raise UsageError(f"{path} {what}; give the Python file that defines {name}")
    return CheckSpec(target=target, inputs=tuple(INPUTS.value), dtype=DTYPE.value,
                     order=ORDER.value, wrt=tuple(WRT.value or ()), expect=tuple(EXPECT.value),
                     symmetric=tuple(SYMMETRIC.value or ()), domains=tuple(domains))


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything a command does, read from the flags once (settings_for), before any case runs.

    The steps after it read this record, never a flag: what runs, how it is judged (`options`),
    where reports and reproductions go, and what a rerun command must carry.
    """

    command: str
    modes: tuple[str, ...]
    options: RunOptions
    strict_xpass: bool
    check: Optional[CheckSpec]  # for a PATH.py:NAME target, else None
    patterns: Optional[tuple[str, ...]]
    origins: Origins  # where the cases come from
    shard: tuple[int, int]
    case_files: tuple[str, ...]
    library: Optional[bool]  # as given: a rerun command carries --library only when it was
    jobs: int
    timeout: float
    inprocess: bool
    list_only: bool
    json_out: Optional[str]
    junit_out: Optional[str]
    jsonl_out: Optional[str]  # the stream's path: --jsonl_out, else beside --json_out
    jsonl_named: bool  # --jsonl_out gave the stream's path (else it is beside --json_out)
    repro_dir: Optional[str]
    out: Optional[str]
    full: bool
    minimize: bool
    minimize_seconds: float
    # --matrix_json's contents
    matrix: Optional[dict] = dataclasses.field(default=None, compare=False)
    # repro --bisect_json's contents (harness.bisect/1)
    bisect: Optional[dict] = dataclasses.field(default=None, compare=False)
    explore: int = 0  # --explore N
    examples: int = 0  # explore --examples
    seed: Optional[int] = None
    domains: tuple = ()  # explore --domain: (argument, Domain) pairs
    recorded: Optional[str] = None  # replay DIR, or repro --recorded DIR: the recorded folder
    accept_into: Optional[str] = None  # replay --accept: the expectations file it writes
    # --mode_memory_mib: what one mode may add to its worker
    mode_memory_mib: float = MODE_MEMORY_MIB.default
    every_value: bool = False  # --json_values=full: the JSON report writes each value in full


@dataclasses.dataclass(frozen=True)
class MergeSettings:
    """What merge does, read from the flags and checked (settings_for): the reports it merges and
    the outputs it writes."""

    paths: tuple[str, ...]
    markdown_out: Optional[str]
    html_out: Optional[str]
    json_out: Optional[str]


@dataclasses.dataclass(frozen=True)
class RecordSettings:
    """What record does, read from the flags (settings_for): the folder, the command it runs with
    the recorder, and how much the recorder keeps."""

    folder: str
    command: tuple[str, ...]
    points: int  # --record_points
    eager: bool  # --record_eager
    include: tuple[str, ...] = ()  # --record_include
    check: bool = False  # --check: replay once the command has ended


def settings_for(command: str, args: Sequence[str]) -> Union[Settings, MergeSettings,
                                                             RecordSettings]:
    """Checks and reads every flag `command` takes; a mistake is a UsageError, before any case runs.
    merge and record get records of their own, every command that runs cases a Settings."""
    if command == MERGE_CMD:
        return merge_settings(args)
    if command == RECORD_CMD:
        return RecordSettings(folder=args[0], command=tuple(args[1:]), points=RECORD_POINTS.value,
                              eager=RECORD_EAGER.value, include=tuple(RECORD_INCLUDE.value),
                              check=RECORD_CHECK.value)
    return run_settings(command, args)


def merge_settings(paths: Sequence[str]) -> MergeSettings:
    """merge's reports and outputs, refused before anything is read when they cannot work."""
    if not paths:
        raise UsageError(
            "give the JSON reports to merge: python -m harness merge A.json B.json ..."
        )
    if not (MARKDOWN_OUT.value or HTML_OUT.value or JSON_OUT.value):
        raise UsageError("give at least one of --markdown_out, --html_out, --json_out")
    distinct_outputs([(f"--{f.name}", f.value) for f in (MARKDOWN_OUT, HTML_OUT, JSON_OUT)],
                     inputs=paths)
    return MergeSettings(paths=tuple(paths), markdown_out=MARKDOWN_OUT.value,
                         html_out=HTML_OUT.value, json_out=JSON_OUT.value)


def run_settings(command: str, args: Sequence[str]) -> Settings:
    """The Settings of a command that runs cases (run, check, repro, explore, replay, and list: a
    run with --list)."""
    from harness.process.worker import Origins  # noqa: PLC0415

    listing, command = command == LIST_CMD, RUN_CMD if command == LIST_CMD else command

    if command == REPRO_CMD and not OUT.value:
        raise UsageError("repro needs --out DIR, the directory for repro.py and ISSUE.md")
    if command == EXPLORE_CMD or EXPLORE.value:
        explore_module()  # Hypothesis missing: said before any case runs
    domains = explore_domains(args[0]) if command == EXPLORE_CMD else ()
    modes = mode_names.parse_modes(MODE.value)
    check_outputs()
    matrix = check_repro_flags(command)
    accept_into = accept_target(command)  # before the recording is read and said
    recorded = recorded_folder(command, args)
    target = args[0] if args and command != REPLAY_CMD else None
    bisect = read_bisect(BISECT_JSON.value, target) if BISECT_JSON.value else None
    check = (check_spec(target, domains) if target
             and (command == CHECK_CMD or ".py:" in target) else None)
    if command == EXPLORE_CMD:
        patterns = [f"check.{check.name}" if check else target]
        default_library = not (CASE_FILES.value or check)
    else:
        patterns = CASES.value
        if command == REPRO_CMD:
            chosen = f"check.{check.name}" if check else target
            patterns = ([f"{chosen}[{POINT.value}]"] if POINT.value
                        else ([target] if check is None else None))
        # Case files and check targets replace the library, unless a repro names a case id.
        default_library = ((command == REPRO_CMD and check is None)
                           or not (CASE_FILES.value or check))
    default_library = default_library and recorded is None  # a recording replaces the library too
    with_library = LIBRARY.value if LIBRARY.value is not None else default_library
    if not with_library and not CASE_FILES.value and check is None and recorded is None:
        raise UsageError("no cases: give --case_file, or drop --nolibrary")
    origins = Origins(library=with_library, case_files=tuple(CASE_FILES.value), check=check,
                      themes=themes(patterns),
                      recorded=(recorded, ORDER.value,
                                tuple(EXPECT.value) if command == REPLAY_CMD else (),
                                expectations_file(command))
                      if recorded else None)
    options = RunOptions(unconnected_zero=UNCONNECTED.value == "zero", numeric=NUMERIC.value,
                         numeric_full=NUMERIC_FULL.value, repeat=REPEAT.value,
                         upstream=UPSTREAM.value, strict_none=STRICT_NONE.value,
                         strict_surrogate=STRICT_SURROGATE.value)
    return Settings(
        command=command, modes=modes, options=options, strict_xpass=STRICT_XPASS.value, check=check,
        patterns=tuple(patterns) if patterns else None, origins=origins,
        shard=(0, 1) if command == EXPLORE_CMD else shard(), case_files=tuple(CASE_FILES.value),
        library=LIBRARY.value, jobs=JOBS.value, timeout=TIMEOUT.value, inprocess=INPROCESS.value,
        list_only=LIST.value or listing, json_out=JSON_OUT.value, junit_out=JUNIT_OUT.value,
        jsonl_out=jsonl_path(), jsonl_named=bool(JSONL_OUT.value), repro_dir=REPRO_DIR.value,
        out=OUT.value, full=FULL.value, minimize=MINIMIZE.value,
        minimize_seconds=MINIMIZE_SECONDS.value, matrix=matrix, bisect=bisect,
        explore=EXPLORE.value, mode_memory_mib=MODE_MEMORY_MIB.value,
        examples=EXAMPLES.value, seed=SEED.value, domains=tuple(domains), recorded=recorded,
        accept_into=accept_into, every_value=JSON_VALUES.value == "full")


def expectations_file(command: str) -> str:
    """replay's reviewed expectations file (--expectations, else the one in this folder), read
    once here so that a malformed one is a usage error before any case runs; "" for none."""
    from harness.record import expectations  # noqa: PLC0415 - no TensorFlow

    if command != REPLAY_CMD or EXPECTATIONS.value == "" or ACCEPT.value:
        return ""  # under --accept every deviation is seen as it is, and the file written from it
    path = Path(EXPECTATIONS.value) if EXPECTATIONS.value else expectations.find(Path.cwd())
    if path is None:
        return ""
    try:
        expectations.load(path)
    except expectations.ExpectationsError as e:
        raise UsageError(str(e)) from None
    return str(path.resolve())


def accept_target(command: str) -> Optional[str]:
    """replay --accept's expectations file: --expectations, else the one in this folder (or where
    its pyproject.toml says), else FILE_NAME here; read once here, so that a malformed one is a
    usage error first."""
    from harness.record import expectations  # noqa: PLC0415 - no TensorFlow

    if not ACCEPT.value or command != REPLAY_CMD:  # another command refuses it by the table
        return None
    if EXPECTATIONS.value == "":
        raise UsageError("--accept writes the expectations file, and --expectations='' names "
                         "none: drop --expectations='' or name the file")
    path = (Path(EXPECTATIONS.value) if EXPECTATIONS.value
            else expectations.find(Path.cwd()) or Path.cwd() / expectations.FILE_NAME)
    if path.is_file():
        try:
            expectations.load(path)
        except expectations.ExpectationsError as e:
            raise UsageError(str(e)) from None
    return str(path.resolve())


def recorded_folder(command: str, args: Sequence[str]) -> Optional[str]:
    """replay's DIR (or repro's --recorded), checked to hold a recording, before any case runs."""
    # --recorded: a run (the matrix's), or repro
    folder = args[0] if command == REPLAY_CMD else RECORDED.value
    if not folder:
        return None
    from harness.checking import InputError, parse_expect  # noqa: PLC0415
    from harness.record import store  # noqa: PLC0415

    if TRUST_RECORDING.value:  # its workers read it too: they are told by the environment
        os.environ[store.ENV_TRUST] = "1"
    try:
        data = store.read(folder)
        for text in EXPECT.value if command == REPLAY_CMD else ():
            parse_expect(text)
    except (store.RecordError, InputError) as e:
        raise UsageError(str(e)) from None
    session, sessions = store.session_folder(folder)
    if not any(f.get("points") for f in data["functions"]):
        tests = sum(s.get("tests", 0) for s in data["sessions"])
        called = sum(1 for f in data["functions"] if f.get("calls"))
        why = (
            f"{called} custom-gradient function{'s were' if called != 1 else ' was'} called, "
            "but no point was kept (the recording's limits: its last line says what was dropped)"
            if called
            else (
                f"its {tests} test{'s' if tests != 1 else ''} called no custom-gradient function "
                "through tf.custom_gradient, tf.compat.v1 or tf.compat.v2's, "
                "tensorflow.python.ops.custom_gradient's or keras.ops.custom_gradient"
            )
        )
        raise UsageError(f"{session} holds no recorded call: {why}; nothing to replay")
    if command == REPLAY_CMD:
        which = f" (the latest of {sessions} sessions in {folder})" if sessions > 1 else ""
        say(f"replaying {session}{which}: {store.ending(data)}")
    return os.path.abspath(session)


def rerun_command(case_id: str, point: str, s: Settings, check=None,
                  inputs: Optional[Sequence[str]] = None) -> str:
    """The command line that reruns one case at one point alone with the settings `s`; `check`
    the check spec it reruns (None: a case id), whose `inputs` (default: all of them) are the
    point's --inputs."""
    mode = "all" if tuple(s.modes) == mode_names.CORE_MODES else ",".join(s.modes)
    parts = ["python", "-m", "harness"] + (["replay", s.recorded] if s.recorded else [])
    if s.recorded:  # a recorded case reruns through replay, whichever command ran it
        parts += ([f"--order={s.origins.recorded[1]}"] if s.origins.recorded[1] != 1 else [])
        parts += [f"--expect={text}" for text in s.origins.recorded[2]]
        parts += [f"--expectations={s.origins.recorded[3]}"] if s.origins.recorded[3] else []
    if check is not None:
        parts += ["check",
                  check.target] + [f"--inputs={i}"
                                   for i in (check.inputs if inputs is None else inputs)]
        parts += [f"--order={check.order}", f"--dtype={check.dtype}"]
        if check.wrt:
            parts.append(f"--wrt={','.join(check.wrt)}")
        parts += [f"--expect={text}" for text in check.expect]
        if check.symmetric:
            parts.append(f"--symmetric={','.join(check.symmetric)}")
    parts.append(f"--mode={mode}")
    if check is None:
        parts.append(f"--cases={case_id}[{point}]")
    parts += [f"--case_file={path}" for path in s.case_files]
    if s.library and s.case_files:
        parts.append("--library")
    if s.options.unconnected_zero:
        parts.append("--unconnected_gradients=zero")
    if s.strict_xpass:
        parts.append("--strict_xpass")
    if not s.options.numeric:
        parts.append("--nonumeric")
    if not s.options.upstream:
        parts.append("--noupstream")
    if s.options.numeric_full:
        parts.append("--numeric_full")
    if s.options.strict_none:
        parts.append("--strict_none")
    if s.options.strict_surrogate:
        parts.append("--strict_surrogate")
    if s.options.repeat != 1:
        parts.append(f"--repeat={s.options.repeat}")
    if s.mode_memory_mib != MODE_MEMORY_MIB.default:  # a budget's stop changes the verdict
        parts.append(f"--mode_memory_mib={s.mode_memory_mib:g}")
    return shlex.join(parts)


def jsonl_path() -> Optional[str]:
    if JSONL_OUT.value:
        return JSONL_OUT.value
    if JSON_OUT.value:
        return str(Path(JSON_OUT.value).with_suffix(".jsonl"))
    return None


def split_command(argv: Sequence[str]) -> tuple[str, list[str]]:
    """(the command, its arguments) from the arguments absl left; `run` and no command are one run,
    and `list` is a run with --list (settings_for makes it one)."""
    if len(argv) < 2:
        return RUN_CMD, []
    command, args = argv[1], list(argv[2:])
    if command == LIST_CMD:
        if args:
            raise UsageError(f"list takes no arguments, got {' '.join(args)}; select cases with "
                             "--cases")
        return LIST_CMD, []
    if command not in COMMANDS:
        raise UsageError(f"unknown command {command!r}; commands: {', '.join(COMMANDS)}, list "
                         "(select cases with --cases)")
    if command == RUN_CMD and args:
        raise UsageError(f"run takes no arguments, got {' '.join(args)}; select cases with --cases")
    if command == RECORD_CMD and (not args or len(args) < 2):
        raise UsageError("record takes a folder and the command to run: python -m harness record "
                         "DIR -- CMD ...")
    if command in (CHECK_CMD, REPRO_CMD, EXPLORE_CMD, REPLAY_CMD) and len(args) != 1:
        raise UsageError(f"{command} takes one target, got {len(args)}: {' '.join(args) or 'none'}")
    return command, args


def and_list(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def refuse_other_flags(command: str, args: Sequence[str]) -> None:
    """Refuses a flag given to a command that does not take it (where it would do nothing), naming
    the commands it belongs to."""
    command = RUN_CMD if command == LIST_CMD else command  # list takes what a run takes
    if command == RUN_CMD or (command in (REPRO_CMD, EXPLORE_CMD) and ".py:" not in args[0]):
        given = [f"--{f.name}" for f in (WRT, EXPECT, SYMMETRIC) if flags.FLAGS[f.name].present]
        if given:  # more than "not here": what says the same for a case
            raise UsageError(f"{', '.join(given)} describe the function of check PATH.py:NAME; a "
                             "case file says the same with Case(wrt=..., expectations=..., "
                             "symmetric=...)")
    belong: dict[tuple[str, ...], list[str]] = {}
    for name, (_, commands) in FLAG_TABLE.items():
        if command not in commands and flags.FLAGS[name].present:
            belong.setdefault(commands, []).append(f"--{name}")
    if not belong:
        return
    one = sum(len(given) for given in belong.values()) == 1
    parts = [f"{', '.join(given)} {'is a flag' if len(given) == 1 else 'are flags'} of python -m "
             f"harness {and_list(commands)}" for commands, given in belong.items()]
    here = "a plain run" if command == RUN_CMD else command
    raise UsageError(f"{'; '.join(parts)}, not of {here}; give the command "
                     f"{'it belongs' if one else 'they belong'} to, or drop "
                     f"{'it' if one else 'them'}")


def distinct_outputs(outputs: Sequence[tuple[str, Optional[str]]],
                     inputs: Sequence[str] = ()) -> None:
    """Refuses two outputs, or an output and an input, that are one file (compared resolved)."""
    seen = {os.path.realpath(path): f"input report {path}" for path in inputs}
    for what, path in outputs:
        if not path:
            continue
        real = os.path.realpath(path)
        if real in seen:
            raise UsageError(f"{seen[real]} and {what} are the same file {path}; give each its own "
                             "path")
        seen[real] = what


def check_outputs() -> None:
    stream = ("--jsonl_out" if JSONL_OUT.value
              else "the JSON Lines stream (--json_out with the suffix .jsonl)")
    distinct_outputs(
        [("--json_out", JSON_OUT.value), ("--junit_out", JUNIT_OUT.value), (stream, jsonl_path())]
    )
    if JSON_OUT.value and not JSONL_OUT.value:  # the flag validators checked the others
        try:
            _report.check_writable(jsonl_path())
        except ValueError as e:
            raise UsageError(f"{stream}: {e}, or give --jsonl_out") from None


def write_outputs(outputs: Sequence[tuple[str, str]]) -> bool:
    """Writes each (path, text); a failure is one line on stderr and the rest are still written.

    Returns:
      Whether every one was written.
    """
    return _report.write_each(outputs, wrote=lambda path: say(f"wrote {path}"))


def say(text: str) -> None:
    """One line of the harness's own on stderr: `harness: TEXT`, no log record's time or thread."""
    sys.stderr.write(f"harness: {text}\n")
    sys.stderr.flush()


def themes(patterns: Optional[Sequence[str]]) -> Optional[tuple[str, ...]]:
    """Library modules the patterns can select from; None when any could match."""
    if not patterns:
        return None
    themes = set()
    for pattern in patterns:
        theme = pattern.split("[")[0].split(".")[0]
        if not theme or any(c in theme for c in "*?[]"):
            return None
        themes.add(theme)
    return tuple(sorted(themes))


# TensorFlow is not a requirement of the harness (setup.cfg says why): a run says so first.
NO_TENSORFLOW = ("TensorFlow is not installed in this Python environment: install it beside the "
                 "harness (pip install tensorflow, or tf-nightly), or install the harness with its "
                 "tensorflow extra")


def runner_for(s: Settings, at_once: Optional[int] = None):
    """The runner of `s`'s cases: the worker pool, starting `at_once` workers (by default
    `workers_at_once(s.jobs)`) before the cases are known; or this process, with --inprocess."""
    from harness.process import head_start  # noqa: PLC0415 - no TensorFlow unless in-process
    from harness.process import pool  # noqa: PLC0415 - no TensorFlow unless in-process

    if importlib.util.find_spec("tensorflow") is None:
        raise UsageError(NO_TENSORFLOW)
    if s.inprocess:
        # a --flagfile said --inprocess: the worker started ahead is not needed
        head_start.discard()
        return pool.InProcess(s.origins)
    return pool.WorkerPool(s.timeout, s.origins,
                           workers_at_once(s.jobs) if at_once is None else at_once,
                           memory_mib=s.mode_memory_mib)


def workers_at_once(jobs: int) -> int:
    """How many workers start before the cases are known: the first loads them, and with two
    cores or more a second imports TensorFlow beside it instead of after it (WORKERS_AT_ONCE; no
    more than --jobs asks for). The variable HARNESS_WORKERS_AT_ONCE sets another most: a test
    suite that runs the harness hundreds of times beside its other tests sets 1, since there a
    worker started for a run that needs one only takes a core from another test."""
    text = os.environ.get("HARNESS_WORKERS_AT_ONCE", "")
    most = int(text) if text.isdigit() and int(text) > 0 else WORKERS_AT_ONCE
    return max(1, min(os.cpu_count() or 1, most, jobs or most))


def pool_size(cases: int, jobs: int, started: int = 1) -> int:
    """The workers that run `cases` cases: --jobs, else one more per CASES_PER_EXTRA_WORKER
    cases up to the cores, and never fewer than the `started` ones, whose TensorFlow import is
    already paid (the pool ends any beyond the number of cases)."""
    if jobs:
        return jobs
    return max(started, min(os.cpu_count() or 1, 1 + (cases - 1) // CASES_PER_EXTRA_WORKER))


def shard() -> tuple[int, int]:
    """(index, count) from the flags, else from the variables test runners set."""
    def number(flag, variable: str, default: int) -> int:
        if flag.value is not None:
            return flag.value
        text = os.environ.get(variable, "")
        if not text:
            return default
        if not text.isdigit():
            raise UsageError(
                f"${variable}={text!r} is not a number; unset it or give --{flag.name}"
            )
        return int(text)

    index, count = (number(SHARD_INDEX, "TEST_SHARD_INDEX", 0),
                    number(NUM_SHARDS, "TEST_TOTAL_SHARDS", 1))
    if count < 1 or index >= count:
        raise UsageError(f"shard index {index} is not below the number of shards {count}; "
                         "give --shard_index from 0 to --num_shards - 1")
    if os.environ.get("TEST_SHARD_STATUS_FILE") and count > 1:
        # tells the test runner sharding is supported
        Path(os.environ["TEST_SHARD_STATUS_FILE"]).touch()
    return index, count


def explore_domains(target: str) -> list:
    """explore's --domain flags, parsed and checked against the target."""
    explore = explore_module()
    try:
        domains = [explore.parse_domain(t) for t in DOMAIN.value]
    except explore.ExploreError as e:
        raise UsageError(str(e)) from None
    names = [n for n, _ in domains]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--domain gives {twice[0]!r} twice; give one domain per argument")
    if ".py:" in target:
        if not domains:
            raise UsageError(f"give one --domain per argument of {target}, e.g. --domain 'x=[-100, "
                             "100]'")
        if DTYPE.value not in ("float16", "float32", "float64"):
            raise UsageError(f"--dtype={DTYPE.value!r}: explore draws float16, float32 or float64")
        # Drawable, before any worker starts: every argument is --dtype, of its domain's first shape
        # or a scalar, as the case the worker makes of the function (harness.checking).
        name = target.rpartition(":")[2]
        info = CaseInfo(id=f"check.{name}", description="", source="", order=ORDER.value, points=(),
                        arguments=tuple((n, DTYPE.value, d.shape[0] if d.shape else ())
                                        for n, d in domains),
                        domains=tuple(domains))
        try:
            explore.validate_domains(info, domains)
        except explore.ExploreError as e:
            raise UsageError(str(e)) from None
    return domains


def explore_module():
    """harness.explore.search, once Hypothesis is there to search with; a UsageError saying what
    to install when it is not."""
    from harness.explore import search as explore  # noqa: PLC0415

    try:
        explore.require()
    except explore.ExploreError as e:
        raise UsageError(str(e)) from None
    return explore


def check_repro_flags(command: str) -> Optional[dict]:
    """Refuses reproduction flags that cannot work, before any case runs; returns the
    --matrix_json matrix, if given."""
    matrix = read_matrix(MATRIX_JSON.value) if MATRIX_JSON.value else None
    if MINIMIZE.value:
        from harness.repro import minimize  # noqa: PLC0415

        if FULL.value:
            raise UsageError("--minimize shrinks the short script; drop --full")
        if command != REPRO_CMD and not REPRO_DIR.value:
            raise UsageError("--minimize shrinks the scripts --repro_dir writes; give --repro_dir "
                             "DIR")
        try:
            minimize.require()
        except minimize.MissingReducer as e:
            raise UsageError(str(e)) from None
    return matrix


def _json_of(flag: str, path: str, made_by: str):
    """The JSON in `path`, given as --`flag`; a usage error naming `made_by` (the command that
    writes such a file) where it cannot be read."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UsageError(f"--{flag} {path}: cannot read it as JSON ({e}); give the file "
                         f"{made_by} wrote") from None


def read_matrix(path: str) -> dict:
    data = _json_of("matrix_json", path, "merge --json_out")
    if (not isinstance(data, dict) or data.get("schema") != "harness.matrix/1"
        or not isinstance(data.get("rows"), list)):
        raise UsageError(f"--matrix_json {path}: not a version matrix (schema harness.matrix/1); "
                         "make one with python -m harness merge REPORT.json ... --json_out "
                         "matrix.json")
    return data


def read_bisect(path: str, target: Optional[str]) -> dict:
    """repro --bisect_json's answer, refused before any case runs when it is not a bisect's or is
    a bisect of another case than the one repro writes."""
    import fnmatch  # noqa: PLC0415

    data = _json_of("bisect_json", path, "bisect --json_out")
    if (not isinstance(data, dict) or data.get("schema") != "harness.bisect/1"
            or not all(isinstance(data.get(k), dict) for k in ("good", "bad"))):
        raise UsageError(f"--bisect_json {path}: not a bisect's answer (schema harness.bisect/1); "
                         "make one with python -m harness bisect CASE_ID --good V --bad V "
                         "--json_out bisect.json")
    bisected = str(data.get("target", ""))
    case = (target or "").split("[")[0]
    if case and bisected and not (fnmatch.fnmatchcase(case, bisected.split("[")[0])
                                  or bisected.endswith(".py")):
        raise UsageError(f"--bisect_json {path} bisected {bisected}, not {case}; bisect {case}, or "
                         "drop --bisect_json")
    return data
