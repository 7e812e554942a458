"""Pruning as upstream's pruning/algorithm_test.go and the CR decoder (unknown field paths, nulls, metadata)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tinykube.apiextensions.node import compile_node
from tinykube.apiextensions.pruning import prune_fields
from tinykube.apiextensions.schema import Schema

OBJ = {"type": "object"}


def _prune(schema: dict[str, Any], value: Any, *, root: bool = False) -> tuple[Any, list[str]]:
    node = compile_node(schema)
    paths = prune_fields(node, value, resource_root=root)
    return value, paths


def test_object_array_object() -> None:
    schema = {
        "properties": {
            "array": {"items": {"properties": {"a": {}, "c": {}}}},
            "specified": {"properties": {"a": {}, "c": {}}},
        }
    }
    value = {
        "array": [{"a": 1}, {"b": 1}, {"a": 1, "b": 2, "c": 3}],
        "unspecified": {"a": 1},
        "specified": {"a": 1, "b": 2, "c": 3},
    }
    pruned, paths = _prune(schema, value)
    assert pruned == {"array": [{"a": 1}, {}, {"a": 1, "c": 3}], "specified": {"a": 1, "c": 3}}
    assert paths == ["array[1].b", "array[2].b", "specified.b", "unspecified"]


def test_object_array_with_items_schema() -> None:
    pruned, paths = _prune(
        {"items": {"properties": {"a": {}, "c": {}}}}, [{"a": 1}, {"b": 1}, {"a": 1, "b": 2, "c": 3}]
    )
    assert pruned == [{"a": 1}, {}, {"a": 1, "c": 3}]
    assert paths == ["[1].b", "[2].b"]


def test_nested_preserve_unknown_fields() -> None:
    schema = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "alpha": {"type": "string"},
            "beta": {"type": "number"},
            "pruning": {
                "type": "object",
                "properties": {
                    "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "pruning": {"type": "object"},
                },
            },
            "preserving": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {
                    "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "preservingUnknownType": {"x-kubernetes-preserve-unknown-fields": True},
                    "pruning": {"type": "object"},
                },
            },
            "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "additionalProperties": {"type": "object", "properties": {"specified": {"type": "object"}}},
            },
            "preservingAdditionalPropertiesKeyPruneValues": {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"specified": {"type": "object"}}},
            },
        },
    }
    value = json.loads("""{
      "unspecified": "bar", "alpha": "abc", "beta": 42.0, "unspecifiedObject": {"unspecified": "bar"},
      "pruning": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"}, "pruning": {"unspecified": "bar"},
                  "apiVersion": "unknown", "preserving": {"unspecified": "bar"}},
      "preserving": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                     "pruning": {"unspecified": "bar"}, "preserving": {"unspecified": "bar"},
                     "preservingUnknownType": [{"foo": true}, {"bar": true}]},
      "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
         "foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}},
      "preservingAdditionalPropertiesKeyPruneValues": {
         "foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}}
    }""")
    pruned, paths = _prune(schema, value)
    assert pruned == json.loads("""{
      "unspecified": "bar", "alpha": "abc", "beta": 42.0, "unspecifiedObject": {"unspecified": "bar"},
      "pruning": {"pruning": {}, "preserving": {"unspecified": "bar"}},
      "preserving": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"}, "pruning": {},
                     "preserving": {"unspecified": "bar"}, "preservingUnknownType": [{"foo": true}, {"bar": true}]},
      "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {"foo": {"specified": {}}},
      "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {}}}
    }""")
    assert paths == [
        "preserving.pruning.unspecified",
        "preservingAdditionalPropertiesKeyPruneValues.foo.specified.unspecified",
        "preservingAdditionalPropertiesKeyPruneValues.foo.unspecified",
        "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.specified.unspecified",
        "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.unspecified",
        "pruning.apiVersion",
        "pruning.pruning.unspecified",
        "pruning.unspecified",
        "pruning.unspecifiedObject",
    ]


def test_additional_properties_with_schema() -> None:
    schema = {"properties": {"a": {}, "c": {"additionalProperties": {"type": "integer"}}}}
    pruned, paths = _prune(schema, {"a": 1, "b": 1, "c": {"a": 1, "b": 2, "c": {"a": 1}}})
    assert pruned == {"a": 1, "c": {"a": 1, "b": 2, "c": {}}}
    assert paths == ["b", "c.c.a"]


def test_additional_properties_bool_keeps_keys_and_prunes_their_contents() -> None:
    schema = {"properties": {"a": {}, "c": {"additionalProperties": False}}}
    pruned, paths = _prune(schema, {"a": 1, "b": 1, "c": {"a": 1, "b": 2, "c": {"a": 1, "apiVersion": "unknown"}}})
    assert pruned == {"a": 1, "c": {"a": 1, "b": 2, "c": {}}}
    assert paths == ["b", "c.c.a", "c.c.apiVersion"]


EMBEDDED_SCHEMA = {
    "type": "object",
    "properties": {
        "pruned": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "properties": {"spec": {"type": "object"}},
        },
        "preserving": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True,
        },
        "nested": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "embedded": {
                            "type": "object",
                            "x-kubernetes-embedded-resource": True,
                            "properties": {"spec": {"type": "object"}},
                        }
                    },
                }
            },
        },
    },
}


def _embedded_object() -> dict[str, Any]:
    resource = {
        "apiVersion": "foo/v1",
        "kind": "Foo",
        "unspecified": "bar",
        "metadata": {"name": "instance", "unspecified": "bar"},
        "spec": {"unspecified": "bar"},
    }
    nested = json.loads(json.dumps(resource))
    nested["spec"]["embedded"] = json.loads(json.dumps(resource))
    return {
        "apiVersion": "foo/v1",
        "kind": "Foo",
        "metadata": {"name": "instance", "unspecified": "bar"},
        "unspecified": "bar",
        "pruned": json.loads(json.dumps(resource)),
        "preserving": json.loads(json.dumps(resource)),
        "nested": nested,
    }


EMBEDDED_PATHS = [
    "nested.spec.embedded.spec.unspecified",
    "nested.spec.embedded.unspecified",
    "nested.spec.unspecified",
    "nested.unspecified",
    "pruned.spec.unspecified",
    "pruned.unspecified",
    "unspecified",
]


@pytest.mark.parametrize("root", [False, True], ids=["not-root", "resource-root"])
def test_embedded_resources_keep_type_and_object_meta(root: bool) -> None:
    pruned, paths = _prune(EMBEDDED_SCHEMA, _embedded_object(), root=root)
    assert paths == EMBEDDED_PATHS
    assert pruned["pruned"] == {
        "apiVersion": "foo/v1",
        "kind": "Foo",
        "metadata": {"name": "instance", "unspecified": "bar"},
        "spec": {},
    }
    assert pruned["preserving"]["unspecified"] == "bar"
    assert pruned["nested"]["spec"] == {
        "embedded": {
            "apiVersion": "foo/v1",
            "kind": "Foo",
            "metadata": {"name": "instance", "unspecified": "bar"},
            "spec": {},
        }
    }
    assert ("metadata" in pruned) is root and ("apiVersion" in pruned) is root


def test_schema_prune_reports_metadata_then_fields_then_embedded_metadata() -> None:
    """The decoder's order: root metadata (ObjectMeta), structural pruning (sorted), embedded metadata (sorted)."""
    schema = Schema.compile(EMBEDDED_SCHEMA)
    obj = _embedded_object()
    paths = schema.prune(obj)
    assert paths == [
        "metadata.unspecified",
        *EMBEDDED_PATHS,
        "nested.metadata.unspecified",
        "nested.spec.embedded.metadata.unspecified",
        "preserving.metadata.unspecified",
        "pruned.metadata.unspecified",
    ]
    assert obj["metadata"] == {"name": "instance"}
    assert obj["pruned"]["metadata"] == {"name": "instance"}


