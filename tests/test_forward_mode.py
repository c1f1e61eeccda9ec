"""The forward mode (ForwardAccumulator, forward over reverse) against eager tapes and closed
forms."""

import numpy as np
import tensorflow as tf

from harness.measure.modes import eager as eager_mode
from harness.measure.modes import forward as forward_mode
from harness.records import RunOptions, Status
from tests.helpers import make_case, values


def _case(fn=None, build=None, points=None, **kw):
    return make_case(fn, build, points, id="t.forward", **kw)


def _both(case, options=RunOptions()):
    [forward] = forward_mode.run(case, options)
    [eager] = eager_mode.run(case, options)
    return forward, eager


_values = values


def _assert_same(forward, eager):
    assert forward.status is eager.status is Status.OK, (forward.error, eager.error)
    assert len(forward.orders) == len(eager.orders)
    for k, (mine, theirs) in enumerate(zip(forward.orders, eager.orders)):
        for a, b in zip(mine, theirs):
            assert (a.dtype, a.shape) == (b.dtype, b.shape), k
            if b.value is None:
                assert a.value is None, k
            else:
                np.testing.assert_allclose(a.value, b.value, rtol=1e-6, err_msg=f"order {k}")


@tf.custom_gradient
def detached_cube(x):
    """x**3 whose only derivative is grad_fn: the body is cut off by stop_gradient.

    A differentiable body would give the accumulator its own JVP first and
    grad_fn's would be dropped: test_differentiable_body_gives_the_jvp_and_grad_fn_is_dropped.
    """

    def grad(dy):
        return dy * 3.0 * x * x

    return tf.stop_gradient(x * x * x), grad


def test_first_order_of_a_custom_gradient_on_a_vector_matches_closed_form():
    x = np.array([1.0, -2.0, 0.5], np.float32)
    forward, eager = _both(_case(fn=detached_cube, points=[{"x": x}]))
    _assert_same(forward, eager)
    np.testing.assert_allclose(_values(forward, 1)[0], 3 * x * x, rtol=1e-6)
    assert [s.name for s in forward.sources] == ["x"]


@tf.custom_gradient
def asymmetric(x, y):
    """A grad_fn (y**2, x) that is no function's gradient: d(gx)/dy = 2y but d(gy)/dx = 1."""

    def grad(dy):
        return dy * y * y, dy * x

    return tf.stop_gradient(x * y * y), grad


def test_order_two_contracts_an_asymmetric_second_derivative_as_reverse_mode_does():
    x, y = 2.0, 5.0
    case = _case(fn=asymmetric, points=[{"x": np.float64(x), "y": np.float64(y)}], order=2)
    forward, eager = _both(case)
    _assert_same(forward, eager)
    assert [float(v) for v in _values(forward, 1)] == [y * y, x]
    # Order 2 is the gradient of y**2 + x: (1, 2y). A ones tangent (H 1) would read (2y, 1).
    assert [float(v) for v in _values(forward, 2)] == [1.0, 2 * y]


def test_variables_are_watched_by_the_accumulator_to_order_two():
    def build():
        w = tf.Variable(np.array([2.0, -1.0], np.float32))

        @tf.custom_gradient
        def scaled(x):
            def grad(dy, variables):
                return dy * w * x, [dy * x * x / 2]
            return w * x * x / 2, grad
        return scaled

    x = np.array([3.0, 4.0], np.float32)
    forward, eager = _both(_case(build=build, points=[{"x": x}], order=2, wrt_variables=True))
    _assert_same(forward, eager)
    assert [s.name for s in forward.sources] == ["x", "var0"]
    # Order 1: (w x, x**2 / 2); order 2: gradient of sum(w x + x**2 / 2) = (w + x, x).
    np.testing.assert_allclose(_values(forward, 1)[1], x * x / 2)
    np.testing.assert_allclose(_values(forward, 2)[0], np.array([2.0, -1.0]) + x)
    np.testing.assert_allclose(_values(forward, 2)[1], x)


