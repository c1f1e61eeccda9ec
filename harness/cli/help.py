"""--help and each command's --help, read from the flag table and the command table; the flags
parsed.
"""

from __future__ import annotations

import re
import sys
import textwrap
from typing import Optional

from absl import flags

from harness.cli.options import (
    BISECT_CMD,
    CHECK_CMD,
    EXPLORE_CMD,
    FLAG_TABLE,
    GROUPS,
    HELP_ARGS,
    LIST_CMD,
    MATRIX_CMD,
    MERGE_CMD,
    RECORD_CMD,
    REPLAY_CMD,
    REPRO_CMD,
    RUN_CMD,
)
from harness.matrix import pins
from harness.records import exit_status_text

VERDICT_EXIT = exit_status_text()


# Each command: its usage line, one line for --help, what it does, an example that works as written
# (from the checkout's root), and its exit status.
COMMANDS = {
    RUN_CMD: (
        "python -m harness [run] [flags]",
        "the default: run the case library, or the --case_file cases",
        (
            "Runs the case library (or the --case_file cases) in the selected modes and prints one "
            "line per case and point. The command name may be left out: python -m harness [flags] "
            "is the same run."
        ),
        ("python -m harness --mode all --cases 'seeds.*' --json_out report.json",),
        VERDICT_EXIT,
    ),
    CHECK_CMD: (
        "python -m harness check PATH.py:NAME --inputs LITERAL [--inputs LITERAL ...] [flags]",
        "check one function at the --inputs points, with no case written",
        (
            "Checks one function (or a zero-argument builder returning it) without writing a "
            "case: every --inputs is one point."
        ),
        ("python -m harness check cases/seeds.py:custom_square --inputs=3.0 --order=2",),
        VERDICT_EXIT,
    ),
    REPRO_CMD: (
        "python -m harness repro CASE_ID|PATH.py:NAME --out DIR [flags]",
        "write repro.py and ISSUE.md for one case and point into --out DIR",
        (
            "Writes repro.py (needing only TensorFlow and NumPy) and ISSUE.md for one case and "
            "point. A PATH.py:NAME target is described by the same flags as for check."
        ),
        ("python -m harness repro seeds.docstring_nested --out repro-nested",),
        VERDICT_EXIT,
    ),
    MERGE_CMD: (
        "python -m harness merge REPORT.json [REPORT.json ...] [flags]",
        "merge reports from several TensorFlow releases into a version matrix",
        (
            "Merges JSON reports from several TensorFlow releases into one version matrix, "
            "written as Markdown (--markdown_out), HTML (--html_out) or JSON (--json_out, schema "
            "harness.matrix/1)."
        ),
        (
            "python -m harness --cases 'seeds.*' --json_out report.json",
            "python -m harness merge report.json --markdown_out matrix.md --html_out matrix.html",
        ),
        (
            "Exit status: 0 when every output was written; 1 when one could not be (said on "
            "stderr); 2 for a usage error."
        ),
    ),
    EXPLORE_CMD: (
        "python -m harness explore PATH.py:NAME|CASE_ID [--domain DOMAIN ...] [flags]",
        "search the domains for a failing input and shrink it to the simplest",
        (
            "Draws inputs from each argument's domain with Hypothesis, judges each exactly as a "
            "point of a run, stops at the first failing verdict and shrinks it to the simplest "
            "input that fails with the same cause; prints it as an input literal with a check "
            "command that reruns it. A CASE_ID explores the domains its case declares. The "
            "example database is .harness/explore-db in the working directory, so a failure found "
            "is tried first next time. Needs Hypothesis: pip install '.[explore]' in the checkout."
        ),
        ("python -m harness explore cases/seeds.py:custom_square --domain 'x=[-10, 10]' --seed=0",),
        (
            "Exit status: 0 when examples were judged and none failed; 1 when one failed, when "
            "none was judged, or when Hypothesis ended the search early (or a case point of the "
            "run failed); 2 for a usage error, a domain explore cannot draw from among them."
        ),
    ),
    REPLAY_CMD: (
        "python -m harness replay DIR [flags]",
        "run every custom gradient a recorded test session called, as cases",
        (
            "Runs every function a recording kept (python -m pytest --harness-record=DIR, or "
            "python -m harness record DIR -- CMD) as the case recorded.MODULE.QUALNAME, one point "
            "per recorded call, judged as any case; each point names the test that made the call. "
            "--order and --expect apply to every replayed case (narrow them with --cases)."
        ),
        ("python -m harness replay .harness/recorded --mode all --json_out r.json",),
        VERDICT_EXIT,
    ),
    RECORD_CMD: (
        "python -m harness record DIR [flags] -- CMD [ARG ...]",
        "run CMD, recording the custom gradients it calls into DIR",
        (
            "Runs CMD (a unittest or absltest suite, a script) with the recorder started in "
            "every Python process it starts, through the environment; each writes what it "
            "recorded into DIR when it exits. For a pytest suite, python -m pytest "
            "--harness-record=DIR does the same. Replay it with python -m harness replay DIR."
        ),
        (
            (
                "python -m harness record .harness/ut -- python -m unittest discover "
                "tests/data/record_project"
            ),
        ),
        "Exit status: CMD's own; 2 for a usage error.",
    ),
    MATRIX_CMD: (
        "python -m harness matrix --versions V[,V...] --out_dir DIR [flags] [-- HARNESS_ARGS]",
        "run the cases under several TensorFlow builds, merged into a matrix",
        (
            "Runs the case library (or the --case_file cases, or a --recorded recording) under "
            "each TensorFlow build of --versions, each in its own virtual environment (made once "
            "and cached in --cache_dir, with the pin table's tf-keras, Keras 3 and NumPy; a "
            "nightly with the keras-nightly of its day and the tf-keras-nightly of its minor "
            "release, on or before its day), and merges the reports into OUT_DIR/matrix.md, "
            "matrix.html and matrix.json. "
            "The environments run this harness: it is not installed into them. A build that "
            "cannot be installed is a column saying why. The run flags given, and the arguments "
            "after --, go to every run. The pin table's releases: "
            + ", ".join(pins.versions()) + "."
        ),
        ("python -m harness matrix --versions 2.16..2.21,nightly --out_dir matrix --mode all",),
        (
            "Exit status: 0 when every build gave a report, whatever its verdicts; 1 when one "
            "was not installed or gave none; 2 for a usage error."
        ),
    ),
    BISECT_CMD: (
        "python -m harness bisect CASE_ID|repro.py --good V --bad V [flags] [-- HARNESS_ARGS]",
        "find the first TensorFlow build where a case's result changed",
        (
            "Finds the first build between --good and --bad where the case's verdict, or a mode's "
            "status or error type, differs from the good build's (a repro.py: its exit status): "
            "one binary search over the pin table's releases and the index's tf-nightly builds "
            "between them, releases first where that costs nothing, observing at most "
            "ceil(log2 n) + 2 of the n builds (one more for each that cannot be installed), in "
            "the matrix's cached environments. A nightly "
            "2.22.0.devDATE lies after every 2.21.x and before 2.22.0. Prints the last good and "
            "first bad builds, their days and GIT_VERSIONs, and the commits between them."
        ),
        ("python -m harness bisect regressions.silu_beta_shape_127690 --good 2.21.0 "
         "--bad nightly",),
        (
            "Exit status: 0 when the first differing build was found; 1 when an end could not be "
            "observed or both ends agree; 2 for a usage error."
        ),
    ),
}


