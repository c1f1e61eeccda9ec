"""The saved_model and saved_model_nocg modes: save here, load and differentiate in the restorer
process.

The restorer is started once for this test process and shared by the tests, as
it is by the cases of one worker; the crash tests check that a new one takes
over.
"""

import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf

from harness.measure.modes import eager, runner, saved_model
from harness.records import RunOptions, Status
from tests.helpers import make_case, values


_case = make_case


def _values(outcome):
    return [values(outcome, k) for k in range(len(outcome.orders))]


@tf.custom_gradient
def cube_with_own_gradient(x):
    # 4x**2 instead of 3x**2: ordinary autodiff of the body would show.
    def grad(dy):
        return dy * 4 * x * x

    return x * x * x, grad


def test_runners_do_not_observe_gradients():
    for name in ("saved_model", "saved_model_nocg"):
        mode = runner(name)
        assert mode.NAME == name and mode.OBSERVES_GRADIENTS is False
    assert saved_model.OBSERVES_GRADIENTS is False


def test_order_two_custom_gradient_matches_eager_at_each_signature():
    # Two input signatures: two saved functions; x**3 with gradient 4x**2, so order 2 is 8x.
    points = [{"x": np.float32(3.0)}, {"x": np.array([1.0, -2.0], np.float32)}]
    case = _case(fn=cube_with_own_gradient, points=points, order=2)
    got = runner("saved_model").run(case, RunOptions())
    want = eager.run(case, RunOptions())
    assert [o.status for o in got] == [Status.OK, Status.OK], [o.error for o in got]
    for g, w in zip(got, want):
        assert [s.name for s in g.sources] == ["x"]
        for g_order, w_order in zip(_values(g), _values(w), strict=True):
            for g_value, w_value in zip(g_order, w_order, strict=True):
                np.testing.assert_array_equal(g_value, w_value)
    assert [float(v[0]) for v in _values(got[0])] == [27.0, 36.0, 24.0]


def test_without_saved_gradients_the_restorer_has_no_gradient():
    # tensorflow#40166. This process registered the gradient when it traced the function;
    # the restorer never did. Under a tape, calling the loaded function builds its backward
    # function at once (concrete_function.py, _select_forward_and_backward_functions),
    # so the LookupError comes at the forward call, with no order computed.
    [outcome] = runner("saved_model_nocg").run(_case(fn=cube_with_own_gradient), RunOptions())
    assert outcome.status is Status.ERROR
    assert outcome.error.is_a("LookupError") and outcome.error.stage == "forward"
    assert "No gradient defined for operation" in outcome.error.message
    assert outcome.orders == ()


@tf.custom_gradient
def double_with_gradient_five(x):
    return 2.0 * x, lambda dy: 5.0 * dy


def test_reloading_in_the_saving_process_hides_the_missing_gradient(tmp_path):
    # Why the modes load in another process: here the registry still has the gradient.
    # (A grad_fn that closes over the forward's tensors fails differently here: they
    # belong to the graph traced for saving, out of scope by now.)
    module = tf.Module()
    module.f = tf.function(double_with_gradient_five,
                           input_signature=[tf.TensorSpec((), tf.float32)])
    tf.saved_model.save(module, str(tmp_path),
                        options=tf.saved_model.SaveOptions(experimental_custom_gradients=False))
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.saved_model.load(str(tmp_path)).f(x)
    assert float(tape.gradient(y, x)) == 5.0
    [outcome] = runner("saved_model_nocg").run(_case(fn=double_with_gradient_five), RunOptions())
    assert outcome.error.is_a("LookupError")


def build_with_variables():
    w = tf.Variable(np.float32(2.0), name="w")
    # Not differentiated, but read by the function: the saved module must track it too.
    scale = tf.Variable(np.float32(3.0), trainable=False, name="scale")

    @tf.custom_gradient
    def scaled(x):
        def grad(dy, variables):
            # d/dw is x * scale = 3x; 10x shows it is the custom one
            return dy * w * scale, [dy * x * 10.0]

        return w * x * scale, grad

    return scaled


