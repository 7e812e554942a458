"""CustomResourceDefinition defaulting and validation: upstream's vectors (validation_test.go and
schema/validation_test.go) restated as v1 objects, with the exact messages upstream prints for them.

A v1 CRD is validated in upstream's internal form, where whatever every version shares (schema, subresources,
printer columns, selectable fields) sits at the top of the spec: a one-version CRD's schema errors therefore read
`spec.validation.openAPIV3Schema...`, and those of a version whose schema differs read `spec.versions[i].schema...`.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinykube.api.errors import ErrorType
from tinykube.apiextensions.crdvalidation import (
    default_crd,
    deprecation_warning_errors,
    validate_crd,
    validate_crd_status,
)

DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation "
    "is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
ROOT = "spec.validation.openAPIV3Schema"


def obj(*props: tuple[str, Any], **fields: Any) -> dict[str, Any]:
    """A schema of type object with these properties (and other fields)."""
    schema: dict[str, Any] = {"type": "object", **fields}
    if props:
        schema["properties"] = dict(props)
    return schema


def crd(schema: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A valid one-version CRD `foos.example.com`; `schema` replaces its schema, `spec` its spec's fields."""
    version = {"name": "v1", "served": True, "storage": True}
    version["schema"] = {"openAPIV3Schema": schema if schema is not None else obj(("spec", obj()))}
    body: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
            "versions": [version],
            **spec,
        },
    }
    default_crd(body)
    return body


