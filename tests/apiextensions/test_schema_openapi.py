"""OpenAPI value validation with kube-openapi's messages (vectors from upstream's apiserver/validation tests)."""

from __future__ import annotations

from typing import Any

import pytest

from tinykube.apiextensions.openapi import TypeInvalid
from tinykube.apiextensions.schema import Schema


def _errors(schema: dict[str, Any], obj: Any, old: Any = None) -> set[str]:
    return {str(e) for e in Schema.compile(schema).validate_schema(obj, old)}


def _field(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"field": schema}}


INT_OR_STRING = {"x-kubernetes-int-or-string": True}


@pytest.mark.parametrize(
    ("value", "kind"),
    [("foo", "string"), (42, "integer"), (True, "boolean"), (1.2, "number"), ([], "array"), (None, "null")],
)
def test_not_nullable_object(value: Any, kind: str) -> None:
    assert _errors(_field({"type": "object"}), {"field": value}) == {
        f'field: Invalid value: "{kind}": field in body must be of type object: "{kind}"'
    }


def test_nullable_object_accepts_null() -> None:
    assert _errors(_field({"type": "object", "nullable": True}), {"field": None}) == set()


@pytest.mark.parametrize(
    ("value", "kind"),
    [(None, "null"), (True, "boolean"), (1.2, "number"), ({}, "object"), ([], "array")],
)
def test_int_or_string(value: Any, kind: str) -> None:
    assert _errors(_field(INT_OR_STRING), {"field": 42}) == set()
    assert _errors(_field(INT_OR_STRING), {"field": "foo"}) == set()
    assert _errors(_field(INT_OR_STRING), {"field": value}) == {
        f'field: Invalid value: "{kind}": field in body must be of type integer,string: "{kind}"'
    }


ANY_OF = {"nullable": True, **INT_OR_STRING, "anyOf": [{"type": "integer"}, {"type": "string"}]}


@pytest.mark.parametrize(
    ("value", "kind", "checked"),
    [(True, "boolean", False), (1.2, "number", True), ({}, "object", False), ([], "array", False)],
)
def test_int_or_string_with_any_of(value: Any, kind: str, checked: bool) -> None:
    expected = {
        '<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)',
        f'field: Invalid value: "{kind}": field in body must be of type integer,string: "{kind}"',
        f'field: Invalid value: "{kind}": field in body must be of type integer: "{kind}"',
    }
    if checked:
        expected.add('<nil>: Invalid value: "": Checked value must be of type integer (default format) in field')
    assert _errors(_field(ANY_OF), {"field": value}) == expected
    assert _errors(_field(ANY_OF), {"field": None}) == set()


