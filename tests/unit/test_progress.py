"""The terminal display: result lines in selection order, a live line only on terminals."""

import io

from harness.cli.progress import Progress


def test_lines_come_out_in_selection_order_whatever_order_cases_finish_in():
    out = io.StringIO()
    progress = Progress(total=3, stream=out, live=False)
    progress.finished(2, "third", 1)
    progress.finished(0, "first", 1)
    assert out.getvalue() == "first\n"
    progress.finished(1, "second", 1)
    progress.close()
    assert out.getvalue() == "first\nsecond\nthird\n"


def test_live_status_line_is_redrawn_in_place_and_cleared_at_the_end():
    out = io.StringIO()
    progress = Progress(total=2, stream=out, live=True)
    progress.started("seeds.log1pexp2")
    assert out.getvalue().endswith("[0/2] 0 s  seeds.log1pexp2")
    progress.finished(0, "PASS seeds.log1pexp2[x=1.0]", 2)
    progress.close()
    text = out.getvalue()
    # The status line is cleared (carriage return, erase line) before each result line is printed.
    assert "\r\x1b[KPASS seeds.log1pexp2[x=1.0]\n" in text
    assert "[2/2]" in text and text.endswith("\r\x1b[K")


def test_plain_output_has_no_control_characters():
    out = io.StringIO()
    progress = Progress(total=1, stream=out, live=False)
    progress.started("x.y")
    progress.finished(0, "PASS x.y[x=1.0]", 1)
    progress.close()
    assert out.getvalue() == "PASS x.y[x=1.0]\n"


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_off_a_terminal_a_long_run_says_how_far_it_is_every_30_s_and_a_short_one_says_nothing():
    out, log, clock = io.StringIO(), io.StringIO(), _Clock()
    progress = Progress(total=4, stream=out, live=False, log=log, clock=clock)
    clock.now += 40  # the workers start: no case has started yet
    progress.started("a.slow")
    clock.now += 29
    progress.started("a.next")
    progress.finished(1, "PASS a.next[x=1.0]", 1)  # held for a.slow, which comes first
    assert log.getvalue() == "" and out.getvalue() == ""
    clock.now += 2  # 31 s after the first case started
    progress.started("a.third")
    assert log.getvalue() == "progress: 1/4 points in 71 s; last started: a.third\n"
    clock.now += 29  # 30 s since that line is the next one's time
    progress.finished(2, "PASS a.third[x=1.0]", 1)
    assert log.getvalue().count("\n") == 1
    clock.now += 1
    progress.finished(0, "FAIL a.slow[x=1.0]", 1)
    assert log.getvalue().splitlines()[-1] == "progress: 3/4 points in 101 s; last started: a.third"
    clock.now += 100
    progress.finished(3, "PASS a.last[x=1.0]", 1)  # every point has finished: the summary follows
    progress.close()
    assert log.getvalue().count("\n") == 2
    # The result lines are the same as without progress lines, in selection order.
    assert (
        out.getvalue()
        == "FAIL a.slow[x=1.0]\nPASS a.next[x=1.0]\nPASS a.third[x=1.0]\nPASS a.last[x=1.0]\n"
    )


def test_the_progress_line_counts_the_failing_points_when_it_is_told_them():
    log, clock = io.StringIO(), _Clock()
    progress = Progress(total=5, stream=io.StringIO(), live=False, log=log, clock=clock)
    progress.started("a.b")
    progress.finished(0, "FAIL a.b[x=1.0]\nFAIL a.b[x=2.0]\nPASS a.b[x=3.0]", 3, failing=2)
    clock.now += 45
    progress.finished(1, "PASS a.c[x=1.0]", 1, failing=0)
    assert log.getvalue() == "progress: 4/5 points, 2 failing in 45 s; last started: a.b\n"


def test_a_run_of_one_case_gets_no_progress_line_however_long_it_takes():
    # Its one result comes when it finishes, and its stderr stays what the run says.
    log, clock = io.StringIO(), _Clock()
    progress = Progress(total=2, stream=io.StringIO(), live=False, log=log, clock=clock)
    clock.now += 60
    progress.started("a.only")
    clock.now += 600
    progress.finished(0, "PASS a.only[x=1.0]\nPASS a.only[x=2.0]", 2)
    assert log.getvalue() == ""


def test_a_terminal_has_its_live_line_and_no_progress_lines():
    out, log, clock = io.StringIO(), io.StringIO(), _Clock()
    progress = Progress(total=2, stream=out, live=True, log=log, clock=clock)
    progress.started("a.slow")
    clock.now += 300
    progress.finished(0, "PASS a.slow[x=1.0]", 1)
    assert log.getvalue() == "" and out.getvalue().endswith("[1/2] 300 s  a.slow")
