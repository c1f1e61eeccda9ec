"""JUnit XML: one testcase per case and point, for CI systems that show test results.

fail and flaky are a <failure>; error, crash and timeout are <error>; xfail and
skip are <skipped> with the reason; xpass passes, with its note in <system-out>;
pass is a bare testcase. _ELEMENT says it for every verdict. What each oracle
said, and why a pass is unchecked, are lines of the testcase's <system-out>
("oracle upstream: match"): the report is valid against junit-10.xsd, which
has no <properties> in a testcase.

A failure, error or skipped element says "{verdict}: {reason}" in its message
and, in its body, the details that are not that reason, each line once, then
the rerun line; xpass's <system-out> starts with "xpass: {reason}" instead.

Times: each testcase's `time` is its point's seconds (the case's wall time
divided by its points, which run together: harness.process.pool); the testsuite has
`time` (the run's total, as has <testsuites>), `timestamp` (the run's start in
UTC, ISO 8601 to the second without an offset, as Jenkins' junit-10.xsd
wants) and `hostname`.
"""

from __future__ import annotations

import datetime
import re
import socket
import xml.etree.ElementTree as ET
from typing import Iterable

from harness.records import VERDICTS, Explored, Report, Result

__all__ = ["render"]

# Each verdict's element comes from the one table of verdicts (records.VERDICTS).
_ELEMENT = {v: style.junit for v, style in VERDICTS.items()}
_COUNTED = ("failure", "error", "skipped")


# XML 1.0 cannot hold most control characters; exception messages (ANSI colours) can.
# A lone surrogate (a file name that is not UTF-8) cannot be encoded at all.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


def _time(seconds: float) -> str:
    return f"{max(0.0, seconds):.3f}"


def _once(lines: Iterable[str], without: str = "") -> list[str]:
    """The non-blank lines of `lines` in order, each once, leaving out any equal to `without`."""
    seen = {without.strip()}
    kept = []
    for text in lines:
        for line in text.splitlines():
            if line.strip() and line.strip() not in seen:
                seen.add(line.strip())
                kept.append(line)
    return kept


def _body(result: Result, first: str = "") -> str:
    """`first` (when given), the details that are not the reason, each line once, and the rerun
    line."""
    lines = _once([*result.details, f"rerun: {result.rerun}"], without=result.reason)
    return _xml_text("\n".join([first, *lines] if first else lines))


def _explored(suite: ET.Element, e: Explored, counts: dict) -> None:
    """One testcase per explored case (name "explore"): a failure element when an example failed."""
    case = ET.SubElement(suite, "testcase", classname=_xml_text(e.case), name="explore",
                         time=_time(e.seconds))
    over = ", ".join(f"{n}={d}" for n, d in e.domains)
    if e.incomplete:
        counts["error"] += 1
        judged = f"{e.tried} of the {e.limit} examples asked for" if e.tried else "no example"
        ET.SubElement(case, "error", message=_xml_text(f"the search over {over} judged {judged}"),
                      type="error").text = _xml_text("\n".join(w for w in (e.stopped, e.note) if w))
        return
    if e.found is None:
        ET.SubElement(case, "system-out").text = _xml_text(f"{e.tried} examples passed over {over}")
        return
    tag = (_ELEMENT[e.found.verdict] if _ELEMENT[e.found.verdict] in ("failure", "error")
           else "failure")
    counts[tag] += 1
    element = ET.SubElement(case, tag,
                            message=_xml_text(f"{e.found.verdict.value} at --inputs {e.inputs}: "
                                                         f"{e.found.reason}"),
                            type=e.found.verdict.value)
    lines = [f"explored {over}: {e.tried} examples ({e.searched} searching, {e.shrinking} "
             "shrinking)",
             *([f"note: {e.note}"] if e.note else []),
             *([f"check: {e.check}"] if e.check else [])]
    element.text = _xml_text("\n".join(lines)) + "\n" + _body(e.found)


def _testcase(suite: ET.Element, result: Result, counts: dict) -> None:
    """One testcase for one case and point: its verdict's element, and a <system-out> saying what
    each oracle said (the upstream-gradient check among them) whatever the verdict, and on a pass
    no oracle could judge, why. junit-10.xsd, which CI systems read JUnit with, allows no
    <properties> in a testcase, so these are lines of text there ("oracle numeric: match")."""
    case = ET.SubElement(suite, "testcase", classname=_xml_text(result.case),
                         name=_xml_text(result.point), time=_time(result.seconds))
    said = [f"oracle {name}: {o.status}" for name, o in result.oracles.items()]
    if result.unchecked:
        said.append(f"unchecked: {result.unchecked}")
    tag = _ELEMENT[result.verdict]
    if tag in _COUNTED:
        counts[tag] += 1
        element = ET.SubElement(case, tag,
                                message=_xml_text(f"{result.verdict.value}: {result.reason}"),
                                type=result.verdict.value)
        element.text = _body(result)  # the message says the reason
    elif tag is not None or result.unchecked:  # xpass's note, or an unchecked pass's
        verdict = "pass, unchecked" if tag is None else result.verdict.value
        said.insert(0, _body(result, first=f"{verdict}: {result.reason}"))
    if said:
        ET.SubElement(case, "system-out").text = _xml_text("\n".join(said))


def render(report: Report) -> str:
    counts = {"failure": 0, "error": 0, "skipped": 0}
    suite = ET.Element("testsuite", name="harness")
    for result in report.results:
        _testcase(suite, result, counts)
    for e in report.explore:
        _explored(suite, e, counts)
    suite.set("tests", str(len(report.results) + len(report.explore)))
    suite.set("failures", str(counts["failure"]))
    suite.set("errors", str(counts["error"]))
    suite.set("skipped", str(counts["skipped"]))
    suite.set("time", _time(report.seconds))
    if report.started is not None:
        start = datetime.datetime.fromtimestamp(report.started, datetime.timezone.utc)
        suite.set("timestamp", start.replace(tzinfo=None).isoformat(timespec="seconds"))
    suite.set("hostname", socket.gethostname())
    props = ET.Element("properties")
    for key, value in report.environment.items():
        ET.SubElement(props, "property", name=key, value=value)
    suite.insert(0, props)
    root = ET.Element("testsuites", time=_time(report.seconds))
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
