"""The command line: flags, their checks, the subcommands and the run loop.

    python -m harness [flags]                      run the library (or --case_file)
    python -m harness check PATH.py:NAME --inputs LITERAL ...
    python -m harness repro CASE_ID|PATH.py:NAME [--point P] --out DIR
    python -m harness merge REPORT.json ... --markdown_out M --html_out H --json_out J

This process never imports TensorFlow unless --inprocess is given: workers
load the cases and run them, so `--help` and every usage error answer in a
fraction of a second.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shlex
import signal
import sys
import textwrap
import time
from pathlib import Path
from typing import Optional, Sequence

from absl import app, flags, logging

from harness import modes as _modes
from harness import report as _report
from harness.progress import Progress
from harness.records import CaseInfo, RunOptions

__all__ = ["main", "run"]

MODE = flags.DEFINE_string(
    "mode", "all", f"'all' (= {','.join(_modes.CORE_MODES)}), 'full' (= {','.join(_modes.FULL_MODES)}), or a "
    f"comma list of modes to run, from {','.join(_modes.KNOWN_MODES)}.")
CASES = flags.DEFINE_list(
    "cases", None, "Comma list of globs on case ids (e.g. 'seeds.*'), or CASE_ID[POINT] for one point. "
    "Default: every case.")
CASE_FILES = flags.DEFINE_multi_string(
    "case_file", [], "A Python file defining CASES with the harness case API (repeatable). Its cases "
    "run instead of the built-in library, unless --library is given.")
LIBRARY = flags.DEFINE_bool(
    "library", None, "Include the built-in case library (default: yes, unless --case_file is given).")
LIST = flags.DEFINE_bool("list", False, "List the selected cases with their descriptions, and exit.")
JSON_OUT = flags.DEFINE_string("json_out", None, "Write the JSON report (schema harness.report/1) here.")
JUNIT_OUT = flags.DEFINE_string("junit_out", None, "Write a JUnit XML report here.")
STRICT_XPASS = flags.DEFINE_bool(
    "strict_xpass", False, "Count an xpass (a declared deviation that did not happen) as a failure.")
JSONL_OUT = flags.DEFINE_string(
    "jsonl_out", None, "Append each result to this JSON Lines file as it finishes (default: next to "
    "--json_out, with the suffix .jsonl).")
JOBS = flags.DEFINE_integer(
    "jobs", 0, "Worker processes running cases in parallel. 0: one, plus one more per "
    f"{8} selected cases up to the number of cores (each worker costs a TensorFlow import). Never more "
    "workers than selected cases; more than 4 per CPU is refused as a usage error.",
    lower_bound=0)
TIMEOUT = flags.DEFINE_float("timeout", 300.0, "Seconds one case may run (all its modes and points) before "
                             "its worker is killed and the case is reported as timeout; 'inf': no timeout.",
                             lower_bound=0.1)
INPROCESS = flags.DEFINE_bool(
    "inprocess", False, "Run every case in this process, without workers, crash isolation or timeouts "
    "(for debugging with pdb).")
REPRO_DIR = flags.DEFINE_string(
    "repro_dir", None, "Write repro.py and ISSUE.md for every fail, xpass and crash here, one folder per "
    "case and point.")
INPUTS = flags.DEFINE_multi_string(
    "inputs", [], "check/repro PATH.py:NAME: one input point as a Python literal; a tuple gives one value "
    "per argument, e.g. --inputs '1.0' --inputs '(5.0, [1.0, 2.0])' (repeatable).")
ORDER = flags.DEFINE_integer("order", 1, "check: the derivative order.", lower_bound=1)
DTYPE = flags.DEFINE_string("dtype", "float32", "check: the dtype of every input.")
POINT = flags.DEFINE_string("point", None, "repro: the point label (default: the first point that does "
                                           "not pass, else the first).")
OUT = flags.DEFINE_string("out", None, "repro: the directory to write repro.py and ISSUE.md into.")
SHARD_INDEX = flags.DEFINE_integer(
    "shard_index", None, "Run only this shard of the selected cases (0-based; default: $TEST_SHARD_INDEX).",
    lower_bound=0)
NUM_SHARDS = flags.DEFINE_integer(
    "num_shards", None, "Split the selected cases into this many shards (default: $TEST_TOTAL_SHARDS, else 1); "
    "merging every shard's report gives the report of one run.", lower_bound=1)
MARKDOWN_OUT = flags.DEFINE_string("markdown_out", None, "merge: write the Markdown table here.")
HTML_OUT = flags.DEFINE_string("html_out", None, "merge: write the HTML page here.")
UNCONNECTED = flags.DEFINE_enum(
    "unconnected_gradients", "none", ["none", "zero"],
    "What an unconnected gradient is in every mode: None (kept apart from zeros) or zeros.")

NUMERIC = flags.DEFINE_bool(
    "numeric", True, "Check the agreed values against central finite differences (the numeric oracle); "
    "--nonumeric turns it off.")
NUMERIC_FULL = flags.DEFINE_bool(
    "numeric_full", False, "Numeric oracle: check every element (full Jacobians) instead of a few seeded "
    "random directions.")
UPSTREAM = flags.DEFINE_bool(
    "upstream", True, "Also take every order of a seeded weighted sum of the outputs (the upstream-gradient "
    "check: a grad_fn that ignores or reduces its dy is right only at the plain contraction), compare it "
    "across modes and check it numerically; --noupstream turns it off.")
WRT = flags.DEFINE_list(
    "wrt", None, "check: differentiate only these arguments (comma list of names; default: every floating "
    "or complex argument).")
EXPECT = flags.DEFINE_multi_string(
    "expect", [], "check: a declared deviation, as a case's Expectation: MODES:OUTCOME[:REASON], MODES a comma "
    "list of modes and oracles or 'all', OUTCOME an exception class or 'values differ', 'bad gradient', "
    "'gradient unused'; e.g. --expect 'numeric:values differ:a straight-through estimator' (repeatable).")
SYMMETRIC = flags.DEFINE_list(
    "symmetric", None, "check: arguments that are symmetric matrices; the numeric oracle moves them along "
    "symmetric directions only (e.g. the input of tf.linalg.cholesky).")
REPEAT = flags.DEFINE_integer(
    "repeat", 1, "Run every mode this many times; values that change between the runs make the verdict "
    "'flaky' (never retried away).", lower_bound=1)

_OUTPUT_FLAGS = (JSON_OUT, JUNIT_OUT, JSONL_OUT, MARKDOWN_OUT, HTML_OUT)
_CASES_PER_EXTRA_WORKER = 8
_JOBS_PER_CPU = 4
_REPRO_VERDICTS = ("fail", "xpass", "crash")
# Repro folder names: well under the 255 bytes file systems allow in one name.
_NAME_MAX = 100
_HASH_CHARS = 10


class UsageError(Exception):
    """A user mistake: printed as one line, exit status 2."""


def _mode_ok(value: str) -> bool:
    try:
        _modes.parse_modes(value)
    except ValueError as e:
        raise flags.ValidationError(str(e)) from None
    return True


def _output_ok(value) -> bool:
    if value is not None:
        try:
            _report.check_writable(value)
        except ValueError as e:
            raise flags.ValidationError(str(e)) from None
    return True


def _timeout_ok(value) -> bool:
    if value is not None and math.isnan(value):
        raise flags.ValidationError("nan is not a number of seconds; give seconds, or 'inf' for no timeout")
    return True


def _jobs_ok(value) -> bool:
    limit = _JOBS_PER_CPU * (os.cpu_count() or 1)
    if value is not None and value > limit:
        raise flags.ValidationError(f"{value} workers is more than {_JOBS_PER_CPU} per CPU; give at most {limit}, "
                                    "or 0 for one per 8 selected cases up to the cores")
    return True


def _folder_ok(value) -> bool:
    if value is not None and Path(value).exists() and not Path(value).is_dir():
        raise flags.ValidationError(f"{value} is a file; give a directory (it is created if missing)")
    return True


flags.register_validator("mode", _mode_ok)
flags.register_validator(TIMEOUT.name, _timeout_ok)
flags.register_validator(JOBS.name, _jobs_ok)
for _flag in _OUTPUT_FLAGS:
    flags.register_validator(_flag.name, _output_ok)
for _flag in (REPRO_DIR, OUT):
    flags.register_validator(_flag.name, _folder_ok)


_HELP = ("-h", "-?", "--help", "--helpshort", "--helpfull", "--helpxml")

_REPORTS = (JSON_OUT, JUNIT_OUT, JSONL_OUT)
_JUDGING = (NUMERIC, NUMERIC_FULL, UPSTREAM, UNCONNECTED, STRICT_XPASS, REPEAT)
_RUNNING = (JOBS, TIMEOUT, INPROCESS)
# Each command: its usage line, what it does, and the flags that concern it.
_COMMANDS = {
    None: ("python -m harness [flags]",
           "Runs the case library (or --case_file cases) in the selected modes and prints one line per "
           "case and point. Commands: check (one function, no case written), repro (a standalone bug "
           "report), merge (reports into a version matrix); 'python -m harness COMMAND --help' says more.",
           (MODE, CASES, CASE_FILES, LIBRARY, LIST) + _REPORTS + _JUDGING + _RUNNING
           + (REPRO_DIR, SHARD_INDEX, NUM_SHARDS)),
    "check": ("python -m harness check PATH.py:NAME --inputs LITERAL [--inputs LITERAL ...] [flags]",
              "Checks one function (or a zero-argument builder returning it) without writing a case: "
              "every --inputs is one point.",
              (INPUTS, ORDER, DTYPE, WRT, EXPECT, SYMMETRIC, MODE) + _JUDGING + _REPORTS + _RUNNING + (REPRO_DIR,)),
    "repro": ("python -m harness repro CASE_ID|PATH.py:NAME --out DIR [flags]",
              "Writes repro.py (needing only TensorFlow and NumPy) and ISSUE.md for one case and point.",
              (OUT, POINT, MODE, CASE_FILES, INPUTS, ORDER, DTYPE, WRT, EXPECT, SYMMETRIC) + _JUDGING),
    "merge": ("python -m harness merge REPORT.json [REPORT.json ...] [flags]",
              "Merges JSON reports from several TensorFlow releases into one version matrix.",
              (MARKDOWN_OUT, HTML_OUT, JSON_OUT)),
}


def _flag_help(flag) -> str:
    f = flags.FLAGS[flag.name]
    if isinstance(f, flags.BooleanFlag):
        name = f"--[no]{f.name}"
    else:
        name = f"--{f.name}" + (f"={f.default_as_str.strip(chr(39))}" if f.default not in (None, [], "") else "")
    # absl appends this to a multi flag's help; each help here says "(repeatable)" itself.
    said = f.help.replace(";\n    repeat this option to specify a list of values", "")
    said = " ".join(said.replace(";     repeat this option to specify a list of values", "").split())
    text = textwrap.fill(said, width=96, initial_indent="      ", subsequent_indent="      ")
    return f"  {name}\n{text}"


def command_help(command: Optional[str]) -> str:
    """The help of one command (None: the main run): usage, what it does, its flags."""
    usage, what, own = _COMMANDS[command]
    lines = [f"usage: {usage}", "", textwrap.fill(what, width=100), "", "flags:"]
    lines += [_flag_help(flag) for flag in own]
    lines += ["", "Exit status: 0 when every verdict is pass, xfail, xpass or skip; 1 when any is fail, error, "
                  "crash or timeout; 2 for a usage error. --helpfull lists every flag, absl's included."]
    return "\n".join(lines)


def _parse_flags(argv: list[str]) -> list[str]:
    asked = [arg for arg in argv[1:] if arg in ("-h", "-?", "--help", "--helpshort")]
    if asked:
        command = next((arg for arg in argv[1:] if arg in _COMMANDS), None)
        try:
            print(command_help(command), flush=True)
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            sys.stderr.close()
        sys.exit(0)
    try:
        return flags.FLAGS(argv)
    except flags.Error as e:
        _usage_exit(str(e))
    except SystemExit:
        # absl exits 1 after printing help; asking for help is not a failure.
        if any(arg in _HELP for arg in argv[1:]):
            sys.exit(0)
        raise


def _usage_exit(message: str) -> None:
    sys.stderr.write(f"harness: error: {message}\n")
    sys.exit(2)


def _check_spec(target: str):
    from harness.checking import CheckSpec, InputError, parse_expect, parse_inputs  # noqa: PLC0415

    path, colon, name = target.rpartition(":")
    if not colon or not path.endswith(".py") or not name.isidentifier():
        raise UsageError(f"{target!r} is not PATH.py:NAME; e.g. my_grads.py:log1pexp")
    try:
        parse_inputs(INPUTS.value, DTYPE.value)  # refuse bad literals before any worker starts
        for text in EXPECT.value:
            parse_expect(text)
    except InputError as e:
        raise UsageError(str(e)) from None
    return CheckSpec(target=target, inputs=tuple(INPUTS.value), dtype=DTYPE.value, order=ORDER.value,
                     wrt=tuple(WRT.value or ()), expect=tuple(EXPECT.value), symmetric=tuple(SYMMETRIC.value or ()))


def rerun_command(case_id: str, point: str, modes: Sequence[str], check=None) -> str:
    """The command line that reruns one case at one point alone with this run's settings."""
    mode = "all" if tuple(modes) == _modes.CORE_MODES else ",".join(modes)
    parts = ["python", "-m", "harness"]
    if check is not None:
        parts += ["check", check.target] + [f"--inputs={i}" for i in check.inputs]
        parts += [f"--order={check.order}", f"--dtype={check.dtype}"]
        if check.wrt:
            parts.append(f"--wrt={','.join(check.wrt)}")
        parts += [f"--expect={text}" for text in check.expect]
        if check.symmetric:
            parts.append(f"--symmetric={','.join(check.symmetric)}")
    parts += [f"--mode={mode}", f"--cases={case_id}[{point}]"]
    parts += [f"--case_file={path}" for path in CASE_FILES.value]
    if LIBRARY.value and CASE_FILES.value:
        parts.append("--library")
    if UNCONNECTED.value != "none":
        parts.append(f"--unconnected_gradients={UNCONNECTED.value}")
    if STRICT_XPASS.value:
        parts.append("--strict_xpass")
    if not NUMERIC.value:
        parts.append("--nonumeric")
    if not UPSTREAM.value:
        parts.append("--noupstream")
    if NUMERIC_FULL.value:
        parts.append("--numeric_full")
    if REPEAT.value != 1:
        parts.append(f"--repeat={REPEAT.value}")
    return shlex.join(parts)


