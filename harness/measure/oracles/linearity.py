"""The linearity oracle: a gradient is linear in its upstream gradient, whatever it approximates.

A vector-Jacobian product is linear in its cotangent: g(a u + b v) = a g(u) + b g(v), and so
g(0) = 0. That holds for a derivative and for a surrogate alike (a straight-through estimator
passes dy through, times something of x), so it is checked without the numeric derivative, where
the numeric oracle can say nothing (the forward locally constant) as everywhere else. Each mode that
computes the weighted chain also computes order 1 once more with the upstream gradient a + b w
(harness.measure.upstream.LINEAR, w the weighted chain's order 1 weights), and this oracle checks
that it is a times the plain gradient (dy = 1) plus b times the weighted one (dy = w), at every
element of every source; the modes' linearity chains are compared with one another as their other
chains are (harness.criteria.compare), so each mode is held to it. a + b is not 1, so a gradient
that does not depend on dy (drops it) fails as one that squares or clips it does.

The allowance is loose on purpose (16 times the dtype's tolerance, at least the square root of its
epsilon, of the gradients' scale): rounding never makes three gradients of one computation
nonlinear by more, and what the check is for, dy dropped, squared, clipped or offset, is off by
the gradients' own size. A gradient non-linear in dy on purpose (clipping dy by its norm) fails
here, and is declared: Expectation(modes=("linearity",), outcome=VALUES_DIFFER, reason=...).

Pure NumPy: it reads the agreed mode's three order 1 results only.
"""

from __future__ import annotations

import numpy as np

from harness.case import Case
from harness.criteria import differences
from harness.criteria.compare import where
from harness.criteria.tolerance import tolerance_for
from harness.measure import upstream
from harness.measure.oracles.outcomes import oracle_outcome
from harness.oracle_names import LINEARITY
from harness.records import ModeOutcome, OracleOutcome, OracleStatus

__all__ = ["COTANGENT", "check", "allowance"]


def allowance(dtype: str, case_tolerance) -> tuple[float, float]:
    """(rtol of the gradients' scale, atol) a linear gradient's three values may miss by."""
    tol = tolerance_for(dtype, case_tolerance)
    return max(16.0 * tol.rtol, float(np.sqrt(differences.epsilon(dtype)))), tol.atol


def check(case: Case, agreed: ModeOutcome, custom: bool) -> OracleOutcome:
    """Whether `agreed`'s order 1 gradient with dy = a + b w is a times the plain one plus b times
    the weighted one. `custom`: a custom gradient was seen to run (else TensorFlow's own)."""
    mode = agreed.mode
    if agreed.linear_error is not None:
        e = agreed.linear_error
        return OracleOutcome(
            name=LINEARITY, status=OracleStatus.DIFFER, orders=(1,), differ=(1,),
            details=(f"{_who(custom)} fails when its upstream gradient is {COTANGENT} (the "
                     f"linearity check): {mode} raises {e.type} at {e.stage}: {e.first_line}; "
                     "with dy = 1 and dy = w it computes its values",),
            note=_note(mode))
    if len(agreed.orders) < 2 or not agreed.upstream:
        return OracleOutcome(name=LINEARITY, status=OracleStatus.SKIP,
                             note=f"{mode} computed no weighted chain to compare with")
    if not agreed.linear:
        return OracleOutcome(name=LINEARITY, status=OracleStatus.SKIP,
                             note=f"{mode} does not compute the linearity chain")
    names = [s.name for s in agreed.sources]
    lines, checked, dropped = [], 0, True  # dropped: the same values whatever dy, where compared
    for slot, triple in enumerate(zip(agreed.orders[1], agreed.upstream[0], agreed.linear)):
        line, compared, same = _source(case, agreed, where(1, slot, names), *triple)
        checked += compared
        if line:
            lines.append(line)
            dropped = dropped and same
    if not lines:
        if not checked:
            return OracleOutcome(name=LINEARITY, status=OracleStatus.SKIP,
                                 note=f"no finite order 1 gradient of {mode} to compare")
        return oracle_outcome(LINEARITY, (1,), [], _note(mode))
    why = (f"the gradient is the same whatever dy: {_who(custom)} drops its upstream gradient "
           "(it returns something of its inputs alone, where the chain rule asks for dy times "
           "it)" if dropped else
           f"{_who(custom)} does something non-linear to its upstream gradient (squares, clips "
           "or rescales it by a function of itself), adds a term that does not depend on it, or "
           "depends on something besides dy and its inputs (state that changes between calls)")
    head = (f"{_who(custom)} is not linear in its upstream gradient: {lines[0]}; a "
            f"vector-Jacobian product is, g(a·u + b·v) = a·g(u) + b·g(v) whatever it "
            f"approximates, so {why}")
    return oracle_outcome(LINEARITY, (1,), [(1, head)] + [(1, line) for line in lines[1:]],
                          _note(mode))


