"""`--help`, each command's `--help`, and the refusal of another command's flags: pure and fast.

Nothing here runs a case. The commands run in this process (tests/unit/in_process.py), where the
fast tier refuses TensorFlow, so a refusal that ever stopped refusing fails here at once instead of
starting workers that load TensorFlow; one test starts the real entry point, whose help must import
no TensorFlow in a fresh process either.
"""

import ast
import dataclasses
import os
import re
import shlex
import subprocess
import sys

import pytest
from absl import flags
from absl.testing import flagsaver

from harness.cli import help as cli_help
from harness.cli import options as cli_options
from harness.cli import settings as cli_settings
from tests import helpers
from tests.helpers import REPO, imported
from tests.unit.in_process import harness

COMMANDS = ("run", "check", "repro", "merge", "explore", "replay", "record", "matrix", "bisect")


def section(text, heading):
    """The lines after `heading` up to the next blank line."""
    lines = text.splitlines()
    start = lines.index(heading) + 1
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


def grouped(group):
    return [flags.FLAGS[name] for name, (g, _) in cli_options.FLAG_TABLE.items() if g == group]


# -- the table ----------------------------------------------------------------------------------

def test_every_flag_of_the_harness_is_in_the_table_once_with_a_known_group_and_commands():
    defined = {f.name for f in flags.FLAGS.flags_by_module_dict()["harness.cli.options"]}
    assert defined == set(cli_options.FLAG_TABLE)
    for name, (group, commands) in cli_options.FLAG_TABLE.items():
        assert group in cli_options.GROUPS + (None,), name
        assert commands and set(commands) <= set(cli_help.COMMANDS), name
        if group is None:  # a command's own flag: shown in that command's help only
            assert cli_options.RUN_CMD not in commands, name


# -- python -m harness --help --------------------------------------------------------------------

def test_top_help_lists_the_commands_and_the_four_groups_within_60_lines_of_100_columns():
    text = cli_help.command_help(None)
    lines = text.splitlines()
    assert lines[0].startswith("usage: python -m harness ")
    assert len(lines) <= 60 and max(map(len, lines)) <= 100, (len(lines), max(map(len, lines)))
    commands = section(text, "Commands:")
    for command in ("run", "check PATH.py:NAME", "repro CASE_ID|PATH.py:NAME",
                    "merge REPORT.json...", "list"):
        assert sum(line.startswith(f"  {command} ") for line in commands) == 1, command
    assert "(the same as --list)" in next(line for line in commands if line.startswith("  list "))
    for heading in ("Selection:", "Modes and oracles:", "Reports:", "Execution:"):
        assert heading in lines
    assert "python -m harness COMMAND --help" in lines[-1] and "--helpfull" in lines[-1]


@pytest.mark.parametrize("group", cli_options.GROUPS)
def test_top_help_shows_every_flag_of_a_group_in_it_on_one_line_with_its_first_sentence_and_default(
    group,
):
    shown = section(cli_help.command_help(None), f"{group}:")
    assert len(shown) == len(grouped(group))
    for f, line in zip(grouped(group), shown):
        written = cli_help.written_as(f)
        assert line.startswith(f"  {written}"), (f.name, line)
        if f.default not in (None, [], "") and not isinstance(f, flags.BooleanFlag):
            assert f"--{f.name}={f.default_as_str.strip(chr(39))}" in line
        if isinstance(f, flags.BooleanFlag) and f.default is not None:
            assert line.startswith(f"  {written} ({'on' if f.default else 'off'})"), line
        summary = cli_help.first_sentence(cli_help.help_line(f))
        assert line.endswith(f"  {summary}"), (f.name, line)  # one line: nothing wrapped
        assert summary.endswith("."), f.name


def test_a_summary_is_the_help_s_first_sentence():
    assert cli_help.first_sentence("Comma list of globs, e.g. 'seeds.*'. Default: every case.") == \
        "Comma list of globs, e.g. 'seeds.*'."
    assert cli_help.first_sentence("Numeric oracle: check every element. Without it, a few.") == \
        "Numeric oracle: check every element."
    assert cli_help.first_sentence("One sentence only.") == "One sentence only."


def test_top_help_shows_no_command_s_own_flag():
    lines = cli_help.command_help(None).splitlines()
    for name, (group, _) in cli_options.FLAG_TABLE.items():
        if group is None:
            assert not [line for line in lines
                        if line.startswith(f"  {cli_help.written_as(flags.FLAGS[name])}")], name


