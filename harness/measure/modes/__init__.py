"""The mode runners, imported only when a case runs; their rows are in harness.mode_names.

A mode runner is a module with `run(case, options) -> list[ModeOutcome]`,
one outcome per point of the case, in order. A runner whose mode does not
apply to a case returns outcomes with Status.SKIP and the reason in `note`.
Importing this package does not import TensorFlow; `runner(name)` does.

To add a mode, write two things:

1. its row in harness.mode_names.ROWS: its name, its group (which word of `--mode` selects it),
   its mark on the version matrix page, whether it is a step on the ladder (and where: the rows'
   order), how the repro scripts write it out (if they do), and whether it runs AutoGraph;
2. its runner: a module here named after the mode, with `run(case, options)` (or, for a module
   serving several modes, `runner_for(name)`, named by the row's `runner`).

Nothing else names a mode: `--mode` and its groups, the ladder, the matrix marks, the repro
scripts' templates, the case API's validation and the fix hints all read the rows.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from harness import mode_names

# The names, here too, so that `from harness.measure.modes import KNOWN_MODES` keeps working.
__all__ = ["BY_NAME_ONLY", "CORE_MODES", "EXTRA_MODES", "FULL_MODES", "KERAS3_MODES",
           "KNOWN_MODES", "LADDER", "REFERENCE_MODE", "STEP_MODES", "TRAINING_STEPS", "runner",
           "parse_modes", "reference_of"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(mode_names, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def runner(name: str) -> ModuleType:
    """Imports and returns the runner module of mode `name`.

    A module serving several modes has `runner_for(name)` returning the runner.
    """
    module = importlib.import_module(f"{__name__}.{mode_names.ROWS[name].runner or name}")
    return module.runner_for(name) if hasattr(module, "runner_for") else module
