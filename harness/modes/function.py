"""Mode `function`: the eager mode's tape code inside one tf.function per case.

The function is traced once per input signature (dtype and shape), not once
per point: inputs are passed as tensors, never as Python numbers.
"""

from __future__ import annotations

from harness.case import Case
from harness.modes._tf import Progress, Subject, build_error, build_subject, tape_chains, tf, upstream_tables
from harness.records import ModeOutcome, RunOptions

NAME = "function"


def compile_subject(subject: Subject, order: int, options: RunOptions, progress: Progress, weighted: bool = False,
                    **function_options):
    """The tf.function computing every order; `progress` shows the stage while tracing.

    With `weighted`, it takes the upstream weight tables as its first input and
    also returns the weighted chain; what that chain raised while tracing is
    kept in `progress.upstream_errors`, by input signature, since a later call
    with the same signature does not trace again. `function_options` go to
    tf.function: the xla and no_autograph modes are this mode with
    jit_compile=True or autograph=False.
    """
    progress.upstream_errors = {}

    def all_orders(tables, *xs):
        progress.done = []  # symbolic values of a failed trace are of no use
        progress.upstream, progress.upstream_error = [], None
        orders, chain = tape_chains(subject, xs, order, options, progress, tables)
        progress.upstream_errors[_signature(xs)] = progress.upstream_error
        progress.stage = "run"
        return {"orders": orders, "upstream": chain}

    if weighted:
        return tf.function(all_orders, **function_options)
    return tf.function(lambda *xs: all_orders(None, *xs)["orders"], **function_options)


def _signature(xs) -> tuple:
    return tuple((x.dtype.name, tuple(x.shape.as_list())) for x in xs)


def run(case: Case, options: RunOptions) -> list[ModeOutcome]:
    """Runs every point of `case`; the builder is called once, eagerly, outside the function."""
    return run_compiled(NAME, case, options)


def run_compiled(name: str, case: Case, options: RunOptions, **function_options) -> list[ModeOutcome]:
    """Runs every point of `case` through one tf.function made with `function_options`.

    With the upstream check on, the function computes both chains. Should it
    fail as a whole when run, the plain chain is run alone (a second function,
    made only then), so a weighted chain that cannot run never costs the
    plain values; the failure is then the weighted chain's.
    """
    try:
        subject = build_subject(case)
    except Exception as e:  # noqa: BLE001 - the case's own code may raise anything
        return build_error(case, name, e, case.points)
    progress = Progress()
    compiled = compile_subject(subject, case.order, options, progress, weighted=options.upstream,
                               **function_options)
    plain = None
    outcomes = []
    for point in case.points:
        xs = [tf.constant(v) for v in point.values]
        # Stays "run" unless this call traces; a trace sets it step by step.
        progress.stage = "run"
        try:
            if not options.upstream:
                orders = compiled(*xs)
                outcomes.append(subject.ok(name, _values(orders), point))
                continue
            both = compiled(tf.constant(upstream_tables(case, point, options)), *xs)
            raised = progress.upstream_errors.get(_signature(xs))
            if raised is None and len(both["upstream"]) != case.order:
                # Traced under another signature than this call's: what stopped the chain was not kept.
                raised = (RuntimeError(f"the weighted chain stopped after order {len(both['upstream'])} while "
                                       "tracing"), "run with upstream weights")
            outcomes.append(subject.ok(name, _values(both["orders"]), point, _values(both["upstream"]), raised))
            continue
        except Exception as e:  # noqa: BLE001
            failed, stage = e, progress.stage
        if options.upstream and stage == "run":
            # It traced, so the plain chain traces too; run it alone to see whose failure it is.
            if plain is None:
                alone = Progress()
                plain = compile_subject(subject, case.order, options, alone, **function_options)
            alone.stage = "run"
            try:
                orders = plain(*xs)
            except Exception as e:  # noqa: BLE001 - the plain chain's own failure, as without the check
                outcomes.append(subject.error(name, e, alone.stage, point))
                continue
            outcomes.append(subject.ok(name, _values(orders), point, (), (failed, "run with upstream weights")))
            continue
        outcomes.append(subject.error(name, failed, stage, point))
    return outcomes


def _values(orders):
    return [[None if t is None else t.numpy() for t in o] for o in orders]
