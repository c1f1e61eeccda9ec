#!/usr/bin/env python3
"""Runs every command the README, the hand-written pages of docs/ and the commands' --help
examples show, as written, in a checkout.

    python3 -m venv .venv && .venv/bin/pip install '.[keras]'     # the README's own install, first
    .venv/bin/python scripts/readme_check.py                       # from the same checkout

The commands run from the checkout's root with the environment "activated" as the README asks
(its bin folder first on PATH, so `python` and `pip` are its own), each under bash, each with a
time limit: the README's, then each page's of docs/ in name order, then the --help examples. A
page generated from a run (docs/cases.md, docs/matrix.md: its opening says not to edit it by hand)
is not a page of commands, and is left out. A command passes when it exits 0 or 1 (1: the cases
it ran found something, as several examples are meant to) and prints no Python traceback; a usage
error (2) or anything else fails.
A few commands are left to other steps of CI, each with the reason printed: the install itself,
the test commands (CI runs every test in its own environment), and the version matrix (CI runs it
on three releases). One more command runs the library from outside the checkout, where only the
installed package can be imported; it runs first, before the pages' commands add extras with
`pip install -e` and so make the installed package the checkout's.

Exit status: 0 when every command passed, 1 otherwise.

    python scripts/readme_check.py --list           # runs nothing but the --help commands

prints the commands it would run, page by page, each marked with whether it runs or is left to CI
(and why), then the --help examples. Exit status 0.

    python scripts/readme_check.py --test_counts    # in an environment with the test extra

checks instead that the test counts the README states are pytest's: the tests the README's test
command runs and all of them (`pytest --collect-only`, with and without the slow mark), and the
fast tier's. Exit status: 0 when each is, 1 otherwise.

Any other argument is a usage error (exit status 2).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A page generated from a run says so in its opening lines, with this phrase.
GENERATED = re.compile(r"do not edit it by hand", re.IGNORECASE)
USAGE = "usage: readme_check.py [--list | --test_counts]"
COMMANDS = ("run", "check", "repro", "merge", "explore", "replay", "record")
# Commands another step of CI runs, by a pattern on the command, with why.
LEFT_TO_CI = (
    (re.compile(r"python3 -m venv \.venv && \.venv/bin/pip install '\.\[keras\]'"),
     "the README's install and first run: CI ran it, as written, to make this environment"),
    (re.compile(r"pip install -e '\.\[test\]'"),
     "the test command: CI runs every test in its own environment"),
    (re.compile(r"-m pytest -q (tests/unit|-m slow)"),
     "a test command: CI runs every test in its own environment"),
    (re.compile(r"scripts/matrix\.py|-m harness matrix\b"),
     "the version matrix: CI runs it on three releases"),
    (re.compile(r"-m harness bisect\b"),
     "a bisect installs TensorFlow builds (about 645 MB each for nightlies); its search is tested "
     "without them"),
)
TIMEOUT = 900


def readme_commands(text: str) -> list[str]:
    """The shell commands of the README or a page: the lines of its indented code blocks that start
    a command (`python`, `pip`, `.venv/bin/...`), outside fenced blocks (those are Python)."""
    commands, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if (not fenced and line.startswith("    ")
            and re.match(r"(\(cd |python3?|pip|\.venv/bin/)\S*\s", line[4:])):
            commands.append(line[4:].strip())
    return commands


def generated(text: str) -> bool:
    """Whether a page was generated from a run (its first lines say not to edit it by hand)."""
    return bool(GENERATED.search("\n".join(text.splitlines()[:5])))


def pages(root: Path = ROOT) -> list[Path]:
    """The pages whose commands are run, in the order they run: the README, then each page of
    docs/ written by hand, in name order."""
    docs = sorted(path for path in (root / "docs").glob("*.md")
                  if not generated(path.read_text(encoding="utf-8")))
    return [root / "README.md", *docs]


def page_commands(root: Path = ROOT) -> list[tuple[str, list[str]]]:
    """Each page's path, relative to `root`, with its commands (readme_commands)."""
    return [(path.relative_to(root).as_posix(), readme_commands(path.read_text(encoding="utf-8")))
            for path in pages(root)]


