"""The version matrix merge and its renderers: hand-written reports, no TensorFlow."""

import html.parser
import json
import re
from pathlib import Path

import pytest

from harness.matrix import merge, outputs, render
from harness.matrix.merge import ABSENT, NOT_INSTALLED, NOT_RUN, MergeError

MODES = ("eager", "function", "graph")


def ok():
    return {"status": "ok", "orders": [[{"value": 1.0, "dtype": "float32", "shape": []}]],
            "sources": []}


def raised(error_type, message, stage="order 2"):
    return {"status": "error", "orders": [], "sources": [], "error_type": error_type,
            "error_message": message, "stage": stage, "error_bases": [error_type, "Exception"]}


def result(case, point="x=1.0", verdict="pass", reason="", details=(), **modes):
    outcomes = {m: ok() for m in MODES}
    outcomes.update(modes)
    return {"case": case, "point": point, "order": 2, "verdict": verdict, "reason": reason,
            "details": list(details),
            "rerun": f"python -m harness --mode=all '--cases={case}[{point}]'", "modes": outcomes}


def report(version, *results, modes=MODES):
    return {"schema": "harness.report/1",
            "environment": {"tensorflow": version, "numpy": "1.26.4", "python": "3.11.7"},
            "modes": list(modes), "results": list(results), "summary": {}}


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def merged(*reports, failed=None, modes=None):
    if modes is not None:
        for r in reports:
            r["modes"] = list(modes)
            for res in r["results"]:
                res["modes"] = {m: res["modes"].get(m, ok()) for m in modes}
    return merge.merge({f"r{i}.json": r for i, r in enumerate(reports)}, failed)


def row(matrix, name, mode):
    (found,) = [r for r in matrix.rows if r.name == name and r.mode == mode]
    return found


# --- reading reports ------------------------------------------------------------------------------

def test_load_report_reads_a_harness_report(tmp_path):
    data = report("2.21.0", result("seeds.a"))
    assert merge.load_report(write(tmp_path, "r.json", data)) == data


@pytest.mark.parametrize("content, expected", [
    ("{not json", "not JSON"),
    ("", "not JSON"),
    ("[1, 2]", "not a harness report"),
    (json.dumps({"hello": 1}), "not a harness report"),
    (json.dumps({"schema": "harness.report/1", "environment": {"tensorflow": "2.21.0"}}),
     "not a harness report"),
    (json.dumps({**report("2.21.0"), "schema": "harness.report/3"}), "schema 'harness.report/3'"),
    (json.dumps({"schema": "harness.matrix/1", "results": []}), "merged matrix"),
    (json.dumps({**report("2.21.0"), "results": {"a": 1}}), "not a list"),
    (json.dumps({**report("2.21.0"), "environment": {}}), "environment.tensorflow is missing"),
    (json.dumps(report("2.21.0", {"case": "a", "point": "p", "verdict": "pass"})), "no \"modes\""),
    (json.dumps(report("2.21.0", {"point": "p", "verdict": "pass", "modes": {}})),
     "no string 'case'"),
    # Fields of the wrong type must neither crash the merge nor split a string into letters.
    (json.dumps({**report("2.21.0", result("seeds.a")), "modes": "eager"}),
     '"modes" is a string "eager", not a list of mode names'),
    (json.dumps({**report("2.21.0", result("seeds.a")), "modes": 7}),
     '"modes" is a number 7, not a list'),
    (json.dumps(report("2.21.0", {**result("seeds.a"), "details": 5})),
     "results[0].details is a number 5, not a list of strings"),
    (json.dumps(report("2.21.0", {**result("seeds.a"), "details": ["ok", 5]})),
     "results[0].details holds"),
    (json.dumps(report("2.21.0", {**result("seeds.a"), "reason": ["a"]})),
     "results[0].reason is a list, not a string"),
    (json.dumps(report("2.21.0", {**result("seeds.a"),
                                  "modes": {"eager": {"status": "error", "error_message": 3}}})),
     "results[0].modes.eager.error_message is a number 3, not a string"),
])
def test_load_report_refuses_what_is_not_a_current_report_with_one_line_naming_the_file(tmp_path,
                                                                                        content,
                                                                                        expected):
    path = write(tmp_path, "bad.json", content)
    with pytest.raises(MergeError) as caught:
        merge.load_report(path)
    message = str(caught.value)
    assert expected in message
    assert message.startswith(path)
    assert "\n" not in message
    assert "--json_out" in message or "regenerate" in message or "merge the per-version" in message


def test_load_report_refuses_a_missing_file(tmp_path):
    with pytest.raises(MergeError, match=r"nope\.json: no such file"):
        merge.load_report(str(tmp_path / "nope.json"))


def test_load_report_points_from_the_jsonl_stream_to_the_report(tmp_path):
    path = write(tmp_path, "r.jsonl",
                 json.dumps(result("a")) + "\n" + json.dumps(result("b")) + "\n")
    with pytest.raises(MergeError, match="JSON Lines stream"):
        merge.load_report(path)


# --- merging --------------------------------------------------------------------------------------

def test_columns_are_sorted_by_numeric_release_not_text():
    matrix = merged(report("2.9.1", result("a")), report("2.16.2", result("a")),
                    report("2.10.0", result("a")), report("2.16.0rc1", result("a")))
    assert matrix.versions == ("2.9.1", "2.10.0", "2.16.0rc1", "2.16.2")


def test_a_nightly_sorts_after_the_release_before_it_and_before_the_release_it_leads_to():
    # PEP 440: a dev build of 2.22.0 precedes its pre-releases and 2.22.0 itself, and follows
    # 2.21.x; TensorFlow's nightlies report "2.23.0-dev20261026", which PEP 440 reads as
    # 2.23.0.dev20261026.
    matrix = merged(*(report(v, result("a")) for v in (
        "2.23.0-dev20261026", "2.22.0", "2.22.0.dev20260601", "2.21.0", "2.22.0rc1",
        "2.22.0.dev20260515", "2.21.1")))
    assert matrix.versions == ("2.21.0", "2.21.1", "2.22.0.dev20260515", "2.22.0.dev20260601",
                               "2.22.0rc1", "2.22.0", "2.23.0-dev20261026")


