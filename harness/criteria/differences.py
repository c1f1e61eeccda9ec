"""Central differences that carry their own error estimate. Pure NumPy, no TensorFlow.

The numeric oracle asks one question per direction u at a point x: is the custom gradient's
directional derivative g (the gradient dotted with u) the derivative of phi(t) = f(x + t u) at
t = 0? A central difference (phi(h) - phi(-h)) / 2h answers it only where phi is smooth on
[-h, h], and only to within its own error: truncation (h^2 phi''' / 6), rounding (about
eps |phi| / h) and whatever noise the forward itself has (a root search or an iterative solver
computed to a tolerance). So the answer here is never one quotient against a fixed tolerance:

1. A screen at the starting step h: the quotient at +-h. A gradient within the relative tolerance
   plus the rounding bound of that step, and large enough that the bound could not hide a wrong
   sign or a factor of two, matches. Nothing is ever called wrong from the screen alone.
2. Otherwise the step shrinks by 4 at a time (LEVELS of them at most), which follows the point
   and the domain: a step that leaves the domain, or crosses a singularity, gives no finite
   value, and a shorter one is tried. Two consecutive steps give a Richardson estimate of the
   derivative and its error (their difference); the pair with the smallest error is used, and
   shrinking stops once the steps agree far within the tolerance.
3. The one-sided differences of that pair say what the function is doing: where they agree it is
   smooth; where each side is consistent but they differ it has a kink (the gradient is judged
   against the interval between the two one-sided derivatives, which holds each side and every
   subgradient, not against their average); where a side's change does not shrink with the
   step, the value jumps (a discontinuous forward, or at order k a discontinuous order k - 1):
   no evidence either way; where the steps disagree without such a pattern, the forward is too
   noisy at this step.
4. The forward's own noise is measured there, not assumed: from the spread of its values on a grid
   of seven points a quarter step apart (the higher differences of a smooth function vanish at
   that spacing, a noisy one's do not), or, where the values do not change at all within a step,
   from the smallest change a few longer steps show, when that change is small beside the value
   (a forward rounded to its precision, not a locally constant function). Where that noise divided
   by the step is larger than the gradient, the direction is NOISE: no evidence either way. The
   noise also bounds how closely the estimate can be trusted.
5. Nor is anything called wrong within the rounding of a value of the point's size, where the
   caller gives that size (`least`): a small value computed from terms of the point's size (1 - s
   with s near 1) carries their rounding, not its own. Values that stay exactly where they were
   (FLAT), or whose differences miss the gradient by no more than that rounding explains
   (ROUNDED), are no evidence either way.

`assess` returns a `Judged`: "match", "differ", or one of the unresolved kinds, each with the
numbers its message needs. The numeric oracle calls it in the worker, where phi is evaluated: a
direction's match or differ is decided where it is measured (harness.measure.oracles says why),
and the verdict from the oracle's outcome in the main process (harness.judge.verdict).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Optional

__all__ = ["Judged", "assess", "epsilon", "tiny", "LEVELS", "SMOOTH", "KINK", "JUMP", "NOISY",
           "NONFINITE", "COARSE", "NOISE", "FLAT", "ROUNDED"]

# How many times the step may shrink (by 4 each) after the screen: 4 ** 6 = 4096, from the float64
# step of 7.6e-6 down to 1.9e-9, within which a point 1e-5 from a domain edge is well inside.
LEVELS = 6
_SHRINK = 4.0
# Rounding of a central difference: each of phi(+-h) carries a few ulps of |phi|; this many.
_ULPS = 4.0
# A side whose change keeps more than this share of its size when the step shrinks by 4 jumps
# (smooth or kinked, a side's change shrinks to a quarter).
_JUMP_SHARE = 0.75
# The sides differ by a kink when each moves with the step by less than this share of their gap.
_KINK_SHARE = 0.25
# The noise of a central difference at step s from a forward whose values scatter by sigma: its
# standard deviation is sigma / (s sqrt 2); this many of them bound it.
_NOISE_SIGMAS = 3.0
# The grid the noise is measured on is this many times finer than the starting step: fine enough
# that a smooth function's higher differences vanish there, even near a domain edge.
_NOISE_SPACING = 64.0
# Where the forward's values do not change within a step, longer steps (by 4 each, this many) look
# for the smallest change it makes: its resolution, when that is small beside the value.
_WIDEN = 3

# Machine epsilon by dtype name (NumPy's finfo knows no bfloat16); an unknown dtype counts as
# float64.
EPSILON = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23,
           "float64": 2.0 ** -52}


# The smallest normal number by dtype name. Below it a value has lost precision, and TensorFlow's
# CPU kernels flush it to zero (the executor runs them under port::ScopedFlushDenormal), so a
# gradient that small cannot be told from 0.
TINY = {"float16": 2.0 ** -14, "bfloat16": 2.0 ** -126, "float32": 2.0 ** -126,
        "float64": 2.0 ** -1022}


def epsilon(dtype: str) -> float:
    return EPSILON.get(dtype, EPSILON["float64"])


def tiny(dtype: str) -> float:
    return TINY.get(dtype, TINY["float64"])


# What the differences found along a direction.
SMOOTH = "smooth"
KINK = "kink"
JUMP = "jump"  # the value jumps within a step: no evidence
NOISY = "noisy"  # the steps disagree: the forward is too noisy at this step
NONFINITE = "nonfinite"  # no step gave finite values (or every shifted point raised)
COARSE = "coarse"  # the dtype's rounding at this step could hide a wrong sign or factor of 2
NOISE = "noise"  # the forward's measured noise, divided by the step, is larger than the gradient
# The value stays exactly where it was at the steps judged, where the gradient moves it by less
# than a computation at the point's size rounds: a larger term inside may have absorbed the move.
FLAT = "flat"
# The value moves, but the gradient differs from its differences by less than rounding a value of
# the point's size could move them at the step: a larger term inside may have rounded away part
# of the change (softmax's largest share near 1 beside shares of 1e-10).
ROUNDED = "rounded"


@dataclasses.dataclass(frozen=True)
class Judged:
    """One direction's verdict.

    Attributes:
      outcome: "match", "differ" or "unresolved".
      kind: SMOOTH, KINK, JUMP, NOISY, NONFINITE, COARSE, NOISE, FLAT or ROUNDED: what the
        differences showed.
      numeric: the numeric derivative (the Richardson estimate; at a kink, the side nearer `g`).
      left, right: the one-sided derivatives (equal to `numeric` where smooth).
      error: the estimated error of `numeric` (the two steps' disagreement; 0 from the screen).
      allowed: the difference a right gradient may have: rtol of the scale plus rounding.
      excess: how far |g - numeric| is beyond what is allowed (ranks failures).
      step: the step the estimate comes from.
      plus, minus, base: phi(h), phi(-h) and phi(0) at the starting step (None: not finite).
      jump: the size of the value's jump, for a JUMP.
      noise: the forward's measured noise (the spread of its values near the point, or its
        resolution where it does not change within a step); 0.0 where it was not measured.
    """

    outcome: str
    kind: str
    numeric: float = math.nan
    left: float = math.nan
    right: float = math.nan
    error: float = 0.0
    allowed: float = 0.0
    excess: float = 0.0
    step: float = 0.0
    plus: Optional[float] = None
    minus: Optional[float] = None
    base: Optional[float] = None
    jump: float = 0.0
    noise: float = 0.0


def assess(g: float, phi: Callable[[float], Optional[float]], h: float, *, eps: float, rtol: float,
           atol: float = 0.0, scale: float = 0.0,
           wider: Optional[Callable[[], float]] = None, least: float = 0.0) -> Judged:
    """Judges the directional derivative `g` against differences of `phi`.

    Args:
      g: the gradient's derivative along the direction (may be NaN or infinite).
      phi: the function along the direction, phi(t) = f(x + t u); None where it is not finite
        or raised. Called at 0 and at +-h / 4**k; memoise it if it is expensive.
      h: the starting step.
      eps: the machine epsilon of the dtype phi is computed in (its rounding).
      rtol: the relative tolerance of the gradient's dtype.
      atol: an absolute tolerance the case asked for (none by default: the scale sets it).
      scale: the size the gradient's rounding is relative to (for a random direction, the sum of
        |gradient element x direction element|); |g| and |numeric| count too.
      wider: the atol to judge with instead, computed only where the first step does not match
        with `atol`: one that costs work a match does not need. A match at the first step with
        `atol` is one with any wider atol too (what is allowed only grows with it), so the verdict
        is the wider atol's; only such a match's `allowed` is the narrower one's.
      least: the smallest change of phi that a computation at the point's size shows (eps times
        that size; 0: none assumed). Where phi stays exactly at its value at both steps the
        estimate comes from, and the gradient moves it by less than this over the longer one,
        the numeric derivative of 0 says nothing of the gradient: log(1 + e^x) at x = -50 is
        log(1) in float64, and its derivative is 2e-22 (FLAT). Where phi moves, a gradient that
        differs from its differences by no more than rounding of this size at the step could
        explain is not called wrong either (ROUNDED): the sum of the squared shares of softmax(x)
        at (0, 0, 23) adds shares of 1e-10 to one near 1, which rounds away part of their change.
    """
    judge = _Judge(g, phi, eps, rtol, atol, scale, least)
    base, plus, minus = (_clean(phi(t)) for t in (0.0, h, -h))
    judge.samples = dict(plus=plus, minus=minus, base=base)
    if base is None:
        return judge.judged("unresolved", NONFINITE, step=h)
    judge.base = base
    screened = judge.screen(h, plus, minus)
    if screened is None and wider is not None:
        judge.atol = wider()
        screened = judge.screen(h, plus, minus)
    return screened or judge.refined(h)


def _clean(v: Optional[float]) -> Optional[float]:
    return v if v is not None and math.isfinite(v) else None


def _resolved(g: float, numeric: float, rounding: float) -> bool:
    """Whether a difference of `rounding` could not hide a wrong sign or a factor of 2."""
    size = max(abs(g), abs(numeric))
    return size == 0.0 or rounding < 0.25 * size


@dataclasses.dataclass(frozen=True)
class _Level:
    """phi at +-h."""

    h: float
    plus: float
    minus: float

    def central(self) -> float:
        return (self.plus - self.minus) / (2 * self.h)


class _Judge:
    """One direction's differences, from the screen on."""

    def __init__(self, g, phi, eps, rtol, atol, scale, least):
        self.g, self.phi, self.eps, self.rtol, self.atol, self.scale = (g, phi, eps, rtol, atol,
                                                                        scale)
        self.least = least  # the smallest change a computation at the point's size shows
        self.samples: dict = {}
        self.base = 0.0
        self.noise = 0.0  # measured once the screen has not settled it

    def size(self, numeric: float) -> float:
        return max(abs(self.g) if math.isfinite(self.g) else 0.0, abs(numeric), self.scale)

    def screen(self, h: float, plus: Optional[float], minus: Optional[float]) -> Optional[Judged]:
        """A match at the starting step, where the central difference there shows one; else
        None."""
        if plus is None or minus is None or not math.isfinite(self.g):
            return None
        level = _Level(h, plus, minus)
        numeric = level.central()
        rounding = self.rounding(level)
        allowed = self.allowed(numeric, rounding)
        if abs(self.g - numeric) <= allowed and _resolved(self.g, numeric, rounding):
            return self.judged("match", SMOOTH, numeric=numeric, left=numeric, right=numeric,
                               allowed=allowed, step=h)
        return None

    def rounding(self, level: _Level) -> float:
        return _ULPS * self.eps * max(abs(level.plus), abs(level.minus), abs(self.base)) / level.h

    def allowed(self, numeric: float, rounding: float) -> float:
        return self.atol + self.rtol * self.size(numeric) + rounding

    def judged(self, outcome: str, kind: str, **numbers) -> Judged:
        return Judged(outcome, kind, **numbers, **self.samples)

    def noise_error(self, step: float) -> float:
        """How far the forward's measured noise can move a central difference at `step`."""
        return _NOISE_SIGMAS * self.noise / (step * math.sqrt(2.0))

    def measure_noise(self, h: float) -> float:
        """The forward's noise near the point beyond the rounding already allowed for: the spread
        of its higher differences on a fine grid on each side (apart, so that a kink at the point
        is not taken for noise), or its resolution where its values do not change within a step."""
        spacing = h / _NOISE_SPACING
        sides = []
        for sign in (1.0, -1.0):
            grid = [self.base] + [_clean(self.phi(sign * j * spacing)) for j in range(1, 7)]
            if all(v is not None for v in grid):
                sides.append(grid)
        if not sides:
            return 0.0
        unmoved = [v for grid in sides for v in grid]
        unmoved += [self.samples["plus"], self.samples["minus"]]
        if all(v == self.base for v in unmoved):
            return self.resolution(h)
        spreads = [_spread(grid) for grid in sides]
        # A side that does not look noisy (a smooth one, beside a jump on the other) says there is
        # no noise to speak of; two noisy sides are pooled.
        pooled = math.sqrt(sum(s * s for s in spreads) / len(spreads))
        noise = 0.0 if min(spreads) == 0.0 else pooled
        size = max(abs(v) for grid in sides for v in grid)
        return noise if noise > _ULPS * self.eps * size else 0.0

    def resolution(self, h: float) -> float:
        """The smallest change of a forward flat within a step, seen at up to 4 ** _WIDEN steps,
        when it is small beside the value (about half its digits): a forward rounded to its
        precision. A larger change, or none, is a locally constant function's (0.0)."""
        step = h
        for _ in range(_WIDEN):
            step *= _SHRINK
            sides = [_clean(self.phi(step)), _clean(self.phi(-step))]
            if any(v is None for v in sides):
                return 0.0
            change = max(abs(v - self.base) for v in sides)
            if change:
                size = max([abs(self.base)] + [abs(v) for v in sides])
                return change if change <= math.sqrt(self.eps) * size else 0.0
        return 0.0

    def refined(self, h: float) -> Judged:
        self.noise = self.measure_noise(h)
        levels: list[_Level] = []
        best: Optional[tuple[float, _Level, _Level]] = None  # (their disagreement, coarse, fine)
        step = h
        for _ in range(LEVELS + 1):
            plus, minus = _clean(self.phi(step)), _clean(self.phi(-step))
            if plus is None or minus is None:
                if levels:  # finite at a longer step, not at this shorter one: nothing better below
                    break
            else:
                levels.append(_Level(step, plus, minus))
                if len(levels) >= 2:
                    coarse, fine = levels[-2], levels[-1]
                    error = abs(coarse.central() - fine.central()) + self.noise_error(fine.h)
                    if best is None or error < best[0]:
                        best = (error, coarse, fine)
                    if error <= 0.01 * self.rtol * self.size(fine.central()):
                        break  # the steps agree far within the tolerance
                    shorter = step / _SHRINK
                    beyond = self.rounding(_Level(shorter, plus, minus)) + self.noise_error(shorter)
                    if beyond > best[0]:
                        break  # a shorter step would only add rounding or noise
            step /= _SHRINK
        if best is None:
            if not levels:
                return self.judged("unresolved", NONFINITE, step=h)
            only = levels[0]  # one usable step only: judged alone, with no estimate of its error
            unseen = self.unseen(only)
            if unseen is not None:
                return unseen
            rounding = self.rounding(only)
            numeric = only.central()
            return self.verdict(numeric, numeric, numeric, self.noise_error(only.h), rounding,
                                only.h, SMOOTH)
        return self.estimated(*best)

    def unseen(self, *levels: _Level) -> Optional[Judged]:
        """No evidence where phi stays exactly at its value at `levels`, which the gradient moves
        by less than `least` over the longest of them; else None."""
        longest = max(level.h for level in levels)
        flat = all(level.plus == level.minus == self.base for level in levels)
        if not (flat and math.isfinite(self.g) and abs(self.g) * longest < self.least):
            return None
        return self.judged("unresolved", FLAT, numeric=0.0, left=0.0, right=0.0,
                           allowed=self.allowed(0.0, 0.0), step=longest, noise=self.noise)

    def estimated(self, error: float, coarse: _Level, fine: _Level) -> Judged:
        """The verdict from the Richardson estimate of the best pair of steps, and its sides."""
        unseen = self.unseen(coarse, fine)
        if unseen is not None:
            return unseen
        if self.noise and math.isfinite(self.g) and self.noise / fine.h > abs(self.g):
            # What the noise alone moves a difference by hides the gradient: no evidence, even of
            # a jump (a noisy value's sides keep their size as the step shrinks).
            numeric = fine.central()
            rounding = self.rounding(fine)
            return self.verdict(numeric, numeric, numeric, error, rounding, fine.h, SMOOTH)
        numeric = (_SHRINK ** 2 * fine.central() - coarse.central()) / (_SHRINK ** 2 - 1)
        rounding = self.rounding(fine)
        # One-sided differences at both steps, extrapolated (their error is O(h), so by 4 / 3).
        base = self.base
        right_c, right_f = (coarse.plus - base) / coarse.h, (fine.plus - base) / fine.h
        left_c, left_f = (base - coarse.minus) / coarse.h, (base - fine.minus) / fine.h
        right = (_SHRINK * right_f - right_c) / (_SHRINK - 1)
        left = (_SHRINK * left_f - left_c) / (_SHRINK - 1)
        side_error = abs(right_c - right_f) + abs(left_c - left_f)
        jump = _jump(coarse, fine, base, rounding * fine.h + _NOISE_SIGMAS * self.noise)
        if jump:
            return self.judged("unresolved", JUMP, numeric=numeric, left=left, right=right,
                               error=error, allowed=self.allowed(numeric, rounding), step=fine.h,
                               jump=jump)
        apart = self.allowed(numeric, 2 * rounding) + side_error + 2 * self.noise_error(fine.h)
        if abs(right - left) > apart:
            if side_error < _KINK_SHARE * abs(right - left):  # each side consistent, the two apart
                return self.verdict(numeric, left, right, side_error, 2 * rounding, fine.h, KINK)
            error = max(error, side_error)  # sides that move with the step: noise, judged as such
        return self.verdict(numeric, numeric, numeric, error, rounding, fine.h, SMOOTH)

    def verdict(self, numeric: float, left: float, right: float, error: float, rounding: float,
                step: float, kind: str) -> Judged:
        g = self.g
        allowed = self.allowed(numeric, rounding)
        numbers = dict(left=left, right=right, error=error, allowed=allowed, step=step,
                       noise=self.noise)
        if not math.isfinite(g):
            return self.judged("differ", kind, numeric=numeric, excess=math.inf, **numbers)
        if self.noise and self.noise / step > abs(g):
            # The gradient is smaller than what the noise alone moves a difference by: no evidence.
            return self.judged("unresolved", NOISE, numeric=numeric, **numbers)
        # g itself when it lies between the sides
        nearest = min(max(g, min(left, right)), max(left, right))
        if kind == KINK:
            numeric = nearest
        miss = abs(g - nearest)
        if miss <= allowed and _resolved(g, nearest, rounding + self.noise_error(step)):
            return self.judged("match", kind, numeric=numeric, **numbers)
        if miss <= allowed + 3 * error:
            # Within what the steps' disagreement, the noise or the rounding could explain: no
            # evidence either way.
            return self.judged("unresolved", NOISY if error > rounding else COARSE,
                               numeric=numeric, **numbers)
        # phi's rounding above is of its own size; terms inside it may be of the point's size,
        # where rounding moves phi by `least` at each step, however small phi is.
        inside = _ULPS * self.least / step
        if inside > rounding and miss <= self.allowed(numeric, inside) + 3 * error:
            return self.judged("unresolved", ROUNDED, numeric=numeric, **numbers)
        return self.judged("differ", kind, numeric=numeric, excess=miss - allowed - 3 * error,
                           **numbers)


