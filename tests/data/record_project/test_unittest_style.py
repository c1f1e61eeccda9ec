"""One of the user project's tests in unittest's style, for `python -m harness record DIR -- CMD`
(docs/your-tests-and-ci.md's and `record --help`'s example: unittest discovers it here; the
recording tests run pytest on tests/ only)."""

import unittest

import tensorflow as tf

from mylib import ops


class OpsTest(unittest.TestCase):
    def test_scaled_square(self):
        x = tf.constant(3.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = ops.scaled_square(x)
        self.assertAlmostEqual(float(tape.gradient(y, x)), 6.0)


if __name__ == "__main__":
    unittest.main()