# -- COMMAND --help -------------------------------------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_s_help_has_its_usage_its_flags_and_an_example(command):
    proc = harness(command, "--help")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert text == cli_help.command_help(command) + "\n"
    lines = text.splitlines()
    assert lines[0] == f"usage: {cli_help.COMMANDS[command][0]}"
    assert max(map(len, lines)) <= 100
    own, shared = cli_help.flags_of(command, own=True), cli_help.flags_of(command, own=False)
    for f in own + shared:
        assert f"\n  {cli_help.written_as(f)}\n" in text, f.name
    if command != "run":
        assert f"{command} flags:" in lines and own
        assert (
            "Shared flags it takes (python -m harness --help says what each does):" in lines
        ) == bool(shared)
    said = text[:text.index("\nExample:\n")].replace("python -m harness --help", "")
    for name, (_, commands) in cli_options.FLAG_TABLE.items():
        # another command's flag is not shown (the example may give a run's)
        if command not in commands:  # a whole flag: --out is not shown by --out_dir
            written = re.escape(cli_help.written_as(flags.FLAGS[name]))
            assert not re.search(rf"(--{name}|{written})(?![\w-])", said), (command, name)
    example = section(text, "Example:")
    assert example and all(line.startswith("  python -m harness ") for line in example)
    if command != "run":
        assert example[-1].startswith(f"  python -m harness {command} ")


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_every_heading_of_a_help_has_something_under_it(command):
    lines = cli_help.command_help(command).splitlines()
    headings = [i for i, line in enumerate(lines) if line.endswith(":")
                and not line.startswith(" ")]
    assert headings
    for i in headings:
        under = lines[i + 1] if i + 1 < len(lines) else ""
        assert (
            under.startswith("  ")
            or under.endswith(":")
            and not under.startswith(" ")
            and lines[i + 2].startswith("  ")
        ), (
            command,
            lines[i],
        )  # a heading over group headings, each with flags


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_s_flags_are_said_without_the_command_name_helpfull_puts_before_them(command):
    # --helpfull lists every flag together, so each help there starts "record: ..."; a command's
    # own help is that command's already.
    text = cli_help.command_help(command)
    for f in cli_help.flags_of(command, own=True):
        said = text.split(f"\n  {cli_help.written_as(f)}\n", 1)[1].split("\n", 1)[0].strip()
        assert said[:1].isupper() and not said.lower().startswith(f"{command}: "), (f.name, said)


def test_check_help_says_the_check_flags_in_full_and_names_the_shared_ones():
    text = harness("check", "--help").stdout
    assert text.startswith("usage: python -m harness check PATH.py:NAME --inputs LITERAL")
    assert "\n  --order=1\n      The derivative order.\n" in text
    assert "\n  --[no]upstream\n" in text and "\n  --[no]numeric\n" in text
    assert "Also take the gradients" not in text  # the top help says what the shared ones do


def target_exists(target):
    path, name = target.rsplit(":", 1)
    tree = ast.parse(open(os.path.join(REPO, path), encoding="utf-8").read())
    return any(isinstance(node, ast.FunctionDef) and node.name == name for node in tree.body)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_example_passes_the_command_line_checks_and_names_what_exists(command):
    for line in cli_help.COMMANDS[command][3]:
        argv = shlex.split(line)
        assert argv[:3] == ["python", "-m", "harness"]
        with flagsaver.flagsaver():
            rest = flags.FLAGS(["harness", *argv[3:]])
            name, args = cli_settings.split_command(rest)
            # raises UsageError for a flag of another command
            cli_settings.refuse_other_flags(name, args)
            if name == "check":
                cli_settings.check_spec(args[0])
                assert target_exists(args[0]), args[0]
            if name == "repro":
                assert cli_options.OUT.value
                assert f'id="{args[0]}"' in open(os.path.join(REPO, "cases", "seeds.py"),
                                                 encoding="utf-8").read()
            if name == "merge":  # the report the line before writes
                assert args == [shlex.split(cli_help.COMMANDS[command][3][0])[-1].split("=")[-1]]


@pytest.mark.subprocess
def test_help_from_the_real_entry_point_exits_0_and_imports_no_tensorflow():
    # The one test here that starts `python -m harness`: the entry point's own wiring (the worker
    # started ahead, absl's app.run with the harness's parser) and a fresh process's imports.
    proc = helpers.harness("--help", python=("-X", "importtime"), timeout=60)
    assert proc.returncode == 0 and proc.stdout == cli_help.command_help(None) + "\n"
    assert "absl.flags" in imported(proc) and not [m for m in imported(proc)
                                                   if m.startswith("tensorflow")]


