"""The context modes: the case's call put inside something TensorFlow differentiates by a route of
its own, run in a plain mode (eager, function or graph) and compared with the plain call.

Each context is a row of harness.mode_names.CONTEXTS, and each of its bases one mode
`<context>_<base>`. What the routes are:

- cond: the call is a tf.cond branch (the other branch returns zeros of the same dtypes). Under
  tf.function and in a v1 graph, cond_v2 traces the branch into a FuncGraph of its own, captures
  what it closes over, and differentiates the If op by rewriting it to output its intermediates
  (_IfGrad in tensorflow/python/ops/cond_v2.py). In eager, tf.cond calls the branch as it is
  (_eager_cond_implementation in tensorflow/python/ops/cond.py): the eager mode's route.
- while_loop: the call is the body of a tf.while_loop run once; while_v2 accumulates the body's
  intermediates and differentiates the loop by a loop of its own (while_v2.py). In eager the loop
  is a Python loop.
- map_fn, vectorized_map: the call maps over a batch of one, the point itself given a leading
  axis, and the one result is the call's. map_fn's body is a while_loop with TensorArrays;
  vectorized_map converts the body's ops into batched ones with pfor (falling back to a loop where
  an op has no converter), in eager inside a tf.function it makes itself.
- jacobian, jacobian_loop: GradientTape.jacobian of each output, with pfor or with a while loop
  (experimental_use_pfor=False), its rows contracted with the upstream gradient the plain
  gradient uses (ones, the weights, the linearity check's a + b w): the same gradient when the
  custom gradient is linear in its upstream gradient, from a one-hot upstream gradient per row.
- batch_jacobian, batch_jacobian_loop: GradientTape.batch_jacobian of each output with respect to
  each differentiated input, both given a leading batch of one, contracted the same way.
- recompute_grad: the call wrapped in tf.recompute_grad, whose own custom gradient runs the call
  again under a tape of its own.

The call's outputs are carried as the flat list of tensors shared.flat_outputs makes, so every
context returns what the plain call does, and the plain modes' records compare with them as they
are. Every context computes order 1 only (its outcome's `top_order`): its outputs, and the plain,
weighted and linearity chains' first order, compared with its base mode's.

Importing this module imports TensorFlow.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Optional, Sequence

from harness import mode_names
from harness.case import Case
from harness.measure import probe
from harness.measure.modes import eager, function, graph
from harness.measure.modes.shared import (
    Steps,
    Subject,
    build_error,
    build_subject,
    dense,
    flat_outputs,
    forward,
    is_target,
    tf,
    traced_as_is,
    unconnected,
)
from harness.records import ModeOutcome, RunOptions, Status

__all__ = ["runner_for", "why_not"]


def why_not(context: mode_names.Context, case: Case) -> Optional[str]:
    """Why `context` does not apply to `case`, or None where it does."""
    if context.batched and case.wrt_variables:
        return ("batch_jacobian differentiates batched inputs only, and this case differentiates "
                "variables: jacobian covers them")
    if context.batched and not case.wrt:
        return "batch_jacobian differentiates batched inputs, and this case differentiates none"
    return None


def runner_for(name: str) -> "_Runner":
    row = mode_names.ROWS[name]
    return _Runner(name, mode_names.CONTEXTS[row.context], row.base)


@dataclasses.dataclass(frozen=True)
class _Runner:
    name: str
    context: mode_names.Context
    base: str

    def run(self, case: Case, options: RunOptions) -> list[ModeOutcome]:
        why = why_not(self.context, case)
        if why is not None:
            return [ModeOutcome(mode=self.name, status=Status.SKIP, note=why)
                    for _ in case.points]
        if self.context.jacobian:
            return _jacobian_run(self.name, self.context, self.base, case, options)
        autograph = mode_names.ROWS[self.name].autograph
        wrap = functools.partial(_wrapped, _WRAPPERS[self.context.name], autograph)
        # The plain chain only: the weighted and linearity chains judge grad_fn's use of its
        # upstream gradient, which the plain modes already show; a context is judged by what
        # its route changes at the plain contraction, at a third of the cost. (One gradient per
        # forward matters for a graph's tf.cond too: tf.gradients taken a second time through a
        # cond holding a custom gradient differentiates the branch's body instead, NaN for
        # docs.log1pexp at x = 100 on 2.21.0, a relative of tensorflow#43631.)
        options = dataclasses.replace(options, upstream=False)
        if self.base == "eager":
            outcomes = eager.run_as(self.name, case, options, wrap, order=1)
        elif self.base == "function":
            outcomes = function.run_compiled(self.name, case, options, wrap, order=1)
        else:
            outcomes = graph.run_as(self.name, case, options, wrap, order=1)
        return [dataclasses.replace(o, top_order=1) for o in outcomes]


def _wrapped(wrapper: Callable, autograph: bool, subject: Subject) -> Subject:
    """The subject whose function is `subject`'s call inside the context."""
    call = traced_as_is(functools.partial(wrapper, subject.fn, autograph))
    return Subject(subject.case, call, subject.variables, subject.created)


