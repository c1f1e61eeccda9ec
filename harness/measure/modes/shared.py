"""What the modes share, and nothing else: the TensorFlow import, the function under test as a
`Subject`, the order-k contraction on nested tapes (plain and weighted), where a build is
(`Steps`), and turning tensors and exceptions into records.

Order k is the gradient of the sum of the order k-1 gradients with respect to
the same inputs: what `tf.gradients(list_of_ys, xs)` and a tape's
`gradient(list_of_targets, sources)` both compute, since each sums over its
targets. Only floating and complex outputs are targets; an integer side output
is reported at order 0 and not differentiated.

What belongs here is code more than one mode runs, in the worker (or the SavedModel
restorer process), with TensorFlow imported. Code the main process runs, or that needs
no TensorFlow, belongs elsewhere: records and their rules in harness.records, comparison
in harness.criteria.compare, judging in harness.judge.verdict. Importing this module imports
TensorFlow.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np
import tensorflow as tf
from tensorflow.python.autograph.core import converter as _autograph_converter
from tensorflow.python.autograph.impl import api as _autograph

from harness.measure import probe
from harness.measure import upstream
from harness.case import Case, Point
from harness.records import (
    Differentiated,
    ErrorInfo,
    ModeOutcome,
    Output,
    RunOptions,
    Status,
    error_info,
)

__all__ = ["tf", "Steps", "Subject", "build_subject", "build_error", "portable", "restored",
           "unconnected", "is_target", "flat_outputs", "tape_orders", "tape_chains",
           "upstream_weights", "upstream_tables", "order_stage", "dense", "traced_as_is", "forward"]


class Steps:
    """Where a mode's build is ("forward", "order 2", ...) and what it finished so far. (The
    progress line of a run is harness.cli.progress.Progress.)

    Mode code sets `stage` before each step, so an exception escaping from
    anywhere is recorded with the step it happened in.
    """

    def __init__(self):
        self.stage = "forward"
        self.done: list[list[Any]] = []
        self.error: Optional[BaseException] = None  # set when building stopped early
        # The weighted chain (harness.measure.upstream): its orders 1.. as they finish, and
        # (exception, stage) when it raised where the plain chain did not.
        self.upstream: list[list[Any]] = []
        self.upstream_error: Optional[tuple[BaseException, str]] = None
        # The linearity chain (upstream.LINEAR): order 1 with the upstream gradient a + b w.
        self.linear: list[Any] = []
        self.linear_error: Optional[tuple[BaseException, str]] = None


_BF16_TAG = "harness:bfloat16-as-float32"


def portable(obj: Any) -> Any:
    """`obj` (lists, tuples and dicts of NumPy values) with every bfloat16 value tagged and held as
    float32 (exactly), for pickle: the bfloat16 NumPy type TensorFlow 2.12 and 2.13 define
    cannot be pickled, as pickle cannot find the class. `restored` undoes it."""
    if isinstance(obj, (np.ndarray, np.generic)) and obj.dtype.name == "bfloat16":
        return (_BF16_TAG, np.asarray(obj, dtype=np.float32))
    if isinstance(obj, (list, tuple)):
        return type(obj)(portable(o) for o in obj)
    if isinstance(obj, dict):
        return {k: portable(v) for k, v in obj.items()}
    return obj


def restored(obj: Any) -> Any:
    """What `portable` was given, with this TensorFlow's own bfloat16 type."""
    if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == _BF16_TAG:
        return obj[1].astype(tf.bfloat16.as_numpy_dtype)
    if isinstance(obj, (list, tuple)):
        return type(obj)(restored(o) for o in obj)
    if isinstance(obj, dict):
        return {k: restored(v) for k, v in obj.items()}
    return obj


def unconnected(options: RunOptions):
    return (tf.UnconnectedGradients.ZERO if options.unconnected_zero
            else tf.UnconnectedGradients.NONE)


def is_target(t) -> bool:
    return t is not None and (t.dtype.is_floating or t.dtype.is_complex)


def _numeric(dtype) -> bool:
    return dtype.is_floating or dtype.is_complex or dtype.is_integer or dtype.is_bool


def flat_outputs(result: Any) -> list:
    """The function's outputs flattened with tf.nest, each as a tensor.

    Raises:
      TypeError: an output is not a number (a string, say): nothing of it can
        be compared or differentiated, so the mode's outcome is this error.
    """
    outputs = [tf.convert_to_tensor(t) for t in tf.nest.flatten(result)]
    for t in outputs:
        if not _numeric(t.dtype):
            raise TypeError(f"the function returned a tf.{t.dtype.name} output; return numbers or "
                            "tensors")
    return outputs