def test_int_or_string_with_all_of_any_of() -> None:
    schema = _field(
        {"nullable": True, **INT_OR_STRING, "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}]}
    )
    assert _errors(schema, {"field": True}) == {
        '<nil>: Invalid value: "": "field" must validate all the schemas (allOf). None validated',
        '<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)',
        'field: Invalid value: "boolean": field in body must be of type integer,string: "boolean"',
        'field: Invalid value: "boolean": field in body must be of type integer: "boolean"',
    }


def test_one_of_and_not() -> None:
    schema = _field({"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}], "not": {"enum": [7]}})
    assert _errors(schema, {"field": 5}) == {
        '<nil>: Invalid value: "": "field" must validate one and only one schema (oneOf). Found 2 valid alternatives'
    }
    assert _errors(schema, {"field": 20}) == set()
    assert _errors(schema, {"field": 7}) == {
        '<nil>: Invalid value: "": "field" must validate one and only one schema (oneOf). Found 2 valid alternatives',
        '<nil>: Invalid value: "": "field" must not validate the schema (not)',
    }


def test_required() -> None:
    schema = {
        "type": "object",
        "required": ["field"],
        "properties": {"field": {"type": "object", "required": ["nested"], "properties": {"nested": {}}}},
    }
    assert _errors(schema, {"test": "a"}) == {"field: Required value"}
    assert _errors(schema, {"field": {}}) == {"field.nested: Required value"}


def test_enum() -> None:
    schema = _field(
        {
            "type": "object",
            "required": ["nestedint", "nestedstring"],
            "properties": {
                "nestedint": {"type": "integer", "enum": [1, 2]},
                "nestedstring": {"type": "string", "enum": ["a", "b"]},
            },
        }
    )
    assert _errors(schema, {"field": {}}) == {"field.nestedint: Required value", "field.nestedstring: Required value"}
    assert _errors(schema, {"field": {"nestedint": "x", "nestedstring": True}}) == {
        'field.nestedint: Invalid value: "string": field.nestedint in body must be of type integer: "string"',
        'field.nestedint: Unsupported value: "x": supported values: "1", "2"',
        'field.nestedstring: Invalid value: "boolean": field.nestedstring in body must be of type string: "boolean"',
        'field.nestedstring: Unsupported value: true: supported values: "a", "b"',
    }


def test_enum_compares_numbers_as_go_converts_them() -> None:
    schema = _field({"type": "number", "enum": [1, 2.5]})
    assert _errors(schema, {"field": 1.0}) == set()
    assert _errors(schema, {"field": 2.5}) == set()
    assert _errors(schema, {"field": 3}) == {'field: Unsupported value: 3: supported values: "1", "2.5"'}


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        pytest.param(
            {"type": "object", "maxProperties": 2},
            {"a": 1, "b": 2, "c": 3},
            "field: Too many: 3: must have at most 2 items",
        ),
        pytest.param(
            {"type": "object", "minProperties": 2},
            {"a": 1},
            "field: Invalid value: 1: field in body should have at least 2 properties",
        ),
        pytest.param(
            {"type": "array", "maxItems": 2}, ["a", "b", "c"], "field: Too many: 3: must have at most 2 items"
        ),
        pytest.param({"type": "array", "maxItems": 1}, ["a", "b"], "field: Too many: 2: must have at most 1 item"),
        pytest.param(
            {"type": "array", "minItems": 2},
            ["a"],
            "field: Invalid value: 1: field in body should have at least 2 items",
        ),
        pytest.param(
            {"type": "array", "uniqueItems": True},
            [1, 1],
            'field: Invalid value: "": field in body shouldn\'t contain duplicates',
        ),
        pytest.param({"type": "string", "maxLength": 2}, "abc", "field: Too long: may not be more than 2 bytes"),
        pytest.param({"type": "string", "maxLength": 1}, "ab", "field: Too long: may not be more than 1 byte"),
        pytest.param(
            {"type": "string", "minLength": 2},
            "a",
            'field: Invalid value: "a": field in body should be at least 2 chars long',
        ),
        pytest.param(
            {"type": "string", "pattern": "^[a-z]+$"},
            "A1",
            "field: Invalid value: \"A1\": field in body should match '^[a-z]+$'",
        ),
        pytest.param(
            {"type": "integer", "maximum": 10},
            11,
            "field: Invalid value: 11: field in body should be less than or equal to 10",
        ),
        pytest.param(
            {"type": "integer", "maximum": 10, "exclusiveMaximum": True},
            10,
            "field: Invalid value: 10: field in body should be less than 10",
        ),
        pytest.param(
            {"type": "integer", "minimum": 1},
            0,
            "field: Invalid value: 0: field in body should be greater than or equal to 1",
        ),
        pytest.param(
            {"type": "number", "minimum": 0.5, "exclusiveMinimum": True},
            0.5,
            "field: Invalid value: 0.5: field in body should be greater than 0.5",
        ),
        pytest.param(
            {"type": "integer", "multipleOf": 3}, 7, "field: Invalid value: 7: field in body should be a multiple of 3"
        ),
        pytest.param(
            {"type": "number", "multipleOf": 0.5},
            0.7,
            "field: Invalid value: 0.7: field in body should be a multiple of 0.5",
        ),
        pytest.param(
            {"type": "string", "format": "k8s-long-name"},
            "a.-",
            'field: Invalid value: "a.-": field in body must be of type k8s-long-name: "a.-"',
        ),
        pytest.param(
            {"type": "string", "format": "k8s-short-name"},
            "a-",
            'field: Invalid value: "a-": field in body must be of type k8s-short-name: "a-"',
        ),
        pytest.param(
            {"type": "string", "format": "date-time"},
            "yesterday",
            'field: Invalid value: "yesterday": field in body must be of type date-time: "yesterday"',
        ),
        pytest.param(
            {"type": "string", "format": "uuid"},
            "x",
            'field: Invalid value: "x": field in body must be of type uuid: "x"',
        ),
        pytest.param(
            {"type": "integer", "format": "int32"},
            2**31,
            '<nil>: Invalid value: "": Checked value must be of type integer with format int32 in field',
        ),
        pytest.param(
            {"type": "number", "format": "float"},
            3.4028234663852886e38 * 1.1,
            '<nil>: Invalid value: "": Checked value must be of type number with format float in field',
        ),
    ],
)
def test_messages(schema: dict[str, Any], value: Any, expected: str) -> None:
    assert _errors(_field(schema), {"field": value}) == {expected}


def test_int64_overflow_through_a_float() -> None:
    schema = _field({"type": "integer", "format": "int64"})
    assert _errors(schema, {"field": float(2**63) * 1.1}) == {
        'field: Invalid value: "float64": field in body must be of type int64: "float64"',
        '<nil>: Invalid value: "": Checked value must be of type integer with format int64 in field',
    }


def test_numeric_format_limits_are_valid() -> None:
    schema = {
        "type": "object",
        "properties": {
            "i32": {"type": "integer", "format": "int32"},
            "i64": {"type": "integer", "format": "int64"},
            "f32": {"type": "number", "format": "float"},
            "f64": {"type": "number", "format": "double"},
        },
    }
    limits = {"i32": -(2**31), "i64": 2**63 - 1, "f32": -3.4028234663852886e38, "f64": 1.7976931348623157e308}
    assert _errors(schema, limits) == set()


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date", "2024-02-29", "2023-02-29"),
        ("date-time", "2024-01-02T03:04:05Z", "2024-01-02 03:04:05"),
        ("duration", "1h30m", "soon"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
        ("ipv6", "fe80::1", "10.0.0.1"),
        ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
        ("mac", "00:00:5e:00:53:01", "00:00:5e"),
        ("byte", "aGVsbG8=", "hello!"),
        ("hostname", "example.com", "-bad-"),
        ("email", "a@example.com", "not-an-email"),
        ("uri", "https://example.com/x", "relative/path"),
        ("hexcolor", "#fff", "#ffff"),
        ("uuid4", "f47ac10b-58cc-4372-a567-0e02b2c3d479", "f47ac10b-58cc-3372-a567-0e02b2c3d479"),
    ],
)
def test_string_formats(fmt: str, good: str, bad: str) -> None:
    schema = _field({"type": "string", "format": fmt})
    assert _errors(schema, {"field": good}) == set()
    assert _errors(schema, {"field": bad}) == {
        f'field: Invalid value: "{bad}": field in body must be of type {fmt}: "{bad}"'
    }


