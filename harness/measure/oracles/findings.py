"""What the numeric oracle found, as plain data: a finding per direction, a check per chain and
order. harness.measure.oracles.numeric makes them; harness.measure.oracles.words puts them into
sentences.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from harness.criteria import differences
from harness.measure.oracles.directions import Direction
from harness.criteria.tolerance import Tol

__all__ = ["OVERFLOW", "PARTIAL", "Heading", "OrderFindings", "Finding"]

# A finding the differences would call a difference, where the readout had to leave out order
# k-1 values that are not finite at the point and the function is not known to be elementwise:
# the gradient may hold their derivative.
PARTIAL = "partial"
# A weighted gradient's infinity where the element's plain gradient is an infinity that matched (e^x
# beyond float32's range, times an upstream weight below 1): it says nothing of how grad_fn handles
# dy.
OVERFLOW = "overflow"


@dataclasses.dataclass(frozen=True)
class Finding:
    """What the differences found along one direction (an element, or a random direction)."""

    direction: Direction
    analytic: Optional[float]  # the gradient along it; None: every source it moves is unconnected
    judged: differences.Judged
    tol: Tol
    unconnected: tuple[int, ...] = ()  # the slots of None gradients counted as 0
    raised: str = ""  # what a shifted point raised, if one did
    left_out: int = 0  # order k-1 values left out of the readout: not finite at the point


@dataclasses.dataclass(frozen=True)
class Heading:
    """Which way a surrogate gradient points (harness.measure.oracles.surrogate): the loss's secant
    slope along it over the shortest step at which the loss moves."""

    chain: int  # 0: the plain contraction; 1: the weighted chain
    step: Optional[float]  # the step the loss moved at (the largest element's move); None: never
    first: float  # the first step tried
    longest: float  # the longest step tried
    slope: float  # the secant slope per unit of step (0 where it never moved)
    elements: int  # how many elements the gradient moves
    raised: str = ""  # what stopped it, where something did
    # The loss did not move at the far steps either (surrogate.FAR): the forward does not depend on
    # the elements moved.
    independent: bool = False
    # The gradient's value along the step per element moved (its directional derivative along the
    # step's direction over the elements moved): what the slope is compared with.
    per_element: float = 0.0


@dataclasses.dataclass(frozen=True)
class OrderFindings:
    """One chain at one order: a finding per direction, and how the directions were chosen."""

    order: int
    findings: tuple[Finding, ...]
    by_element: bool  # one direction per element (else seeded random directions)
    swept: tuple[int, ...] = ()  # slots read element by element from one shift (elementwise)
    heading: Optional[Heading] = None  # where some findings are a surrogate's: which way it points

    @property
    def failed(self) -> list[Finding]:
        return [f for f in self.findings if f.judged.outcome == "differ"]

    @property
    def compared(self) -> list[Finding]:
        return [f for f in self.findings if f.judged.outcome != "unresolved"]

    @property
    def unresolved(self) -> list[Finding]:
        return [f for f in self.findings if f.judged.outcome == "unresolved"]

    @property
    def kinks(self) -> list[Finding]:
        return [f for f in self.findings
                if f.judged.outcome == "match" and f.judged.kind == differences.KINK]

    @property
    def worst(self) -> Optional[Finding]:
        return max(self.failed, key=lambda f: f.judged.excess, default=None)
