"""The three mode runners on small cases whose derivatives have closed forms."""

import numpy as np
import tensorflow as tf

from harness.run_here import run_case
from harness.measure.modes import function as function_mode
from harness.measure.modes import graph as graph_mode
from harness.measure.modes.shared import Steps, build_subject
from harness.records import RunOptions, Status, Verdict
from tests.helpers import make_case, values

MODES = ("eager", "function", "graph")


_case = make_case


def _run(case, options=RunOptions()):
    return run_case(case, MODES, options, rerun=lambda c, p: "rerun")


_values = values


@tf.custom_gradient
def cube(x):
    def grad(dy):
        return dy * 3 * x * x
    return x * x * x, grad


def test_order_three_of_custom_cube_matches_closed_form_in_every_mode():
    # x**3 at 3: 27, 3x**2 = 27, 6x = 18, 6.
    [result] = _run(_case(fn=cube, order=3))
    assert result.verdict is Verdict.PASS, result.reason
    for mode in MODES:
        outcome = result.outcomes[mode]
        assert [float(_values(outcome, k)[0]) for k in range(4)] == [27.0, 27.0, 18.0, 6.0], mode


@tf.custom_gradient
def x_times_y_squared(x, y):
    def grad(dy):
        return dy * y * y, dy * 2 * x * y
    return x * y * y, grad


def test_two_inputs_order_two_differentiates_the_sum_of_first_order_gradients():
    # f = x y**2: grads (y**2, 2xy); order 2 is the gradient of y**2 + 2xy: (2y, 2y + 2x).
    case = _case(fn=x_times_y_squared, points=[{"x": np.float64(2.0), "y": np.float64(5.0)}],
                 order=2)
    [result] = _run(case)
    assert result.verdict is Verdict.PASS, result.reason
    for mode in MODES:
        outcome = result.outcomes[mode]
        assert [float(v) for v in _values(outcome, 1)] == [25.0, 20.0]
        assert [float(v) for v in _values(outcome, 2)] == [10.0, 14.0]
        assert [s.name for s in outcome.sources] == ["x", "y"]


def test_vector_input_order_two_is_hessian_times_ones():
    # f = sum(x**3): Hessian diag(6x), so order 2 = 6x elementwise.
    x = np.array([1.0, -2.0, 0.5], np.float32)
    [result] = _run(_case(fn=lambda x: tf.reduce_sum(x ** 3), points=[{"x": x}], order=2))
    for mode in MODES:
        np.testing.assert_allclose(_values(result.outcomes[mode], 2)[0], 6 * x, rtol=1e-6)


def test_unconnected_gradient_is_none_and_zero_only_when_asked():
    case = _case(fn=lambda x, y: 2.0 * x, points=[{"x": np.float32(1.0), "y": np.float32(4.0)}])
    [result] = _run(case)
    assert result.verdict is Verdict.PASS
    for mode in MODES:
        grads = _values(result.outcomes[mode], 1)
        assert float(grads[0]) == 2.0 and grads[1] is None, mode
    [zeroed] = _run(case, RunOptions(unconnected_zero=True))
    for mode in MODES:
        assert float(_values(zeroed.outcomes[mode], 1)[1]) == 0.0, mode


def test_integer_side_output_is_reported_but_not_differentiated():
    case = _case(fn=lambda x: (x * 2.0, tf.constant(7, tf.int32)))
    [result] = _run(case)
    assert result.verdict is Verdict.PASS, result.reason
    for mode in MODES:
        forward = result.outcomes[mode].orders[0]
        assert [o.dtype for o in forward] == ["float32", "int32"] and int(forward[1].value) == 7
        assert float(_values(result.outcomes[mode], 1)[0]) == 2.0


@tf.custom_gradient
def fails_at_second_order(x):
    def grad(dy):
        @tf.custom_gradient
        def inner(unused):
            def second(ddy):
                raise ValueError("no second derivative here")
            return 2 * x, second
        return dy * inner(x)
    return x * x, grad


