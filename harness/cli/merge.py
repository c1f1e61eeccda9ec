"""python -m harness merge: reports from several releases into one version matrix."""

from __future__ import annotations

from harness.cli.options import UsageError
from harness.cli.settings import MergeSettings


def merge_command(s: MergeSettings) -> int:
    """python -m harness merge REPORT.json ...: the version matrix of the reports, written to
    each output."""
    from harness.matrix import merge, outputs  # noqa: PLC0415

    try:
        return outputs.main(list(s.paths), s.markdown_out, s.html_out, s.json_out)
    except merge.MergeError as e:
        raise UsageError(str(e)) from None