WIDTH = 100


def flags_of(command: str, *, own: bool) -> list:
    """The flags `command` takes: its own ones (no group), else the shared ones, in table order."""
    return [flags.FLAGS[name] for name, (group, commands) in FLAG_TABLE.items()
            if command in commands and (group is None) == own]


def written_as(f) -> str:
    """A flag as it is written: --[no]numeric, --mode=all (the default), --cases (none)."""
    if isinstance(f, flags.BooleanFlag):
        return f"--[no]{f.name}"
    return f"--{f.name}" + (f"={f.default_as_str.strip(chr(39))}"
                            if f.default not in (None, [], "") else "")


def help_line(f) -> str:
    """A flag's help on one line."""
    # absl appends this to a multi flag's help; each help here says "(repeatable)" itself.
    return " ".join(f.help.replace("repeat this option to specify a list of values",
                                   "").split()).rstrip(";")


def first_sentence(text: str) -> str:
    """A help's first sentence: up to the first full stop before a capital letter."""
    return re.split(r"(?<=\.)\s+(?=[A-Z])", text, maxsplit=1)[0]


def _flag_help(f) -> str:
    """A flag's whole help, for COMMAND --help: without the "check/repro PATH.py:NAME: " that
    says in --helpfull which command takes it."""
    said = re.sub(r"^(check/repro/explore PATH\.py:NAME|check/repro "
                  r"PATH\.py:NAME|repro|merge|explore|record|matrix/bisect|matrix|bisect): (.)",
                  lambda m: m[2].upper(), help_line(f))
    text = textwrap.fill(said, width=96, initial_indent="      ", subsequent_indent="      ",
                         break_on_hyphens=False)
    return f"  {written_as(f)}\n{text}"


