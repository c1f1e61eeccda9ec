"""Mode `graph`: a fresh tf.Graph, repeated tf.gradients and a tf.compat.v1.Session, exactly as the
StackOverflow seed runs it, without touching the global eager switch.

One graph per case and input signature is built once with placeholders and fed for every point of
that signature.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from harness.measure import upstream
from harness.case import Case, Point
from harness.measure.modes import _reuse
from harness.measure.modes.shared import (
    Steps,
    Subject,
    build_error,
    build_subject,
    dense,
    flat_outputs,
    is_target,
    linear_tables,
    tf,
    unconnected,
    upstream_tables,
    upstream_weights,
)
from harness.records import ModeOutcome, RunOptions

NAME = "graph"


def _gradient_orders(subject: Subject, xs, order: int, options: RunOptions, progress: Steps,
                     tables):
    """Builds the plain orders into progress.done and, with `tables`, the weighted chain
    (grad_ys: the upstream weights) into progress.upstream."""
    sources = subject.sources(xs)
    progress.stage = "forward"
    progress.done.append(flat_outputs(subject.fn(*xs)))
    weighted = progress.done[0]
    for k in range(1, order + 1):
        progress.stage = f"order {k}"
        progress.done.append(_gradients(progress.done[-1], sources, options))
        if tables is None or progress.upstream_error is not None:
            continue
        try:
            weighted = _gradients(weighted, sources, options,
                                  lambda i, t: upstream_weights(tables, k, i, t))
            progress.upstream.append(weighted)
        except Exception as e:  # noqa: BLE001 - the case's grad_fn given a non-unit upstream
            progress.upstream_error = (e, f"order {k} with upstream weights")
    if tables is None or progress.upstream_error is not None:
        return
    # The linearity chain: order 1 of the same forward with upstream gradient a + b w.
    progress.stage = "order 1 with the linearity check's upstream gradient"
    try:
        lin = linear_tables(tables)
        progress.linear = _gradients(progress.done[0], sources, options,
                                     lambda i, t: upstream_weights(lin, 1, i, t))
    except Exception as e:  # noqa: BLE001 - the case's grad_fn given another upstream gradient
        progress.linear_error = (e, progress.stage)
    progress.stage = f"order {order}"


def _gradients(outputs, sources, options: RunOptions, weight=None) -> list:
    """tf.gradients of the target outputs, with grad_ys weight(i, target) when given."""
    targets = [t for t in outputs if is_target(t)]
    if not targets:
        return [tf.zeros_like(s) if options.unconnected_zero else None for s in sources]
    if weight is not None:
        grad_ys = [weight(i, t) for i, t in enumerate(targets)]
    else:
        # tf.gradients starts a complex output from no default (it raises "must set grad_ys"),
        # where a tape starts it from ones (1 + 0j): the same contraction needs them spelled out.
        grad_ys = [tf.ones_like(t) if t.dtype.is_complex else None for t in targets]
    return [dense(g) for g in tf.gradients(targets, sources, grad_ys=grad_ys,
                                           unconnected_gradients=unconnected(options))]


def _fetch(session, orders, feed):
    """Runs the non-None tensors of `orders`, keeping None where there is no tensor."""
    flat = [t for o in orders for t in o if t is not None]
    values = iter(session.run(flat, feed_dict=feed))
    return [[None if t is None else next(values) for t in o] for o in orders]


def _run_point(name: str, session, progress: Steps, feed, subject: Subject, point: Point,
               built_all: bool) -> ModeOutcome:
    orders, chain = progress.done, progress.upstream
    if built_all:
        linear = [progress.linear] if progress.linear else []
        try:
            values = _fetch(session, orders + chain + linear, feed)
            return subject.ok(name, values[:len(orders)], point,
                              values[len(orders):len(orders) + len(chain)],
                              progress.upstream_error, values[-1] if linear else (),
                              progress.linear_error)
        except Exception:  # noqa: BLE001 - found again below, with the order it belongs to
            pass
    # Either building stopped at an order, or running failed somewhere: run order by order to keep
    # what works and name the order that does not.
    done = []
    for k, order in enumerate(orders):
        try:
            done += _fetch(session, [order], feed)
        except Exception as e:  # noqa: BLE001
            return subject.error(name, e, "forward" if k == 0 else f"order {k}", point, done)
    if not built_all:
        return subject.error(name, progress.error, progress.stage, point, done)
    # Every plain order runs on its own: the weighted chain, or the linearity chain, is what failed.
    weighted, raised = [], progress.upstream_error
    for k, order in enumerate(chain, start=1):
        try:
            weighted += _fetch(session, [order], feed)
        except Exception as e:  # noqa: BLE001
            raised = (e, f"order {k} with upstream weights")
            break
    linear, linear_raised = (), progress.linear_error
    if progress.linear and raised is None:
        try:
            linear = _fetch(session, [progress.linear], feed)[0]
        except Exception as e:  # noqa: BLE001 - the linearity chain's own failure
            linear_raised = (e, "order 1 with the linearity check's upstream gradient")
    return subject.ok(name, done, point, weighted, raised, linear, linear_raised)


class _Built:
    """One case's graph for one input signature and set of options, with its open session;
    `error` is set when the builder raised (the graph holds nothing to run)."""

    def __init__(self, case: Case, point: Point, options: RunOptions,
                 wrap: Optional[Callable[[Subject], Subject]] = None,
                 order: Optional[int] = None):
        self.graph = tf.Graph()
        self.progress = Steps()
        self.error = None
        self.session = None
        with self.graph.as_default():
            self.placeholders = [
                tf.compat.v1.placeholder(tf.as_dtype(v.dtype), shape=v.shape, name=n)
                for n, v in zip(point.names, point.values)]
            self.tables = None
            if options.upstream:
                self.tables = tf.compat.v1.placeholder(
                    tf.float64, shape=(case.order * upstream.TARGETS * upstream.PERIOD,),
                    name="upstream_weights")
            try:
                self.subject = build_subject(case)
                self.subject = wrap(self.subject) if wrap else self.subject
            except Exception as e:  # noqa: BLE001 - the case's own code may raise anything
                self.error = e
                return
            try:
                _gradient_orders(self.subject, self.placeholders,
                                 case.order if order is None else order, options,
                                 self.progress, self.tables)
            except Exception as e:  # noqa: BLE001
                self.progress.error = e
            init = tf.compat.v1.global_variables_initializer()
        self.built_all = self.progress.error is None
        self.session = tf.compat.v1.Session(graph=self.graph)
        try:
            self.session.run(init)
        except Exception as e:  # noqa: BLE001
            self.init_error = e
        else:
            self.init_error = None

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None


def _run_signature(name: str, case: Case, points: Sequence[Point], options: RunOptions,
                   wrap: Optional[Callable[[Subject], Subject]],
                   order: Optional[int]) -> list[ModeOutcome]:
    key = (name, case.id, options, points[0].signature)
    built = _reuse.reused(key, lambda: _Built(case, points[0], options, wrap, order))
    try:
        if built.error is not None:
            return build_error(case, name, built.error, points)
        if built.init_error is not None:
            return [built.subject.error(name, built.init_error, "build", p) for p in points]
        outcomes = []
        for p in points:
            feed = dict(zip(built.placeholders, p.values))
            if built.tables is not None:
                feed[built.tables] = upstream_tables(case, p, options)
            outcomes.append(_run_point(name, built.session, built.progress, feed, built.subject, p,
                                       built.built_all))
        _reuse.observed(built)
        return outcomes
    finally:
        if not _reuse.keeping():
            built.close()


def run(case: Case, options: RunOptions) -> list[ModeOutcome]:
    """Runs every point of `case`, building one graph per input signature."""
    return run_as(NAME, case, options)


def run_as(name: str, case: Case, options: RunOptions,
           wrap: Optional[Callable[[Subject], Subject]] = None,
           order: Optional[int] = None) -> list[ModeOutcome]:
    """This mode's run, named `name`, of the subject `wrap` makes of the case's (a context's,
    harness.measure.modes.contexts), to `order` (the case's unless given)."""
    groups: dict = {}
    for index, point in enumerate(case.points):
        groups.setdefault(point.signature, []).append(index)
    outcomes: list = [None] * len(case.points)
    for indices in groups.values():
        results = _run_signature(name, case, [case.points[i] for i in indices], options, wrap,
                                 order)
        for i, outcome in zip(indices, results):
            outcomes[i] = outcome
    return outcomes
