"""The terminal display: result lines in selection order, a live line only on terminals."""

import io

from harness.progress import Progress


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