def messages(body: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [str(e) for e in validate_crd(body, old)]


def schema_messages(schema: dict[str, Any]) -> list[str]:
    return messages(crd(schema))


# ---- defaulting ---------------------------------------------------------------------------------------------------


def test_valid_crd_has_no_errors() -> None:
    assert messages(crd()) == []


def test_defaults_fill_names_conversion_and_stored_versions() -> None:
    body = {
        "metadata": {"name": "foos.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "foos", "kind": "FooBar"},
            "versions": [{"name": "v1beta1", "storage": False}, {"name": "v1", "storage": True}],
        },
    }
    default_crd(body)
    assert body["spec"]["names"] == {"plural": "foos", "kind": "FooBar", "singular": "foobar", "listKind": "FooBarList"}
    assert body["spec"]["conversion"] == {"strategy": "None"}
    assert body["status"] == {"storedVersions": ["v1"]}


def test_defaults_keep_what_is_set() -> None:
    body = crd(names={"plural": "foos", "singular": "x", "kind": "Foo", "listKind": "Foos"})
    body["spec"]["conversion"] = {"strategy": "None"}
    body["status"]["storedVersions"] = ["v0", "v1"]
    before = copy.deepcopy(body)
    default_crd(body)
    assert body == before


def test_defaults_webhook_service_port() -> None:
    body = crd(
        conversion={"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}}
    )
    assert body["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443


def test_defaults_tolerate_any_shape() -> None:
    for body in ({}, {"spec": None}, {"spec": {"names": "x", "versions": "y"}}, {"spec": {}, "status": "z"}):
        default_crd(body)  # no exception, and nothing to default from
    body = {"spec": {}}
    default_crd(body)
    assert body == {"spec": {"conversion": {"strategy": "None"}}}


# ---- metadata, group, scope, names ------------------------------------------------------------------------------


def test_missing_values() -> None:
    """upstream's "missing values": an empty spec."""
    body = {"metadata": {"name": "plural.group.com"}, "spec": {}}
    default_crd(body)
    assert messages(body) == [
        'metadata.name: Invalid value: "plural.group.com": must be spec.names.plural+"."+spec.group',
        "spec.group: Required value",
        "spec.scope: Required value",
        "spec.versions: Invalid value: []string{}: must have exactly one version marked as storage version",
        "spec.names.plural: Required value",
        "spec.names.singular: Required value",
        "spec.names.kind: Required value",
        "spec.names.listKind: Required value",
        "status.storedVersions: Invalid value: []string{}: must have at least one stored version",
    ]


def test_bad_names() -> None:
    """upstream's "bad names 01": every name malformed, in the spec and as accepted."""
    names = {"plural": "pl()*ural", "singular": "value()*a", "kind": "value()*a", "listKind": "value()*a"}
    body = crd(group="group", scope="foo", names=names)
    body["metadata"]["name"] = "plural.group"
    body["status"]["acceptedNames"] = dict(names)
    mixed = "may have mixed case, but should otherwise match: " + DNS1035
    spec_and_status = [
        f'{{p}}.plural: Invalid value: "pl()*ural": {DNS1035}',
        f'{{p}}.singular: Invalid value: "value()*a": {DNS1035}',
        f'{{p}}.kind: Invalid value: "value()*a": {mixed}',
        f'{{p}}.listKind: Invalid value: "value()*a": {mixed}',
        '{p}.listKind: Invalid value: "value()*a": kind and listKind may not be the same',
    ]
    assert messages(body) == [
        'metadata.name: Invalid value: "plural.group": must be spec.names.plural+"."+spec.group',
        'spec.group: Invalid value: "group": should be a domain with at least one dot',
        'spec.scope: Unsupported value: "foo": supported values: "Cluster", "Namespaced"',
        *[m.format(p="spec.names") for m in spec_and_status],
        *[m.format(p="status.acceptedNames") for m in spec_and_status],
    ]


@pytest.mark.parametrize(
    ("group", "expected"),
    [
        pytest.param("", "spec.group: Required value", id="empty"),
        pytest.param("group.c(*&om", f'spec.group: Invalid value: "group.c(*&om": {SUBDOMAIN}', id="not-a-subdomain"),
        pytest.param(
            "example", 'spec.group: Invalid value: "example": should be a domain with at least one dot', id="no-dot"
        ),
    ],
)
def test_group(group: str, expected: str) -> None:
    body = crd(group=group)
    body["metadata"]["name"] = f"foos.{group}"
    assert messages(body) == [expected]


def test_short_names_and_categories() -> None:
    names = {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"}
    body = crd(names={**names, "shortNames": ["ok", "Bad", ""], "categories": ["all", "no_underscores"]})
    assert messages(body) == [
        f'spec.names.shortNames[1]: Invalid value: "Bad": {DNS1035}',
        f'spec.names.shortNames[2]: Invalid value: "": {DNS1035}',
        f'spec.names.categories[1]: Invalid value: "no_underscores": {DNS1035}',
    ]


def test_kind_may_have_mixed_case() -> None:
    assert messages(crd(names={"plural": "foos", "singular": "foo", "kind": "FooBar", "listKind": "FooBarList"})) == []


# ---- versions -----------------------------------------------------------------------------------------------------


def _version(name: str, *, storage: bool = False, served: bool = True, schema: Any = None) -> dict[str, Any]:
    return {"name": name, "served": served, "storage": storage, "schema": {"openAPIV3Schema": schema or obj()}}


def test_versions_need_exactly_one_storage_version() -> None:
    none = crd(versions=[_version("v1"), _version("v2")])
    assert [e.detail for e in validate_crd(none)] == [
        "must have exactly one version marked as storage version",
        "must have at least one stored version",
    ]
    two = crd(versions=[_version("v1", storage=True), _version("v2", storage=True)])
    assert [(e.field, e.detail) for e in validate_crd(two)] == [
        ("spec.versions", "must have exactly one version marked as storage version"),
        ("status.storedVersions", "must have the storage version v2"),
    ]


def test_version_names_unique_and_dns1035() -> None:
    body = crd(versions=[_version("V1", storage=True), _version("V1")])
    assert [str(e) for e in validate_crd(body) if e.field != "spec.versions"] == [
        f'spec.versions[0].name: Invalid value: "V1": {DNS1035}',
        f'spec.versions[1].name: Invalid value: "V1": {DNS1035}',
        f'spec.version: Invalid value: "V1": {DNS1035}',  # upstream's internal spec.version is versions[0]
    ]
    assert [e.detail for e in validate_crd(body) if e.field == "spec.versions"] == ["must contain unique version names"]


def test_no_served_version_is_still_valid() -> None:
    """Upstream does not require a served version (the CRD serves nothing)."""
    body = crd()
    body["spec"]["versions"][0]["served"] = False
    assert messages(body) == []


# ---- schemas required, and where their errors are reported ---------------------------------------------------------


def test_schema_is_required_in_every_version() -> None:
    """upstream's "schema is required": neither version has one."""
    body = crd(versions=[{"name": "v1", "served": True, "storage": True}, {"name": "v2", "served": True, "schema": {}}])
    assert messages(body) == [
        "spec.versions[0].schema.openAPIV3Schema: Required value",
        "spec.versions[1].schema.openAPIV3Schema: Required value",
    ]


UNSTRUCTURAL = {
    "description": "This is a description",
    "type": "object",
    "required": ["spec", "status"],
    "items": {"description": "This is a schema nested under Items"},
    "properties": {"spec": {}, "status": {}},
}


def test_errors_of_a_shared_schema_name_the_top_level() -> None:
    """upstream's "preserveUnknownFields with unstructural global schema"."""
    body = crd(versions=[_version("v1", storage=True, schema=UNSTRUCTURAL), _version("v2", schema=UNSTRUCTURAL)])
    assert messages(body) == [
        f"{ROOT}.items.type: Required value: must not be empty for specified array items",
        f"{ROOT}.properties[spec].type: Required value: must not be empty for specified object fields",
        f"{ROOT}.properties[status].type: Required value: must not be empty for specified object fields",
    ]


def test_errors_of_one_versions_schema_name_that_version() -> None:
    """upstream's "preserveUnknownFields with unstructural schema in one version"."""
    body = crd(versions=[_version("v1", storage=True), _version("v2", schema=UNSTRUCTURAL)])
    at = "spec.versions[1].schema.openAPIV3Schema"
    assert messages(body) == [
        f"{at}.items.type: Required value: must not be empty for specified array items",
        f"{at}.properties[spec].type: Required value: must not be empty for specified object fields",
        f"{at}.properties[status].type: Required value: must not be empty for specified object fields",
    ]


# ---- structural schemas (schema/validation_test.go and TestValidateCustomResourceDefinitionValidation) --------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param({}, [f"{ROOT}.type: Required value: must not be empty at the root"], id="empty-root"),
        pytest.param(
            {"type": "string"},
            [f'{ROOT}.type: Invalid value: "string": must be object at the root'],
            id="root-not-object",
        ),
        pytest.param(
            {"type": "null"},
            [
                f'{ROOT}.type: Invalid value: "null": must be object at the root',
                f'{ROOT}.type: Unsupported value: "null": supported values: "array", "boolean", "integer", "number", '
                '"object", "string"',
                f"{ROOT}.type: Forbidden: type cannot be set to null, use nullable as an alternative",
            ],
            id="null-type",
        ),
        pytest.param(
            {"type": "bogus"},
            [
                f'{ROOT}.type: Invalid value: "bogus": must be object at the root',
                f'{ROOT}.type: Unsupported value: "bogus": supported values: "array", "boolean", "integer", '
                '"number", "object", "string"',
            ],
            id="bogus-type",
        ),
        pytest.param(
            obj(nullable=True), [f"{ROOT}.nullable: Forbidden: nullable cannot be true at the root"], id="nullable-root"
        ),
        pytest.param(
            obj(("a", {"type": "array"})),
            [f"{ROOT}.properties[a].items: Required value: must be specified"],
            id="array-without-items",
        ),
        pytest.param(
            obj(additionalProperties={"type": "string"}),
            [f"{ROOT}.additionalProperties: Forbidden: must not be used at the root"],
            id="additional-properties-at-root",
        ),
        pytest.param(
            obj(("foo", obj(("bar", obj()), additionalProperties=False))),
            [
                f"{ROOT}.properties[foo].additionalProperties: Forbidden: additionalProperties and properties are "
                "mutual exclusive"
            ],
            id="additional-properties-and-properties",
        ),
        pytest.param(obj(("foo", obj(additionalProperties={"type": "string"}))), [], id="map-of-strings"),
        pytest.param(
            obj(("a", {"type": "number", "not": {"x-kubernetes-validations": [{"rule": "x"}]}})),
            [f"{ROOT}.properties[a].not.x-kubernetes-validations: Forbidden: must be empty to be structural"],
            id="rules-under-not",
        ),
        pytest.param(
            obj(("a", {"type": "string", "anyOf": [{"type": "string", "description": "d"}]})),
            [
                f"{ROOT}.properties[a].anyOf[0].description: Forbidden: must be empty to be structural",
                f"{ROOT}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
            ],
            id="generic-fields-under-any-of",
        ),
        pytest.param(
            obj(
                ("a", obj(("b", {"type": "string"}))),
                allOf=[{"properties": {"a": {"properties": {"c": {"maxLength": 3}}}}}],
            ),
            [
                f"{ROOT}.properties[a].properties[c]: Required value: "
                f"because it is defined in {ROOT}.allOf[0].properties[a].properties[c]"
            ],
            id="incomplete",
        ),
        pytest.param(
            obj(("a", {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]})),
            [],
            id="int-or-string-any-of",
        ),
        pytest.param(
            obj(
                (
                    "a",
                    {
                        "x-kubernetes-int-or-string": True,
                        "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^x"}],
                    },
                )
            ),
            [],
            id="int-or-string-all-of",
        ),
        pytest.param(
            obj(("a", {"x-kubernetes-int-or-string": True, "x-kubernetes-preserve-unknown-fields": True})),
            [
                f"{ROOT}.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if "
                "x-kubernetes-int-or-string is true"
            ],
            id="int-or-string-and-preserve",
        ),
        pytest.param(
            obj(("a", {"x-kubernetes-preserve-unknown-fields": False, "type": "object"})),
            [
                f"{ROOT}.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or "
                "undefined"
            ],
            id="preserve-false",
        ),
        pytest.param(
            obj(("metadata", obj(("name", {"type": "string", "maxLength": 10})))), [], id="metadata-name-only"
        ),
        pytest.param(
            obj(("metadata", obj(("labels", obj())))),
            [
                f"{ROOT}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, "
                "but metadata is implicitly specified"
            ],
            id="metadata-labels",
        ),
        pytest.param(
            obj(("kind", {"type": "integer"})),
            [f'{ROOT}.properties[kind].type: Invalid value: "integer": must be string'],
            id="kind-not-string",
        ),
        pytest.param(
            obj(("a", {"type": "string", "pattern": "(a"})),
            [
                f'{ROOT}.properties[a].pattern: Invalid value: "(a": must be a valid regular expression, but isn\'t: '
                "error parsing regexp: missing closing ): `(a`"
            ],
            id="bad-pattern",
        ),
        pytest.param(
            obj(("a", {"type": "string", "uniqueItems": True})),
            [
                f"{ROOT}.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime "
                "complexity becomes quadratic"
            ],
            id="unique-items",
        ),
        pytest.param(
            obj(("a", {"type": "string", "$ref": "#/x"})),
            [f"{ROOT}.properties[a].$ref: Forbidden: $ref is not supported"],
            id="ref",
        ),
        pytest.param(
            obj(("a", {"type": "array", "items": [{"type": "string"}]})),
            [
                f"{ROOT}.properties[a].items: Forbidden: items must be a schema object and not an array",
            ],
            id="items-array",
        ),
    ],
)
def test_structural(schema: dict[str, Any], expected: list[str]) -> None:
    assert schema_messages(schema) == expected


