"""List-type invariants and embedded resources (upstream's listtype and objectmeta validation vectors)."""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import ErrorType, FieldError
from tinykube.apiextensions import listtype
from tinykube.apiextensions.schema import Schema

STR = {"type": "string"}


def _set(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "x-kubernetes-list-type": "set", "items": items}


def _map_list(keys: list[str], **props: Any) -> dict[str, Any]:
    item = {"type": "object", "properties": {k: {} for k in ("a", "b", "c", "d")} | props}
    return {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": keys, "items": item}


def _duplicates(schema: dict[str, Any], obj: dict[str, Any]) -> list[tuple[str, str]]:
    errs = Schema.compile(schema).validate_schema(obj)
    return [(e.type.name, e.field) for e in errs if e.type in (ErrorType.DUPLICATE, ErrorType.INVALID)]


def test_set_lists_report_each_second_appearance() -> None:
    schema = {"type": "object", "properties": {"array": _set({})}}
    assert _duplicates(schema, {"array": ["a", "a", "b", "c", "d", "c"]}) == [
        ("DUPLICATE", "array[1]"),
        ("DUPLICATE", "array[5]"),
    ]


def test_set_lists_compare_as_go_does() -> None:
    values = {
        "strings": ["a", "b", "a"],
        "integers": [1, 2, 1],
        "booleans": [False, True, True],
        "float64": [1.0, 2.0, 2.0],
        "nil": ["a", None, None],
        "empty maps": [{"a": "b"}, {}, {}],
        "map values": [{"a": "b"}, {"a": "c"}, {"a": "b"}],
        "array": [[], ["a"], ["b"], ["a"]],
        "multiple duplicates": [{"a": "b"}, {"a": "c"}, {"a": "b"}, {"a": "c"}, {"a": "c"}],
        "mixed": [1, True, 1.5, "1", None],
    }
    schema = {"type": "object", "properties": {k: _set({}) for k in values}}
    assert _duplicates(schema, values) == [
        ("DUPLICATE", "strings[2]"),
        ("DUPLICATE", "integers[2]"),
        ("DUPLICATE", "booleans[2]"),
        ("DUPLICATE", "float64[2]"),
        ("DUPLICATE", "nil[2]"),
        ("DUPLICATE", "empty maps[2]"),
        ("DUPLICATE", "map values[2]"),
        ("DUPLICATE", "array[3]"),
        ("DUPLICATE", "multiple duplicates[2]"),
        ("DUPLICATE", "multiple duplicates[3]"),
    ]


def test_map_lists() -> None:
    values = {
        "strings": ["a"],
        "one key": [{"a": "0", "c": "2"}, {"a": "1", "c": "1"}, {"a": "1", "c": "2"}, {}],
        "two keys": [
            {"a": "1", "b": "1", "c": "1"},
            {"a": "1", "b": "2", "c": "2"},
            {"a": "1", "b": "2", "c": "3"},
            {},
        ],
        "undefined key": [{"a": "1", "b": "1", "c": "1"}, {"a": "1", "c": "2"}, {"a": "1", "c": "3"}, {}],
        "compound key": [
            {"a": [], "c": "1"},
            {"a": None, "c": "1"},
            {"a": ["a"], "c": "1"},
            {"a": ["a", 42], "c": "2"},
            {"a": ["a", 42], "c": ["3"]},
        ],
        "nil key": [{"a": [], "c": "1"}, {"a": None, "c": "1"}, {"c": "1"}, {"a": None}],
        "nil item": [None, {"a": "0", "c": "1"}, {"a": None}, {"c": "1"}],
        "nil item multiple keys": [None, {"b": "0", "c": "1"}, {"a": None}, {"c": "1"}],
    }
    keys = {"two keys": ["a", "b"], "undefined key": ["a", "b"], "nil item multiple keys": ["a", "b"]}
    schema = {"type": "object", "properties": {k: _map_list(keys.get(k, ["a"])) for k in values}}
    errs: list[FieldError] = []
    listtype.validate(Schema.compile(schema).root, values, None, errs)
    assert [(e.type.name, e.field) for e in errs] == [
        ("INVALID", "strings[0]"),
        ("DUPLICATE", "one key[2]"),
        ("DUPLICATE", "two keys[2]"),
        ("DUPLICATE", "undefined key[2]"),
        ("DUPLICATE", "compound key[4]"),
        ("DUPLICATE", "nil key[3]"),
        ("DUPLICATE", "nil item[3]"),
        ("DUPLICATE", "nil item multiple keys[3]"),
    ]
    assert str(errs[0]) == 'strings[0]: Invalid value: "a": must be an object for an array of list-type map'
    assert str(errs[1]) == 'one key[2]: Duplicate value: {"a":"1"}'
    assert str(errs[2]) == 'two keys[2]: Duplicate value: {"a":"1","b":"2"}'
    assert str(errs[6]) == "nil item[3]: Duplicate value: {}"


def test_nested_lists_and_map_values_use_field_paths() -> None:
    schema = {
        "type": "object",
        "properties": {"byName": {"type": "object", "additionalProperties": {"type": "array", "items": _set(STR)}}},
    }
    errs = Schema.compile(schema).validate_schema({"byName": {"k": [["x", "x"]]}})
    assert [str(e) for e in errs] == ['byName[k][0][1]: Duplicate value: "x"']


def test_list_type_errors_ratchet_when_the_old_object_had_them_too() -> None:
    schema = Schema.compile({"type": "object", "properties": {"s": _set(STR), "t": _set(STR)}})
    old = {"s": ["a", "a"]}
    assert schema.validate_schema({"s": ["a", "a"], "t": ["b", "b"]}, old) == []
    assert len(schema.validate_schema({"t": ["b", "b"]}, {"s": ["a"]})) == 1


EMBEDDED = {
    "type": "object",
    "properties": {
        "template": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True,
        },
        "many": {
            "type": "object",
            "additionalProperties": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {}},
        },
    },
}


