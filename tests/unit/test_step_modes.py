"""The training-step modes' rules that need no TensorFlow: selection, what a step is compared on,
the narrow-dtype tolerance, the yardstick, which points a step trains, and its loss weights."""

import numpy as np

from harness.measure import upstream
from harness.criteria.compare import compare_outcomes
from harness.measure.modes import CORE_MODES, FULL_MODES, KERAS3_MODES, STEP_MODES, parse_modes
from harness.measure.modes.step_rules import MIXED, WIDTH, weight_row, why_not
from harness.records import Differentiated, ErrorInfo, ModeOutcome, Output, Status
from harness.criteria.rules import oracle_subject, yardstick
from tests.unit.outcomes import TF, make_case

X = (Differentiated("x", "float32", (2,)),)


def f32(*values):
    return np.array(values, np.float32)


def tape(mode, *orders, upstream_orders=(), status=Status.OK, error=None, upstream_error=None):
    """An outcome of a mode computing every order (a tape mode)."""
    return ModeOutcome(mode=mode, status=status, sources=X, error=error,
                       upstream_error=upstream_error,
                       orders=tuple(tuple(Output.of(v) for v in o) for o in orders),
                       upstream=tuple(tuple(Output.of(v) for v in o) for o in upstream_orders))


def step(mode, grad, weighted=None, computed_in=""):
    """A training step's outcome: no outputs at order 0, order 1 only."""
    return ModeOutcome(mode=mode, status=Status.OK, sources=X, top_order=1, computed_in=computed_in,
                       orders=((), (Output.of(grad),)),
                       upstream=() if weighted is None else ((Output.of(weighted),),))


def error(type_, stage):
    return ErrorInfo(type=type_, bases=(type_, "Exception"), message="it broke", stage=stage)


# -- selection ------------------------------------------------------------------------------------

def test_keras_selects_the_five_training_step_modes_with_eager_as_their_yardstick():
    assert STEP_MODES == ("keras_eager", "keras_fit", "keras_xla", "keras_mixed", "keras_mirrored")
    assert parse_modes("keras") == ("eager",) + STEP_MODES
    assert parse_modes("keras_mixed") == ("eager", "keras_mixed")


def test_keras3_selects_the_five_keras_3_steps_and_keras_keras3_both_kinds_with_one_yardstick():
    assert KERAS3_MODES == ("keras3_eager", "keras3_fit", "keras3_xla", "keras3_mixed",
                            "keras3_mirrored")
    assert parse_modes("keras3") == ("eager",) + KERAS3_MODES
    assert parse_modes("keras,keras3") == ("eager",) + STEP_MODES + KERAS3_MODES
    assert parse_modes("keras3_fit,keras_fit") == ("eager", "keras_fit", "keras3_fit")
    assert parse_modes("all,keras3_fit") == CORE_MODES + ("keras3_fit",)
    assert not set(parse_modes("full")) & set(KERAS3_MODES)


def test_a_step_mode_named_beside_others_adds_no_yardstick_of_its_own():
    assert parse_modes("all,keras_fit") == CORE_MODES + ("keras_fit",)
    assert parse_modes("graph,keras_xla") == ("graph", "keras_xla")


def test_all_and_full_keep_their_meaning_without_the_training_steps():
    assert parse_modes("all") == CORE_MODES
    assert not set(parse_modes("full")) & set(STEP_MODES)
    assert parse_modes("full") == FULL_MODES


def test_an_unknown_mode_names_keras_among_the_choices():
    try:
        parse_modes("keras_tpu")
    except ValueError as e:
        assert "'keras' (the tf_keras training-step modes), 'keras3' (the Keras 3 ones)" in str(e)
        assert "keras_mirrored" in str(e) and "keras3_mirrored" in str(e)
    else:
        raise AssertionError("keras_tpu was accepted")


# -- comparison at order 1 ------------------------------------------------------------------------

def test_a_step_is_compared_at_order_1_only_not_at_the_forward_or_order_2():
    ref = tape("eager", [f32(1.0, 2.0)], [f32(0.5, -1.0)], [f32(9.0, 9.0)],
               upstream_orders=[[f32(0.25, 0.75)], [f32(3.0, 3.0)]])
    assert compare_outcomes(ref, step("keras_fit", f32(0.5, -1.0), f32(0.25, 0.75))) == []


def test_a_step_that_differs_at_order_1_is_reported_with_its_upstream_weights_apart():
    ref = tape("eager", [f32(1.0, 2.0)], [f32(0.5, -1.0)], upstream_orders=[[f32(0.25, 0.75)]])
    found = compare_outcomes(ref, step("keras_fit", f32(0.5, -1.0), f32(0.25, -0.75)))
    assert len(found) == 1 and found[0].upstream and found[0].order == 1
    assert "order 1 gradient wrt x with upstream weights: keras_fit vs eager" in found[0].message
    plain = compare_outcomes(ref, step("keras_fit", f32(0.5, 1.0), f32(0.25, 0.75)))
    assert [m.upstream for m in plain] == [False] and "keras_fit=1 eager=-1" in plain[0].message


def test_a_yardstick_that_raised_above_order_1_is_compared_on_the_order_1_it_computed():
    ref = tape("eager", [f32(1.0, 2.0)], [f32(0.5, -1.0)], status=Status.ERROR,
               error=error("ValueError", "order 2"))
    assert compare_outcomes(ref, step("keras_fit", f32(0.5, -1.0))) == []
    assert compare_outcomes(ref, step("keras_fit", f32(0.5, 1.0)))[0].kind == "value"
    at_order_1 = tape("eager", [f32(1.0, 2.0)], status=Status.ERROR,
                      error=error("ValueError", "order 1"))
    assert compare_outcomes(at_order_1, step("keras_fit", f32(0.5, -1.0)))[0].kind == "status"


