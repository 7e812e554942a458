"""A CRD schema (`JSONSchemaProps`) read as upstream's Go decoder holds it, for the schema checks.

Schemas are the JSON dicts a client sent (`Schema`): a field that is absent or `null` is unset, and so is `""` or
`false` where upstream's Go type is a plain string or bool. Properties are walked in sorted order where upstream walks
a Go map (whose order is random), so that messages come out in a stable order. Also the field names, the
`x-kubernetes-*` extension keys and the text of upstream's `field.Path`, which every check shares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from tinykube.api.jsonshape import as_str

Schema = dict[str, Any]

OPENAPI_TYPES = ("array", "boolean", "integer", "number", "object", "string")
META_FIELDS = frozenset({"metadata", "kind", "apiVersion"})
SUPPORTED_RULE_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")

PRESERVE = "x-kubernetes-preserve-unknown-fields"
EMBEDDED = "x-kubernetes-embedded-resource"
INT_OR_STRING = "x-kubernetes-int-or-string"
LIST_TYPE = "x-kubernetes-list-type"
LIST_MAP_KEYS = "x-kubernetes-list-map-keys"
MAP_TYPE = "x-kubernetes-map-type"
VALIDATIONS = "x-kubernetes-validations"

# The fields of upstream's JSONSchemaProps in declaration order (the order its reflection-based root check visits
# them), each with its JSON name and whether Go holds it by value (so that "" / false / 0 count as unset).
SCHEMA_FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("ID", "id", True),
    ("Schema", "$schema", True),
    ("Ref", "$ref", False),
    ("Description", "description", True),
    ("Type", "type", True),
    ("Nullable", "nullable", True),
    ("Format", "format", True),
    ("Title", "title", True),
    ("Default", "default", False),
    ("Maximum", "maximum", False),
    ("ExclusiveMaximum", "exclusiveMaximum", True),
    ("Minimum", "minimum", False),
    ("ExclusiveMinimum", "exclusiveMinimum", True),
    ("MaxLength", "maxLength", False),
    ("MinLength", "minLength", False),
    ("Pattern", "pattern", True),
    ("MaxItems", "maxItems", False),
    ("MinItems", "minItems", False),
    ("UniqueItems", "uniqueItems", True),
    ("MultipleOf", "multipleOf", False),
    ("Enum", "enum", False),
    ("MaxProperties", "maxProperties", False),
    ("MinProperties", "minProperties", False),
    ("Required", "required", False),
    ("Items", "items", False),
    ("AllOf", "allOf", False),
    ("OneOf", "oneOf", False),
    ("AnyOf", "anyOf", False),
    ("Not", "not", False),
    ("Properties", "properties", False),
    ("AdditionalProperties", "additionalProperties", False),
    ("PatternProperties", "patternProperties", False),
    ("Dependencies", "dependencies", False),
    ("AdditionalItems", "additionalItems", False),
    ("Definitions", "definitions", False),
    ("ExternalDocs", "externalDocs", False),
    ("Example", "example", False),
    ("XPreserveUnknownFields", PRESERVE, False),
    ("XEmbeddedResource", EMBEDDED, True),
    ("XIntOrString", INT_OR_STRING, True),
    ("XListMapKeys", LIST_MAP_KEYS, False),
    ("XListType", LIST_TYPE, False),
    ("XMapType", MAP_TYPE, False),
    ("XValidations", VALIDATIONS, False),
)
ROOT_FIELDS_WITH_STATUS = (
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
)
_BY_VALUE = {key for _, key, by_value in SCHEMA_FIELDS if by_value}
_KNOWN = {key for _, key, _ in SCHEMA_FIELDS}


# ---- reading a schema as Go decoded it --------------------------------------------------------------------------


def is_set(s: Schema, key: str) -> bool:
    """Upstream's Go field is non-zero: present and not null, and for fields held by value not "" / false / 0."""
    value = s.get(key)
    if value is None:
        return False
    return key not in _BY_VALUE or value not in ("", False)


def text(s: Schema, key: str) -> str:
    return as_str(s.get(key))


def flag(s: Schema, key: str) -> bool:
    return s.get(key) is True


def properties(s: Schema) -> dict[str, Schema]:
    value = s.get("properties")
    if not isinstance(value, dict):
        return {}
    return {str(k): v if isinstance(v, dict) else {} for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}


def schemas(s: Schema, key: str) -> list[Schema]:
    value = s.get(key)
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


def sub_schema(s: Schema, key: str) -> Schema | None:
    value = s.get(key)
    return value if isinstance(value, dict) else None


def item_schema(s: Schema) -> Schema | None:
    """`items` when it is one schema (upstream's JSONSchemaPropsOrArray with `Schema` set)."""
    return sub_schema(s, "items")


def item_array(s: Schema) -> list[Schema]:
    value = s.get("items")
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


def strings(s: Schema, key: str) -> list[str]:
    value = s.get(key)
    return [v if isinstance(v, str) else "" for v in value] if isinstance(value, list) else []


def optional_text(s: Schema, key: str) -> str | None:
    """A `*string` field: None when unset, else its text (`""` is set)."""
    value = s.get(key)
    if value is None:
        return None
    return value if isinstance(value, str) else ""


def has_default(s: Schema) -> bool:
    return s.get("default") is not None


def walk(s: Schema | None) -> Iterator[Schema]:
    """Every schema in `s`, itself first (upstream's SchemaHas traversal)."""
    if s is None:
        return
    yield s
    nested: list[Schema] = []
    if (items := item_schema(s)) is not None:
        nested.append(items)
    nested += item_array(s)
    for key in ("allOf", "anyOf", "oneOf"):
        nested += schemas(s, key)
    for key in ("not", "additionalProperties", "additionalItems"):
        if (child := sub_schema(s, key)) is not None:
            nested.append(child)
    nested += properties(s).values()
    for key in ("patternProperties", "definitions", "dependencies"):
        value = s.get(key)
        if isinstance(value, dict):
            nested += [v for v in value.values() if isinstance(v, dict)]
    for child in nested:
        yield from walk(child)


def schema_has(s: Schema | None, predicate: Callable[[Schema], bool]) -> bool:
    return any(predicate(node) for node in walk(s))


def has_kubernetes_extensions(s: Schema) -> bool:
    return (
        flag(s, EMBEDDED)
        or s.get(PRESERVE) is not None
        or flag(s, INT_OR_STRING)
        or bool(strings(s, LIST_MAP_KEYS))
        or s.get(LIST_TYPE) is not None
        or bool(s.get(VALIDATIONS))
    )


def bare(s: Schema) -> dict[str, Any]:
    """The fields of `s` that Go keeps as non-zero (unknown JSON fields are dropped by its decoder)."""
    return {k: v for k, v in s.items() if k in _KNOWN and is_set(s, k)}


# ---- the path text of field.Path ---------------------------------------------------------------------------------


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def key(path: str, name: str) -> str:
    return f"{path}[{name}]"


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"
