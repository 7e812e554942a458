"""Is a CRD's OpenAPI v3 schema one the apiserver can serve? Upstream's schema rules for `spec.versions[*].schema`.

A schema is checked in three passes, each as upstream runs them and with its field paths and words:

1. the OpenAPI walk (`ValidateCustomResourceDefinitionOpenAPISchema`): features the apiserver does not support
   (`$ref`, `patternProperties`, `uniqueItems` ...), defaults where they cannot be applied, and the rules of the
   `x-kubernetes-*` extensions (list types and map keys, map types, validation rules' fields);
2. structurality (`ValidateStructural`): every value has a `type`, the logical junctors (`allOf`, `anyOf`, `oneOf`,
   `not`) only restrict what the structural part already specifies, `metadata` is left alone, embedded resources
   and int-or-string are well formed; its errors are sorted by their text, as upstream sorts them;
3. defaults (`ValidateDefaults`): every `default` survives pruning and satisfies its own schema.

Schemas are read with Go's zero values in mind (`schemaprops`); a rule's `fieldPath` is resolved by `rulepath`, a
`pattern` is checked against Go's regexp syntax by `goregexp`.

Checking a default against its schema, and compiling `x-kubernetes-validations` rules, are the custom-resource
engine's job (`tinykube.apiextensions.schema` / `cel`); `value_errors` and `rule_errors` reach it lazily, so this
module also works (less thoroughly) without it.
"""

from __future__ import annotations

import copy
import re
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
from tinykube.apiextensions.goregexp import go_regexp_error
from tinykube.apiextensions.node import Node, compile_node
from tinykube.apiextensions.rulepath import resolve_field_path
from tinykube.apiextensions.schemaprops import (
    EMBEDDED,
    INT_OR_STRING,
    LIST_MAP_KEYS,
    LIST_TYPE,
    MAP_TYPE,
    META_FIELDS,
    OPENAPI_TYPES,
    PRESERVE,
    VALIDATIONS,
    Schema,
    bare,
    child,
    flag,
    has_default,
    index,
    is_set,
    item_array,
    item_schema,
    key,
    optional_text,
    properties,
    schemas,
    strings,
    sub_schema,
    text,
)

SUPPORTED_RULE_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")

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


def _int_or_string_any_of(s: Schema) -> bool:
    clauses = s.get("anyOf")
    if not isinstance(clauses, list) or len(clauses) != 2 or not all(isinstance(c, dict) for c in clauses):
        return False
    return bare(clauses[0]) == {"type": "integer"} and bare(clauses[1]) == {"type": "string"}


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
    rest = {k: v for k, v in bare(s).items() if k not in _NOT_STRUCTURAL_METADATA}
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
