"""The mode runners, imported only when a case runs; their names are in harness.mode_names.

A mode runner is a module with `run(case, options) -> list[ModeOutcome]`,
one outcome per point of the case, in order. A runner whose mode does not
apply to a case returns outcomes with Status.SKIP and the reason in `note`.
Importing this package does not import TensorFlow; `runner(name)` does.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# The names, here too, so that `from harness.measure.modes import KNOWN_MODES` keeps working.
from harness.mode_names import (
    BY_NAME_ONLY,
    CORE_MODES,
    EXTRA_MODES,
    FULL_MODES,
    KERAS3_MODES,
    KNOWN_MODES,
    LADDER,
    REFERENCE_MODE,
    STEP_MODES,
    TRAINING_STEPS,
    parse_modes,
    reference_of,
)

__all__ = ["BY_NAME_ONLY", "CORE_MODES", "EXTRA_MODES", "FULL_MODES", "KERAS3_MODES",
           "KNOWN_MODES", "LADDER", "REFERENCE_MODE", "STEP_MODES", "TRAINING_STEPS", "runner",
           "parse_modes", "reference_of"]

_MODULES = {name: f"harness.measure.modes.{name}" for name in KNOWN_MODES}
_MODULES["saved_model_nocg"] = "harness.measure.modes.saved_model"
_MODULES.update({name: "harness.measure.modes.keras_step" for name in STEP_MODES})
_MODULES.update({name: "harness.measure.modes.keras3_step" for name in KERAS3_MODES})


def runner(name: str) -> ModuleType:
    """Imports and returns the runner module of mode `name`.

    A module serving several modes has `runner_for(name)` returning the runner.
    """
    module = importlib.import_module(_MODULES[name])
    return module.runner_for(name) if hasattr(module, "runner_for") else module