def test_unsupported_field_alone_reports_why_no_structural_schema() -> None:
    """`$schema` is not refused by the OpenAPI walk, so NewStructural's own error is what remains."""
    assert schema_messages(obj(("a", {"type": "string", "$schema": "x"}))) == [
        f"{ROOT}: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported"
    ]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(
            obj(**{"x-kubernetes-embedded-resource": True}),
            [
                f"{ROOT}.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource "
                "is true without x-kubernetes-preserve-unknown-fields"
            ],
            id="embedded-empty",
        ),
        pytest.param(
            {"x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True},
            [f"{ROOT}.properties[e].type: Required value: must be object if x-kubernetes-embedded-resource is true"],
            id="embedded-without-type",
        ),
        pytest.param(
            {"type": "object", "x-kubernetes-embedded-resource": True, "additionalProperties": {"type": "string"}},
            [
                f"{ROOT}.properties[e].additionalProperties: Forbidden: "
                "must not be used if x-kubernetes-embedded-resource "
                "is set",
                f"{ROOT}.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource "
                "is true without x-kubernetes-preserve-unknown-fields",
            ],
            id="embedded-additional-properties",
        ),
        pytest.param(
            obj(
                (
                    "metadata",
                    obj(**{"x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}),
                ),
                **{"x-kubernetes-embedded-resource": True},
            ),
            [
                f"{ROOT}.properties[e].properties[metadata].x-kubernetes-embedded-resource: Forbidden: must not be "
                "used inside of resource meta"
            ],
            id="embedded-inside-meta",
        ),
    ],
)
def test_embedded_resources(schema: dict[str, Any], expected: list[str]) -> None:
    assert schema_messages(obj(("e", schema))) == expected


# ---- list and map types --------------------------------------------------------------------------------------------


def _list_of(items: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return obj(("l", {"type": "array", "items": items, **fields}))


L = f"{ROOT}.properties[l]"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(
            obj(("l", {"type": "object", "x-kubernetes-list-type": "set"})),
            [f'{L}.type: Invalid value: "object": must be array if x-kubernetes-list-type is specified'],
            id="list-type-on-object",
        ),
        pytest.param(
            _list_of({"type": "string"}, **{"x-kubernetes-list-type": "bag"}),
            [f'{L}.x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map"'],
            id="unknown-list-type",
        ),
        pytest.param(
            _list_of({"type": "string"}, **{"x-kubernetes-list-type": "set", "x-kubernetes-list-map-keys": ["a"]}),
            [
                f'{L}.x-kubernetes-list-type: Invalid value: "set": '
                "must be map if x-kubernetes-list-map-keys is non-empty"
            ],
            id="keys-without-map",
        ),
        pytest.param(
            _list_of({"type": "string"}, **{"x-kubernetes-list-map-keys": ["a"]}),
            [f"{L}.x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"],
            id="keys-without-list-type",
        ),
        pytest.param(
            _list_of(obj(("a", {"type": "string"}), required=["a"]), **{"x-kubernetes-list-type": "map"}),
            [f"{L}.x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"],
            id="map-without-keys",
        ),
        pytest.param(
            _list_of({"type": "string"}, **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a"]}),
            [
                f'{L}.items.type: Invalid value: "string": must be object if parent array\'s x-kubernetes-list-type '
                "is map"
            ],
            id="map-of-strings",
        ),
        pytest.param(
            _list_of(
                obj(("a", obj()), ("b", {"type": "string"}), required=["a", "b"]),
                **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "c", "b", "b"]},
            ),
            [
                f'{L}.items.properties[a].type: Invalid value: "object": must be a scalar type if parent array\'s '
                "x-kubernetes-list-type is map",
                f'{L}.x-kubernetes-list-map-keys: Invalid value: []string{{"a", "c", "b", "b"}}: entries must all '
                "be names of item properties",
                f'{L}.x-kubernetes-list-map-keys: Invalid value: []string{{"a", "c", "b", "b"}}: must not contain '
                "duplicate entries",
            ],
            id="bad-keys",
        ),
        pytest.param(
            _list_of(
                obj(("a", {"type": "string"})), **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a"]}
            ),
            [
                f"{L}.items.properties[a].default: Required value: this property is in x-kubernetes-list-map-keys, "
                "so it must have a default or be a required property"
            ],
            id="key-neither-required-nor-defaulted",
        ),
        pytest.param(
            _list_of(
                obj(("a", {"type": "string", "default": "x"})),
                **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a"]},
            ),
            [],
            id="key-defaulted",
        ),
        pytest.param(
            _list_of(
                obj(("a", {"type": "string", "nullable": True}), required=["a"], nullable=True),
                **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a"]},
            ),
            [
                f"{L}.items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is map",
                f"{L}.items.properties[a].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so "
                "it cannot be nullable",
            ],
            id="nullable-keys-and-items",
        ),
        pytest.param(
            _list_of(obj(("a", {"type": "string"})), **{"x-kubernetes-list-type": "set"}),
            [
                f"{L}.items.x-kubernetes-map-type: Invalid value: null: "
                "must be atomic as item of a list with x-kubernetes-list-type=set"
            ],
            id="set-of-granular-maps",
        ),
        pytest.param(
            _list_of(
                obj(("a", {"type": "string"}), **{"x-kubernetes-map-type": "atomic"}),
                **{"x-kubernetes-list-type": "set"},
            ),
            [],
            id="set-of-atomic-maps",
        ),
        pytest.param(
            _list_of(
                {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                **{"x-kubernetes-list-type": "set"},
            ),
            [
                f'{L}.items.x-kubernetes-list-type: Invalid value: "set": '
                "must be atomic as item of a list with x-kubernetes-list-type=set"
            ],
            id="set-of-sets",
        ),
        pytest.param(
            obj(("m", {"type": "string", "x-kubernetes-map-type": "granular"})),
            [
                f'{ROOT}.properties[m].type: Invalid value: "string": '
                "must be object if x-kubernetes-map-type is specified"
            ],
            id="map-type-on-string",
        ),
        pytest.param(
            obj(("m", obj(**{"x-kubernetes-map-type": "dense"}))),
            [
                f'{ROOT}.properties[m].x-kubernetes-map-type: Unsupported value: "dense": supported values: "atomic", '
                '"granular"'
            ],
            id="unknown-map-type",
        ),
    ],
)
def test_list_and_map_types(schema: dict[str, Any], expected: list[str]) -> None:
    assert schema_messages(schema) == expected