def _spread(grid: list) -> float:
    """The standard deviation of a noise that would give `grid`'s 4th to 6th differences, or 0.0
    where its differences do not look like noise. Noise of deviation sigma gives k-th differences
    of deviation sigma sqrt(C(2k, k)) whose signs change; a smooth function's keep their sign at a
    fine spacing (the test Moré and Wild's ECnoise makes), here at any of the 3rd to 5th."""
    pooled, changes = [], False
    diffs = list(grid)
    for k in range(1, 7):
        diffs = [b - a for a, b in zip(diffs, diffs[1:])]
        if 3 <= k <= 5:
            changes = changes or min(diffs) < 0.0 < max(diffs)
        if k >= 4:
            pooled += [d * d / math.comb(2 * k, k) for d in diffs]
    return math.sqrt(sum(pooled) / len(pooled)) if changes else 0.0


def _jump(coarse: _Level, fine: _Level, base: float, floor: float) -> float:
    """The size of a jump of the value at the point, on either side, or 0.0 when there is none:
    a side whose change keeps its sign and most of its size when the step shrinks by 4."""
    found = 0.0
    for c, f in ((coarse.plus - base, fine.plus - base), (base - coarse.minus, base - fine.minus)):
        if abs(c) > floor and c * f > 0 and _JUMP_SHARE * abs(c) < abs(f) < abs(c) / _JUMP_SHARE:
            found = max(found, abs(f))
    return found