def _list(cases: Sequence[CaseInfo]) -> None:
    width = max(len(c.id) for c in cases)
    for case in cases:
        points = f"{len(case.points)} point{'s' if len(case.points) != 1 else ''}"
        print(f"{case.id:<{width}}  order {case.order}  {points:<9}  {case.description}")


def _jsonl_path() -> Optional[str]:
    if JSONL_OUT.value:
        return JSONL_OUT.value
    if JSON_OUT.value:
        return str(Path(JSON_OUT.value).with_suffix(".jsonl"))
    return None


# Flags of the commands, which a plain run would ignore: (the flags, the command they belong to).
_COMMAND_FLAGS = (((INPUTS, ORDER, DTYPE), "check PATH.py:NAME (and repro PATH.py:NAME)"),
                  ((POINT, OUT), "repro"),
                  ((MARKDOWN_OUT, HTML_OUT), "merge"))


def _refuse_command_flags() -> None:
    """Refuses a command's flags given to a plain run, where they would do nothing."""
    for own, command in _COMMAND_FLAGS:
        given = [f"--{f.name}" for f in own if flags.FLAGS[f.name].present]
        if given:
            raise UsageError(f"{', '.join(given)} {'is a flag' if len(given) == 1 else 'are flags'} of "
                             f"python -m harness {command}, not of a plain run; give the command, or drop "
                             f"{'it' if len(given) == 1 else 'them'}")