# ---- validation rules' fields -------------------------------------------------------------------------------------

R = f"{ROOT}.x-kubernetes-validations"


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        pytest.param({"rule": " "}, [f"{R}[0].rule: Required value: rule is not specified"], id="empty"),
        pytest.param(
            {"rule": "true", "message": " "},
            [f'{R}[0].message: Invalid value: " ": must be non-empty if specified'],
            id="blank-message",
        ),
        pytest.param(
            {"rule": "true", "message": "a\nb"},
            [f'{R}[0].message: Invalid value: "a\\nb": must not contain line breaks'],
            id="multiline-message",
        ),
        pytest.param(
            {"rule": "true &&\ntrue"},
            [f"{R}[0].message: Required value: message must be specified if rule contains line breaks"],
            id="multiline-rule",
        ),
        pytest.param(
            {"rule": "true", "messageExpression": " "},
            [f"{R}[0].messageExpression: Required value: messageExpression must be non-empty if specified"],
            id="blank-message-expression",
        ),
        pytest.param(
            {"rule": "true", "reason": "InternalError"},
            [
                f'{R}[0].reason: Unsupported value: "InternalError": '
                'supported values: "FieldValueDuplicate", "FieldValueForbidden", '
                '"FieldValueInvalid", "FieldValueRequired"'
            ],
            id="reason",
        ),
        pytest.param(
            {"rule": "true", "fieldPath": ".spec.x"},
            [f'{R}[0].fieldPath: Invalid value: ".spec.x": must be a valid path'],
            id="field-path-nowhere",
        ),
        pytest.param({"rule": "true", "fieldPath": ".spec.a"}, [], id="field-path"),
        pytest.param(
            {"rule": "true", "reason": "FieldValueForbidden", "fieldPath": ".spec['a']"},
            [],
            id="reason-and-quoted-path",
        ),
    ],
)
def test_rule_fields(rule: dict[str, Any], expected: list[str]) -> None:
    schema = obj(("spec", obj(("a", {"type": "string"}))), **{"x-kubernetes-validations": [rule]})
    assert [m for m in schema_messages(schema) if "x-kubernetes-validations" in m] == expected


