"""The contexts end to end (harness.measure.modes.contexts): a custom gradient is checked inside
tf.cond, the loops, vectorized_map, the jacobians and recompute_grad, each against its base mode.
The truths are closed forms: d/dx log(1 + e^x) = 1 at x = 100, where autodiff of the body gives NaN;
1/sqrt(3) for a dy of ones clipped to norm 1, and 1 for each one-hot row; 2 for w * x with w = 2;
2x for x**2. The library under every context is a command-line run in the slow tier."""

import dataclasses
import json
import sys

import numpy as np
import pytest

from harness import mode_names
from harness.measure import probe
from tests import helpers

probe.install()  # as in a worker: the library's custom gradients are then observed

PLAIN = ("eager", "function", "graph")


@pytest.fixture(scope="module")
def cases(library_cases):
    return {c.id: c for c in library_cases}


def _undeclared(case):
    return dataclasses.replace(case, expectations=())


def _grad(outcome):
    return np.asarray(outcome.orders[1][0].value)


def test_a_right_custom_gradient_is_used_and_passes_in_every_context(cases):
    # At x = 100 exp overflows: only the custom gradient gives 1 (autodiff of the body gives NaN),
    # so a context that lost it would part from its base.
    case = dataclasses.replace(cases["docs.log1pexp"],
                               points=[p for p in cases["docs.log1pexp"].points
                                       if p.label == "x=100.0"])
    (result,) = helpers.run(case, PLAIN + mode_names.CONTEXT_MODES)
    assert result.verdict.value == "pass", result.details
    for mode in mode_names.CONTEXT_MODES:
        outcome = result.outcomes[mode]
        assert outcome.status.value == "ok", (mode, outcome.error)
        assert _grad(outcome) == pytest.approx(1.0), mode
        assert outcome.usage is not None and outcome.usage.ran and not outcome.usage.unused, mode


def test_a_dy_clipping_gradient_parts_from_its_jacobian_rows_and_says_why(cases):
    (result,) = helpers.run(_undeclared(cases["contexts.clip_dy_by_norm"]),
                            ("eager", "function", "jacobian_eager", "jacobian_function",
                             "map_fn_function"))
    assert _grad(result.outcomes["eager"]) == pytest.approx(np.full(3, 1 / np.sqrt(3)))
    for mode in ("jacobian_eager", "jacobian_function"):
        assert _grad(result.outcomes[mode]) == pytest.approx(np.ones(3))
    # a map over a batch of one passes the whole dy: clipped as tape.gradient clips it
    assert _grad(result.outcomes["map_fn_function"]) == pytest.approx(np.full(3, 1 / np.sqrt(3)))
    assert result.verdict.value == "fail"
    assert result.details[0].startswith("order 1 gradient wrt x: jacobian_eager vs eager: 3 of 3 "
                                        "elements differ; worst at (0,): jacobian_eager=1 "
                                        "eager=0.57735026")
    assert any(line.startswith("order 1 gradient wrt x: jacobian_function vs function: ")
               for line in result.details)
    assert any(line.startswith("hint: a jacobian's rows are grad_fn's answers to one-hot upstream "
                               "gradients") for line in result.details)
    assert "jacobian_eager,jacobian_function:values differ" in result.undeclared
    assert not any("map_fn" in u for u in result.undeclared)


def test_tensorflow_50170_raises_inside_cond_and_map_fn_under_tf_function_only(cases):
    case = cases["contexts.variable_in_grad_fn_50170"]
    modes = PLAIN + ("cond_eager", "cond_function", "cond_graph", "map_fn_eager",
                     "map_fn_function", "jacobian_function", "vectorized_map_function")
    (result,) = helpers.run(_undeclared(case), modes)
    for mode in ("eager", "function", "graph", "cond_eager", "cond_graph", "map_fn_eager",
                 "jacobian_function", "vectorized_map_function"):
        assert _grad(result.outcomes[mode]) == pytest.approx(2.0), mode
    cond, loop = result.outcomes["cond_function"], result.outcomes["map_fn_function"]
    assert (cond.error.type, cond.error.stage) == ("AttributeError", "order 1")
    assert "Tensor.graph is undefined when eager execution is enabled" in cond.error.message
    assert loop.error.type == "ValueError" and "internal_captures" in loop.error.message
    assert result.verdict.value == "fail"
    assert result.reason == ("cond_function raises AttributeError at order 1, where function "
                             "computed at this point: Tensor.graph is undefined when eager "
                             "execution is enabled.")
    # The library declares both, with the number.
    (declared,) = helpers.run(case, modes)
    assert declared.verdict.value == "xfail"
    assert "tensorflow#50170" in " ".join(declared.details)


