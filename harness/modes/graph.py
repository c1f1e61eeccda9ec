"""Mode `graph`: a fresh tf.Graph, repeated tf.gradients and a tf.compat.v1.Session,
exactly as the StackOverflow seed runs it, without touching the global eager switch.

One graph per case and input signature is built once with placeholders and fed
for every point of that signature.
"""

from __future__ import annotations

from typing import Sequence

from harness.case import Case, Point
from harness.modes._tf import (Progress, Subject, build_error, build_subject, dense, flat_outputs, is_target,
                               tf, unconnected)
from harness.records import ModeOutcome, RunOptions

NAME = "graph"


def _gradient_orders(subject: Subject, xs, order: int, options: RunOptions, progress: Progress):
    sources = subject.sources(xs)
    progress.stage = "forward"
    progress.done.append(flat_outputs(subject.fn(*xs)))
    for k in range(1, order + 1):
        progress.stage = f"order {k}"
        targets = [t for t in progress.done[-1] if is_target(t)]
        if targets:
            grads = tf.gradients(targets, sources, unconnected_gradients=unconnected(options))
        else:
            grads = [tf.zeros_like(s) if options.unconnected_zero else None for s in sources]
        progress.done.append([dense(g) for g in grads])


def _fetch(session, orders, feed):
    """Runs the non-None tensors of `orders`, keeping None where there is no tensor."""
    flat = [t for o in orders for t in o if t is not None]
    values = iter(session.run(flat, feed_dict=feed))
    return [[None if t is None else next(values) for t in o] for o in orders]


def _run_point(session, orders, placeholders, subject: Subject, point: Point, built_all: bool,
               progress: Progress) -> ModeOutcome:
    feed = dict(zip(placeholders, point.values))
    if built_all:
        try:
            return subject.ok(NAME, _fetch(session, orders, feed), point)
        except Exception:  # noqa: BLE001 - found again below, with the order it belongs to
            pass
    # Either building stopped at an order, or running failed somewhere: run order
    # by order to keep what works and name the order that does not.
    done = []
    for k, order in enumerate(orders):
        try:
            done += _fetch(session, [order], feed)
        except Exception as e:  # noqa: BLE001
            return subject.error(NAME, e, "forward" if k == 0 else f"order {k}", point, done)
    if built_all:  # the whole fetch failed but every order ran on its own
        return subject.ok(NAME, done, point)
    return subject.error(NAME, progress.error, progress.stage, point, done)


def _run_signature(case: Case, points: Sequence[Point], options: RunOptions) -> list[ModeOutcome]:
    graph = tf.Graph()
    progress = Progress()
    with graph.as_default():
        placeholders = [tf.compat.v1.placeholder(tf.as_dtype(v.dtype), shape=v.shape, name=n)
                        for n, v in zip(points[0].names, points[0].values)]
        try:
            subject = build_subject(case)
        except Exception as e:  # noqa: BLE001 - the case's own code may raise anything
            return build_error(case, NAME, e, points)
        try:
            _gradient_orders(subject, placeholders, case.order, options, progress)
        except Exception as e:  # noqa: BLE001
            progress.error = e
        init = tf.compat.v1.global_variables_initializer()
    built_all = progress.error is None
    with tf.compat.v1.Session(graph=graph) as session:
        try:
            session.run(init)
        except Exception as e:  # noqa: BLE001
            return [subject.error(NAME, e, "build", p) for p in points]
        return [_run_point(session, progress.done, placeholders, subject, p, built_all, progress) for p in points]


def run(case: Case, options: RunOptions) -> list[ModeOutcome]:
    """Runs every point of `case`, building one graph per input signature."""
    groups: dict = {}
    for index, point in enumerate(case.points):
        groups.setdefault(point.signature, []).append(index)
    outcomes: list = [None] * len(case.points)
    for indices in groups.values():
        results = _run_signature(case, [case.points[i] for i in indices], options)
        for i, outcome in zip(indices, results):
            outcomes[i] = outcome
    return outcomes
