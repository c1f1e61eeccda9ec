"""Mode `no_autograph`: the function mode with `tf.function(autograph=False)`.

It sits between eager and function on the ladder: the same trace without
AutoGraph's rewriting of Python control flow, so a difference between this
mode and `function` is AutoGraph's, and one between eager and this mode is
tracing's.
"""

from __future__ import annotations

from harness.case import Case
from harness.measure.modes.function import run_compiled
from harness.records import ModeOutcome, RunOptions

NAME = "no_autograph"


def run(case: Case, options: RunOptions) -> list[ModeOutcome]:
    return run_compiled(NAME, case, options, autograph=False)
