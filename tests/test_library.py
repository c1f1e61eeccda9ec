"""The built-in case library: every case is well formed, the whole library runs
in all three modes without a failure, and the cases show what their sources say.

Expected numbers come from closed forms (computed here with math and NumPy)
or from the issue texts quoted in cases/regressions.py, never from a run.
"""

import importlib
import importlib.util
import math
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from harness import Case, loader
from harness.records import ErrorInfo, ModeOutcome, Result, Status, Verdict

MODES = ("eager", "function", "graph")
THEMES = ("seeds", "docs", "patterns", "structure", "dtypes", "variables", "keras", "keras3",
          "regressions")
ROOT = Path(__file__).resolve().parent.parent
# A source is TensorFlow's documentation or tracker, tf-keras's tracker, or, for the Keras 3 cases,
# Keras 3's own documentation and tracker.
# The seeds, TensorFlow's and Keras's documentation, an issue, a file of Keras's source at a
# release, or the documentation of a library whose custom gradients a case reproduces (larq's).
_SOURCE = re.compile(
    r"^(seeds/|https://www\.tensorflow\.org/api_docs/python/tf/|https://keras\.io/api/|"
    r"https://github\.com/(tensorflow/tensorflow|keras-team/tf-keras|keras-team/keras)/issues/\d+|"
    r"https://github\.com/keras-team/keras/blob/v\d+\.\d+\.\d+/|https://docs\.larq\.dev/)"
)


@pytest.fixture(scope="module")
def cases(library_cases):
    return library_cases


@pytest.fixture(scope="module")
def results(library_results):
    """Every point of every case in the three modes, run once per session (tests/conftest.py):
    {case id: [Result per point]}."""
    return library_results


def _only(results, case_id):
    [result] = results[case_id]
    return result


def _value(result, mode, order, index=0):
    output = result.outcomes[mode].orders[order][index]
    return None if output.value is None else output.value


def _error(result, mode):
    outcome = result.outcomes[mode]
    assert outcome.status is Status.ERROR, (result.name, mode, outcome.status)
    return outcome.error


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _catalogue():
    spec = importlib.util.spec_from_file_location("catalogue", ROOT / "scripts" / "catalogue.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the library as data ----------------------------------------------------------------


def test_every_case_loads_and_is_a_valid_case(cases):
    assert cases and all(isinstance(c, Case) for c in cases)


def test_the_library_has_at_least_40_cases(cases):
    assert len(cases) >= 40


def test_ids_are_unique_and_prefixed_by_their_module(cases):
    assert len({c.id for c in cases}) == len(cases)
    package = importlib.import_module("harness.cases")
    seen = 0
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"harness.cases.{info.name}")
        for case in module.CASES:
            assert case.id.startswith(f"{info.name}."), (info.name, case.id)
            seen += 1
    assert seen == len(cases)


def test_every_theme_of_the_issue_has_cases(cases):
    themes = {c.id.split(".")[0] for c in cases}
    assert set(THEMES) <= themes


def test_every_case_names_its_source_and_says_in_one_line_what_it_shows(cases):
    for case in cases:
        assert _SOURCE.match(case.source), (case.id, case.source)
        assert case.description.strip() and "\n" not in case.description, case.id


def test_regression_cases_cite_the_issue_their_id_names(cases):
    regressions = [c for c in cases if c.id.startswith("regressions.")]
    assert {c.id.rsplit("_", 1)[1] for c in regressions} >= {"65839", "26048", "34503", "127690"}
    for case in regressions:
        number = case.id.rsplit("_", 1)[1]
        assert case.source == f"https://github.com/tensorflow/tensorflow/issues/{number}", case.id


def test_every_expectation_gives_a_reason(cases):
    # A range only where the all-release matrix (docs/matrix.md) shows the behaviour depends on
    # the release: test_matrix_doc checks that the page covers the library.
    for case in cases:
        for e in case.expectations:
            assert e.reason.strip(), (case.id, e)


def test_inputs_are_numpy_values_with_explicit_dtypes(cases):
    for case in cases:
        for point in case.points:
            for value in point.values:
                assert isinstance(value, np.ndarray) and value.dtype != np.dtype(object), case.id


# -- the whole library, all three modes --------------------------------------------------


def test_the_whole_library_runs_in_every_mode_with_no_fail_or_error(cases, results):
    bad = [f"{r.name}: {r.verdict.value}: {r.reason}" for rs in results.values() for r in rs
           if r.verdict.is_failure]
    assert not bad, "\n".join(bad)
    assert sum(len(rs) for rs in results.values()) == sum(len(c.points) for c in cases)
    assert all(set(r.outcomes) == set(MODES) for rs in results.values() for r in rs)