def _embedded(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in Schema.compile(EMBEDDED).validate_schema(obj)]


def test_embedded_resources_need_api_version_and_kind() -> None:
    assert _embedded({"template": {}}) == ["template.apiVersion: Required value", "template.kind: Required value"]
    assert _embedded({"template": {"apiVersion": "foo/v1", "kind": "Foo"}}) == []
    assert _embedded({"many": {"x": {"apiVersion": "v1"}}}) == ["many[x].kind: Required value"]


def test_embedded_type_meta_values() -> None:
    errs = _embedded({"template": {"apiVersion": "a/b/c", "kind": "foo.bar-com"}})
    assert errs == [
        'template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c',
        'template.kind: Invalid value: "foo.bar-com": may have mixed case, but should otherwise match: a DNS-1035 '
        "label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end "
        "with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
        "'[a-z]([-a-z0-9]*[a-z0-9])?')",
    ]
    assert _embedded({"template": {"apiVersion": 1, "kind": ""}}) == [
        "template.apiVersion: Invalid value: 1: must be a string",
        'template.kind: Invalid value: "": must not be empty',
    ]


def test_embedded_metadata() -> None:
    base = {"apiVersion": "foo/v1", "kind": "Foo"}
    assert _embedded({"template": {**base, "metadata": {"namespace": "kube-system"}}}) == []
    bad = {"name": "..", "namespace": "$$$", "labels": {"#": "#"}, "annotations": {"#": "#"}}
    fields = [e.split(":")[0] for e in _embedded({"template": {**base, "metadata": bad}})]
    assert fields == [
        "template.metadata.name",
        "template.metadata.namespace",
        "template.metadata.labels",
        "template.metadata.labels",
        "template.metadata.annotations",
    ]
    assert _embedded({"template": {**base, "metadata": {"labels": "x"}}}) == [
        'template.metadata: Invalid value: {"labels":"x"}: json: cannot unmarshal string into Go struct field '
        "ObjectMeta.labels of type map[string]string"
    ]


def test_embedded_errors_do_not_block_on_their_own_but_required_does() -> None:
    raw = {**EMBEDDED, "x-kubernetes-validations": [{"rule": "has(self.template)"}]}
    errs = Schema.compile(raw).validate({"template": {"apiVersion": "v1"}})
    assert [e.detail for e in errs][-1].startswith("some validation rules were not checked")