def test_unknown_formats_are_ignored() -> None:
    assert _errors(_field({"type": "string", "format": "something-new"}), {"field": "x"}) == set()


def test_additional_properties_paths_use_dots_and_root_keys_a_leading_dot() -> None:
    schema = {
        "type": "object",
        "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
    }
    assert _errors(schema, {"labels": {"a": 1}}) == {
        'labels.a: Invalid value: "integer": labels.a in body must be of type string: "integer"'
    }
    root_map = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert _errors(root_map, {"k": "v"}) == {'k: Invalid value: "string": .k in body must be of type integer: "string"'}


def test_list_item_paths() -> None:
    schema = _field(
        {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}}}
    )
    assert _errors(schema, {"field": [{"name": "ok"}, {"name": "toolong"}]}) == {
        "field[1].name: Too long: may not be more than 3 bytes"
    }


def test_type_errors_carry_reason_field_value_type_invalid() -> None:
    (err,) = Schema.compile(_field({"type": "integer"})).validate_schema({"field": "x"})
    assert isinstance(err, TypeInvalid)
    assert err.cause() == {
        "reason": "FieldValueTypeInvalid",
        "message": 'Invalid value: "string": field in body must be of type integer: "string"',
        "field": "field",
    }


MEDIUM = {"type": "number", "minimum": 50, "maximum": 10000}
RATCHET = {
    "type": "object",
    "properties": {
        "small": {"type": "number", "maximum": 50},
        "medium": MEDIUM,
        "nested": {"type": "object", "properties": {"small": {"type": "number", "maximum": 50}}},
        "byKey": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": MEDIUM}},
        },
        "atomic": {"type": "array", "items": MEDIUM},
    },
}


@pytest.mark.parametrize(
    ("new", "old", "valid"),
    [
        pytest.param({"small": 500}, {"small": 500}, True, id="unchanged-invalid-field"),
        pytest.param({"small": 501}, {"small": 501, "medium": 500}, True, id="other-field-changed"),
        pytest.param({"small": 500}, {"small": 501}, False, id="changed-invalid-field"),
        pytest.param({"nested": {"small": 500}}, {"nested": {"small": 500}}, True, id="nested-unchanged"),
        pytest.param({"nested": {"small": 500}}, {"nested": {"small": 501}}, False, id="nested-changed"),
        pytest.param(
            {"byKey": [{"name": "b", "value": 2}, {"name": "a", "value": 1}]},
            {"byKey": [{"name": "a", "value": 1}, {"name": "b", "value": 2}]},
            True,
            id="map-list-reordered",
        ),
        pytest.param(
            {"byKey": [{"name": "a", "value": 1}, {"name": "c", "value": 2}]},
            {"byKey": [{"name": "a", "value": 1}]},
            False,
            id="map-list-new-element",
        ),
        pytest.param({"atomic": [1, 2]}, {"atomic": [1, 2]}, True, id="atomic-list-unchanged"),
        pytest.param({"atomic": [2, 1]}, {"atomic": [1, 2]}, False, id="atomic-list-reordered"),
    ],
)
def test_ratcheting(new: dict[str, Any], old: dict[str, Any], valid: bool) -> None:
    assert (not _errors(RATCHET, new, old)) is valid
    assert _errors(RATCHET, new) != set()


def test_status_update_validates_only_status_with_status_paths() -> None:
    schema = Schema.compile(
        {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                "status": {
                    "type": "object",
                    "required": ["phase"],
                    "properties": {"phase": {"type": "string"}, "ready": {"type": "integer"}},
                },
            },
        }
    )
    obj = {"spec": {"replicas": "bad"}, "status": {"ready": "x"}}
    old = {"spec": {"replicas": "bad"}, "status": {"phase": "Running"}}
    assert [str(e) for e in schema.validate_status(obj, old)] == [
        'status.ready: Invalid value: "string": ready in body must be of type integer: "string"',
        "status.phase: Required value",
    ]
