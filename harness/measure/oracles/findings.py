"""What the numeric oracle found, as plain data: a finding per direction, a check per chain and
order. harness.measure.oracles.numeric makes them; harness.measure.oracles.words puts them into
sentences.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from harness.criteria import differences
from harness.measure.oracles.directions import Direction
from harness.criteria.tolerance import Tol

__all__ = ["FAR", "GROWTH", "INDEPENDENT", "OVERFLOW", "PARTIAL", "SHALLOW", "STILL", "SURROGATE",
           "WRONG_WAY", "Heading", "OrderFindings", "Finding", "flat_nonzero"]

# A finding the differences would call a difference, where the readout had to leave out order
# k-1 values that are not finite at the point and the function is not known to be elementwise:
# the gradient may hold their derivative.
PARTIAL = "partial"
# A weighted gradient's infinity where the element's plain gradient is an infinity that matched (e^x
# beyond float32's range, times an upstream weight below 1): it says nothing of how grad_fn handles
# dy.
OVERFLOW = "overflow"


# The kinds harness.measure.oracles.surrogate gives a surrogate candidate: a match pointing the
# way the forward moves; a difference pointing the other way; unresolved, the loss not moving up
# to its reach; a difference, the forward not depending on the elements at any step; a
# difference, the forward moving far more slowly than the gradient says.
SURROGATE, WRONG_WAY, STILL, INDEPENDENT, SHALLOW = ("surrogate", "wrong way", "still",
                                                     "independent", "shallow")
# The step along a surrogate grows by GROWTH from the numeric step until the loss moves; the FAR
# steps (in units of the point's size) are where a loss that did not move is tried once more.
GROWTH = 4.0
FAR = (4.0, 1024.0)


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


def flat_nonzero(f: Finding) -> bool:
    """Whether the forward stays exactly at its value at -h, 0 and +h along the finding's direction
    (its numeric derivative 0) where the gradient is finite and not 0: what only a surrogate (or
    a gradient that is no derivative at all) gives, whatever the finding was judged since."""
    j = f.judged
    return (j.numeric == 0.0 and f.analytic is not None and f.analytic != 0.0
            and bool(np.isfinite(f.analytic)) and j.base is not None
            and j.plus == j.base == j.minus)