def left_to_ci(command: str) -> str | None:
    """Why another step of CI runs `command`, or None when this check runs it."""
    return next((why for pattern, why in LEFT_TO_CI if pattern.search(command)), None)


def help_examples(run) -> list[str]:
    """The commands under "Example:" in each command's --help, as the harness prints them."""
    examples = []
    for command in COMMANDS:
        proc = run(f"python -m harness {command} --help")
        lines = proc.stdout.splitlines()
        if "Example:" not in lines:
            raise SystemExit(f"readme_check: `python -m harness {command} --help` has no Example: "
                             "section")
        pending = ""  # a command continued on the next line with a backslash
        for line in lines[lines.index("Example:") + 1:]:
            if not pending and not line.startswith("  python "):
                break
            pending = f"{pending} {line.strip()}".strip()
            if pending.endswith("\\"):
                pending = pending[:-1].strip()
            else:
                examples.append(pending)
                pending = ""
    return examples


# Each test count the README states: what it counts, how the README says it, and the pytest
# arguments whose collection gives it, with which of its two numbers (selected, or all collected).
TEST_COUNTS = (
    ("the tests the README's test command runs",
     r"runs every test but those marked `slow` \((\d+) of \d+\)", (), "selected"),
    ("every test", r"runs every test but those marked `slow` \(\d+ of (\d+)\)", (), "collected"),
    ("the fast tier", r"The fast tier, `tests/unit` \((\d+) of its \d+ tests\)",
     ("tests/unit", "-m", "not subprocess"), "selected"),
    ("tests/unit", r"The fast tier, `tests/unit` \(\d+ of its (\d+) tests\)",
     ("tests/unit", "-m", "not subprocess"), "collected"),
)


def stated_counts(readme: str) -> dict[str, int]:
    """The test counts the README states, by what each counts; a claim it no longer makes in
    these words is an error, so that rewording one cannot leave it unchecked."""
    found = {}
    for what, said, _, _ in TEST_COUNTS:
        match = re.search(said, " ".join(readme.split()))
        if not match:
            raise SystemExit(f"readme_check: the README no longer says how many tests {what} is "
                             f"(/{said}/); say it, or change TEST_COUNTS")
        found[what] = int(match[1])
    return found


def collected(output: str) -> dict[str, int]:
    """pytest --collect-only -q's last line as {"selected": N, "collected": M}: "882/993 tests
    collected (111 deselected) in 9.1s" or "625 tests collected in 3.0s"."""
    match = re.search(r"^(\d+)(?:/(\d+))? tests? collected.*$", output, re.MULTILINE)
    if not match or "error" in match[0]:
        raise SystemExit("readme_check: pytest's collection did not end in a count without "
                         f"errors:\n{output[-2000:]}")
    return {"selected": int(match[1]), "collected": int(match[2] or match[1])}


def count_mismatches(stated: dict[str, int], collect) -> list[str]:
    """A sentence for each count the README states that pytest's collection does not give;
    `collect(args)` returns collected() for a `pytest --collect-only -q ARGS` run."""
    runs, wrong = {}, []
    for what, _, args, which in TEST_COUNTS:
        if args not in runs:
            runs[args] = collect(args)
        real = runs[args][which]
        if stated[what] != real:
            command = " ".join(["pytest --collect-only -q", *args])
            wrong.append(f"the README says {what} is {stated[what]} tests, pytest collects {real} "
                         f"({command})")
    return wrong


def check_test_counts() -> int:
    def collect(args):
        proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                               "no:cacheprovider",
                               *args], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
        return collected(proc.stdout + proc.stderr)

    wrong = count_mismatches(stated_counts((ROOT / "README.md").read_text(encoding="utf-8")),
                             collect)
    for sentence in wrong:
        print(f"readme_check: {sentence}")
    if not wrong:
        print(f"readme_check: the README's {len(TEST_COUNTS)} test counts are pytest's")
    return 1 if wrong else 0


