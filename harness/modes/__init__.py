"""Mode names, and the runners behind them (imported only when a case runs).

A mode runner is a module with `run(case, options) -> list[ModeOutcome]`,
one outcome per point of the case, in order. Importing this package does not import
TensorFlow; `runner(name)` does.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["CORE_MODES", "KNOWN_MODES", "REFERENCE_MODE", "runner", "parse_modes"]

# What `--mode all` runs, in this order.
CORE_MODES: tuple[str, ...] = ("eager", "function", "graph")
# Every mode name a case may mention in an expectation.
KNOWN_MODES: tuple[str, ...] = CORE_MODES
# Every other mode is compared with this one when it runs; else with the first selected.
REFERENCE_MODE = "eager"

_MODULES = {"eager": "harness.modes.eager", "function": "harness.modes.function",
            "graph": "harness.modes.graph"}


def runner(name: str) -> ModuleType:
    """Imports and returns the runner module of mode `name`."""
    return importlib.import_module(_MODULES[name])


def parse_modes(text: str) -> tuple[str, ...]:
    """Parses "all" or a comma list of mode names, keeping the canonical order.

    Raises:
      ValueError: for an empty list or an unknown name, naming the known ones.
    """
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError(f"no mode given: use 'all' or a comma list of {', '.join(KNOWN_MODES)}")
    if names == ["all"]:
        return CORE_MODES
    unknown = [n for n in names if n not in KNOWN_MODES]
    if unknown:
        raise ValueError(
            f"unknown mode {unknown[0]!r}: use 'all' or a comma list of {', '.join(KNOWN_MODES)}"
        )
    return tuple(m for m in KNOWN_MODES if m in names)


def reference_of(modes: tuple[str, ...]) -> str:
    """The mode every other selected mode is compared with."""
    return REFERENCE_MODE if REFERENCE_MODE in modes else modes[0]