def _outputs(fn: Callable, xs: Sequence, autograph: bool) -> list:
    """The call's flat outputs; with `autograph`, called as a converted function calls it (what a
    user's tf.function around the context does)."""
    return flat_outputs(forward(fn, list(xs), autograph))


def _like(fn: Callable, xs: Sequence, autograph: bool) -> list:
    """Zeros like the call's outputs, from a call of its own that the probe does not count (a loop
    variable, a map's output dtypes); nothing differentiates through zeros."""
    with probe.paused():
        return [tf.zeros_like(t) for t in _outputs(fn, xs, autograph)]


def _cond(fn: Callable, autograph: bool, *xs) -> list:
    made: list = []

    def taken():
        outputs = _outputs(fn, xs, autograph)
        made[:] = outputs
        return outputs

    def other():  # never taken; traced after `taken`, whose outputs it matches
        return [tf.zeros([0 if d is None else d for d in t.shape.as_list()], t.dtype)
                if t.shape.rank is not None else tf.zeros([0], t.dtype) for t in made]

    return list(tf.cond(tf.constant(True), taken, other))


def _while_loop(fn: Callable, autograph: bool, *xs) -> list:
    first = _like(fn, xs, autograph)

    def body(i, *_):
        return (i + 1, *_outputs(fn, xs, autograph))

    return list(tf.while_loop(lambda i, *_: i < 1, body, (tf.constant(0), *first))[1:])


def _batch_of_one(xs: Sequence) -> list:
    return [tf.expand_dims(x, 0) for x in xs]


def _map_fn(fn: Callable, autograph: bool, *xs) -> list:
    dtypes = [t.dtype for t in _like(fn, xs, autograph)]
    mapped = tf.map_fn(lambda e: _outputs(fn, e, autograph), _batch_of_one(xs),
                       fn_output_signature=dtypes)
    return [t[0] for t in mapped]


def _vectorized_map(fn: Callable, autograph: bool, *xs) -> list:
    mapped = tf.vectorized_map(lambda e: _outputs(fn, e, autograph), _batch_of_one(xs))
    return [t[0] for t in mapped]


def _recompute_grad(fn: Callable, autograph: bool, *xs) -> list:
    return list(tf.recompute_grad(lambda *a: _outputs(fn, a, autograph))(*xs))


_WRAPPERS: dict[str, Callable] = {
    "cond": _cond,
    "while_loop": _while_loop,
    "map_fn": _map_fn,
    "vectorized_map": _vectorized_map,
    "recompute_grad": _recompute_grad,
}


# The jacobian contexts: order 1 from a jacobian's rows.

def _contract(weights, rows, rank: int):
    """sum_i weights_i rows_i over the target's `rank` axes leading `rows`, in the rows' dtype."""
    if rows is None:
        return None
    if weights.dtype.is_complex and not rows.dtype.is_complex:
        weights = tf.math.real(weights)
    weights = tf.cast(weights, rows.dtype)
    if rank == 0:
        return weights * rows
    flat = tf.reshape(rows, tf.concat([[-1], tf.shape(rows)[rank:]], 0))
    shaped = tf.reshape(weights, tf.concat([[-1], tf.ones([tf.rank(flat) - 1], tf.int32)], 0))
    return tf.reduce_sum(shaped * flat, axis=0)


def _added(total, part):
    if part is None:
        return total
    return part if total is None else total + part