def order_stage(k: int, order: int) -> str:
    """The stage of order k's gradient on nested tapes computing up to `order`:
    below the last order, the tapes of the orders above are recording it."""
    if k >= order:
        return f"order {k}"
    above = f"order {k + 1}" if k + 1 == order else f"orders {k + 1} to {order}"
    return f"order {k}, while recording for {above}"


def upstream_weights(tables, order: int, index: int, target):
    """The upstream weights (harness.measure.upstream) for target `index` of the order - 1 outputs,
    as a tensor shaped like `target`, from the float64 `tables` tensor (upstream.tables,
    flattened). A target of unknown shape is served from its dynamic size, so any mode can
    make it; the cast is exact, every weight being a multiple of 1/8."""
    offset = ((order - 1) * upstream.TARGETS + index % upstream.TARGETS) * upstream.PERIOD
    if target.shape.is_fully_defined():
        # Indices shaped like the target, so that what they pick has its shape.
        picks = (offset + np.arange(target.shape.num_elements()) % upstream.PERIOD).reshape(
            target.shape.as_list())
        if tf.executing_eagerly():
            # The same picks and cast in NumPy: one constant where eager ops would be two.
            return tf.constant(np.asarray(tables)[picks].astype(target.dtype.as_numpy_dtype))
        # Two raw ops: each op a trace builds costs Python time, and tf.gather's and tf.cast's
        # wrappers more; indices shaped like the target need no reshape.
        return tf.raw_ops.Cast(x=tf.raw_ops.GatherV2(params=tables, indices=picks, axis=0),
                               DstT=target.dtype)
    picked = tf.gather(tables, offset + tf.range(tf.size(target)) % upstream.PERIOD)
    return tf.reshape(tf.cast(picked, target.dtype), tf.shape(target))


def tape_orders(subject: "Subject", xs: Sequence, order: int, options: RunOptions,
                progress: Steps) -> list[list]:
    """Orders 0..order of the subject's function at xs with nested GradientTapes, eager or traced.

    The tape for order k is opened around everything that computes order k-1,
    so the order k-1 gradient computation is itself recorded.
    """
    return _nest(subject, xs, order, options, progress, None)


def tape_chains(subject: "Subject", xs: Sequence, order: int, options: RunOptions, progress: Steps,
                tables, autograph: bool = False,
                linear: bool = False) -> tuple[list[list], list[list]]:
    """The plain orders 0..order and, with weight `tables`, the weighted chain's orders 1..order.

    Order k of the weighted chain is the gradient of its order k-1 outputs
    (order 0: the function's outputs) with the weights as their upstream
    gradient (`tables`: upstream.tables as a tensor, or None). Each chain has
    its own forward and its own nest of tapes, one non-persistent tape per
    order: one more tape, or a persistent one, would change what TensorFlow
    does (a tf.function called under more than one tape, or a persistent one,
    records its higher-order gradient functions: _select_forward_and_backward_functions
    in eager/polymorphic_function/concrete_function.py), so the plain values are
    exactly those of `tape_orders`. An exception in the weighted chain alone
    stops it and is kept in `progress.upstream_error` with its stage.

    `autograph`: called while a tf.function with AutoGraph traces (see `traced_as_is`).
    `linear`: with `tables`, also order 1 with the linearity check's upstream gradient
    (upstream.LINEAR), on a forward of its own, into `progress.linear`; what it raises goes to
    `progress.linear_error`, costing neither chain.
    """
    orders = _nest(subject, xs, order, options, progress, None, autograph)
    if tables is None or order == 0:  # order 0 of both chains is the function's outputs
        return orders, []
    chain = Steps()
    try:
        # Tensors of its own: a function that caches its result by input tensor (a bijector's cache)
        # would hand this chain the plain chain's output, recorded on the plain chain's tapes.
        own = [tf.identity(x) if isinstance(x, tf.Tensor) else x for x in xs]
        weighted = _nest(subject, own, order, options, chain, tables, autograph)
    except Exception as e:  # noqa: BLE001 - the case's code given a non-unit upstream gradient
        progress.upstream = chain.done[1:]
        progress.upstream_error = (e, f"{chain.stage} with upstream weights")
        return orders, progress.upstream
    progress.upstream = weighted[1:]
    if linear:
        _linear_chain(subject, xs, options, progress, tables, autograph)
    return orders, progress.upstream


def linear_tables(tables):
    """The tables giving the linearity chain's upstream gradient a + b w (upstream.LINEAR)."""
    a, b = upstream.LINEAR
    return a + b * tables