def test_rules_are_compiled_by_the_engine() -> None:
    """A rule that does not compile, and `oldSelf` under a list whose items cannot be correlated, are refused at the
    rule (the messages are the CEL engine's); nothing is compiled while the schema itself is wrong."""
    bounded = {"type": "string", "maxLength": 10}  # an unbounded list of strings would also exceed the cost budget
    items = obj(("x", bounded), **{"x-kubernetes-validations": [{"rule": "self.x == oldSelf.x"}]})
    listed = {"type": "array", "maxItems": 10, "items": items}
    spec = obj(("l", listed), **{"x-kubernetes-validations": [{"rule": "self.l >"}]})
    errs = validate_crd(crd(obj(("spec", spec))))
    at = f"{ROOT}.properties[spec]"
    assert [(e.field, e.type) for e in errs] == [
        (f"{at}.properties[l].items.x-kubernetes-validations[0].rule", ErrorType.INVALID),
        (f"{at}.x-kubernetes-validations[0].rule", ErrorType.INVALID),
    ]
    assert (
        errs[0].detail
        == f"oldSelf cannot be used on the uncorrelatable portion of the schema within {at}.properties[l]"
    )
    assert errs[1].detail.startswith("compilation failed: ")
    spec["properties"]["bad"] = {"type": "string", "uniqueItems": True}
    assert [e.field for e in validate_crd(crd(obj(("spec", spec))))] == [f"{at}.properties[bad].uniqueItems"]


def test_defaults_must_satisfy_their_rules() -> None:
    rule = {"x-kubernetes-validations": [{"rule": "self.startsWith('a')"}]}
    schema = obj(("spec", obj(("a", {"type": "string", "default": "bcd", **rule}))))
    errs = validate_crd(crd(schema))
    assert [(e.field, e.value) for e in errs] == [(f"{ROOT}.properties[spec].properties[a].default", "bcd")]
    assert errs[0].detail.endswith("self.startsWith('a')")


# ---- defaults -----------------------------------------------------------------------------------------------------


def test_invalid_defaults() -> None:
    """upstream's "invalid defaults with enabled feature gate, structural schema": unpruned defaults (also under
    x-kubernetes-preserve-unknown-fields, which does not count for a default), and defaults their schema refuses
    (kube-openapi's messages, from the custom-resource engine)."""
    embedded = {"x-kubernetes-embedded-resource": True}
    typemeta = {"apiVersion": "foo/v1", "kind": "v1"}
    schema = obj(
        ("a", obj(("foo", {"type": "string"}), default={"foo": "abc", "bar": 42})),
        ("b", obj(("foo", {"type": "string"}), default={"foo": "abc"})),
        ("c", obj(("foo", {"type": "string"}), default={"foo": 42})),
        ("d", obj(("good", {"type": "string", "pattern": "a"}), ("bad", {"type": "string", "pattern": "b"}))),
        (
            "e",
            obj(
                ("preserveUnknownFields", obj(default={"foo": "abc", "bar": 42})),
                ("nestedProperties", obj(("foo", {"type": "string"}), default={"foo": "abc", "bar": 42})),
                **{"x-kubernetes-preserve-unknown-fields": True},
            ),
        ),
        ("embedded-fine", obj(("foo", {"type": "string"}), default={"foo": "abc", **typemeta}, **embedded)),
        (
            "embedded-preserve",
            obj(
                ("foo", {"type": "string"}),
                default={"foo": "abc", **typemeta, "metadata": {"name": "foo", "unspecified": "bar"}, "bar": 42},
                **embedded,
                **{"x-kubernetes-preserve-unknown-fields": True},
            ),
        ),
    )
    schema["properties"]["d"]["default"] = {"good": "a", "bad": "a"}
    at = f"{ROOT}.properties"
    assert schema_messages(schema) == [
        f'{at}[a].default: Invalid value: {{"foo":"abc","bar":42}}: must not have unknown fields',
        f'{at}[c].default.foo: Invalid value: "integer": foo in body must be of type string: "integer"',
        f"{at}[d].default.bad: Invalid value: \"a\": bad in body should match 'b'",
        f'{at}[e].properties[nestedProperties].default: Invalid value: {{"foo":"abc","bar":42}}: '
        "must not have unknown fields",
        f'{at}[e].properties[preserveUnknownFields].default: Invalid value: {{"foo":"abc","bar":42}}: '
        "must not have unknown fields",
    ]


def test_defaults_forbidden_in_metadata() -> None:
    """upstream's "v1.15 era tests for metadata defaults" (first two versions) and "default inside additionalSchema"."""
    top = obj(("metadata", obj(default={"name": "foo"})))
    name = obj(("metadata", obj(("name", {"type": "string", "default": "foo"}))))
    embedded_annotations = obj(
        (
            "embedded",
            obj(
                ("metadata", obj(("annotations", obj(additionalProperties={"type": "string", "default": "x"})))),
                **{"x-kubernetes-embedded-resource": True},
            ),
        )
    )
    assert schema_messages(top) == [
        f"{ROOT}.properties[metadata].default: Forbidden: must not be set in top-level metadata"
    ]
    assert schema_messages(name) == [
        f"{ROOT}.properties[metadata].properties[name].default: Forbidden: must not be set in top-level metadata"
    ]
    assert schema_messages(embedded_annotations) == [
        f"{ROOT}.properties[embedded].properties[metadata].properties[annotations].additionalProperties.default: "
        "Forbidden: must not be set inside additionalProperties applying to object metadata"
    ]


