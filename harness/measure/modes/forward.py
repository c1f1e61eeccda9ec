"""Mode `forward`: the same orders by forward-mode autodiff, tf.autodiff.ForwardAccumulator.

Order k's gradient for source s is, element by element, d/d(s_j) of the sum
of the order k-1 targets: the sum over those targets of their JVP along the
one-hot tangent e_j. So each element of each source is one pass: an
accumulator watching that source alone, with tangent e_j, around the eager
computation of orders 0..k-1 (just the function for order 1; the nested tapes
of `tape_orders` above it, so forward over reverse). Watching one source at a
time makes a missing JVP mean "not connected to s", as None does in reverse
mode. A one-hot basis, not one ones tangent and a Hessian-vector product,
because a custom second derivative need not be symmetric: reverse mode's ones
cotangent reads the column sums of the Jacobian, (J^T 1)_j = sum_i (J e_j)_i,
where a ones tangent would read its row sums, J 1.

TensorFlow has no forward rule for a tf.custom_gradient: _eager_mode_decorator
(tensorflow/python/ops/custom_gradient.py) records the op with no forward
function, and ForwardAccumulator::Accumulate (tensorflow/c/eager/tape.h) then
calls ForwardpropFromTape, which runs the Python grad_fn on a ones upstream
gradient under a tape and transposes it. But the decorator runs the body with
the accumulator recording, so an output the body made differentiably already
has a JVP, and Accumulate keeps a tensor's first JVP and drops grad_fn's. So
this mode sees a grad_fn only where the body has no JVP (tf.round, tf.sign,
tf.stop_gradient, tf.recompute_grad's unrecorded body), and the body's own
derivative everywhere else; grad_fn is still called, and what it raises is raised.

Orders are computed one after another, each from its own passes, so an error
names the order that could not be computed and every order before it is kept.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harness.case import Case, Point
from harness.measure.modes.shared import (
    Steps,
    Subject,
    build_error,
    build_subject,
    flat_outputs,
    is_target,
    tape_chains,
    tf,
    upstream_tables,
    upstream_weights,
)
from harness.records import ModeOutcome, RunOptions, Status

NAME = "forward"

# harness.measure.probe counts grad_fn calls, and here a call does not mean use: the
# accumulator calls every grad_fn it records (ForwardpropFromTape) and then drops
# the result when the body already gave the output a JVP.
OBSERVES_GRADIENTS = False

# Most source elements (one pass each, per order) a point may have; more is a SKIP.
MAX_ELEMENTS = 256


def run(case: Case, options: RunOptions) -> list[ModeOutcome]:
    """Runs every point of `case`; the builder is called once, eagerly."""
    try:
        subject = build_subject(case)
    except Exception as e:  # noqa: BLE001 - the case's own code may raise anything
        return build_error(case, NAME, e, case.points)
    outcomes = []
    for point in case.points:
        note = skip_note(subject, point)
        if note:
            outcomes.append(ModeOutcome(mode=NAME, status=Status.SKIP, note=note))
            continue
        stage, orders, weighted, raised = "forward", [], [], None
        tables = upstream_tables(case, point, options)
        tables = None if tables is None else tf.constant(tables)
        try:
            xs = [tf.constant(v) for v in point.values]
            orders.append(flat_outputs(subject.fn(*xs)))
            for k in range(1, case.order + 1):
                stage = f"order {k}"
                pairs = [_gradient(subject, xs, s, k, options, tables if raised is None else None)
                         for s in subject.sources(xs)]
                orders.append([plain for plain, _, _ in pairs])
                raised = raised or next((error for _, _, error in pairs if error is not None), None)
                if tables is not None and raised is None:
                    weighted.append([chain for _, chain, _ in pairs])
            outcomes.append(subject.ok(NAME, _values(orders), point, _values(weighted), raised))
        except Exception as e:  # noqa: BLE001
            outcomes.append(subject.error(NAME, e, stage, point, _values(orders)))
    return outcomes


def _values(orders):
    return [[_numpy(t) for t in o] for o in orders]


def skip_note(subject: Subject, point: Point) -> Optional[str]:
    """Why forward mode does not apply at `point`, or None when it does."""
    sources = subject.records(point)
    complex_sources = [f"{s.name}: {s.dtype}" for s in sources if s.dtype.startswith("complex")]
    if complex_sources:
        # Seen on TF 2.21: for z**2 at 1+2j, the JVP along 1 is 2z = 2+4j where the
        # tape gives conj(2z) = 2-4j, and a real loss of z needs a second tangent, i.
        return (f"forward mode does not apply to complex sources ({', '.join(complex_sources)}): "
                "ForwardAccumulator watches floating primals only (forwardprop.py, _watch warns "
                "so) and its JVP along a real tangent is not the reverse-mode conj-convention "
                "gradient")
    count = sum(int(np.prod(s.shape, dtype=np.int64)) for s in sources)
    if count > MAX_ELEMENTS:
        sizes = ", ".join(f"{s.name}: {int(np.prod(s.shape, dtype=np.int64))}" for s in sources)
        return (f"forward mode needs one pass per source element: {count} elements ({sizes}) "
                f"exceed the limit of {MAX_ELEMENTS}")
    return None


def _gradient(subject: Subject, xs: Sequence, source, order: int, options: RunOptions, tables):
    """Order `order`'s gradient for `source`, one forward pass per element of it, and with
    weight `tables` the weighted chain's: the same passes give the JVPs of both chains' order
    `order` - 1, and the weighted one sums them with the upstream weights.

    Returns (plain, weighted, what the weighted chain raised or None). A gradient
    is None when no element is connected (zeros with options.unconnected_zero);
    an unconnected element of a connected source is 0, as in reverse mode.
    """
    size = int(np.prod(source.shape.as_list(), dtype=np.int64))
    plain, chain = [], []
    raised = None
    for j in range(size):
        tangent = np.zeros(size, source.dtype.as_numpy_dtype)
        tangent[j] = 1
        progress = Steps()
        with tf.autodiff.ForwardAccumulator(primals=source,
                                            tangents=tangent.reshape(source.shape)) as acc:
            orders, weighted = tape_chains(subject, xs, order - 1, options, progress,
                                           tables if raised is None else None)
        plain.append(_sum([_contracted(acc.jvp(t), source.dtype) for t in orders[-1]
                           if is_target(t)]))
        if tables is None or raised is not None:
            continue
        if progress.upstream_error is not None:
            raised = progress.upstream_error
            continue
        below = ([orders[0]] + weighted)[-1]
        targets = [t for t in below if is_target(t)]
        try:
            chain.append(_sum([_contracted(acc.jvp(t), source.dtype,
                                           upstream_weights(tables, order, i, t))
                               for i, t in enumerate(targets)]))
        except Exception as e:  # noqa: BLE001 - the weighted chain's alone: the plain values stand
            raised = (e, f"order {order} with upstream weights")
    weighted_gradient = (None if tables is None
                         or raised is not None else _assembled(chain, source, options))
    return _assembled(plain, source, options), weighted_gradient, raised


def _sum(jvps: Sequence):
    jvps = [j for j in jvps if j is not None]
    return tf.add_n(jvps) if jvps else None


def _assembled(elements: Sequence, source, options: RunOptions):
    if all(e is None for e in elements):
        return tf.zeros_like(source) if options.unconnected_zero else None
    zero = tf.zeros([], source.dtype)
    return tf.reshape(tf.stack([zero if e is None else e for e in elements]), source.shape)


def _contracted(jvp, dtype, weights=None):
    """One target's JVP summed over its elements (times `weights` when given), in the source's
    dtype.

    A complex target of a real source keeps the real part, as reverse mode
    does: the tape's unit cotangent reaches a real input as Re(J) (the
    gradients of tf.complex and of a cast to a real dtype take the real part);
    the weights are real, so Re(w J) = w Re(J) as well.
    """
    if jvp is None:
        return None
    if weights is not None:
        jvp = jvp * weights
    if jvp.dtype.is_complex and not dtype.is_complex:
        jvp = tf.math.real(jvp)
    return tf.reduce_sum(tf.cast(jvp, dtype))


def _numpy(t):
    return None if t is None else t.numpy()