@pytest.mark.parametrize("earlier, later", [
    ("2.22.0.dev9", "2.22.0.dev10"),  # numbers, not text: "dev10" < "dev9" as text
    ("2.22.0rc2", "2.22.0rc10"),
    ("2.22.0a1", "2.22.0b1"),
    ("2.22.0b1", "2.22.0rc1"),
    ("2.22.0rc1.dev3", "2.22.0rc1"),
    ("2.22.0", "2.22.0.post1"),
    ("2.22.0.post1.dev2", "2.22.0.post1"),
    ("2.21.9", "2.22.0.dev1"),
    ("2.22.0", "a-name-not-a-version"),
])
def test_versions_sort_in_pep_440_order(earlier, later):
    for given in ((earlier, later), (later, earlier)):
        matrix = merged(*(report(v, result("a")) for v in given))
        assert matrix.versions == (earlier, later)


def test_only_a_build_between_releases_names_its_commit():
    def commit(version, git):
        return merge.Column(version=version, environment={"tensorflow_git": git}).commit
    # A tf-nightly: its version names a day; tf.version.GIT_VERSION names the commit after "-g".
    assert commit("2.23.0-dev20261026", "v1.12.1-148158-gef696751006") == "ef696751006"
    assert commit("2.22.0.dev20260601", "v2.22.0-rc0-3-g0123456789a") == "0123456789a"
    # A release is described from a tag of its own minor release: its version says what it is.
    assert commit("2.16.1", "v2.16.0-rc0-18-g5bc9d26649c") == ""
    # Built from the main branch under a release's number: the version does not say what it is.
    assert commit("2.21.0", "v1.12.1-148158-gef696751006") == "ef696751006"
    assert commit("2.23.0-dev20261026", "unknown") == ""
    assert merge.Column(version="2.23.0-dev20261026").commit == ""
    nightly = merge.Column(version="2.23.0-dev20261026",
                           environment={"tensorflow_git": "v1.12.1-148158-gef696751006"})
    assert nightly.label == "2.23.0-dev20261026 (commit ef696751006)"


def test_rows_are_case_point_and_mode_and_cells_hold_status_and_verdict():
    matrix = merged(report("2.21.0", result("seeds.nested", verdict="xfail",
                                            function=raised("InternalError",
                                                            "first line\nsecond line"))))
    assert [(r.name, r.mode) for r in matrix.rows] == [("seeds.nested[x=1.0]", m) for m in MODES]
    cell = row(matrix, "seeds.nested[x=1.0]", "function").cells[0]
    assert (cell.status, cell.verdict, cell.stage, cell.error) == ("InternalError", "xfail",
                                                                   "order 2", "first line")
    assert row(matrix, "seeds.nested[x=1.0]", "eager").cells[0].text == "ok · xfail"


def test_a_report_that_summarizes_its_values_merges_beside_an_older_one_that_wrote_them(
        tmp_path):
    summarized = {"status": "ok", "sources": [], "orders": [[{
        "dtype": "float64", "shape": [1536],
        "summary": {"elements": 1536, "head": [0.0] * 8, "min": 0.0, "max": 0.0, "nan": 0,
                    "inf": 0, "-inf": 0}}]]}
    new = {**report("2.21.0", result("seeds.a", eager=summarized, function=summarized,
                                     graph=summarized)),
           "schema": "harness.report/2"}
    paths = [write(tmp_path, "new.json", new),
             write(tmp_path, "old.json", report("2.20.0", result("seeds.a")))]
    matrix = merge.merge({path: merge.load_report(path) for path in paths})
    assert matrix.versions == ("2.20.0", "2.21.0")
    assert [c.text for c in row(matrix, "seeds.a[x=1.0]", "graph").cells] == ["ok · pass"] * 2


def test_explanation_is_the_reason_then_the_first_line_of_the_error():
    error = raised("InternalError", "Found 2 gradients for 1 input\nTraceback")
    matrix = merged(report("2.21.0",
                           result("a", verdict="fail",
                                  reason="function raises where eager returned values",
                                            function=error)))
    cell = row(matrix, "a[x=1.0]", "function").cells[0]
    assert cell.explanation == ("fail: function raises where eager returned values\n"
                                "InternalError at order 2: Found 2 gradients for 1 input")


def test_changed_rows_come_first_and_say_where_they_changed():
    old = report("2.15.1", result("a.same"), result("b.raises"),
                 result("c.fixed", function=raised("ValueError", "no")),
                 result("d.verdict", verdict="xfail"))
    mid = report("2.16.2", result("a.same"),
                 result("b.raises", verdict="fail", function=raised("InternalError", "x")),
                 result("c.fixed", function=raised("ValueError", "no")),
                 result("d.verdict", verdict="xfail"))
    new = report("2.21.0", result("a.same"),
                 result("b.raises", verdict="fail", function=raised("InternalError", "x")),
                 result("c.fixed"), result("d.verdict", verdict="xpass"))
    matrix = merged(new, old, mid)
    assert row(matrix, "b.raises[x=1.0]",
               "function").change == "raises InternalError, verdict pass→fail from 2.16.2"
    assert row(matrix, "b.raises[x=1.0]", "eager").change == "verdict pass→fail from 2.16.2"
    assert row(matrix, "c.fixed[x=1.0]", "function").change == "ok from 2.21.0"
    assert row(matrix, "c.fixed[x=1.0]", "eager").change == ""
    assert row(matrix, "d.verdict[x=1.0]", "graph").change == "verdict xfail→xpass from 2.21.0"
    changed = [r.changed for r in matrix.rows]
    assert changed == sorted(changed, reverse=True), "a changed row after an unchanged one"
    assert [(r.case, r.mode) for r in matrix.changed] == [
        ("b.raises", "eager"), ("b.raises", "function"), ("b.raises", "graph"),
        ("c.fixed", "function"), ("d.verdict", "eager"), ("d.verdict", "function"), ("d.verdict",
                                                                                     "graph")]
    assert [r.case for r in matrix.rows if not r.changed] == ["a.same"] * 3 + ["c.fixed"] * 2