def _distinct(outputs: Sequence[tuple[str, Optional[str]]], inputs: Sequence[str] = ()) -> None:
    """Refuses two outputs, or an output and an input, that are one file (compared resolved)."""
    seen = {os.path.realpath(path): f"input report {path}" for path in inputs}
    for what, path in outputs:
        if not path:
            continue
        real = os.path.realpath(path)
        if real in seen:
            raise UsageError(f"{seen[real]} and {what} are the same file {path}; give each its own path")
        seen[real] = what


def _check_outputs() -> None:
    stream = "--jsonl_out" if JSONL_OUT.value else "the JSON Lines stream (--json_out with the suffix .jsonl)"
    _distinct([("--json_out", JSON_OUT.value), ("--junit_out", JUNIT_OUT.value), (stream, _jsonl_path())])
    if JSON_OUT.value and not JSONL_OUT.value:  # the flag validators checked the others
        try:
            _report.check_writable(_jsonl_path())
        except ValueError as e:
            raise UsageError(f"{stream}: {e}, or give --jsonl_out") from None


def _write_outputs(outputs: Sequence[tuple[str, str]]) -> bool:
    """Writes each (path, text); a failure is one line on stderr and the rest are still written.

    Returns:
      Whether every one was written.
    """
    written = True
    for path, text in outputs:
        try:
            _report.write(path, text)
        except OSError as e:
            sys.stderr.write(f"harness: cannot write {path}: {e.strerror or e}; the other outputs were "
                             "written, rerun with another path for this one\n")
            written = False
        else:
            logging.info("wrote %s", path)
    return written


