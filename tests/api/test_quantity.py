"""Quantities as apimachinery's `resource.Quantity` parses, prints, adds and compares them (values from upstream's
quantity_test.go and from `kubectl` output)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from tinykube.api.quantity import (
    FORMAT_WRONG,
    SUFFIX,
    ZERO,
    Quantity,
    QuantityError,
    add,
    count,
    maximum,
    parse_quantity,
    rendered,
    resource_list,
)


@pytest.mark.parametrize(
    ("text", "value", "canonical"),
    [
        pytest.param("1", 1, "1", id="plain"),
        pytest.param("0", 0, "0", id="zero"),
        pytest.param("500m", Fraction(1, 2), "500m", id="milli"),
        pytest.param("1000m", 1, "1", id="milli-whole"),
        pytest.param("1500m", Fraction(3, 2), "1500m", id="milli-fraction"),
        pytest.param("0.5", Fraction(1, 2), "500m", id="decimal-point"),
        pytest.param("100u", Fraction(1, 10_000), "100u", id="micro"),
        pytest.param("1n", Fraction(1, 10**9), "1n", id="nano"),
        pytest.param("1k", 1000, "1k", id="kilo"),
        pytest.param("1M", 10**6, "1M", id="mega"),
        pytest.param("2G", 2 * 10**9, "2G", id="giga"),
        pytest.param("1T", 10**12, "1T", id="tera"),
        pytest.param("1P", 10**15, "1P", id="peta"),
        pytest.param("1E", 10**18, "1E", id="exa"),
        pytest.param("1Ki", 1024, "1Ki", id="kibi"),
        pytest.param("64Mi", 64 * 2**20, "64Mi", id="mebi"),
        pytest.param("1024Mi", 2**30, "1Gi", id="mebi-to-gibi"),
        pytest.param("1Gi", 2**30, "1Gi", id="gibi"),
        pytest.param("1Ti", 2**40, "1Ti", id="tebi"),
        pytest.param("1Pi", 2**50, "1Pi", id="pebi"),
        pytest.param("1Ei", 2**60, "1Ei", id="exbi"),
        pytest.param("0.5Gi", 2**29, "512Mi", id="half-gibi"),
        pytest.param("100Ki", 102400, "100Ki", id="kibi-not-power"),
        pytest.param("1e3", 1000, "1e3", id="exponent"),
        pytest.param("1E3", 1000, "1e3", id="exponent-capital"),
        pytest.param("12e-3", Fraction(12, 1000), "12e-3", id="negative-exponent"),
        pytest.param("-1", -1, "-1", id="negative"),
        pytest.param("+5", 5, "5", id="plus-sign"),
        pytest.param(2, 2, "2", id="json-number"),
        pytest.param(0.25, Fraction(1, 4), "250m", id="json-float"),
    ],
)
def test_parse_and_canonical_form(text: object, value: Fraction | int, canonical: str) -> None:
    quantity = parse_quantity(text)
    assert quantity.value == value
    assert str(quantity) == canonical


def test_values_round_up_to_nano_units() -> None:
    assert parse_quantity("0.1n").value == Fraction(1, 10**9)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", FORMAT_WRONG, id="empty"),
        pytest.param("1.2.3", FORMAT_WRONG, id="two-points"),
        pytest.param("1Zi", FORMAT_WRONG, id="unknown-letter"),
        pytest.param("1ki", SUFFIX, id="lower-binary"),
        pytest.param("1KI", FORMAT_WRONG, id="upper-binary"),  # "I" is no suffix letter at all
        pytest.param(True, FORMAT_WRONG, id="bool"),
    ],
)
def test_unparseable(text: object, message: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert str(caught.value) == message


def test_whole_and_milli_round_up_away_from_zero() -> None:
    assert parse_quantity("1500m").whole() == 2
    assert parse_quantity("-1500m").whole() == -2
    assert parse_quantity("100u").milli() == 1
    assert parse_quantity("1").milli() == 1000


def test_compared_by_value_whatever_the_format() -> None:
    assert parse_quantity("1") == parse_quantity("1000m")
    assert parse_quantity("1Ki") == parse_quantity("1024")
    assert parse_quantity("1G") < parse_quantity("1Gi")
    assert parse_quantity("2") > parse_quantity("1999m")
    assert parse_quantity("500m") <= parse_quantity("0.5")
    assert len({parse_quantity("1"), parse_quantity("1000m")}) == 1


@pytest.mark.parametrize(
    ("a", "b", "total"),
    [
        pytest.param("64Mi", "64Mi", "128Mi", id="binary"),
        pytest.param("500m", "500m", "1", id="milli-to-whole"),
        pytest.param("500m", "1", "1500m", id="mixed"),
        pytest.param("0", "64Mi", "64Mi", id="zero-takes-the-other-format"),
        pytest.param("1Gi", "1G", "2073741824", id="binary-plus-decimal"),
    ],
)
def test_sums_keep_the_first_non_zero_format(a: str, b: str, total: str) -> None:
    assert str(parse_quantity(a) + parse_quantity(b)) == total


def test_difference() -> None:
    assert str(parse_quantity("1") - parse_quantity("250m")) == "750m"
    assert str(ZERO - parse_quantity("1Gi")) == "-1Gi"


def test_counts_are_decimal() -> None:
    assert str(count(3)) == "3"
    assert count(0) == ZERO


def test_resource_lists() -> None:
    parsed = resource_list({"cpu": "500m", "memory": "64Mi", "broken": "x1"})
    assert parsed == {"cpu": Quantity.of(Fraction(1, 2)), "memory": parse_quantity("64Mi")}  # the broken one left out
    assert resource_list(None) == {}
    total = add(parsed, {"cpu": parse_quantity("1"), "pods": count(1)})
    assert rendered(total) == {"cpu": "1500m", "memory": "64Mi", "pods": "1"}
    peak = maximum({"cpu": parse_quantity("2")}, {"cpu": parse_quantity("500m"), "memory": parse_quantity("1Gi")})
    assert rendered(peak) == {"cpu": "2", "memory": "1Gi"}
