"""Pure comparison: outputs, outcomes and gradient structure, built by hand with NumPy."""

import numpy as np
import pytest

from harness.criteria.compare import check_gradients, compare_outcomes, compare_outputs, where
from harness.records import Differentiated, ErrorInfo, ModeOutcome, Output, Status
from harness.criteria.tolerance import DEFAULT_TOLERANCES, Tol

F32 = DEFAULT_TOLERANCES["float32"]
INF = np.inf
NAN = np.nan


def cmp(ref, got, tol=None):
    """compare_outputs with function compared against eager."""
    ref_out = ref if isinstance(ref, Output) else Output.of(ref)
    got_out = got if isinstance(got, Output) else Output.of(got)
    if tol is None:
        tol = DEFAULT_TOLERANCES.get(ref_out.dtype, Tol(0.0, 0.0))
    return compare_outputs(ref_out, got_out, tol, ref_mode="eager", mode="function",
                           at="forward output 0")


def ok(mode, *orders, sources=()):
    return ModeOutcome(mode=mode, status=Status.OK,
                       orders=tuple(tuple(Output.of(v) if not isinstance(v, Output) else v
                                          for v in o)
                                    for o in orders),
                       sources=tuple(sources))


def err(mode, type_, stage="forward", bases=(), message="it broke\nsecond line"):
    return ModeOutcome(mode=mode, status=Status.ERROR,
                       error=ErrorInfo(type=type_, bases=tuple(bases) or (type_, "Exception"),
                                       message=message, stage=stage))


def f32(*values):
    return np.array(values, np.float32)


# -- non-finite positions --------------------------------------------------------------


def test_nan_at_same_positions_agrees():
    assert cmp(f32(1.0, NAN, 3.0), f32(1.0, NAN, 3.0)) is None


def test_pos_inf_at_same_positions_agrees():
    assert cmp(f32(INF, 2.0), f32(INF, 2.0)) is None


def test_neg_inf_vs_neg_inf_agrees():
    # The seed's -inf at x=100 is a correct, agreeing answer (DESIGN, Judging).
    assert cmp(np.float32(-INF), np.float32(-INF)) is None


def test_nan_positions_must_match():
    m = cmp(f32(NAN, 2.0), f32(1.0, NAN))
    assert m is not None and m.kind == "nonfinite"
    # The first differing position is index 0.
    assert "(0,)" in m.message


def test_nan_vs_finite_disagrees():
    m = cmp(np.float32(1.0), np.float32(NAN))
    assert m is not None and m.kind == "nonfinite"


def test_pos_inf_vs_neg_inf_disagrees():
    m = cmp(f32(1.0, -INF), f32(1.0, INF))
    assert m is not None and m.kind == "nonfinite"
    assert "(1,)" in m.message


def test_inf_vs_large_finite_disagrees():
    big = np.finfo(np.float32).max
    m = cmp(np.float32(INF), np.float32(big))
    assert m is not None and m.kind == "nonfinite"


def test_nan_vs_inf_disagrees():
    m = cmp(np.float32(INF), np.float32(NAN))
    assert m is not None and m.kind == "nonfinite"


def test_finite_elements_beside_matching_infs_are_still_compared():
    m = cmp(f32(-INF, 1.0), f32(-INF, 2.0))
    assert m is not None and m.kind == "value"
    assert "(1,)" in m.message


def test_complex_nonfinite_parts_must_match():
    ref = np.array([complex(1.0, INF)], np.complex64)
    assert cmp(ref, ref.copy()) is None
    m = cmp(ref, np.array([complex(INF, 1.0)], np.complex64))
    assert m is not None and m.kind == "nonfinite"


# -- None, dtype, shape ----------------------------------------------------------------


def test_none_vs_none_agrees():
    none = Output.of(None, "float32", ())
    assert cmp(none, none) is None


def test_none_vs_zeros_disagrees():
    # Unconnected is not the same as zeros unless the run asks for that (DESIGN).
    m = cmp(Output.of(None, "float32", (2,)), f32(0.0, 0.0))
    assert m is not None and m.kind == "none"
    m = cmp(f32(0.0, 0.0), Output.of(None, "float32", (2,)))
    assert m is not None and m.kind == "none"


