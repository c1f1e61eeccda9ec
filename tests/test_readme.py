"""The README's sample of what a run prints is what a run prints, to the letter: its lines are
lines of the seeds' run (a line cut short with "..." is the start of one), each block in the order
printed, and its summary counts the library as a run of it does."""

import re

from harness.report import text
from tests.helpers import ROOT


def _sample() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("prints one line per case and input point, then a summary:\n\n",
                         1)[1].split("\n\n", 1)[0]
    return [line[4:] for line in block.splitlines()]


def _blocks(lines):
    """The sample's result blocks: a result line and the indented lines under it."""
    blocks = []
    for line in lines:
        if line == "...":
            continue
        if line.startswith(" "):
            blocks[-1].append(line)
        else:
            blocks.append([line])
    return blocks


def _same(shown: str, printed: str) -> bool:
    if shown.endswith(" ..."):
        return printed.startswith(shown[:-4]) and len(printed) > len(shown) - 4
    return printed == shown


def test_the_readme_s_sample_lines_are_lines_a_run_of_the_seeds_prints(seed_run):
    proc = seed_run[0]  # --mode=all --cases=seeds.*
    printed = proc.stdout.splitlines()
    blocks = _blocks(_sample()[:-1])
    assert len(blocks) >= 2, blocks
    for block in blocks:
        assert block[0] in printed, (block[0], proc.stdout)
        at = printed.index(block[0])
        assert len(printed) >= at + len(block)
        for k, shown in enumerate(block[1:], start=1):
            assert _same(shown, printed[at + k]), (shown, printed[at + k])


def test_the_readme_s_summary_counts_the_library_as_a_run_of_it_does(library_results):
    said = _sample()[-1]
    assert re.fullmatch(r".+ in \d+\.\d s", said), said
    results = [r for points in library_results.values() for r in points]
    assert said.rsplit(" in ", 1)[0] == text.summary(results)
