"""Pure comparison of mode outcomes: NumPy in, a list of Mismatch records out.

Every check here answers "does `got` say the same as `ref`?" or "is this
gradient shaped like its input?"; none decides a verdict.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from harness import mode_names

from harness.records import LINEAR, ModeOutcome, Output, Status
from harness.criteria.tolerance import Tol, ToleranceOverride, narrow_tolerance_for, tolerance_for

__all__ = ["Mismatch", "compare_outputs", "compare_outcomes", "check_gradients", "where"]


@dataclasses.dataclass(frozen=True)
class Mismatch:
    """One disagreement, or one malformed gradient.

    Attributes:
      kind: "count", "none", "dtype", "shape", "nonfinite", "value", "status",
        "error_type" or "gradient".
      where: "forward output 0", "order 2 gradient wrt x", or a stage for errors.
      message: one line with both sides, the worst element and the tolerance.
    """

    kind: str
    where: str
    message: str
    order: Optional[int] = None  # the derivative order it is at, when it is at one
    upstream: bool = (
        False  # in the weighted chain (harness.measure.upstream), not at the plain contraction
    )


def where(order: int, index: int, wrt_names: Sequence[str]) -> str:
    """Names an output: "forward output 1" or "order 2 gradient wrt x"."""
    if order == 0:
        return f"forward output {index}"
    name = wrt_names[index] if index < len(wrt_names) else f"#{index}"
    return f"order {order} gradient wrt {name}"


def _fmt(x) -> str:
    return (f"{x:.8g}" if isinstance(x, (float, complex, np.floating, np.complexfloating))
            else str(x))


def _as_wide(value: np.ndarray) -> np.ndarray:
    # bfloat16 and float16 are widened so the arithmetic below is exact enough. Integers and
    # booleans stay as they are, to be compared exactly: float64 cannot hold every int64 (2**60 + 1
    # would round to 2**60).
    if value.dtype.kind == "c":
        return value.astype(np.complex128)
    if value.dtype.kind == "f" or value.dtype.name == "bfloat16":
        return value.astype(np.float64)
    return value


def _nonfinite_masks(value: np.ndarray) -> list[np.ndarray]:
    parts = [value.real, value.imag] if value.dtype.kind == "c" else [value]
    masks = []
    for part in parts:
        masks += [np.isnan(part), np.isposinf(part), np.isneginf(part)]
    return masks


def _index(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat_index, shape)) if shape else ()


def _zeros_for_none(ref: Output, got: Output, ref_mode: str, mode: str) -> bool:
    """Whether one side is None (unconnected) and the other, a context's, zeros: a tf.cond or a
    while loop (tf.map_fn's too) gives zeros for an input its body does not differentiate
    (_create_zeros_for_none_grads in tensorflow/python/ops/cond_v2.py, _zeros_like in
    while_v2.py). Both say the gradient is 0 there."""
    value, value_mode = (got, mode) if ref.value is None else (ref, ref_mode)
    row = mode_names.ROWS.get(value_mode)
    if row is None or row.group != mode_names.CONTEXT:
        return False
    values = np.asarray(value.value)
    return values.dtype.kind in "fciub" and not np.any(values)


def compare_outputs(ref: Output, got: Output, tol: Tol, *, ref_mode: str, mode: str,
                    at: str) -> Optional[Mismatch]:
    """Compares one output with its reference; None when they agree.

    None only equals None; dtype and shape must be equal; NaN, +Inf and -Inf
    must sit at the same positions; the finite rest must satisfy
    |got - ref| <= atol + rtol * |ref|.
    """
    pair = f"{mode} vs {ref_mode}"
    if ref.value is None or got.value is None:
        if ref.value is None and got.value is None:
            return None
        if _zeros_for_none(ref, got, ref_mode, mode):
            return None
        none_side, value_side = (mode, ref_mode) if got.value is None else (ref_mode, mode)
        return Mismatch("none", at, f"{at}: {pair}: {none_side} gives None (unconnected), "
                                    f"{value_side} gives a {got.dtype or ref.dtype} value")
    if ref.dtype != got.dtype:
        return Mismatch("dtype", at, f"{at}: {pair}: dtype {got.dtype} vs {ref.dtype}")
    if ref.shape != got.shape:
        return Mismatch("shape", at, f"{at}: {pair}: shape {list(got.shape)} vs {list(ref.shape)}")
    a, b = _as_wide(got.value), _as_wide(ref.value)
    if a.dtype.kind not in "fc":
        differ = a != b
        if not differ.any():
            return None
        i = int(np.flatnonzero(differ)[0])
        idx = _index(i, a.shape)
        return Mismatch("value", at,
                        f"{at}: {pair}: {int(differ.sum())} of {a.size} elements differ; "
                        f"first at {idx}: {mode}={a.flat[i]} {ref_mode}={b.flat[i]} "
                        "(exact match required)")
    for mask_a, mask_b in zip(_nonfinite_masks(a), _nonfinite_masks(b)):
        if (mask_a != mask_b).any():
            i = int(np.flatnonzero(mask_a != mask_b)[0])
            idx = _index(i, a.shape)
            return Mismatch("nonfinite", at, f"{at}: {pair}: NaN/Inf positions differ; at {idx}: "
                                             f"{mode}={_fmt(a.flat[i])} "
                                             f"{ref_mode}={_fmt(b.flat[i])}")
    finite = np.isfinite(a) & np.isfinite(b)  # the masks above already matched the rest
    a, b = np.where(finite, a, 0), np.where(finite, b, 0)
    abs_err = np.abs(a - b)
    allowed = tol.atol + tol.rtol * np.abs(b)
    excess = abs_err - allowed
    bad = excess > 0
    if not bad.any():
        return None
    i = int(np.argmax(np.where(bad, excess, -np.inf).ravel()))
    idx = _index(i, a.shape)
    ref_abs = float(np.abs(b.flat[i]))
    rel = float(abs_err.flat[i]) / ref_abs if ref_abs else float("inf")
    return Mismatch(
        "value", at,
        f"{at}: {pair}: {int(bad.sum())} of {a.size} elements differ; worst at {idx}: "
        f"{mode}={_fmt(a.flat[i])} {ref_mode}={_fmt(b.flat[i])} abs err "
        f"{float(abs_err.flat[i]):.3g} rel err {rel:.3g} (rtol {tol.rtol:g}, atol {tol.atol:g})",
    )


def _describe_error(outcome: ModeOutcome) -> str:
    e = outcome.error
    return f"raises {e.type} at {e.stage}: {e.first_line}" if e else f"ends {outcome.status.value}"


def compare_outcomes(ref: ModeOutcome, got: ModeOutcome, *, tolerance: ToleranceOverride = None,
                     upstream: bool = True) -> list[Mismatch]:
    """Every disagreement between `got` and the reference outcome `ref`.

    Two errors agree when their exception classes are equal; an error and
    values never agree. Two sets of values are compared order by order and
    output by output with the dtype's tolerance; then, with `upstream`, the
    weighted chains the same way, after the plain orders.
    """
    pair = f"{got.mode} vs {ref.mode}"
    top = _top_order(ref, got)
    if top is not None:
        ref, got = _upto(ref, top), _upto(got, top)
        tolerance = _narrowed(ref, got, tolerance)
    if ref.status is not Status.OK or got.status is not Status.OK:
        if ref.status is got.status is Status.ERROR:
            if ref.error.type == got.error.type:
                return []
            return [Mismatch("error_type", got.error.stage,
                             f"{pair}: {got.mode} raises {got.error.type} at {got.error.stage}, "
                             f"{ref.mode} raises {ref.error.type} at {ref.error.stage}")]
        return [
            Mismatch(
                "status",
                got.error.stage if got.error else ref.error.stage if ref.error else "",
                f"{pair}: {got.mode}"
                f" {_describe_error(got) if got.status is not Status.OK else 'returns values'};"
                f" {ref.mode}"
                f" {_describe_error(ref) if ref.status is not Status.OK else 'returns values'}",
            )
        ]
    found = []
    wrt_names = [s.name for s in ref.sources]
    if len(ref.orders) != len(got.orders):
        return [Mismatch("count", "",
                         f"{pair}: {len(got.orders) - 1} orders vs {len(ref.orders) - 1}")]
    for order, (ref_outs, got_outs) in enumerate(zip(ref.orders, got.orders)):
        if order == 0 and top is not None and not (ref_outs and got_outs):
            continue  # a training step returns no outputs
        if len(ref_outs) != len(got_outs):
            found.append(Mismatch("count", f"order {order}",
                                  f"order {order}: {pair}: {len(got_outs)} outputs vs "
                                  f"{len(ref_outs)}", order))
            continue
        for index, (r, g) in enumerate(zip(ref_outs, got_outs)):
            at = where(order, index, wrt_names)
            tol = tolerance_for(r.dtype, tolerance)
            m = compare_outputs(r, g, tol, ref_mode=ref.mode, mode=got.mode, at=at)
            if m:
                found.append(dataclasses.replace(m, order=order))
    return found + (_compare_upstream(ref, got, tolerance) if upstream else [])


def _top_order(ref: ModeOutcome, got: ModeOutcome) -> Optional[int]:
    """The highest order both compute, when one of them computes fewer than the case asks for."""
    tops = [o.top_order for o in (ref, got) if o.top_order is not None]
    return min(tops) if tops else None


def _upto(outcome: ModeOutcome, top: int) -> ModeOutcome:
    """`outcome` as far as order `top`: an error raised above it, after the orders up to it were
    computed (the eager mode keeps them), leaves those orders to be compared as values."""
    if outcome.top_order is not None and outcome.top_order <= top:
        return outcome
    upstream_error = outcome.upstream_error
    if upstream_error is not None and (upstream_error.order or 0) > top:
        upstream_error = None
    cut = dataclasses.replace(outcome, orders=outcome.orders[:top + 1],
                              upstream=outcome.upstream[:top], upstream_error=upstream_error)
    error = outcome.error
    if (outcome.status is Status.ERROR and error is not None and (error.order or 0) > top
        and len(outcome.orders) > top):
        cut = dataclasses.replace(cut, status=Status.OK, error=None)
    return cut


def _narrowed(ref: ModeOutcome, got: ModeOutcome,
              tolerance: ToleranceOverride) -> ToleranceOverride:
    """The tolerance for values computed in the narrower dtype a side computed in (float16 under a
    mixed-precision policy) against a wider truth (tolerance.NARROW_TOLERANCES), for every dtype."""
    narrow = got.computed_in or ref.computed_in
    return narrow_tolerance_for(narrow, tolerance) if narrow else tolerance


def _side(error, mode: str) -> str:
    return (f"{mode} raises {error.type} at {error.stage}: {error.first_line}" if error
            else f"{mode} returns values")


def _compare_upstream(ref: ModeOutcome, got: ModeOutcome,
                      tolerance: ToleranceOverride) -> list[Mismatch]:
    """The weighted chains' disagreements; none when neither mode computed one."""
    pair = f"{got.mode} vs {ref.mode}"
    if ref.upstream_error or got.upstream_error:
        r, g = ref.upstream_error, got.upstream_error
        if r and g and r.type == g.type:
            return []
        raised = g or r
        return [Mismatch("status", raised.stage,
                         f"with upstream weights: {pair}: {_side(g, got.mode)}; "
                         f"{_side(r, ref.mode)}", order=raised.order, upstream=True)]
    if not ref.upstream or not got.upstream:
        return []
    found = []
    names = [s.name for s in ref.sources]
    for order, (ref_outs, got_outs) in enumerate(zip(ref.upstream, got.upstream), start=1):
        for index, (r, g) in enumerate(zip(ref_outs, got_outs)):
            at = where(order, index, names) + " with upstream weights"
            m = compare_outputs(r, g, tolerance_for(r.dtype, tolerance), ref_mode=ref.mode,
                                mode=got.mode, at=at)
            if m:
                found.append(dataclasses.replace(m, order=order, upstream=True))
    return found + _compare_linear(ref, got, tolerance)


def _compare_linear(ref: ModeOutcome, got: ModeOutcome,
                    tolerance: ToleranceOverride) -> list[Mismatch]:
    """The linearity chains' disagreements (order 1 with upstream gradient a + b w), where both
    modes computed one: each mode is held to linearity in dy, the yardstick's by the linearity
    oracle and every other's by agreeing with it here."""
    pair = f"{got.mode} vs {ref.mode}"
    r, g = ref.linear_error, got.linear_error
    if r or g:
        if r and g and r.type == g.type:
            return []
        if (r and not got.linear) or (g and not ref.linear):
            return []  # the other does not compute the chain: nothing to compare
        raised = g or r
        return [Mismatch("status", raised.stage,
                         f"with the linearity check's upstream gradient: {pair}: "
                         f"{_side(g, got.mode)}; {_side(r, ref.mode)}", order=1, upstream=True)]
    if not ref.linear or not got.linear:
        return []
    found = []
    names = [s.name for s in ref.sources]
    for index, (r_out, g_out) in enumerate(zip(ref.linear, got.linear)):
        at = where(1, index, names) + " with the linearity check's upstream gradient"
        m = compare_outputs(r_out, g_out, _linear_tolerance(ref, index, r_out, tolerance),
                            ref_mode=ref.mode, mode=got.mode, at=at)
        if m:
            found.append(dataclasses.replace(m, order=1, upstream=True))
    return found


def _linear_tolerance(ref: ModeOutcome, index: int, out: Output,
                      tolerance: ToleranceOverride) -> Tol:
    """The tolerance of one linearity-chain gradient across modes: what the two chains it is
    linear in are each allowed, carried through a g(1) + b g(w). Where g(1) may differ by atol +
    rtol |g(1)| and g(w) by atol + rtol |g(w)|, their combination may by (|a| + |b|) atol + rtol
    (|a| |g(1)| + |b| |g(w)|): its cotangent is up to |a| + |b| max|w| in size where the plain
    one's is 1, and rounding grows with it (keras.gradient_reversal_functional under TensorFlow
    2.19.1: XLA and eager part by 1.1e-5 at a float32 value of 3.1e-3, past the plain atol of
    1e-5, where both chains it is made of agree)."""
    tol = tolerance_for(out.dtype, tolerance)
    a, b = abs(LINEAR[0]), abs(LINEAR[1])
    parts = []
    for chain in (ref.orders[1] if len(ref.orders) > 1 else (),
                  ref.upstream[0] if ref.upstream else ()):
        value = chain[index].value if index < len(chain) else None
        parts.append(None if value is None
                     else np.abs(np.asarray(value, dtype=np.complex128)).astype(np.float64))
    scale = 0.0
    if len(parts) == 2 and all(p is not None for p in parts) \
            and parts[0].shape == parts[1].shape:
        finite = np.isfinite(parts[0]) & np.isfinite(parts[1])
        if finite.any():
            scale = float(np.max(a * parts[0][finite] + b * parts[1][finite]))
    return Tol(rtol=tol.rtol, atol=(a + b) * tol.atol + tol.rtol * scale)


def check_gradients(outcome: ModeOutcome) -> list[Mismatch]:
    """Every gradient whose dtype or shape is not its source's, in one mode.

    The tape passes such a gradient on silently, and tf.gradients rejects it,
    so it is a failure even when every mode returns the same thing. A None
    gradient is well formed (it says "unconnected").
    """
    found = []
    sources = outcome.sources
    for order, outs in enumerate(outcome.orders[1:], start=1):
        if len(outs) != len(sources):
            found.append(Mismatch("gradient", f"order {order}",
                                  f"order {order}: {outcome.mode}: {len(outs)} gradients for "
                                  f"{len(sources)} differentiated sources"))
            continue
        for index, (out, source) in enumerate(zip(outs, sources)):
            if out.value is None:
                continue
            at = where(order, index, [s.name for s in sources])
            if out.dtype != source.dtype or out.shape != source.shape:
                found.append(Mismatch(
                    "gradient", at,
                    f"{at}: {outcome.mode}: gradient is {out.dtype}{list(out.shape)} but "
                    f"{source.name} is {source.dtype}{list(source.shape)}",
                ))
    return found
