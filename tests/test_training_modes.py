"""The training-step modes end to end: each bug class of cases/training.py (and the library's cases
that show one) passes in the core modes, whose results the shared library fixture holds, and is
found by the training-step mode built for it. The library-wide run in every step mode, with the
mirrored one that needs a worker's two logical CPU devices, is a command-line run in the slow tier.
"""

import json

import numpy as np
import pytest

from harness.measure import upstream
from harness.measure.modes import KERAS3_MODES, STEP_MODES
from tests import helpers

pytest.importorskip("tf_keras")


@pytest.fixture(scope="module")
def cases(library_cases):
    return {c.id: c for c in library_cases}


def _values(outcome, order=1):
    return [o.value for o in outcome.orders[order]]


def _weighted(outcome):
    return [o.value for o in outcome.upstream[0]]


def _core_verdicts(library_results, case_id):
    return {r.verdict.value for r in library_results[case_id]}


def test_grad_fn_reading_a_weight_outside_autocast_fails_only_under_mixed_precision(
    cases, library_results
):
    case_id = "training.grad_fn_reads_weight_without_autocast"
    # invisible to eager, function and graph
    assert _core_verdicts(library_results, case_id) == {"pass"}
    result, = helpers.run(cases[case_id], ("eager", "keras_fit", "keras_mixed"))
    assert result.verdict.value == "xfail", result.reason
    mixed = result.outcomes["keras_mixed"]
    assert mixed.error.type == "TypeError" and mixed.error.stage == "order 1, training step"
    assert "float32 that does not match type float16" in mixed.error.first_line
    # float32 in a compiled step is fine: 1.5 * (1 - tanh(x)**2), the derivative of 1.5 tanh(x).
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(_values(result.outcomes["keras_fit"])[0],
                               1.5 * (1 - np.tanh(x) ** 2), rtol=1e-6)


def test_python_side_effect_in_grad_fn_runs_once_per_trace_in_the_compiled_train_function(
    cases, library_results
):
    case_id = "training.python_side_effect_in_grad_fn"
    # the numeric oracle only: a reversal
    assert _core_verdicts(library_results, case_id) == {"xfail"}
    case = cases[case_id]
    result, = helpers.run(case, ("eager", "keras_eager", "keras_fit"))
    assert result.verdict.value == "xfail"
    w = upstream.weights(upstream.seed(case_id, case.points[0].label), 1, 0, (2,))
    # Eager code counts every backward pass: factor 0.25 for the plain chain, 0.5 for the weighted.
    for mode in ("eager", "keras_eager"):
        np.testing.assert_array_equal(_values(result.outcomes[mode])[0], [-0.25, -0.25])
        np.testing.assert_array_equal(_weighted(result.outcomes[mode])[0], -0.5 * w)
    # The train function traced twice on its first call (it created the optimizer's variables), then
    # never again: factor 0.5 for both steps.
    fit = result.outcomes["keras_fit"]
    np.testing.assert_array_equal(_values(fit)[0], [-0.5, -0.5])
    np.testing.assert_array_equal(_weighted(fit)[0], -0.5 * w)
    assert "as declared: keras_fit values differ: a compiled train function runs" in " ".join(
        result.details
    )


def test_a_grad_fn_clipping_dy_clips_the_loss_scaled_gradient_under_mixed_precision(cases):
    result, = helpers.run(cases["patterns.clip_gradient_by_value"], ("eager", "keras_fit",
                                                                     "keras_mixed"))
    assert result.verdict.value == "xfail"
    eager = _values(result.outcomes["eager"])[0]
    np.testing.assert_array_equal(_values(result.outcomes["keras_fit"])[0], eager)
    # The loss-scale optimizer's first scale is 2**15: grad_fn clips 2**15 * dy to +-1, and the
    # optimizer divides by 2**15 again.
    np.testing.assert_array_equal(_values(result.outcomes["keras_mixed"])[0],
                                  np.sign(eager) * 2.0 ** -15)


def test_a_variable_gradient_clipped_in_grad_fn_is_rescaled_by_the_loss_scale(cases,
                                                                              library_results):
    case_id = "training.grad_fn_clips_variable_gradient"
    # the numeric oracle only: clipping
    assert _core_verdicts(library_results, case_id) == {"xfail"}
    result, = helpers.run(cases[case_id], ("eager", "keras_eager", "keras_fit", "keras_xla",
                                           "keras_mixed"))
    assert result.verdict.value == "xfail"
    clipped = np.array([1.0, 3.0]) / np.sqrt(10.0)  # x * dy = [1, 3], clipped to norm 1
    for mode in ("eager", "keras_eager", "keras_fit", "keras_xla"):
        x_grad, w_grad = _values(result.outcomes[mode])
        np.testing.assert_array_equal(x_grad, [2.0, -1.0])  # w
        np.testing.assert_allclose(w_grad, clipped, rtol=1e-6)
    # The loss-scale optimizer's first scale, 2**15, overflows x's gradient (2**15 * w[0] = 65536 is
    # above float16's 65504), so that step is skipped and the next runs at 2**14: grad_fn clips
    # 2**14 * [1, 3] to norm 1, and the optimizer divides by 2**14.
    np.testing.assert_allclose(_values(result.outcomes["keras_mixed"])[1], clipped * 2.0 ** -14,
                               rtol=1e-2)
    assert "keras_mixed values differ" in result.reason