def _jacobian_orders(context: mode_names.Context, subject: Subject, xs: Sequence,
                     options: RunOptions,
                     progress: Steps, autograph: bool):
    """Outputs and order 1, from each output's jacobian (or batch jacobian) with respect to the
    sources, its rows contracted with ones, as the plain gradient's upstream gradient is.

    Only the plain contraction: a contraction of the same rows with the upstream weights differs
    from the weighted chain exactly where grad_fn is not linear in its upstream gradient, which
    the linearity oracle judges in every mode already. The tape is persistent only where the
    jacobian is taken more than once (several outputs, or batch_jacobian's several inputs) or
    TensorFlow asks for it, as a user's would be: a persistent tape is another route (cond_v2
    builds its branches as functions for it)."""
    pfor, batched = context.pfor, context.batched
    wrt = subject.case.wrt_indices
    sources = subject.sources(xs)
    progress.stage = "forward"
    # Without pfor, eager execution takes a persistent tape (GradientTape.jacobian raises
    # otherwise): the loop calls it once per row.
    persistent = (not pfor and tf.executing_eagerly()) or _jacobian_calls(
        subject, xs, autograph, batched) > 1
    with tf.GradientTape(persistent=persistent) as tape:
        if batched:
            # batch_jacobian takes rank 2 and above: each input and output is flattened into a
            # batch of one row, and the call given each input in its own shape.
            inputs = [tf.reshape(xs[i], [1, -1]) for i in wrt]
            tape.watch(inputs)
            args = list(xs)
            for j, i in enumerate(wrt):
                args[i] = tf.reshape(inputs[j][0], tf.shape(xs[i]))
            outputs = _outputs(subject.fn, args, autograph)
            rows_of = [tf.reshape(t, [1, -1]) for t in outputs if is_target(t)]
        else:
            tape.watch(sources)
            outputs = _outputs(subject.fn, xs, autograph)
    progress.done.append(outputs)
    progress.stage = f"order 1 ({context.name})"
    keywords = {"unconnected_gradients": unconnected(options), "experimental_use_pfor": pfor}
    grads = [None] * len(sources)
    for i, target in enumerate(t for t in outputs if is_target(t)):
        if batched:
            # [1, target's size, input's size]: its one batch, shaped target + input as a
            # jacobian's rows are.
            rows = [tape.batch_jacobian(rows_of[i], x, **keywords) for x in inputs]
            rows = [None if r is None else
                    tf.reshape(r[0], tf.concat([tf.shape(target), tf.shape(xs[k])], 0))
                    for r, k in zip(rows, wrt)]
        else:
            rows = tape.jacobian(target, sources, **keywords)
        for j, r in enumerate(rows):
            grads[j] = _added(grads[j], _contract(tf.ones_like(target), dense(r),
                                                  target.shape.rank))
    if options.unconnected_zero:
        grads = [tf.zeros_like(s) if g is None else g for g, s in zip(grads, sources)]
    progress.done.append(grads)
    return outputs, grads


def _jacobian_calls(subject: Subject, xs: Sequence, autograph: bool, batched: bool) -> int:
    """How many jacobians the context takes: one per output, times the inputs for
    batch_jacobian; the outputs counted on a call of their own that the probe does not count
    (a trace costs a forward, a jacobian a gradient per row)."""
    with probe.paused():
        outputs = sum(1 for t in _outputs(subject.fn, xs, autograph) if is_target(t))
    return outputs * (len(subject.case.wrt) if batched else 1)


def _values(tensors) -> list:
    return [None if t is None else t.numpy() for t in tensors]


def _jacobian_run(name: str, context: mode_names.Context, base: str, case: Case,
                  options: RunOptions) -> list[ModeOutcome]:
    try:
        subject = build_subject(case)
    except Exception as e:  # noqa: BLE001 - the case's own code may raise anything
        return build_error(case, name, e, case.points)
    autograph = base == "function"
    progress = Steps()

    def compute(*xs):
        progress.done = []
        outputs, grads = _jacobian_orders(context, subject, xs, options, progress, autograph)
        progress.stage = "run"
        return {"outputs": outputs, "grads": grads}

    run = tf.function(traced_as_is(compute)) if base == "function" else compute
    outcomes = []
    for point in case.points:
        progress.stage = "run" if base == "function" else "forward"
        try:
            xs = [tf.constant(v) for v in point.values]
            got = run(*xs)
            outcome = subject.ok(name, [_values(got["outputs"]), _values(got["grads"])],
                                 point)
            outcomes.append(dataclasses.replace(outcome, top_order=1))
        except Exception as e:  # noqa: BLE001
            outcomes.append(dataclasses.replace(
                subject.error(name, e, progress.stage, point), top_order=1))
    return outcomes
