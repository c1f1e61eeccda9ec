"""Version ranges and the tolerance table: the two small policy modules."""

import pytest

from harness.criteria.tolerance import (
    DEFAULT_TOLERANCES,
    NUMERIC_TOLERANCES,
    Tol,
    gradient_rounding,
    numeric_atol,
    tolerance_for,
)
from harness.versions import parse_range, release_tuple

# -- version ranges --------------------------------------------------------------------

RANGE = ">=2.16,<2.19"


@pytest.mark.parametrize("version", ["2.16.0", "2.18.9", "2.17.0-rc1", "2.16",
                                     "2.18.1.dev20250101"])
def test_range_contains_versions_inside_it(version):
    assert parse_range(RANGE).contains(version)


@pytest.mark.parametrize("version", ["2.19.0", "2.15.1", "2.19.0-rc0", "3.0.0", "1.16.0"])
def test_range_excludes_versions_outside_it(version):
    # A pre-release counts as its release (module docstring), so 2.19.0-rc0 is 2.19.0.
    assert not parse_range(RANGE).contains(version)


@pytest.mark.parametrize("text", ["2.16", ">=2.16;<2.19", "", ">=", "=>2.16", ">=2.x", ">=2.16,",
                                  "~=2.16", ">=2.16 <2.19"])
def test_bad_range_syntax_raises_value_error(text):
    with pytest.raises(ValueError):
        parse_range(text)


def test_bad_range_message_shows_the_clause_and_an_example():
    with pytest.raises(ValueError) as info:
        parse_range(">=2.16,2.19")
    assert "'2.19'" in str(info.value)
    assert ">=2.16,<2.19" in str(info.value)  # the example of a valid range


def test_range_allows_spaces_around_clauses():
    r = parse_range(" >= 2.16 , < 2.19 ")
    assert r.contains("2.17.1")
    assert not r.contains("2.19.0")


@pytest.mark.parametrize("text,inside,outside", [
    ("==2.16", "2.16.0", "2.16.1"),  # two components pad to 2.16.0
    ("!=2.17.0", "2.17.1", "2.17.0"),
    (">2.16", "2.16.1", "2.16.0"),
    ("<=2.16", "2.16.0", "2.16.1"),
])
def test_each_comparison_operator(text, inside, outside):
    r = parse_range(text)
    assert r.contains(inside)
    assert not r.contains(outside)


def test_components_compare_as_numbers_not_text():
    # As text "2.9" > "2.16"; as releases 2.9 < 2.16.
    assert not parse_range(">=2.16").contains("2.9.0")
    assert parse_range(">=2.9").contains("2.16.0")


def test_release_tuple_pads_and_drops_suffixes():
    assert release_tuple("2.16") == (2, 16, 0)
    assert release_tuple("2.21.0-rc1") == (2, 21, 0)
    assert release_tuple("2.21.0.dev20261101") == (2, 21, 0)


def test_release_tuple_rejects_text_without_a_number():
    with pytest.raises(ValueError):
        release_tuple("nightly")


def test_range_keeps_its_text_for_messages():
    assert str(parse_range(" >=2.16,<2.19 ")) == RANGE


# -- the tolerance table ---------------------------------------------------------------


@pytest.mark.parametrize("dtype,rtol,atol", [
    # DESIGN.md, Judging: the starting table.
    ("float16", 1e-3, 1e-5),
    ("bfloat16", 1.6e-2, 1e-5),
    ("float32", 1.3e-6, 1e-5),
    ("float64", 1e-7, 1e-7),
    # complex like its real part
    ("complex64", 1.3e-6, 1e-5),
    ("complex128", 1e-7, 1e-7),
])
def test_default_table_matches_design(dtype, rtol, atol):
    assert tolerance_for(dtype) == Tol(rtol=rtol, atol=atol)
    assert DEFAULT_TOLERANCES[dtype] == Tol(rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool", "uint8"])
def test_dtypes_outside_the_table_must_match_exactly(dtype):
    assert tolerance_for(dtype) == Tol(rtol=0.0, atol=0.0)


def test_override_tol_applies_to_every_dtype():
    loose = Tol(rtol=1e-2, atol=1e-3)
    for dtype in ("float16", "float32", "float64", "complex64"):
        assert tolerance_for(dtype, loose) == loose


def test_override_mapping_replaces_only_its_dtypes():
    override = {"float32": Tol(rtol=1e-4, atol=0.0)}
    assert tolerance_for("float32", override) == Tol(rtol=1e-4, atol=0.0)
    # float64 keeps the table's row.
    assert tolerance_for("float64", override) == Tol(rtol=1e-7, atol=1e-7)


def test_empty_override_mapping_keeps_the_table():
    assert tolerance_for("float32", {}) == Tol(rtol=1.3e-6, atol=1e-5)


@pytest.mark.parametrize("rtol,atol", [(-1e-6, 0.0), (0.0, -1e-6)])
def test_negative_tolerance_is_rejected(rtol, atol):
    with pytest.raises(ValueError):
        Tol(rtol=rtol, atol=atol)


# -- the numeric oracle's widened atol -------------------------------------------------


@pytest.mark.parametrize("dtype,eps,smallest", [("float32", 2.0 ** -23, 2.0 ** -126),
                                                ("float16", 2.0 ** -10, 2.0 ** -14),
                                                ("float64", 2.0 ** -52, 2.0 ** -1022)])
def test_the_numeric_atol_is_widened_by_the_rounding_of_the_terms_a_gradient_sums(dtype, eps,
                                                                                   smallest):
    table = NUMERIC_TOLERANCES[dtype]
    assert table.atol == 0.0
    assert gradient_rounding(dtype, 3.0) == 16.0 * eps * 3.0
    assert numeric_atol(table, dtype, 3.0) == 16.0 * eps * 3.0
    # never below the smallest normal, under which a gradient cannot be told from 0
    assert numeric_atol(table, dtype, 0.0) == smallest
    # a case's own atol is widened, not replaced
    assert numeric_atol(Tol(rtol=1e-3, atol=0.5), dtype, 3.0) == 0.5 + 16.0 * eps * 3.0


def test_the_gradients_own_rounding_widens_the_numeric_atol_only_beyond_the_floor():
    tol = Tol(rtol=2e-3, atol=1e-4)
    floor = 16.0 * 2.0 ** -23 * 10.0
    assert numeric_atol(tol, "float32", 10.0, own=floor / 2) == tol.atol + floor
    assert numeric_atol(tol, "float32", 10.0, own=floor * 3) == tol.atol + floor * 3
    assert numeric_atol(tol, "float32", 10.0, own=0.0) == numeric_atol(tol, "float32", 10.0)
