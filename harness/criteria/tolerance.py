"""The tolerance tables, how a case's override merges over them, and the one rule that widens the
numeric oracle's.

Two values a and b are close when |a - b| <= atol + rtol * |b| elementwise, where b is the
yardstick mode's value (numpy.isclose's rule). There are three tables: DEFAULT_TOLERANCES for
modes that compute the same thing (and the reference and analytic oracles), NARROW_TOLERANCES for
values computed in a narrower dtype than the truth they are compared with, and NUMERIC_TOLERANCES
for the numeric oracle, whose finite differences carry truncation and rounding error. The numeric
oracle's absolute part is widened here by the gradient's own rounding in its dtype
(numeric_atol); the differences' own error at their step (their rounding, the forward's noise,
two steps' disagreement) is estimated from the differences themselves by
harness.criteria.differences, which allows for it beside that tolerance. Nothing else in the
package scales, loosens or invents a tolerance.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Union

from harness.criteria.differences import epsilon, tiny

__all__ = ["Tol", "DEFAULT_TOLERANCES", "NUMERIC_TOLERANCES", "NUMERIC_STEPS", "NARROW_TOLERANCES",
           "GRADIENT_ULPS", "ToleranceOverride", "tolerance_for", "numeric_tolerance_for",
           "narrow_tolerance_for", "gradient_rounding", "numeric_atol"]


@dataclasses.dataclass(frozen=True)
class Tol:
    """Relative and absolute tolerance for one dtype."""

    rtol: float
    atol: float

    def __post_init__(self):
        if self.rtol < 0 or self.atol < 0:
            raise ValueError(f"tolerances must be >= 0, got rtol={self.rtol}, atol={self.atol}")


# Starting points from torch.testing's defaults and TensorFlow's own tests
# (tf.test.TestCase.assertAllClose uses 1e-3 for half precision).
DEFAULT_TOLERANCES: Mapping[str, Tol] = {
    "float16": Tol(rtol=1e-3, atol=1e-5),
    "bfloat16": Tol(rtol=1.6e-2, atol=1e-5),
    "float32": Tol(rtol=1.3e-6, atol=1e-5),
    "float64": Tol(rtol=1e-7, atol=1e-7),
    # A complex dtype is judged like its real part.
    "complex64": Tol(rtol=1.3e-6, atol=1e-5),
    "complex128": Tol(rtol=1e-7, atol=1e-7),
}
# Integers, booleans and anything not in the table must match exactly.
_EXACT = Tol(rtol=0.0, atol=0.0)

# Central differences against analytic derivatives: the relative part only. The absolute part
# is not a constant, which would hide every gradient smaller than it (a wrong sign on a gradient
# of 6e-4 passed a fixed float32 atol of 2e-3): numeric_atol (below) derives it from the
# gradient's own rounding, harness.criteria.differences allows for the differences' own rounding
# at the step used, and calls a direction whose steps disagree (a noisy forward, a kink, a jump) by
# its name instead of judging the gradient by it. The relative parts
# are the harness issue's starting point, as in JAX's check_grads (1e-2 in float32 for its
# directional checks). A case's oracle_tolerance may set an atol of its own.
NUMERIC_TOLERANCES: Mapping[str, Tol] = {
    "float16": Tol(rtol=1e-2, atol=0.0),
    "bfloat16": Tol(rtol=1e-1, atol=0.0),
    "float32": Tol(rtol=2e-3, atol=0.0),
    "float64": Tol(rtol=1e-5, atol=0.0),
}
# The starting finite-difference step, relative to max(1, |x|), for the dtype the differences
# are computed in: about eps ** (1/3), which balances the two errors; harness.criteria.differences
# shrinks it where the function is not smooth within it (a domain edge, a singularity).
NUMERIC_STEPS: Mapping[str, float] = {
    "float16": 2.0 ** -4,
    "bfloat16": 2.0 ** -3,
    "float32": 2.0 ** -8,
    "float64": 2.0 ** -17,
}

# Values computed in a narrower dtype than the truth they are compared with: a training step under
# the mixed_float16 policy computes in float16 from float32 weights and returns float32 gradients.
# Every op of its forward and backward rounds to float16 (eps 2**-10), so the comparison allows the
# numeric oracle's float16 relative part, and an absolute part of float16's eps, for elements
# that cancel to near zero (tanh saturating to 1 in float16 makes 1 - y**2 exactly 0).
NARROW_TOLERANCES: Mapping[str, Tol] = {
    "float16": Tol(rtol=1e-2, atol=2.0 ** -10),
}

# A case overrides either every dtype at once (a Tol) or some dtypes by name.
ToleranceOverride = Optional[Union[Tol, Mapping[str, Tol]]]


def tolerance_for(dtype: str, override: ToleranceOverride = None) -> Tol:
    """Returns the tolerance for `dtype`, with a case's override merged over the table."""
    if isinstance(override, Tol):
        return override
    if override and dtype in override:
        return override[dtype]
    return DEFAULT_TOLERANCES.get(dtype, _EXACT)


def numeric_tolerance_for(dtype: str, override: ToleranceOverride = None) -> Tol:
    """The numeric oracle's tolerance for values of `dtype` (the analytic side's dtype)."""
    if isinstance(override, Tol):
        return override
    if override and dtype in override:
        return override[dtype]
    return NUMERIC_TOLERANCES.get(dtype, NUMERIC_TOLERANCES["float64"])


def narrow_tolerance_for(dtype: str, override: ToleranceOverride = None) -> Tol:
    """The tolerance for values computed in `dtype` (NARROW_TOLERANCES) and compared with a wider
    truth; a case's override for `dtype` wins, as elsewhere."""
    if isinstance(override, Tol):
        return override
    if override and dtype in override:
        return override[dtype]
    return NARROW_TOLERANCES.get(dtype, tolerance_for(dtype))


# The rounding a gradient carries in its own dtype, in ulps of the terms it sums.
GRADIENT_ULPS = 16.0


def gradient_rounding(dtype: str, size: float) -> float:
    """How far rounding in `dtype` may move a gradient computed from terms of `size`: GRADIENT_ULPS
    of the dtype's epsilon, relative to that size."""
    return GRADIENT_ULPS * epsilon(dtype) * size


def numeric_atol(tol: Tol, dtype: str, terms: float, own: Optional[float] = None) -> float:
    """The absolute tolerance the numeric oracle judges a gradient of `dtype` along one direction
    with: `tol`'s atol (the table's 0, or a case's own) widened by the gradient's own rounding.

    NUMERIC_TOLERANCES has no absolute part, and the differences estimate their own error, not
    the gradient's: a gradient that cancels to about 0 (a Hessian times ones) carries the rounding
    of the terms it sums, which its own size does not show. So the atol is widened by the larger
    of
      - a floor: the dtype's rounding of `terms`, the size of the terms the gradient sums along
        the direction (gradient_rounding), and never less than the dtype's smallest normal,
        below which a gradient cannot be told from 0;
      - `own`, where it was measured (None: not measured): how far the gradient's computation in
        its dtype strays from the same code's in float64 at the point, the rounding of what it
        is computed from (1 - s with s near 1, say), which the oracle measures only where the
        first step does not match without it.
    """
    floor = max(gradient_rounding(dtype, terms), tiny(dtype))
    return tol.atol + (floor if own is None else max(floor, own))
