"""A domain: where one argument's values may be drawn from when a case is explored
(harness.explore.search).

Part of the public case API (harness.Domain); plain data, no TensorFlow.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional, Sequence

__all__ = ["Domain"]


@dataclasses.dataclass(frozen=True)
class Domain:
    """Where one argument's values may be drawn from when a case is explored
    (harness.explore.search).

    Attributes:
      low, high: the bounds, finite numbers; every element lies between them.
      open_low, open_high: leave that bound itself out (an open interval end).
      shape: the argument's shape, or a sequence of allowed shapes; None: the
        shape the argument has at the case's first point.
      symmetric: the argument is a symmetric matrix in its last two axes (as
        Case.symmetric): the average of a drawn matrix and its transpose, so
        its elements stay within the bounds.
      positive: with symmetric, a positive definite matrix: B Bᵀ + n·I for a
        drawn B of elements within the bounds (its own elements may lie
        outside them); without it, elements above zero (the lower bound moves
        up to an open 0).
      exclude: values no element may come near (known kinks: the numeric
        oracle's differences straddle them).
      near: how near counts for `exclude`: elements closer than this to an
        excluded value are not drawn.
    """

    low: float
    high: float
    open_low: bool = False
    open_high: bool = False
    shape: Any = None
    symmetric: bool = False
    positive: bool = False
    exclude: Sequence[float] = ()
    near: float = 1e-3

    def __post_init__(self):
        shape = self.shape
        if shape is not None:
            shapes = (shape,) if all(isinstance(d, int) for d in shape) else shape
            shape = tuple(tuple(s) for s in shapes)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "exclude", tuple(self.exclude))

    @property
    def bounds(self) -> tuple[float, float]:
        """(low, high) after `positive` without `symmetric` raised the lower bound to 0."""
        if self.positive and not self.symmetric:
            return max(self.low, 0.0), self.high
        return self.low, self.high

    @property
    def open_bounds(self) -> tuple[bool, bool]:
        low, _ = self.bounds
        raised = self.positive and not self.symmetric and self.low <= 0.0
        return self.open_low or (raised and low == 0.0), self.open_high

    def problem(self) -> Optional[str]:
        """Why no value can be drawn from this domain, or None when one can."""
        for name in ("low", "high", "near"):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value)):
                return f"{name}={value!r} is not a finite number"
        low, high = self.bounds
        open_low, open_high = self.open_bounds
        if low > high or low == high and (open_low or open_high):
            side = "above zero (positive) and " if self.positive and not self.symmetric else ""
            return (f"no number is {side}between {self.low:g} and {self.high:g} "
                    f"({'open' if open_low else 'closed'} below, "
                    f"{'open' if open_high else 'closed'} above); give low < high")
        if self.near < 0:
            return f"near={self.near!r} is negative"
        for value in self.exclude:
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value)):
                return f"exclude holds {value!r}, not a finite number"
        if any(x - self.near < low and high < x + self.near for x in self.exclude):
            return (
                f"every value between {low:g} and {high:g} is within {self.near:g} of an excluded"
                " value"
            )
        if self.shape is not None:
            if not self.shape:
                return "shape gives no shape"
            for s in self.shape:
                if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in s):
                    return f"shape {s!r} is not a tuple of sizes"
                if self.symmetric and (len(s) < 2 or s[-1] != s[-2]):
                    return (
                        f"shape {list(s)} is not square in its last two axes, as a symmetric"
                        " argument is"
                    )
        return None

    def describe(self) -> str:
        """The domain as --domain writes it (without the argument's name)."""
        open_low, open_high = self.open_low, self.open_high
        text = f"{'(' if open_low else '['}{self.low:g}, {self.high:g}{')' if open_high else ']'}"
        if self.shape is not None:
            text += ";shape=" + "|".join(repr(tuple(s)) for s in self.shape)
        if self.symmetric:
            text += ";symmetric"
        if self.positive:
            text += ";positive"
        if self.exclude:
            text += ";exclude=" + ",".join(f"{x:g}" for x in self.exclude)
            if self.near != 1e-3:
                text += f";near={self.near:g}"
        return text
