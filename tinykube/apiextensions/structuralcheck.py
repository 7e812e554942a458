"""Is a CRD's OpenAPI v3 schema one the apiserver can serve? Upstream's schema rules for `spec.versions[*].schema`.

A schema is checked in three passes, each as upstream runs them and with its field paths and words:

1. the OpenAPI walk (`ValidateCustomResourceDefinitionOpenAPISchema`): features the apiserver does not support
   (`$ref`, `patternProperties`, `uniqueItems` ...), defaults where they cannot be applied, and the rules of the
   `x-kubernetes-*` extensions (list types and map keys, map types, validation rules' fields);
2. structurality (`ValidateStructural`): every value has a `type`, the logical junctors (`allOf`, `anyOf`, `oneOf`,
   `not`) only restrict what the structural part already specifies, `metadata` is left alone, embedded resources
   and int-or-string are well formed; its errors are sorted by their text, as upstream sorts them;
3. defaults (`ValidateDefaults`): every `default` survives pruning and satisfies its own schema.

Schemas are the JSON dicts a client sent (`Schema`), read with Go's zero values in mind: a field that is absent or
`null` is unset, and so is `""` or `false` where upstream's Go type is a plain string or bool. Properties are walked
in sorted order where upstream walks a Go map (whose order is random), so messages come out in a stable order.

Checking a default against its schema, and compiling `x-kubernetes-validations` rules, are the custom-resource
engine's job (`tinykube.apiextensions.schema` / `cel`); `value_errors` and `rule_errors` reach it lazily, so this
module also works (less thoroughly) without it.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from tinykube.api.errors import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
)
from tinykube.apiextensions import embedded, pruning
from tinykube.apiextensions.node import Node, compile_node

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
_VALUE_VALIDATION_KEYS = (
    "format",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
)
_BY_VALUE = {key for _, key, by_value in SCHEMA_FIELDS if by_value}
_KNOWN = {key for _, key, _ in SCHEMA_FIELDS}
# fields upstream's structural metadata check does not look at (checked elsewhere, or never structural)
_NOT_STRUCTURAL_METADATA = frozenset(
    {"type", "default", "id", "$schema", "$ref", "patternProperties", "dependencies", "additionalItems", "definitions"}
)


@dataclass(frozen=True, slots=True)
class SchemaRules:
    """Which of upstream's schema rules apply. All of them on create; on update a rule the stored CRD already broke
    is relaxed (upstream "ratchets" so that an existing CRD can still be edited)."""

    allow_defaults: bool = True
    require_valid_property_type: bool = True
    require_structural: bool = True
    require_pruned_defaults: bool = True
    require_atomic_set_type: bool = True
    require_map_list_keys_map_set_validation: bool = True


# ---- reading a schema as Go decoded it --------------------------------------------------------------------------


def is_set(s: Schema, key: str) -> bool:
    """Upstream's Go field is non-zero: present and not null, and for fields held by value not "" / false / 0."""
    value = s.get(key)
    if value is None:
        return False
    return key not in _BY_VALUE or value not in ("", False)


def text(s: Schema, key: str) -> str:
    value = s.get(key)
    return value if isinstance(value, str) else ""


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


# ---- the path text of field.Path ---------------------------------------------------------------------------------


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def key(path: str, name: str) -> str:
    return f"{path}[{name}]"


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


# ---- 1. the OpenAPI walk -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Walk:
    """What the walk knows about where it is (upstream's specStandardValidator)."""

    allow_defaults: bool
    require_valid_property_type: bool
    disallow_defaults_reason: str = ""
    inside_resource_meta: bool = False

    def without_defaults(self, reason: str) -> Walk:
        return replace(self, allow_defaults=False, disallow_defaults_reason=reason)


def _unsupported_feature_errors(s: Schema, path: str, w: Walk) -> list[FieldError]:
    errs: list[FieldError] = []
    kind = text(s, "type")
    if w.require_valid_property_type and kind and kind not in OPENAPI_TYPES:
        errs.append(not_supported(child(path, "type"), kind, list(OPENAPI_TYPES)))
    if has_default(s) and not w.allow_defaults:
        detail = "must not be set" + (f" {w.disallow_defaults_reason}" if w.disallow_defaults_reason else "")
        errs.append(forbidden(child(path, "default"), detail))
    if text(s, "id"):
        errs.append(forbidden(child(path, "id"), "id is not supported"))
    if s.get("additionalItems") is not None:
        errs.append(forbidden(child(path, "additionalItems"), "additionalItems is not supported"))
    for name in ("patternProperties", "definitions"):
        if isinstance(s.get(name), dict) and s[name]:
            errs.append(forbidden(child(path, name), f"{name} is not supported"))
    if s.get("dependencies") is not None:
        errs.append(forbidden(child(path, "dependencies"), "dependencies is not supported"))
    if s.get("$ref") is not None:
        errs.append(forbidden(child(path, "$ref"), "$ref is not supported"))
    if kind == "null":
        errs.append(forbidden(child(path, "type"), "type cannot be set to null, use nullable as an alternative"))
    if item_array(s):
        errs.append(forbidden(child(path, "items"), "items must be a schema object and not an array"))
    if w.inside_resource_meta and flag(s, EMBEDDED):
        errs.append(forbidden(child(path, EMBEDDED), "must not be used inside of resource meta"))
    return errs