def test_no_case_kills_or_hangs_a_mode(results):
    statuses = {o.status for rs in results.values() for r in rs for o in r.outcomes.values()}
    assert statuses <= {Status.OK, Status.ERROR}


def test_themes_are_selected_by_glob(cases):
    keras = loader.pick(cases, ["keras.*"])
    assert keras and all(c.id.startswith("keras.") for c in keras)
    assert len(keras) == len([c for c in cases if c.id.startswith("keras.")])


def test_catalogue_is_what_a_run_gives_on_its_tensorflow_version(cases, results):
    page = (ROOT / "docs" / "cases.md").read_text(encoding="utf-8")
    if f"on TensorFlow {tf.version.VERSION} " not in page:
        pytest.skip(f"docs/cases.md was generated on another TensorFlow than {tf.version.VERSION}")
    catalogue = _catalogue()
    ordered = [r for c in cases for r in results[c.id]]
    expected = catalogue.render(cases, ordered, MODES, catalogue._versions())
    assert page == expected, "docs/cases.md is stale: run python scripts/catalogue.py"


def test_catalogue_gives_a_row_per_point_only_when_the_points_end_differently():
    case = Case(id="t.branch", fn=lambda x: x,
                points=[{"x": np.float32(1.0)}, {"x": np.float32(2.0)}], source="seeds/x",
                description="a | b")
    ok = ModeOutcome(mode="eager", status=Status.OK)
    raised = ModeOutcome(mode="graph", status=Status.ERROR,
                         error=ErrorInfo(type="ValueError", bases=(), message="m", stage="order 1"))

    def result(point, graph, verdict):
        return Result(case=case.id, point=point.label, order=1, verdict=verdict, reason="",
                      details=(), outcomes={"eager": ok, "graph": graph}, rerun="")

    versions = {"tensorflow": "9.9", "tf-keras": "9.9"}
    alike = [result(p, ok, Verdict.PASS) for p in case.points]
    differ = [result(case.points[0], ok, Verdict.PASS),
              result(case.points[1], raised, Verdict.FAIL)]
    rows = [line
            for line in _catalogue().render([case], alike, ("eager", "graph"),
                                            versions).splitlines()
            if line.startswith("| `t.branch`")]
    assert rows == ["| `t.branch` | a \\| b | seeds/x | ok | ok | - | - | pass |"]
    rows = [line
            for line in _catalogue().render([case], differ, ("eager", "graph"),
                                            versions).splitlines()
            if line.startswith("| `t.branch`")]
    assert rows == ["| `t.branch` at x=1.0 | a \\| b | seeds/x | ok | ok | - | - | pass |",
                    "| `t.branch` at x=2.0 |  |  | ok | ValueError (order 1) | - | - | fail |"]


# -- the docstring's numbers ---------------------------------------------------------------


def test_naive_log1pexp_gradient_is_nan_at_100_and_the_custom_one_is_1(results):
    naive_0, naive_100 = results["docs.log1pexp_naive"]
    custom_0, custom_100 = results["docs.log1pexp"]
    for mode in MODES:
        # d/dx log(1 + e^x) = e^x / (1 + e^x): inf / inf in float32 at x = 100.
        assert np.isnan(_value(naive_100, mode, 1))
        assert _value(custom_100, mode, 1) == np.float32(1.0)
        assert _value(naive_0, mode, 1) == _value(custom_0, mode, 1) == np.float32(0.5)
        assert _value(custom_0, mode, 0) == np.float32(math.log(2.0))


def test_bar_gives_the_docstrings_printed_values(results):
    result = _only(results, "docs.bar")
    for mode in MODES:
        # z = x * y at (2, 3): 6; dz/dx = y = 3, dz/dy = x = 2.
        assert [_value(result, mode, 0), _value(result, mode, 1, 0),
                _value(result, mode, 1, 1)] == [6, 3, 2]


def test_linear_poly_gives_the_docstrings_printed_values(results):
    result = _only(results, "docs.linear_poly")
    for mode in MODES:
        np.testing.assert_array_equal(_value(result, mode, 0), [2.0, 3.0, 4.0])  # x + 1
        np.testing.assert_array_equal(_value(result, mode, 1, 0), [1.0, 1.0, 1.0])
        np.testing.assert_array_equal(_value(result, mode, 1, 1), [6.0, 3.0])  # [sum x, sum 1]


