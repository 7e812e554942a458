"""Go's own renderings and parsers that upstream's messages quote (`tinykube.api.golang`): tables of inputs and what
Go's standard library says about them."""

from __future__ import annotations

from typing import Any

import pytest

from tinykube.api import golang
from tinykube.api.golang import RFC3339, RFC3339_MICRO

# ---- base64 as Go decodes it ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        pytest.param("YWJj", None, id="whole-quantum"),
        pytest.param("YQ==", None, id="padded"),
        pytest.param("YWJj\nZA==\n", None, id="newlines-skipped"),
        pytest.param("", None, id="empty"),
        pytest.param("billy", 4, id="short-last-quantum"),
        pytest.param("YQ", 0, id="padding-missing"),
        pytest.param("YQ=", 3, id="half-padding"),
        pytest.param("Y===", 1, id="padding-too-early"),
        pytest.param("YQ==YQ==", 4, id="data-after-padding"),
        pytest.param("a b", 1, id="space"),
        pytest.param("user:pass", 4, id="colon"),
    ],
)
def test_go_base64_offsets(text: str, offset: int | None) -> None:
    assert golang.base64_error(text) == offset


# ---- time.Parse ---------------------------------------------------------------------------------------------------

LAYOUT = '"2006-01-02T15:04:05Z07:00"'
MICRO = '"2006-01-02T15:04:05.000000Z07:00"'


@pytest.mark.parametrize(
    ("value", "layout", "message"),
    [
        pytest.param("2024-01-01T00:00:00Z", RFC3339, None, id="utc"),
        pytest.param("2024-01-01T00:00:00.123Z", RFC3339, None, id="fraction-the-layout-does-not-name"),
        pytest.param("2024-02-29T23:59:59+01:00", RFC3339, None, id="offset-leap-day"),
        pytest.param("2024-01-01T1:00:00Z", RFC3339, None, id="one-digit-hour"),
        pytest.param("2024-01-01T00:00:00.123456Z", RFC3339_MICRO, None, id="micro"),
        pytest.param(
            "yesterday",
            RFC3339,
            f'parsing time "yesterday" as {LAYOUT}: cannot parse "yesterday" as "2006"',
            id="word",
        ),
        pytest.param("", RFC3339, f'parsing time "" as {LAYOUT}: cannot parse "" as "2006"', id="empty"),
        pytest.param(
            "2024-01-01 00:00:00Z",
            RFC3339,
            f'parsing time "2024-01-01 00:00:00Z" as {LAYOUT}: cannot parse " 00:00:00Z" as "T"',
            id="space-for-T",
        ),
        pytest.param(
            "2024-01-01T00:00:00",
            RFC3339,
            f'parsing time "2024-01-01T00:00:00" as {LAYOUT}: cannot parse "" as "Z07:00"',
            id="no-zone",
        ),
        pytest.param(
            "2024-1-01T00:00:00Z",
            RFC3339,
            f'parsing time "2024-1-01T00:00:00Z" as {LAYOUT}: cannot parse "1-01T00:00:00Z" as "01"',
            id="one-digit-month",
        ),
        pytest.param(
            "2024-13-01T00:00:00Z", RFC3339, 'parsing time "2024-13-01T00:00:00Z": month out of range', id="month"
        ),
        pytest.param(
            "2023-02-29T00:00:00Z", RFC3339, 'parsing time "2023-02-29T00:00:00Z": day out of range', id="day"
        ),
        pytest.param(
            "2024-01-01T24:00:00Z", RFC3339, 'parsing time "2024-01-01T24:00:00Z": hour out of range', id="hour"
        ),
        pytest.param(
            "2024-01-01T00:00:00Zjunk",
            RFC3339,
            'parsing time "2024-01-01T00:00:00Zjunk": extra text: "junk"',
            id="extra-text",
        ),
        pytest.param(
            "2024-01-01T00:00:00+25:00",
            RFC3339,
            'parsing time "2024-01-01T00:00:00+25:00": time zone offset hour out of range',
            id="zone-hour",
        ),
        pytest.param(
            "2024-01-01T00:00:00Z",
            RFC3339_MICRO,
            f'parsing time "2024-01-01T00:00:00Z" as {MICRO}: cannot parse "Z" as ".000000"',
            id="micro-without-fraction",
        ),
        pytest.param(
            "2024-01-01T00:00:00.123Z",
            RFC3339_MICRO,
            f'parsing time "2024-01-01T00:00:00.123Z" as {MICRO}: cannot parse ".123Z" as ".000000"',
            id="micro-short-fraction",
        ),
        pytest.param(
            "é", RFC3339, f'parsing time "\\xc3\\xa9" as {LAYOUT}: cannot parse "\\xc3\\xa9" as "2006"', id="utf8"
        ),
    ],
)
def test_time_parse_errors(value: str, layout: str, message: str | None) -> None:
    assert golang.time_parse_error(value, layout) == message


# ---- numbers and %v -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "v", "json"),
    [
        (1.5, "1.5", "1.5"),
        (3.0, "3", "3"),
        (-2.5, "-2.5", "-2.5"),
        (123456.0, "123456", "123456"),
        (1e6, "1e+06", "1000000"),
        (1234567.0, "1.234567e+06", "1234567"),
        (0.0001, "0.0001", "0.0001"),
        (1e-5, "1e-05", "0.00001"),
        (1e-7, "1e-07", "1e-7"),
        (1e21, "1e+21", "1e+21"),
        (0.0, "0", "0"),
    ],
)
def test_float_formats(number: float, v: str, json: str) -> None:
    """`fmt.Sprint(x)` (shortest %g, exponent from 1e+06) and `json.Marshal(x)` (exponent below 1e-6, from 1e21)."""
    assert (golang.format_float(number), golang.json_float(number)) == (v, json)


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        ({"spec": {"replicas": "3"}}, "map[spec:map[replicas:3]]"),
        ({"b": [1, None, True, 1.5], "a": {}}, "map[a:map[] b:[1 <nil> true 1.5]]"),
        ([], "[]"),
        ("text", "text"),
    ],
)
def test_format_value_is_go_percent_v(value: Any, printed: str) -> None:
    assert golang.format_value(value) == printed


@pytest.mark.parametrize(
    ("value", "name"),
    [({}, "object"), ([], "array"), (True, "bool"), (1, "number"), (1.5, "number"), ("", "string"), (None, "null")],
)
def test_json_type_names(value: Any, name: str) -> None:
    assert golang.json_type(value) == name