def test_shape_mismatch_disagrees():
    m = cmp(f32(1.0, 1.0), np.ones((2, 1), np.float32))
    assert m is not None and m.kind == "shape"
    assert "[2, 1]" in m.message and "[2]" in m.message


def test_scalar_vs_one_element_vector_is_a_shape_mismatch():
    m = cmp(np.float32(1.0), f32(1.0))
    assert m is not None and m.kind == "shape"


def test_dtype_mismatch_disagrees_even_for_equal_numbers():
    m = cmp(np.float32(1.0), np.float64(1.0))
    assert m is not None and m.kind == "dtype"
    assert "float64" in m.message and "float32" in m.message


# -- per-dtype tolerance ---------------------------------------------------------------
# The rule: |got - ref| <= atol + rtol * |ref|, with the table's row for the dtype.

# float32 numbers in [64, 128) are 2**-17 apart. At ref = 100 the float32 row allows
# 1e-5 + 1.3e-6 * 100 = 1.4e-4: 18 steps (1.373e-4) are inside, 19 (1.450e-4) outside.
F32_STEP_AT_100 = 2.0 ** -17


def _f32_steps_above_100(k):
    value = np.float32(100.0) + np.float32(k * F32_STEP_AT_100)
    assert float(value) - 100.0 == k * F32_STEP_AT_100  # the construction is exact
    return value


def test_float32_difference_within_rtol_agrees():
    assert cmp(np.float32(100.0), _f32_steps_above_100(18)) is None


def test_float32_difference_just_outside_rtol_disagrees():
    m = cmp(np.float32(100.0), _f32_steps_above_100(19))
    assert m is not None and m.kind == "value"


def test_rtol_scales_with_the_reference_value_not_with_got():
    # The rule's |ref| is the reference mode's value. With rtol 0.5 and atol 0:
    # ref 2, got 1: |1 - 2| = 1 <= 0.5 * 2, agrees; ref 1, got 2: 1 > 0.5 * 1, disagrees.
    half = Tol(rtol=0.5, atol=0.0)
    assert cmp(np.float32(2.0), np.float32(1.0), tol=half) is None
    m = cmp(np.float32(1.0), np.float32(2.0), tol=half)
    assert m is not None and m.kind == "value"


def test_float32_atol_covers_differences_near_zero():
    # At ref = 0 the allowance is atol alone: 1e-5.
    assert cmp(np.float32(0.0), np.float32(9e-6)) is None
    assert cmp(np.float32(0.0), np.float32(-9e-6)) is None
    m = cmp(np.float32(0.0), np.float32(1.1e-5))
    assert m is not None and m.kind == "value"


def test_float16_difference_within_rtol_agrees():
    # float16 steps are 2**-10 ~ 9.77e-4 above 1; the row allows 1e-5 + 1e-3 * 1 = 1.01e-3.
    one_step = np.float16(1.0) + np.float16(2.0 ** -10)
    assert cmp(np.float16(1.0), one_step) is None


def test_float16_difference_outside_rtol_disagrees():
    two_steps = np.float16(1.0) + np.float16(2.0 ** -9)  # 1.95e-3 > 1.01e-3
    m = cmp(np.float16(1.0), two_steps)
    assert m is not None and m.kind == "value"


def test_float64_difference_within_tolerance_agrees():
    # The float64 row allows 1e-7 + 1e-7 * 1 = 2e-7 at ref = 1.
    assert cmp(np.float64(1.0), np.float64(1.0 + 1.9e-7)) is None


def test_float64_difference_just_outside_tolerance_disagrees():
    m = cmp(np.float64(1.0), np.float64(1.0 + 2.1e-7))
    assert m is not None and m.kind == "value"


def test_same_difference_agrees_in_float32_but_not_float64():
    # 4 float32 steps above 1 (4 * 2**-23 = 4.77e-7) are inside float32's 1e-5 + 1.3e-6 = 1.13e-5
    # and outside float64's 2e-7.
    ref32, got32 = np.float32(1.0), np.float32(1.0) + np.float32(4 * 2.0 ** -23)  # 4.77e-7
    assert cmp(ref32, got32) is None
    m = cmp(np.float64(1.0), np.float64(float(got32)))
    assert m is not None and m.kind == "value"