def test_a_change_back_and_forth_lists_each_step():
    matrix = merged(report("2.15.1", result("a")),
                    report("2.16.2", result("a", function=raised("ValueError", "v"))),
                    report("2.19.1", result("a")))
    assert (row(matrix, "a[x=1.0]", "function").change
            == "raises ValueError from 2.16.2; ok from 2.19.1")


def test_a_change_names_the_release_as_its_column_does_not_its_minor_release():
    # "from 2.17" would claim 2.17.0, which did not run; the column is 2.17.1.
    matrix = merged(report("2.16.2", result("a")),
                    report("2.17.1", result("a", function=raised("ValueError", "v"))))
    assert row(matrix, "a[x=1.0]", "function").change == "raises ValueError from 2.17.1"
    assert matrix.points[0].change == "From 2.17.1: function: ok → ValueError."


def test_reports_from_different_case_sets_show_absent_cells_not_a_change():
    matrix = merged(report("2.16.2", result("old.only"), result("both")),
                    report("2.21.0", result("both"), result("new.only")))
    assert [c.status for c in row(matrix, "old.only[x=1.0]", "eager").cells] == ["ok", ABSENT]
    assert [c.status for c in row(matrix, "new.only[x=1.0]", "eager").cells] == [ABSENT, "ok"]
    assert not matrix.changed
    assert "2.21.0" in row(matrix, "old.only[x=1.0]", "eager").cells[1].reason


def test_change_is_measured_across_a_version_where_the_row_is_absent():
    matrix = merged(report("2.15.1", result("a")), report("2.16.2", result("other")),
                    report("2.21.0", result("a", function=raised("TypeError", "t"))))
    assert row(matrix, "a[x=1.0]", "function").change == "raises TypeError from 2.21.0"


def test_a_mode_without_an_outcome_is_not_run():
    crashed = result("a", verdict="crash", reason="graph mode: killed by SIGABRT")
    crashed["modes"] = {"graph": {"status": "crash", "orders": [], "sources": [],
                                  "error_type": "crash",
                                  "error_message": "killed by SIGABRT\nlast output",
                                  "stage": "graph"}}
    skipped = result("b", verdict="skip", reason="needs TensorFlow >=2.17")
    skipped["modes"] = {}
    matrix = merged(report("2.21.0", crashed, skipped))
    assert [c.text for c in (row(matrix, "a[x=1.0]", m).cells[0] for m in MODES)] == [
        f"{NOT_RUN} · crash", f"{NOT_RUN} · crash", "crash · crash"]
    assert row(matrix, "a[x=1.0]", "graph").cells[0].error == "killed by SIGABRT"
    assert row(matrix, "b[x=1.0]", "eager").cells[0].explanation == "skip: needs TensorFlow >=2.17"


def test_points_fold_the_modes_of_a_case_and_point_and_changed_points_come_first():
    old = report("2.15.1", result("a.same"), result("b.forward"),
                 result("b.forward", point="x=2.0"))
    new = report("2.16.2", result("a.same"),
                 result("b.forward", verdict="fail", forward=raised("ValueError", "v")),
                 result("b.forward", point="x=2.0"))
    matrix = merged(old, new, modes=("eager", "function", "graph", "forward"))
    assert [(p.name, p.changed) for p in matrix.points] == [
        ("b.forward[x=1.0]", True), ("a.same[x=1.0]", False), ("b.forward[x=2.0]", False)]
    point = matrix.points[0]
    assert point.modes == ("eager", "function", "graph", "forward")
    assert point.theme == "b"
    assert [c.status for c in point.cells(1)] == ["ok", "ok", "ok", "ValueError"]
    (step,) = point.steps
    assert (step.column, step.version, step.label, step.verdicts) == (1, "2.16.2",
                                                                      "2.16.2", ("pass", "fail"))
    assert step.modes == (("forward", "ok", "ValueError"),)
    assert step.text == "forward: ok → ValueError; verdict pass → fail"
    assert point.change == "From 2.16.2: forward: ok → ValueError; verdict pass → fail."
    assert point.step_at(1) is step and point.step_at(0) is None


def test_a_step_says_every_mode_the_others_and_where_a_mode_came_from():
    everything = {m: raised("TypeError", "t") for m in MODES}
    matrix = merged(report("2.15.1", result("a", graph=raised("LookupError", "l"))),
                    report("2.16.2", result("a", verdict="error", **everything)),
                    report("2.17.1",
                           result("a", verdict="error", eager=raised("ValueError", "v"),
                                  function=ok(),
                                            graph=ok())))
    first, second = matrix.points[0].steps
    assert first.every_mode
    assert first.text == "every mode: ok → TypeError (graph was LookupError); verdict pass → error"
    assert second.text == "eager: TypeError → ValueError; function, graph: TypeError → ok"
    lookup = raised("LookupError", "l")
    matrix = merged(report("2.15.1", result("a", graph=lookup, function=lookup)),
                    report("2.16.2",
                           result("a", verdict="error",
                                  **{m: raised("TypeError", "t") for m in FULL})),
                    modes=FULL)
    assert matrix.points[0].steps[0].text == ("every mode: ok → TypeError (function, graph were "
                                              "LookupError); verdict pass → error")
    crashed = result("b", verdict="crash")
    crashed["modes"] = {"graph": {"status": "crash", "error_message": "killed by SIGABRT",
                                  "stage": "graph"}}
    matrix = merged(report("2.15.1", result("b", function=raised("ValueError", "v"))),
                    report("2.16.2", crashed))
    assert (
        matrix.points[0].steps[0].text
        == "graph: ok → crash; the others: ok → not run (function was ValueError); verdict pass → "
        "crash"
    )


SKIP = {"status": "skip", "orders": [], "sources": [], "note": "a Keras 3 model under a strategy"}
K3 = MODES + ("keras3_mirrored",)


