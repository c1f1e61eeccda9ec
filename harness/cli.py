"""The command line: flags, their checks, the subcommands and the run loop.

    python -m harness [run] [flags]                run the library (or --case_file)
    python -m harness check PATH.py:NAME --inputs LITERAL ...
    python -m harness repro CASE_ID|PATH.py:NAME [--point P] --out DIR
    python -m harness merge REPORT.json ... --markdown_out M --html_out H --json_out J
    python -m harness explore PATH.py:NAME|CASE_ID --domain 'x=[-100, 100]' ...
    python -m harness replay DIR [flags]             run what a recording kept (harness.record)
    python -m harness record DIR -- CMD ...          record the custom gradients CMD runs

Every flag is in _FLAG_TABLE with its --help group and the commands that take it; a command
given a flag it does not take refuses it, naming the commands it belongs to.

This process never imports TensorFlow unless --inprocess is given: workers
load the cases and run them, so `--help` and every usage error answer in a
fraction of a second.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import re
import shlex
import signal
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Optional, Sequence

from absl import app, flags

from harness import modes as _modes
from harness import report as _report
from harness.progress import Progress
from harness.records import CaseInfo, RunOptions, exit_status_text

__all__ = ["main", "run"]

# Each help starts with one short sentence: `python -m harness --help` shows that sentence, and
# --helpfull and COMMAND --help the whole text.
MODE = flags.DEFINE_string(
    "mode", "all", f"The modes to run: 'all', 'full', or a comma list of modes. With 'all' they are "
    f"{', '.join(_modes.CORE_MODES)}; with 'full' {', '.join(_modes.FULL_MODES)}; the modes are "
    f"{', '.join(_modes.KNOWN_MODES)}.")


def split_patterns(text: str) -> list[str]:
    """The --cases patterns in `text`: split at the commas outside brackets, so that a point label
    with commas in it (`t.mul[x=2.0,y=3.0]`, `x=float32[8,64]`) stays one pattern, as the rerun
    lines print it. A glob's `[...]` character class is a bracket too."""
    patterns, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "[":
            depth += 1
        elif c == "]":
            depth = max(0, depth - 1)
        elif c == "," and depth == 0:
            patterns.append(text[start:i])
            start = i + 1
    patterns.append(text[start:])
    return [p.strip() for p in patterns if p.strip()]


class _PatternList(flags.ListParser):
    """absl's comma list, split by split_patterns instead of as CSV."""

    def parse(self, argument):
        if isinstance(argument, list):
            return argument
        return split_patterns(argument) if argument else []


CASES = flags.DEFINE(
    _PatternList(), "cases", None, "Comma list of globs on case ids, or CASE_ID[POINT] for one point. For example "
    "'seeds.*'; default: every case. Commas inside [...] belong to the point.",
    serializer=flags.CsvListSerializer(","))
CASE_FILES = flags.DEFINE_multi_string(
    "case_file", [], "A Python file defining CASES with the harness case API (repeatable). Its cases "
    "run instead of the built-in library, unless --library is given.")
LIBRARY = flags.DEFINE_bool(
    "library", None, "Include the built-in cases (default: unless --case_file is given).")
LIST = flags.DEFINE_bool("list", False, "List the selected cases with their descriptions, and exit.")
JSON_OUT = flags.DEFINE_string("json_out", None, "Write the JSON report (schema harness.report/1) here.")
JUNIT_OUT = flags.DEFINE_string("junit_out", None, "Write a JUnit XML report here.")
STRICT_XPASS = flags.DEFINE_bool(
    "strict_xpass", False, "Count an xpass as a failure. An xpass is a declared deviation that did not happen.")
JSONL_OUT = flags.DEFINE_string(
    "jsonl_out", None, "Append each result to this JSON Lines file as it finishes. Default: next to "
    "--json_out, with the suffix .jsonl.")
JOBS = flags.DEFINE_integer(
    "jobs", 0, "Worker processes running cases in parallel. With 0: one, plus one more per "
    f"{8} selected cases up to the number of cores (each worker costs a TensorFlow import). Never more "
    "workers than selected cases; more than 4 per CPU is refused as a usage error.",
    lower_bound=0)
TIMEOUT = flags.DEFINE_float("timeout", 300.0, "Seconds a case may run before its worker is killed ('inf': "
                             "never). The time covers all its modes and points; a killed case is "
                             "reported as timeout.", lower_bound=0.1)
INPROCESS = flags.DEFINE_bool(
    "inprocess", False, "Run every case in this process, for debugging with pdb. There are no workers, so "
    "no crash isolation and no timeouts.")
REPRO_DIR = flags.DEFINE_string(
    "repro_dir", None, "Write repro.py and ISSUE.md for every fail, xpass and crash here. One folder per "
    "case and point.")
INPUTS = flags.DEFINE_multi_string(
    "inputs", [], "check/repro PATH.py:NAME: one input point as a Python literal; a tuple gives one value "
    "per argument, e.g. --inputs '1.0' --inputs '(5.0, [1.0, 2.0])' (repeatable).")
ORDER = flags.DEFINE_integer("order", 1, "check/repro/explore PATH.py:NAME: the derivative order.", lower_bound=1)
DTYPE = flags.DEFINE_string("dtype", "float32", "check/repro/explore PATH.py:NAME: the dtype of every input.")
POINT = flags.DEFINE_string("point", None, "repro: the point label (default: the first point that does "
                                           "not pass, else the first).")
OUT = flags.DEFINE_string("out", None, "repro: the directory to write repro.py and ISSUE.md into.")
SHARD_INDEX = flags.DEFINE_integer(
    "shard_index", None, "Run only this shard of the selected cases (0-based). Default: $TEST_SHARD_INDEX, "
    "else 0.", lower_bound=0)
NUM_SHARDS = flags.DEFINE_integer(
    "num_shards", None, "Split the selected cases into this many shards. Default: $TEST_TOTAL_SHARDS, else 1; "
    "merging every shard's report gives the report of one run.", lower_bound=1)
MARKDOWN_OUT = flags.DEFINE_string("markdown_out", None, "merge: write the Markdown table here.")
HTML_OUT = flags.DEFINE_string("html_out", None, "merge: write the HTML page here.")
UNCONNECTED = flags.DEFINE_enum(
    "unconnected_gradients", "none", ["none", "zero"],
    "Unconnected gradients are None or zeros, in every mode. None is kept apart from zeros.")

NUMERIC = flags.DEFINE_bool(
    "numeric", True, "Check the agreed values against central finite differences. This is the numeric "
    "oracle; --nonumeric turns it off.")
NUMERIC_FULL = flags.DEFINE_bool(
    "numeric_full", False, "Numeric oracle: check every element (full Jacobians). Without it, the oracle "
    "checks a few seeded random directions.")
UPSTREAM = flags.DEFINE_bool(
    "upstream", True, "Also take the gradients of a seeded weighted sum of the outputs. This is the "
    "upstream-gradient check: every order of it is taken, compared across modes and checked numerically; a "
    "grad_fn that ignores or reduces its dy is right only at the plain contraction. --noupstream turns it off.")
WRT = flags.DEFINE_list(
    "wrt", None, "check/repro/explore PATH.py:NAME: differentiate only these arguments (comma list of names; "
    "default: every floating or complex argument).")
EXPECT = flags.DEFINE_multi_string(
    "expect", [], "check/repro/explore PATH.py:NAME: a declared deviation, as a case's Expectation: "
    "MODES:OUTCOME[:REASON], MODES a comma list of modes and oracles or 'all', OUTCOME an exception class or "
    "'values differ', 'bad gradient', 'gradient unused'; e.g. --expect 'numeric:values differ:a "
    "straight-through estimator' (repeatable).")
