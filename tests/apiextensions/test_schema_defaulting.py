"""Structural defaulting: the vectors of upstream's defaulting/algorithm_test.go, and defaults in a whole schema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tinykube.apiextensions.defaulting import default
from tinykube.apiextensions.node import compile_node
from tinykube.apiextensions.schema import Schema


def _d(value: str) -> dict[str, Any]:
    return {"default": value}


CASES = [
    pytest.param("4", _d("foo"), "4", id="scalar"),
    pytest.param("[1,2]", {"items": _d("foo")}, "[1,2]", id="scalar-array"),
    pytest.param(
        '[{"a":1},{"b":1},{"c":1}]',
        {"items": {"properties": {"a": _d("A"), "b": _d("B"), "c": _d("C")}}},
        '[{"a":1,"b":"B","c":"C"},{"a":"A","b":1,"c":"C"},{"a":"A","b":"B","c":1}]',
        id="object-array",
    ),
    pytest.param(
        '{"array":[{"a":1},{"b":2}],"object":{"a":1},"additionalProperties":{"x":{"a":1},"y":{"b":2}}}',
        {
            "properties": {
                "array": {"items": {"properties": {"a": _d("A"), "b": _d("B")}}},
                "object": {"properties": {"a": _d("N"), "b": _d("O")}},
                "additionalProperties": {"additionalProperties": {"properties": {"a": _d("alpha"), "b": _d("beta")}}},
                "foo": _d("bar"),
            }
        },
        '{"array":[{"a":1,"b":"B"},{"a":"A","b":2}],"object":{"a":1,"b":"O"},'
        '"additionalProperties":{"x":{"a":1,"b":"beta"},"y":{"a":"alpha","b":2}},"foo":"bar"}',
        id="object-array-object",
    ),
    pytest.param(
        '[{},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":null},{"a":[]},{"a":{}}]',
        {"items": {"properties": {"a": _d("A")}}},
        '[{"a":"A"},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":"A"},{"a":[]},{"a":{}}]',
        id="empty-and-null",
    ),
    pytest.param(
        "[null]", {"nullable": True, "items": {"properties": {"a": _d("A")}}}, "[null]", id="null-nullable-list"
    ),
    pytest.param("[null]", {"items": _d("A")}, '["A"]', id="null-in-non-nullable-list"),
    pytest.param(
        '{"a": null}', {"properties": {"a": {"nullable": True, "default": "A"}}}, '{"a": null}', id="nullable"
    ),
    pytest.param('{"a": null}', {"properties": {"a": _d("A")}}, '{"a": "A"}', id="null-in-non-nullable-object"),
    pytest.param(
        '{"a": null}', {"additionalProperties": {"nullable": True, "default": "A"}}, '{"a": null}', id="nullable-map"
    ),
    pytest.param('{"a": null}', {"additionalProperties": _d("A")}, '{"a": "A"}', id="null-in-non-nullable-map"),
    pytest.param('{"a": null}', {"additionalProperties": True}, '{"a": null}', id="null-unknown-field"),
]


@pytest.mark.parametrize(("value", "schema", "expected"), CASES)
def test_upstream_vectors(value: str, schema: dict[str, Any], expected: str) -> None:
    obj = json.loads(value)
    default(compile_node(schema), obj)
    assert obj == json.loads(expected)


def test_defaults_are_copied_and_defaulted_in_turn() -> None:
    schema = Schema.compile(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "replicas": {"type": "integer", "default": 1},
                        "template": {
                            "type": "object",
                            "default": {"image": "nginx"},
                            "properties": {
                                "image": {"type": "string"},
                                "pull": {"type": "string", "default": "Always"},
                            },
                        },
                    },
                }
            },
        }
    )
    first: dict[str, Any] = {}
    second: dict[str, Any] = {}
    schema.default(first)
    schema.default(second)
    assert first == {"spec": {"replicas": 1, "template": {"image": "nginx", "pull": "Always"}}}
    first["spec"]["template"]["image"] = "changed"
    assert second["spec"]["template"]["image"] == "nginx"


def test_no_parent_no_default() -> None:
    schema = Schema.compile(
        {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer", "default": 1}}}},
        }
    )
    obj: dict[str, Any] = {"metadata": {"name": "x"}}
    schema.default(obj)
    assert obj == {"metadata": {"name": "x"}}


def test_defaults_inside_map_lists_and_additional_properties() -> None:
    schema = Schema.compile(
        {
            "type": "object",
            "properties": {
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}},
                    },
                },
                "byName": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"weight": {"type": "integer", "default": 1}},
                    },
                },
            },
        }
    )
    obj: dict[str, Any] = {
        "ports": [{"name": "a"}, {"name": "b", "protocol": "UDP"}],
        "byName": {"x": {}, "y": {"weight": 5}},
    }
    schema.default(obj)
    assert obj["ports"] == [{"name": "a", "protocol": "TCP"}, {"name": "b", "protocol": "UDP"}]
    assert obj["byName"] == {"x": {"weight": 1}, "y": {"weight": 5}}


def test_unknown_fields_in_defaults_are_pruned_when_the_schema_is_compiled() -> None:
    schema = Schema.compile(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "template": {
                            "type": "object",
                            "default": {"image": "nginx", "unknown": True},
                            "properties": {"image": {"type": "string"}},
                        }
                    },
                }
            },
        }
    )
    obj: dict[str, Any] = {"spec": {}}
    schema.default(obj)
    assert obj == {"spec": {"template": {"image": "nginx"}}}