def test_defaults_of_embedded_type_and_object_meta() -> None:
    """upstream's v1.15 era vectors 3 and 4: defaults that make invalid TypeMeta or ObjectMeta."""
    embedded = obj(
        ("apiVersion", {"type": "string", "default": "v1"}),
        ("kind", {"type": "string", "default": "%"}),
        ("metadata", obj(("name", {"type": "string", "default": 42}))),
        **{"x-kubernetes-embedded-resource": True},
    )
    at = f"{ROOT}.properties[embedded].properties"
    mixed = "may have mixed case, but should otherwise match: " + DNS1035
    assert schema_messages(obj(("embedded", embedded))) == [
        f'{at}[kind].default: Invalid value: "%": must result in valid metadata: kind: Invalid value: "%": {mixed}',
        f"{at}[metadata].properties[name].default: Invalid value: 42: must result in valid metadata: metadata: "
        'Invalid value: {"name":42}: json: cannot unmarshal number into Go struct field ObjectMeta.name of type string',
    ]


def test_defaults_need_preserve_unknown_fields_false() -> None:
    body = crd(obj(("a", {"type": "string", "default": "x"})), preserveUnknownFields=True)
    assert messages(body) == [
        "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema",
        "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields "
        "to true in spec.versions[*].schema instead",
    ]


# ---- subresources, printer columns, selectable fields ------------------------------------------------------------


def test_status_subresource_restricts_the_root() -> None:
    body = crd(
        {"type": "object", "anyOf": [{"required": ["spec"]}]},
    )
    body["spec"]["versions"][0]["subresources"] = {"status": {}}
    root = body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    allowed = (
        "Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern "
        "MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example "
        "XPreserveUnknownFields XValidations"
    )
    errs = validate_crd(body)
    assert str(errs[0]) == (
        f'{ROOT}: Invalid value: {{"type":"object","anyOf":[{{"required":["spec"]}}]}}: only [{allowed}] fields are '
        "allowed at the root of the schema if the status subresource is enabled"
    )
    assert errs[0].value is root


def test_scale_paths() -> None:
    body = crd()
    body["spec"]["versions"][0]["subresources"] = {
        "scale": {
            "specReplicasPath": "spec.replicas",
            "statusReplicasPath": ".spec.replicas",
            "labelSelectorPath": ".metadata.labels",
        }
    }
    at = "spec.subresources.scale"
    assert messages(body) == [
        f'{at}.specReplicasPath: Invalid value: "spec.replicas": must be a simple json path starting with .',
        f'{at}.statusReplicasPath: Invalid value: ".spec.replicas": should be a json path under .status',
        f'{at}.labelSelectorPath: Invalid value: ".metadata.labels": should be a json path under either .spec '
        "or .status",
    ]
    body["spec"]["versions"][0]["subresources"] = {"scale": {}}
    assert messages(body) == [f"{at}.specReplicasPath: Required value", f"{at}.statusReplicasPath: Required value"]


def test_printer_columns() -> None:
    body = crd()
    body["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"type": "time", "format": "uuid", "jsonPath": "spec.x"},
        {"name": "X"},
    ]
    at = "spec.additionalPrinterColumns"
    assert messages(body) == [
        f"{at}[1].name: Required value",
        f'{at}[1].type: Invalid value: "time": must be one of boolean,date,integer,number,string',
        f'{at}[1].format: Invalid value: "uuid": must be one of byte,date,date-time,double,float,int32,int64,password',
        f'{at}[1].JSONPath: Invalid value: "spec.x": must be a simple json path starting with .',
        f"{at}[2].type: Required value: must be one of boolean,date,integer,number,string",
        f"{at}[2].JSONPath: Required value",
    ]


def test_per_version_columns_name_their_version() -> None:
    body = crd(versions=[_version("v1", storage=True), _version("v2")])
    body["spec"]["versions"][1]["additionalPrinterColumns"] = [{"name": "X", "type": "string", "jsonPath": "x"}]
    assert messages(body) == [
        'spec.versions[1].additionalPrinterColumns[0].JSONPath: Invalid value: "x": must be a simple json '
        "path starting with ."
    ]


SELECTABLE_SCHEMA = obj(
    ("spec", obj(("color", {"type": "string", "enum": ["red"]}), ("size", {"type": "integer"}), ("obj", obj()))),
    ("labels", obj(additionalProperties={"type": "string"})),
)


def test_selectable_fields() -> None:
    body = crd(SELECTABLE_SCHEMA)
    body["spec"]["versions"][0]["selectableFields"] = [
        {"jsonPath": ".spec.color"},
        {"jsonPath": ".spec.xyz"},
        {"jsonPath": ".spec.obj"},
        {"jsonPath": ".metadata.name"},
        {"jsonPath": ".spec['color']"},
        {"jsonPath": ""},
        {"jsonPath": ".labels.app"},
    ]
    at = "spec.selectableFields"
    assert messages(body) == [
        f'{at}[1].jsonPath: Invalid value: ".spec.xyz": is an invalid path: does not refer to a valid field',
        f'{at}[2].jsonPath: Invalid value: ".spec.obj": must point to a field of type string, boolean or integer. '
        "Enum string fields and strings with formats are allowed.",
        f'{at}[3].jsonPath: Invalid value: ".metadata.name": is an invalid path: does not refer to a valid field',
        f"{at}[4].jsonPath: Invalid value: \".spec['color']\": is an invalid path: array notation is not allowed",
        f"{at}[5].jsonPath: Required value",
    ]


def test_selectable_fields_duplicates_metadata_and_count() -> None:
    schema = obj(("metadata", obj(("name", {"type": "string"}))), *[(f"a{i}", {"type": "string"}) for i in range(10)])
    body = crd(schema)
    body["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": f".a{i}"} for i in range(9)] + [
        {"jsonPath": ".a0"},
        {"jsonPath": ".metadata.name"},
    ]
    assert messages(body) == [
        'spec.selectableFields[9].jsonPath: Duplicate value: ".a0"',
        'spec.selectableFields[10].jsonPath: Invalid value: ".metadata.name": must not point to fields in metadata',
        "spec.selectableFields: Too many: 10: must have at most 8 items",
    ]


