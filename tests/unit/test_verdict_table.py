"""One table of verdicts: the text report, JUnit, the matrix page, the exit status and the help
all say what records.VERDICTS says. Pure logic: no TensorFlow."""

import re

from harness.cli import help as cli_help
from harness.matrix import render
from harness.records import VERDICTS, Verdict, exit_status_text
from harness.report import junit, text
from tests.helpers import ROOT

# The verdicts and the exit status are documented on this page, which the README links to.
VERDICTS_PAGE = (ROOT / "docs" / "oracles-and-verdicts.md").read_text(encoding="utf-8")


def test_every_verdict_is_in_the_table_once():
    assert list(VERDICTS) == [Verdict.PASS, Verdict.XFAIL, Verdict.XPASS, Verdict.FAIL,
                              Verdict.FLAKY, Verdict.ERROR, Verdict.CRASH, Verdict.TIMEOUT,
                              Verdict.SKIP]
    assert set(VERDICTS) == set(Verdict)


def test_the_brief_decides_which_verdicts_fail_the_run():
    # DESIGN.md: exit 1 when any verdict is fail, error, crash or timeout; --repeat added flaky,
    # which is never retried away.
    assert {v.value for v in Verdict if v.is_failure} == {"fail", "flaky", "error", "crash",
                                                          "timeout"}


def test_every_reporter_reads_the_table():
    for verdict, style in VERDICTS.items():
        assert junit._ELEMENT[verdict] == style.junit
        assert text._WORD[verdict] == style.word == verdict.value.upper()
        assert (verdict.value, style.colour, style.text_colour, style.meaning) in render._LEGEND
    # A failing verdict is a JUnit failure or error; a passing one never is.
    assert {v for v, s in VERDICTS.items() if s.junit in ("failure", "error")} == {v
                                                                                   for v in Verdict
                                                                                   if v.is_failure}


def test_the_exit_status_sentence_is_the_tables_in_the_help_and_the_verdicts_page():
    sentence = exit_status_text()
    assert sentence == ("Exit status: 0 when every verdict is pass, xfail, xpass or skip; 1 when "
                        "any is fail, flaky, error, crash or timeout; 2 for a usage error.")
    assert cli_help.VERDICT_EXIT == sentence
    assert " ".join(cli_help.command_help("check").split()).count(sentence) == 1
    assert sentence[:-1] in " ".join(VERDICTS_PAGE.split())
    table = VERDICTS_PAGE[VERDICTS_PAGE.index("| verdict | meaning |"):
                          VERDICTS_PAGE.index("Exit status: 0")]
    assert re.findall(r"`(\w+)`",
                      " ".join(line.split("|")[1] for line in table.splitlines()[2:] if line)) == [
        "pass", "fail", "flaky", "xfail", "xpass", "error", "crash", "timeout", "skip"]
