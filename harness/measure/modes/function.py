"""Mode `function`: the eager mode's tape code inside one tf.function per case.

The function is traced once per input signature (dtype and shape), not once
per point: inputs are passed as tensors, never as Python numbers.
"""

from __future__ import annotations

from typing import Callable, Optional

from harness.case import Case
from harness.measure.modes import _reuse
from harness.measure.modes.shared import (
    Steps,
    Subject,
    build_error,
    build_subject,
    tape_chains,
    tf,
    traced_as_is,
    upstream_tables,
)
from harness.records import ModeOutcome, RunOptions

NAME = "function"


def compile_subject(subject: Subject, order: int, options: RunOptions, progress: Steps,
                    weighted: bool = False, linear: bool = False, **function_options):
    """The tf.function computing every order; `progress` shows the stage while tracing.

    With `weighted`, it takes the upstream weight tables as its first input and
    also returns the weighted chain; what that chain raised while tracing is
    kept in `progress.upstream_errors`, by input signature, since a later call
    with the same signature does not trace again. `function_options` go to
    tf.function: the xla and no_autograph modes are this mode with
    jit_compile=True or autograph=False. With `linear` too, it also returns the linearity chain
    (shared.tape_chains), what that raised kept in `progress.linear_errors` by signature.
    """
    progress.upstream_errors = {}
    progress.linear_errors = {}
    autograph = function_options.get("autograph", True)

    @traced_as_is
    def all_orders(tables, *xs):
        progress.done = []  # symbolic values of a failed trace are of no use
        progress.upstream, progress.upstream_error = [], None
        progress.linear, progress.linear_error = [], None
        orders, chain = tape_chains(subject, xs, order, options, progress, tables,
                                    autograph=autograph, linear=linear and tables is not None)
        progress.upstream_errors[_signature(xs)] = progress.upstream_error
        progress.linear_errors[_signature(xs)] = progress.linear_error
        progress.stage = "run"
        return {"orders": orders, "upstream": chain, "linear": progress.linear}

    if weighted:
        return tf.function(all_orders, **function_options)
    return tf.function(traced_as_is(lambda *xs: all_orders(None, *xs)["orders"]),
                       **function_options)


def _signature(xs) -> tuple:
    return tuple((x.dtype.name, tuple(x.shape.as_list())) for x in xs)


def run(case: Case, options: RunOptions) -> list[ModeOutcome]:
    """Runs every point of `case`; the builder is called once, eagerly, outside the function."""
    return run_compiled(NAME, case, options)


def run_compiled(name: str, case: Case, options: RunOptions,
                 wrap: Optional[Callable[[Subject], Subject]] = None,
                 order: Optional[int] = None, **function_options) -> list[ModeOutcome]:
    """Runs every point of `case` through one tf.function made with `function_options`.

    With the upstream check on, the function computes both chains. Should it
    fail as a whole when run, the plain chain is run alone (a second function,
    made only then), so a weighted chain that cannot run never costs the
    plain values; the failure is then the weighted chain's. `wrap` makes the subject run of the
    case's (a context's, harness.measure.modes.contexts), computing to `order` (the case's unless
    given).
    """
    order = case.order if order is None else order
    key = (name, case.id, options, tuple(sorted(function_options.items())))

    def subject() -> Subject:
        built = build_subject(case)
        return wrap(built) if wrap else built

    try:
        built = _reuse.reused(key, lambda: _Built(subject(), order, options, function_options))
    except Exception as e:  # noqa: BLE001 - the case's own code may raise anything
        return build_error(case, name, e, case.points)
    outcomes = [_run_point(name, built, case, point, options) for point in case.points]
    _reuse.observed(built)
    return outcomes


class _Built:
    """A case's tf.function for one mode and set of options; the plain chain's is made only when
    needed."""

    def __init__(self, subject: Subject, order: int, options: RunOptions, function_options: dict):
        self.subject, self.order, self.options, self.function_options = (subject, order, options,
                                                                         function_options)
        self.progress = Steps()
        self.compiled = compile_subject(subject, order, options, self.progress,
                                        weighted=options.upstream, linear=options.upstream,
                                        **function_options)
        self.alone = Steps()
        self.plain = None

    def plain_chain(self):
        if self.plain is None:
            self.plain = compile_subject(self.subject, self.order, self.options, self.alone,
                                         **self.function_options)
        return self.plain


def _run_point(name: str, built: _Built, case: Case, point, options: RunOptions):
    subject, progress, compiled = built.subject, built.progress, built.compiled
    xs = [tf.constant(v) for v in point.values]
    # Stays "run" unless this call traces; a trace sets it step by step.
    progress.stage = "run"
    try:
        if not options.upstream:
            return subject.ok(name, _values(compiled(*xs)), point)
        both = compiled(tf.constant(upstream_tables(case, point, options)), *xs)
        raised = progress.upstream_errors.get(_signature(xs))
        if raised is None and len(both["upstream"]) != built.order:
            # Traced under another signature than this call's: what stopped the chain was not kept.
            raised = (RuntimeError("the weighted chain stopped after order "
                                   f"{len(both['upstream'])} while "
                                   "tracing"), "run with upstream weights")
        linear = [None if t is None else t.numpy() for t in both["linear"]]
        return subject.ok(name, _values(both["orders"]), point, _values(both["upstream"]), raised,
                          linear, progress.linear_errors.get(_signature(xs)))
    except Exception as e:  # noqa: BLE001
        failed, stage = e, progress.stage
    if not (options.upstream and stage == "run"):
        return subject.error(name, failed, stage, point)
    # It traced, so the plain chain traces too; run it alone to see whose failure it is.
    plain = built.plain_chain()
    built.alone.stage = "run"
    try:
        orders = plain(*xs)
    except Exception as e:  # noqa: BLE001 - the plain chain's own failure, as without the check
        return subject.error(name, e, built.alone.stage, point)
    return subject.ok(name, _values(orders), point, (), (failed, "run with upstream weights"))


def _values(orders):
    return [[None if t is None else t.numpy() for t in o] for o in orders]