def _themes(patterns: Optional[Sequence[str]]) -> Optional[tuple[str, ...]]:
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


def _runner(sources):
    from harness import pool  # noqa: PLC0415 - no TensorFlow unless in-process

    if INPROCESS.value:
        return pool.InProcess(sources)
    return pool.WorkerPool(TIMEOUT.value, sources)


def _pool_size(cases: int) -> int:
    if JOBS.value:
        return JOBS.value
    return max(1, min(os.cpu_count() or 1, 1 + (cases - 1) // _CASES_PER_EXTRA_WORKER))


def _shard() -> tuple[int, int]:
    """(index, count) from the flags, else from the variables test runners set."""
    def number(flag, variable: str, default: int) -> int:
        if flag.value is not None:
            return flag.value
        text = os.environ.get(variable, "")
        if not text:
            return default
        if not text.isdigit():
            raise UsageError(f"${variable}={text!r} is not a number; unset it or give --{flag.name}")
        return int(text)

    index, count = number(SHARD_INDEX, "TEST_SHARD_INDEX", 0), number(NUM_SHARDS, "TEST_TOTAL_SHARDS", 1)
    if count < 1 or index >= count:
        raise UsageError(f"shard index {index} is not below the number of shards {count}; "
                         "give --shard_index from 0 to --num_shards - 1")
    if os.environ.get("TEST_SHARD_STATUS_FILE") and count > 1:
        Path(os.environ["TEST_SHARD_STATUS_FILE"]).touch()  # tells the test runner sharding is supported
    return index, count


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _safe(label: str) -> str:
    """A folder name for a case id or point label: readable, at most _NAME_MAX characters, and
    one name per label (a long one keeps its start and gets a hash of the whole label)."""
    safe = "".join(c if c.isascii() and c.isalnum() or c in "._=-" else "_" for c in label)
    if len(safe) <= _NAME_MAX and safe.strip("."):
        return safe
    digest = hashlib.sha1(label.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    return f"{safe[:_NAME_MAX - _HASH_CHARS - 1]}-{digest}" if safe.strip(".") else digest


def _repro_folder(root: str, case: str, point: str) -> Path:
    """The folder for one case and point's reproduction, checked to resolve inside `root`.

    Raises:
      ValueError: it resolves elsewhere (a link inside `root` points out of it).
    """
    folder = Path(root) / _safe(case) / _safe(point)
    inside = os.path.realpath(root)
    if os.path.commonpath([inside, os.path.realpath(folder)]) != inside:
        raise ValueError(f"{folder} resolves to {os.path.realpath(folder)}, outside --repro_dir {root}")
    return folder


def _write_repro(folder: Path, result, scripts: dict, environment: dict, description: str) -> bool:
    """Writes one reproduction; returns False when a file could not be written (said on stderr)."""
    from harness.repro import issue  # noqa: PLC0415

    ok, text = scripts.get(result.point, (False, "the worker died before it could write the script"))
    if not ok:
        logging.warning("no reproduction for %s: %s", result.name, text)
        return True
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        sys.stderr.write(f"harness: cannot write {folder}: {e.strerror or e}; choose another directory\n")
        return False
    return _write_outputs([(str(folder / "repro.py"), text),
                           (str(folder / "ISSUE.md"), issue.render(result, text, environment, description))])


def _merge(paths: Sequence[str]) -> int:
    from harness.matrix import merge  # noqa: PLC0415

    if not paths:
        raise UsageError("give the JSON reports to merge: python -m harness merge A.json B.json ...")
    if not (MARKDOWN_OUT.value or HTML_OUT.value or JSON_OUT.value):
        raise UsageError("give at least one of --markdown_out, --html_out, --json_out")
    _distinct([(f"--{f.name}", f.value) for f in (MARKDOWN_OUT, HTML_OUT, JSON_OUT)], inputs=paths)
    try:
        return merge.main(list(paths), MARKDOWN_OUT.value, HTML_OUT.value, JSON_OUT.value)
    except merge.MergeError as e:
        raise UsageError(str(e)) from None


def run(argv: Sequence[str]) -> int:
    """Runs the harness for parsed flags and positional arguments; returns the exit status."""
    from harness import loader, pool  # noqa: PLC0415
    from harness.records import Report  # noqa: PLC0415
    from harness.report import json_report, junit, text  # noqa: PLC0415
    from harness.worker import Job, Sources  # noqa: PLC0415

    command, args = (argv[1], list(argv[2:])) if len(argv) > 1 else (None, [])
    if command == "merge":
        return _merge(args)
    if command not in (None, "check", "repro"):
        raise UsageError(f"unknown command {command!r}; commands: check, repro, merge (select cases with --cases)")
    if command and len(args) != 1:
        raise UsageError(f"{command} takes one target, got {len(args)}: {' '.join(args) or 'none'}")
    if command == "repro" and not OUT.value:
        raise UsageError("repro needs --out DIR, the directory for repro.py and ISSUE.md")
    if command is None:
        _refuse_command_flags()
    modes = _modes.parse_modes(MODE.value)
    _check_outputs()
    given = [f"--{f.name}" for f in (WRT, EXPECT, SYMMETRIC) if f.value]
    if given and not (command == "check" or (command == "repro" and ".py:" in args[0])):
        raise UsageError(f"{', '.join(given)} describe the function of check PATH.py:NAME; a case file says the "
                         "same with Case(wrt=..., expectations=..., symmetric=...)")
    check = _check_spec(args[0]) if command == "check" or (command == "repro" and ".py:" in args[0]) else None
    patterns = CASES.value
    if command == "repro" and check is None:
        patterns = [f"{args[0]}[{POINT.value}]" if POINT.value else args[0]]
    elif command == "repro" and POINT.value:
        patterns = [f"check.{check.name}[{POINT.value}]"]
    # Case files and check targets replace the library, unless a repro names a case id.
    default_library = (command == "repro" and check is None) or not (CASE_FILES.value or check)
    with_library = LIBRARY.value if LIBRARY.value is not None else default_library
    if not with_library and not CASE_FILES.value and check is None:
        raise UsageError("no cases: give --case_file, or drop --nolibrary")
    sources = Sources(library=with_library, case_files=tuple(CASE_FILES.value), check=check,
                      themes=_themes(patterns))
    shard_index, shard_count = _shard()
    signal.signal(signal.SIGTERM, _raise_interrupt)
    start = time.monotonic()
    runner = None
    finished: dict[int, object] = {}
    selected: list[CaseInfo] = []
    environment: dict = {}
    jsonl = None
    interrupted = False
    written = True  # every output written so far
    try:
        runner = _runner(sources)
        environment, catalogue = runner.start()
        selected = loader.shard(loader.select(catalogue, patterns), shard_index, shard_count)
        if LIST.value:
            _list(selected)
            return 0
        options = RunOptions(unconnected_zero=UNCONNECTED.value == "zero", numeric=NUMERIC.value,
                             numeric_full=NUMERIC_FULL.value, repeat=REPEAT.value, upstream=UPSTREAM.value)
        repro = bool(REPRO_DIR.value) or command == "repro"
        jobs = [Job(case_id=c.id, order=c.order, points=c.points, modes=modes, options=options,
                    strict_xpass=STRICT_XPASS.value, repro=repro,
                    reruns=tuple((p, rerun_command(c.id, p, modes, check)) for p in c.points)) for c in selected]
        jsonl_path = _jsonl_path()
        try:
            jsonl = open(jsonl_path, "w", encoding="utf-8") if jsonl_path else None
        except OSError as e:
            raise UsageError(f"cannot write {jsonl_path}: {e.strerror or e}; choose another path") from None
        progress = Progress(total=sum(len(c.points) for c in selected))
        try:
            for done in runner.run(jobs, lambda job: progress.started(job.case_id), _pool_size(len(jobs))):
                finished[done.index] = done
                for result in done.results:
                    if jsonl:
                        try:
                            jsonl.write(json.dumps(json_report.result_dict(result), allow_nan=False) + "\n")
                            jsonl.flush()
                        except OSError as e:
                            sys.stderr.write(f"harness: cannot write {jsonl_path}: {e.strerror or e}; it holds the "
                                             "results before this one, rerun with another path\n")
                            written = False
                            with contextlib.suppress(OSError):
                                jsonl.close()
                            jsonl = None
                progress.finished(done.index, "\n".join(text.line(r) for r in done.results), len(done.results))
        finally:
            progress.close()
    except loader.LoadError as e:
        raise UsageError(str(e)) from None
    except pool.PoolError as e:
        sys.stderr.write(f"harness: {e}\n")
        return 1
    except KeyboardInterrupt:
        interrupted = True
        if runner is not None:
            runner.kill()
    finally:
        if runner is not None:
            runner.close()
        if jsonl:
            with contextlib.suppress(OSError):  # a full disk: what was flushed stays
                jsonl.close()
    ordered = [finished[i] for i in sorted(finished)]
    seconds = time.monotonic() - start  # the start's wall-clock time from it, so both agree
    report = Report(environment=environment, modes=modes,
                    results=tuple(r for done in ordered for r in done.results),
                    started=time.time() - seconds, seconds=seconds)
    written = _write_outputs([(flag.value, renderer.render(report))
                              for flag, renderer in ((JSON_OUT, json_report), (JUNIT_OUT, junit))
                              if flag.value]) and written
    descriptions = {c.id: c.description for c in selected}
    if command == "repro" and ordered:
        done = ordered[0]
        chosen = next((r for r in done.results if r.verdict.value != "pass"), done.results[0])
        written = _write_repro(Path(OUT.value), chosen, done.scripts, environment,
                               descriptions[chosen.case]) and written
    elif REPRO_DIR.value:
        for done in ordered:
            for r in done.results:
                if r.verdict.value in _REPRO_VERDICTS:
                    try:
                        folder = _repro_folder(REPRO_DIR.value, r.case, r.point)
                    except ValueError as e:
                        logging.warning("no reproduction for %s: %s; remove the link", r.name, e)
                        continue
                    written = _write_repro(folder, r, done.scripts, environment, descriptions[r.case]) and written
    not_run = sum(len(c.points) for c in selected) - len(report.results)
    print(text.summary(report.results, time.monotonic() - start, not_run=not_run))
    if interrupted:
        sys.stderr.write(f"harness: interrupted; {not_run} case points did not run; reports hold what finished\n")
        return 130
    return 1 if report.failed or not written else 0


def main(argv: Sequence[str]) -> int:
    try:
        return run(argv)
    except UsageError as e:
        _usage_exit(str(e))


def entry() -> None:
    app.run(main, flags_parser=_parse_flags)
