"""Writes a version matrix: the reports read and merged (harness.matrix.merge), then rendered
(harness.matrix.render) into each output asked for. The merge itself renders nothing, so neither of
those two modules imports the other's functions.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

from harness import report as _report
from harness.matrix import render
from harness.matrix.merge import HOW_TO_MAKE, MergeError, load_report, merge

__all__ = ["main"]


def main(paths: Sequence[str], markdown_out: Optional[str] = None, html_out: Optional[str] = None,
         json_out: Optional[str] = None, failed: Optional[Mapping[str, str]] = None) -> int:
    """Merges report files and writes the matrix: `python -m harness merge`.

    Every output path is checked before any report is read, and each file is
    written atomically.

    Args:
      paths: the JSON reports (schema harness.report/1 or /2) to merge.
      markdown_out, html_out, json_out: where to write each rendering; at
        least one is needed.
      failed: TensorFlow version to why it could not be installed.

    Returns:
      0, or 1 when an output could not be written at the end (said on stderr).
      Verdicts do not decide it: each run's own exit status judged them, and
      a matrix exists to show them.

    Raises:
      MergeError: no reports or no output, an output that cannot be written,
        or a report that cannot be merged.
    """
    outputs = [(path, fn) for path, fn in ((markdown_out, render.markdown), (html_out, render.html),
                                           (json_out, render.json_text)) if path]
    if not paths and not failed:
        raise MergeError(f"no reports to merge; {HOW_TO_MAKE}")
    if not outputs:
        raise MergeError("nothing to write; give --markdown_out, --html_out or --json_out")
    for path, _ in outputs:
        try:
            _report.check_writable(path)
        except ValueError as e:
            raise MergeError(str(e)) from None
    matrix = merge({path: load_report(path) for path in paths}, failed)
    return (0 if _report.write_each([(path, lambda fn=fn: fn(matrix)) for path, fn in outputs])
            else 1)
