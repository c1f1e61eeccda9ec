"""The library's own tests: all pass, though two of its gradients are wrong (wrong_tanh, and
Halver's), which only a check at other upstream gradients or a numeric derivative shows."""

import functools

import numpy as np
import tensorflow as tf
import tf_keras as keras

from hardlib import deco, layers, routes, special


def gradient(f, *xs):
    with tf.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = f(*xs)
    return tape.gradient(y, xs)


def test_every_route_gives_the_cube_s_gradient():
    for f in (routes.cube_v2, routes.cube_v1, routes.cube_imported, routes.cube_module, routes.cube_keras):
        np.testing.assert_allclose(gradient(f, tf.constant(2.0))[0], 12.0)


def test_the_decorated_functions_at_the_same_value():
    x = tf.constant(0.5)
    np.testing.assert_allclose(gradient(deco.sine, x)[0], np.cos(0.5), rtol=1e-6)
    assert np.isfinite(gradient(deco.wrong_tanh, x)[0])
    np.testing.assert_allclose(gradient(deco.weighted, x, tf.constant(2.0)), [2.0, 0.5])


def test_fit_trains_through_both_layers():
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(1,)), layers.Doubler(), layers.Halver()])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((4, 1), np.float32), np.ones((4, 1), np.float32), epochs=1, verbose=0)


def test_power_log_pick_and_cap():
    np.testing.assert_allclose(gradient(special.power_of, tf.constant(2.0), tf.constant(3.0))[0], 12.0)
    np.testing.assert_allclose(gradient(special.log_of, tf.constant([0.5, 2.0]))[0], [2.0, 0.5])
    np.testing.assert_allclose(gradient(lambda x: special.capped(x, float("inf")), tf.constant(2.0))[0], 1.0)

    @tf.function
    def traced(x, i):
        return gradient(special.log_of, x)[0], gradient(special.pick, x, i)[0]

    traced(tf.constant([1.0, 1.5, 1.25]), tf.constant(2))


def test_a_variable_s_gradient():
    x = tf.constant(2.0)
    scaled = special.make_scaler(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x)
    np.testing.assert_allclose(tape.gradient(y, x), 3.0)  # the test checks x's gradient only


def test_a_variable_as_the_argument():
    v = tf.Variable([1.5])
    with tf.GradientTape() as tape:
        y = special.log_of(v)
    np.testing.assert_allclose(tape.gradient(y, v), [1 / 1.5], rtol=1e-6)


def test_traced_calls_first_then_an_eager_one():
    traced = tf.function(special.twice)
    for n in (2, 3, 4):
        traced(tf.ones([n]))
    np.testing.assert_allclose(special.twice(tf.constant([0.25])), [0.5])


def test_dtypes():
    for dtype in (tf.float16, tf.bfloat16):
        gradient(special.square_any, tf.constant([1.5, -2.0], dtype))


def test_a_partial_and_a_right_function_after_it():
    by_two = functools.partial(special.scaled, k=2.0)
    by_two.__name__ = "by_two"  # TensorFlow names the op after it
    doubled = tf.custom_gradient(by_two)
    np.testing.assert_allclose(gradient(doubled, tf.constant(1.0))[0], 2.0)
    np.testing.assert_allclose(gradient(deco.sine, tf.constant(1.0))[0], np.cos(1.0), rtol=1e-6)