OUTSIDE = "python -m harness --mode all --cases 'seeds.*'"


def plan(readme: list[str], examples: list[str], outside: Path) -> list[tuple[str, Path]]:
    """The commands to run, each with its folder: the library run from outside the checkout first,
    while the environment holds the install the README's first command made (its later commands
    add extras with pip install -e, which makes the checkout the installed harness), then the
    pages' commands (`readme`: the README's, then each docs page's) and the --help examples, in
    order, from the checkout."""
    return ([(OUTSIDE, outside)]
            + [(c, ROOT) for c in readme] + [(c, ROOT) for c in examples])


def listing(commands: list[tuple[str, list[str]]], examples: list[str]) -> list[str]:
    """What --list prints, line by line: the run from outside the checkout, then each page's
    commands and the --help examples, each marked `run` or `left to CI` with why, under a count per
    page, and a last line of totals."""
    def count(n: int) -> str:
        return f"{n} command" + ("" if n == 1 else "s")

    lines, total, left = ["outside the checkout: 1 command", f"  run: {OUTSIDE}"], 1, 0
    for page, shown in [*commands, ("--help examples", examples)]:
        whys = [left_to_ci(command) for command in shown]
        skipped = len(shown) - whys.count(None)
        lines.append(f"{page}: {count(len(shown))}, {whys.count(None)} run, {skipped} left to CI")
        for command, why in zip(shown, whys):
            lines += [f"  run: {command}"] if why is None else [f"  left to CI: {command}",
                                                                f"      ({why})"]
        total, left = total + len(shown), left + skipped
    lines.append(f"readme_check: {count(total)} on {len(commands)} pages, the --help examples "
                 f"and outside the checkout; {total - left} would run, {left} left to the other "
                 "steps of CI")
    return lines


def main() -> int:
    if sys.argv[1:] == ["--test_counts"]:
        return check_test_counts()
    if sys.argv[1:] not in ([], ["--list"]):
        print(USAGE, file=sys.stderr)
        return 2
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = str(Path(bin_dir).parent)

    def run(command: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)

    if sys.argv[1:] == ["--list"]:
        print("\n".join(listing(page_commands(), help_examples(run))))
        return 0
    if not (Path(bin_dir) / "pip").exists():
        print(f"readme_check: {bin_dir} has no pip, so the README's `pip install` would reach "
              "another Python; make the environment as the README does: python3 -m venv .venv")
        return 1
    readme = [command for _, shown in page_commands() for command in shown]
    todo = plan(readme, help_examples(run), Path(tempfile.mkdtemp(prefix="readme-check-")))
    failed, ran, left = [], 0, 0
    for command, cwd in todo:
        why = left_to_ci(command)
        if why:
            print(f"readme_check: left to CI: {command}\n    ({why})", flush=True)
            left += 1
            continue
        start = time.monotonic()
        try:
            proc = run(command, cwd)
        except subprocess.TimeoutExpired:
            failed.append(command)
            print(f"readme_check: FAILED (ran past {TIMEOUT} s): {command}", flush=True)
            continue
        ran += 1
        said = proc.stdout + proc.stderr
        where = "" if cwd == ROOT else " (outside the checkout)"
        if proc.returncode in (0, 1) and "Traceback (most recent call last)" not in said:
            print(f"readme_check: ok, exit {proc.returncode} in {time.monotonic() - start:.0f} "
                  f"s{where}: {command}",
                  flush=True)
        else:
            failed.append(command)
            print(
                f"readme_check: FAILED, exit {proc.returncode}{where}: {command}\n{said[-3000:]}",
                flush=True,
            )
    print(f"readme_check: {ran - len(failed)} of {ran} commands ran as written; {left} left to the "
          "other steps of CI" + (f"; failed: {'; '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