def test_no_command_s_help_imports_tensorflow():
    before = sorted(m for m in sys.modules if m.split(".", 1)[0] == "tensorflow")
    for command in (None, *cli_help.COMMANDS):
        cli_help.command_help(command)
    # In the fast tier TensorFlow is refused, so an import fails the test; in a session that has
    # imported it already, nothing new of it may come in.
    assert sorted(m for m in sys.modules if m.split(".", 1)[0] == "tensorflow") == before


# -- another command's flag ------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["merge", "--inputs", "x"],
     "--inputs is a flag of python -m harness check and repro, not of merge"),
    (["merge", "a.json", "--markdown_out=m.md", "--mode=eager"],
     "--mode is a flag of python -m harness run, check, repro, explore, replay, matrix and bisect, "
     "not of merge"),
    (["check", "f.py:f", "--inputs=1.0", "--markdown_out=m.md"],
     "--markdown_out is a flag of python -m harness merge and matrix, not of check"),
    (["check", "f.py:f", "--inputs=1.0", "--point=x=1.0", "--out=o"],
     "--point, --out are flags of python -m harness repro, not of check"),
    (["repro", "seeds.custom_square", "--out=o", "--repro_dir=d"],
     "--repro_dir is a flag of python -m harness run, check, explore and replay, not of repro"),
    (["--order=2"],
     "--order is a flag of python -m harness check, repro, explore and replay, not of a plain run"),
    (["explore", "f.py:f", "--inputs=1.0"],
     "--inputs is a flag of python -m harness check and repro, not of explore"),
    (["check", "f.py:f", "--inputs=1.0", "--domain=x=[0, 1]"],
     "--domain is a flag of python -m harness explore, not of check"),
    (["run", "--out=o"], "--out is a flag of python -m harness repro, not of a plain run"),
    # One function has no cases to select or shard, and a missing file is said at once.
    (["check", "f.py:f", "--inputs=1.0", "--cases=x"],
     "--cases is a flag of python -m harness run, replay and matrix, not of check"),
    (["check", "f.py:f", "--inputs=1.0", "--shard_index=0"],
     "--shard_index is a flag of python -m harness run"),
    (["check", "missing.py:f", "--inputs=1.0"],
     "missing.py does not exist; give the Python file that defines f"),
    (["explore", "missing.py:f", "--domain=x=[0, 1]"], "missing.py does not exist"),
])
def test_a_flag_of_another_command_exits_2_with_one_line_naming_its_command(args, message,
                                                                            tmp_path):
    proc = harness(*args, cwd=str(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("harness: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_refusal_follows_the_table_for_every_flag_and_command():
    for name, (_, commands) in cli_options.FLAG_TABLE.items():
        for command in COMMANDS:
            target = {"run": [], "merge": ["a.json"]}.get(command, ["f.py:f"])
            with flagsaver.flagsaver():
                flags.FLAGS[name].present = 1
                if command in commands:
                    cli_settings.refuse_other_flags(command, target)
                else:
                    with pytest.raises(cli_options.UsageError) as raised:
                        cli_settings.refuse_other_flags(command, target)
                    said = str(raised.value)
                    assert (f"--{name} is a flag of python -m harness "
                            f"{cli_settings.and_list(commands)}, not of "
                            f"{'a plain run' if command == 'run' else command};" in said
                            or (command == "run"
                                and said.startswith(f"--{name} describe the function of check "
                                                                     "PATH.py:NAME"))), said


def test_flags_of_two_other_commands_are_named_in_one_line():
    with flagsaver.flagsaver():
        for name in ("inputs", "mode"):
            flags.FLAGS[name].present = 1
        with pytest.raises(cli_options.UsageError,
                           match=r"^--mode is a flag of python -m harness run, check, repro, "
                                                 r"explore, replay, matrix and bisect; "
                                                 r"--inputs is a flag of python -m harness check "
                                                 r"and repro, not of merge; give the command they "
                                                 r"belong to, or drop them$"):
            cli_settings.refuse_other_flags("merge", ["a.json"])


# -- run is the plain run --------------------------------------------------------------------------

def test_run_is_the_plain_run():
    assert (
        cli_settings.split_command(["harness"])
        == cli_settings.split_command(["harness", "run"])
        == ("run", [])
    )
    with pytest.raises(cli_options.UsageError, match="run takes no arguments, got extra"):
        cli_settings.split_command(["harness", "run", "extra"])
    # --help lists `list` as a command: it must run, as a run with --list.
    with flagsaver.flagsaver():
        flags.FLAGS(["harness"])
        assert cli_settings.split_command(["harness",
                                           "list"]) == ("list", []) and not flags.FLAGS.list
        listed = cli_settings.settings_for("list", [])
        assert listed.command == "run" and listed.list_only
    with pytest.raises(cli_options.UsageError, match="list takes no arguments, got seeds"):
        cli_settings.split_command(["harness", "list", "seeds"])
    with pytest.raises(cli_options.UsageError,
                       match="unknown command 'lists'; commands: run, .*, list "):
        cli_settings.split_command(["harness", "lists"])


def test_json_values_full_asks_for_every_value_and_a_summary_is_the_default():
    with flagsaver.flagsaver():
        flags.FLAGS(["harness"])
        assert not cli_settings.settings_for("run", []).every_value
    with flagsaver.flagsaver():
        flags.FLAGS(["harness", "--json_values=full"])
        assert cli_settings.settings_for("run", []).every_value


def test_run_and_no_command_answer_alike(tmp_path):
    for args in (["--order=2"], ["--markdown_out=m.md", "--cases=nothing.x"]):
        plain = harness(*args, cwd=str(tmp_path))
        run = harness("run", *args, cwd=str(tmp_path))
        assert (plain.returncode, plain.stdout, plain.stderr) == (run.returncode, run.stdout,
                                                                  run.stderr) and \
            plain.returncode == 2
    assert harness("run", "--help").stdout.startswith("usage: python -m harness [run] [flags]\n")


def test_the_rerun_commands_the_harness_prints_pass_the_refusal():
    from harness.checking import CheckSpec

    check = CheckSpec(target="f.py:f", inputs=("1.0",), dtype="float64", order=2, wrt=("x",),
                      expect=("numeric:values differ",), symmetric=("x",))
    with flagsaver.flagsaver():  # every flag a rerun carries over
        flags.FLAGS(["harness", "--case_file=mine.py", "--library", "--unconnected_gradients=zero",
                     "--strict_xpass", "--nonumeric", "--noupstream", "--numeric_full",
                     "--repeat=3", "--mode_memory_mib=512"])
        settings = dataclasses.replace(cli_settings.settings_for("run", []), modes=("eager",))
        lines = [cli_settings.rerun_command("check.f", "x=1.0", settings, check),
                 cli_settings.rerun_command("a.b", "x=1.0", settings)]
    assert lines[0].startswith("python -m harness check f.py:f ") and "--nonumeric" in lines[1]
    assert all("--mode_memory_mib=512" in line for line in lines), lines
    for line in lines:
        with flagsaver.flagsaver():
            command, args = cli_settings.split_command(flags.FLAGS(["harness",
                                                                    *shlex.split(line)[3:]]))
            cli_settings.refuse_other_flags(command, args)


def test_cases_splits_at_commas_outside_brackets_only():
    # Every printed rerun line holds a point label, which may have commas in it.
    assert cli_options.split_patterns(
        "seeds.*, t.mul[x=2.0,y=3.0],t.v[x=float32[8,64]],seeds.s[pq],"
    ) == ["seeds.*", "t.mul[x=2.0,y=3.0]", "t.v[x=float32[8,64]]", "seeds.s[pq]"]
    with flagsaver.flagsaver():
        flags.FLAGS(["harness", "--cases=t.mul[x=2.0,y=3.0],docs.*"])
        assert cli_options.CASES.value == ["t.mul[x=2.0,y=3.0]", "docs.*"]


def test_the_matrix_help_names_the_harness_arguments_and_every_release_kept_whole():
    # `-- HARNESS_ARGS` must be mentioned, and a version such as "2.17.1" never wrapped at its dots.
    text = harness("matrix", "--help").stdout
    assert "[-- HARNESS_ARGS]" in text.splitlines()[0]
    assert "the arguments after --, go to every run" in " ".join(text.split())
    from harness.matrix import pins
    for version in pins.versions():
        assert re.search(rf"(^|\s){re.escape(version)}[,.](\s|$)", text, re.M), version


@pytest.mark.subprocess
def test_the_matrix_script_is_the_matrix_command(tmp_path):
    # docs/version-matrix.md's `python scripts/matrix.py ...` lines run
    # `python -m harness matrix ...`.
    proc = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "matrix.py"), "--help"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == cli_help.command_help("matrix") + "\n"
