import numpy as np
import tensorflow as tf

from reallib import decorators, factories, layers, special


def test_a_layer_closing_over_self():
    for units, factor in ((3, 2.0), (2, 0.5)):  # two instances: one function
        layer = layers.ScaledDense(units)
        layer.quantize(factor)
        assert layer(tf.ones([units])).shape == (units,)


def test_factories_and_one_line():
    assert float(factories.make_scaled(tf.constant(2.0))(tf.constant(3.0))) == 6.0
    factories.square_right(tf.constant(1.5))
    factories.square_wrong(tf.constant(1.5))
    factories.table_scaled(tf.constant(1.5))
    for k in (2.0, 3.0):
        factories.generated(k)(tf.constant(1.0))
    factories.make_product()(tf.constant(2.0))


def test_decorators():
    decorators.bad_sin(tf.constant(0.5))
    decorators.good_cos(tf.constant(0.5))
    decorators.softplus(tf.constant([0.5, -1.0]))
    decorators.softplus_sum(tf.constant([2.0]))
    decorators.softplus_traced(tf.constant([1.0, 2.0, 3.0]))


def test_a_string_tensor_then_more():
    special.tagged_double(tf.constant(1.0), tf.constant(["a", "bc"]))
    special.tagged_double(tf.constant(2.0), tf.constant(["a", "bc"]))


def test_after_the_string_tensor():
    special.triple(tf.constant(1.0))
    special.triple(tf.zeros([0]))
    special.times(tf.constant(1.5), tf.Variable(2.0))


def test_traced_only():
    special.traced_domain(tf.constant([0.5, 0.7, 0.9, 0.2]), tf.constant([0.5, 0.7, 0.9, 0.2]))
    special.traced_huge.get_concrete_function(tf.TensorSpec([50_000_000], tf.float32))


def test_keras_int8_dense():
    import keras

    for units in (3, 2):  # two layer instances of Keras's own int8 Dense
        layer = keras.layers.Dense(units)
        layer.build((None, 4))
        layer.quantize("int8")
        x = tf.constant(np.arange(8, dtype=np.float32).reshape(2, 4) / 8)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
        assert tape.gradient(y, x).shape == (2, 4)


def test_keras2_layers_closing_over_self():
    from reallib import keras2

    x = tf.constant([[1.0, -0.5, 2.0], [0.25, 1.0, -1.0]])
    for sign in (1.0, -1.0):  # a right variable gradient, then one of the wrong sign
        layer = keras2.Scale(sign, name=f"scale_{'right' if sign > 0 else 'wrong'}")
        with tf.GradientTape() as tape:
            y = layer(x)
        assert tape.gradient(y, layer.trainable_weights)[0] is not None
    quantize = keras2.Quantize(2)
    q = tf.constant([0.05, 0.3, 0.62, 0.9])
    with tf.GradientTape() as tape:
        tape.watch(q)
        y = quantize(q)
    assert tape.gradient(y, q) is not None