@pytest.mark.parametrize("case_id", ["docs.nested_single_return", "docs.nested_dy_input"])
def test_nested_forms_that_are_right_give_sin_cos_minus_sin(results, case_id):
    result = _only(results, case_id)
    assert result.verdict is Verdict.PASS
    for mode in MODES:
        got = [_value(result, mode, k) for k in range(3)]
        np.testing.assert_allclose(got, [math.sin(0.5), math.cos(0.5), -math.sin(0.5)], rtol=1e-6)


def test_nested_as_written_raises_a_different_class_in_tf_function(results):
    result = _only(results, "docs.nested_as_written")
    assert result.verdict is Verdict.XFAIL
    assert {m: (_error(result, m).type, _error(result, m).stage) for m in MODES} == {
        "eager": ("ValueError", "order 2"), "function": ("InternalError", "order 2"),
        "graph": ("ValueError", "order 2")}


def test_grad_fn_of_dy_alone_is_differentiated_through_its_body_only_in_eager(results):
    result = _only(results, "docs.nested_grad_fn")
    assert result.verdict is Verdict.XFAIL
    # Eager differentiates gdy = dy * cos(x) itself: -sin(x); the graph modes give None.
    np.testing.assert_allclose(_value(result, "eager", 2), -math.sin(0.5), rtol=1e-6)
    assert _value(result, "function", 2) is None and _value(result, "graph", 2) is None
    for mode in MODES:
        np.testing.assert_allclose(_value(result, mode, 1), math.cos(0.5), rtol=1e-6)


def test_shuffle_examples_return_the_custom_gradient_with_or_without_stop_gradient(results):
    for case_id in ("docs.stop_gradient_shuffle", "docs.shuffle_without_stop_gradient"):
        result = _only(results, case_id)
        for mode in MODES:
            np.testing.assert_array_equal(_value(result, mode, 1), [1.0, 1.0])


# -- patterns, structure, dtypes, variables, keras: closed forms ---------------------------


def test_third_order_custom_gradients_give_the_derivatives_of_sin(results):
    result = _only(results, "patterns.third_order")
    for mode in MODES:
        got = [_value(result, mode, k) for k in range(4)]
        np.testing.assert_allclose(got, [math.sin(0.5), math.cos(0.5), -math.sin(0.5),
                                         -math.cos(0.5)],
                                   rtol=1e-6)