def test_a_mode_that_begins_to_apply_is_coverage_and_folds_by_mode_and_release():
    matrix = merged(report("2.17.1", result("a", keras3_mirrored=SKIP), result("b"),
                           result("c", verdict="xfail", keras3_mirrored=SKIP)),
                    report("2.18.1", result("a"), result("b"),
                           result("c", verdict="xfail",
                                  keras3_mirrored=raised("RuntimeError", "r"))),
                    modes=K3)
    by_name = {p.name: p for p in matrix.points}
    (step,) = by_name["a[x=1.0]"].steps
    assert not step.real and step.starts == ("keras3_mirrored",) and step.stops == ()
    assert step.text == "keras3_mirrored: skip → ok"
    assert [p.kind for p in matrix.points] == ["coverage", "coverage", "same"]
    (fold,) = matrix.folds
    assert (fold.mode, fold.column, fold.starts) == ("keras3_mirrored", 1, True)
    assert fold.points == (("a[x=1.0]", "ok"), ("c[x=1.0]", "RuntimeError"))
    assert fold.text == "keras3_mirrored applies from 2.18.1: 2 points (1 ok, 1 RuntimeError)"


def test_a_mode_that_stops_applying_folds_with_the_reverse_wording():
    matrix = merged(report("2.15.1", result("a"), result("b"),
                           result("c", graph=raised("ValueError", "v"), verdict="xfail")),
                    report("2.16.2", result("a", graph=SKIP), result("b", graph=SKIP),
                           result("c", graph=SKIP, verdict="xfail")))
    (fold,) = matrix.folds
    assert fold.text == "graph no longer applies from 2.16.2: 3 points (before: 2 ok, 1 ValueError)"
    assert not any(p.real for p in matrix.points)
    one = merged(report("2.15.1", result("a")), report("2.16.2", result("a", graph=SKIP)))
    assert [f.text for f in one.folds] == [
        "graph no longer applies from 2.16.2: 1 point (ok before)"]


def test_an_error_that_changes_type_is_real_and_leads_the_coverage_change_beside_it():
    # variables.cond_around_call from 2.13: TypeError became AttributeError in function, while a
    # mode that had skipped began to apply; the first is what a reader must see.
    matrix = merged(report("2.12.1", result("v", verdict="xfail", keras3_mirrored=SKIP,
                                            function=raised("TypeError", "t"))),
                    report("2.13.1", result("v", verdict="xfail",
                                            keras3_mirrored=raised("AttributeError", "a"),
                                            function=raised("AttributeError", "a"))),
                    modes=K3)
    (step,) = matrix.points[0].steps
    assert step.real and matrix.points[0].kind == "changed"
    assert step.coverage == ("keras3_mirrored",)
    assert step.text == ("function: TypeError → AttributeError; "
                         "keras3_mirrored: skip → AttributeError")
    assert [f.text for f in matrix.folds] == [
        "keras3_mirrored applies from 2.13.1: 1 point (AttributeError)"]


def test_a_case_that_begins_to_apply_and_passes_is_a_change_of_coverage():
    # As the tf_keras cases skip under a nightly with no tf-keras-nightly and pass under a
    # release: which
    # cases apply changed, nothing about them.
    skipped = result("a", verdict="skip", reason="needs TensorFlow >=2.21")
    skipped["modes"] = {}
    matrix = merged(report("2.16.2", skipped), report("2.21.0", result("a")))
    (step,) = matrix.points[0].steps
    assert not step.real and step.starts == MODES
    assert matrix.points[0].kind == "coverage"
    assert [f.text for f in matrix.folds] == [f"{m} applies from 2.21.0: 1 point (ok)"
                                              for m in MODES]


@pytest.mark.parametrize("verdict", ["fail", "xpass", "error"])
def test_a_case_that_begins_to_apply_with_anything_but_a_pass_is_a_real_change(verdict):
    # A failure that arrives with the case must lead the page, not hide in a fold.
    skipped = result("a", verdict="skip", reason="needs TensorFlow >=2.21")
    skipped["modes"] = {}
    matrix = merged(report("2.16.2", skipped), report("2.21.0", result("a", verdict=verdict)))
    (step,) = matrix.points[0].steps
    assert step.real and step.starts == MODES
    assert step.text == f"verdict skip → {verdict}; every mode: not run → ok"


def test_modes_stopped_by_a_crash_are_part_of_the_crash_not_a_change_of_coverage():
    crashed = result("a", verdict="crash")
    crashed["modes"] = {"graph": {"status": "crash", "error_message": "killed", "stage": "graph"}}
    matrix = merged(report("2.16.2", result("a")), report("2.21.0", crashed),
                    report("2.21.1", result("a")))
    assert [(s.real, s.coverage) for s in matrix.points[0].steps] == [(True, ()), (True, ())]
    assert matrix.folds == ()


def test_a_status_change_between_two_ways_of_not_applying_is_kept_as_real():
    # skip → not run is neither a mode beginning nor one stopping: it must not vanish from the
    # real changes, nor be counted as coverage.
    bare = result("a", graph=SKIP)
    del bare["modes"]["graph"]
    matrix = merged(report("2.16.2", result("a", graph=SKIP)), report("2.21.0", bare))
    (step,) = matrix.points[0].steps
    assert step.real and step.coverage == () and matrix.folds == ()


def test_folds_are_one_per_mode_release_and_direction_in_column_then_mode_order():
    matrix = merged(report("2.18.1", result("a", graph=SKIP, function=SKIP), result("b")),
                    report("2.19.1", result("a"), result("b", graph=SKIP)),
                    report("2.20.0", result("a", graph=SKIP), result("b", graph=SKIP)))
    assert [(f.label, f.mode, f.starts, len(f.points)) for f in matrix.folds] == [
        ("2.19.1", "function", True, 1), ("2.19.1", "graph", True, 1),
        ("2.19.1", "graph", False, 1), ("2.20.0", "graph", False, 1)]


def test_points_with_a_real_change_come_before_those_where_only_coverage_changed():
    matrix = merged(report("2.20.0", result("a.coverage", graph=SKIP), result("b.same"),
                           result("c.real")),
                    report("2.21.0", result("a.coverage"), result("b.same"),
                           result("c.real", function=raised("ValueError", "v"))))
    assert [(p.case, p.kind) for p in matrix.points] == [
        ("c.real", "changed"), ("a.coverage", "coverage"), ("b.same", "same")]


