"""The reviewed expectations file (harness.record.expectations): where it is found, what it
refuses, and what accepting a run writes (no TensorFlow)."""

import json

import pytest

from harness.record import expectations

FAILING = {"case": "recorded.m.relu", "point": "x=1.5", "verdict": "fail",
           "reason": "function vs eager: function raises OperatorNotAllowedInGraphError at forward",
           "modes": {"eager": {"status": "ok"},
                     "function": {"status": "error",
                                  "error_type": "OperatorNotAllowedInGraphError"},
                     "graph": {"status": "error", "error_type": "OperatorNotAllowedInGraphError"}},
           "oracles": {"numeric": {"status": "match"}, "upstream": {"status": "differ"}}}


def test_it_is_found_beside_the_project_or_where_pyproject_says(tmp_path):
    project = tmp_path / "p"
    (project / "tests").mkdir(parents=True)
    assert expectations.find(project / "tests") is None
    (project / expectations.FILE_NAME).write_text("{}")
    assert expectations.find(project / "tests") == project / expectations.FILE_NAME
    (project / "pyproject.toml").write_text('[tool.harness]\nexpectations = "ci/known.json"\n')
    assert expectations.find(project / "tests") == project / "ci" / "known.json"


def test_a_failing_point_s_deviations_are_spelled_as_expect_spells_them():
    assert expectations.deviations(FAILING) == [
        "function,graph:OperatorNotAllowedInGraphError", "upstream:values differ"]


def test_accept_adds_new_deviations_keeps_hand_written_reasons_and_drops_what_passes():
    hand = expectations.Entry("recorded.m.relu", ("*",),
                              "function,graph:OperatorNotAllowedInGraphError", "reviewed by hand")
    mended = expectations.Entry("recorded.m.square", ("*",), "upstream:values differ", "old")
    elsewhere = expectations.Entry("recorded.m.gone", ("*",), "numeric:values differ", "stale")
    passing = {"case": "recorded.m.square", "point": "x=3.0", "verdict": "pass"}
    after, changes, undeclarable = expectations.accept([hand, mended, elsewhere],
                                                       [FAILING, passing], "2.21.0")
    assert [e.function for e in after] == ["recorded.m.gone", "recorded.m.relu",
                                           "recorded.m.relu"]
    assert hand in after and elsewhere in after  # a stale entry says nothing the run saw
    [new] = [e for e in after if e.expect == "upstream:values differ"]
    assert new.reason.endswith("(accepted from a run under TensorFlow 2.21.0)")
    assert changes == ["+ recorded.m.relu upstream:values differ",
                       "- recorded.m.square upstream:values differ"]
    assert undeclarable == []


def test_what_accepting_writes_reads_back_the_same_and_is_sorted(tmp_path):
    path = tmp_path / expectations.FILE_NAME
    entries = [expectations.Entry("b", ("x=1.0",), "numeric:values differ", "r1"),
               expectations.Entry("a", ("*",), "all:ValueError", "r2")]
    expectations.write(path, entries)
    assert [e.function for e in expectations.load(path)] == ["a", "b"]
    assert json.loads(path.read_text())["expected"][1]["points"] == ["x=1.0"]
    assert expectations.stale(expectations.load(path), ["b"]) == [entries[1]]


@pytest.mark.parametrize("text, said", [
    ('{"schema": "harness.expectations/1",\n "expected": [\n {"function": "f"}]}',
     ':3: an entry needs "function", "expect" and "reason"'),
    ('{"schema": "other"}', ":1: not an expectations file"),
    ('{"schema": "harness.expectations/1", "expected": [\n {"function": "f", "points": 3, '
     '"expect": "all:ValueError", "reason": "r"}]}', ':2: "points" is "*" or a list'),
])
def test_a_malformed_file_is_refused_naming_its_line(tmp_path, text, said):
    path = tmp_path / expectations.FILE_NAME
    path.write_text(text)
    with pytest.raises(expectations.ExpectationsError) as raised:
        expectations.load(path)
    assert str(raised.value).startswith(f"{path}{said}")