def test_softplus_gradients_are_sigmoid_and_its_derivative_even_at_100(results):
    result = _only(results, "patterns.softplus")
    x = np.array([-100.0, -1.0, 0.0, 1.0, 100.0])
    s = _sigmoid(x)
    for mode in MODES:
        np.testing.assert_allclose(_value(result, mode, 1), s, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(_value(result, mode, 2), s * (1 - s), rtol=1e-6, atol=1e-7)


def test_safe_norm_and_safe_sqrt_are_finite_at_zero(results):
    zero, _ = results["patterns.safe_norm"]
    sqrt = _only(results, "patterns.safe_sqrt")
    for mode in MODES:
        np.testing.assert_array_equal(_value(zero, mode, 1), [0.0, 0.0, 0.0])
        np.testing.assert_array_equal(_value(sqrt, mode, 1), [0.0, 1.0, 0.25])  # 0, 1/(2 sqrt x)


def test_clipped_and_scaled_gradients_transform_the_upstream_gradient(results):
    x = np.array([-2.0, -0.3, 0.0, 0.4, 1.7])
    upstream = 18 * x  # d/dv (3 v)^2 at v = x
    expected = {"patterns.clip_gradient_by_value": np.clip(upstream, -1, 1),
                "patterns.clip_gradient_by_norm": upstream / np.linalg.norm(upstream),
                "patterns.scale_gradient": 0.1 * upstream}
    for case_id, gradient in expected.items():
        result = _only(results, case_id)
        for mode in MODES:
            np.testing.assert_allclose(_value(result, mode, 1), gradient, rtol=1e-6,
                                       err_msg=case_id)


def test_recompute_grad_matches_the_plain_derivatives(results):
    result = _only(results, "patterns.recompute_grad")
    x = np.array([0.0, 0.5, 1.0])
    for mode in MODES:
        np.testing.assert_allclose(_value(result, mode, 1, 0), 1.5 * np.cos(x), rtol=1e-6)
        np.testing.assert_allclose(_value(result, mode, 1, 1), np.sin(x).sum(), rtol=1e-6)


def test_dict_output_reaches_grad_fn_in_sorted_key_order(results):
    result = _only(results, "structure.dict_output")
    for mode in MODES:
        np.testing.assert_array_equal(_value(result, mode, 1), [5.0, 33.0])  # 3x^2 + 2x at 1 and 3


def test_indexed_slices_gradients_are_summed_per_index(results):
    result = _only(results, "structure.gather_indexed_slices")
    for mode in MODES:
        # cube of gather(p, [0, 2, 0]) summed: 3 p0^2 twice, 3 p2^2 once; then 12 p0, 6 p2.
        np.testing.assert_array_equal(_value(result, mode, 1), [6.0, 0.0, 27.0])
        np.testing.assert_array_equal(_value(result, mode, 2), [12.0, 0.0, 18.0])


def test_integer_side_output_is_reported_and_not_differentiated(results):
    result = _only(results, "structure.int_side_output")
    for mode in MODES:
        side = _value(result, mode, 0, 1)
        assert side.dtype == np.int64 and side == 1
        np.testing.assert_array_equal(_value(result, mode, 1), [0.0, 1.0, 0.0])
        assert len(result.outcomes[mode].orders[1]) == 1


def test_none_from_grad_fn_stays_none(results):
    result = _only(results, "structure.none_gradient")
    for mode in MODES:
        assert _value(result, mode, 1, 1) is None


def test_dtype_cases_keep_their_dtype_in_every_gradient(results):
    wanted = {"dtypes.log1pexp_float16": "float16", "dtypes.log1pexp_bfloat16": "bfloat16",
              "dtypes.log1pexp_float64": "float64", "dtypes.complex64_abs2": "complex64"}
    for case_id, dtype in wanted.items():
        for result in results[case_id]:
            for mode in MODES:
                assert result.outcomes[mode].orders[1][0].dtype == dtype, (result.name, mode)


def test_low_precision_overflow_keeps_the_custom_gradient_at_1(results):
    _, at_20 = results["dtypes.log1pexp_float16"]
    for mode in MODES:
        assert np.isinf(_value(at_20, mode, 0))  # e^20 > 65504, float16's largest
        assert _value(at_20, mode, 1) == 1.0


def test_complex_square_uses_the_conjugate_convention_in_every_mode(results):
    result = _only(results, "dtypes.complex64_square")
    z = np.array([1 + 2j, -0.5 + 0j])
    # graph too: tf.gradients, which has no default upstream gradient for a complex output, is
    # given the ones a tape starts from.
    for mode in MODES:
        np.testing.assert_allclose(_value(result, mode, 1), np.conj(2 * z), rtol=1e-6)


def test_variable_gradients_match_closed_forms(results):
    scaled = _only(results, "variables.grad_fn_variables")
    as_argument = _only(results, "variables.variable_as_argument")
    for mode in MODES:
        np.testing.assert_array_equal(_value(scaled, mode, 1, 0), [2.0, -1.0])  # w
        np.testing.assert_array_equal(_value(scaled, mode, 1, 1), [1.0, 3.0])  # x
        np.testing.assert_array_equal(_value(as_argument, mode, 1, 0), [1.5, -2.0])
        np.testing.assert_array_equal(_value(as_argument, mode, 1, 1), [1.0, 3.0])


def test_straight_through_keras_layer_passes_the_gradient_of_the_unrounded_model(results):
    result = _only(results, "keras.ste_in_sequential")
    kernel_1 = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]])
    kernel_2 = np.array([[1.0], [-2.0]])
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])
    for mode in MODES:
        # d/dx sum((x K1 + b) K2) = (K1 K2)^T per row; d/dK1 = x^T 1 K2^T; d/db = 2 K2^T.
        np.testing.assert_allclose(_value(result, mode, 1, 0),
                                   np.tile((kernel_1 @ kernel_2).T, (2, 1)))
        np.testing.assert_allclose(_value(result, mode, 1, 1), x.sum(0)[:, None] * kernel_2.T)
        np.testing.assert_allclose(_value(result, mode, 1, 2), 2 * kernel_2[:, 0])


# -- regressions: each shows what its issue describes ---------------------------------------


def test_65839_keyword_call_is_silent_autodiff_in_eager_and_an_error_in_graphs(results):
    result = _only(results, "regressions.kwargs_65839")
    x = np.array([[4.0], [5.0], [6.0]])
    y = np.array([[5.0], [7.0], [9.0]])
    # Ordinary autodiff of mean((x - y)^2) over 3 rows: 2(x - y)/3, not the custom 2000(x - y).
    np.testing.assert_allclose(_value(result, "eager", 1, 0), 2 * (x - y) / 3, rtol=1e-6)
    np.testing.assert_allclose(_value(result, "eager", 1, 1), -2 * (x - y) / 3, rtol=1e-6)
    for mode in ("function", "graph"):
        error = _error(result, mode)
        assert (error.type, error.stage) == ("ValueError", "forward")
        assert "keywords arguments only when eager execution is enabled" in error.message