def test_integers_must_match_exactly():
    m = cmp(np.array([1, 2, 3], np.int32), np.array([1, 2, 4], np.int32))
    assert m is not None and m.kind == "value"
    assert "(2,)" in m.message
    assert cmp(np.array([1, 2, 3], np.int32), np.array([1, 2, 3], np.int32)) is None


def test_int64_values_float64_cannot_hold_apart_still_differ():
    # 2**60 + 1 and 2**60 are the same float64; compared as integers they differ.
    m = cmp(np.array([2 ** 60 + 1], np.int64), np.array([2 ** 60], np.int64), tol=Tol(1e-3, 1.0))
    assert m is not None and m.kind == "value"
    assert (
        "function=1152921504606846976 eager=1152921504606846977 (exact match required)" in m.message
    ), m.message
    assert cmp(np.array([2 ** 60 + 1], np.int64), np.array([2 ** 60 + 1], np.int64)) is None


def test_integers_ignore_any_tolerance_given_for_them():
    assert cmp(np.array([1000], np.int32), np.array([1001], np.int32),
               tol=Tol(0.01, 5.0)) is not None
    assert cmp(np.array([True]), np.array([False])) is not None


def test_complex_judged_with_its_table_row():
    # complex64 uses float32's row: a 1e-6 change of the imaginary part at |ref| = 1 is inside
    # 1.13e-5.
    ref = np.array([1.0 + 0.0j], np.complex64)
    assert cmp(ref, np.array([1.0 + 1e-6j], np.complex64)) is None
    m = cmp(ref, np.array([1.0 + 1e-4j], np.complex64))
    assert m is not None and m.kind == "value"


# -- the worst-element message ---------------------------------------------------------


def test_worst_element_message_names_index_both_values_errors_and_tolerance():
    ref = np.array([[1.0, 2.0], [2.5, 4.0]], np.float32)
    got = np.array([[1.0, 2.25], [3.25, 4.0]], np.float32)
    # Two elements are out: (0, 1) by 0.25 and (1, 0) by 0.75, the worse one.
    m = cmp(ref, got)
    assert m is not None and m.kind == "value"
    text = m.message
    assert "2 of 4" in text
    assert "(1, 0)" in text
    assert "function=3.25" in text and "eager=2.5" in text
    assert "abs err 0.75" in text
    assert "rel err 0.3" in text  # 0.75 / 2.5
    assert "rtol 1.3e-06" in text and "atol 1e-05" in text
    assert text.startswith("forward output 0: function vs eager")


def test_error_messages_name_where_for_gradients():
    assert where(0, 1, ["x"]) == "forward output 1"
    assert where(2, 0, ["x", "y"]) == "order 2 gradient wrt x"
    assert where(1, 1, ["x", "y"]) == "order 1 gradient wrt y"


# -- whole outcomes --------------------------------------------------------------------

X32 = Differentiated("x", "float32", ())


def test_equal_outcomes_have_no_mismatch():
    a = ok("eager", [np.float32(1.0)], [np.float32(2.0)], sources=[X32])
    b = ok("function", [np.float32(1.0)], [np.float32(2.0)], sources=[X32])
    assert compare_outcomes(a, b) == []


def test_outcome_mismatch_names_order_and_source():
    a = ok("eager", [np.float32(1.0)], [np.float32(2.0)], sources=[X32])
    b = ok("graph", [np.float32(1.0)], [np.float32(3.0)], sources=[X32])
    [m] = compare_outcomes(a, b)
    assert m.where == "order 1 gradient wrt x"
    assert "graph vs eager" in m.message


def test_case_tolerance_as_one_tol_overrides_every_dtype():
    # 5e-4 at 1.0 is outside float32's row (1.13e-5) but inside atol 1e-3.
    a = ok("eager", [np.float32(1.0)])
    b = ok("function", [np.float32(1.0005)])
    assert len(compare_outcomes(a, b)) == 1
    assert compare_outcomes(a, b, tolerance=Tol(rtol=0.0, atol=1e-3)) == []


def test_case_tolerance_mapping_overrides_only_its_dtypes():
    ref = ok("eager", [np.float32(1.0), np.float64(1.0)])
    got = ok("function", [np.float32(1.0005), np.float64(1.0005)])
    loosen64 = {"float64": Tol(rtol=1e-3, atol=0.0)}  # 5e-4 <= 1e-3 * 1
    [m] = compare_outcomes(ref, got, tolerance=loosen64)
    # float32 still uses the table, so only output 0 disagrees.
    assert m.where == "forward output 0"


