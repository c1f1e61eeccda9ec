"""The directions the numeric oracle moves the sources along, and the directional derivative."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Optional, Sequence

import numpy as np

from harness.case import Case, Point

__all__ = ["DIRECTIONS", "Direction", "directional", "element_label", "element_steps",
           "elements", "per_source", "scale", "seed", "swept"]

# Random directions per order and source: enough to catch a wrong derivative with
# probability one, while costing two evaluations each.
DIRECTIONS = 2


def seed(case: Case, point: Point) -> int:
    return int.from_bytes(hashlib.sha256(f"{case.id}[{point.label}]".encode()).digest()[:4],
                          "little")


@dataclasses.dataclass(frozen=True)
class Direction:
    """A unit shift of every source: one element (`element` = (source slot, flat index)) or random.

    For a symmetric source an element direction moves (i, j) and (j, i) together:
    `mirror` is the flat index of (j, i), or None on the diagonal."""

    unit: list
    element: Optional[tuple[int, int]] = None
    label: str = ""
    mirror: Optional[int] = None
    # Read from a shift of every element of its source at once (an elementwise function): the
    # elements of the values that belong to this element, flat indices into `Evaluator.values`.
    picks: Optional[np.ndarray] = None
    # A random direction within one source (`per_source`): the slot of the only source it moves,
    # whose dtype's tolerance judges it. None for an element, or a direction moving every source.
    source: Optional[int] = None

    @property
    def slot(self) -> Optional[int]:
        """The one source this direction moves (None: a random direction moving them all)."""
        return self.element[0] if self.element is not None else self.source


def per_source(bases: Sequence[np.ndarray], slots: Sequence[int], seed: int,
               symmetric: Sequence[bool]) -> list[Direction]:
    """DIRECTIONS seeded random unit directions within each source of `slots`, every other source
    left where it is: each source's elements are then judged at its own dtype's tolerance, and a
    wrong element of a small source is not drowned by a large one's terms."""
    found = []
    for slot in slots:
        rng = np.random.default_rng([seed, slot])
        for d in range(DIRECTIONS):
            part = rng.standard_normal(bases[slot].shape)
            if symmetric[slot]:
                part = (part + np.swapaxes(part, -1, -2)) / 2
            unit = [np.zeros(b.shape) for b in bases]
            unit[slot] = part / np.sqrt(np.sum(part * part))
            found.append(Direction(unit, label=f"random direction {d + 1} of {DIRECTIONS}",
                                   source=slot))
    return found


def elements(bases: Sequence[np.ndarray], symmetric: Sequence[bool],
             slots: Optional[Sequence[int]] = None) -> list[Direction]:
    """One direction per element of the sources in `slots` (all by default)."""
    found = []
    for slot, base in enumerate(bases):
        if slots is not None and slot not in slots:
            continue
        for flat in range(base.size):
            unit = [np.zeros(b.shape) for b in bases]
            mirror = None
            if symmetric[slot]:
                index = np.unravel_index(flat, base.shape)
                i, j = index[-2], index[-1]
                if i > j:
                    continue  # moved with its mirror (j, i)
                if i < j:
                    mirror = int(np.ravel_multi_index(index[:-2] + (j, i), base.shape))
                    unit[slot].flat[mirror] = 1.0
            unit[slot].flat[flat] = 1.0
            found.append(Direction(unit, element=(slot, flat), mirror=mirror))
    return found


def swept(bases: Sequence[np.ndarray], slot: int, outputs: int) -> list[Direction]:
    """Every element of source `slot`, read from one shift of all its elements: element j of each
    of the `outputs` values (each shaped like the source) belongs to element j alone."""
    size = bases[slot].size
    found = []
    for flat in range(size):
        unit = [np.zeros(b.shape) for b in bases]
        unit[slot].flat[flat] = 1.0
        picks = flat + size * np.arange(outputs)
        found.append(Direction(unit, element=(slot, flat), picks=picks))
    return found


def element_steps(base: np.ndarray, step: float) -> np.ndarray:
    """Each element's step: relative to its size, at least the plain step."""
    return step * np.maximum(1.0, np.abs(base.astype(np.float64)))


def scale(grads: Sequence[Optional[np.ndarray]], direction: Direction) -> float:
    """The size the directional derivative's rounding is relative to: the sum of |g_i u_i|."""
    return float(sum(np.sum(np.abs(g[u != 0] * u[u != 0])) for g, u in zip(grads, direction.unit)
                     if g is not None and np.all(np.isfinite(g[u != 0]))))



def directional(grads: Sequence[Optional[np.ndarray]],
                direction: Direction) -> tuple[Optional[float], list[int]]:
    """The gradients' derivative along `direction`: None when every gradient it moves is
    None (unconnected), and the slots of the None gradients counted as 0."""
    moved = [i for i, u in enumerate(direction.unit) if np.any(u)]
    unconnected = [i for i in moved if grads[i] is None]
    if len(unconnected) == len(moved):
        return None, unconnected
    # Only the elements the direction moves: a NaN gradient elsewhere is not this direction's.
    return float(sum(np.sum(g[u != 0] * u[u != 0]) for g, u in zip(grads, direction.unit)
                     if g is not None)), \
        unconnected


def element_label(shape: tuple, flat: int, mirror: Optional[int]) -> str:
    if not shape:
        return ""
    index = [int(i) for i in np.unravel_index(flat, shape)]
    if mirror is None:
        return f"{index}"
    return f"{index} and {[int(i) for i in np.unravel_index(mirror, shape)]} together (symmetric)"

