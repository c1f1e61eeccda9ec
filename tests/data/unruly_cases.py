"""Cases that misbehave the ways real custom gradients do, mixed with good ones.

Used by tests/test_robustness.py; not part of the shipped library.
"""

import os
import time

import numpy as np
import tensorflow as tf

from harness import Case

_X = [{"x": np.float32(2.0)}]


def _case(name, description, **kw):
    return Case(id=f"unruly.{name}", points=_X, source="tests/data/unruly_cases.py", description=description, **kw)


def _square(x):
    return x * x


def _abort_in_graph_mode(x):
    if not tf.executing_eagerly() and not tf.inside_function():
        os.abort()  # as a wrong gradient count once did (tensorflow#26048)
    return x * x


def _hang(x):
    time.sleep(3600)
    return x


def _raise(x):
    raise ZeroDivisionError("the case's own bug")


def _disable_eager(x):
    tf.compat.v1.disable_eager_execution()
    return x * x


def _leak_policy(x):
    import tf_keras
    tf_keras.mixed_precision.set_global_policy("mixed_float16")
    return x * x


CASES = [
    _case("good_first", "x**2, well behaved", fn=_square),
    _case("aborts", "calls abort() while building the v1 graph", fn=_abort_in_graph_mode),
    _case("good_second", "x**2, after the abort", fn=_square),
    _case("hangs", "sleeps for an hour", fn=_hang),
    _case("raises", "raises ZeroDivisionError in every mode", fn=_raise),
    _case("disables_eager", "turns eager execution off for the whole process", fn=_disable_eager),
    _case("leaks_policy", "sets a global mixed-precision policy", fn=_leak_policy),
    _case("good_last", "x**2, after every bad case", fn=_square),
]
