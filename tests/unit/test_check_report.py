"""pytest's report of a replayed point (harness.record.check): its node id and every line of it
escaped as everything the harness prints is, and its -v line the node id itself. No TensorFlow."""

from harness.record import check


def result(point, **extra):
    return dict({"case": "recorded.m.f", "point": point, "verdict": "fail",
                 "reason": "function vs eager: function raises ValueError\x1b[2K PASS",
                 "details": ["recorded: an eager call made by t.py::test_a"],
                 "rerun": f"python -m harness replay rec '--cases=recorded.m.f[{point}]'"}, **extra)


def test_a_label_holding_a_newline_or_an_escape_sequence_is_escaped_in_every_part_of_the_report():
    # Before: the label reached pytest's node id, failure header and rerun line as it was: a
    # newline split the summary line, ESC could repaint a terminal line into a fake PASS.
    report = check._report(result("x=a\nb\x1b[2K"), "rec")
    assert report.nodeid == "harness::recorded.m.f[x=a\\nb\\x1b[2K]"
    assert "\n" not in report.nodeid and "\x1b" not in report.nodeid
    text = str(report.longrepr)
    assert "\x1b" not in text and "\\x1b[2K PASS" in text
    assert "rerun: python -m harness replay rec '--cases=recorded.m.f[x=a\\nb\\x1b[2K]'" in text
    assert "\x1b" not in report.longrepr.reprcrash.message


def test_the_report_s_location_makes_pytest_s_v_line_the_node_id():
    report = check._report(result("x=1.0", verdict="pass"), "rec")
    # pytest's -v line is its location's path with the domain's dots made '::' when a domain is
    # given: with none, the line is the node id as the summary and JUnit show it.
    assert report.location == ("harness", None, "")


def test_a_long_first_line_is_cut_at_a_word_so_that_the_junit_message_keeps_who_called():
    # pytest's JUnit writer keeps 500 characters of a failure's message: the test that made the
    # call, at the end, must not be what it cuts.
    long = "grad_fn is not linear in its upstream gradient: " + "word " * 150 + "end"
    report = check._report(result("x=1.0", reason=long), "rec")
    message = report.longrepr.reprcrash.message
    assert message.startswith("fail: grad_fn is not linear") and len(message) <= 500
    assert message.endswith("word… (called by t.py::test_a)"), message[-60:]
    # The full explanation is still the report's text.
    assert long in str(report.longrepr)
    short = check._report(result("x=1.0", reason="short"), "rec").longrepr.reprcrash.message
    assert short == "fail: short (called by t.py::test_a)"
    # A caller longer than the message itself (a long parametrised id) is cut too, keeping both.
    caller = "t.py::test_a[" + "p" * 600 + "]"
    made = result("x=1.0", reason=long, details=[f"recorded: an eager call made by {caller}"])
    message = check._report(made, "rec").longrepr.reprcrash.message
    assert len(message) <= 500 and message.startswith("fail: grad_fn is not linear")
    assert message.endswith("p…)") and "(called by t.py::test_a[ppp" in message


class _Terminal:
    def __init__(self):
        self.lines = []

    def write_line(self, line):
        self.lines.append(line)


def _summary(tf_version):
    checking = check.Checking.__new__(check.Checking)
    vars(checking).update(file_line="harness check: no reviewed file",
                          line="harness check: 1 point", problem="", notes=[], stale=[],
                          changes=[], wrote=False, reviewed=None,
                          results=[result("x=1.0")], tf_version=tf_version)
    terminal = _Terminal()
    checking.pytest_terminal_summary(terminal)
    return terminal.lines


def test_the_check_says_once_that_the_replays_tensorflow_is_untested_and_nothing_for_a_pinned_one():
    lines = _summary("2.23.0-dev20261026")
    untested = [line for line in lines if "untested" in line]
    assert untested == ["harness check: TensorFlow 2.23.0-dev20261026 is a nightly build, "
                        "untested: the pin table (harness/matrix/pins.py) holds the releases the "
                        "harness is tested with, 2.12.1 to 2.21.0; this run is judged as under any "
                        "of them"]
    assert not any("untested" in line for line in _summary("2.21.0"))