def test_exception_is_recorded_with_class_and_order_and_keeps_earlier_orders():
    [result] = _run(_case(fn=fails_at_second_order, order=2))
    for mode in ("eager", "graph"):
        outcome = result.outcomes[mode]
        assert outcome.status is Status.ERROR
        assert (outcome.error.type, outcome.error.stage) == ("ValueError", "order 2"), mode
        assert "no second derivative here" in outcome.error.message
        assert [float(_values(outcome, k)[0]) for k in range(2)] == [9.0, 6.0], mode
    # Inside tf.function the exception is raised while tracing order 2.
    assert result.outcomes["function"].error.stage == "order 2"
    # All three raise the same undeclared ValueError: agreement on an error is not a pass.
    assert result.verdict is Verdict.FAIL


def test_function_is_traced_once_per_signature_not_per_point():
    case = _case(fn=cube, points=[{"x": np.float32(v)} for v in (1.0, 2.0, 3.0)], order=2)
    subject = build_subject(case)
    compiled = function_mode.compile_subject(subject, case.order, RunOptions(), Steps())
    for point in case.points:
        compiled(*[tf.constant(v) for v in point.values])
    assert compiled.experimental_get_tracing_count() == 1
    compiled(tf.constant(np.float64(1.0)))
    assert compiled.experimental_get_tracing_count() == 2


def test_builder_is_called_once_per_mode_and_once_per_graph_signature():
    calls = []

    def build():
        calls.append(tf.executing_eagerly())
        return cube

    points = [{"x": np.float32(1.0)}, {"x": np.float32(2.0)}, {"x": np.float64(3.0)}]
    # The numeric oracle builds its own copy, in float64: counted apart, in its own test.
    results = _run(_case(build=build, points=points), RunOptions(numeric=False))
    assert all(r.verdict is Verdict.PASS for r in results)
    # eager and function: once each, eagerly; graph: once per signature (two), in a graph.
    assert calls == [True, True, False, False]


def test_graph_mode_feeds_one_graph_for_all_points_of_a_signature(monkeypatch):
    graphs = []
    real = tf.Graph

    def counting_graph():
        graphs.append(real())
        return graphs[-1]

    monkeypatch.setattr(graph_mode.tf, "Graph", counting_graph)
    case = _case(fn=cube, points=[{"x": np.float32(v)} for v in (1.0, 2.0, 3.0)])
    outcomes = graph_mode.run(case, RunOptions())
    assert len(graphs) == 1
    assert [float(o.orders[1][0].value) for o in outcomes] == [3.0, 12.0, 27.0]


def test_variables_from_builder_are_differentiated_as_var0_in_every_mode():
    def build():
        w = tf.Variable(np.float32(2.0))

        @tf.custom_gradient
        def scaled(x):
            def grad(dy, variables):
                return dy * w, [dy * x]
            return w * x, grad
        return scaled

    [result] = _run(_case(build=build, wrt_variables=True))
    assert result.verdict is Verdict.PASS, result.reason
    for mode in MODES:
        outcome = result.outcomes[mode]
        assert [s.name for s in outcome.sources] == ["x", "var0"]
        # d(wx)/dx = w = 2, d(wx)/dw = x = 3.
        assert [float(v) for v in _values(outcome, 1)] == [2.0, 3.0]


def test_gather_gradient_is_densified_in_every_mode():
    def build():
        table = tf.Variable(np.arange(4, dtype=np.float64))
        return lambda i: tf.reduce_sum(tf.gather(table, i) ** 2)

    case = _case(build=build, points=[{"i": np.array([1, 3, 3], np.int32)}], wrt=(),
                 wrt_variables=True)
    [result] = _run(case)
    assert result.verdict is Verdict.PASS, result.reason
    # d/dtable of table[1]**2 + 2 table[3]**2 = [0, 2*1, 0, 4*3].
    for mode in MODES:
        np.testing.assert_array_equal(_values(result.outcomes[mode], 1)[0], [0.0, 2.0, 0.0, 12.0])


def test_builder_that_raises_gives_error_verdict():
    def build():
        raise RuntimeError("broken builder")

    [result] = _run(_case(build=build))
    assert result.verdict is Verdict.ERROR
    assert "broken builder" in result.reason


def test_no_mode_switches_eager_execution_off():
    _run(_case(fn=cube, order=2))
    assert tf.executing_eagerly()
