"""The tolerance tables, and how a case's override merges over them.

Two values a and b are close when |a - b| <= atol + rtol * |b| elementwise,
where b is the yardstick mode's value (numpy.isclose's rule). There are two
tables: DEFAULT_TOLERANCES for modes that compute the same thing (and the
reference and analytic oracles), and NUMERIC_TOLERANCES for the numeric
oracle, whose finite differences carry truncation and rounding error. Nothing
else in the package scales, loosens or invents a tolerance.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Union

__all__ = ["Tol", "DEFAULT_TOLERANCES", "NUMERIC_TOLERANCES", "NUMERIC_STEPS", "NARROW_TOLERANCES",
           "ToleranceOverride", "tolerance_for", "numeric_tolerance_for", "narrow_tolerance_for"]


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
# of 6e-4 passed a fixed float32 atol of 2e-3): harness.criteria.differences derives it from the
# differences' own rounding at the step used, and calls a direction whose steps disagree (a noisy
# forward, a kink, a jump) by its name instead of judging the gradient by it. The relative parts
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
