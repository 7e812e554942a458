"""The `fieldPath` of an `x-kubernetes-validations` rule resolved through its schema (upstream's
TestValidateFieldPath vectors)."""

from __future__ import annotations

import pytest

from tinykube.apiextensions.rulepath import resolve_field_path


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param(".a", "a", id="a"),
        pytest.param(".a.bbb", "a.bbb", id="a.b"),
        pytest.param(".foo.f1", "foo[f1]", id="map-key"),
        pytest.param(".a['bbb']", "a.bbb", id="quoted"),
        pytest.param(".a['bbb.c']", "a.bbb.c", id="quoted-dot"),
        pytest.param(".a['bbb.c'].a-b34", "a.bbb.c.a-b34", id="after-quoted"),
        pytest.param(".a.bbb.34", "a.bbb.34", id="number"),
        pytest.param(".a.bbb['34']", "a.bbb.34", id="quoted-number"),
        pytest.param(".list", "list", id="list"),
        pytest.param(".a.foo", "does not refer to a valid field", id="nonexistent-key"),
        pytest.param(".a.bbb[0]", "expected single quoted string but got 0", id="index"),
        pytest.param(".list[1]", "expected single quoted string but got 1", id="list-index"),
        pytest.param(".list.a", "does not refer to a valid field", id="into-list"),
        pytest.param("a", "expected [ or . but got: a", id="no-dot"),
        pytest.param(".a..b", "does not refer to a valid field", id="double-dot"),
        pytest.param(".list[-1]", "expected single quoted string but got -1", id="negative"),
        pytest.param(".list[1.0]", "expected single quoted string but got 1", id="float"),
        pytest.param(".a['bbb", "expected single quoted string but got 'bbb", id="unterminated"),
        pytest.param(".a['b\\qb']", "invalid string literal: invalid escape char \\q", id="bad-escape"),
        pytest.param(".a.", "unexpected end of JSON path", id="trailing-dot"),
    ],
)
def test_field_paths(path: str, expected: str) -> None:
    """upstream's TestValidateFieldPath."""
    number = {"type": "number"}
    schema = {
        "type": "object",
        "properties": {
            "foo": {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"f1": number}},
            },
            "a": {
                "type": "object",
                "properties": {
                    "bbb": {"type": "object", "properties": {"c": number, "34": number}},
                    "bbb.c": {"type": "object", "properties": {"a-b34": number}},
                },
            },
            "list": {"type": "array", "items": {"type": "object", "properties": {"a": number}}},
        },
    }
    found = resolve_field_path(path, schema)
    assert (found if isinstance(found, str) else str(found)) == expected
