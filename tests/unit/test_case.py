"""The case API's validation rules and point labels: pure Python and NumPy, no TensorFlow."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from harness.case import BAD_GRADIENT, VALUES_DIFFER, Case, CaseError, Expectation
from harness.criteria.tolerance import Tol


def f(x):
    return x


def f2(x, n):
    return x


def make(**overrides):
    """A valid case, with `overrides` applied: each test breaks one field."""
    fields = dict(id="tests.square", fn=f, points=[{"x": np.float32(1.0)}],
                  source="tests", description="a case for the validation tests")
    fields.update(overrides)
    return Case(**fields)


def assert_names(error: CaseError, case_id: str, field: str) -> None:
    # The brief promises a message that names the case and the field.
    text = str(error)
    assert repr(case_id) in text, text
    assert repr(field) in text, text


# -- a valid case -----------------------------------------------------------------------


def test_valid_case_keeps_its_fields_and_defaults_wrt_to_floating_arguments():
    case = make(fn=f2, points=[{"x": np.float32(1.0), "n": np.int32(3)}], order=2)
    assert case.order == 2
    # n is an integer, so by default only x is differentiated.
    assert case.wrt == ("x",)
    assert case.wrt_indices == (0,)


def test_case_error_is_a_value_error():
    # Callers that catch ValueError for bad input also catch a bad case.
    assert issubclass(CaseError, ValueError)


# -- one rule at a time ----------------------------------------------------------------


def test_no_points_is_rejected_naming_points():
    with pytest.raises(CaseError) as info:
        make(points=[])
    assert_names(info.value, "tests.square", "points")


def test_order_zero_is_rejected_naming_order():
    with pytest.raises(CaseError) as info:
        make(order=0)
    assert_names(info.value, "tests.square", "order")


def test_order_true_is_not_accepted_as_the_integer_one():
    with pytest.raises(CaseError) as info:
        make(order=True)
    assert_names(info.value, "tests.square", "order")


def test_integer_argument_named_in_wrt_is_rejected_naming_wrt():
    with pytest.raises(CaseError) as info:
        make(fn=f2, points=[{"x": np.float32(1.0), "n": np.int32(3)}], wrt=["n"])
    assert_names(info.value, "tests.square", "wrt")
    assert "'n'" in str(info.value)


def test_wrt_naming_an_unknown_argument_is_rejected():
    with pytest.raises(CaseError) as info:
        make(wrt=["y"])
    assert_names(info.value, "tests.square", "wrt")


def test_unknown_mode_in_expectation_is_rejected_naming_the_expectation():
    e = Expectation(modes=["function", "xla_warp"], outcome="ValueError", reason="because")
    with pytest.raises(CaseError) as info:
        make(expectations=[e])
    assert_names(info.value, "tests.square", "expectations[0]")
    assert "xla_warp" in str(info.value)


def test_expectation_without_reason_is_rejected():
    e = Expectation(modes=["function"], outcome="ValueError", reason="")
    with pytest.raises(CaseError) as info:
        make(expectations=[e])
    assert_names(info.value, "tests.square", "expectations[0]")


def test_expectation_with_blank_reason_is_rejected():
    ok = Expectation(modes=["graph"], outcome="ValueError", reason="traced")
    blank = Expectation(modes=["function"], outcome="ValueError", reason="   ")
    with pytest.raises(CaseError) as info:
        make(expectations=[ok, blank])
    # The second expectation is the broken one, and the message says which.
    assert_names(info.value, "tests.square", "expectations[1]")


def test_values_differ_cannot_name_the_reference_mode():
    # Values are compared with eager; eager cannot differ from itself.
    e = Expectation(modes=["eager", "function"], outcome=VALUES_DIFFER, reason="r")
    with pytest.raises(CaseError) as info:
        make(expectations=[e])
    assert_names(info.value, "tests.square", "expectations[0]")


def test_expectation_outcome_must_be_an_exception_name_or_a_marker():
    e = Expectation(modes=["function"], outcome="raises a value error", reason="r")
    with pytest.raises(CaseError) as info:
        make(expectations=[e])
    assert_names(info.value, "tests.square", "expectations[0]")


def test_expectation_for_an_unknown_point_label_is_rejected():
    e = Expectation(modes=["function"], outcome="ValueError", reason="r", points=["x=2.0"])
    with pytest.raises(CaseError) as info:
        make(expectations=[e])
    assert_names(info.value, "tests.square", "expectations[0]")


def test_expectation_with_bad_tf_versions_is_rejected():
    e = Expectation(modes=["function"], outcome="ValueError", reason="r", tf_versions="2.16+")
    with pytest.raises(CaseError) as info:
        make(expectations=[e])
    assert_names(info.value, "tests.square", "expectations[0]")


def test_valid_expectations_are_accepted():
    es = [Expectation(modes=["function", "graph"], outcome="TypeError", reason="r",
                      tf_versions=">=2.16"),
          Expectation(modes=["eager"], outcome=BAD_GRADIENT, reason="r", points=["x=1.0"])]
    assert make(expectations=es).expectations == tuple(es)


def test_python_float_instead_of_numpy_value_is_rejected_naming_points():
    with pytest.raises(CaseError) as info:
        make(points=[{"x": 1.0}])
    assert_names(info.value, "tests.square", "points")
    # The message says what to give instead.
    assert "np.float32" in str(info.value)


def test_both_fn_and_build_is_rejected_naming_fn():
    with pytest.raises(CaseError) as info:
        make(fn=f, build=lambda: f)
    assert_names(info.value, "tests.square", "fn")


def test_neither_fn_nor_build_is_rejected():
    with pytest.raises(CaseError) as info:
        make(fn=None)
    assert_names(info.value, "tests.square", "fn")


def test_fn_that_cannot_take_the_point_arguments_is_rejected():
    with pytest.raises(CaseError) as info:
        make(fn=f, points=[{"x": np.float32(1.0), "y": np.float32(2.0)}])
    assert_names(info.value, "tests.square", "fn")


def test_bad_tf_versions_string_is_rejected_naming_tf_versions():
    with pytest.raises(CaseError) as info:
        make(tf_versions="2.16 or later")
    assert_names(info.value, "tests.square", "tf_versions")


def test_points_with_different_arguments_are_rejected():
    with pytest.raises(CaseError) as info:
        make(points=[{"x": np.float32(1.0)}, {"y": np.float32(2.0)}])
    assert_names(info.value, "tests.square", "points")


def test_two_points_with_the_same_label_are_rejected():
    with pytest.raises(CaseError) as info:
        make(points=[{"x": np.float32(1.0)}, {"x": np.float32(1.0)}])
    assert_names(info.value, "tests.square", "points")


def test_tolerance_that_is_not_a_tol_is_rejected():
    with pytest.raises(CaseError) as info:
        make(tolerance={"float32": 1e-3})
    assert_names(info.value, "tests.square", "tolerance")


def test_missing_description_is_rejected():
    with pytest.raises(CaseError) as info:
        make(description="")
    assert_names(info.value, "tests.square", "description")


def test_missing_source_is_rejected():
    with pytest.raises(CaseError) as info:
        make(source=" ")
    assert_names(info.value, "tests.square", "source")


def test_malformed_id_is_rejected_naming_id():
    with pytest.raises(CaseError) as info:
        make(id="seeds/log1pexp2")
    assert_names(info.value, "seeds/log1pexp2", "id")


def test_tolerance_as_tol_or_per_dtype_mapping_is_accepted():
    assert make(tolerance=Tol(rtol=1e-3, atol=0.0)).tolerance == Tol(rtol=1e-3, atol=0.0)
    assert make(tolerance={"float32": Tol(rtol=1e-3, atol=0.0)}).tolerance == {"float32": Tol(1e-3,
                                                                                              0.0)}


# -- labels and version gating ---------------------------------------------------------


def test_scalar_point_label_is_name_equals_value():
    case = make(points=[{"x": np.float32(1.0)}, {"x": np.float32(100.0)}])
    assert [p.label for p in case.points] == ["x=1.0", "x=100.0"]


def test_small_vector_point_label_lists_shortest_float32_digits():
    # Read as float32, "0.1" is already the value: the label need not show the float64 widening.
    case = make(points=[{"x": np.array([0.1, 2.0], np.float32)}])
    assert case.points[0].label == "x=[0.1,2.0]"


def test_point_label_joins_several_arguments_with_commas():
    case = make(fn=f2, points=[{"x": np.float32(0.5), "n": np.int32(3)}])
    assert case.points[0].label == "x=0.5,n=3"


def test_points_with_equal_dtypes_and_shapes_share_a_signature():
    case = make(points=[{"x": np.float32(1.0)}, {"x": np.float32(100.0)},
                        {"x": np.array([1.0, 2.0], np.float32)}])
    a, b, c = (p.signature for p in case.points)
    assert a == b
    assert a != c


def test_case_runs_only_inside_its_tf_versions():
    case = make(tf_versions=">=2.16")
    assert case.runs_on("2.16.2")
    assert not case.runs_on("2.15.1")
    assert make().runs_on("2.12.1")


@pytest.mark.subprocess
def test_pure_modules_import_without_tensorflow():
    code = ("import sys\nimport harness, harness.case, harness.records, harness.versions\n"
            "import harness.criteria.tolerance, harness.criteria.compare, harness.judge.verdict, "
            "harness.report\nimport harness.report.json_report, harness.report.junit, "
            "harness.report.text\nassert 'tensorflow' not in sys.modules, 'tensorflow was "
            "imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_case_narrowed_to_points_an_expectation_does_not_list_keeps_the_case_valid():
    # An expectation listing point "b" (an accepted deviation at one point of a recorded
    # function) is no error when the worker runs the case at point "a" alone; at "b" it still
    # applies, and at both it keeps only what it listed.
    from harness import loader

    plain = make(points=[{"x": np.float32(v)} for v in (1.0, 2.0, 3.0)])
    labels = [p.label for p in plain.points]
    case = make(points=plain.points, expectations=[
        Expectation(modes=("function",), outcome="ValueError", reason="seen at b",
                    points=(labels[1],)),
        Expectation(modes=("graph",), outcome="TypeError", reason="everywhere")])
    alone = loader.narrow(case, [labels[0]])
    assert [p.label for p in alone.points] == [labels[0]]
    assert [e.reason for e in alone.expectations] == ["everywhere"]
    there = loader.narrow(case, [labels[1]])
    assert [(e.reason, e.points) for e in there.expectations] == [
        ("seen at b", (labels[1],)), ("everywhere", ())]
    pair = loader.narrow(case, [labels[1], labels[2]])
    assert pair.expectations[0].points == (labels[1],)


def test_a_surrogate_is_said_of_the_numeric_oracle_and_only_it_names_an_intended_one():
    from harness.case import SURROGATE  # noqa: PLC0415

    ok = Expectation(modes=["numeric"], outcome=SURROGATE, reason="an estimator",
                     intended="mylib.estimators:clipped")
    assert make(expectations=[ok]).expectations == (ok,)
    with pytest.raises(CaseError, match="SURROGATE is said of the numeric oracle"):
        make(expectations=[Expectation(modes=["eager"], outcome=SURROGATE, reason="r")])
    for bad in (Expectation(modes=["numeric"], outcome=VALUES_DIFFER, reason="r",
                            intended="mylib.estimators:clipped"),
                Expectation(modes=["numeric"], outcome=SURROGATE, reason="r",
                            intended="clipped")):
        with pytest.raises(CaseError, match="intended names a SURROGATE's intended surrogate"):
            make(expectations=[bad])