def test_too_many_selectable_fields_ratchet_on_update() -> None:
    schema = obj(*[(f"a{i}", {"type": "string"}) for i in range(10)])
    old = crd(schema)
    old["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": f".a{i}"} for i in range(9)]
    new = copy.deepcopy(old)
    assert messages(new, old) == []
    new["spec"]["versions"][0]["selectableFields"].append({"jsonPath": ".a9"})
    assert messages(new, old) == ["spec.selectableFields: Too many: 10: must have at most 8 items"]


# ---- conversion ---------------------------------------------------------------------------------------------------


def test_webhook_conversion_is_refused() -> None:
    body = crd(
        conversion={
            "strategy": "Webhook",
            "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://x"}},
        }
    )
    errs = validate_crd(body)
    assert [str(e) for e in errs] == [
        'spec.conversion.strategy: Unsupported value: "Webhook": supported values: "None" (tinykube does not call '
        'conversion webhooks; strategy "None" serves every version with only apiVersion changed)'
    ]
    assert errs[0].type is ErrorType.NOT_SUPPORTED


@pytest.mark.parametrize(
    ("conversion", "expected"),
    [
        pytest.param({"strategy": "None"}, [], id="none"),
        pytest.param({"strategy": ""}, ["spec.conversion.strategy: Required value"], id="empty"),
        pytest.param(
            {"strategy": "Magic"},
            ['spec.conversion.strategy: Unsupported value: "Magic": supported values: "None"'],
            id="unknown",
        ),
        pytest.param(
            {"strategy": "None", "webhook": {"clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v1"]}},
            [
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set "
                "to Webhook",
            ],
            id="webhook-fields-with-none",
        ),
    ],
)
def test_conversion(conversion: dict[str, Any], expected: list[str]) -> None:
    assert messages(crd(conversion=conversion)) == expected


# ---- stored versions, updates, status ----------------------------------------------------------------------------


def test_stored_versions() -> None:
    """upstream's TestValidateCustomResourceDefinitionStoredVersions, through the whole object."""
    body = crd(versions=[_version("v1", storage=True), _version("v2")])
    body["status"]["storedVersions"] = ["v0", "v2", "v3"]
    detail = (
        "missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a "
        "storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
    )
    assert messages(body) == [
        'status.storedVersions: Invalid value: []string{"v0", "v2", "v3"}: must have the storage version v1',
        f'status.storedVersions[0]: Invalid value: "v0": {detail.format(v="v0")}',
        f'status.storedVersions[2]: Invalid value: "v3": {detail.format(v="v3")}',
    ]


def test_removing_a_stored_version_from_spec_is_refused() -> None:
    old = crd(versions=[_version("v1"), _version("v2", storage=True)])
    old["status"]["storedVersions"] = ["v1", "v2"]
    new = copy.deepcopy(old)
    new["spec"]["versions"] = [_version("v2", storage=True)]
    assert [e.field for e in validate_crd(new, old)] == ["status.storedVersions[0]"]


def test_group_and_plural_are_immutable() -> None:
    old = crd()
    new = copy.deepcopy(old)
    new["spec"]["group"] = "example.org"
    new["spec"]["names"]["plural"] = "bars"
    new["spec"]["scope"] = "Cluster"
    new["spec"]["names"]["kind"] = "Bar"
    new["spec"]["names"]["listKind"] = "BarList"
    assert messages(new, old) == [
        'spec.group: Invalid value: "example.org": field is immutable',
        'spec.names.plural: Invalid value: "bars": field is immutable',
    ]
    old["status"]["conditions"] = [{"type": "Established", "status": "True"}]
    assert messages(new, old) == [
        'spec.scope: Invalid value: "Cluster": field is immutable',
        'spec.names.kind: Invalid value: "Bar": field is immutable',
        'spec.group: Invalid value: "example.org": field is immutable',
        'spec.names.plural: Invalid value: "bars": field is immutable',
    ]


def test_update_keeps_flaws_the_old_crd_had() -> None:
    """upstream's "invalid types updates allowed if old object has invalid types" and the structural ratchet."""
    bogus = obj(("a", {"type": "bogus"}))
    old = crd(bogus)
    assert messages(old) == [
        f'{ROOT}.properties[a].type: Unsupported value: "bogus": supported values: "array", "boolean", "integer", '
        '"number", "object", "string"'
    ]
    new = copy.deepcopy(old)
    new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["b"] = {"type": "also-bogus"}
    assert messages(new, old) == []
    assert messages(new, crd()) != []


def test_update_of_a_crd_without_schema() -> None:
    """upstream's "schema not required if old object is missing schema": a legacy CRD keeps going without one;
    without preserveUnknownFields, only its served versions need one (else every field is pruned)."""
    legacy = crd(preserveUnknownFields=True)
    del legacy["spec"]["versions"][0]["schema"]
    assert messages(copy.deepcopy(legacy), legacy) == []
    old = copy.deepcopy(legacy)
    old["spec"]["preserveUnknownFields"] = False
    new = copy.deepcopy(old)
    new["spec"]["versions"][0]["served"] = False
    new["spec"]["versions"].append({"name": "v2", "served": True, "storage": False})
    assert messages(new, old) == [
        "spec.versions[1].schema.openAPIV3Schema: Required value: because otherwise all fields are pruned"
    ]


def test_status_update_checks_accepted_names() -> None:
    old = crd()
    new = copy.deepcopy(old)
    new["status"]["acceptedNames"] = {"plural": "Foos", "kind": "Foo", "listKind": "Foo"}
    new["status"]["storedVersions"] = []
    assert [str(e) for e in validate_crd_status(new, old)] == [
        f'status.acceptedNames.plural: Invalid value: "Foos": {DNS1035}',
        'status.acceptedNames.listKind: Invalid value: "Foo": kind and listKind may not be the same',
    ]


# ---- API approval, preserveUnknownFields ---------------------------------------------------------------------------


