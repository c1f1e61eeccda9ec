"""Functions made by factories and on one line: closures over eager tensors and plain data, two
lambdas on a line, exec'd sources over globals of their own."""

import tensorflow as tf


def make_scaled(scale):
    """y = scale * x over an eager tensor `scale`: right in every mode."""
    @tf.custom_gradient
    def scaled(x):
        def grad(dy):
            return dy * scale
        return x * scale, grad
    return scaled


# Two functions on one line: the first is right (d x^2 = 2x), the second wrong (3x).
square_right, square_wrong = tf.custom_gradient(lambda x: (x * x, lambda dy: dy * 2.0 * x)), tf.custom_gradient(lambda x: (x * x, lambda dy: dy * 3.0 * x))  # noqa: E501


def table_scaled(x):
    """A closure over a dict with int keys, as TensorFlow Probability's custom_gradient keeps the
    arguments it holds aside."""
    table = {0: 2.0, 1: "unused"}

    @tf.custom_gradient
    def f(x):
        return x * table[0], lambda dy: dy * table[0]
    return f(x)


SOURCE = """
import tensorflow as tf

@tf.custom_gradient
def generated(x):
    # The gradient is 2 whatever K is: right only where K is 2.
    return x * K, lambda dy: dy * 2.0
"""


def generated(k):
    scope = {"K": k}
    exec(SOURCE, scope)  # noqa: S102 - made the way code generators make functions
    return scope["generated"]


def make_product():
    """A closure over two variables of one name and one value (unnamed eager variables are all
    "Variable"): y = x * a * b, its gradient by hand, dy * a * b for x and dy * x * b, dy * x * a
    for a and b. Two variables, never one."""
    a, b = tf.Variable(1.5), tf.Variable(1.5)

    @tf.custom_gradient
    def product(x):
        def grad(dy, variables=None):
            return dy * a * b, [dy * x * b, dy * x * a]
        return x * a * b, grad
    return product