def test_a_step_is_measured_across_a_version_where_the_point_is_absent_or_not_installed():
    matrix = merged(report("2.15.1", result("a")), report("2.16.2", result("other")),
                    report("2.21.0", result("a", function=raised("TypeError", "t"))),
                    failed={"2.17.1": "no wheel"})
    point = [p for p in matrix.points if p.case == "a"][0]
    assert [(s.version, s.text) for s in point.steps] == [("2.21.0", "function: ok → TypeError")]
    assert not [p for p in matrix.points if p.case == "other"][0].changed


def test_shards_of_one_version_are_unioned():
    one_run = merged(report("2.21.0", result("a"), result("b", function=raised("ValueError", "v"))),
                     report("2.16.2", result("a"), result("b")))
    sharded = merged(report("2.21.0", result("b", function=raised("ValueError", "v"))),
                     report("2.16.2", result("b")), report("2.21.0", result("a")),
                     report("2.16.2", result("a")))
    assert sharded.rows == one_run.rows
    assert [c.reports for c in sharded.columns] == [("r1.json", "r3.json"), ("r0.json", "r2.json")]


def test_a_point_in_two_shards_is_accepted_when_identical():
    matrix = merged(report("2.21.0", result("a"), result("b")), report("2.21.0", result("b")))
    assert len(matrix.rows) == 6


def test_a_point_in_two_shards_is_identical_whatever_each_took():
    matrix = merged(report("2.21.0", dict(result("b"), seconds=1.5)),
                    report("2.21.0", dict(result("b"), seconds=2.0)))
    assert [r.case for r in matrix.rows] == ["b"] * 3


def test_a_point_in_two_shards_with_different_results_is_an_error_naming_both():
    with pytest.raises(MergeError,
                       match=r"b\[x=1.0\] is in two reports of TensorFlow 2.21.0, r0.json and "
                             r"r1.json"):
        merged(report("2.21.0", result("b")), report("2.21.0", result("b", verdict="fail")))


def test_shards_with_different_environments_keep_both_values():
    first, second = report("2.21.0", result("a")), report("2.21.0", result("b"))
    second["environment"]["numpy"] = "2.4.6"
    assert merged(first, second).columns[0].environment["numpy"] == "1.26.4 / 2.4.6"


def test_a_version_that_could_not_be_installed_is_a_column_saying_why():
    matrix = merged(report("2.21.0", result("a")), failed={"2.15.1": "no wheel for cp313"})
    assert matrix.versions == ("2.15.1", "2.21.0")
    assert matrix.columns[0].label == "2.15.1 (not installed: no wheel for cp313)"
    cell = row(matrix, "a[x=1.0]", "eager").cells[0]
    assert (cell.status, cell.reason) == (NOT_INSTALLED, "no wheel for cp313")
    assert not matrix.changed


def test_a_version_both_reported_and_not_installed_is_an_error():
    with pytest.raises(MergeError, match="2.21.0 is listed as not installed"):
        merged(report("2.21.0", result("a")), failed={"2.21.0": "boom"})


def test_merging_nothing_is_an_error():
    with pytest.raises(MergeError, match="no reports to merge"):
        merge.merge({})


def test_merge_checks_dicts_it_is_given_directly():
    with pytest.raises(MergeError, match="x.json: not a harness report"):
        merge.merge({"x.json": {"results": []}})


# --- main: what `python -m harness merge` calls ---------------------------------------------------

def test_main_writes_every_output(tmp_path):
    paths = [write(tmp_path, "report-2.16.2.json", report("2.16.2", result("a"))),
             write(tmp_path, "report-2.21.0.json",
                   report("2.21.0", result("a", function=raised("ValueError", "v"))))]
    outs = [str(tmp_path / n) for n in ("m.md", "m.html", "m.json")]
    assert outputs.main(paths, *outs) == 0
    markdown_text, page, data = (Path(out).read_text(encoding="utf-8") for out in outs)
    assert "function: ok → ValueError" in markdown_text
    assert "<table" in page
    assert json.loads(data)["schema"] == "harness.matrix/1"


def test_main_checks_output_paths_before_reading_any_report(tmp_path):
    with pytest.raises(MergeError, match="does not exist; create it first"):
        outputs.main([str(tmp_path / "missing.json")], markdown_out=str(tmp_path / "no" / "m.md"))


def test_main_refuses_to_run_without_reports_or_outputs(tmp_path):
    path = write(tmp_path, "r.json", report("2.21.0", result("a")))
    with pytest.raises(MergeError, match="nothing to write"):
        outputs.main([path])
    with pytest.raises(MergeError, match="no reports to merge"):
        outputs.main([], markdown_out=str(tmp_path / "m.md"))


def test_main_passes_on_a_bad_report_as_merge_error_and_writes_nothing(tmp_path):
    good = write(tmp_path, "good.json", report("2.21.0", result("a")))
    bad = write(tmp_path, "bad.json", "{")
    with pytest.raises(MergeError, match="bad.json: not JSON"):
        outputs.main([good, bad], markdown_out=str(tmp_path / "m.md"))
    assert not (tmp_path / "m.md").exists()


# --- renderers ------------------------------------------------------------------------------------

HOSTILE = 'x <script>alert("1")</script> & \'quote\' | pipe'


def sample():
    old = report("2.16.2",
                 result("a.changed", verdict="xfail", reason=HOSTILE,
                        details=["- as declared: <b>bold</b>"],
                                  function=raised("ValueError",
                                                  'msg with "quotes" & <tags>\nmore')),
                 result("b.same"), result("c.old"))
    new = report("2.21.0",
                 result("a.changed", verdict="xpass",
                        function=raised("InternalError", "runtime | pipe")),
                 result("b.same"), result("d.new", point="x=[1, 2]"))
    return merged(old, new,
                  failed={"2.15.1": "tensorflow==2.15.1: no matching distribution <found>"})


FULL = ("eager", "no_autograph", "function", "xla", "graph", "forward", "saved_model")


