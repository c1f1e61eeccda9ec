"""A case whose domain explore cannot draw from: its two exclusions, each too narrow to be refused
alone, together cover the bounds."""

import numpy as np
import tensorflow as tf

from harness import Case, Domain


def softplus(x):
    return tf.math.softplus(x)


CASES = [
    Case(
        id="undrawable.covered",
        fn=softplus,
        points=[{"x": np.float32(0.5)}],
        source="tests",
        description="softplus, explored over [0, 1] less (0.25 - 0.3, 0.25 + 0.3) and (0.75 - 0.3, 0.75 + 0.3)",
        domains={"x": Domain(0.0, 1.0, exclude=(0.25, 0.75), near=0.3)},
    ),
]
