"""scripts/readme_check.py's check of the README's test counts against pytest's collection."""

import importlib.util
import re

import pytest

from tests.helpers import ROOT

_spec = importlib.util.spec_from_file_location("readme_check", ROOT / "scripts" / "readme_check.py")
readme_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readme_check)

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_states_each_count_the_check_compares():
    assert set(readme_check.stated_counts(README)) == {what
                                                       for what, *_ in readme_check.TEST_COUNTS}


def test_a_count_said_in_other_words_is_an_error_not_a_count_left_unchecked():
    with pytest.raises(SystemExit, match="no longer says how many tests the fast tier is"):
        readme_check.stated_counts(README.replace("The fast tier, `tests/unit` (",
                                                  "The fast tier (tests/unit, "))


def test_pytest_s_collection_line_gives_the_selected_and_the_collected_tests():
    assert readme_check.collected("a\nb\n882/993 tests collected (111 deselected) in 9.12s\n") == {
        "selected": 882, "collected": 993}
    assert readme_check.collected("625 tests collected in 3.01s\n") == {"selected": 625,
                                                                        "collected": 625}
    assert readme_check.collected("1 test collected in 0.01s\n") == {"selected": 1, "collected": 1}
    with pytest.raises(SystemExit, match="without errors"):
        readme_check.collected("755/864 tests collected (109 deselected), 7 errors in 13.42s\n")


def test_each_count_that_differs_is_said_with_both_numbers_and_the_command():
    stated = {"the tests the README's test command runs": 882, "every test": 993,
              "the fast tier": 625, "tests/unit": 640}
    unit = ("tests/unit", "-m", "not subprocess")
    runs = {(): {"selected": 882, "collected": 994}, unit: {"selected": 630, "collected": 640}}
    asked = []

    def collect(args):
        asked.append(args)
        return runs[args]

    assert readme_check.count_mismatches(stated, collect) == [
        "the README says every test is 993 tests, pytest collects 994 (pytest --collect-only -q)",
        "the README says the fast tier is 625 tests, pytest collects 630 (pytest --collect-only -q "
        "tests/unit -m not subprocess)"]
    assert asked == [(), unit]  # one collection per selection
    assert readme_check.count_mismatches({**stated, "every test": 994, "the fast tier": 630},
                                         collect) == []


def test_every_install_after_the_first_keeps_the_checkout_editable():
    # The README's first command installs a copy (what a newcomer runs, and what CI tries); any
    # later `pip install '.[extra]'` without -e would put a copy in place of the editable test
    # install, so that the checkout's edits no longer run.
    installs = [c for c in readme_check.readme_commands(README)
                if re.search(r"pip install .*'\.\[", c)]
    first, *later = installs
    assert "'.[keras]'" in first and "pip install -e" not in first
    assert later and all(re.search(r"pip install -e '\.\[\w+\]'", c) for c in later), later


def test_the_run_from_outside_the_checkout_comes_before_any_readme_command(tmp_path):
    todo = readme_check.plan(["pip install -e '.[explore]'",
                              "python -m harness --list"], ["python -m harness x"],
                             tmp_path)
    assert todo[0] == ("python -m harness --mode all --cases 'seeds.*'", tmp_path)
    assert [c for c, _ in todo[1:]] == ["pip install -e '.[explore]'", "python -m harness --list",
                                        "python -m harness x"]
    assert all(where == readme_check.ROOT for _, where in todo[1:])