def forward_alone():
    """Two releases; from the second, forward alone raises at one point and every mode raises at
    another."""
    everything = {m: raised("TypeError", "every <mode> broke") for m in FULL}
    old = report("2.16.2", result("seeds.nested", verdict="xfail"),
                 result("seeds.nested", point="x=2.0"), result("docs.broken"),
                 result("patterns.same"))
    deviates = raised("ValueError", "forward <script>x</script> went wrong", stage="order 1")
    new = report("2.17.1",
                 result("seeds.nested", verdict="fail", reason="forward raises <script>",
                        forward=deviates),
                 result("seeds.nested", point="x=2.0"),
                 result("docs.broken", verdict="error", **everything), result("patterns.same"))
    return merged(old, new, modes=FULL)


class _Page(html.parser.HTMLParser):
    """Collects tags, attributes and text, and checks that elements nest and close."""

    VOID = {"meta", "input", "br", "hr", "img", "link", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.tags, self.titles, self.data, self.text = [], [], [], [], []
        # per <tr class="p">: (its attributes, [(cell attrs, [(mark attrs, mark text)], cell text)])
        self.rows = []
        self._in = None  # what the next text belongs to

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        classes = attrs.get("class", "").split()
        if "title" in attrs and tag == "td":
            self.titles.append(attrs["title"])
        if tag == "tr" and "p" in classes:
            self.rows.append((attrs, []))
        elif tag == "td" and "c" in classes and self.rows:
            self.rows[-1][1].append((attrs, [], []))
        elif tag == "span" and "mk" in classes and self.rows and self.rows[-1][1]:
            self.rows[-1][1][-1][1].append([attrs, ""])
            self._in = "mark"
        elif tag == "span" and "v" in classes and self.rows and self.rows[-1][1]:
            self._in = "verdict"
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert (
            self.stack and self.stack[-1] == tag
        ), f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()
        self._in = None

    def handle_data(self, data):
        self.text.append(data)
        if self._in == "mark":
            self.rows[-1][1][-1][1][-1][1] += data
        elif self._in == "verdict":
            self.rows[-1][1][-1][2].append(data)


def parse(page):
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert parser.stack == [], f"unclosed elements {parser.stack}"
    return parser


def grid(page):
    """{case[point]: [(cell classes, verdict word, {mark: (status class, title)}), one per
    version]}."""
    table = {}
    for attrs, cells in parse(page).rows:
        table[attrs["data-name"]] = [
            (set(cell["class"].split()), "".join(word),
             {text: (next(c for c in mark["class"].split() if c.startswith("m-")), mark["title"])
              for mark, text in marks})
            for cell, marks, word in cells]
    return table


def test_html_is_self_contained():
    page = render.html(sample())
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert "http://" not in page and "https://" not in page
    assert "<link" not in page.lower()
    assert "@import" not in page and "url(" not in page
    scripts = [attrs for tag, attrs in parse(page).tags if tag == "script"]
    assert scripts and all("src" not in attrs for attrs in scripts)


def test_html_is_one_row_per_case_and_point_and_one_cell_per_version():
    matrix = sample()
    page = parse(render.html(matrix))
    assert [attrs["data-name"] for attrs, _ in page.rows] == [p.name for p in matrix.points] == [
        "a.changed[x=1.0]", "b.same[x=1.0]", "c.old[x=1.0]", "d.new[x=[1, 2]]"]
    assert all(len(cells) == len(matrix.columns) for _, cells in page.rows)
    text = "".join(page.text)
    for word in ("pass", "fail", "xfail", "xpass", "crash", "timeout", "absent", "not installed"):
        assert word in text
    assert "no matching distribution <found>" in text


def test_a_point_where_forward_alone_deviates_shows_one_deviating_mark_and_the_rest_ok():
    table = grid(render.html(forward_alone()))
    before, after = table["seeds.nested[x=1.0]"]
    assert (before[1], after[1]) == ("xfail", "fail")
    assert {"fail", "differs"} <= after[0] and "differs" not in before[0]
    assert list(after[2]) == ["e", "na", "f", "x", "g", "fw", "sm"]
    assert {mark: status for mark, (status, _) in after[2].items()} == {
        "e": "m-ok", "na": "m-ok", "f": "m-ok", "x": "m-ok", "g": "m-ok", "fw": "m-exc",
        "sm": "m-ok"}
    assert (
        after[2]["fw"][1] == "forward: ValueError at order 1: forward <script>x</script> went wrong"
    )
    assert after[2]["e"][1] == "eager: ok"
    assert all(status == "m-ok" for status, _ in before[2].values())
    # Where every mode raises, every mark says so: the two rows look different at a glance.
    every = table["docs.broken[x=1.0]"][1]
    assert every[1] == "error" and {status for status, _ in every[2].values()} == {"m-exc"}
    assert {"m-ok"} == {status for _, _, marks in table["patterns.same[x=1.0]"]
                        for status, _ in marks.values()}


def test_a_mark_that_changed_from_the_version_before_is_marked_moved():
    page = parse(render.html(forward_alone()))
    _, cells = next(r for r in page.rows if r[0]["data-name"] == "seeds.nested[x=1.0]")
    moved = [(text, i) for i, (_, marks, _) in enumerate(cells) for attrs, text in marks
             if "moved" in attrs["class"].split()]
    assert moved == [("fw", 1)]


def test_html_cell_details_name_every_modes_status_and_what_changed():
    page = parse(render.html(forward_alone()))
    _, cells = next(r for r in page.rows if r[0]["data-name"] == "seeds.nested[x=1.0]")
    data = cells[1][0]
    assert data["data-head"] == "seeds.nested[x=1.0] · TensorFlow 2.17.1"
    assert data["data-modes"].splitlines() == [
        "eager: ok", "no_autograph: ok", "function: ok", "xla: ok", "graph: ok",
        "forward: ValueError at order 1: forward <script>x</script> went wrong", "saved_model: ok"]
    assert data["data-change"] == "since 2.16.2: forward: ok → ValueError; verdict xfail → fail"
    assert data["data-reason"] == "forward raises <script>"
    assert "data-change" not in cells[0][0]
    names = {attrs["data-name"]: attrs for attrs, _ in page.rows}
    assert "From 2.17.1: forward: ok → ValueError; verdict xfail → fail." in "".join(page.text)
    assert names["seeds.nested[x=1.0]"]["class"].split() == ["p", "changed"]
    assert names["patterns.same[x=1.0]"]["class"].split() == ["p", "same"]


def test_html_carries_every_cells_explanation_escaped():
    matrix = sample()
    raw = render.html(matrix)
    page = parse(raw)
    titles = iter(page.titles)
    for point in matrix.points:
        for i in range(len(matrix.columns)):
            first = point.cells(i)[0]
            assert next(titles).startswith(first.explanation if first.observed else first.reason)
    assert "<script>alert" not in raw and "<b>bold" not in raw
    details = [attrs.get("data-details") for tag, attrs in page.tags if tag == "td"
               and attrs.get("data-details")]
    assert "- as declared: <b>bold</b>" in details
    raw = render.html(forward_alone())
    assert "<script>x" not in raw and "&lt;script&gt;x&lt;/script&gt;" in raw


def test_html_marks_cells_that_differ_from_the_version_before():
    page = parse(render.html(sample()))
    differs = [attrs["title"] for tag, attrs in page.tags if tag == "td"
               and "differs" in attrs.get("class", "")]
    assert len(differs) == 1 and differs[0].startswith("xpass")
    assert differs[0].endswith("changed: function: ValueError → InternalError; verdict xfail → "
                               "xpass")


def test_the_theme_filter_lists_exactly_the_themes_present_and_rows_carry_theirs():
    page = parse(render.html(forward_alone()))
    options = [attrs["value"] for tag, attrs in page.tags if tag == "option"]
    assert options == ["", "docs", "patterns", "seeds"]
    assert {attrs["data-name"]: attrs["data-theme"] for attrs, _ in page.rows} == {
        "seeds.nested[x=1.0]": "seeds", "docs.broken[x=1.0]": "docs",
        "seeds.nested[x=2.0]": "seeds", "patterns.same[x=1.0]": "patterns"}
    ids = {attrs.get("id") for _, attrs in page.tags}
    assert {"only-changed", "theme", "search", "grid", "panel"} <= ids


def test_html_legend_explains_verdict_colours_and_mode_marks():
    text = " ".join(parse(render.html(forward_alone())).text)
    for meaning in ("the declared deviation happened", "raised an exception", "crashed",
                    "timed out", "not run or skipped", "status differs from the version before"):
        assert meaning in text
    for mode in FULL:
        assert mode in text


def test_html_first_column_and_header_stay_and_ten_versions_fit_in_1400_pixels():
    page = render.html(sample())
    css = page[page.index("<style>"):page.index("</style>")]
    rule = re.search(r"th\.name, td\.name \{([^}]*)\}", css).group(1)
    assert "position: sticky" in rule and "left: 0" in rule
    assert re.search(r"thead th \{[^}]*position: sticky; top: 0", css)
    assert re.search(r"\.wrap \{[^}]*overflow: auto", css)
    cell = int(re.search(r"td\.c \{[^}]*\bwidth: (\d+)px", css).group(1))
    name = re.search(r"td\.name \{[^}]*\bwidth: (\d+)em;[^}]*font-size: (\d+)px", css)
    margin = 2 * 1.2 * 14 + 2 + 17  # body margins, the container's border and a scrollbar
    assert int(name.group(1)) * int(name.group(2)) + 10 * (cell + 1) + margin <= 1400


def _columns(line):
    return len(re.split(r"(?<!\\)\|", line.strip())) - 2


def test_markdown_opens_with_what_changed_then_one_row_per_case_and_point():
    matrix = sample()
    text = render.markdown(matrix)
    lines = text.splitlines()
    assert lines[0] == "## TensorFlow version matrix"
    # A line per version, then the legend, before anything else: not after 80 rows.
    assert lines[2].startswith("- **2.15.1**: not installed: tensorflow==2.15.1: no matching "
                               "distribution &lt;found&gt;")
    assert lines[3].startswith("- **2.16.2**") and lines[4].startswith("- **2.21.0**")
    assert (
        lines[6].startswith("Modes, in each cell only where not ok: ")
        and "e eager, f function, g graph" in lines[6]
    )
    assert lines[8] == "### What changed between releases"
    assert lines[10] == "At 1 of 4 case points a verdict or a mode's outcome changed:"
    assert (
        lines[12]
        == "- **a.changed[x=1.0]**: From 2.21.0: function: ValueError → InternalError; "
        "verdict xfail → xpass."
    )
    assert lines[13] == ""
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 2 + len(matrix.points) == 2 + 4
    assert {_columns(line) for line in table} == {1 + len(matrix.columns)}
    assert table[0] == "| case[point] | 2.15.1 (not installed) | 2.16.2 | 2.21.0 |"
    assert (
        table[2]
        == "| a.changed[x=1.0] | not installed | xfail · ValueError: f | **xpass · InternalError:"
        " f** |"
    )
    assert "| d.new[x=[1, 2]] | not installed | absent | pass |" in text
    assert "e eager, f function, g graph" in text


def test_markdown_names_the_point_the_change_and_the_release_it_started():
    lines = render.markdown(forward_alone()).splitlines()
    changed = lines[lines.index("### What changed between releases") + 4:]
    changed = changed[:changed.index("")]
    assert changed == [
        "- **docs.broken[x=1.0]**: From 2.17.1: every mode: ok → TypeError; verdict pass → error.",
        "- **seeds.nested[x=1.0]**: From 2.17.1: forward: ok → ValueError; verdict xfail → fail.",
    ]
    table = [line for line in lines if line.startswith("| ")]
    assert table[1:] == [
        "| docs.broken[x=1.0] | pass | **error · TypeError: all** |",
        "| seeds.nested[x=1.0] | xfail | **fail · ValueError: fw** |",
        "| patterns.same[x=1.0] | pass | pass |",
        "| seeds.nested[x=2.0] | pass | pass |"]


def test_markdown_folds_a_crash_and_the_modes_it_stopped():
    crashed = result("a", verdict="crash")
    crashed["modes"] = {"graph": {"status": "crash", "error_message": "killed", "stage": "graph"}}
    text = render.markdown(merged(report("2.16.2", result("a", **{m: ok() for m in FULL}),
                                         modes=FULL),
                                  report("2.21.0", crashed, modes=FULL)))
    assert "| a[x=1.0] | pass | **crash: g; not run: rest** |" in text
    assert "From 2.21.0: graph: ok → crash; the others: ok → not run; verdict pass → crash." in text
    few = render.markdown(merged(report("2.16.2", result("a")), report("2.21.0", crashed)))
    assert (
        "| a[x=1.0] | pass | **crash: g; not run: e f** |" in few
    ), "two modes are as short by their marks"


def test_markdown_says_only_the_verdict_where_no_mode_ran():
    skipped = result("a", verdict="skip", reason="needs TensorFlow >=2.17")
    skipped["modes"] = {}
    text = render.markdown(merged(report("2.16.2", skipped), report("2.21.0", result("a"))))
    assert "| a[x=1.0] | skip | **pass** |" in text
    # The case began to apply and passes: folded with the modes that began to apply.
    assert "- eager applies from 2.21.0: 1 point (ok): a[x=1.0]." in text


def test_markdown_says_when_nothing_changed():
    text = render.markdown(merged(report("2.16.2", result("a")), report("2.21.0", result("a"))))
    assert "Nothing: each of the 1 case points behaves the same" in text
    assert "No case point of 1 changed" in text
    assert "nothing to compare" in render.markdown(merged(report("2.21.0", result("a"))))


def test_json_is_strict_and_keyed_by_version():
    def refuse(name):
        raise ValueError(name)
    data = json.loads(render.json_text(sample()), parse_constant=refuse)
    assert data["schema"] == "harness.matrix/1"
    assert [v["version"] for v in data["versions"]] == ["2.15.1", "2.16.2", "2.21.0"]
    assert data["versions"][0] == {"version": "2.15.1", "installed": False, "environment": {},
                                   "reports": [],
                                   "not_installed_reason": "tensorflow==2.15.1: no matching "
                                                           "distribution <found>"}
    first = data["rows"][0]
    assert (first["case"], first["mode"], first["change"]) == ("a.changed", "eager",
                                                               "verdict xfail→xpass from 2.21.0")
    assert first["cells"]["2.16.2"]["reason"] == HOSTILE
    assert first["cells"]["2.15.1"]["status"] == "not installed"
    assert len(data["rows"]) == 4 * 3, "a row per case, point and mode"


def test_an_unchecked_pass_shows_as_such_in_the_matrix():
    # A pass no oracle could judge is not shown as a plain pass across versions.
    checked = result("t.a")
    unchecked = dict(result("t.a"), unchecked="no oracle ran")
    matrix = merged(report("2.20.0", checked), report("2.21.0", unchecked))
    cells = row(matrix, "t.a[x=1.0]", "eager").cells
    assert [c.word for c in cells] == ["pass", "pass (unchecked)"]
    assert "pass (unchecked)" in render.markdown(matrix)
    data = json.loads(render.json_text(matrix))
    [first] = [r for r in data["rows"] if r["mode"] == "eager"]
    assert first["cells"]["2.21.0"]["unchecked"] == "no oracle ran"
    assert first["cells"]["2.20.0"]["unchecked"] == ""


def test_every_known_mode_has_a_mark_of_its_own():
    # The five training-step modes once all showed as "ke" (the first two letters of their names),
    # so a matrix cell could not say which of them raised.
    from harness import mode_names

    marks = [render._mark(mode) for mode in mode_names.KNOWN_MODES]
    assert marks == [mode_names.ROWS[mode].mark for mode in mode_names.KNOWN_MODES]
    assert all(marks) and len(set(marks)) == len(marks), marks


def test_markdown_says_no_keras3_where_every_keras3_mode_skipped_for_want_of_it():
    k3 = ("keras3_eager", "keras3_fit", "keras3_xla", "keras3_mixed", "keras3_mirrored")
    modes = MODES + k3
    missing = {"status": "skip", "orders": [], "sources": [],
               "note": "needs Keras 3 (the keras package, 3.0 or later, which TensorFlow installs "
                       "from 2.16 on); TensorFlow 2.12 to 2.15 come with Keras 2"}
    elsewhere = {"status": "skip", "orders": [], "sources": [], "note": "a Keras 3 model: ..."}
    old = report("2.15.1", result("a", **{m: missing for m in k3}),
                 result("b", verdict="xfail", graph=raised("TypeError", "t"),
                        **{m: missing for m in k3}), modes=modes)
    new = report("2.16.2", result("a"), result("b", verdict="xfail", graph=raised("TypeError", "t"),
                                               keras3_mixed=elsewhere), modes=modes)
    matrix = merged(old, new, modes=modes)
    lines = render.markdown(matrix).splitlines()
    (a,) = [line for line in lines if line.startswith("| a[")]
    (b,) = [line for line in lines if line.startswith("| b[")]
    assert a.endswith("| pass · no Keras 3 | pass |"), a
    # A Keras 3 mode skipped for another reason is a skip like any other, named by its mark.
    assert b.endswith("| xfail · TypeError: g; no Keras 3 | xfail · TypeError: g; skip: k3mp |"), b
    # A Keras 3 case, every mode of it skipped for want of Keras 3 before 2.16, passing from 2.16.
    k3_case = report("2.15.1", result("c", verdict="skip", **{m: missing for m in modes}),
                     modes=modes)
    k3_new = report("2.16.2", result("c"), modes=modes)
    both = merged(k3_case, k3_new, modes=modes)
    (c,) = [line for line in render.markdown(both).splitlines() if line.startswith("| c[")]
    assert c.endswith("| skip · no Keras 3 | pass |"), c
    assert not [p for p in both.points if p.changed], "Keras 3's arrival is no change of the case"
    # Keras 3's arrival is no change of a case: no row is listed as changed.
    assert "No case point of 2 changed between versions." in lines, lines
    assert not [r for r in matrix.rows if r.changed], [(r.name, r.mode, r.change)
                                                       for r in matrix.rows
                                                       if r.changed]
