"""Reporters: strict JSON, JUnit XML, the terminal text, and atomic writes."""

import dataclasses
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from harness import report as report_io
from harness.records import (
    Differentiated,
    ErrorInfo,
    ModeOutcome,
    OracleOutcome,
    Output,
    Report,
    Result,
    Status,
    Verdict,
)
from harness.report import json_report, junit, text

X = (Differentiated("x", "float32", ()),)


def ok(mode, *orders):
    return ModeOutcome(mode=mode, status=Status.OK, sources=X,
                       orders=tuple(tuple(o if isinstance(o, Output) else Output.of(o)
                                          for o in order)
                                    for order in orders))


def result(verdict, point="x=1.0", case="tests.case", reason="", details=(), outcomes=None):
    if outcomes is None:
        outcomes = {"eager": ok("eager", [np.float32(1.0)], [np.float32(2.0)])}
    return Result(case=case, point=point, order=1, verdict=verdict, reason=reason,
                  details=tuple(details), outcomes=outcomes,
                  rerun=f"python -m harness --cases {case}", )


def make_report(*results):
    return Report(environment={"tensorflow": "2.17.1", "python": "3.11.9"},
                  modes=("eager", "function", "graph"), results=tuple(results))


def strict_loads(text_):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text_, parse_constant=refuse)


# -- JSON ------------------------------------------------------------------------------


def test_json_is_strict_with_nonfinite_values_as_strings():
    values = np.array([np.nan, np.inf, -np.inf, 1.5], np.float32)
    r = result(Verdict.PASS, outcomes={"eager": ok("eager", [values])})
    data = strict_loads(json_report.render(make_report(r)))
    assert data["results"][0]["modes"]["eager"]["orders"][0][0]["value"] == ["nan", "inf", "-inf",
                                                                             1.5]


def test_json_scalar_nonfinite_values_are_strings():
    r = result(Verdict.PASS,
               outcomes={"eager": ok("eager", [np.float64(-np.inf)], [np.float64(np.nan)])})
    orders = strict_loads(json_report.render(make_report(r)))["results"][0]["modes"]["eager"][
        "orders"
    ]
    assert orders[0][0]["value"] == "-inf"
    assert orders[1][0]["value"] == "nan"


def test_json_none_gradient_is_null_with_its_dtype_and_shape():
    none = Output.of(None, "float32", (3,))
    r = result(Verdict.PASS, outcomes={"eager": ok("eager", [np.float32(1.0)], [none])})
    out = strict_loads(json_report.render(make_report(r)))["results"][0]["modes"]["eager"][
        "orders"
    ][1][0]
    assert out == {"value": None, "dtype": "float32", "shape": [3]}


def test_json_schema_and_summary_counts():
    rep = make_report(result(Verdict.PASS), result(Verdict.PASS, point="x=2.0"),
                      result(Verdict.FAIL, point="x=3.0", reason="r"),
                      result(Verdict.XFAIL, point="x=4.0"))
    data = strict_loads(json_report.render(rep))
    assert data["schema"] == "harness.report/2"
    assert data["modes"] == ["eager", "function", "graph"]
    assert data["environment"] == {"tensorflow": "2.17.1", "python": "3.11.9"}
    assert data["summary"] == {"pass": 2, "fail": 1, "xfail": 1, "xpass": 0, "error": 0,
                               "crash": 0, "timeout": 0, "flaky": 0, "skip": 0}
    assert [r["verdict"] for r in data["results"]] == ["pass", "pass", "fail", "xfail"]


def test_json_float32_uses_shortest_digits_that_read_back():
    r = result(Verdict.PASS, outcomes={"eager": ok("eager", [np.float32(1.3132616)])})
    rendered = json_report.render(make_report(r))
    value = strict_loads(rendered)["results"][0]["modes"]["eager"]["orders"][0][0]["value"]
    # Read back, the number is the literal 1.3132616, not float32's exact binary
    # value widened to float64 (1.31326162815...).
    assert value == 1.3132616
    assert np.float32(value) == np.float32(1.3132616)
    assert "1.3132616" in rendered and "1.31326162" not in rendered


def test_json_float64_reads_back_exactly():
    third = np.float64(1.0) / np.float64(3.0)
    r = result(Verdict.PASS, outcomes={"eager": ok("eager", [third])})
    value = strict_loads(json_report.render(make_report(r)))["results"][0]["modes"]["eager"][
        "orders"
    ][0][0]["value"]
    assert value == float(third)


