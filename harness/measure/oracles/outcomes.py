"""The oracles' outcomes, shared by the numeric oracle and the others."""

from __future__ import annotations

from typing import Sequence

from harness.oracle_names import UPSTREAM
from harness.records import ModeOutcome, OracleOutcome, OracleStatus

__all__ = ["oracle_outcome", "upstream_failed"]


def upstream_failed(agreed: ModeOutcome, note: str) -> OracleOutcome:
    """The weighted chain raised where the plain one computed its values."""
    e = agreed.upstream_error
    if e.stage.startswith("forward"):
        # The weighted chain runs the function again: the second run raised, not a grad_fn.
        line = (f"the function raises {e.type} when {agreed.mode} runs it a second time (for the "
                f"weighted chain): {e.first_line}; its first run computed its values, so it is not "
                "a pure function of its inputs")
    else:
        line = (f"grad_fn fails when its upstream gradient is not all ones: {agreed.mode} raises "
                f"{e.type} at {e.stage}: {e.first_line}; at the plain contraction (every upstream "
                "gradient 1) it computes its values")
    return OracleOutcome(name=UPSTREAM, status=OracleStatus.DIFFER, orders=(),
                         differ=(e.order or 0,), details=(line,), note=note)


def oracle_outcome(name: str, checked: Sequence[int], lines: Sequence[tuple[int, str]],
                   note: str) -> OracleOutcome:
    differ = tuple(sorted({order for order, _ in lines}))
    status = OracleStatus.DIFFER if differ else OracleStatus.MATCH
    return OracleOutcome(name=name, status=status, orders=tuple(checked), differ=differ,
                         details=tuple(line for _, line in lines), note=note)