APPROVAL = "metadata.annotations[api-approved.kubernetes.io]"


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        pytest.param(
            None,
            [
                f"{APPROVAL}: Required value: "
                'protected groups must have approval annotation "api-approved.kubernetes.io", '
                ""
                "see https://github.com/kubernetes/enhancements/pull/1111"
            ],
            id="missing",
        ),
        pytest.param(
            "yes",
            [
                f'{APPROVAL}: Invalid value: "yes": protected groups must have approval annotation '
                '"api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved", '
                "see https://github.com/kubernetes/enhancements/pull/1111"
            ],
            id="invalid",
        ),
        pytest.param("https://github.com/kubernetes/enhancements/pull/1111", [], id="approved"),
        pytest.param("unapproved, experimental", [], id="bypassed"),
    ],
)
def test_api_approval(annotation: str | None, expected: list[str]) -> None:
    body = crd(group="things.k8s.io")
    body["metadata"]["name"] = "foos.things.k8s.io"
    if annotation is not None:
        body["metadata"]["annotations"] = {"api-approved.kubernetes.io": annotation}
    assert messages(body) == expected


def test_api_approval_unchanged_on_update_is_not_checked() -> None:
    old = crd(group="things.k8s.io")
    old["metadata"]["name"] = "foos.things.k8s.io"
    new = copy.deepcopy(old)
    new["spec"]["names"]["shortNames"] = ["fo"]
    assert messages(new, old) == []
    assert messages(old) != []


def test_preserve_unknown_fields_true_kept_on_update() -> None:
    old = crd(preserveUnknownFields=True)
    assert "spec.preserveUnknownFields" in [e.field for e in validate_crd(old)]
    assert messages(copy.deepcopy(old), old) == []


# ---- deprecation warnings ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deprecated", "warning", "expected"),
    [
        pytest.param(False, None, [], id="not-deprecated"),
        pytest.param(False, "", ["can only be set for deprecated versions"], id="warning-without-deprecation"),
        pytest.param(True, "", ["must not be an empty string"], id="empty"),
        pytest.param(True, "x" * 256, [], id="long"),
        pytest.param(True, "x" * 257, ["must be <= 256 characters long"], id="too-long"),
        pytest.param(True, "\u00e9" * 129, ["must be <= 256 characters long"], id="bytes-not-characters"),
        pytest.param(
            True,
            "\u00e9a\nb",
            ["must only contain printable UTF-8 characters; non-printable character found at index 3"],
            id="newline",
        ),
    ],
)
def test_deprecation_warning(deprecated: bool, warning: str | None, expected: list[str]) -> None:
    assert deprecation_warning_errors(deprecated, warning) == expected


def test_deprecation_warning_path() -> None:
    body = crd()
    body["spec"]["versions"][0]["deprecationWarning"] = "old"
    assert messages(body) == [
        'spec.versions[0].deprecationWarning: Invalid value: "old": can only be set for deprecated versions'
    ]


# ---- properties --------------------------------------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "a", "object", "array", "string", "v1", "."]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "properties",
                    "items",
                    "default",
                    "additionalProperties",
                    "x-kubernetes-list-type",
                    "x-kubernetes-list-map-keys",
                    "x-kubernetes-embedded-resource",
                    "x-kubernetes-preserve-unknown-fields",
                    "x-kubernetes-int-or-string",
                    "x-kubernetes-validations",
                    "anyOf",
                    "allOf",
                    "not",
                    "metadata",
                    "spec",
                    "names",
                    "versions",
                    "schema",
                    "openAPIV3Schema",
                    "name",
                    "storage",
                    "served",
                    "group",
                    "kind",
                    "plural",
                    "subresources",
                    "scale",
                    "selectableFields",
                    "jsonPath",
                    "conversion",
                    "strategy",
                    "pattern",
                    "nullable",
                    "required",
                    "status",
                    "storedVersions",
                    "acceptedNames",
                    "rule",
                    "fieldPath",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_JSON, old=_JSON)
def test_validate_never_raises(body: Any, old: Any) -> None:
    body = body if isinstance(body, dict) else {"spec": body}
    default_crd(body)
    errs = validate_crd(body, old if isinstance(old, dict) else None)
    assert all(isinstance(str(e), str) for e in errs)
    validate_crd_status(body, body)


_NAME = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)
_SCALAR = st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {"type": "number"}])
_SCHEMA = st.recursive(
    _SCALAR,
    lambda inner: (
        st.dictionaries(_NAME, inner, min_size=1, max_size=3).map(lambda p: {"type": "object", "properties": p})
        | inner.map(lambda i: {"type": "array", "items": i})
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    props=st.dictionaries(_NAME.filter(lambda n: n not in ("metadata", "kind", "apiversion")), _SCHEMA, max_size=4),
    kind=st.from_regex(r"[A-Z][a-z]{0,8}", fullmatch=True),
    versions=st.lists(_NAME.map(lambda n: "v" + n), min_size=1, max_size=3, unique=True),
    storage=st.integers(0, 2),
    omit_names=st.booleans(),
)
def test_valid_crd_stays_valid_after_defaulting(
    props: dict[str, Any], kind: str, versions: list[str], storage: int, omit_names: bool
) -> None:
    plural = kind.lower() + "s"
    names: dict[str, Any] = {"plural": plural, "kind": kind}
    if not omit_names:
        names.update(singular=kind.lower(), listKind=kind + "List")
    schema = {"type": "object", "properties": props} if props else {"type": "object"}
    body: dict[str, Any] = {
        "metadata": {"name": f"{plural}.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": names,
            "versions": [
                {
                    "name": v,
                    "served": True,
                    "storage": i == storage % len(versions),
                    "schema": {"openAPIV3Schema": schema},
                }
                for i, v in enumerate(versions)
            ],
        },
    }
    default_crd(body)
    assert validate_crd(body) == []
    again = copy.deepcopy(body)
    default_crd(again)
    assert again == body
    assert validate_crd(again, body) == []