def test_unconnected_source_is_none_or_zeros_when_asked():
    case = _case(fn=lambda x, y: 2.0 * x,
                 points=[{"x": np.float32(1.0), "y": np.array([4.0, 5.0], np.float32)}])
    forward, eager = _both(case)
    _assert_same(forward, eager)
    assert float(_values(forward, 1)[0]) == 2.0 and _values(forward, 1)[1] is None
    assert (forward.orders[1][1].dtype, forward.orders[1][1].shape) == ("float32", (2,))
    forward, eager = _both(case, RunOptions(unconnected_zero=True))
    _assert_same(forward, eager)
    np.testing.assert_array_equal(_values(forward, 1)[1], np.zeros(2, np.float32))


def test_more_source_elements_than_the_limit_is_a_skip_that_runs_nothing():
    calls = []

    def fn(x, y):
        calls.append(1)
        return x * y

    size = forward_mode.MAX_ELEMENTS
    case = _case(fn=fn, points=[{"x": np.ones(size, np.float32), "y": np.float32(2.0)}])
    [outcome] = forward_mode.run(case, RunOptions())
    assert outcome.status is Status.SKIP and calls == []
    assert f"{size + 1} elements" in outcome.note and str(size) in outcome.note
    assert "\n" not in outcome.note


def test_complex_source_is_a_skip_with_the_reason():
    case = _case(fn=lambda z: z * z, points=[{"z": np.complex64(1 + 2j)}])
    [outcome] = forward_mode.run(case, RunOptions())
    assert outcome.status is Status.SKIP
    assert "complex" in outcome.note and "z: complex64" in outcome.note


@tf.custom_gradient
def fails_at_first_order(x):
    def grad(dy):
        raise ValueError("no first derivative here")

    return x * x, grad


def test_error_in_grad_fn_is_recorded_at_order_one_keeping_order_zero():
    forward, eager = _both(_case(fn=fails_at_first_order, order=2))
    # Eager computes order 1 under the order 2 tape; forward mode computes it by itself.
    for outcome, stage in ((forward, "order 1"), (eager, "order 1, while recording for order 2")):
        assert outcome.status is Status.ERROR
        assert (outcome.error.type, outcome.error.stage) == ("ValueError", stage)
        assert "no first derivative here" in outcome.error.message
        assert len(outcome.orders) == 1 and float(outcome.orders[0][0].value) == 9.0


@tf.custom_gradient
def reverse_gradient(x):
    def grad(dy):
        return -0.5 * dy

    return tf.identity(x), grad


def test_differentiable_body_gives_the_jvp_and_grad_fn_is_dropped():
    # What the library triage rests on: _eager_mode_decorator (custom_gradient.py)
    # runs the body with the accumulator recording, so the output already has the
    # body's JVP when the custom op is recorded, and ForwardAccumulator::Accumulate
    # (c/eager/tape.h) keeps the first JVP of a tensor. Reverse mode uses grad_fn.
    forward, eager = _both(_case(fn=reverse_gradient))
    assert float(_values(eager, 1)[0]) == -0.5
    assert float(_values(forward, 1)[0]) == 1.0


def test_complex_output_of_a_real_source_contracts_to_the_real_part_as_reverse_mode_does():
    def fn(x):
        c = tf.complex(x, x * x) * tf.constant(1 + 2j, tf.complex64)
        return c, tf.math.real(c) ** 2

    case = _case(fn=fn, points=[{"x": np.array([0.5, -1.5], np.float32)}], order=2)
    forward, eager = _both(case)
    _assert_same(forward, eager)
    # c = (x - 2x**2) + i(x**2 + 2x): the tape reads Re(dc/dx) = 1 - 4x, plus d/dx of (x -
    # 2x**2)**2.
    x = np.array([0.5, -1.5])
    np.testing.assert_allclose(_values(forward, 1)[0],
                               1 - 4 * x + 2 * (x - 2 * x * x) * (1 - 4 * x), rtol=1e-6)