def test_embedded_metadata_is_written_back_as_object_meta() -> None:
    schema = Schema.compile(EMBEDDED_SCHEMA)
    obj = {
        "pruned": {"apiVersion": "v1", "kind": "Foo", "metadata": {"name": "", "labels": {}, "creationTimestamp": None}}
    }
    assert schema.prune(obj) == []
    assert obj["pruned"]["metadata"] == {}


def test_malformed_metadata_is_kept_on_write_and_dropped_on_read() -> None:
    schema = Schema.compile(OBJ)
    written = {"metadata": {"name": "a", "labels": "nope"}}
    assert schema.prune(written) == []
    assert written["metadata"] == {"name": "a", "labels": "nope"}
    stored = {"metadata": {"name": "a", "labels": "nope", "generation": "1"}}
    assert schema.prune(stored, drop_invalid_metadata=True) == []
    assert stored["metadata"] == {"name": "a"}


def test_unknown_fields_of_owner_references_are_reported() -> None:
    schema = Schema.compile(OBJ)
    obj = {"metadata": {"name": "a", "ownerReferences": [{"kind": "X", "name": "b", "extra": 1}]}}
    assert schema.prune(obj) == ["metadata.ownerReferences[0].extra"]
    assert obj["metadata"]["ownerReferences"] == [{"kind": "X", "name": "b"}]


def test_non_nullable_nulls_without_default_are_dropped_silently() -> None:
    schema = Schema.compile(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "plain": {"type": "string"},
                        "nullable": {"type": "string", "nullable": True},
                        "defaulted": {"type": "string", "default": "x"},
                        "map": {"type": "object", "additionalProperties": {"type": "string"}},
                        "list": {"type": "array", "items": {"type": "string"}},
                    },
                }
            },
        }
    )
    obj = {"spec": {"plain": None, "nullable": None, "defaulted": None, "map": {"k": None}, "list": [None]}}
    assert schema.prune(obj) == []
    assert obj["spec"] == {"nullable": None, "defaulted": None, "map": {}, "list": [None]}
    schema.default(obj)
    assert obj["spec"]["defaulted"] == "x"


def test_prune_is_idempotent_on_a_typical_object() -> None:
    schema = Schema.compile(EMBEDDED_SCHEMA)
    obj = _embedded_object()
    schema.prune(obj)
    again = json.loads(json.dumps(obj))
    assert schema.prune(again) == []
    assert again == obj
