"""Decorators over a forward and a backward, not over the decorated function."""

import functools

import tensorflow as tf


def with_pair(fwd, bwd):
    """A wrapper with functools.wraps whose per-call custom-gradient function closes over fwd and
    bwd only."""
    def finalize(f):
        @functools.wraps(f)
        def f_wrapped(*args):
            @tf.custom_gradient
            def inner(*xs):
                return fwd(*xs), lambda dy: bwd(dy, *xs)
            return inner(*args)
        return f_wrapped
    return finalize


def _sin_fwd(x):
    return tf.sin(x)


def _sin_bwd(dy, x):
    return dy * tf.cos(x) * 1.5  # wrong: 1.5 cos x


def _cos_bwd(dy, x):
    return -dy * tf.sin(x)


@with_pair(_sin_fwd, _sin_bwd)
def bad_sin(x):
    """sin, with a gradient 1.5 times too large."""


@with_pair(tf.cos, _cos_bwd)
def good_cos(x):
    """cos, with its true gradient."""


def custom_gradient(vjp_fwd, vjp_bwd):
    """As TensorFlow Probability's: the wrapper is bound to the decorated function's name, holds
    no reference to it, and its inner function closes over the forward, the backward and a dict
    of arguments held aside."""
    def finalize(f):
        def none_wrapper(*args):
            closure = {i: a for i, a in enumerate(args) if a is None}
            trimmed = [a for i, a in enumerate(args) if i not in closure]

            @tf.custom_gradient
            def f_wrapped(*xs):
                val, aux = vjp_fwd(*xs)
                return val, lambda g: vjp_bwd(aux, g)
            return f_wrapped(*trimmed)
        return none_wrapper
    return finalize


def _softplus_fwd(x):
    return tf.math.softplus(x), x


def _softplus_bwd(x, g):
    return g * tf.math.sigmoid(x)


@custom_gradient(_softplus_fwd, _softplus_bwd)
def _softplus_custom_gradient(x):
    """softplus, whose derivative is sigmoid."""


def softplus(x):
    return _softplus_custom_gradient(x)


def softplus_sum(x):
    """Another public function calling the same decorated one."""
    return tf.reduce_sum(_softplus_custom_gradient(x))


@tf.function
def softplus_traced(x):
    return _softplus_custom_gradient(x)
