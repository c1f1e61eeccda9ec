"""Cases that leave process-wide state changed, each followed by an innocent case it would break.

Used by tests/test_isolation.py; not part of the shipped library. Run in one worker, in this order,
each innocent case runs right after its polluter; were the change to reach it:
- then_nan_branch raises InvalidArgumentError in every mode under check numerics (the unselected
  branch of its tf.where is NaN);
- then_matmul's function mode computes in bfloat16 under the grappler option, where the CPU has it,
  and disagrees with eager;
- then_while_loop's second-order gradient cannot be built in graph mode with control flow v1;
- then_set_flip and then_set_exit wake their polluter's thread, which turns run_functions_eagerly
  on, or ends the process, while they run.
"""

import os
import threading

import numpy as np
import tensorflow as tf

from harness import Case

_X = [{"x": np.float32(3.0)}]
_M = [{"x": np.linspace(-2.0, 2.0, 4 * 64, dtype=np.float32).reshape(4, 64)}]
_W = np.linspace(-1.37, 1.37, 64 * 64, dtype=np.float32).reshape(64, 64)


def _case(name, description, points=_X, **kw):
    return Case(id=f"polluting.{name}", points=points, source="tests/data/polluting_cases.py",
                description=description, **kw)


def _square(x):
    return x * x


def _enable_check_numerics():
    tf.debugging.enable_check_numerics()
    return _square


def _set_grappler_option():
    tf.config.optimizer.set_experimental_options({"auto_mixed_precision_onednn_bfloat16": True})
    return _square


def _disable_control_flow_v2():
    tf.compat.v1.disable_control_flow_v2()
    return _square


# Set by the innocent case after each thread's polluter: the thread acts while that case runs.
_flip_now = threading.Event()
_exit_now = threading.Event()
_started = set()


def _start_once(name, target, daemon):
    # The builder runs once per mode; one thread is enough.
    if name not in _started:
        _started.add(name)
        threading.Thread(target=target, name=name, daemon=daemon).start()


def _flip():
    _flip_now.wait()
    tf.config.run_functions_eagerly(True)


def _exit():
    _exit_now.wait()
    os._exit(3)


def _start_flipper():
    _start_once("flipper", _flip, daemon=False)
    return _square


def _start_exiter():
    _start_once("exiter", _exit, daemon=True)
    return _square


def _nan_branch(x):
    return tf.where(x > 0, x * x, tf.math.log(x - 10.0))


def _matmul(x):
    return tf.matmul(x, tf.constant(_W))


def _while_loop(x):
    return tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), [tf.constant(0), tf.ones_like(x)])[1]


def _square_after(event):
    def square(x):
        event.set()
        return x * x
    return square


CASES = [
    _case("enables_check_numerics", "its builder turns check numerics on", build=_enable_check_numerics),
    _case("then_nan_branch", "tf.where(x > 0, x**2, log(x - 10)): NaN in the branch not taken", fn=_nan_branch),
    _case("sets_grappler_option", "its builder turns grappler's oneDNN bfloat16 auto mixed precision on",
          build=_set_grappler_option),
    _case("then_matmul", "a (4, 64) by (64, 64) float32 matmul", points=_M, fn=_matmul),
    _case("disables_control_flow_v2", "its builder turns control flow v2 off", build=_disable_control_flow_v2),
    _case("then_while_loop", "x**3 by a three-step tf.while_loop, to order 2", fn=_while_loop, order=2),
    _case("starts_flipper", "its builder starts a thread that turns run_functions_eagerly on later",
          build=_start_flipper),
    _case("then_set_flip", "x**2; wakes the flipper thread", fn=_square_after(_flip_now)),
    _case("starts_exiter", "its builder starts a daemon thread that ends the process later", build=_start_exiter),
    _case("then_set_exit", "x**2; wakes the exiter thread", fn=_square_after(_exit_now)),
]