def test_json_nested_array_and_complex_values():
    matrix = np.array([[1.0, 2.0], [3.0, 4.5]], np.float32)
    z = np.array([1.0 - 2.5j], np.complex64)
    r = result(Verdict.PASS, outcomes={"eager": ok("eager", [matrix, z])})
    outs = strict_loads(json_report.render(make_report(r)))["results"][0]["modes"]["eager"][
        "orders"
    ][0]
    assert outs[0] == {"value": [[1.0, 2.0], [3.0, 4.5]], "dtype": "float32", "shape": [2, 2]}
    assert outs[1]["value"] == [[1.0, -2.5]]


def test_json_error_outcome_carries_type_stage_and_bases():
    error = ErrorInfo(type="InternalError", bases=("InternalError", "OpError", "Exception"),
                      message="first\nsecond", stage="order 2")
    o = ModeOutcome(mode="function", status=Status.ERROR, error=error, sources=X)
    r = result(Verdict.FAIL, reason="r", outcomes={"function": o})
    entry = strict_loads(json_report.render(make_report(r)))["results"][0]["modes"]["function"]
    assert entry["status"] == "error"
    assert entry["error_type"] == "InternalError"
    assert entry["error_message"] == "first\nsecond"
    assert entry["stage"] == "order 2"
    assert entry["error_bases"] == ["InternalError", "OpError", "Exception"]


def test_json_result_carries_reason_details_and_rerun():
    r = result(Verdict.FAIL, reason="function vs eager differ", details=["line one", "line two"])
    entry = strict_loads(json_report.render(make_report(r)))["results"][0]
    assert entry["case"] == "tests.case" and entry["point"] == "x=1.0" and entry["order"] == 1
    assert entry["reason"] == "function vs eager differ"
    assert entry["details"] == ["line one", "line two"]
    assert entry["rerun"] == "python -m harness --cases tests.case"