def _linear_chain(subject: "Subject", xs: Sequence, options: RunOptions, progress: Steps, tables,
                  autograph: bool) -> None:
    steps = Steps()
    try:
        own = [tf.identity(x) if isinstance(x, tf.Tensor) else x for x in xs]
        progress.linear = _nest(subject, own, 1, options, steps, linear_tables(tables),
                                autograph)[1]
    except Exception as e:  # noqa: BLE001 - the case's code given another upstream gradient
        progress.linear_error = (e, f"{steps.stage} with the linearity check's upstream gradient")


def _nest(subject: "Subject", xs: Sequence, order: int, options: RunOptions, progress: Steps,
          tables, autograph: bool = False) -> list[list]:
    """One chain on nested tapes: plain (`tables` None) or weighted."""
    sources = subject.sources(xs)

    def upto(k: int) -> list[list]:
        if k == 0:
            progress.stage = "forward"
            orders = [flat_outputs(forward(subject.fn, xs, autograph))]
            progress.done.append(orders[0])
            return orders
        with tf.GradientTape(persistent=False) as tape:
            tape.watch(sources)
            orders = upto(k - 1)
        progress.stage = order_stage(k, order)
        targets = [t for t in orders[-1] if is_target(t)]
        if not targets:
            grads = [tf.zeros_like(s) if options.unconnected_zero else None for s in sources]
        else:
            keywords = {"unconnected_gradients": unconnected(options)}
            if tables is not None:
                keywords["output_gradients"] = [upstream_weights(tables, k, i, t)
                                                for i, t in enumerate(targets)]
            grads = _tape_gradient(tape, targets, sources, keywords, autograph)
        orders.append([dense(g) for g in grads])
        progress.done.append(orders[-1])
        return orders

    return upto(order)


# tf.function converts the Python function it traces with AutoGraph, and with it every function
# that one calls, recursively (converted_call in tensorflow/python/autograph/impl/api.py). The
# harness's own code around the case (the nested tapes, both chains, the records) branches on
# Python values only, so converting it changes nothing but costs about a second of AST work the
# first time in every worker. So the function a mode traces is an AutoGraph artifact, called as
# it is (`traced_as_is`), and only the two calls that run the case's code go through AutoGraph,
# as from the converted caller a user's own tf.function would have: the forward, and the tape's
# gradient, which calls the case's grad_fn. The case's function is then converted, or called as it
# is (a tf.custom_gradient is TensorFlow's code, which AutoGraph leaves alone), exactly as there;
# and what it raises passes a converted frame, so tf.function rewrites it as there ("in user
# code:", a class with an unusual constructor becoming StagingError).
# What tf.function passes (autograph_handler in eager/polymorphic_function/autograph_util.py, with
# its default experimental_autograph_options=None: no optional features, so no name scopes).
_CONVERTED = _autograph_converter.ConversionOptions(recursive=True, user_requested=True,
                                                    optional_features=None)


def traced_as_is(fn: Callable) -> Callable:
    """`fn`, marked so that tf.function's AutoGraph calls it as it is instead of converting it;
    the `autograph=True` tape_chains under it converts what runs the case's code."""
    return _autograph.autograph_artifact(fn)


def forward(fn: Callable, xs: Sequence, autograph: bool = False):
    """`fn(*xs)`; with `autograph`, as a function tf.function converted would call it."""
    return _converted(_call, fn, xs) if autograph else fn(*xs)


def _tape_gradient(tape, targets, sources, keywords: dict, autograph: bool):
    """`tape.gradient(targets, sources, **keywords)`, which calls the case's grad_fn; with
    `autograph`, as a function tf.function converted would call it."""
    if autograph:
        return _converted(_gradient, tape, targets, sources, keywords)
    return _gradient(tape, targets, sources, keywords)


# The one-line callers AutoGraph converts, as it converts a user's function around the case.
def _call(fn, xs):
    return fn(*xs)


def _gradient(tape, targets, sources, keywords):
    return tape.gradient(targets, sources, **keywords)


def _converted(helper: Callable, *args):
    """`helper(*args)` converted by AutoGraph, as tf.function converts the function it traces."""
    return _autograph.converted_call(helper, args, None, options=_CONVERTED)


def dense(gradient):
    """A gradient as a dense tensor: tf.gather's IndexedSlices are summed into one."""
    if isinstance(gradient, tf.IndexedSlices):
        return tf.convert_to_tensor(gradient)
    return gradient