def _main_help() -> str:
    """`python -m harness --help`: the commands, then the main flags by group with one line each."""
    grouped = {group: [flags.FLAGS[name] for name, (g, _) in FLAG_TABLE.items() if g == group]
               for group in GROUPS}

    def name(f) -> str:
        if isinstance(f, flags.BooleanFlag) and f.default is not None:
            return f"{written_as(f)} ({'on' if f.default else 'off'})"
        return written_as(f)

    width = max(len(name(f)) for fs in grouped.values() for f in fs)
    targets = {RUN_CMD: "", CHECK_CMD: " PATH.py:NAME", REPRO_CMD: " CASE_ID|PATH.py:NAME",
               MERGE_CMD: " REPORT.json...",
               EXPLORE_CMD: " PATH.py:NAME|CASE_ID", REPLAY_CMD: " DIR", RECORD_CMD: " DIR -- CMD",
               MATRIX_CMD: " --versions V", BISECT_CMD: " CASE_ID|repro.py"}
    commands = [(command + targets[command], COMMANDS[command][1]) for command in COMMANDS]
    commands.append((LIST_CMD, "the selected cases with their descriptions (the same as --list)"))
    left = max(len(c) for c, _ in commands)
    lines = [
        f"usage: python -m harness [{'|'.join([*COMMANDS, LIST_CMD])}] [ARGS]",
        "",
        "Runs TensorFlow custom-gradient cases in several modes and judges whether they agree.",
        "",
        "Commands:",
    ]
    lines += [f"  {c:<{left}}  {what}" for c, what in commands]
    for group, fs in grouped.items():
        lines += ["", f"{group}:"]
        lines += [textwrap.fill(first_sentence(help_line(f)), width=WIDTH,
                                initial_indent=f"  {name(f):<{width}}  ",
                                subsequent_indent=" " * (width + 4)) for f in fs]
    lines += ["", textwrap.fill(VERDICT_EXIT, width=WIDTH),
              "More: python -m harness COMMAND --help (its flags, an example); --helpfull (every "
              "flag, absl's too)."]
    return "\n".join(lines)


def command_help(command: Optional[str]) -> str:
    """The help of one command (None: `python -m harness --help`): usage, what it does, its flags,
    an example."""
    if command is None:
        return _main_help()
    usage, _, what, example, exit_status = COMMANDS[command]
    lines = [f"usage: {usage}", "", textwrap.fill(what, width=WIDTH), ""]
    shared = flags_of(command, own=False)
    if command == RUN_CMD:  # a run has only the shared flags: each said in full
        for group in GROUPS:
            lines += [f"{group}:"] + [_flag_help(f) for f in shared if FLAG_TABLE[f.name][0]
                                      == group] + [""]
    else:
        lines += [f"{command} flags:"] + [_flag_help(f) for f in flags_of(command, own=True)] + [""]
        if shared:  # record takes none: a heading with nothing under it would say there are some
            lines.append("Shared flags it takes (python -m harness --help says what each does):")
            for group in GROUPS:
                names = [f"  {written_as(f)}" for f in shared if FLAG_TABLE[f.name][0] == group]
                lines += ([f"{group}:"] + names) if names else []
            lines.append("")
    lines += ["Example:"] + [f"  {line}" for line in example]
    lines += ["", textwrap.fill(exit_status, width=WIDTH),
              "--helpfull lists every flag, absl's included."]
    return "\n".join(lines)


def parse_flags(argv: list[str]) -> list[str]:
    asked = [arg for arg in argv[1:] if arg in ("-h", "-?", "--help", "--helpshort")]
    if asked:
        command = next((arg for arg in argv[1:] if arg in COMMANDS), None)
        try:
            print(command_help(command), flush=True)
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            sys.stderr.close()
        sys.exit(0)
    try:
        return flags.FLAGS(argv)
    except flags.Error as e:
        usage_exit(str(e))
    except SystemExit:
        # absl exits 1 after printing help; asking for help is not a failure.
        if any(arg in HELP_ARGS for arg in argv[1:]):
            sys.exit(0)
        raise


def usage_exit(message: str) -> None:
    sys.stderr.write(f"harness: error: {message}\n")
    sys.exit(2)