def test_different_order_counts_disagree():
    a = ok("eager", [np.float32(1.0)], [np.float32(2.0)], sources=[X32])
    b = ok("function", [np.float32(1.0)], sources=[X32])
    [m] = compare_outcomes(a, b)
    assert m.kind == "count"


def test_different_output_counts_disagree():
    a = ok("eager", [np.float32(1.0), np.float32(2.0)])
    b = ok("function", [np.float32(1.0)])
    [m] = compare_outcomes(a, b)
    assert m.kind == "count"


# -- error parity ----------------------------------------------------------------------


def test_same_exception_class_agrees():
    assert compare_outcomes(err("eager", "ValueError"),
                            err("graph", "ValueError", stage="order 1")) == []


def test_different_exception_classes_disagree():
    [m] = compare_outcomes(err("eager", "ValueError"), err("function", "InternalError"))
    assert m.kind == "error_type"
    assert "ValueError" in m.message and "InternalError" in m.message


def test_error_vs_values_disagrees():
    values = ok("eager", [np.float32(1.0)])
    error = err("function", "TypeError")
    [m] = compare_outcomes(values, error)
    assert m.kind == "status"
    assert "TypeError" in m.message
    [m] = compare_outcomes(err("eager", "TypeError"), ok("function", [np.float32(1.0)]))
    assert m.kind == "status"


def test_shared_base_class_is_not_the_same_exception_class():
    # Only the class itself counts for parity; both are ValueError subclasses here.
    a = err("eager", "InvalidArgumentError", bases=("InvalidArgumentError", "ValueError"))
    b = err("function", "UnimplementedError", bases=("UnimplementedError", "ValueError"))
    [m] = compare_outcomes(a, b)
    assert m.kind == "error_type"


# -- gradient structure ----------------------------------------------------------------


def test_scalar_gradient_for_vector_source_is_a_mismatch():
    src = Differentiated("x", "float32", (3,))
    o = ok("eager", [np.float32(1.0)], [np.float32(3.0)], sources=[src])
    [m] = check_gradients(o)
    assert m.kind == "gradient"
    assert m.where == "order 1 gradient wrt x"


def test_float32_gradient_for_float64_source_is_a_mismatch():
    src = Differentiated("x", "float64", ())
    o = ok("eager", [np.float64(1.0)], [np.float32(2.0)], sources=[src])
    [m] = check_gradients(o)
    assert m.kind == "gradient"
    assert "float32" in m.message and "float64" in m.message


def test_none_gradient_is_well_formed():
    src = Differentiated("x", "float32", (3,))
    o = ok("eager", [np.float32(1.0)], [Output.of(None, "float32", (3,))], sources=[src])
    assert check_gradients(o) == []


def test_well_formed_gradients_at_every_order_pass():
    src = Differentiated("x", "float64", (2,))
    g = np.array([1.0, 2.0])
    o = ok("eager", [np.float64(1.0)], [g], [g], sources=[src])
    assert check_gradients(o) == []


def test_malformed_gradient_at_second_order_is_found():
    src = Differentiated("x", "float64", (2,))
    o = ok("eager", [np.float64(1.0)], [np.array([1.0, 2.0])], [np.array([1.0, 2.0], np.float32)],
           sources=[src])
    [m] = check_gradients(o)
    assert m.where == "order 2 gradient wrt x"


def test_gradient_count_not_matching_sources_is_a_mismatch():
    o = ok("eager", [np.float32(1.0)], [np.float32(1.0), np.float32(2.0)], sources=[X32])
    [m] = check_gradients(o)
    assert m.kind == "gradient"


def test_forward_outputs_are_not_checked_against_sources():
    # Order 0 is the function's output; it need not have any input's shape.
    o = ok("eager", [np.ones((4, 4), np.float64)], [np.float32(1.0)], sources=[X32])
    assert check_gradients(o) == []


@pytest.mark.parametrize("kind", [np.float32, np.float64])
def test_identical_values_agree_at_zero_tolerance(kind):
    v = np.array([0.1, -3.0, 1e30], kind)
    assert cmp(v, v.copy(), tol=Tol(0.0, 0.0)) is None