SYMMETRIC = flags.DEFINE_list(
    "symmetric", None, "check/repro PATH.py:NAME: arguments that are symmetric matrices; the numeric oracle "
    "moves them along symmetric directions only (e.g. the input of tf.linalg.cholesky).")
REPEAT = flags.DEFINE_integer(
    "repeat", 1, "Run every mode this many times. Values that change between the runs make the verdict "
    "'flaky' (never retried away).", lower_bound=1)

FULL = flags.DEFINE_bool(
    "full", False, "Write the complete repro.py instead of the short one. The complete script runs every mode "
    "it can write out, with generic helpers, a tolerance table and --json output; the short one is "
    "straight-line code for the yardstick mode and the modes that deviate.")

MINIMIZE = flags.DEFINE_bool(
    "minimize", False, "Shrink each short repro.py while the same deviation holds. The function, what it uses, "
    "the input values and the driving code are reduced with pysource-minimize (pip install "
    "'.[minimize]' in the checkout), each candidate run in a worker process under --timeout.")
MINIMIZE_SECONDS = flags.DEFINE_float(
    "minimize_seconds", 300.0, "The time budget of --minimize, per reproduction. At the budget it keeps the "
    "smallest script found so far.", lower_bound=1.0)

MATRIX_JSON = flags.DEFINE_string(
    "matrix_json", None, "A version matrix (merge --json_out, schema harness.matrix/1). ISSUE.md then names the "
    "TensorFlow releases where the same outcome was seen.")

DOMAIN = flags.DEFINE_multi_string(
    "domain", [], "explore: one argument's domain, NAME=[LOW, HIGH] (parentheses for an open end), then "
    "';shape=(2, 2)|(3, 3)', ';symmetric', ';positive', ';exclude=0,1' and ';near=0.01' as needed, e.g. "
    "--domain 'x=[-100, 100]' (repeatable). For a case id it replaces that argument's declared domain.")
EXAMPLES = flags.DEFINE_integer(
    "examples", 100, "explore: the most examples to draw before saying that none failed.", lower_bound=1)
EXPLORE = flags.DEFINE_integer(
    "explore", 0, "Explore each selected case with domains, up to N examples (0: off). After the run, as "
    "python -m harness explore CASE_ID does, for every selected case that declares domains.", lower_bound=0)
SEED = flags.DEFINE_integer(
    "seed", None, "The explore search's seed: the same seed draws the same examples. A seeded search leaves the "
    "example database (.harness/explore-db) alone, as Hypothesis does. Default: Hypothesis chooses, and a failure "
    "found is tried first next time.")

RECORDED = flags.DEFINE_string(
    "recorded", None, "Replay this recorded folder's functions as cases. The folder is what python -m pytest "
    "--harness-record=DIR or python -m harness record DIR wrote; its cases run instead of the built-in library "
    "(unless --library is given), as python -m harness replay DIR runs them.")
RECORD_POINTS = flags.DEFINE_integer(
    "record_points", 3, "record: the distinct points kept per function.", lower_bound=1)

_OUTPUT_FLAGS = (JSON_OUT, JUNIT_OUT, JSONL_OUT, MARKDOWN_OUT, HTML_OUT)
_CASES_PER_EXTRA_WORKER = 8
_JOBS_PER_CPU = 4
_REPRO_VERDICTS = ("fail", "xpass", "crash")
# Repro folder names: well under the 255 bytes file systems allow in one name.
_NAME_MAX = 100
# The longest a reproduction script may run when it is checked.
_SCRIPT_SECONDS = 120.0
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

_RUN, _CHECK, _REPRO, _MERGE, _EXPLORE = "run", "check", "repro", "merge", "explore"
_REPLAY, _RECORD = "replay", "record"
_RUNS_CASES = (_RUN, _CHECK, _REPRO, _EXPLORE, _REPLAY)
_SELECTION, _JUDGING, _REPORTS, _EXECUTION = "Selection", "Modes and oracles", "Reports", "Execution"
_GROUPS = (_SELECTION, _JUDGING, _REPORTS, _EXECUTION)

# Every flag of the harness, once: the group `--help` shows it in (None: one command's own flag,
# shown in that command's --help only) and the commands that take it. The help and the refusal of
# a flag given to a command that does not take it both read this table, so they cannot drift.
_FLAG_TABLE = {flag.name: (group, commands) for flag, group, commands in (
    (CASES, _SELECTION, (_RUN, _REPLAY)),  # check runs one function at its --inputs
    (CASE_FILES, _SELECTION, _RUNS_CASES),
    (LIBRARY, _SELECTION, _RUNS_CASES),
    (LIST, _SELECTION, (_RUN, _REPLAY)),
    (SHARD_INDEX, _SELECTION, (_RUN, _REPLAY)),
    (NUM_SHARDS, _SELECTION, (_RUN, _REPLAY)),
    (MODE, _JUDGING, _RUNS_CASES),
    (NUMERIC, _JUDGING, _RUNS_CASES),
    (NUMERIC_FULL, _JUDGING, _RUNS_CASES),
    (UPSTREAM, _JUDGING, _RUNS_CASES),
    (UNCONNECTED, _JUDGING, _RUNS_CASES),
    (REPEAT, _JUDGING, _RUNS_CASES),
    (STRICT_XPASS, _JUDGING, _RUNS_CASES),
    (JSON_OUT, _REPORTS, _RUNS_CASES + (_MERGE,)),
    (JUNIT_OUT, _REPORTS, _RUNS_CASES),
    (JSONL_OUT, _REPORTS, (_RUN, _CHECK, _REPRO, _REPLAY)),
    (REPRO_DIR, _REPORTS, (_RUN, _CHECK, _EXPLORE, _REPLAY)),  # repro writes into --out
    (FULL, _REPORTS, _RUNS_CASES),
    (MINIMIZE, _REPORTS, _RUNS_CASES),
    (MINIMIZE_SECONDS, _REPORTS, _RUNS_CASES),
    (MATRIX_JSON, _REPORTS, _RUNS_CASES),
    (JOBS, _EXECUTION, (_RUN, _CHECK, _REPRO, _REPLAY)),  # explore runs one example at a time
    (TIMEOUT, _EXECUTION, _RUNS_CASES),
    (INPROCESS, _EXECUTION, _RUNS_CASES),
    (INPUTS, None, (_CHECK, _REPRO)),
    (ORDER, None, (_CHECK, _REPRO, _EXPLORE, _REPLAY)),
    (DTYPE, None, (_CHECK, _REPRO, _EXPLORE)),
    (WRT, None, (_CHECK, _REPRO, _EXPLORE)),
    (EXPECT, None, (_CHECK, _REPRO, _EXPLORE, _REPLAY)),
    (SYMMETRIC, None, (_CHECK, _REPRO)),
    (POINT, None, (_REPRO,)),
    (OUT, None, (_REPRO,)),
    (DOMAIN, None, (_EXPLORE,)),
    (EXAMPLES, None, (_EXPLORE,)),
    (SEED, _EXECUTION, (_RUN, _EXPLORE)),
    (EXPLORE, _EXECUTION, (_RUN,)),
    (MARKDOWN_OUT, None, (_MERGE,)),
    (HTML_OUT, None, (_MERGE,)),
    (RECORDED, _SELECTION, (_RUN, _REPRO)),
    (RECORD_POINTS, None, (_RECORD,)),
)}