def test_tracker_report_custom_matmul_trains_under_mixed_precision_on_this_release(cases,
                                                                                   library_results):
    case_id = "training.tracker_custom_matmul_mixed_precision"
    assert "keras-team/tf-keras/issues/197" in cases[case_id].source
    result, = helpers.run(cases[case_id], ("eager", "keras_mixed"))
    assert result.verdict.value == "pass", result.reason
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])
    # The kernel's gradient of sum(x @ W) is x^T @ ones: each column is the column sums of x.
    kernel = _values(result.outcomes["keras_mixed"])[1]
    np.testing.assert_allclose(kernel, np.repeat(x.sum(axis=0)[:, None], 2, axis=1), rtol=1e-3)
    assert result.outcomes["keras_mixed"].computed_in == "float16"


def _wrong_sign_variable_case():
    """y = x * w whose grad_fn reads w in the backward pass and gives w's gradient as -dy * x."""
    import tensorflow as tf

    def build():
        w = tf.Variable(np.array([2.0, -1.0], np.float32), name="w")

        @tf.custom_gradient
        def scaled(x):
            def grad_fn(dy, variables=None):
                return dy * w, [-dy * x]

            return x * w, grad_fn

        return scaled

    return helpers.make_case(build=build, points=[{"x": np.array([1.5, 3.0], np.float32)}],
                             wrt_variables=True)


def test_a_wrong_sign_variable_gradient_fails_alike_in_20_fresh_fit_steps_naming_the_sign():
    lines = set()
    for _ in range(20):  # a fresh model and train function each time
        result, = helpers.run(_wrong_sign_variable_case(), ("eager", "keras_fit"), repeat=2)
        assert result.verdict.value == "fail", result.reason
        lines.add((result.reason,) + tuple(result.details))
        fit = result.outcomes["keras_fit"]
        # What fit's train function does here: grad_fn's read of w is left unordered with w's
        # update.
        assert fit.status.value == "error" and fit.error.type == "UpdateRace"
        assert fit.error.first_line.startswith("fit's train function reads var0 (")
    assert len(lines) == 1
    reason, *details = lines.pop()
    assert reason.startswith("keras_fit raises UpdateRace at order 1, training step")
    assert ", where eager computed at this point: fit's train function reads var0 (" in reason
    # d(x * w)/dw = x = [1.5, 3]: grad_fn's -x has the wrong sign, and the line says so.
    numeric = [d for d in details
               if d.startswith("the agreed values differ from the numeric derivative")]
    assert numeric and "order 1 gradient wrt var0[1]: eager=-3 numeric=3 " in numeric[0], details


def test_mirrored_skips_in_a_process_whose_devices_were_fixed_and_says_how_many_it_has(cases):
    import tensorflow as tf

    result, = helpers.run(cases["variables.grad_fn_variables"], ("eager", "keras_mirrored"))
    mirrored = result.outcomes["keras_mirrored"]
    count = len(tf.config.list_logical_devices("CPU"))
    if count >= 2:
        assert mirrored.status.value == "ok"
    else:
        assert mirrored.status.value == "skip"
        assert f"this process has {count}:" in mirrored.note


def test_a_complex_point_is_skipped_by_every_step_with_its_reason(cases):
    case = next(c for c in cases.values()
                if any(v.dtype.kind == "c" for p in c.points for v in p.values))
    results = helpers.run(case, ("eager", "keras_fit"))
    for point, result in zip(case.points, results):
        outcome = result.outcomes["keras_fit"]
        complex_inputs = [n for n, i in zip(case.wrt, case.wrt_indices)
                          if point.values[i].dtype.kind == "c"]
        if complex_inputs:
            assert outcome.status.value == "skip" and outcome.note.startswith(
                f"{complex_inputs[0]} is complex"
            )