def test_65839_mixed_call_raises_in_every_mode(results):
    result = _only(results, "regressions.kwargs_mixed_65839")
    eager = _error(result, "eager")
    assert (eager.type, eager.stage) == ("ValueError", "order 1")
    assert "expected to return 1 gradients, but returned 2" in eager.message
    assert [_error(result, m).type for m in ("function", "graph")] == ["ValueError", "ValueError"]


@pytest.mark.parametrize("case_id,returned", [("regressions.no_gradients_26048", 0),
                                              ("regressions.too_many_gradients_26048", 2)])
def test_26048_wrong_gradient_count_raises_instead_of_aborting_or_passing(results, case_id,
                                                                          returned):
    result = _only(results, case_id)
    assert result.verdict is Verdict.XFAIL
    assert f"expected to return 1 gradients, but returned {returned}" in _error(result,
                                                                                "eager").message
    assert _error(result, "function").type == "InternalError"
    assert _error(result, "graph").type == "ValueError"
    assert "do not match num inputs" in _error(result, "graph").message


def test_34503_nested_custom_gradient_of_dy_gives_none_at_order_2(results):
    result = _only(results, "regressions.nested_none_34503")
    for mode in MODES:
        assert _value(result, mode, 1) == 5.0
        assert _value(result, mode, 2) is None  # the issue: "d2ydx2 is None"


def test_34503_workaround_gives_second_derivative_1(results):
    result = _only(results, "regressions.nested_workaround_34503")
    for mode in MODES:
        assert _value(result, mode, 2) == 1.0  # the issue: "I expect it to be 1"


def test_127690_silu_beta_gradient_is_a_scalar_on_the_tape_and_rejected_by_tf_gradients(results):
    result = _only(results, "regressions.silu_beta_shape_127690")
    features = np.array([[1.0, 2.0], [3.0, 4.0]])
    beta = np.array([1.0, 2.0])
    s = _sigmoid(beta * features)
    # d/d beta_j of sum_i x_ij sigmoid(beta_j x_ij) = sum_i x_ij^2 s (1 - s), per column.
    per_column = (features ** 2 * s * (1 - s)).sum(axis=0)
    # the issue's values
    np.testing.assert_allclose(per_column, [0.6032018708, 0.0760146276], rtol=1e-9)
    for mode in ("eager", "function"):
        beta_grad = _value(result, mode, 1, 1)
        assert beta_grad.shape == ()
        np.testing.assert_allclose(beta_grad, 0.6792164984, rtol=1e-6)  # the issue's scalar
        np.testing.assert_allclose(beta_grad, per_column.sum(), rtol=1e-6)
    graph = _error(result, "graph")
    assert graph.type == "ValueError" and "Incompatible shapes" in graph.message


def test_50170_variable_read_in_grad_fn_under_cond_fails_only_in_tf_function(results):
    result = _only(results, "variables.cond_around_call")
    for mode in ("eager", "graph"):
        assert _value(result, mode, 1) == 2.0  # w
    error = _error(result, "function")
    assert error.type == "AttributeError" and "Tensor.graph is undefined" in error.message
    positive, negative = results["variables.cond_in_grad_fn"]
    for mode in MODES:
        assert (_value(positive, mode, 1), _value(negative, mode, 1)) == (2.0, 0.0)


def test_matrix_doc_covers_every_release_and_every_point_of_the_library(cases):
    from harness.matrix import pins

    page = (ROOT / "docs" / "matrix.md").read_text(encoding="utf-8")
    header = next(line for line in page.splitlines() if line.startswith("| case"))
    columns = [v.strip() for v in header.strip("|").split("|")[1:]]
    releases = pins.versions()
    assert columns[:len(releases)] == releases, (
        "docs/matrix.md must be the run over every release of the pin table: rerun"
        " scripts/matrix.py --versions all,nightly"
    )
    # After the releases, the nightly's column only: a tf-nightly build and its commit
    # ("2.23.0-dev20261026 (commit ef696751006)").
    assert all(re.fullmatch(r"\d+\.\d+\.\d+-dev\d{8}( \(commit [0-9a-f]+\))?", v)
               for v in columns[len(releases):]), columns
    missing = [f"{c.id}[{p.label}]" for c in cases for p in c.points
               if f"{c.id}[{p.label}]" not in page]
    assert (
        not missing
    ), f"docs/matrix.md does not cover {missing}: rerun scripts/matrix.py --versions all"
    assert (
        "What changed between releases" in page.split(header)[0]
    ), "the page opens with what changed"