_VERDICT_EXIT = exit_status_text()
# Each command: its usage line, one line for --help, what it does, an example that works as written
# (from the checkout's root), and its exit status.
_COMMANDS = {
    _RUN: ("python -m harness [run] [flags]",
           "the default: run the case library, or the --case_file cases",
           "Runs the case library (or the --case_file cases) in the selected modes and prints one line per "
           "case and point. The command name may be left out: python -m harness [flags] is the same run.",
           ("python -m harness --mode all --cases 'seeds.*' --json_out report.json",),
           _VERDICT_EXIT),
    _CHECK: ("python -m harness check PATH.py:NAME --inputs LITERAL [--inputs LITERAL ...] [flags]",
             "check one function at the --inputs points, with no case written",
             "Checks one function (or a zero-argument builder returning it) without writing a case: "
             "every --inputs is one point.",
             ("python -m harness check cases/seeds.py:custom_square --inputs=3.0 --order=2",),
             _VERDICT_EXIT),
    _REPRO: ("python -m harness repro CASE_ID|PATH.py:NAME --out DIR [flags]",
             "write repro.py and ISSUE.md for one case and point into --out DIR",
             "Writes repro.py (needing only TensorFlow and NumPy) and ISSUE.md for one case and point. "
             "A PATH.py:NAME target is described by the same flags as for check.",
             ("python -m harness repro seeds.docstring_nested --out repro-nested",),
             _VERDICT_EXIT),
    _MERGE: ("python -m harness merge REPORT.json [REPORT.json ...] [flags]",
             "merge reports from several TensorFlow releases into a version matrix",
             "Merges JSON reports from several TensorFlow releases into one version matrix, written as "
             "Markdown (--markdown_out), HTML (--html_out) or JSON (--json_out, schema harness.matrix/1).",
             ("python -m harness --cases 'seeds.*' --json_out report.json",
              "python -m harness merge report.json --markdown_out matrix.md --html_out matrix.html"),
             "Exit status: 0 when every output was written; 1 when one could not be (said on stderr); "
             "2 for a usage error."),
    _EXPLORE: ("python -m harness explore PATH.py:NAME|CASE_ID [--domain DOMAIN ...] [flags]",
               "search the domains for a failing input and shrink it to the simplest",
               "Draws inputs from each argument's domain with Hypothesis, judges each exactly as a point of a "
               "run, stops at the first failing verdict and shrinks it to the simplest input that fails with the "
               "same cause; prints it as an input literal with a check command that reruns it. A CASE_ID "
               "explores the domains its case declares. The example database is .harness/explore-db in the working "
               "directory, so a failure found is tried first next time. Needs Hypothesis: pip install "
               "'.[explore]' in the checkout.",
               ("python -m harness explore cases/seeds.py:custom_square --domain 'x=[-10, 10]' --seed=0",),
               "Exit status: 0 when examples were judged and none failed; 1 when one failed, when none was "
               "judged, or when Hypothesis ended the search early (or a case point of the run failed); 2 for a "
               "usage error, a domain explore cannot draw from among them."),
    _REPLAY: ("python -m harness replay DIR [flags]",
              "run every custom gradient a recorded test session called, as cases",
              "Runs every function a recording kept (python -m pytest --harness-record=DIR, or python -m harness "
              "record DIR -- CMD) as the case recorded.MODULE.QUALNAME, one point per recorded call, judged as any "
              "case; each point names the test that made the call. --order and --expect apply to every replayed "
              "case (narrow them with --cases).",
              ("python -m harness replay .harness/recorded --mode all --json_out r.json",),
              _VERDICT_EXIT),
    _RECORD: ("python -m harness record DIR [flags] -- CMD [ARG ...]",
              "run CMD, recording the custom gradients it calls into DIR",
              "Runs CMD (a unittest or absltest suite, a script) with the recorder started in every Python process "
              "it starts, through the environment; each writes what it recorded into DIR when it exits. For a "
              "pytest suite, python -m pytest --harness-record=DIR does the same. Replay it with python -m harness "
              "replay DIR.",
              ("python -m harness record .harness/ut -- python -m unittest discover tests/data/record_project",),
              "Exit status: CMD's own; 2 for a usage error."),
}
_WIDTH = 100


def _flags_of(command: str, *, own: bool) -> list:
    """The flags `command` takes: its own ones (no group), else the shared ones, in table order."""
    return [flags.FLAGS[name] for name, (group, commands) in _FLAG_TABLE.items()
            if command in commands and (group is None) == own]


def _written(f) -> str:
    """A flag as it is written: --[no]numeric, --mode=all (the default), --cases (none)."""
    if isinstance(f, flags.BooleanFlag):
        return f"--[no]{f.name}"
    return f"--{f.name}" + (f"={f.default_as_str.strip(chr(39))}" if f.default not in (None, [], "") else "")


def _said(f) -> str:
    """A flag's help on one line."""
    # absl appends this to a multi flag's help; each help here says "(repeatable)" itself.
    return " ".join(f.help.replace("repeat this option to specify a list of values", "").split()).rstrip(";")


def first_sentence(text: str) -> str:
    """A help's first sentence: up to the first full stop before a capital letter."""
    return re.split(r"(?<=\.)\s+(?=[A-Z])", text, maxsplit=1)[0]


def _flag_help(f) -> str:
    """A flag's whole help, for COMMAND --help: without the "check/repro PATH.py:NAME: " that says in
    --helpfull which command takes it."""
    said = re.sub(r"^(check/repro/explore PATH\.py:NAME|check/repro PATH\.py:NAME|repro|merge|explore): (.)", lambda m: m[2].upper(), _said(f))
    text = textwrap.fill(said, width=96, initial_indent="      ", subsequent_indent="      ",
                         break_on_hyphens=False)
    return f"  {_written(f)}\n{text}"


def _main_help() -> str:
    """`python -m harness --help`: the commands, then the main flags by group with one line each."""
    grouped = {group: [flags.FLAGS[name] for name, (g, _) in _FLAG_TABLE.items() if g == group]
               for group in _GROUPS}

    def name(f) -> str:
        if isinstance(f, flags.BooleanFlag) and f.default is not None:
            return f"{_written(f)} ({'on' if f.default else 'off'})"
        return _written(f)

    width = max(len(name(f)) for fs in grouped.values() for f in fs)
    targets = {_RUN: "", _CHECK: " PATH.py:NAME", _REPRO: " CASE_ID|PATH.py:NAME", _MERGE: " REPORT.json...",
               _EXPLORE: " PATH.py:NAME|CASE_ID", _REPLAY: " DIR", _RECORD: " DIR -- CMD"}
    commands = [(command + targets[command], _COMMANDS[command][1]) for command in _COMMANDS]
    commands.append(("list", "python -m harness --list: the selected cases with their descriptions"))
    left = max(len(c) for c, _ in commands)
    lines = [f"usage: python -m harness [{'|'.join(_COMMANDS)}] [ARGS] [flags]", "",
             "Runs TensorFlow custom-gradient cases in several modes and judges whether they agree.", "",
             "Commands:"]
    lines += [f"  {c:<{left}}  {what}" for c, what in commands]
    for group, fs in grouped.items():
        lines += ["", f"{group}:"]
        lines += [textwrap.fill(first_sentence(_said(f)), width=_WIDTH, initial_indent=f"  {name(f):<{width}}  ",
                                subsequent_indent=" " * (width + 4)) for f in fs]
    lines += ["", textwrap.fill(_VERDICT_EXIT, width=_WIDTH),
              "More: python -m harness COMMAND --help (its flags, an example); --helpfull (every flag, "
              "absl's too)."]
    return "\n".join(lines)