def _large_point(point: str) -> Result:
    """A point of larq's quantizer tests as the report sees it: three modes, each with a forward,
    a gradient and a weighted chain of 1536 float64 elements."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 4, 3, 16))
    outcomes = {m: dataclasses.replace(ok(m, [np.sign(x)], [np.exp(-x * x)]),
                                       upstream=((Output.of(np.cos(x)),),))
                for m in ("eager", "function", "graph")}
    return Result(case="recorded.quantizer", point=point, order=1, verdict=Verdict.FAIL,
                  reason="r", details=("d",), outcomes=outcomes, rerun="rerun",
                  yardstick="eager")


def test_the_json_report_of_30_points_of_large_arrays_stays_small():
    thirty = make_report(*(_large_point(f"x={i}") for i in range(30)))
    assert len(json_report.render(thirty)) < 250_000
    assert len(json.dumps(json_report.result_dict(_large_point("x=0")))) < 5_000  # the stream's
    # Every element of one point's 3 modes x 3 arrays of 1536, one number a line: 30 of them
    # would be 8 MB.
    one = make_report(_large_point("x=0"))
    assert len(json_report.render(one, every_value=True)) > 250_000


def test_a_large_value_is_summarized_and_differences_from_the_yardstick_are_kept():
    values = np.arange(40, dtype=np.float32).reshape(2, 20)
    values[0, 1], values[0, 2], values[1, 0] = np.nan, np.inf, -np.inf
    shifted = values.copy()
    shifted[1, 5] += 0.25
    r = dataclasses.replace(result(Verdict.FAIL, outcomes={"eager": ok("eager", [values]),
                                                           "graph": ok("graph", [shifted])}),
                            yardstick="eager")
    entry = strict_loads(json_report.render(make_report(r)))["results"][0]
    assert entry["yardstick"] == "eager"
    eager, graph = (entry["modes"][m]["orders"][0][0] for m in ("eager", "graph"))
    assert "value" not in eager and eager["dtype"] == "float32" and eager["shape"] == [2, 20]
    assert eager["summary"] == {"elements": 40, "head": [0.0, "nan", "inf", 3.0, 4.0, 5.0, 6.0,
                                                         7.0],
                                "min": 0.0, "max": 39.0, "nan": 1, "inf": 1, "-inf": 1}
    assert graph["summary"]["max_abs_diff"] == 0.25  # graph's against the yardstick's


def test_json_values_full_writes_every_element_and_a_small_value_is_always_whole():
    values = np.arange(17, dtype=np.float64)
    r = result(Verdict.PASS, outcomes={"eager": ok("eager", [values, values[:16]])})
    summarized = strict_loads(json_report.render(make_report(r)))["results"][0]
    full = strict_loads(json_report.render(make_report(r), every_value=True))["results"][0]
    assert "summary" in summarized["modes"]["eager"]["orders"][0][0]
    assert summarized["modes"]["eager"]["orders"][0][1]["value"] == list(range(16))
    assert full["modes"]["eager"]["orders"][0][0]["value"] == list(range(17))

# -- JUnit -----------------------------------------------------------------------------


def junit_suite(rep):
    root = ET.fromstring(junit.render(rep).encode("utf-8"))
    assert root.tag == "testsuites"
    [suite] = list(root)
    return suite


def test_junit_parses_and_counts_each_kind():
    rep = make_report(
        result(Verdict.PASS, point="x=1.0"),
        result(Verdict.FAIL, point="x=2.0", reason="values differ"),
        result(Verdict.XFAIL, point="x=3.0", reason="declared"),
        result(Verdict.XPASS, point="x=4.0", reason="fixed?"),
        result(Verdict.ERROR, point="x=5.0", reason="builder raised"),
        result(Verdict.CRASH, point="x=6.0", reason="died"),
        result(Verdict.TIMEOUT, point="x=7.0", reason="hung"),
        result(Verdict.SKIP, point="x=8.0", reason="needs 2.16"),
    )
    suite = junit_suite(rep)
    assert suite.get("tests") == "8"
    assert suite.get("failures") == "1"  # fail
    assert suite.get("errors") == "3"  # error, crash, timeout
    assert suite.get("skipped") == "2"  # xfail, skip
    cases = suite.findall("testcase")
    assert len(cases) == 8
    assert {c.get("classname") for c in cases} == {"tests.case"}


def test_junit_is_valid_against_junit_10_xsd():
    # The schema Jenkins reads JUnit with (tests/data/junit-10.xsd, as pytest's own tests carry
    # it, MIT), with every kind of result, what the oracles said, an unchecked pass, control
    # characters and a timed result in it.
    xmlschema = pytest.importorskip("xmlschema", reason="xmlschema is the test extra's")
    said = {"numeric": OracleOutcome(name="numeric", status="match"),
            "upstream": OracleOutcome(name="upstream", status="differ")}
    rep = make_report(*[dataclasses.replace(
        result(v, point=f"x={i}.0", reason=f"why \x1b[31m{v.value}\x00 <&>"), oracles=said)
        for i, v in enumerate(Verdict)], unchecked_pass())
    schema = xmlschema.XMLSchema(str(Path(__file__).parents[1] / "data" / "junit-10.xsd"))
    schema.validate(junit.render(rep))


def test_junit_fail_is_a_failure_element_with_the_reason():
    suite = junit_suite(make_report(result(Verdict.FAIL, reason="function vs eager",
                                           details=["worst at (0,)"])))
    [case] = suite.findall("testcase")
    [failure] = case.findall("failure")
    assert "function vs eager" in failure.get("message")
    assert "worst at (0,)" in failure.text
    assert "rerun: python -m harness --cases tests.case" in failure.text


def test_junit_xfail_is_skipped():
    suite = junit_suite(make_report(result(Verdict.XFAIL,
                                           reason="declared: function InternalError")))
    [case] = suite.findall("testcase")
    assert case.find("skipped") is not None
    assert case.find("failure") is None and case.find("error") is None


def test_junit_pass_and_xpass_have_no_failure_error_or_skipped():
    suite = junit_suite(make_report(result(Verdict.PASS),
                                    result(Verdict.XPASS, point="x=2.0", reason="n")))
    for case in suite.findall("testcase"):
        assert [child.tag for child in case if child.tag in ("failure", "error", "skipped")] == []
    xpass_case = suite.findall("testcase")[1]
    assert "xpass" in xpass_case.find("system-out").text


def test_junit_environment_becomes_properties():
    suite = junit_suite(make_report(result(Verdict.PASS)))
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props == {"tensorflow": "2.17.1", "python": "3.11.9"}


def test_junit_escapes_markup_in_messages():
    reason = "expected <tf.Tensor 'x:0'> & got \"nothing\""
    suite = junit_suite(make_report(result(Verdict.FAIL, reason=reason)))
    assert reason in suite.find("testcase/failure").get("message")


def test_junit_stays_parseable_when_a_message_holds_control_characters():
    # Exception messages from user code can carry ANSI colour codes; XML 1.0 cannot
    # hold U+001B, so the reporter must drop or replace it to stay parseable.
    reason = "function raises ValueError: \x1b[31mshape mismatch\x1b[0m"
    suite = junit_suite(make_report(result(Verdict.FAIL, reason=reason)))
    assert "shape mismatch" in suite.find("testcase/failure").get("message")


# -- text ------------------------------------------------------------------------------


def test_text_pass_is_one_line_with_verdict_name_and_modes():
    line = text.line(result(Verdict.PASS))
    assert "\n" not in line
    assert line.startswith("PASS")
    assert "tests.case[x=1.0]" in line and "eager:ok" in line


def test_text_fail_shows_reason_details_and_rerun():
    r = result(Verdict.FAIL, reason="function vs eager",
               details=["function vs eager", "graph vs eager"])
    lines = text.line(r).splitlines()
    assert lines[0].startswith("FAIL")
    assert "    function vs eager" in lines
    assert "    - graph vs eager" in lines
    assert "    - function vs eager" not in lines  # the reason is not repeated
    assert lines[-1] == "    rerun: python -m harness --cases tests.case"


def test_text_skip_has_no_rerun_line():
    assert "rerun" not in text.line(result(Verdict.SKIP, reason="needs 2.16"))


def test_text_error_outcome_shows_class_and_stage():
    error = ErrorInfo(type="InternalError", bases=("InternalError",), message="m", stage="order 1")
    o = ModeOutcome(mode="function", status=Status.ERROR, error=error)
    assert "function:InternalError@order 1" in text.line(result(Verdict.FAIL, reason="r",
                                                                outcomes={"function": o}))


def test_a_mode_that_judged_fewer_orders_than_the_line_s_says_which_it_judged():
    # A training step judges order 1 of an order-2 case: "order 2 ... keras_fit:ok" would claim
    # more.
    full = ok("eager", [np.float32(9.0)], [np.float32(6.0)], [np.float32(2.0)])
    step = dataclasses.replace(ok("keras_fit", [], [np.float32(6.0)]), top_order=1)
    line = text.line(dataclasses.replace(result(Verdict.PASS,
                                                outcomes={"eager": full, "keras_fit": step}),
                                         order=2))
    assert "  order 2  eager:ok  keras_fit:ok(order 1)" in line
    # At order 1 it judged all the case asks for, and says nothing more.
    assert text.line(result(Verdict.PASS, outcomes={"eager": full, "keras_fit": step})).endswith(
        "  order 1  eager:ok  keras_fit:ok")


def test_text_summary_counts_cases_points_and_verdicts():
    results = [result(Verdict.PASS, case="a.one"),
               result(Verdict.PASS, case="a.one", point="x=2.0"),
               result(Verdict.FAIL, case="a.two", reason="r")]
    assert text.summary(results) == "2 cases at 3 points: 2 pass, 1 fail"
    assert text.summary([]) == "0 cases at 0 points: nothing ran"


# -- atomic write and path checks ------------------------------------------------------


def test_write_replaces_the_target_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old contents that are longer than the new ones\n")
    report_io.write(str(target), "new\n")
    assert target.read_text() == "new\n"
    assert os.listdir(tmp_path) == ["report.json"]


def test_write_creates_a_new_file(tmp_path):
    target = tmp_path / "out.xml"
    report_io.write(str(target), "<x/>\n")
    assert target.read_text() == "<x/>\n"
    assert os.listdir(tmp_path) == ["out.xml"]


def test_write_gives_a_new_file_the_usual_permissions(tmp_path):
    # A report is read by CI uploaders and other users: like open(path, "w"), a new file
    # gets 0o666 less the process umask, not the private 0o600 of a temporary file.
    umask = os.umask(0)
    os.umask(umask)
    target = tmp_path / "report.json"
    report_io.write(str(target), "{}\n")
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~umask)


def test_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "report.json"
    target.write_text("old\n")

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError):
        report_io.write(str(target), "new\n")
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["report.json"]


def test_a_lone_surrogate_is_written_escaped_not_lost_with_the_file(tmp_path):
    # A file name that is not UTF-8, in an exception message, must not make the write raise.
    target = tmp_path / "report.md"
    report_io.write(str(target), "cannot open caf\udce9.txt\n")
    assert target.read_text(encoding="utf-8") == "cannot open caf\\udce9.txt\n"


def test_check_writable_accepts_a_new_file_in_an_existing_directory(tmp_path):
    report_io.check_writable(str(tmp_path / "report.json"))  # raises nothing


def test_check_writable_rejects_a_missing_directory(tmp_path):
    with pytest.raises(ValueError) as info:
        report_io.check_writable(str(tmp_path / "no_such_dir" / "report.json"))
    assert "does not exist" in str(info.value)


def test_check_writable_rejects_a_directory_path(tmp_path):
    with pytest.raises(ValueError) as info:
        report_io.check_writable(str(tmp_path))
    assert "directory" in str(info.value)


# -- a pass nothing checked ------------------------------------------------------------------------

def unchecked_pass():
    why = "the numeric oracle could not judge them (see below)"
    r = result(Verdict.PASS,
               reason=f"all modes agree, but nothing checked that the values are right: {why}",
               details=["numeric oracle not checked: not finite within a step of the point"])
    return dataclasses.replace(r, unchecked=why)


def test_an_unchecked_pass_says_so_on_its_line_with_why_and_is_counted_apart():
    r, checked = unchecked_pass(), result(Verdict.PASS)
    lines = text.line(r).splitlines()
    assert lines[0].startswith("PASS") and lines[0].endswith("(unchecked)")
    assert lines[1] == f"    {r.reason}"
    assert "    - numeric oracle not checked: not finite within a step of the point" in lines
    assert text.line(checked) == text.line(checked).splitlines()[0]  # a checked pass stays one line
    assert text.summary([r, checked, result(Verdict.FAIL, point="x=2.0")]) == (
        "1 case at 3 points: 2 pass (1 of them unchecked), 1 fail")


def test_an_unchecked_pass_is_marked_in_json_and_junit():
    report = make_report(unchecked_pass(), result(Verdict.PASS, point="x=2.0"))
    data = strict_loads(json.dumps(json_report.to_dict(report)))
    assert [r["unchecked"]
            for r in data["results"]] == ["the numeric oracle could not judge them (see below)", ""]
    assert data["unchecked"] == 1 and data["summary"]["pass"] == 2
    root = ET.fromstring(junit.render(report))
    first, second = root.iter("testcase")
    out = first.find("system-out").text.splitlines()
    assert "unchecked: the numeric oracle could not judge them (see below)" in out
    assert any("numeric oracle not checked" in line for line in out)
    assert second.find("system-out") is None and first.find("failure") is None


# -- odd text: control characters and lone surrogates ---------------------------------------------

FAKE = (  # ESC, CR, NUL and a newline in a point label
    "x\x1b[2K\rPASS     t.fake\x00\nPASS     t.other"
)


def test_a_label_with_control_characters_cannot_paint_a_line_on_the_terminal():
    r = result(Verdict.FAIL, point=FAKE, reason="ValueError: caf\udce9\nsecond line\rPASS",
               details=["a\x1b[31mred\x1b[0m detail"])
    out = text.line(r)
    assert not any(c in out for c in "\x1b\r\x00"), repr(out)
    lines = out.splitlines()
    assert lines[0].startswith("FAIL ") and "x\\x1b[2K\\rPASS     t.fake\\x00\\nPASS" in lines[0]
    # nothing at column 0
    assert not any(line.startswith(("PASS", "FAIL")) for line in lines[1:]), lines
    assert lines[1] == "    ValueError: caf\\udce9" and lines[2] == "    second line\\rPASS"
    out.encode("utf-8")  # no lone surrogate left to fail the terminal's encoder


def test_junit_holds_control_characters_and_surrogates_escaped_and_stays_valid_xml():
    report = make_report(result(Verdict.FAIL, point=FAKE, case="t.c\x1b", reason="caf\udce9"))
    xml = junit.render(report)
    xml.encode("utf-8")
    [case] = ET.fromstring(xml).iter("testcase")
    assert (
        "\\x00" in case.get("name")
        and "\\x1b" in case.get("name")
        and case.get("classname") == "t.c\\x1b"
    )
    assert "caf\\udce9" in case.find("failure").get("message")


def test_a_failed_write_says_truly_which_other_outputs_were_written(tmp_path, monkeypatch, capsys):
    # On a full disk where none were written, "the other outputs were written" would be false.
    real = report_io.write

    def full_disk(path, text):
        if not path.endswith(".xml"):
            raise OSError(28, "No space left on device")
        real(path, text)

    monkeypatch.setattr(report_io, "write", full_disk)
    json_out, md_out, xml_out = (str(tmp_path / name) for name in ("r.json", "m.md", "r.xml"))
    assert report_io.write_each([(json_out, "{}"), (md_out, lambda: "# m")]) is False
    assert capsys.readouterr().err.splitlines() == [
        f"harness: cannot write {path}: No space left on device; no other output was written "
        "either; rerun with another path for it" for path in (json_out, md_out)]
    written = []
    assert report_io.write_each([(json_out, "{}"), (xml_out, "<x/>")],
                                wrote=written.append) is False
    assert capsys.readouterr().err.splitlines() == [
        f"harness: cannot write {json_out}: No space left on device; {xml_out} was written; "
        "rerun with another path for it"]
    assert written == [xml_out] and (tmp_path / "r.xml").read_text() == "<x/>"
    assert report_io.write_each([(json_out, "{}")]) is False
    assert capsys.readouterr().err == (f"harness: cannot write {json_out}: No space left on "
                                       "device; rerun with another path for it\n")
