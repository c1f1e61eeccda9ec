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


def test_it_is_the_rootdir_s_or_where_its_pyproject_says_never_one_above(tmp_path):
    # Before, a file in any parent (anyone's /tmp, $HOME) was found and read without a word.
    project = tmp_path / "p"
    (project / "tests").mkdir(parents=True)
    (tmp_path / expectations.FILE_NAME).write_text("{}")
    assert expectations.find(project) is None
    (project / expectations.FILE_NAME).write_text("{}")
    assert expectations.find(project) == project / expectations.FILE_NAME
    assert expectations.find(project / "tests") is None  # a folder below is not the project
    (project / "pyproject.toml").write_text('[tool.harness]\nexpectations = "ci/known.json"\n')
    assert expectations.find(project) == project / "ci" / "known.json"


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


def _file(tmp_path, *entries, raw=None):
    path = tmp_path / expectations.FILE_NAME
    path.write_text(raw if raw is not None else json.dumps(
        {"schema": expectations.SCHEMA, "expected": list(entries)}, indent=1))
    return path


def _refused(path) -> str:
    with pytest.raises(expectations.ExpectationsError) as raised:
        expectations.load(path)
    message = str(raised.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("expected, said", [
    ("5", ':2: "expected" is a list of entries, not int'),
    ('{"function": "f"}', ':2: "expected" is a list of entries, not dict'),
    ('[\n  5]', ":3: an entry is an object"),
    ('[\n  {"function": "f", "point": ["x=1.0"], "expect": "all:ValueError", "reason": "r"}]',
     ":3: unknown key 'point' (did you mean 'points'?); an entry's keys are function, points, "
     "expect, reason, tf_versions, intended, accepted"),
    ('[\n  {"function": "f", "tf_versions": ">=two", "expect": "all:ValueError", "reason": "r"}]',
     ':3: "tf_versions" is a range of TensorFlow releases such as ">=2.16,<2.20"'),
    ('[\n  {"function": "f", "expect": 5, "reason": "r"}]',
     ':3: an entry needs "function", "expect" and "reason", each a non-empty string'),
    ('[\n  {"function": "f", "expect": "all:ValueError", "reason": "r", "accepted": 3}]',
     ':3: "accepted" is an object of strings'),
], ids=["a number", "an object", "an entry not an object", "point for points",
        "a bad tf_versions", "expect not a string", "accepted not an object"])
def test_every_malformed_file_is_one_line_naming_file_line_and_what_to_do(tmp_path, expected,
                                                                        said):
    path = _file(tmp_path, raw='{"schema": "harness.expectations/1",\n "expected": '
                 + expected + "}")
    assert _refused(path).startswith(f"{path}{said}")


def test_bytes_that_are_not_utf8_are_refused_naming_their_line(tmp_path):
    path = tmp_path / expectations.FILE_NAME
    path.write_bytes(b'{"schema": "harness.expectations/1",\n "expected": [\n {"function": '
                     b'"f\xff", "expect": "all:ValueError", "reason": "r"}]}')
    assert _refused(path).startswith(f"{path}:3: not UTF-8 (byte 0xff)")


def test_two_entries_covering_one_mode_at_one_point_are_refused_naming_both_lines(tmp_path):
    hand = {"function": "recorded.m.relu", "points": "*",
            "expect": "graph,function:OperatorNotAllowedInGraphError", "reason": "by hand"}
    other = dict(hand, expect="function:ValueError", reason="another")
    message = _refused(_file(tmp_path, hand, other))
    assert message.endswith(":10: this entry and the one at line 4 both cover mode 'function' at "
                            "every point of recorded.m.relu; keep one, or split their points or "
                            "modes"), message
    # A glob and the function it names, at a point both list.
    glob = {"function": "recorded.m.*", "points": ["x=1.5"], "expect": "graph:ValueError",
            "reason": "a glob"}
    message = _refused(_file(tmp_path, hand, glob))
    assert "both cover mode 'graph' at point 'x=1.5' of recorded.m.relu" in message
    # Other points, or other modes, are no overlap.
    expectations.load(_file(tmp_path, dict(hand, points=["x=1.0"]), dict(other, points=["x=2"])))
    expectations.load(_file(tmp_path, hand, dict(other, expect="eager:ValueError")))


def test_modes_are_a_set_so_accept_adds_no_second_entry_for_a_hand_spelled_one():
    # Before: a hand entry spelled graph,function got a second entry function,graph beside it,
    # and the next run was an ERROR ("two expectations cover mode 'function'").
    hand = expectations.Entry("recorded.m.relu", ("*",),
                              "graph,function:OperatorNotAllowedInGraphError", "by hand")
    after, changes, _ = expectations.accept([hand], [FAILING], "2.21.0")
    assert [e.expect for e in after if e.function == "recorded.m.relu"] == [
        "graph,function:OperatorNotAllowedInGraphError", "upstream:values differ"]
    assert changes == ["+ recorded.m.relu upstream:values differ"]


def test_an_entry_s_tf_versions_reaches_the_case_s_expectation(tmp_path):
    path = _file(tmp_path, {"function": "recorded.m.*", "points": ["x=1.0"], "expect":
                            "graph:ValueError", "reason": "r", "tf_versions": ">=2.16,<2.20"})
    [entry] = expectations.load(path)
    [(modes, outcome, reason, points, versions, _)] = expectations.expectations_for(
        [entry], "recorded.m.f", ["x=1.0", "x=2.0"])
    assert (modes, outcome, points, versions) == (("graph",), "ValueError", ("x=1.0",),
                                                  ">=2.16,<2.20")


SURROGATE_REASON = (
    "the agreed values differ from the numeric derivative at order 1, order 1 gradient wrt x: "
    "eager=1 numeric=0 abs err 1; the function is locally constant here (the same value at every "
    "shift of up to ±h checked), so its true derivative is 0 and the custom gradient (eager's) is "
    "a surrogate, not a derivative (a straight-through estimator's or a quantizer's). If that is "
    "intended, declare it: Expectation(modes=('numeric',), outcome=VALUES_DIFFER, reason=...) in "
    "the case, or --expect 'numeric:values differ' with check or replay")


def test_an_accepted_reason_is_the_finding_s_whole_sentences_with_what_it_was_accepted_under():
    # Before: the first 160 characters of the explanation, cut mid-word, the word "surrogate"
    # lost, sometimes another deviation's line.
    surrogate = {"case": "recorded.larq.ste_sign", "point": "x=float32[2,5]", "verdict": "fail",
                 "reason": "function vs eager: function raises TypeError at forward\n"
                           + SURROGATE_REASON, "details": [],
                 "undeclared": ["function:TypeError", "numeric:values differ"]}
    after, _, _ = expectations.accept([], [surrogate], "2.21.0",
                                      codes={"recorded.larq.ste_sign": "abc123"})
    by_expect = {e.expect: e for e in after}
    numeric = by_expect["numeric:values differ"]
    assert numeric.reason == (
        SURROGATE_REASON.split(" If that is intended")[0]
        + " (accepted from a run under TensorFlow 2.21.0)")
    assert by_expect["function:TypeError"].reason.startswith(
        "function vs eager: function raises TypeError at forward (accepted")
    assert (numeric.accepted_tf, numeric.accepted_code, numeric.points) == ("2.21.0", "abc123",
                                                                            ("*",))
    assert numeric.as_json()["accepted"] == {"tensorflow": "2.21.0", "code": "abc123"}


def test_an_xpass_names_what_changed_and_its_advice_fits():
    entry = expectations.Entry("f", ("*",), "numeric:values differ", "r", accepted_tf="2.21.0",
                               accepted_code="abc")
    assert expectations.xpass_cause(entry, "def", "2.21.0").startswith(
        "the function's code changed since the entry was accepted; if the change fixed it")
    assert expectations.xpass_cause(entry, "abc", "2.22.0").startswith(
        "TensorFlow changed since the entry was accepted (2.21.0 then, 2.22.0 now); give the "
        "entry \"tf_versions\"")
    assert expectations.xpass_cause(entry, "abc", "2.21.0").startswith(
        "nothing changed since the entry was accepted: it is broader than what deviates")
    # A hand entry records nothing of when: what changed is not known, and it does not say
    # nothing did.
    assert expectations.xpass_cause(expectations.Entry("f", ("*",), "all:X", "r"), "abc",
                                    "2.21.0").startswith(
        "the entry records no code or TensorFlow it was accepted under (it was written by hand), "
        "so what changed is not known")


def test_two_accepts_at_once_leave_one_valid_file_holding_both(tmp_path):
    import threading  # noqa: PLC0415

    path = tmp_path / expectations.FILE_NAME
    runs = [[dict(FAILING, case=f"recorded.m.f{i}")] for i in range(8)]
    threads = [threading.Thread(target=expectations.accept_into, args=(path, run, "2.21.0"))
               for run in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {e.function for e in expectations.load(path)} == {f"recorded.m.f{i}"
                                                             for i in range(8)}
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []


def test_the_line_of_every_entry_of_a_large_file_is_its_own(tmp_path):
    entries = [{"function": f"recorded.m.f{i % 7}", "points": [f"x={i}"], "expect":
                "all:ValueError", "reason": "the same text"} for i in range(2000)]
    path = _file(tmp_path, *entries)
    loaded = expectations.load(path)
    text = path.read_text().splitlines()
    assert all(f'"x={i}"' in "".join(text[e.line - 1:e.line + 4]) for i, e in enumerate(loaded))


def test_an_entry_may_name_its_intended_surrogate_and_only_a_surrogate_s(tmp_path):
    path = tmp_path / expectations.FILE_NAME
    entry = {"function": "recorded.m.ste", "points": "*", "expect": "numeric:surrogate",
             "reason": "an estimator", "intended": "mylib.estimators:clipped"}
    path.write_text(json.dumps({"schema": expectations.SCHEMA, "expected": [entry]}))
    (loaded,) = expectations.load(path)
    assert loaded.intended == "mylib.estimators:clipped"
    assert loaded.as_json()["intended"] == "mylib.estimators:clipped"
    assert expectations.expectations_for([loaded], "recorded.m.ste", ["x=1.0"])[0][-1] == \
        "mylib.estimators:clipped"
    for bad in (dict(entry, expect="numeric:values differ"), dict(entry, intended="no colon")):
        path.write_text(json.dumps({"schema": expectations.SCHEMA, "expected": [bad]}))
        with pytest.raises(expectations.ExpectationsError,
                           match="\"intended\" names the intended surrogate of a "
                                 "\"numeric:surrogate\" entry as \"module:function\""):
            expectations.load(path)


def test_an_accepted_numeric_difference_that_is_now_a_checked_surrogate_says_so():
    # How surrogates were accepted before the harness checked them: "numeric:values differ".
    entry = expectations.Entry("f", ("*",), "numeric:values differ", "r", accepted_tf="2.21.0",
                               accepted_code="abc")
    said = expectations.xpass_cause(entry, "abc", "2.21.0", surrogate=True)
    assert said.startswith("the harness now checks a surrogate gradient for its direction and its "
                           "linearity in dy instead of calling it a numeric difference")
    assert "declare it \"numeric:surrogate\"" in said
    # Not for another deviation, nor where no surrogate passed.
    assert expectations.xpass_cause(entry, "abc", "2.21.0").startswith("nothing changed")
    other = expectations.Entry("f", ("*",), "graph:ValueError", "r", accepted_tf="2.21.0",
                               accepted_code="abc")
    assert expectations.xpass_cause(other, "abc", "2.21.0", surrogate=True).startswith(
        "nothing changed")