def command_help(command: Optional[str]) -> str:
    """The help of one command (None: `python -m harness --help`): usage, what it does, its flags,
    an example."""
    if command is None:
        return _main_help()
    usage, _, what, example, exit_status = _COMMANDS[command]
    lines = [f"usage: {usage}", "", textwrap.fill(what, width=_WIDTH), ""]
    shared = _flags_of(command, own=False)
    if command == _RUN:  # a run has only the shared flags: each said in full
        for group in _GROUPS:
            lines += [f"{group}:"] + [_flag_help(f) for f in shared if _FLAG_TABLE[f.name][0] == group] + [""]
    else:
        lines += [f"{command} flags:"] + [_flag_help(f) for f in _flags_of(command, own=True)] + [""]
        lines.append("Shared flags it takes (python -m harness --help says what each does):")
        for group in _GROUPS:
            names = [f"  {_written(f)}" for f in shared if _FLAG_TABLE[f.name][0] == group]
            lines += ([f"{group}:"] + names) if names else []
        lines.append("")
    lines += ["Example:"] + [f"  {line}" for line in example]
    lines += ["", textwrap.fill(exit_status, width=_WIDTH),
              "--helpfull lists every flag, absl's included."]
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


def _check_spec(target: str, domains: Sequence = ()):
    from harness.checking import CheckSpec, InputError, parse_expect, parse_inputs  # noqa: PLC0415

    path, colon, name = target.rpartition(":")
    if not colon or not path.endswith(".py") or not name.isidentifier():
        raise UsageError(f"{target!r} is not PATH.py:NAME; e.g. tests/data/my_grads.py:log1pexp")
    if not Path(path).is_file():  # said now, not by a worker after TensorFlow's import
        what = "is a directory" if Path(path).is_dir() else "does not exist"
        raise UsageError(f"{path} {what}; give the Python file that defines {name}")
    try:
        if not domains:
            parse_inputs(INPUTS.value, DTYPE.value)  # refuse bad literals before any case runs
        for text in EXPECT.value:
            parse_expect(text)
    except InputError as e:
        raise UsageError(str(e)) from None
    return CheckSpec(target=target, inputs=tuple(INPUTS.value), dtype=DTYPE.value, order=ORDER.value,
                     wrt=tuple(WRT.value or ()), expect=tuple(EXPECT.value), symmetric=tuple(SYMMETRIC.value or ()),
                     domains=tuple(domains))


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything a command does, read from the flags once (_settings), before any case runs.

    The steps after it read this record, never a flag: what runs, how it is judged (`options`),
    where reports and reproductions go, and what a rerun command must carry.
    """

    command: str
    modes: tuple[str, ...]
    options: RunOptions
    strict_xpass: bool
    check: object  # harness.checking.CheckSpec for a PATH.py:NAME target, else None
    patterns: Optional[tuple[str, ...]]
    origins: object  # harness.worker.Origins: where the cases come from
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
    repro_dir: Optional[str]
    out: Optional[str]
    full: bool
    minimize: bool
    minimize_seconds: float
    matrix: Optional[dict] = dataclasses.field(default=None, compare=False)  # --matrix_json's contents
    explore: int = 0  # --explore N
    examples: int = 0  # explore --examples
    seed: Optional[int] = None
    domains: tuple = ()  # explore --domain: (argument, Domain) pairs
    recorded: Optional[str] = None  # replay DIR, or repro --recorded DIR: the recorded folder


def _settings(command: str, args: Sequence[str]) -> Settings:
    """Checks and reads every flag `command` takes; a mistake is a UsageError, before any case runs."""
    from harness.worker import Origins  # noqa: PLC0415

    if command == _REPRO and not OUT.value:
        raise UsageError("repro needs --out DIR, the directory for repro.py and ISSUE.md")
    if command == _EXPLORE or EXPLORE.value:
        _explore_module()  # Hypothesis missing: said before any case runs
    domains = _explore_domains(args[0]) if command == _EXPLORE else ()
    modes = _modes.parse_modes(MODE.value)
    _check_outputs()
    matrix = _check_repro_flags(command)
    recorded = _recorded_folder(command, args)
    target = args[0] if args and command != _REPLAY else None
    check = _check_spec(target, domains) if target and (command == _CHECK or ".py:" in target) else None
    if command == _EXPLORE:
        patterns = [f"check.{check.name}" if check else target]
        default_library = not (CASE_FILES.value or check)
    else:
        patterns = CASES.value
        if command == _REPRO:
            chosen = f"check.{check.name}" if check else target
            patterns = [f"{chosen}[{POINT.value}]"] if POINT.value else ([target] if check is None else None)
        # Case files and check targets replace the library, unless a repro names a case id.
        default_library = (command == _REPRO and check is None) or not (CASE_FILES.value or check)
    default_library = default_library and recorded is None  # a recording replaces the library too
    with_library = LIBRARY.value if LIBRARY.value is not None else default_library
    if not with_library and not CASE_FILES.value and check is None and recorded is None:
        raise UsageError("no cases: give --case_file, or drop --nolibrary")
    origins = Origins(library=with_library, case_files=tuple(CASE_FILES.value), check=check,
                      themes=_themes(patterns),
                      recorded=(recorded, ORDER.value, tuple(EXPECT.value) if command == _REPLAY else ())
                      if recorded else None)
    options = RunOptions(unconnected_zero=UNCONNECTED.value == "zero", numeric=NUMERIC.value,
                         numeric_full=NUMERIC_FULL.value, repeat=REPEAT.value, upstream=UPSTREAM.value)
    return Settings(
        command=command, modes=modes, options=options, strict_xpass=STRICT_XPASS.value, check=check,
        patterns=tuple(patterns) if patterns else None, origins=origins,
        shard=(0, 1) if command == _EXPLORE else _shard(), case_files=tuple(CASE_FILES.value),
        library=LIBRARY.value, jobs=JOBS.value, timeout=TIMEOUT.value, inprocess=INPROCESS.value,
        list_only=LIST.value, json_out=JSON_OUT.value, junit_out=JUNIT_OUT.value, jsonl_out=_jsonl_path(),
        repro_dir=REPRO_DIR.value, out=OUT.value, full=FULL.value, minimize=MINIMIZE.value,
        minimize_seconds=MINIMIZE_SECONDS.value, matrix=matrix, explore=EXPLORE.value, examples=EXAMPLES.value,
        seed=SEED.value, domains=tuple(domains), recorded=recorded)


def _recorded_folder(command: str, args: Sequence[str]) -> Optional[str]:
    """replay's DIR (or repro's --recorded), checked to hold a recording, before any case runs."""
    folder = args[0] if command == _REPLAY else RECORDED.value  # --recorded: a run (the matrix's), or repro
    if not folder:
        return None
    from harness.checking import InputError, parse_expect  # noqa: PLC0415
    from harness.record import store  # noqa: PLC0415

    try:
        store.read(folder)
        for text in EXPECT.value if command == _REPLAY else ():
            parse_expect(text)
    except (store.RecordError, InputError) as e:
        raise UsageError(str(e)) from None
    return os.path.abspath(folder)


def _record(folder: str, command: Sequence[str]) -> int:
    """python -m harness record DIR -- CMD: runs CMD with the recorder started in its Python processes."""
    import subprocess  # noqa: PLC0415

    import harness  # noqa: PLC0415
    from harness.record import hook, store  # noqa: PLC0415

    if Path(folder).exists() and not Path(folder).is_dir():
        raise UsageError(f"{folder} is a file; give a directory for the recording (it is created if missing)")
    try:
        os.makedirs(folder, exist_ok=True)
        store.clear(folder)
    except OSError as e:
        raise UsageError(f"cannot write {folder}: {e.strerror or e}; choose another directory") from None
    site = Path(hook.__file__).resolve().parent / "_site"
    root = Path(harness.__file__).resolve().parent.parent
    path = [str(site)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), **{hook.ENV_FOLDER: os.path.abspath(folder),
                                                                   hook.ENV_POINTS: str(RECORD_POINTS.value),
                                                                   hook.ENV_PATH: str(root)})
    try:
        return subprocess.run(list(command), env=env, check=False).returncode
    except OSError as e:
        raise UsageError(f"cannot run {command[0]}: {e.strerror or e}; give the command after --, e.g. "
                         "python -m harness record DIR -- python -m unittest") from None


def _explore_domains(target: str) -> list:
    """explore's --domain flags, parsed and checked against the target."""
    explore = _explore_module()
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
            raise UsageError(f"give one --domain per argument of {target}, e.g. --domain 'x=[-100, 100]'")
        if DTYPE.value not in ("float16", "float32", "float64"):
            raise UsageError(f"--dtype={DTYPE.value!r}: explore draws float16, float32 or float64")
        # Drawable, before any worker starts: every argument is --dtype, of its domain's first shape
        # or a scalar, as the case the worker makes of the function (harness.checking).
        name = target.rpartition(":")[2]
        info = CaseInfo(id=f"check.{name}", description="", source="", order=ORDER.value, points=(),
                        arguments=tuple((n, DTYPE.value, d.shape[0] if d.shape else ()) for n, d in domains),
                        domains=tuple(domains))
        try:
            explore.check(info, domains)
        except explore.ExploreError as e:
            raise UsageError(str(e)) from None
    return domains