def test_variable_gradient_round_trips():
    case = _case(build=build_with_variables, points=[{"x": np.float32(0.5)}], wrt_variables=True)
    [got] = runner("saved_model").run(case, RunOptions())
    [want] = eager.run(case, RunOptions())
    assert got.status is Status.OK, got.error
    assert [s.name for s in got.sources] == ["x", "var0"]
    assert [[float(v) for v in order] for order in _values(got)] == [[3.0], [6.0, 5.0]]
    assert _values(got) == _values(want)


def test_unconnected_gradient_is_none_or_zero_as_asked():
    case = _case(fn=lambda x, y: 2.0 * x, points=[{"x": np.float32(1.0), "y": np.float32(4.0)}])
    [plain] = runner("saved_model").run(case, RunOptions())
    assert _values(plain)[1] == [2.0, None]
    [zeroed] = runner("saved_model").run(case, RunOptions(unconnected_zero=True))
    assert _values(zeroed)[1] == [2.0, 0.0]


_UNTRACKED = tf.Variable(np.float32(2.0))


def test_function_that_cannot_be_saved_fails_at_save():
    # A variable made outside any builder is not reachable from the saved module.
    [outcome] = runner("saved_model").run(_case(fn=lambda x: x * _UNTRACKED), RunOptions())
    assert outcome.status is Status.ERROR and outcome.error.stage == "save"
    assert outcome.error.type == "KeyError" and "not reachable from root" in outcome.error.message


def aborts_on_scalars(x):
    # Abort is not stateful, so nothing runs it unless something depends on it.
    if x.shape.rank == 0:
        with tf.control_dependencies([tf.raw_ops.Abort(error_msg="abort requested by the test")]):
            return x * 2.0
    return x * 2.0


@pytest.mark.slow
def test_a_point_that_kills_the_restorer_is_a_crash_and_a_new_restorer_takes_the_rest():
    points = [{"x": np.float32(1.0)}, {"x": np.array([1.0, 2.0], np.float32)}]
    crashed, survived = runner("saved_model").run(_case(fn=aborts_on_scalars, points=points),
                                                  RunOptions())
    assert crashed.status is Status.CRASH
    assert (
        crashed.error.first_line
        == "the SavedModel restorer process was killed by SIGABRT; its last output:"
    )
    assert "Abort_op intentional failure; abort requested by the test" in crashed.error.message
    assert survived.status is Status.OK and _values(survived)[1][0].tolist() == [2.0, 2.0]
    [after] = runner("saved_model").run(_case(fn=cube_with_own_gradient), RunOptions())
    assert after.status is Status.OK


@pytest.mark.slow
def test_a_restorer_killed_between_cases_is_replaced_without_blaming_the_next_case():
    runner("saved_model").run(_case(fn=cube_with_own_gradient), RunOptions())
    old = saved_model._restorer.process
    old.kill()
    old.wait()
    [outcome] = runner("saved_model").run(_case(fn=cube_with_own_gradient), RunOptions())
    assert outcome.status is Status.OK
    assert saved_model._restorer.process.pid != old.pid


def _gone(pid: int) -> bool:
    # An exited process that nobody has reaped yet is a zombie: gone too.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.slow
def test_the_restorer_exits_when_its_worker_is_killed():
    script = textwrap.dedent("""
        import os, signal
        import numpy as np
        from harness import Case
        from harness.measure.modes import runner, saved_model
        from harness.records import RunOptions
        case = Case(id="t.case", fn=lambda x: x * 2.0, points=[{"x": np.float32(1.0)}],
                    source="test",
                    description="test case")
        runner("saved_model").run(case, RunOptions())
        print(saved_model._restorer.process.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    worker = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True,
                            text=True, timeout=300)
    assert worker.returncode == -signal.SIGKILL, worker.stderr[-2000:]
    pid = int(worker.stdout.split()[0])
    # It reads the end of its stdin as soon as its parent is gone; allow a slow machine a minute.
    for _ in range(600):
        if _gone(pid):
            break
        time.sleep(0.1)
    assert _gone(pid)