def test_a_weighted_chain_error_above_order_1_is_not_the_steps_concern():
    ref = tape("eager", [f32(1.0, 2.0)], [f32(0.5, -1.0)], [f32(9.0, 9.0)],
               upstream_orders=[[f32(0.25, 0.75)]],
               upstream_error=error("TypeError", "order 2 with upstream weights"))
    assert compare_outcomes(ref, step("keras_fit", f32(0.5, -1.0), f32(0.25, 0.75))) == []
    at_order_1 = tape("eager", [f32(1.0, 2.0)], [f32(0.5, -1.0)],
                      upstream_error=error("TypeError", "order 1 with upstream weights"))
    found = compare_outcomes(at_order_1, step("keras_fit", f32(0.5, -1.0), f32(0.25, 0.75)))
    assert found and found[0].upstream and "eager raises TypeError" in found[0].message


def test_float16_computed_values_get_the_narrow_tolerance_and_no_more():
    # float16 rounds at 2**-11 relative per op: 4e-3 apart is a few roundings, 3e-2 is not.
    ref = tape("eager", [f32(1.0, 2.0)], [f32(0.5, -1.0)])
    near = step("keras_mixed", f32(0.5 * (1 + 4e-3), -1.0), computed_in="float16")
    assert compare_outcomes(ref, near) == []
    # same dtype: too far
    assert compare_outcomes(ref, step("keras_fit", f32(0.5 * (1 + 4e-3), -1.0)))
    far = step("keras_mixed", f32(0.5 * (1 + 3e-2), -1.0), computed_in="float16")
    assert "rtol 0.01" in compare_outcomes(ref, far)[0].message


# -- yardstick and oracles ------------------------------------------------------------------------

def test_a_step_is_no_yardstick_while_another_mode_is_left():
    from harness import Expectation

    case = make_case(Expectation(modes=["eager"], outcome="ValueError", reason="r"))
    outcomes = {"eager": tape("eager", [f32(1.0)], status=Status.ERROR,
                              error=error("ValueError", "order 1")),
                "keras_fit": step("keras_fit", f32(1.0)),
                "graph": tape("graph", [f32(1.0)], [f32(1.0)])}
    assert yardstick(case, "x=1.0", outcomes, TF, "eager") == "graph"
    del outcomes["graph"]
    assert yardstick(case, "x=1.0", outcomes, TF, "eager") == "keras_fit"


def test_a_keras_3_step_is_no_yardstick_while_another_mode_is_left():
    from harness import Expectation

    case = make_case(Expectation(modes=["eager"], outcome="ValueError", reason="r"))
    outcomes = {"eager": tape("eager", [f32(1.0)], status=Status.ERROR,
                              error=error("ValueError", "order 1")),
                "keras3_fit": step("keras3_fit", f32(1.0)),
                "graph": tape("graph", [f32(1.0)], [f32(1.0)])}
    assert yardstick(case, "x=1.0", outcomes, TF, "eager") == "graph"


def test_the_oracles_never_check_a_step_which_has_no_order_2():
    raised = tape("eager", [f32(1.0)], status=Status.ERROR, error=error("ValueError", "order 1"))
    graph = tape("graph", [f32(1.0)], [f32(1.0)])
    assert oracle_subject({"eager": raised, "keras_fit": step("keras_fit", f32(1.0)),
                           "graph": graph},
                          "eager") == ("graph",
                                       "; checked on graph's values, since eager (the yardstick "
                                       "mode) "
                                                "raised ValueError")
    assert oracle_subject({"eager": raised, "keras_fit": step("keras_fit", f32(1.0))},
                          "eager") == ("eager", "")
    assert oracle_subject({"keras_fit": step("keras_fit", f32(1.0)), "eager": raised},
                          "keras_fit")[0] == "eager"


# -- which points a step trains, and its loss weights ---------------------------------------------

def test_complex_inputs_are_not_trained_and_the_reason_names_the_argument():
    case = make_case(points=[{"x": np.complex64(1 + 2j)}])
    reason = why_not("keras_fit", case, case.points[0])
    assert reason.startswith("x is complex64:") and "real" in reason


def test_mixed_precision_trains_float32_inputs_only():
    case = make_case(points=[{"x": np.float64(1.0)}])
    assert "x is float64" in why_not(MIXED, case, case.points[0])
    assert why_not("keras_fit", case, case.points[0]) is None
    single = make_case(points=[{"x": np.float32(1.0)}])
    assert why_not(MIXED, single, single.points[0]) is None


def test_keras_3_mixed_precision_trains_float32_inputs_only_too():
    case = make_case(points=[{"x": np.float64(1.0)}])
    assert why_not("keras3_mixed", case,
                   case.points[0]).startswith("x is float64: the mixed_float16 policy")
    assert why_not("keras3_fit", case, case.points[0]) is None


def test_the_weighted_steps_loss_uses_the_upstream_oracles_own_weights_for_every_target():
    row = weight_row("tests.case", "x=1.0", weighted=True)
    seed = upstream.seed("tests.case", "x=1.0")
    assert row.dtype == np.float32 and row.shape == (WIDTH,)
    for target, size in ((0, 1), (2, 70), (9, 5)):  # 70 > PERIOD wraps; target 9 shares table 1
        picked = row[(target % upstream.TARGETS) * upstream.PERIOD + np.arange(size)
                     % upstream.PERIOD]
        np.testing.assert_array_equal(picked, upstream.weights(seed, 1, target, (size,)))
    assert (weight_row("tests.case", "x=1.0", weighted=False) == 1).all()
