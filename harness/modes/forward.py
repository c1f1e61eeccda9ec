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
from harness.modes._tf import (Progress, Subject, build_error, build_subject, flat_outputs, is_target, tape_orders,
                               tf)
from harness.records import ModeOutcome, RunOptions, Status

NAME = "forward"

# harness.probe counts grad_fn calls, and here a call does not mean use: the
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
        stage, orders = "forward", []
        try:
            xs = [tf.constant(v) for v in point.values]
            orders.append(flat_outputs(subject.fn(*xs)))
            for k in range(1, case.order + 1):
                stage = f"order {k}"
                orders.append([_gradient(subject, xs, s, k, options) for s in subject.sources(xs)])
            outcomes.append(subject.ok(NAME, [[_numpy(t) for t in o] for o in orders], point))
        except Exception as e:  # noqa: BLE001
            outcomes.append(subject.error(NAME, e, stage, point, [[_numpy(t) for t in o] for o in orders]))
    return outcomes


def skip_note(subject: Subject, point: Point) -> Optional[str]:
    """Why forward mode does not apply at `point`, or None when it does."""
    sources = subject.records(point)
    complex_sources = [f"{s.name}: {s.dtype}" for s in sources if s.dtype.startswith("complex")]
    if complex_sources:
        # Seen on TF 2.21: for z**2 at 1+2j, the JVP along 1 is 2z = 2+4j where the
        # tape gives conj(2z) = 2-4j, and a real loss of z needs a second tangent, i.
        return (f"forward mode does not apply to complex sources ({', '.join(complex_sources)}): "
                "ForwardAccumulator watches floating primals only (forwardprop.py, _watch warns so) and "
                "its JVP along a real tangent is not the reverse-mode conj-convention gradient")
    count = sum(int(np.prod(s.shape, dtype=np.int64)) for s in sources)
    if count > MAX_ELEMENTS:
        sizes = ", ".join(f"{s.name}: {int(np.prod(s.shape, dtype=np.int64))}" for s in sources)
        return (f"forward mode needs one pass per source element: {count} elements ({sizes}) exceed "
                f"the limit of {MAX_ELEMENTS}")
    return None


def _gradient(subject: Subject, xs: Sequence, source, order: int, options: RunOptions):
    """Order `order`'s gradient for `source`, one forward pass per element of it.

    None when no element is connected (zeros with options.unconnected_zero);
    an unconnected element of a connected source is 0, as in reverse mode.
    """
    size = int(np.prod(source.shape.as_list(), dtype=np.int64))
    elements = []
    for j in range(size):
        tangent = np.zeros(size, source.dtype.as_numpy_dtype)
        tangent[j] = 1
        with tf.autodiff.ForwardAccumulator(primals=source, tangents=tangent.reshape(source.shape)) as acc:
            below = tape_orders(subject, xs, order - 1, options, Progress())[-1]
        jvps = [_contracted(jvp, source.dtype)
                for jvp in (acc.jvp(t) for t in below if is_target(t)) if jvp is not None]
        elements.append(tf.add_n(jvps) if jvps else None)
    if all(e is None for e in elements):
        return tf.zeros_like(source) if options.unconnected_zero else None
    zero = tf.zeros([], source.dtype)
    return tf.reshape(tf.stack([zero if e is None else e for e in elements]), source.shape)


def _contracted(jvp, dtype):
    """One target's JVP summed over its elements, in the source's dtype.

    A complex target of a real source keeps the real part, as reverse mode
    does: the tape's unit cotangent reaches a real input as Re(J) (the
    gradients of tf.complex and of a cast to a real dtype take the real part).
    """
    if jvp.dtype.is_complex and not dtype.is_complex:
        jvp = tf.math.real(jvp)
    return tf.reduce_sum(tf.cast(jvp, dtype))


def _numpy(t):
    return None if t is None else t.numpy()