def openapi_errors(s: Schema | None, path: str, w: Walk, rules: SchemaRules, *, root: bool = False) -> list[FieldError]:
    """Upstream's ValidateCustomResourceDefinitionOpenAPISchema (its schema errors; rules are compiled apart)."""
    if s is None:
        return []
    errs = _unsupported_feature_errors(s, path, w)
    if flag(s, "uniqueItems"):
        detail = "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        errs.append(forbidden(child(path, "uniqueItems"), detail))
    errs += _nested_openapi_errors(s, path, w, rules, root=root)
    errs += _extension_errors(s, path, rules)
    if rules.require_map_list_keys_map_set_validation:
        errs += map_list_keys_map_set_errors(s, path)
    errs += _rule_field_errors(s, path)
    return errs


def _nested_openapi_errors(s: Schema, path: str, w: Walk, rules: SchemaRules, *, root: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    props = properties(s)
    additional = s.get("additionalProperties")
    if additional is not None:
        if props and (additional is False or isinstance(additional, dict)):
            detail = "additionalProperties and properties are mutual exclusive"
            errs.append(forbidden(child(path, "additionalProperties"), detail))
        sub = (
            w.without_defaults("inside additionalProperties applying to object metadata")
            if w.inside_resource_meta
            else w
        )
        errs += openapi_errors(sub_schema(s, "additionalProperties"), child(path, "additionalProperties"), sub, rules)
    for name, prop in props.items():
        sub = w
        if (root or flag(s, EMBEDDED)) and name in META_FIELDS:
            sub = replace(sub, inside_resource_meta=True)
            if root:
                sub = sub.without_defaults(f"in top-level {name}")
        errs += openapi_errors(prop, key(child(path, "properties"), name), sub, rules)
    errs += openapi_errors(sub_schema(s, "not"), child(path, "not"), w, rules)
    for junctor in ("allOf", "oneOf", "anyOf"):
        for i, clause in enumerate(schemas(s, junctor)):
            errs += openapi_errors(clause, index(child(path, junctor), i), w, rules)
    definitions = s.get("definitions")
    if isinstance(definitions, dict):
        for name in sorted(definitions, key=str):
            if isinstance(definitions[name], dict):
                errs += openapi_errors(definitions[name], key(child(path, "definitions"), str(name)), w, rules)
    errs += openapi_errors(item_schema(s), child(path, "items"), w, rules)
    for i, item in enumerate(item_array(s)):
        errs += openapi_errors(item, index(child(path, "items"), i), w, rules)
    dependencies = s.get("dependencies")
    if isinstance(dependencies, dict):
        for name in sorted(dependencies, key=str):
            if isinstance(dependencies[name], dict):
                errs += openapi_errors(dependencies[name], key(child(path, "dependencies"), str(name)), w, rules)
    return errs


def _must_be_type(s: Schema, path: str, detail: str) -> FieldError:
    kind = text(s, "type")
    if not kind:
        return required(child(path, "type"), detail)
    return invalid(child(path, "type"), kind, detail)


def _extension_errors(s: Schema, path: str, rules: SchemaRules) -> list[FieldError]:
    errs: list[FieldError] = []
    if s.get(PRESERVE) is False:
        errs.append(invalid(child(path, PRESERVE), False, "must be true or undefined"))
    map_type = optional_text(s, MAP_TYPE)
    if map_type is not None and text(s, "type") != "object":
        errs.append(_must_be_type(s, path, "must be object if x-kubernetes-map-type is specified"))
    if map_type is not None and map_type not in ("atomic", "granular"):
        errs.append(not_supported(child(path, MAP_TYPE), map_type, ["atomic", "granular"]))
    list_type = optional_text(s, LIST_TYPE)
    if list_type is not None and text(s, "type") != "array":
        errs.append(_must_be_type(s, path, "must be array if x-kubernetes-list-type is specified"))
    elif rules.require_atomic_set_type and list_type == "set" and (items := item_schema(s)) is not None:
        errs += _set_item_errors(items, path)
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errs.append(not_supported(child(path, LIST_TYPE), list_type, ["atomic", "set", "map"]))
    keys = strings(s, LIST_MAP_KEYS)
    if keys and list_type is None:
        errs.append(required(child(path, LIST_TYPE), "must be map if x-kubernetes-list-map-keys is non-empty"))
    elif keys and list_type != "map":
        errs.append(
            invalid(child(path, LIST_TYPE), list_type, "must be map if x-kubernetes-list-map-keys is non-empty")
        )
    if list_type == "map":
        errs += _map_list_errors(s, path, keys)
    return errs


def _set_item_errors(items: Schema, path: str) -> list[FieldError]:
    detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
    item_type = text(items, "type")
    list_type = optional_text(items, LIST_TYPE)
    if item_type == "array" and list_type is not None and list_type != "atomic":
        return [invalid(child(child(path, "items"), LIST_TYPE), list_type, detail)]
    if item_type == "object" and optional_text(items, MAP_TYPE) != "atomic":
        # upstream reports the items' list type as the value here (usually unset: null)
        return [invalid(child(child(path, "items"), MAP_TYPE), list_type, detail)]
    return []


def _map_list_errors(s: Schema, path: str, keys: list[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    items_path = child(path, "items")
    if not keys:
        errs.append(required(child(path, LIST_MAP_KEYS), "must not be empty if x-kubernetes-list-type is map"))
    if s.get("items") is None:
        errs.append(required(items_path, "must have a schema if x-kubernetes-list-type is map"))
        return errs
    items = item_schema(s)
    if items is None:
        detail = "must only have a single schema if x-kubernetes-list-type is map"
        errs.append(invalid(items_path, s.get("items"), detail))
        return errs
    item_type = text(items, "type")
    if item_type != "object":
        detail = "must be object if parent array's x-kubernetes-list-type is map"
        errs.append(invalid(child(items_path, "type"), item_type, detail))
        return errs
    item_props = properties(items)
    seen: set[str] = set()
    for name in keys:
        if name in item_props:
            if text(item_props[name], "type") in ("array", "object"):
                prop_type = child(key(child(items_path, "properties"), name), "type")
                detail = "must be a scalar type if parent array's x-kubernetes-list-type is map"
                errs.append(invalid(prop_type, item_type, detail))  # upstream quotes the items' type
        else:
            detail = "entries must all be names of item properties"
            errs.append(invalid(child(path, LIST_MAP_KEYS), keys, detail))
        if name in seen:
            errs.append(invalid(child(path, LIST_MAP_KEYS), keys, "must not contain duplicate entries"))
        seen.add(name)
    return errs


def map_list_keys_map_set_errors(s: Schema, path: str) -> list[FieldError]:
    """Items of a set or map list are not nullable, and a map list's keys are required or defaulted."""
    items = item_schema(s)
    list_type = optional_text(s, LIST_TYPE)
    if items is None or list_type not in ("set", "map"):
        return []
    items_path = child(path, "items")
    errs: list[FieldError] = []
    if flag(items, "nullable"):
        errs.append(
            forbidden(child(items_path, "nullable"), f"cannot be nullable when x-kubernetes-list-type is {list_type}")
        )
    if list_type != "map":
        return errs
    item_props = properties(items)
    mandatory = set(strings(items, "required"))
    for name in strings(s, LIST_MAP_KEYS):
        if name not in item_props:
            continue
        prop_path = key(child(items_path, "properties"), name)
        if name not in mandatory and not has_default(item_props[name]):
            detail = (
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
            )
            errs.append(required(child(prop_path, "default"), detail))
        if flag(item_props[name], "nullable"):
            detail = "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"
            errs.append(forbidden(child(prop_path, "nullable"), detail))
    return errs


_NEWLINES = re.compile(r"[\n\r]+")


def _rule_field_errors(s: Schema, path: str) -> list[FieldError]:
    """The fields of each `x-kubernetes-validations` rule, short of compiling it."""
    errs: list[FieldError] = []
    rules = s.get(VALIDATIONS)
    for i, rule in enumerate(rules if isinstance(rules, list) else []):
        rule = rule if isinstance(rule, dict) else {}
        errs += _one_rule_errors(s, rule, index(child(path, VALIDATIONS), i))
    return errs


def _one_rule_errors(s: Schema, rule: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    expression, message = text(rule, "rule").strip(), text(rule, "message")
    if not expression:
        errs.append(required(child(path, "rule"), "rule is not specified"))
    elif message and not message.strip():
        errs.append(invalid(child(path, "message"), message, "must be non-empty if specified"))
    elif _NEWLINES.search(message.strip()):
        errs.append(invalid(child(path, "message"), message, "must not contain line breaks"))
    elif _NEWLINES.search(expression) and not message.strip():
        errs.append(required(child(path, "message"), "message must be specified if rule contains line breaks"))
    message_expression = text(rule, "messageExpression")
    if message_expression and not message_expression.strip():
        detail = "messageExpression must be non-empty if specified"
        errs.append(required(child(path, "messageExpression"), detail))
    reason = rule.get("reason")
    if reason is not None and reason not in SUPPORTED_RULE_REASONS:
        errs.append(not_supported(child(path, "reason"), reason, list(SUPPORTED_RULE_REASONS)))
    field_path = text(rule, "fieldPath")
    if field_path and not field_path.strip():
        errs.append(invalid(child(path, "fieldPath"), field_path, "must be non-empty if specified"))
    if _NEWLINES.search(field_path):
        errs.append(invalid(child(path, "fieldPath"), field_path, "must not contain line breaks"))
    if field_path and structural_init_error(s) is None and isinstance(resolve_field_path(field_path, s), str):
        errs.append(invalid(child(path, "fieldPath"), field_path, "must be a valid path"))
    return errs


# ---- JSON paths into a schema (upstream's cel.ValidFieldPath) ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldPath:
    """Where a valid field path leads: its steps as field.Path prints them, and the schema found there."""

    steps: tuple[str, ...]  # `name` for a property, `[key]` for a key of additionalProperties
    schema: Schema | None

    @property
    def root(self) -> str:
        return self.steps[0] if self.steps else ""

    def __str__(self) -> str:
        out = ""
        for step in self.steps:
            out += step if step.startswith("[") or not out else "." + step
        return out


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "'": "'", "\\": "\\"}


def _unescape(quoted: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) not in _ESCAPES:
            raise ValueError(f"invalid escape char {m.group(0)}")
        return _ESCAPES[m.group(1)]

    return re.sub(r"\\(.)", one, quoted, flags=re.DOTALL)


def _tokens(path: str) -> Iterator[str]:
    """The scanner's tokens: '.', '[' and ']' alone, a single-quoted string whole, other text up to a delimiter."""
    i = 0
    while i < len(path):
        if path[i] == "'":
            j = i + 1
            while j < len(path) and not (path[j] == "'" and path[j - 1] != "\\"):
                j += 1
            yield path[i : j + 1]
            i = j + 1
        elif path[i] in ".[]":
            yield path[i]
            i += 1
        else:
            j = i
            while j < len(path) and path[j] not in ".[]":
                j += 1
            yield path[i:j]
            i = j


def _step(schema: Schema | None, name: str) -> tuple[str, Schema | None] | str:
    props = properties(schema) if schema is not None else {}
    if props:
        if name not in props:
            return "does not refer to a valid field"
        return name, props[name]
    if schema is not None and schema.get("additionalProperties") is not None:
        return f"[{name}]", sub_schema(schema, "additionalProperties")
    return "does not refer to a valid field"


def resolve_field_path(path: str, schema: Schema, *, allow_array_notation: bool = True) -> FieldPath | str:
    """Follow a `.a.b['c.d']` path through `schema`; the error text when it does not lead to a field."""
    steps: list[str] = []
    node: Schema | None = schema
    tokens = _tokens(path)
    for token in tokens:
        if token == "[":
            if not allow_array_notation:
                return "array notation is not allowed"
            quoted = next(tokens, None)
            if quoted is None:
                return "unexpected end of JSON path"
            if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
                return f"expected single quoted string but got {quoted}"
            try:
                name = _unescape(quoted[1:-1])
            except ValueError as err:
                return f"invalid string literal: {err}"
            found = _step(node, name)
            if isinstance(found, str):
                return found
            steps.append(found[0])
            node = found[1]
            closing = next(tokens, None)
            if closing is None:
                return "unexpected end of JSON path"
            if closing != "]":
                return f"expected ] but got {closing}"
        elif token == ".":
            field_name = next(tokens, None)
            if field_name is None:
                return "unexpected end of JSON path"
            found = _step(node, field_name)
            if isinstance(found, str):
                return found
            steps.append(found[0])
            node = found[1]
        else:
            return f"expected [ or . but got: {token}"
    return FieldPath(tuple(steps), node)


# ---- 2. structurality --------------------------------------------------------------------------------------------

_ROOT, _ITEM, _FIELD = "root", "item", "field"
_EMPTY_TYPE = {
    _ROOT: "must not be empty at the root",
    _ITEM: "must not be empty for specified array items",
    _FIELD: "must not be empty for specified object fields",
}


def structural_init_error(s: Schema) -> str | None:
    """Why upstream cannot even build a structural schema from `s` (NewStructural's error), or None."""
    for node in _structural_nodes(s):
        if text(node, "id"):
            return "OpenAPIV3Schema 'id' is not supported"
        if text(node, "$schema"):
            return "OpenAPIV3Schema 'schema' is not supported"
        if text(node, "$ref"):
            return "OpenAPIV3Schema '$ref' is not supported"
        for name in ("patternProperties", "dependencies", "definitions"):
            if isinstance(node.get(name), dict) and node[name]:
                return f"OpenAPIV3Schema '{name}' is not supported"
        if node.get("additionalItems") is not None:
            return "OpenAPIV3Schema 'additionalItems' is not supported"
        if item_array(node):
            return "OpenAPIV3Schema 'items' must be a schema, but is an array"
        if node.get(PRESERVE) is False:
            return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
    return None


def _structural_nodes(s: Schema) -> Iterator[Schema]:
    """The schemas NewStructural converts: all but definitions, dependencies and pattern properties."""
    yield s
    for key_name in ("not", "additionalProperties"):
        if (node := sub_schema(s, key_name)) is not None:
            yield from _structural_nodes(node)
    for junctor in ("allOf", "anyOf", "oneOf"):
        for clause in schemas(s, junctor):
            yield from _structural_nodes(clause)
    if (items := item_schema(s)) is not None:
        yield from _structural_nodes(items)
    for prop in properties(s).values():
        yield from _structural_nodes(prop)


def structural_errors(s: Schema, path: str) -> list[FieldError]:
    """Upstream's ValidateStructural: invariants and completeness, sorted by their text."""
    errs = _invariant_errors(s, _ROOT, path) + _completeness_errors(s, s, path, path)
    return sorted(errs, key=str)


def _bare(s: Schema) -> dict[str, Any]:
    """The fields of `s` that Go keeps as non-zero (unknown JSON fields are dropped by its decoder)."""
    return {k: v for k, v in s.items() if k in _KNOWN and is_set(s, k)}


def _int_or_string_any_of(s: Schema) -> bool:
    clauses = s.get("anyOf")
    if not isinstance(clauses, list) or len(clauses) != 2 or not all(isinstance(c, dict) for c in clauses):
        return False
    return _bare(clauses[0]) == {"type": "integer"} and _bare(clauses[1]) == {"type": "string"}


def _int_or_string_all_of(s: Schema) -> bool:
    clauses = schemas(s, "allOf")
    return bool(clauses) and _int_or_string_any_of(clauses[0])


def _invariant_errors(s: Schema, level: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    kind = text(s, "type")
    items = item_schema(s)
    props = properties(s)
    additional = s.get("additionalProperties")
    embedded, preserve, int_or_string = flag(s, EMBEDDED), flag(s, PRESERVE), flag(s, INT_OR_STRING)
    if kind == "array" and items is None:
        errs.append(required(child(path, "items"), "must be specified"))
    if items is not None:
        errs += _invariant_errors(items, _ITEM, child(path, "items"))
    for name, prop in props.items():
        errs += _invariant_errors(prop, _FIELD, key(child(path, "properties"), name))
    if additional is not None:
        if level == _ROOT:
            errs.append(forbidden(child(path, "additionalProperties"), "must not be used at the root"))
        if isinstance(additional, dict):
            errs += _invariant_errors(additional, _FIELD, child(path, "additionalProperties"))
    if int_or_string and preserve:
        errs.append(invalid(child(path, PRESERVE), True, "must be false if x-kubernetes-int-or-string is true"))
    if int_or_string and embedded:
        errs.append(invalid(child(path, EMBEDDED), True, "must be false if x-kubernetes-int-or-string is true"))
    errs += _junctor_errors(s, path, skip_any_of=_int_or_string_any_of(s), skip_first_all_of=_int_or_string_all_of(s))
    if embedded and kind != "object":
        errs.append(_must_be_type(s, path, "must be object if x-kubernetes-embedded-resource is true"))
    elif not kind and not int_or_string and not preserve:
        errs.append(required(child(path, "type"), _EMPTY_TYPE[level]))
    if embedded and additional is not None:
        detail = "must not be used if x-kubernetes-embedded-resource is set"
        errs.append(forbidden(child(path, "additionalProperties"), detail))
    if level == _ROOT and kind and kind != "object":
        errs.append(invalid(child(path, "type"), kind, "must be object at the root"))
    check_metadata = level == _ROOT or embedded
    for name in ("kind", "apiVersion"):
        if name in props and check_metadata and text(props[name], "type") != "string":
            errs.append(
                invalid(
                    child(key(child(path, "properties"), name), "type"), text(props[name], "type"), "must be string"
                )
            )
    if "metadata" in props:
        errs += _metadata_errors(props["metadata"], check_metadata, level, key(child(path, "properties"), "metadata"))
    if embedded and not preserve and not props:
        detail = (
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
        )
        errs.append(required(child(path, "properties"), detail))
    return errs


def _metadata_errors(s: Schema, check_metadata: bool, level: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if check_metadata and text(s, "type") != "object":
        errs.append(invalid(child(path, "type"), text(s, "type"), "must be object"))
    if level != _ROOT:
        return errs
    # at the root, metadata may only restrict name and generateName; its type and default are checked elsewhere,
    # and what a structural schema does not hold (empty junctor lists, an `items` that is not one schema) is no
    # restriction
    rest = {k: v for k, v in _bare(s).items() if k not in _NOT_STRUCTURAL_METADATA}
    if not rest.get("properties") or set(properties(s)) in ({"name"}, {"generateName"}, {"name", "generateName"}):
        rest.pop("properties", None)
    for name in ("allOf", "anyOf", "oneOf", "enum"):
        if not rest.get(name):
            rest.pop(name, None)
    if not isinstance(rest.get("items"), dict):
        rest.pop("items", None)
    if rest:
        detail = "must not specify anything other than name and generateName, but metadata is implicitly specified"
        errs.append(forbidden(path, detail))
    return errs


def _junctor_errors(
    s: Schema, path: str, *, skip_any_of: bool = False, skip_first_all_of: bool = False
) -> list[FieldError]:
    """The logical junctors of `s` (upstream's validateValueValidation) and its pattern."""
    errs: list[FieldError] = []
    if not skip_any_of:
        for i, clause in enumerate(schemas(s, "anyOf")):
            errs += _nested_errors(clause, index(child(path, "anyOf"), i))
    for i, clause in enumerate(schemas(s, "allOf")):
        errs += _nested_errors(clause, index(child(path, "allOf"), i), skip_any_of=skip_first_all_of and i == 0)
    for i, clause in enumerate(schemas(s, "oneOf")):
        errs += _nested_errors(clause, index(child(path, "oneOf"), i))
    if (negated := sub_schema(s, "not")) is not None:
        errs += _nested_errors(negated, child(path, "not"))
    pattern = text(s, "pattern")
    if pattern and (problem := go_regexp_error(pattern)) is not None:
        errs.append(
            invalid(child(path, "pattern"), pattern, f"must be a valid regular expression, but isn't: {problem}")
        )
    return errs


_NESTED_FORBIDDEN: tuple[tuple[str, str], ...] = (
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    (PRESERVE, "must be false to be structural"),
    (EMBEDDED, "must be false to be structural"),
    (INT_OR_STRING, "must be false to be structural"),
)


def _nested_errors(v: Schema, path: str, *, skip_any_of: bool = False) -> list[FieldError]:
    """A schema under a logical junctor: it may only restrict values, never specify structure or extensions."""
    errs = _junctor_errors(v, path, skip_any_of=skip_any_of)
    if (items := item_schema(v)) is not None:
        errs += _nested_errors(items, child(path, "items"))
    for name, prop in properties(v).items():
        errs += _nested_errors(prop, key(child(path, "properties"), name))
    if text(v, "type"):
        errs.append(forbidden(child(path, "type"), "must be empty to be structural"))
    additional = v.get("additionalProperties")
    if additional is True or isinstance(additional, dict):
        errs.append(forbidden(child(path, "additionalProperties"), "must be undefined to be structural"))
    if has_default(v):
        errs.append(forbidden(child(path, "default"), "must be undefined to be structural"))
    for name, detail in _NESTED_FORBIDDEN:
        if (name == PRESERVE and flag(v, name)) or (name != PRESERVE and is_set(v, name)):
            errs.append(forbidden(child(path, name), detail))
    if strings(v, LIST_MAP_KEYS):
        errs.append(forbidden(child(path, LIST_MAP_KEYS), "must be empty to be structural"))
    for name in (LIST_TYPE, MAP_TYPE):
        if v.get(name) is not None:
            errs.append(forbidden(child(path, name), "must be undefined to be structural"))
    if isinstance(v.get(VALIDATIONS), list) and v[VALIDATIONS]:
        errs.append(forbidden(child(path, VALIDATIONS), "must be empty to be structural"))
    if "metadata" in properties(v):
        errs.append(forbidden(key(child(path, "properties"), "metadata"), "must not be specified in a nested context"))
    return errs


def _completeness_errors(v: Schema, s: Schema | None, s_path: str, v_path: str) -> list[FieldError]:
    """Each junctor of `v` only names properties and items that the structural schema `s` specifies."""
    errs: list[FieldError] = []
    if (negated := sub_schema(v, "not")) is not None:
        errs += _nested_completeness(negated, s, s_path, child(v_path, "not"))
    for junctor in ("allOf", "anyOf", "oneOf"):
        for i, clause in enumerate(schemas(v, junctor)):
            errs += _nested_completeness(clause, s, s_path, index(child(v_path, junctor), i))
    return errs


def _nested_completeness(v: Schema, s: Schema | None, s_path: str, v_path: str) -> list[FieldError]:
    if s is None:
        return [required(s_path, f"because it is defined in {v_path}")]
    errs = _completeness_errors(v, s, s_path, v_path)
    if (items := item_schema(v)) is not None:
        errs += _nested_completeness(items, item_schema(s), child(s_path, "items"), child(v_path, "items"))
    s_props = properties(s)
    for name, prop in properties(v).items():
        prop_s_path, prop_v_path = key(child(s_path, "properties"), name), key(child(v_path, "properties"), name)
        if name not in s_props:
            errs.append(required(prop_s_path, f"because it is defined in {prop_v_path}"))
        else:
            errs += _nested_completeness(prop, s_props[name], prop_s_path, prop_v_path)
    return errs


# ---- Go's regexp syntax (RE2), as far as a pattern's validity goes ------------------------------------------------

_GO_ESCAPES = frozenset("afntrvdDsSwWpPx01234567")  # inside and outside a class; outside also A b B z Q
_OCTAL = "01234567"
_HEX = "0123456789abcdefABCDEF"
_POSIX_CLASSES = frozenset(
    {"alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper"}
    | {"word", "xdigit"}
)
_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")


class _RegexpError(Exception):
    def __init__(self, code: str, fragment: str) -> None:
        super().__init__(f"error parsing regexp: {code}: `{fragment}`")


def go_regexp_error(pattern: str) -> str | None:
    """`regexp.Compile`'s error for `pattern` (`error parsing regexp: <code>: `<text>``), or None when Go accepts it.

    RE2's own syntax (escapes, flag and named groups, POSIX classes, repeat counts, no look-around, no
    back-references, no possessive repeats) is checked in one pass that also translates the pattern into Python's
    syntax; Python's `re` then finds the errors both share (unbalanced parentheses and brackets, a repeat of
    nothing, a backwards range), which are reported with RE2's code for the same mistake."""
    try:
        translated = _Re2Scan(pattern).translate()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Python's "possible nested set" FutureWarning
            re.compile(translated)
    except _RegexpError as err:
        return str(err)
    except re.error as err:
        return _go_error_for(pattern, err)
    except (RecursionError, OverflowError, ValueError):
        return f"error parsing regexp: expression too large: `{pattern}`"
    return None


class _Re2Scan:
    def __init__(self, pattern: str) -> None:
        self.p, self.i, self.last_repeat = pattern, 0, 0
        self.out: list[str] = []

    def translate(self) -> str:
        in_class, repeated = False, False
        while self.i < len(self.p):
            c = self.p[self.i]
            if c == "\\":
                self._escape(in_class)
                repeated = False
            elif in_class:
                in_class = self._class_char()
            elif c == "[":
                self._open_class()
                in_class, repeated = True, False
            elif c == "(" and self.p.startswith("(?", self.i):
                self._group()
                repeated = False
            elif c in "*+?" or (c == "{" and _REPEAT.match(self.p, self.i)):
                repeated = self._repeat(repeated)
            else:
                self.out.append(c)
                self.i += 1
                repeated = False
        return "".join(self.out)

    def _escape(self, in_class: bool) -> None:
        p, i = self.p, self.i
        if i + 1 >= len(p):
            raise _RegexpError("trailing backslash at end of expression", "")
        e = p[i + 1]
        if not e.isalnum() and e.isascii():
            self.out.append(p[i : i + 2])
            self.i += 2
        elif not in_class and e == "Q":
            end = p.find("\\E", i + 2)
            literal = p[i + 2 :] if end < 0 else p[i + 2 : end]
            self.out.append(re.escape(literal))
            self.i = len(p) if end < 0 else end + 2
        elif e in "123456789" and not (e in _OCTAL and i + 2 < len(p) and p[i + 2] in _OCTAL):
            raise _RegexpError("invalid escape sequence", p[i : i + 2])
        elif e in _OCTAL:
            j = i + 2
            while j < len(p) and j < i + 4 and p[j] in _OCTAL:
                j += 1
            self.out.append(f"\\u{int(p[i + 1 : j], 8):04x}")
            self.i = j
        elif e == "x":
            self._hex_escape()
        elif e in "pP":
            self._unicode_class()
        elif e in _GO_ESCAPES or (not in_class and e in "AbBz"):
            self.out.append("\\Z" if e == "z" else p[i : i + 2])
            self.i += 2
        else:
            raise _RegexpError("invalid escape sequence", p[i : i + 2])

    def _hex_escape(self) -> None:
        p, i = self.p, self.i
        if p.startswith("{", i + 2):
            end = p.find("}", i + 3)
            digits = p[i + 3 : end] if end > 0 else ""
            if end < 0 or not digits or any(d not in _HEX for d in digits) or int(digits, 16) > 0x10FFFF:
                raise _RegexpError("invalid escape sequence", p[i : end + 1 if end > 0 else len(p)])
            self.out.append(f"\\U{int(digits, 16):08x}")
            self.i = end + 1
            return
        digits = p[i + 2 : i + 4]
        if len(digits) < 2 or any(d not in _HEX for d in digits):
            raise _RegexpError("invalid escape sequence", p[i : i + 2 + len(digits)])
        self.out.append(p[i : i + 4])
        self.i += 4

    def _unicode_class(self) -> None:
        p, i = self.p, self.i
        if p.startswith("{", i + 2):
            end = p.find("}", i + 3)
            if end < 0:
                raise _RegexpError("invalid character class range", p[i:])
            self.i = end + 1
        elif i + 2 < len(p):
            self.i = i + 3
        else:
            raise _RegexpError("invalid character class range", p[i:])
        self.out.append("x")  # any letter stands in for the class: only validity is asked

    def _open_class(self) -> None:
        j, head = self.i + 1, "["
        if self.p.startswith("^", j):
            j, head = j + 1, "[^"
        if self.p.startswith("]", j):  # a ] first in a class is literal
            j, head = j + 1, head + "\\]"
        self.out.append(head)
        self.i = j

    def _class_char(self) -> bool:
        p, i = self.p, self.i
        if p.startswith("[:", i):
            end = p.find(":]", i + 2)
            if end > 0:
                name = p[i + 2 : end].removeprefix("^")
                if name not in _POSIX_CLASSES:
                    raise _RegexpError("invalid character class range", p[i : end + 2])
                self.out.append("a")
                self.i = end + 2
                return True
        if p[i] == "[":
            self.out.append("\\[")
            self.i += 1
            return True
        self.out.append(p[i])
        self.i += 1
        return p[i] != "]"

    def _group(self) -> None:
        p, i = self.p, self.i
        if p.startswith(("(?P<", "(?<"), i):
            start = i + (4 if p.startswith("(?P<", i) else 3)
            end = p.find(">", start)
            if end < 0:
                raise _RegexpError("invalid named capture", p[i:])
            name = p[start:end]
            if not name or any(not (ch == "_" or (ch.isascii() and ch.isalnum())) for ch in name):
                raise _RegexpError("invalid named capture", p[i : end + 1])
            self.out.append("(")
            self.i = end + 1
            return
        j, sign, saw_flag = i + 2, False, False
        while j < len(p) and p[j] in "imsU-":
            if p[j] == "-":
                if sign:
                    break
                sign, saw_flag = True, False
            else:
                saw_flag = True
            j += 1
        if j < len(p) and p[j] in ":)" and not (sign and not saw_flag):
            self.out.append("(?:" if p[j] == ":" else "")
            self.i = j + 1
            return
        raise _RegexpError("invalid or unsupported Perl syntax", p[i : min(j + 1, len(p))])

    def _repeat(self, repeated: bool) -> bool:
        p, i = self.p, self.i
        m = _REPEAT.match(p, i) if p[i] == "{" else None
        end = m.end() if m else i + 1
        lazy = end < len(p) and p[end] == "?"
        if repeated:  # RE2 stacks no repeats: `a**`, `a*+` (possessive) and `a*??` are all errors
            raise _RegexpError("invalid nested repetition operator", p[self.last_repeat : end + (1 if lazy else 0)])
        if m is not None:
            low, high = int(m.group(1)), m.group(3)
            if low > 1000 or (high and (int(high) > 1000 or int(high) < low)):
                raise _RegexpError("invalid repeat count", m.group(0))
        self.last_repeat = i
        self.out.append(p[i : end + (1 if lazy else 0)])
        self.i = end + (1 if lazy else 0)
        return True


def _go_error_for(pattern: str, err: re.error) -> str:
    message, at = err.msg, err.pos if err.pos is not None else 0

    def go(code: str, fragment: str) -> str:
        return f"error parsing regexp: {code}: `{fragment}`"

    if message.startswith("missing ), unterminated subpattern"):
        return go("missing closing )", pattern)
    if message.startswith("unbalanced parenthesis"):
        return go("unexpected )", pattern)
    if message.startswith("unterminated character set"):
        return go("missing closing ]", pattern[pattern.rfind("[") :])
    if message.startswith("nothing to repeat"):
        repeat = _REPEAT.match(pattern, at)
        return go("missing argument to repetition operator", repeat.group(0) if repeat else pattern[at : at + 1])
    if message.startswith("multiple repeat"):
        return go("invalid nested repetition operator", pattern[max(at - 1, 0) : at + 1])
    if message.startswith("bad character range"):
        return go("invalid character class range", message.removeprefix("bad character range "))
    return go("invalid regular expression", pattern)


# ---- 3. defaults -------------------------------------------------------------------------------------------------


def _compiled(s: Schema, *, resource_root: bool) -> Node:
    """The custom-resource engine's node for `s`; a resource's root counts as an embedded resource, as upstream's
    pruning and ObjectMeta checks take it."""
    node = compile_node(s)
    if resource_root:
        node.embedded = node.needs_embedded = True
    return node


def is_pruned(value: Any, s: Schema, *, resource_root: bool = False) -> bool:
    """Pruning against `s` leaves `value` as it is (upstream's `pruning.Prune` of a default against its schema).

    The value is pruned as the one property of a parent object, so that `s`'s own preserve-unknown-fields counts."""
    parent = compile_node({"type": "object", "properties": {"value": s}})
    if resource_root and parent.properties:
        parent.properties["value"].embedded = True
    pruned = {"value": copy.deepcopy(value)}
    pruning.prune_value(parent, pruned)
    return bool(pruned == {"value": value})


def embedded_resource_errors(path: str, value: Any, s: Schema, *, resource_root: bool) -> list[FieldError]:
    """TypeMeta and ObjectMeta of every embedded resource in `value` (upstream's objectmeta Coerce and Validate)."""
    errs: list[FieldError] = []
    embedded.validate(_compiled(s, resource_root=resource_root), value, path or None, errs)
    return errs


class DefaultsError(Exception):
    """A default that cannot even be placed in a surrounding object (upstream: an internal error)."""


def _surround(value: Any, steps: tuple[str | None, ...]) -> dict[str, Any]:
    """The object of an embedded resource that holds `value` at `steps` (None: a list item), with TypeMeta."""
    for step in reversed(steps):
        value = [value] if step is None else {step: value}
    if not isinstance(value, dict):
        raise DefaultsError("object root default value must be of object type")
    value.setdefault("kind", "Validation")
    value.setdefault("apiVersion", "validation/v1")
    return value


@dataclass(slots=True)
class _Defaults:
    require_pruned: bool
    value_errors: Callable[[str, Any, Schema], list[FieldError]]

    def walk(
        self, s: Schema, path: str, root: Schema, steps: tuple[str | None, ...], inside_meta: bool, embedded: bool
    ) -> list[FieldError]:
        if embedded:
            inside_meta, steps, root = False, (), s
        errs: list[FieldError] = []
        if has_default(s):
            errs += self._check(s, path, root, steps, inside_meta, embedded)
        if (items := item_schema(s)) is not None:
            errs += self.walk(items, child(path, "items"), root, (*steps, None), inside_meta, flag(items, EMBEDDED))
        for name, prop in properties(s).items():
            sub_meta = inside_meta or (embedded and name in META_FIELDS)
            prop_path = key(child(path, "properties"), name)
            errs += self.walk(prop, prop_path, root, (*steps, name), sub_meta, flag(prop, EMBEDDED))
        return errs

    def _check(
        self, s: Schema, path: str, root: Schema, steps: tuple[str | None, ...], inside_meta: bool, embedded: bool
    ) -> list[FieldError]:
        default = s["default"]
        default_path = child(path, "default")
        if inside_meta:
            try:
                obj = _surround(copy.deepcopy(default), steps)
            except DefaultsError as err:
                raise DefaultsError(f"failed to validate default value inside metadata: {err}") from None
            meta_errs = embedded_resource_errors("", obj, root, resource_root=True)
            if meta_errs:
                rendered = str(meta_errs[0]) if len(meta_errs) == 1 else "[" + ", ".join(map(str, meta_errs)) + "]"
                return [invalid(default_path, default, f"must result in valid metadata: {rendered}")]
            return self.value_errors(default_path, default, s)
        errs: list[FieldError] = []
        if self.require_pruned and not is_pruned(default, s, resource_root=embedded):
            errs.append(invalid(default_path, default, "must not have unknown fields"))
        meta_errs = embedded_resource_errors(default_path, default, s, resource_root=embedded)
        return errs + (meta_errs or self.value_errors(default_path, default, s))


def default_errors(
    s: Schema,
    path: str,
    *,
    require_pruned: bool,
    value_errors: Callable[[str, Any, Schema], list[FieldError]],
) -> list[FieldError]:
    """Upstream's ValidateDefaults for a resource's root schema `s` (at `path`): each default is pruned and valid.
    `value_errors(path, value, schema)` checks a value against a schema (and its rules)."""
    check = _Defaults(require_pruned, value_errors)
    try:
        return check.walk(s, path, s, (), False, True)
    except DefaultsError as err:
        return [invalid(path, "", str(err))]


# ---- the custom-resource engine -----------------------------------------------------------------------------------
# Imported when first needed: the engine's `schema` module is the serving side's, and loads the CEL library.


def value_errors(path: str, value: Any, s: Schema) -> list[FieldError]:
    """`value` (a default, at `path`) checked against schema `s`: kube-openapi's checks, then the rules (upstream's
    `ValidateCustomResource` and CEL validator on a default, by the custom-resource engine)."""
    from tinykube.apiextensions import schema

    return schema.default_value_errors(s, value, path)


def rule_errors(s: Schema, path: str) -> list[FieldError]:
    """The `x-kubernetes-validations` rules of the resource schema `s` (at `path`) that do not compile, use
    `oldSelf` where old values cannot be correlated, or cost too much (the engine's `compile_errors`)."""
    from tinykube.apiextensions import schema

    return schema.compile_errors(s, path)
