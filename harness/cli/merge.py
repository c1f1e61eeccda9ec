"""python -m harness merge: reports from several releases into one version matrix."""

from __future__ import annotations

from typing import Sequence

from harness.cli.options import HTML_OUT, JSON_OUT, MARKDOWN_OUT, UsageError
from harness.cli.settings import distinct_outputs


def merge_command(paths: Sequence[str]) -> int:
    from harness.matrix import merge, outputs  # noqa: PLC0415

    if not paths:
        raise UsageError("give the JSON reports to merge: python -m harness merge A.json B.json ...")
    if not (MARKDOWN_OUT.value or HTML_OUT.value or JSON_OUT.value):
        raise UsageError("give at least one of --markdown_out, --html_out, --json_out")
    distinct_outputs([(f"--{f.name}", f.value) for f in (MARKDOWN_OUT, HTML_OUT, JSON_OUT)], inputs=paths)
    try:
        return outputs.main(list(paths), MARKDOWN_OUT.value, HTML_OUT.value, JSON_OUT.value)
    except merge.MergeError as e:
        raise UsageError(str(e)) from None