def test_without_keras_2_every_step_mode_skips_and_says_what_to_install(cases, monkeypatch):
    from harness.measure.modes import keras_step

    monkeypatch.setattr(keras_step, "keras", lambda: None)
    results = helpers.run(cases["docs.log1pexp"], ("eager",) + STEP_MODES)
    for result in results:
        assert result.verdict.value == "pass"
        for mode in STEP_MODES:
            outcome = result.outcomes[mode]
            assert outcome.status.value == "skip"
            # What to install, for a release and for a nightly (a release's tf-keras would bring
            # a second TensorFlow over tf-nightly), and why tf.keras is not enough.
            assert outcome.note.startswith("needs tf_keras (pip install '.[keras]' in the harness "
                                           "checkout; beside tf-nightly, the tf-keras-nightly of "
                                           "its minor release instead): from TensorFlow 2.16 "
                                           "tf.keras is Keras 3")


@pytest.fixture(scope="module")
def step_run(tmp_path_factory):
    """The whole library in --mode keras (eager and the five steps) through workers, which split
    the CPU."""
    folder = tmp_path_factory.mktemp("step_run")
    proc = helpers.harness("--mode=keras", f"--json_out={folder / 'r.json'}", timeout=3000)
    return proc, json.loads((folder / "r.json").read_text())


@pytest.mark.slow
def test_every_library_case_is_pass_xfail_or_skip_in_the_training_step_modes(step_run):
    proc, report = step_run
    bad = [f"{r['case']}[{r['point']}]: {r['verdict']}: {r['reason']}" for r in report["results"]
           if r["verdict"] not in ("pass", "xfail", "skip")]
    assert not bad, "\n".join(bad)
    assert proc.returncode == 0
    ran = {m for r in report["results"] for m, o in r["modes"].items() if o["status"] == "ok"}
    assert set(STEP_MODES) <= ran


@pytest.mark.slow
def test_mirrored_strategy_runs_in_a_worker_and_reproduces_the_per_replica_traces(step_run):
    _, report = step_run
    by_id = {r["case"]: r for r in report["results"]}
    mirrored = by_id["training.grad_fn_clips_variable_gradient"]["modes"]["keras_mirrored"]
    assert mirrored["status"] == "ok" and mirrored["orders"][1][0]["value"] == [2.0, -1.0]
    # Each replica clips its half of x * dy = [0.5, 1.5] to norm 1; the optimizer sums the two.
    np.testing.assert_allclose(mirrored["orders"][1][1]["value"],
                               2 * np.array([1.0, 3.0]) / np.sqrt(10.0), rtol=1e-6)
    # Each replica's grad_fn ran while the second trace was made, at counts 3 and 4 (factors 0.75
    # and 1), each with half the loss: -(0.75 + 1) / 2.
    side = by_id["training.python_side_effect_in_grad_fn"]["modes"]["keras_mirrored"]
    assert side["orders"][1][0]["value"] == [-0.875, -0.875]


@pytest.mark.slow
def test_keras_and_keras3_run_in_one_worker_and_keras3_fit_says_what_auto_jit_resolved_to(tmp_path):
    pytest.importorskip("keras", minversion="3")
    proc = helpers.harness("--mode=keras,keras3", "--cases=docs.log1pexp",
                           f"--json_out={tmp_path / 'r.json'}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((tmp_path / "r.json").read_text())
    by_point = {r["point"]: r["modes"] for r in report["results"]}
    import tensorflow as tf

    xla = any(d.device_type != "CPU" for d in tf.config.list_physical_devices())
    # d/dx log(1 + e^x) is the logistic function: 1/2 at 0, 1 to float32 at 100.
    for point, expected in (("x=0.0", 0.5), ("x=100.0", 1.0)):
        for mode in STEP_MODES + KERAS3_MODES:
            outcome = by_point[point][mode]
            assert outcome["status"] == "ok", (mode, outcome)
            assert outcome["orders"][1][0]["value"] == pytest.approx(expected, rel=1e-3), mode
        # Keras 3 resolves "auto" to XLA only where a device other than the CPU is present.
        assert (
            by_point[point]["keras3_fit"]["note"]
            == f"compile's jit_compile='auto' resolved to jit_compile={xla}"
        )
        assert "note" not in by_point[point]["keras3_xla"]


def test_without_keras_3_every_keras3_mode_skips_and_says_it_needs_keras_3(cases, monkeypatch):
    from harness.measure.modes import keras3_step

    monkeypatch.setattr(keras3_step, "keras3", lambda: None)
    for result in helpers.run(cases["docs.log1pexp"], ("eager",) + KERAS3_MODES):
        assert result.verdict.value == "pass"
        for mode in KERAS3_MODES:
            outcome = result.outcomes[mode]
            assert outcome.status.value == "skip"
            assert outcome.note.startswith("needs Keras 3 (the keras package, 3.0 or later, which")
