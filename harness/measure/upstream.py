"""The upstream weights: a seeded cotangent for every order, the same in every mode. Pure NumPy.

The plain contraction differentiates the sum of the order k-1 outputs, so
every upstream gradient a grad_fn receives is all ones, and a grad_fn that
ignores its `dy`, reduces it, or uses it in the wrong place gives the right
numbers there. So each mode also differentiates, at every order k, the
weighted sum sum_i w_i * y_i of the order k-1 outputs of this weighted chain
(order 0: the function's outputs), passing the weights as the upstream
gradient (GradientTape.gradient's output_gradients, tf.gradients' grad_ys): a
grad_fn at order 1 receives dy = w, a second-order one receives ddy = w' with
dy = w, as in any real loss. This is JAX's check_vjp with a random cotangent;
PyTorch's gradcheck takes unit cotangents one by one.

The weights are a function of the case id, the point label, the order, the
target's position among the order k-1 targets (modulo TARGETS), and the
element's flat index modulo PERIOD:
identical in every mode, process and TensorFlow version. Each is +-m/8 for
m in 4..15 except 8, so it is nonzero, never +-1, and exactly representable in
every floating dtype down to bfloat16: casting cannot make two modes (or the
numeric oracle) use different numbers. The first element of every target is
negative and the second positive, so a target with two elements or more has
weights of both signs that are not all equal; a scalar target gets one weight
that is neither 1 nor -1. A target larger than the table repeats it.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Sequence

import numpy as np

from harness import records

__all__ = ["LINEAR", "PERIOD", "TARGETS", "seed", "table", "tables", "flat_tables", "weights",
           "describe"]

# Weights per target before the table repeats: a prime, so a repeat never lines
# up with a power-of-two axis.
PERIOD = 61
# Targets with their own table at each order; target i uses table i % TARGETS.
TARGETS = 8

# The linearity check (harness.measure.oracles.linearity): order 1 once more with the upstream
# gradient a + b w, w the weighted chain's order 1 weights, so that a vector-Jacobian product,
# linear in its cotangent, gives a times the plain gradient plus b times the weighted one. a + b is
# not 1, so a gradient that adds something independent of dy (drops it) fails too, not only one
# that squares or clips it. With b = -2 and every |w| at least 0.5, a + b w has the opposite sign
# of w at every element, so a gradient that treats dy's sign one way and not the other (passing
# only a positive dy) fails whatever the weights. Every a + b w is a multiple of 1/4 below 5 in
# size, exact down to bfloat16.
LINEAR = records.LINEAR

_MAGNITUDES = np.array([m / 8 for m in range(4, 16) if m != 8])
_SIGNS = np.array([-1.0, 1.0])


def seed(case_id: str, point_label: str) -> int:
    """The seed of a case at a point: the same wherever it is computed."""
    digest = hashlib.sha256(f"upstream:{case_id}[{point_label}]".encode()).digest()
    return int.from_bytes(digest[:8], "little")


@functools.lru_cache(maxsize=4096)
def _table(seed_value: int, order: int, target: int) -> np.ndarray:
    rng = np.random.default_rng([seed_value, order, target])
    # What rng.choice(_MAGNITUDES, size=PERIOD) and rng.choice([-1.0, 1.0], size=PERIOD) draw
    # (NumPy 1.24 to 2.4 give the same numbers), at half the cost: explore's every point makes 16.
    magnitudes = _MAGNITUDES[rng.integers(0, len(_MAGNITUDES), size=PERIOD)]
    signs = _SIGNS[rng.integers(0, len(_SIGNS), size=PERIOD)]
    signs[0], signs[1] = -1.0, 1.0
    values = signs * magnitudes
    values.flags.writeable = False
    return values


def table(seed_value: int, order: int, target: int) -> np.ndarray:
    """PERIOD float64 weights for target `target` of the order `order` - 1 outputs."""
    return _table(seed_value, order, target)


def tables(seed_value: int, order: int) -> np.ndarray:
    """Every table orders 1..order use, [order, TARGETS, PERIOD]: what a mode is given.

    A traced function takes them as an input, so one trace serves every point.
    """
    return np.stack([np.stack([table(seed_value, k, i) for i in range(TARGETS)])
                     for k in range(1, order + 1)])


@functools.lru_cache(maxsize=64)
def flat_tables(seed_value: int, order: int) -> np.ndarray:
    """upstream.tables flattened: what a mode's upstream_weights indexes (read-only, kept for the
    other modes and the oracle of the same point, which ask for the same)."""
    flat = tables(seed_value, order).reshape(-1)
    flat.flags.writeable = False
    return flat


def weights(seed_value: int, order: int, target: int, shape: Sequence[int]) -> np.ndarray:
    """The float64 weights for target `target` (of shape `shape`) of the order `order` - 1
    outputs."""
    size = int(np.prod(shape, dtype=np.int64))
    values = table(seed_value, order, target % TARGETS)
    return values[np.arange(size) % PERIOD].reshape(tuple(shape))


def describe(values: np.ndarray, limit: int = 6) -> str:
    """The weights as a short list for a message: "[-0.625, 1.375, ...]"."""
    flat = np.asarray(values, np.float64).ravel()
    shown = ", ".join(f"{v:g}" for v in flat[:limit])
    return f"[{shown}{', ...' if flat.size > limit else ''}]"