def test_tensorflow_53726_vectorized_map_drops_a_numpy_custom_gradient_silently(cases):
    case = cases["contexts.numpy_function_53726"]
    (result,) = helpers.run(_undeclared(case), ("eager", "map_fn_eager", "vectorized_map_eager"))
    assert _grad(result.outcomes["eager"]) == pytest.approx([2.0, 4.0, 6.0])
    assert _grad(result.outcomes["map_fn_eager"]) == pytest.approx([2.0, 4.0, 6.0])
    vectorized = result.outcomes["vectorized_map_eager"]
    assert _grad(vectorized) == pytest.approx([0.0, 0.0, 0.0])
    assert vectorized.usage.unused == ("numpy_square",)
    assert result.verdict.value == "fail"
    assert "vectorized_map_eager:gradient unused" in result.undeclared
    (declared,) = helpers.run(case, ("eager", "map_fn_eager", "vectorized_map_eager"))
    assert declared.verdict.value == "xfail"


def test_an_input_a_loop_does_not_differentiate_gets_zeros_where_eager_says_none(cases):
    # structure.none_gradient's grad_fn returns None for scale: a loop's gradient is zeros there
    (result,) = helpers.run(cases["structure.none_gradient"], ("eager", "while_loop_function"))
    assert result.outcomes["eager"].orders[1][1].value is None
    assert not np.any(result.outcomes["while_loop_function"].orders[1][1].value)
    assert result.verdict.value == "pass", result.details


def test_batch_jacobian_skips_a_case_with_variables_and_says_why(cases):
    (result,) = helpers.run(cases["variables.grad_fn_variables"], ("eager", "batch_jacobian_eager"))
    outcome = result.outcomes["batch_jacobian_eager"]
    assert outcome.status.value == "skip"
    assert outcome.note == ("batch_jacobian differentiates batched inputs only, and this case "
                            "differentiates variables: jacobian covers them")


_SCRIPT = """
import tensorflow as tf

w = tf.Variable(2.0, trainable=False)


@tf.custom_gradient
def multiply_by_w(x):
    def grad_fn(dy):
        return dy * w
    return w * x, grad_fn


x = tf.constant(5.0)
with tf.GradientTape() as tape:
    tape.watch(x)
    y = multiply_by_w(x)
print(tape.gradient(y, x).numpy())
"""


def test_a_recording_is_replayed_in_the_contexts_asked_for(tmp_path):
    # tensorflow#50170's function, recorded from a script, then replayed inside tf.cond and map_fn.
    (tmp_path / "train.py").write_text(_SCRIPT)
    recorded = helpers.harness("record", "rec", "--", sys.executable, "train.py", cwd=tmp_path,
                               timeout=600)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    replayed = helpers.harness("replay", "rec", "--mode=eager,function,cond,map_fn", cwd=tmp_path,
                               timeout=600)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert ("cond_function raises AttributeError at order 1, where function computed at this "
            "point: Tensor.graph is undefined when eager execution is enabled.") in replayed.stdout
    assert "map_fn_function raises ValueError at order 1, where function computed" in (
        replayed.stdout)
    assert "cond_eager:ok" in replayed.stdout and "map_fn_eager:ok" in replayed.stdout


@pytest.mark.slow
def test_the_library_in_every_context_passes_but_what_it_declares(tmp_path):
    report = tmp_path / "r.json"
    proc = helpers.harness("--mode=all,contexts", f"--json_out={report}", timeout=3000)
    results = json.loads(report.read_text())["results"]
    bad = [f"{r['case']}[{r['point']}]: {r['verdict']}: {r['reason']}" for r in results
           if r["verdict"] not in ("pass", "xfail")]
    assert not bad, "\n".join(bad)
    assert proc.returncode == 0
    contexts = {r["case"]: r["verdict"] for r in results if r["case"].startswith("contexts.")}
    assert contexts == {"contexts.variable_in_grad_fn_50170": "xfail",
                        "contexts.numpy_function_53726": "xfail",
                        "contexts.clip_dy_by_norm": "xfail"}
