"""The function mode traces what a user's own tf.function traces, though AutoGraph converts
none of the harness's code around the case (harness.measure.modes.shared, `traced_as_is`).

The yardstick here is a hand-written tf.function with nested tapes, the way the seeds and
scripts/_handwritten_seeds.py write it: AutoGraph converts that driver and, through it, the
function under test. The harness's traced function must give the same graph op for op, the
same values, and the same exceptions, rewritten by tf.function as for the hand-written one.
"""

import inspect

import numpy as np
import pytest
import tensorflow as tf

from harness.cases.structure import custom_cube
from harness.run_here import run_case
from harness.measure.modes import function as function_mode
from harness.measure.modes.shared import Steps, build_subject
from harness.records import RunOptions, Status
from tests.helpers import make_case

X = np.float32(3.0)


def handwritten(fn, order, **function_options):
    """Orders 0..order of fn on nested tapes, in one tf.function, as a user writes it."""
    def orders(xs, k):
        if k == 0:
            return [tf.nest.flatten(fn(*xs))]
        with tf.GradientTape() as tape:
            tape.watch(xs)
            done = orders(xs, k - 1)
        done.append(tape.gradient(done[-1], list(xs)))
        return done

    return tf.function(lambda *xs: orders(list(xs), order), **function_options)


def harness_function(fn, order, **function_options):
    argument = next(iter(inspect.signature(fn).parameters))  # one argument, whatever its name
    case = make_case(fn=fn, order=order, points=[{argument: X}])
    return function_mode.compile_subject(build_subject(case), order, RunOptions(upstream=False),
                                         Steps(), **function_options)


def branchy(x):
    # A Python `if` on a tensor: inside tf.function only AutoGraph's conversion (to tf.cond) traces
    # it.
    if x > 0:
        return x * x
    return -x


class CodedError(Exception):
    """An exception whose constructor is not Exception's: tf.function cannot rebuild it."""

    def __init__(self, code):
        super().__init__(f"failed with code {code}")


@tf.custom_gradient
def grad_raises(x):
    def grad(dy):
        raise CodedError(7)
    return x * x, grad


def _ops(function):
    graph = function.get_concrete_function(tf.constant(X)).graph
    return [(op.type, op.name, [t.name for t in op.inputs]) for op in graph.get_operations()]


@pytest.mark.parametrize("fn", [custom_cube, branchy], ids=["custom_gradient", "python_if"])
def test_the_traced_graph_is_the_handwritten_one_op_for_op(fn):
    # Same op types, names and inputs: the calls into the case are converted with tf.function's
    # own options (with AutoGraph's defaults, its name scopes, "fn_...", would show), and the
    # case's code is converted as there. (Without the weighted chain: it adds ops of its own.)
    ours = _ops(harness_function(fn, 2))
    assert ours == _ops(handwritten(fn, 2))
    assert not [name for _, name, _ in ours if name.startswith("fn_")]


def test_autograph_converts_no_harness_code_but_the_two_calls_into_the_case(monkeypatch):
    # What AutoGraph is asked to convert while the function mode traces, weighted chain and all:
    # the case's own function, and of the harness's code only the one-line callers.
    from tensorflow.python.autograph.impl import api  # noqa: PLC0415 - where tf.function converts

    converted = []
    convert = api._convert_actual

    def recording(entity, program_ctx):
        converted.append(f"{entity.__module__}.{entity.__qualname__}")
        return convert(entity, program_ctx)

    monkeypatch.setattr(api, "_convert_actual", recording)
    [result] = run_case(make_case(fn=branchy, order=2), ("function",), RunOptions(),
                        rerun=lambda c, p: "rerun")
    assert result.outcomes["function"].status is Status.OK
    harness_code = {name for name in converted if name.startswith("harness.")}
    assert harness_code == {"harness.measure.modes.shared._call",
                            "harness.measure.modes.shared._gradient"}, converted
    assert f"{__name__}.branchy" in converted


def test_autograph_converts_the_case_in_function_and_xla_and_not_in_no_autograph():
    # x*x at 3 for x > 0: 9, 6, 2. In no_autograph and graph the `if` on a tensor cannot trace.
    [result] = run_case(make_case(fn=branchy, order=2), ("eager", "function", "xla",
                                                         "no_autograph", "graph"),
                        RunOptions(), rerun=lambda c, p: "rerun")
    for mode in ("eager", "function", "xla"):
        outcome = result.outcomes[mode]
        assert outcome.status is Status.OK, (mode, outcome.error)
        assert [float(o[0].value) for o in outcome.orders] == [9.0, 6.0, 2.0], mode
    for mode in ("no_autograph", "graph"):
        assert result.outcomes[mode].error.is_a("OperatorNotAllowedInGraphError"), mode
    # What a hand-written tf.function does with the same function, for both settings.
    assert [[float(t) for t in o]
            for o in handwritten(branchy, 2)(tf.constant(X))] == [[9.0], [6.0], [2.0]]
    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError):
        handwritten(branchy, 2, autograph=False)(tf.constant(X))


@pytest.mark.parametrize("options", [{}, {"autograph": False}], ids=["autograph", "no_autograph"])
def test_an_exception_from_a_grad_fn_is_rewritten_as_for_a_handwritten_tf_function(options):
    # With AutoGraph, tf.function rebuilds an exception that passed converted code with an
    # "in user code:" message, and one it cannot rebuild becomes StagingError
    # (_ErrorMetadata.create_exception in autograph/impl/api.py); without, it passes as raised.
    def raised(function):
        with pytest.raises(Exception) as info:
            function(tf.constant(X))
        return type(info.value).__name__, str(info.value).splitlines()[0]

    ours, theirs = (raised(harness_function(grad_raises, 1, **options)),
                    raised(handwritten(grad_raises, 1, **options)))
    assert ours == theirs
    expected = (("StagingError", "in user code:") if not options
                else ("CodedError", "failed with code 7"))
    assert ours == expected
