"""CustomResourceDefinitions in protobuf against upstream's own bytes.

tests/api/protobuf_vectors/crd-*.pb are what upstream's protobuf serializer writes for CRDs built with upstream's
Go types (k8s.io/apiextensions-apiserver v0.32.13), and crd-*.json what Go's JSON writes for the same objects;
tools/protobuf_vectors/ (a Go program) regenerates them. They cover nested schemas, `items` as a schema and as
a list, `additionalProperties`/`additionalItems` as a bool and as a schema, `dependencies` as a list and as a
schema, `definitions`, defaults, examples and enums of every JSON type (null too), pointer zeros (`minimum: 0`,
`maxLength: 0`, `x-kubernetes-preserve-unknown-fields: false`), every `x-kubernetes-*` field, validation rules,
selectable fields, printer columns, subresources, and conversion webhooks by service and by URL.

The decoder must give the Go JSON for each .pb, and the table-driven test encoder (tests/api/test_protobuf_schema)
must give the .pb back from the JSON, byte for byte: the table's numbers, types and zero rules are upstream's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.api.test_protobuf import envelope, msg, num, text
from tests.api.test_protobuf_schema import encode
from tinykube.api.errors import BadRequest
from tinykube.api.protobuf import decode

VECTORS = Path(__file__).parent / "protobuf_vectors"
NAMES = ("crd-served", "crd-forms", "crd-small")
CRD = "apiextensions.v1.CustomResourceDefinition"


def go_json(name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((VECTORS / f"{name}.json").read_text())
    return result


def go_protobuf(name: str) -> bytes:
    return (VECTORS / f"{name}.pb").read_bytes()


def _typed(value: Any) -> Any:
    """`value` with each scalar paired with its type, so that 1, 1.0 and True compare apart."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


@pytest.mark.parametrize("name", NAMES)
def test_a_crd_in_protobuf_decodes_to_the_json_go_writes_for_it(name: str) -> None:
    assert _typed(decode(go_protobuf(name))) == _typed(go_json(name))


@pytest.mark.parametrize("name", NAMES)
def test_the_table_encodes_a_crd_to_the_bytes_go_writes(name: str) -> None:
    obj = go_json(name)
    api_version, kind = obj.pop("apiVersion"), obj.pop("kind")
    assert envelope(api_version, kind, encode(CRD, obj, gogo=True)) == go_protobuf(name)


def _schema(name: str) -> dict[str, Any]:
    result: dict[str, Any] = decode(go_protobuf(name))["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return result


def test_json_schema_props_or_forms_take_their_hand_written_json_form() -> None:
    schema = _schema("crd-forms")
    assert schema["items"] == [{"type": "string"}, {"type": "integer"}]  # OrArray: the list
    assert schema["properties"]["arr"]["items"] == {"type": "boolean"}  # OrArray: the schema
    assert schema["additionalItems"] is False  # OrBool: false
    assert schema["properties"]["open"]["additionalProperties"] is True  # OrBool: true
    assert schema["properties"]["typed"]["additionalProperties"] == {"type": "string"}  # OrBool: the schema
    assert schema["dependencies"] == {"a": ["b", "c"], "d": {"required": ["e"]}}  # OrStringArray: both
    assert schema["definitions"] == {"base": {"type": "object", "x-kubernetes-preserve-unknown-fields": False}}


def test_json_values_keep_their_json_types_and_nulls() -> None:
    schema = _schema("crd-forms")
    assert schema["default"] == {"list": [1, 2.5, "x", True, None, {"k": []}], "n": None}
    assert _typed(schema["enum"]) == _typed(["a", 1, -2, 0.5, True, False, None, {"o": {}}, []])
    assert schema["example"] == [{"a": 1}]
    served = _schema("crd-served")["properties"]["spec"]["properties"]
    assert [served[p]["default"] for p in ("mode", "replicas", "ratio", "enabled", "labels", "ports", "tags")] == [
        "auto",
        3,
        1.5,
        False,
        {"tier": "web", "zone": "a"},
        [{"name": "http", "port": 80}],
        ["a", "b"],
    ]


def test_doubles_are_written_as_go_writes_a_float64() -> None:
    schema = _schema("crd-forms")
    assert _typed({k: schema[k] for k in ("maximum", "minimum", "multipleOf")}) == _typed(
        {"maximum": -0.5, "minimum": 0, "multipleOf": 1e-7}
    )
    ratio = _schema("crd-served")["properties"]["spec"]["properties"]["ratio"]
    assert _typed([ratio["minimum"], ratio["maximum"], ratio["multipleOf"]]) == _typed([-2.25, 1000, 0.25])


def test_pointer_zeros_are_kept_and_x_kubernetes_fields_take_their_json_names() -> None:
    schema = _schema("crd-forms")
    assert {k: schema[k] for k in ("maxLength", "minLength", "maxItems", "minItems", "maxProperties")} == dict.fromkeys(
        ("maxLength", "minLength", "maxItems", "minItems", "maxProperties"), 0
    )
    assert (schema["$schema"], schema["$ref"], schema["id"]) == (
        "http://json-schema.org/draft-04/schema#",
        "#/definitions/base",
        "forms",
    )
    spec = _schema("crd-served")["properties"]["spec"]
    assert spec["properties"]["ports"]["x-kubernetes-list-map-keys"] == ["name"]
    assert spec["properties"]["template"]["x-kubernetes-embedded-resource"] is True
    assert spec["properties"]["settings"]["x-kubernetes-map-type"] == "atomic"
    assert spec["x-kubernetes-validations"][1] == {
        "rule": "self.mode != 'off' || !has(oldSelf.mode)",
        "messageExpression": "'mode ' + self.mode",
        "optionalOldSelf": True,
    }


def test_a_conversion_webhook_decodes_its_client_config() -> None:
    webhook = decode(go_protobuf("crd-forms"))["spec"]["conversion"]["webhook"]
    assert webhook == {
        "clientConfig": {
            "service": {"namespace": "ns", "name": "conv", "path": "/convert", "port": 8443},
            "caBundle": "AAECAwQF/w==",
        },
        "conversionReviewVersions": ["v1", "v1beta1"],
    }
    small = decode(go_protobuf("crd-small"))["spec"]["conversion"]["webhook"]["clientConfig"]
    assert small == {"url": "https://conv.example.com/c"}


def _props(*parts: bytes) -> bytes:
    """A CRD whose one version's openAPIV3Schema is a JSONSchemaProps of `parts`."""
    version = msg(7, text(1, "v1"), msg(4, msg(1, *parts)))
    return envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", msg(2, version))


def test_empty_or_forms_are_what_go_writes_for_them() -> None:
    """An `items` message with neither field is JSON null (Go's OrArray writes a nil schema); an empty
    `additionalProperties` message is false (no schema, allows false); a dependency without either is null."""
    body = _props(msg(24), msg(30), msg(32, text(1, "a"), msg(2)), msg(33, num(1, True)))
    schema = decode(body)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema == {
        "items": None,
        "additionalProperties": False,
        "dependencies": {"a": None},
        "additionalItems": True,
    }


def test_a_double_that_json_cannot_hold_is_a_bad_request() -> None:
    nan = b"\x49" + bytes.fromhex("000000000000f87f")  # field 9 (maximum), fixed64: NaN
    with pytest.raises(BadRequest, match=r"maximum.*not a number JSON can hold"):
        decode(_props(nan))


def test_a_double_on_the_wrong_wire_type_is_a_bad_request() -> None:
    with pytest.raises(BadRequest, match="expected a 64-bit double"):
        decode(_props(num(9, 1)))
