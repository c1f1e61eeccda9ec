"""The user's Keras 3 model, trained with fit: its layer's activation is a custom gradient, called
only inside fit's compiled train function."""

import keras
import numpy as np

from mylib.layers import SoftplusDense


def test_softplus_dense_trains_with_fit():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), SoftplusDense(2), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.RandomState(0).normal(size=(8, 3)).astype("float32")
    history = model.fit(x, x.sum(axis=1, keepdims=True), epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
