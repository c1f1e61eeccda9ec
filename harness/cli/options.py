"""The flag table: every flag, its check, the group --help shows it in and the commands that take
it.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from absl import flags

from harness import mode_names
from harness import report as _report

# Each help starts with one short sentence: `python -m harness --help` shows that sentence, and
# --helpfull and COMMAND --help the whole text.
MODE = flags.DEFINE_string(
    "mode", "all", f"The modes to run: all, full, keras, keras3, contexts or a list. "
    f"A comma list may name those, contexts and modes. With 'all' they are "
    f"{', '.join(mode_names.CORE_MODES)}; with 'full' {', '.join(mode_names.FULL_MODES)}; with "
    f"'keras' the tf_keras training steps {', '.join(mode_names.STEP_MODES)}; with 'keras3' the "
    f"Keras 3 ones {', '.join(mode_names.KERAS3_MODES)}; with 'contexts' the call inside each of "
    f"{', '.join(mode_names.CONTEXTS)}, a mode <context>_<base> for each base it runs in "
    f"({', '.join(mode_names.CONTEXT_MODES)}), and a context's name selects its modes; the other "
    f"modes are {', '.join(m for m in mode_names.KNOWN_MODES if m not in mode_names.CONTEXT_MODES)}"
    ".")


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
    _PatternList(), "cases", None,
    "Comma list of globs on case ids, or CASE_ID[POINT] for one point. For example "
    "'seeds.*'; default: every case. Commas inside [...] belong to the point.",
    serializer=flags.CsvListSerializer(","))

CASE_FILES = flags.DEFINE_multi_string(
    "case_file", [],
    "A Python file defining CASES with the harness case API (repeatable). Its cases "
    "run instead of the built-in library, unless --library is given.")

LIBRARY = flags.DEFINE_bool(
    "library", None, "Include the built-in cases (default: unless --case_file is given).")

LIST = flags.DEFINE_bool("list", False,
                         "List the selected cases with their descriptions, and exit.")

JSON_OUT = flags.DEFINE_string("json_out", None,
                               "Write the JSON report (schema harness.report/2) here.")

JUNIT_OUT = flags.DEFINE_string("junit_out", None, "Write a JUnit XML report here.")

JSON_VALUES = flags.DEFINE_enum(
    "json_values", "summary", ["summary", "full"],
    "Large JSON report values: summarized, or in full. A value of more than 16 elements is "
    "summarized in the JSON report and its .jsonl stream by default: its shape, dtype, first 8 "
    "elements, range, NaN and infinity counts, and largest difference from the yardstick mode's; "
    "full writes every element (a report of large arrays then runs to megabytes).")

STRICT_XPASS = flags.DEFINE_bool(
    "strict_xpass", False,
    "Count an xpass as a failure. An xpass is a declared deviation that did not happen.")

JSONL_OUT = flags.DEFINE_string(
    "jsonl_out", None,
    "Append each result to this JSON Lines file as it finishes. Default: next to "
    "--json_out, with the suffix .jsonl.")

JOBS = flags.DEFINE_integer(
    "jobs", 0, "Worker processes running cases in parallel. With 0: one, plus one more per "
    f"{8} selected cases up to the number of cores (each worker costs a TensorFlow import); "
    "with two cores or more, two start at once (the variable HARNESS_WORKERS_AT_ONCE sets "
    "another number) and import TensorFlow side by side while the cases load, and both run "
    "cases. Never more workers than selected cases (one started "
    "ahead is ended); more than 4 per CPU is refused as a usage error.",
    lower_bound=0)

TIMEOUT = flags.DEFINE_float("timeout", 300.0,
                             "Seconds a case may run before its worker is killed ('inf': "
                             "never). The time covers all its modes and points; a killed case is "
                             "reported as timeout.", lower_bound=0.1)

MODE_MEMORY_MIB = flags.DEFINE_float(
    "mode_memory_mib", 2048.0,
    "MiB of memory one mode may add to its worker (0: no limit). A mode that adds more at a "
    "case's points (counted in what the worker allocates, RssAnon, not in the libraries it maps, "
    "such as a GPU runtime loaded on first use) is stopped with its worker, and the case runs "
    "again without it, that mode reported skipped with what it took: TensorFlow's eager tape "
    "keeps every tensor of the forward until the gradient, so eager mode at a large point can "
    "need many times what the same gradient needs in a tf.function. Read from /proc (Linux); "
    "elsewhere, and with --inprocess, no limit.",
    lower_bound=0)

INPROCESS = flags.DEFINE_bool(
    "inprocess", False,
    "Run every case in this process, for debugging with pdb. There are no workers, so "
    "no crash isolation and no timeouts.")

REPRO_DIR = flags.DEFINE_string(
    "repro_dir", None,
    "Write repro.py and ISSUE.md for every fail, xpass and crash here. One folder per "
    "case and point.")

INPUTS = flags.DEFINE_multi_string(
    "inputs", [],
    "check/repro PATH.py:NAME: one input point as a Python literal; a tuple gives one value "
    "per argument, e.g. --inputs '1.0' --inputs '(5.0, [1.0, 2.0])' (repeatable).")

ORDER = flags.DEFINE_integer("order", 1, "check/repro/explore PATH.py:NAME: the derivative order.",
                             lower_bound=1)

DTYPE = flags.DEFINE_string("dtype", "float32",
                            "check/repro/explore PATH.py:NAME: the dtype of every input.")

POINT = flags.DEFINE_string("point", None,
                            "repro: the point label (default: the first point that does "
                                           "not pass, else the first).")

OUT = flags.DEFINE_string("out", None, "repro: the directory to write repro.py and ISSUE.md into.")

SHARD_INDEX = flags.DEFINE_integer(
    "shard_index", None,
    "Run only this shard of the selected cases (0-based). Default: $TEST_SHARD_INDEX, "
    "else 0.", lower_bound=0)

NUM_SHARDS = flags.DEFINE_integer(
    "num_shards", None,
    "Split the selected cases into this many shards. Default: $TEST_TOTAL_SHARDS, else 1; "
    "merging every shard's report gives the report of one run.", lower_bound=1)

MARKDOWN_OUT = flags.DEFINE_string("markdown_out", None, "merge: write the Markdown table here.")

HTML_OUT = flags.DEFINE_string("html_out", None, "merge: write the HTML page here.")

UNCONNECTED = flags.DEFINE_enum(
    "unconnected_gradients", "none", ["none", "zero"],
    "Unconnected gradients are None or zeros, in every mode. None is kept apart from zeros.")

NUMERIC = flags.DEFINE_bool(
    "numeric", True,
    "Check the agreed values against central finite differences. This is the numeric "
    "oracle; --nonumeric turns it off.")

STRICT_NONE = flags.DEFINE_bool(
    "strict_none", False,
    "Numeric oracle: judge every None gradient. Without it, a None that every mode returns for an "
    "argument the case did not name in wrt (a replayed recording, a case differentiating all its "
    "arguments) is the function saying it has no gradient there: said, not judged.")

STRICT_SURROGATE = flags.DEFINE_bool(
    "strict_surrogate", False,
    "Numeric oracle: fail every undeclared surrogate gradient. Without it, where the "
    "forward is locally constant (a step function's) a nonzero custom gradient is a surrogate (a "
    "straight-through estimator's), and passes when it points the way the forward moves and is "
    "linear in its upstream gradient; one pointing the other way fails either way.")

NUMERIC_FULL = flags.DEFINE_bool(
    "numeric_full", False,
    "Numeric oracle: move every element on its own, whatever the size. Without "
    "it, a point with more than 1024 elements outside its elementwise arguments is checked along "
    "two seeded random directions.")

UPSTREAM = flags.DEFINE_bool(
    "upstream", True,
    "Also take the gradients of a seeded weighted sum of the outputs. This is the "
    "upstream-gradient check: every order of it is taken, compared across modes and checked "
    "numerically; a grad_fn that ignores or reduces its dy is right only at the plain contraction. "
    "--noupstream turns it off.")

WRT = flags.DEFINE_list(
    "wrt", None,
    "check/repro/explore PATH.py:NAME: differentiate only these arguments (comma list of names; "
    "default: every floating or complex argument).")

EXPECT = flags.DEFINE_multi_string(
    "expect", [],
    "check/repro/explore PATH.py:NAME: a declared deviation, as a case's Expectation: "
    "MODES:OUTCOME[:REASON], MODES a comma list of modes and oracles or 'all', OUTCOME an "
    "exception class or 'values differ', 'bad gradient', 'gradient unused', 'surrogate'; e.g. "
    "--expect 'numeric:surrogate:a straight-through estimator' (repeatable).")

SYMMETRIC = flags.DEFINE_list(
    "symmetric", None,
    "check/repro PATH.py:NAME: arguments that are symmetric matrices; the numeric oracle "
    "moves them along symmetric directions only (e.g. the input of tf.linalg.cholesky).")

REPEAT = flags.DEFINE_integer(
    "repeat", 1,
    "Run every mode this many times. Values that change between the runs make the verdict "
    "'flaky' (never retried away).", lower_bound=1)

FULL = flags.DEFINE_bool(
    "full", False,
    "Write the complete repro.py instead of the short one. The complete script runs every mode "
    "it can write out, with generic helpers, a tolerance table and --json output; the short one is "
    "straight-line code for the yardstick mode and the modes that deviate.")

MINIMIZE = flags.DEFINE_bool(
    "minimize", False,
    "Shrink each short repro.py while the same deviation holds. The function, what it uses, "
    "the input values and the driving code are reduced with pysource-minimize (pip install "
    "'.[minimize]' in the checkout), each candidate run in a worker process under --timeout.")

MINIMIZE_SECONDS = flags.DEFINE_float(
    "minimize_seconds", 300.0,
    "The time budget of --minimize, per reproduction. At the budget it keeps the "
    "smallest script found so far.", lower_bound=1.0)

MATRIX_JSON = flags.DEFINE_string(
    "matrix_json", None,
    "A version matrix (merge --json_out, schema harness.matrix/1). ISSUE.md then names the "
    "TensorFlow releases where the same outcome was seen.")

DOMAIN = flags.DEFINE_multi_string(
    "domain", [],
    "explore: one argument's domain, NAME=[LOW, HIGH] (parentheses for an open end), then "
    "';shape=(2, 2)|(3, 3)', ';symmetric', ';positive', ';exclude=0,1' and ';near=0.01' as needed, "
    "e.g. --domain 'x=[-100, 100]' (repeatable). For a case id it replaces that argument's "
    "declared domain.")

EXAMPLES = flags.DEFINE_integer(
    "examples", 100, "explore: the most examples to draw before saying that none failed.",
    lower_bound=1)

EXPLORE = flags.DEFINE_integer(
    "explore", 0,
    "Explore each selected case with domains, up to N examples (0: off). After the run, as "
    "python -m harness explore CASE_ID does, for every selected case that declares domains.",
    lower_bound=0)

SEED = flags.DEFINE_integer(
    "seed", None,
    "The explore search's seed: the same seed draws the same examples. A seeded search leaves the "
    "example database (.harness/explore-db) alone, as Hypothesis does. Default: Hypothesis "
    "chooses, and a failure found is tried first next time.")

RECORDED = flags.DEFINE_string(
    "recorded", None,
    "Replay this recorded folder's functions as cases. The folder is what python -m pytest "
    "--harness-record=DIR or python -m harness record DIR wrote; its cases run instead of the "
    "built-in library (unless --library is given), as python -m harness replay DIR runs them.")

RECORD_POINTS = flags.DEFINE_integer(
    "record_points", 3, "record: the distinct points kept per function.", lower_bound=1)

RECORD_EAGER = flags.DEFINE_boolean(
    "record_eager", False,
    "record: run the command's tf.functions (and model.fit's train function) eagerly, "
    "so that calls made inside them are recorded with their values instead of replayed at drawn "
    "values; the command then runs eagerly, and slower (pytest: --harness-record-eager).")

RECORD_CHECK = flags.DEFINE_boolean(
    "check", False,
    "record: once the command has ended, replay what it recorded (in the core modes, with the "
    "oracles and the reviewed expectations file of this folder), as pytest "
    "--harness-check does; the exit "
    "status is the command's where it failed, else the replay's.")

RECORD_INCLUDE = flags.DEFINE_list(
    "record_include", [],
    "record: also record the custom gradients these packages define themselves (keras, tf_keras, "
    "tensorflow), which are left out by default as the framework's, not the user's: a library's "
    "maintainers recording their own library name it here (pytest: --harness-record-include).")

EXPECTATIONS = flags.DEFINE_string(
    "expectations", None,
    "The reviewed expectations file of known deviations (default: harness-expectations"
    ".json in this folder, or where its pyproject.toml's [tool.harness] expectations says; never "
    "one above it); "
    "'' reads none.")

TRUST_RECORDING = flags.DEFINE_boolean(
    "trust_recording", False,
    "Replay a recording others can change, which is refused otherwise. A session folder or "
    "process file writable by its group or by anyone, or owned by another user, is refused, "
    "since a recording holds code: the copies of functions and the modules replay imports and "
    "runs.")

ACCEPT = flags.DEFINE_boolean(
    "accept", False,
    "Judge without the reviewed expectations file, then write it from this run (the "
    "file --expectations names, else the one in this folder, else "
    "harness-expectations.json here): a new deviation gets an entry, an entry whose function now "
    "passes goes, a reason written by hand stays; prints what changed (pytest: "
    "--harness-accept).")

VERSIONS = flags.DEFINE_string(
    "versions", None,
    "matrix: the TensorFlow builds, a comma list. Each item is a release of the pin table "
    "(2.16.2), all (every release of it), a range of its releases (2.16..2.21 or 2.16.2..2.21.0: "
    "both ends included, an end a minor or a release), nightly (the newest tf-nightly for this "
    "Python) or a tf-nightly build (2.22.0.dev20260601).")

OUT_DIR = flags.DEFINE_string(
    "out_dir", None,
    "matrix/bisect: the folder for each build's JSON report and log (created). matrix writes "
    "the merged matrix there too (matrix.md, matrix.html, matrix.json) unless told otherwise; "
    "bisect without it uses a temporary folder, removed at its end.")

CACHE_DIR = flags.DEFINE_string(
    "cache_dir", "~/.cache/harness/matrix",
    "matrix/bisect: where the environments are kept between runs, one per build. A build whose "
    "environment is there installs nothing.")

PYTHON = flags.DEFINE_string(
    "python", None,
    "matrix/bisect: the Python interpreter the environments are made from (default: this one). "
    "Nightlies are chosen among the builds with a wheel for it.")

INSTALLER = flags.DEFINE_string(
    "installer", "auto",
    "matrix/bisect: what builds the environments: auto, uv or pip. With auto, uv where it is on "
    "PATH (much faster for TensorFlow's wheels), else venv and pip.")

INDEX_URL = flags.DEFINE_string(
    "index_url", None,
    "matrix/bisect: the package index tf-nightly builds are listed and installed from. Default: "
    "$UV_DEFAULT_INDEX, $UV_INDEX_URL or $PIP_INDEX_URL, else https://pypi.org/simple.")

GOOD = flags.DEFINE_string(
    "good", None,
    "bisect: the build with the old result, a release of the pin table or a tf-nightly build. "
    "It must lie before --bad.")

BAD = flags.DEFINE_string(
    "bad", None,
    "bisect: the build with the new result: a release of the pin table, nightly (the newest "
    "tf-nightly) or a tf-nightly build.")

BISECT_JSON = flags.DEFINE_string(
    "bisect_json", None,
    "repro: a bisect's answer (bisect --json_out, schema harness.bisect/1) for the same case. "
    "ISSUE.md then names the last good and first bad builds and the commits between them.")

OUTPUT_FLAGS = (JSON_OUT, JUNIT_OUT, JSONL_OUT, MARKDOWN_OUT, HTML_OUT)

CASES_PER_EXTRA_WORKER = 8

# Workers started before the cases are known (where there are cores for them and --jobs allows).
WORKERS_AT_ONCE = 2

_JOBS_PER_CPU = 4


class UsageError(Exception):
    """A user mistake: printed as one line, exit status 2."""


def _mode_ok(value: str) -> bool:
    try:
        mode_names.parse_modes(value)
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
        raise flags.ValidationError("nan is not a number of seconds; give seconds, or 'inf' for no "
                                    "timeout")
    return True


def _jobs_ok(value) -> bool:
    limit = _JOBS_PER_CPU * (os.cpu_count() or 1)
    if value is not None and value > limit:
        raise flags.ValidationError(f"{value} workers is more than {_JOBS_PER_CPU} per CPU; give "
                                    f"at most {limit}, "
                                    "or 0 for one per 8 selected cases up to the cores")
    return True


def _folder_ok(value) -> bool:
    if value is not None and Path(value).exists() and not Path(value).is_dir():
        raise flags.ValidationError(f"{value} is a file; give a directory (it is created if "
                                    "missing)")
    return True


def _installer_ok(value) -> bool:
    if value not in ("auto", "uv", "pip"):
        raise flags.ValidationError(f"{value!r} is not an installer; give auto, uv or pip")
    return True


flags.register_validator("mode", _mode_ok)


flags.register_validator(INSTALLER.name, _installer_ok)


flags.register_validator(TIMEOUT.name, _timeout_ok)


flags.register_validator(JOBS.name, _jobs_ok)


for _flag in OUTPUT_FLAGS:
    flags.register_validator(_flag.name, _output_ok)


for _flag in (REPRO_DIR, OUT, OUT_DIR, CACHE_DIR):
    flags.register_validator(_flag.name, _folder_ok)

HELP_ARGS = ("-h", "-?", "--help", "--helpshort", "--helpfull", "--helpxml")


RUN_CMD, CHECK_CMD, REPRO_CMD, MERGE_CMD, EXPLORE_CMD = "run", "check", "repro", "merge", "explore"


REPLAY_CMD, RECORD_CMD = "replay", "record"
MATRIX_CMD, BISECT_CMD = "matrix", "bisect"
LIST_CMD = "list"  # a run with --list, under a name of its own

RUNS_CASES = (RUN_CMD, CHECK_CMD, REPRO_CMD, EXPLORE_CMD, REPLAY_CMD)

# The commands that run the harness under other TensorFlow builds: each of them passes the run
# flags it takes on to every run (harness.cli.matrix).
ACROSS = (MATRIX_CMD, BISECT_CMD)


SELECTION, JUDGING, REPORTS, EXECUTION = "Selection", "Modes and oracles", "Reports", "Execution"

GROUPS = (SELECTION, JUDGING, REPORTS, EXECUTION)


# Every flag of the harness, once: the group `--help` shows it in (None: one command's own flag,
# shown in that command's --help only) and the commands that take it. The help and the refusal of
# a flag given to a command that does not take it both read this table, so they cannot drift.
FLAG_TABLE = {
    flag.name: (group, commands)
    for flag, group, commands in (
        # check runs one function at its --inputs; bisect takes its case id as its target
        (CASES, SELECTION, (RUN_CMD, REPLAY_CMD, MATRIX_CMD)),
        (CASE_FILES, SELECTION, RUNS_CASES + ACROSS),
        (LIBRARY, SELECTION, RUNS_CASES + ACROSS),
        (LIST, SELECTION, (RUN_CMD, REPLAY_CMD)),
        (SHARD_INDEX, SELECTION, (RUN_CMD, REPLAY_CMD)),
        (NUM_SHARDS, SELECTION, (RUN_CMD, REPLAY_CMD)),
        (MODE, JUDGING, RUNS_CASES + ACROSS),
        (NUMERIC, JUDGING, RUNS_CASES + ACROSS),
        (NUMERIC_FULL, JUDGING, RUNS_CASES + ACROSS),
        (UPSTREAM, JUDGING, RUNS_CASES + ACROSS),
        (UNCONNECTED, JUDGING, RUNS_CASES + ACROSS),
        (STRICT_NONE, JUDGING, RUNS_CASES + ACROSS),
        (STRICT_SURROGATE, JUDGING, RUNS_CASES + ACROSS),
        (REPEAT, JUDGING, RUNS_CASES + ACROSS),
        (STRICT_XPASS, JUDGING, RUNS_CASES + ACROSS),
        (JSON_OUT, REPORTS, RUNS_CASES + (MERGE_CMD,) + ACROSS),
        (JUNIT_OUT, REPORTS, RUNS_CASES),
        (JSON_VALUES, REPORTS, RUNS_CASES),
        (JSONL_OUT, REPORTS, (RUN_CMD, CHECK_CMD, REPRO_CMD, REPLAY_CMD)),
        (
            REPRO_DIR,
            REPORTS,
            (RUN_CMD, CHECK_CMD, EXPLORE_CMD, REPLAY_CMD),
        ),  # repro writes into --out
        (FULL, REPORTS, RUNS_CASES),
        (MINIMIZE, REPORTS, RUNS_CASES),
        (MINIMIZE_SECONDS, REPORTS, RUNS_CASES),
        (MATRIX_JSON, REPORTS, RUNS_CASES),
        (
            JOBS,
            EXECUTION,
            (RUN_CMD, CHECK_CMD, REPRO_CMD, REPLAY_CMD) + ACROSS,
        ),  # explore runs one example at a time
        (TIMEOUT, EXECUTION, RUNS_CASES + ACROSS),
        (MODE_MEMORY_MIB, EXECUTION, RUNS_CASES + ACROSS),
        (INPROCESS, EXECUTION, RUNS_CASES),
        (INPUTS, None, (CHECK_CMD, REPRO_CMD)),
        (ORDER, None, (CHECK_CMD, REPRO_CMD, EXPLORE_CMD, REPLAY_CMD)),
        (DTYPE, None, (CHECK_CMD, REPRO_CMD, EXPLORE_CMD)),
        (WRT, None, (CHECK_CMD, REPRO_CMD, EXPLORE_CMD)),
        (EXPECT, None, (CHECK_CMD, REPRO_CMD, EXPLORE_CMD, REPLAY_CMD)),
        (SYMMETRIC, None, (CHECK_CMD, REPRO_CMD)),
        (POINT, None, (REPRO_CMD,)),
        (OUT, None, (REPRO_CMD,)),
        (DOMAIN, None, (EXPLORE_CMD,)),
        (EXAMPLES, None, (EXPLORE_CMD,)),
        (SEED, EXECUTION, (RUN_CMD, EXPLORE_CMD)),
        (EXPLORE, EXECUTION, (RUN_CMD,)),
        (MARKDOWN_OUT, None, (MERGE_CMD, MATRIX_CMD)),
        (HTML_OUT, None, (MERGE_CMD, MATRIX_CMD)),
        (RECORDED, SELECTION, (RUN_CMD, REPRO_CMD) + ACROSS),
        (RECORD_POINTS, None, (RECORD_CMD,)),
        (RECORD_EAGER, None, (RECORD_CMD,)),
        (RECORD_INCLUDE, None, (RECORD_CMD,)),
        (RECORD_CHECK, None, (RECORD_CMD,)),
        (EXPECTATIONS, None, (REPLAY_CMD,)),
        (TRUST_RECORDING, SELECTION, (REPLAY_CMD, RUN_CMD, REPRO_CMD) + ACROSS),
        (ACCEPT, None, (REPLAY_CMD,)),
        (VERSIONS, None, (MATRIX_CMD,)),
        (OUT_DIR, None, ACROSS),
        (CACHE_DIR, None, ACROSS),
        (PYTHON, None, ACROSS),
        (INSTALLER, None, ACROSS),
        (INDEX_URL, None, ACROSS),
        (GOOD, None, (BISECT_CMD,)),
        (BAD, None, (BISECT_CMD,)),
        (BISECT_JSON, None, (REPRO_CMD,)),
    )
}