def rerun_command(case_id: str, point: str, s: Settings, check=None, inputs: Optional[Sequence[str]] = None) -> str:
    """The command line that reruns one case at one point alone with the settings `s`; `check`
    the check spec it reruns (None: a case id), whose `inputs` (default: all of them) are the
    point's --inputs."""
    mode = "all" if tuple(s.modes) == _modes.CORE_MODES else ",".join(s.modes)
    parts = ["python", "-m", "harness"] + (["replay", s.recorded] if s.recorded else [])
    if s.recorded:  # a recorded case reruns through replay, whichever command ran it
        parts += ([f"--order={s.origins.recorded[1]}"] if s.origins.recorded[1] != 1 else [])
        parts += [f"--expect={text}" for text in s.origins.recorded[2]]
    if check is not None:
        parts += ["check", check.target] + [f"--inputs={i}" for i in (check.inputs if inputs is None else inputs)]
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
    if s.options.repeat != 1:
        parts.append(f"--repeat={s.options.repeat}")
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


def _split(argv: Sequence[str]) -> tuple[str, list[str]]:
    """(the command, its arguments) from the arguments absl left; `run` and no command are one run."""
    if len(argv) < 2:
        return _RUN, []
    command, args = argv[1], list(argv[2:])
    if command not in _COMMANDS:
        hint = "; the cases are listed with --list" if command == "list" else ""
        raise UsageError(f"unknown command {command!r}; commands: {', '.join(_COMMANDS)} (select cases with "
                         f"--cases){hint}")
    if command == _RUN and args:
        raise UsageError(f"run takes no arguments, got {' '.join(args)}; select cases with --cases")
    if command == _RECORD and (not args or len(args) < 2):
        raise UsageError("record takes a folder and the command to run: python -m harness record DIR -- CMD ...")
    if command in (_CHECK, _REPRO, _EXPLORE, _REPLAY) and len(args) != 1:
        raise UsageError(f"{command} takes one target, got {len(args)}: {' '.join(args) or 'none'}")
    return command, args


def _and(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _refuse_other_flags(command: str, args: Sequence[str]) -> None:
    """Refuses a flag given to a command that does not take it (where it would do nothing), naming
    the commands it belongs to."""
    if command == _RUN or (command in (_REPRO, _EXPLORE) and ".py:" not in args[0]):
        given = [f"--{f.name}" for f in (WRT, EXPECT, SYMMETRIC) if flags.FLAGS[f.name].present]
        if given:  # more than "not here": what says the same for a case
            raise UsageError(f"{', '.join(given)} describe the function of check PATH.py:NAME; a case file says "
                             "the same with Case(wrt=..., expectations=..., symmetric=...)")
    belong: dict[tuple[str, ...], list[str]] = {}
    for name, (_, commands) in _FLAG_TABLE.items():
        if command not in commands and flags.FLAGS[name].present:
            belong.setdefault(commands, []).append(f"--{name}")
    if not belong:
        return
    one = sum(len(given) for given in belong.values()) == 1
    parts = [f"{', '.join(given)} {'is a flag' if len(given) == 1 else 'are flags'} of python -m harness "
             f"{_and(commands)}" for commands, given in belong.items()]
    here = "a plain run" if command == _RUN else command
    raise UsageError(f"{'; '.join(parts)}, not of {here}; give the command {'it belongs' if one else 'they belong'} "
                     f"to, or drop {'it' if one else 'them'}")


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
    return _report.write_each(outputs, wrote=lambda path: _say(f"wrote {path}"))


def _say(text: str) -> None:
    """One line of the harness's own on stderr: `harness: TEXT`, no log record's time or thread."""
    sys.stderr.write(f"harness: {text}\n")
    sys.stderr.flush()


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


def _runner(s: Settings):
    from harness import head_start, pool  # noqa: PLC0415 - no TensorFlow unless in-process

    if s.inprocess:
        head_start.discard()  # a --flagfile said --inprocess: the worker started ahead is not needed
        return pool.InProcess(s.origins)
    return pool.WorkerPool(s.timeout, s.origins)


def _pool_size(cases: int, jobs: int) -> int:
    if jobs:
        return jobs
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


class _Signals:
    """SIGINT and SIGTERM: a KeyboardInterrupt while cases run; once every case has run, only
    noted, so that the reports of what ran are written whole before the run stops."""

    def __init__(self):
        self.defer = False
        self.caught: Optional[int] = None

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self.handle)
        signal.signal(signal.SIGINT, self.handle)

    def handle(self, signum, frame):
        if self.defer:
            self.caught = signum
            return
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def deferred(self):
        self.defer = True
        try:
            yield
        finally:
            self.defer = False


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


def _reproduction(result, parts, tolerance, full: bool):
    """(the repro.py text, what running it must show, a sentence for ISSUE.md on the script)."""
    from harness.repro import script, short  # noqa: PLC0415

    note = ""
    if not full:
        try:
            made = short.render(parts, result, tolerance)
            return made.text, made.expected, ""
        except short.NotShort as e:
            note = f"This is the harness's complete script: the short one cannot show this ({e})."
    full_text, numeric = parts.full, False
    try:
        if short.deviation(result, tolerance).kind == "numeric" and not parts.builder:
            k, dtype, step, tol = short.numeric_check(result, parts, tolerance)
            full_text = script.with_numeric(parts.full, result.yardstick or next(iter(result.outcomes)), k, dtype,
                                            step, tol.rtol, tol.atol)
            numeric = True
    except short.NotShort:
        pass
    expected = short.full_expected(result, tolerance, numeric=numeric)
    if expected.exit == 0 and any(o.status == "differ" for o in result.oracles.values()):
        note += (" The script shows the modes agreeing; that the agreed values are wrong is the harness's "
                 "oracle finding, above.")
    return full_text, expected, note.strip()


@dataclasses.dataclass(frozen=True)
class _Stopped:
    """What a reproduction left when a stop was asked for: in `folder`, repro.py holds `written`
    (in words; "" when nothing was written)."""

    folder: Path
    written: str


