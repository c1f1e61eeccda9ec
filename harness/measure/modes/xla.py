"""Mode `xla`: the function mode compiled with XLA (`tf.function(jit_compile=True)`).

XLA compiles the whole traced function, gradients included, so an op without
an XLA kernel, or a shape XLA must know statically, shows up here first.
"""

from __future__ import annotations

from harness.case import Case
from harness.measure.modes.function import run_compiled
from harness.records import ModeOutcome, RunOptions

NAME = "xla"


def run(case: Case, options: RunOptions) -> list[ModeOutcome]:
    return run_compiled(NAME, case, options, jit_compile=True)