def _source(case: Case, agreed: ModeOutcome, at: str, plain, weighted,
            linear) -> tuple[str, int, bool]:
    """One source's check: the line of its worst miss ("" where it is linear), whether it was
    compared (1) or not (0), and whether its three gradients are the same whatever dy."""
    a, b = upstream.LINEAR
    got = [plain.value, weighted.value, linear.value]
    if all(v is None for v in got):
        return "", 0, False
    if any(v is None for v in got):
        return (f"{at}: None (unconnected) with {_with(got.index(None))}, a value with "
                "another dy"), 1, False
    g1, gw, gc = (np.asarray(v).astype(np.complex128 if np.iscomplexobj(v) else np.float64)
                  for v in got)
    if not g1.shape == gw.shape == gc.shape:
        return "", 0, False  # a malformed gradient: the modes' comparison says so
    finite = np.isfinite(g1) & np.isfinite(gw) & np.isfinite(gc)
    if not finite.any():
        return "", 0, False
    expected = a * g1 + b * gw
    size = max(float(np.max(np.abs(gc[finite]))),
               float(np.max(np.abs(a * g1[finite]) + np.abs(b * gw[finite]))))
    rtol, atol = allowance(agreed.computed_in or plain.dtype, case.tolerance)
    allowed = atol + rtol * size
    miss = np.where(finite, np.abs(gc - expected), 0.0)
    if float(np.max(miss)) <= allowed:
        return "", 1, False
    same = bool(np.all(np.abs(g1 - gw)[finite] <= allowed)
                and np.all(np.abs(g1 - gc)[finite] <= allowed))
    flat = int(np.argmax(miss))
    index = [int(i) for i in np.unravel_index(flat, g1.shape)] if g1.shape else ""
    bad = int(np.count_nonzero(miss > allowed))
    return (f"{at}{index}: {agreed.mode}={gc.flat[flat]:.8g} with dy = {COTANGENT}, where "
            f"{a:g} × {g1.flat[flat]:.8g} (dy = 1) {_signed(b)} × {gw.flat[flat]:.8g} (dy = w) = "
            f"{expected.flat[flat]:.8g} (abs err {miss.flat[flat]:.3g}, allowed {allowed:.3g}; "
            f"{bad} of {g1.size} elements miss)"), 1, same


def _signed(b: float) -> str:
    """b as the second term of a sum: "+ 2", "- 2"."""
    return f"{'-' if b < 0 else '+'} {abs(b):g}"


# The linearity chain's upstream gradient as the words say it: "0.5 - 2w".
COTANGENT = f"{upstream.LINEAR[0]:g} {_signed(upstream.LINEAR[1])}w"


def _who(custom: bool) -> str:
    return ("grad_fn" if custom
            else "a gradient TensorFlow registers for an op (no custom gradient was seen to run)")


def _with(index: int) -> str:
    return ("dy = 1", "dy = w", f"dy = {COTANGENT}")[index]


def _note(mode: str) -> str:
    a, b = upstream.LINEAR
    return (f"order 1 with dy = {COTANGENT} against {a:g} × (dy = 1) {_signed(b)} × (dy = w), "
            f"{mode}'s three gradients, w the upstream weights (harness.measure.upstream)")