def _write_repro(folder: Path, result, scripts: dict, environment: dict, info: CaseInfo, s: Settings,
                 stop: Optional[threading.Event] = None):
    """Writes one reproduction, after running it in a fresh process: ISSUE.md only when the script
    shows what the harness saw. Returns False when something could not be written, or the script
    does not show it (said on stderr), True when all is well, and a _Stopped when `stop` was set
    before it was done."""
    from harness.repro import issue, short, verify  # noqa: PLC0415

    stop = stop or threading.Event()
    if stop.is_set():
        return _Stopped(folder, "")
    ok, parts = scripts.get(result.point, (False, "the worker died before it could send the script's source"))
    if not ok:
        _say(f"no reproduction for {result.name}: {parts}")
        return True
    try:
        text, expected, note = _reproduction(result, parts, info.tolerance, s.full)
    except short.NotShort as e:
        _say(f"no reproduction for {result.name}: {e}")
        return True
    made = None
    if s.minimize and note:
        _say(f"repro.py for {result.name} is not minimised: {note}")
    elif s.minimize:
        text, note, made = _minimized(result, text, expected, s, parts, info.tolerance, stop)
    there = [name for name in ("repro.py", "ISSUE.md") if (folder / name).exists()]
    if there:
        _say(f"{folder} already holds {' and '.join(there)}, from before: replacing {'them' if len(there) > 1 else 'it'}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # An ISSUE.md from before describes another script: it goes, whatever this one's check says.
        (folder / "ISSUE.md").unlink(missing_ok=True)
    except OSError as e:
        sys.stderr.write(f"harness: cannot write {folder}: {e.strerror or e}; choose another directory\n")
        return False
    if not _write_outputs([(str(folder / "repro.py"), text)]):
        return False
    if stop.is_set():
        return _Stopped(folder, _unchecked(made))
    try:
        ran = verify.run(text, timeout=min(s.timeout, _SCRIPT_SECONDS), stop=stop)
    except verify.Interrupted:
        return _Stopped(folder, _unchecked(made))
    why = verify.shows(ran, expected)
    if why:
        sys.stderr.write(f"harness: {folder / 'repro.py'} does not show what the harness saw for {result.name}: "
                         f"{why}. ISSUE.md is not written; run the script to see what it does\n")
        return False
    output = ran.stdout if ran.exit is not None and ran.exit >= 0 else (
        ran.stdout + f"(the process was killed by signal {-ran.exit})\n")
    return _write_outputs([(str(folder / "ISSUE.md"),
                            issue.render(result, text, environment, info.description, output, note=note,
                                         seen=_seen(s.matrix, result, expected), origin=parts.origin,
                                         library=parts.library))])


def _unchecked(made) -> str:
    """What repro.py holds when a stop came before its check, in words."""
    if made is None:
        return "the script as written"
    if not made.shrunk:
        return "the script as written, unminimised"
    return (f"the smallest script the minimiser found so far ({made.after_lines} lines, from {made.before_lines}; "
            "each candidate kept showed the deviation in its runner)")


def _minimized(result, text: str, expected, s: Settings, parts, tolerance, stop: threading.Event):
    """The short script `text` shrunk by harness.repro.minimize, a sentence saying so, and the
    minimiser's record (the unshrunk script, no sentence and None when it cannot be shrunk)."""
    from harness.repro import minimize  # noqa: PLC0415

    live = sys.stderr.isatty()

    def progress(tried: int, size: int) -> None:
        if live:
            sys.stderr.write(f"\rharness: minimise {result.name}: {tried} candidates, smallest {size} characters ")
            sys.stderr.flush()
        elif tried % 50 == 0:
            _say(f"minimise {result.name}: {tried} candidates, smallest {size} characters")

    docstring = '"""' + textwrap.fill(
        f"Minimised from the harness case {result.case} at {result.point}: {expected.what}. Needs only "
        f"TensorFlow and NumPy; " + ("the process dies while that shows." if expected.exit is None else
                                     f"exits {expected.exit} while that shows."), width=_WIDTH - 3) + '"""\n'

    try:
        made = minimize.minimize(text, expected, budget=s.minimize_seconds, timeout=s.timeout,
                                 progress=progress, docstring=docstring, function=parts.expression,
                                 tolerance=tolerance, stop=stop)
    except ValueError as e:
        _say(f"repro.py for {result.name} is not minimised: {e}")
        return text, "", None
    finally:
        if live:
            sys.stderr.write("\n")
    summary = made.summary()
    if made.stopped != "interrupted":  # an interrupted run says so in one line at its end
        print(f"{result.name}: {summary}", flush=True)
    return made.text, (f"Minimised by the harness ({summary})." if made.shrunk else ""), made


def _read_matrix(path: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UsageError(f"--matrix_json {path}: cannot read it as JSON ({e}); give the file merge --json_out "
                         "wrote") from None
    if not isinstance(data, dict) or data.get("schema") != "harness.matrix/1" or not isinstance(data.get("rows"), list):
        raise UsageError(f"--matrix_json {path}: not a version matrix (schema harness.matrix/1); make one with "
                         "python -m harness merge REPORT.json ... --json_out matrix.json")
    return data


def _seen(matrix: Optional[dict], result, expected) -> str:
    """The releases in `matrix` where every mode the script shows ended as it did here, with
    the same verdict; "" without a matrix."""
    if not matrix:
        return ""
    rows = {r.get("mode"): r.get("cells", {}) for r in matrix["rows"]
            if r.get("case") == result.case and r.get("point") == result.point}
    versions = [v.get("version") for v in matrix.get("versions", []) if isinstance(v, dict)]
    if not rows or not expected.outcomes:
        return ""

    def same(version: str) -> bool:
        cells = [rows.get(mode, {}).get(version, {}) for mode in expected.outcomes]
        return all(c.get("status") == want and c.get("verdict") == result.verdict.value
                   for c, want in zip(cells, expected.outcomes.values()))

    seen = [v for v in versions if same(v)]
    other = [v for v in versions if v not in seen]
    if not seen:
        return f"None of the version matrix's releases ({', '.join(versions)}) shows the same outcome."
    return (f"Seen on TensorFlow {', '.join(seen)}" + (f"; not on {', '.join(other)}" if other else "")
            + " (from a version matrix: the same outcome in every mode shown, and the same verdict).")


def _write_repros(wanted: Sequence[tuple[Path, object, dict, CaseInfo]], environment: dict, s: Settings):
    """Writes each reproduction; their scripts run in parallel, one per core. Returns whether
    all went well, or, when Ctrl-C or SIGTERM came, the line that says what was left."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    if not wanted:
        return True
    stop = threading.Event()
    threads = ThreadPoolExecutor(max_workers=max(1, min(len(wanted), os.cpu_count() or 1)))
    futures = [threads.submit(_write_repro, w[0], w[1], w[2], environment, w[3], s, stop) for w in wanted]
    try:
        done = [f.result() for f in futures]
    except KeyboardInterrupt:
        # Every candidate and check running is ended at once; what each left is said in one line.
        stop.set()
        while True:
            try:
                threads.shutdown(wait=True)
                break
            except KeyboardInterrupt:
                continue
        return _stopped_line([f.result() for f in futures])
    threads.shutdown(wait=True)
    return all(d is True for d in done)


def _stopped_line(done: Sequence) -> str:
    stopped = [d for d in done if isinstance(d, _Stopped)]
    written = [d for d in stopped if d.written]
    said = [f"{d.folder / 'repro.py'} holds {d.written}, not checked in a fresh process" for d in written]
    finished = len(done) - len(stopped)
    if finished:
        said.append(f"{finished} of {len(done)} reproductions {'was' if finished == 1 else 'were'} finished before it")
    left = len(stopped) - len(written)
    if left:
        said.append(f"{left} {'was' if left == 1 else 'were'} not written")
    return "harness: interrupted while writing reproductions: " + "; ".join(said) + (
        "; no ISSUE.md beside an unchecked script" if written else "")


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


def _check_repro_flags(command: str) -> Optional[dict]:
    """Refuses reproduction flags that cannot work, before any case runs; returns the
    --matrix_json matrix, if given."""
    matrix = _read_matrix(MATRIX_JSON.value) if MATRIX_JSON.value else None
    if MINIMIZE.value:
        from harness.repro import minimize  # noqa: PLC0415

        if FULL.value:
            raise UsageError("--minimize shrinks the short script; drop --full")
        if command != _REPRO and not REPRO_DIR.value:
            raise UsageError("--minimize shrinks the scripts --repro_dir writes; give --repro_dir DIR")
        try:
            minimize.require()
        except minimize.MissingReducer as e:
            raise UsageError(str(e)) from None
    return matrix


def run(argv: Sequence[str]) -> int:
    """Runs the harness for parsed flags and positional arguments; returns the exit status."""
    command, args = _split(argv)
    _refuse_other_flags(command, args)
    if command == _MERGE:
        return _merge(args)
    if command == _RECORD:
        return _record(args[0], args[1:])
    settings = _settings(command, args)
    if command == _EXPLORE:
        return _explore_command(settings, args[0])
    return _Run(settings).main()


class _Run:
    """One run of cases, in named steps: start the workers and select the cases; run them,
    streaming each result; explore; then the reports, the reproductions and the summary.
    Every step reads the Settings, never a flag."""

    def __init__(self, s: Settings):
        self.s = s
        self.start = time.monotonic()
        self.environment: dict = {}
        self.selected: list[CaseInfo] = []
        self.finished: dict[int, object] = {}
        self.explored: list = []
        self.written = True  # every output written so far
        self.interrupted = False
        self.jsonl = None
        self.jsonl_opened = False  # the stream was opened (it may have been closed since)
        self.signals = _Signals()

    def main(self) -> int:
        self.signals.install()
        stop = self.run_cases()
        if stop is not None:
            return stop
        with self.signals.deferred():  # a signal now waits until what ran is on disk
            report = self.report()
        if self.signals.caught is not None:
            return self.summary(report)
        written = self.write_reproductions(report)
        if isinstance(written, str):  # Ctrl-C or SIGTERM while writing them: exits as an interrupted run
            self.summary(report)
            sys.stderr.write(written + "\n")
            return 130
        self.written = written and self.written
        return self.summary(report)

    def run_cases(self) -> Optional[int]:
        """Starts the workers, selects, runs and explores; an exit status when the run ends here."""
        from harness import loader, pool  # noqa: PLC0415

        runner = None
        try:
            runner = _runner(self.s)
            self.environment, catalogue = runner.start()
            self.selected = loader.shard(loader.select(catalogue, self.s.patterns), *self.s.shard)
            if self.s.list_only:
                _list(self.selected)
                return 0
            self.check_domains()
            self.open_stream()
            self.stream(runner)
            self.explore(runner)
        except loader.LoadError as e:
            raise UsageError(str(e)) from None
        except pool.PoolError as e:
            sys.stderr.write(f"harness: {e}\n")
            return 1
        except KeyboardInterrupt:
            self.interrupted = True
            if runner is not None:
                runner.kill()
        finally:
            if runner is not None:
                with self.signals.deferred():  # every case has run or been stopped: let the workers go
                    runner.close()
            if self.jsonl:
                with contextlib.suppress(OSError):  # a full disk: what was flushed stays
                    self.jsonl.close()
        return None

    def jobs(self) -> list:
        from harness.worker import Job  # noqa: PLC0415

        s = self.s
        repro = bool(s.repro_dir) or s.command == _REPRO
        return [Job(case_id=c.id, order=c.order, points=c.points, modes=s.modes, options=s.options,
                    strict_xpass=s.strict_xpass, repro=repro,
                    reruns=tuple((p, rerun_command(c.id, p, s, s.check, self.inputs_of(c, p))) for p in c.points))
                for c in self.selected]

    def inputs_of(self, case: CaseInfo, point: str) -> Optional[tuple[str, ...]]:
        """The --inputs of `point` of a check, which makes one point per --inputs, in order."""
        check = self.s.check
        if check is None or len(case.points) != len(check.inputs):
            return None
        return (check.inputs[case.points.index(point)],)

    def open_stream(self) -> None:
        """Opens the JSON Lines stream, refusing one that another live run is writing: two runs
        appending to one file would interleave their results (the lock goes with the process)."""
        import fcntl  # noqa: PLC0415 - POSIX only, like the worker pool

        path = self.s.jsonl_out
        if not path:
            return
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
        except OSError as e:
            raise UsageError(f"cannot write {path}: {e.strerror or e}; choose another path") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            flag = "--jsonl_out" if JSONL_OUT.value else "--json_out (its .jsonl stream)"
            raise UsageError(f"another harness run is writing {path}; give this run another {flag}, or wait "
                             "for that run to end") from None
        os.ftruncate(fd, 0)
        self.jsonl = os.fdopen(fd, "w", encoding="utf-8")
        self.jsonl_opened = True

    def stream(self, runner) -> None:
        """Runs every job, printing each result and appending it to the JSON Lines stream."""
        from harness.report import json_report, text  # noqa: PLC0415

        jobs = self.jobs()
        progress = Progress(total=sum(len(c.points) for c in self.selected))
        try:
            for done in runner.run(jobs, lambda job: progress.started(job.case_id), _pool_size(len(jobs), self.s.jobs)):
                self.finished[done.index] = done
                for result in done.results:
                    self.append(json_report.result_dict(result))
                progress.finished(done.index, "\n".join(text.line(r) for r in done.results), len(done.results))
        finally:
            progress.close()

    def append(self, record: dict) -> None:
        if not self.jsonl:
            return
        try:
            self.jsonl.write(json.dumps(record, allow_nan=False) + "\n")
            self.jsonl.flush()
        except OSError as e:
            sys.stderr.write(f"harness: cannot write {self.s.jsonl_out}: {e.strerror or e}; it holds the "
                             "results before this one, rerun with another path\n")
            self.written = False
            with contextlib.suppress(OSError):
                self.jsonl.close()
            self.jsonl = None

    def check_domains(self) -> None:
        """--explore N: refuses, before any case runs, a selected case's domains that cannot be drawn."""
        explore = _explore_module() if self.s.explore else None
        for info in (c for c in self.selected if explore and c.domains):
            try:
                explore.check(info, list(info.domains))
            except explore.ExploreError as e:
                raise UsageError(f"--explore: {e}") from None

    def explore(self, runner) -> None:
        """--explore N: after the run, every selected case that declares domains."""
        from harness.report import text  # noqa: PLC0415

        for info in (c for c in self.selected if self.s.explore and c.domains):
            found = _explore_case(runner, info, (), self.s, self.s.explore, None, self.environment)
            self.explored.append(found)
            print(text.explored(found), flush=True)

    def report(self):
        """The run's Report, written to --json_out and --junit_out."""
        from harness.records import Report  # noqa: PLC0415
        from harness.report import json_report, junit  # noqa: PLC0415

        ordered = [self.finished[i] for i in sorted(self.finished)]
        seconds = time.monotonic() - self.start  # the start's wall-clock time from it, so both agree
        report = Report(environment=self.environment, modes=self.s.modes,
                        results=tuple(r for done in ordered for r in done.results),
                        started=time.time() - seconds, seconds=seconds, explore=tuple(self.explored))
        self.written = _write_outputs([(path, renderer.render(report))
                                       for path, renderer in ((self.s.json_out, json_report), (self.s.junit_out, junit))
                                       if path]) and self.written
        if self.s.jsonl_out and self.jsonl_opened:
            how = "--jsonl_out" if JSONL_OUT.value else "beside --json_out"
            _say(f"streamed each result as it finished to {self.s.jsonl_out} ({how}, JSON Lines)")
        return report

    def write_reproductions(self, report):
        """repro's one reproduction into --out, or --repro_dir's for every fail, xpass and crash: whether all
        went well, or the line to say when a stop was asked for (see _write_repros)."""
        ordered = [self.finished[i] for i in sorted(self.finished)]
        infos = {c.id: c for c in self.selected}
        wanted = []
        if self.s.command == _REPRO and ordered:
            done = ordered[0]
            chosen = next((r for r in done.results if r.verdict.value != "pass"), done.results[0])
            wanted.append((Path(self.s.out), chosen, done.scripts, infos[chosen.case]))
        elif self.s.repro_dir:
            for done in ordered:
                for r in done.results:
                    if r.verdict.value in _REPRO_VERDICTS:
                        try:
                            folder = _repro_folder(self.s.repro_dir, r.case, r.point)
                        except ValueError as e:
                            _say(f"no reproduction for {r.name}: {e}; remove the link")
                            continue
                        wanted.append((folder, r, done.scripts, infos[r.case]))
        return _write_repros(wanted, self.environment, self.s)

    def summary(self, report) -> int:
        from harness.report import text  # noqa: PLC0415

        not_run = sum(len(c.points) for c in self.selected) - len(report.results)
        print(text.summary(report.results, time.monotonic() - self.start, not_run=not_run))
        if self.interrupted:
            sys.stderr.write(f"harness: interrupted; {not_run} case points did not run; reports hold what finished\n")
            return 130
        if self.signals.caught is not None:
            name = signal.Signals(self.signals.caught).name
            skipped = "; no reproductions were written" if self.s.repro_dir or self.s.command == _REPRO else ""
            sys.stderr.write(f"harness: {name} after every case had run; the reports were written first{skipped}\n")
            return 130
        return 1 if report.failed or not self.written else 0


def _explore_module():
    from harness import explore  # noqa: PLC0415

    try:
        explore.require()
    except explore.ExploreError as e:
        raise UsageError(str(e)) from None
    return explore


def _explore_command(s: Settings, target: str) -> int:
    """python -m harness explore TARGET: one case's search, its reports and its repro."""
    from harness import loader, pool  # noqa: PLC0415
    from harness.records import Report  # noqa: PLC0415
    from harness.report import json_report, junit, text  # noqa: PLC0415

    explore = _explore_module()
    pattern = s.patterns[0]
    start = time.monotonic()
    runner = _runner(s)
    try:
        environment, catalogue = runner.start()
        selected = loader.select(catalogue, [pattern])
        if len(selected) != 1:
            raise UsageError(f"explore takes one case; {pattern!r} selects {len(selected)}: "
                             f"{', '.join(c.id for c in selected[:5])}")
        found = _explore_case(runner, selected[0], s.domains, s, s.examples, s.check, environment)
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
    report = Report(environment=environment, modes=s.modes, results=(), started=time.time() - seconds,
                    seconds=seconds, explore=(found,))
    written = _write_outputs([(path, renderer.render(report))
                              for path, renderer in ((s.json_out, json_report), (s.junit_out, junit)) if path])
    print(text.explored(found))
    return 1 if found.failed or not written else 0


def _explore_case(runner, info: CaseInfo, given: Sequence, s: Settings, limit: int, check, environment: dict):
    """Explores one case: its declared domains, with `given` (argument, Domain) pairs over them."""
    from harness import explore  # noqa: PLC0415
    from harness.records import Explored  # noqa: PLC0415
    from harness.worker import Job  # noqa: PLC0415

    domains = {**dict(info.domains), **dict(given)}
    described = tuple((n, d.describe()) for n, d in domains.items())
    progress = Progress(total=limit)
    tried = [0]

    def run_at(values, repro: bool = False):
        label = explore.label_of(values)
        command, _ = _explore_rerun(info, values, s, check)
        job = Job(case_id=info.id, order=info.order, points=(label,), modes=s.modes, options=s.options,
                  strict_xpass=s.strict_xpass, repro=repro, reruns=((label, command),), values=tuple(values))
        return next(iter(runner.run([job], lambda job: None, 1)))

    def measure(values):
        tried[0] += 1
        progress.started(f"explore {info.id}: example {tried[0]} at {explore.label_of(values)}")
        return run_at(values).results[0]

    key = repr((info.id, info.target, sorted(described), info.arguments, info.order, s.modes, s.options,
                check and (check.target, check.dtype, check.wrt, check.expect)))
    start = time.monotonic()
    try:
        search = explore.search(info, list(domains.items()), measure, examples=limit, seed=s.seed, key=key,
                                strict_xpass=s.strict_xpass)
    finally:
        progress.close()
    seconds = time.monotonic() - start
    if search.result is None:
        return Explored(case=info.id, domains=described, tried=search.tried, limit=limit, seconds=seconds,
                        seed=s.seed, note=search.note,
                        stopped=search.stopped or ("Hypothesis drew no example" if not search.tried else ""))
    command, why = _explore_rerun(info, search.values, s, check)
    if s.repro_dir:
        done = run_at(search.values, repro=True)
        r = done.results[0]
        try:
            folder = _repro_folder(s.repro_dir, r.case, r.point)
        except ValueError as e:
            _say(f"no reproduction for {r.name}: {e}; remove the link")
        else:
            _write_repro(folder, r, done.scripts, environment, info, s)
    if check is None and not why:
        why = ("the check command calls the function alone: the case's tolerance, expectations and oracles are "
               "not in it")
        command_kept = command
    else:
        command_kept = "" if why else command
    return Explored(case=info.id, domains=described, tried=search.tried, limit=limit, seconds=seconds,
                    seed=s.seed, found=search.result, inputs=explore.inputs_literal(search.values),
                    check=command_kept, note="; ".join(n for n in (search.note, why) if n), shrinking=search.shrinking)


def _explore_rerun(info: CaseInfo, values, s: Settings, check) -> tuple[str, str]:
    """(a command that reruns `info` at `values`, "" or why it is not a check command)."""

    from harness import explore  # noqa: PLC0415
    from harness.checking import CheckSpec  # noqa: PLC0415

    literal = explore.inputs_literal(values)
    label = explore.label_of(values)
    if check is not None:
        spec = dataclasses.replace(check, inputs=(literal,), domains=())
        return rerun_command(f"check.{check.name}", label, s, spec), ""
    dtypes = {dtype for _, dtype, _ in info.arguments}
    again = shlex.join(["python", "-m", "harness", "explore", info.id, f"--mode={','.join(s.modes)}"]
                       + [f"--case_file={p}" for p in s.case_files]
                       + ([f"--seed={s.seed}"] if s.seed is not None else []))
    if not info.target or len(dtypes) != 1 or not dtypes <= {"float16", "float32", "float64"}:
        return again, (f"{info.id}'s function cannot be named to check (a builder, or arguments of several "
                       f"dtypes); rerun the search: {again}")
    spec = CheckSpec(target=info.target, inputs=(literal,), dtype=dtypes.pop(), order=info.order)
    name = info.target.rsplit(":", 1)[1]
    command = rerun_command(f"check.{name}", label, s, spec)
    return command, ""


def main(argv: Sequence[str]) -> int:
    for stream in (sys.stdout, sys.stderr):  # a lone surrogate in a message is printed escaped, never fatal
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")
    try:
        return run(argv)
    except UsageError as e:
        _usage_exit(str(e))


def entry() -> None:
    app.run(main, flags_parser=_parse_flags)