class Subject:
    """The function under test in one mode, and what it is differentiated with respect to.

    Built by `build_subject` inside the mode's graph or context; the variables
    are the trainable ones the case's builder created, in creation order.
    """

    def __init__(self, case: Case, fn: Callable, variables: Sequence, created: Sequence = ()):
        self.case = case
        self.fn = fn
        self.variables = list(variables)
        self.created = list(created)  # every variable the builder made, differentiated or not

    def sources(self, xs: Sequence) -> list:
        return [xs[i] for i in self.case.wrt_indices] + self.variables

    def records(self, point: Point) -> tuple[Differentiated, ...]:
        args = [Differentiated(name=n, dtype=point.values[i].dtype.name,
                               shape=tuple(point.values[i].shape))
                for n, i in zip(self.case.wrt, self.case.wrt_indices)]
        return tuple(args) + tuple(Differentiated(name=f"var{i}", dtype=v.dtype.base_dtype.name,
                                                  shape=tuple(v.shape.as_list()))
                                   for i, v in enumerate(self.variables))

    def ok(self, mode: str, orders: Sequence[Sequence], point: Point,
           weighted: Sequence[Sequence] = (),
           weighted_error: Optional[tuple[BaseException, str]] = None,
           linear: Sequence = (),
           linear_error: Optional[tuple[BaseException, str]] = None) -> ModeOutcome:
        """An OK outcome from NumPy values (or None) per order, the weighted chain's, and the
        linearity chain's order 1."""
        sources = self.records(point)
        return ModeOutcome(mode=mode, status=Status.OK, orders=_records(orders, sources),
                           sources=sources, upstream=_records_from(weighted, sources),
                           upstream_error=_error_of(weighted_error),
                           linear=_to_outputs(linear, sources) if linear else (),
                           linear_error=_error_of(linear_error))

    def error(self, mode: str, exc: BaseException, stage: str, point: Point,
              partial: Sequence[Sequence] = ()) -> ModeOutcome:
        """An ERROR outcome, keeping the orders computed before the exception."""
        sources = self.records(point)
        return ModeOutcome(mode=mode, status=Status.ERROR, orders=_records(partial, sources),
                           error=error_info(exc, stage), sources=sources)


def upstream_tables(case: Case, point: Point, options: RunOptions) -> Optional[np.ndarray]:
    """The weighted chain's tables at `point`, flat float64, or None when the upstream check is
    off."""
    return (upstream.flat_tables(upstream.seed(case.id, point.label), case.order)
            if options.upstream else None)


def _error_of(raised: Optional[tuple[BaseException, str]]) -> Optional[ErrorInfo]:
    return None if raised is None else error_info(raised[0], raised[1])


def build_subject(case: Case) -> Subject:
    """Calls the case's builder (if any) in the current graph or context.

    Raises:
      TypeError: the builder returned something that is not callable.
      ValueError: the case differentiates variables but the builder made none.
    """
    if case.fn is not None:
        return Subject(case, case.fn, [])
    created = []

    def record(next_creator, **kwargs):
        variable = next_creator(**kwargs)
        created.append(variable)
        return variable

    with tf.variable_creator_scope(record), probe.paused():
        fn = case.build()
    if not callable(fn):
        raise TypeError(f"build() returned {type(fn).__name__}, not a callable; return the "
                        "function under test")
    # Only floating and complex variables have gradients: tf-keras models also create
    # int64 step counters, trainable by tf.Variable's default, in eager mode only.
    variables = [v for v in created if v.trainable and is_target(v)] if case.wrt_variables else []
    if case.wrt_variables and not variables:
        raise ValueError("wrt_variables is set but build() created no trainable variable; create "
                         "the variables (or build the Keras layers) inside build()")
    return Subject(case, fn, variables, created)


def build_error(case: Case, mode: str, exc: BaseException,
                points: Sequence[Point]) -> list[ModeOutcome]:
    """Every point's outcome when the builder itself raised."""
    return [Subject(case, None, []).error(mode, exc, "build", p) for p in points]


def _to_outputs(values: Sequence, like: Optional[Sequence[Differentiated]]) -> tuple[Output, ...]:
    outs = []
    for i, v in enumerate(values):
        if v is None:
            x = like[i] if like is not None and i < len(like) else None
            outs.append(Output.of(None, x.dtype if x else "", x.shape if x else ()))
        else:
            outs.append(Output.of(np.asarray(v)))
    return tuple(outs)


def _records(orders: Sequence[Sequence],
             sources: Sequence[Differentiated]) -> tuple[tuple[Output, ...], ...]:
    return tuple(_to_outputs(o, None if k == 0 else sources) for k, o in enumerate(orders))


def _records_from(weighted: Sequence[Sequence],
                  sources: Sequence[Differentiated]) -> tuple[tuple[Output, ...], ...]:
    """Orders 1.. of the weighted chain: every one is a gradient per source."""
    return tuple(_to_outputs(o, sources) for o in weighted)
