"""Arguments real suites pass: a string tensor, an empty tensor, a variable, values a trace hides
(in a domain), and a shape too large to draw."""

import tensorflow as tf


@tf.custom_gradient
def tagged_double(x, tag):
    return x * 2.0, lambda dy: (dy * 2.0, None)


@tf.custom_gradient
def triple(x):
    return x * 3.0, lambda dy: dy * 3.0


@tf.custom_gradient
def times(x, v):
    return x * v, lambda dy: (dy * v, dy * x)


@tf.custom_gradient
def safe_log(x):
    return tf.math.log(x), lambda dy: dy / x


@tf.custom_gradient
def logit(p):
    return tf.math.log(p / (1.0 - p)), lambda dy: dy / (p * (1.0 - p))


@tf.function
def traced_domain(x, p):
    return safe_log(x) + logit(p)


@tf.custom_gradient
def huge_square(x):
    return x * x, lambda dy: dy * 2.0 * x


@tf.function
def traced_huge(x):
    return huge_square(x)
