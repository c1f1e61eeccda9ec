"""A case whose values change from run to run: a random op without a seed."""

import numpy as np
import tensorflow as tf

from harness import Case


def noisy(x):
    return x * tf.random.uniform([])


CASES = [
    Case(
        id="flaky.unseeded_uniform",
        fn=noisy,
        points=[{"x": np.float32(1.0)}],
        source="tests",
        description="x times tf.random.uniform without a seed: its gradient changes with every run",
    ),
]
