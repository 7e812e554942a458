"""A CRD version's structural schema compiled once into a tree of small nodes.

Each node keeps only what the per-object passes (pruning, defaulting, OpenAPI validation, list-type checks,
embedded-resource checks, CEL rules) read, already decoded from the schema's JSON: a `Node` answers "what is
here?" with plain attributes, so the hot paths never look a key up in the schema dict again. Flags that summarise
a whole subtree (`needs_default`, `needs_listtype`, ...) let each pass skip the parts of an object it has nothing
to do in — most of a typical custom resource.

Formats the apiserver does not validate are dropped here, as upstream's `StripUnsupportedFormatsPostProcessor`
does, so a node's `format` is one that `formats.py` checks.
"""

from __future__ import annotations

from typing import Any

from tinykube.apiextensions import formats

UNSET: Any = object()  # "no default" (None is a legitimate default: JSON null)

_NUMBER_FORMATS = {"integer": ("int32", "int64"), "number": ("float", "double")}


class Node:
    """One schema position. Attributes mirror upstream's `Structural` plus precomputed summaries."""

    __slots__ = (
        "additional",
        "additional_false",
        "all_of",
        "any_of",
        "cel",
        "default",
        "default_kids",
        "defaults",
        "embedded",
        "enum",
        "excl_max",
        "excl_min",
        "format",
        "int_or_string",
        "items",
        "list_type",
        "listtype_kids",
        "map_keys",
        "map_type",
        "max_items",
        "max_length",
        "max_props",
        "maximum",
        "min_items",
        "min_length",
        "min_props",
        "minimum",
        "multiple_of",
        "needs_default",
        "needs_embedded",
        "needs_listtype",
        "needs_rules",
        "not_",
        "nullable",
        "one_of",
        "pattern",
        "preserve_unknown",
        "properties",
        "required",
        "rules",
        "type",
        "types",
        "unique_items",
        "validator",
    )

    def __init__(self) -> None:
        self.type = ""
        self.types: tuple[str, ...] = ()
        self.format = ""
        self.nullable = False
        self.int_or_string = False
        self.preserve_unknown = False
        self.embedded = False
        self.properties: dict[str, Node] | None = None
        self.additional: Node | None = None
        self.additional_false = False
        self.items: Node | None = None
        self.default: Any = UNSET
        self.defaults: tuple[tuple[str, Any, bool], ...] = ()  # (property, default, property nullable)
        self.default_kids: tuple[tuple[str, Node], ...] = ()  # properties with defaults somewhere below
        self.listtype_kids: tuple[tuple[str, Node], ...] = ()  # properties with set/map lists somewhere below
        self.list_type = ""
        self.map_keys: tuple[str, ...] = ()
        self.map_type = ""
        self.required: tuple[str, ...] = ()
        self.enum: list[Any] | None = None
        self.min_length: int | None = None
        self.max_length: int | None = None
        self.pattern: str | None = None
        self.min_items: int | None = None
        self.max_items: int | None = None
        self.unique_items = False
        self.min_props: int | None = None
        self.max_props: int | None = None
        self.maximum: float | None = None
        self.minimum: float | None = None
        self.excl_max = False
        self.excl_min = False
        self.multiple_of: float | None = None
        self.all_of: tuple[Node, ...] = ()
        self.any_of: tuple[Node, ...] = ()
        self.one_of: tuple[Node, ...] = ()
        self.not_: Node | None = None
        self.rules: list[dict[str, Any]] = []
        self.cel: Any = None  # celrules.NodeRules, filled by celrules.attach
        self.validator: Any = None  # openapi's compiled checks, filled by openapi.attach
        self.needs_default = False
        self.needs_listtype = False
        self.needs_embedded = False
        self.needs_rules = False

    def child(self, key: str) -> Node | None:
        """The schema of an object's field `key` (a property, else additionalProperties)."""
        props = self.properties
        if props is not None and key in props:
            return props[key]
        return self.additional

    def __repr__(self) -> str:
        return f"Node(type={self.type!r})"


def _whole(raw: Any) -> int | None:
    """A JSON number as a count limit (a float is truncated, as Go decodes it into `*int64`); None if not a number."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    return int(raw)


def _number(raw: Any) -> float | None:
    """A JSON number as a float; None if not a number (a bool is not one)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    return float(raw)


def supported_format(type_: str, fmt: str) -> str:
    """The format the apiserver validates for a schema of `type_`, or "" (upstream drops the others)."""
    if not fmt:
        return ""
    if type_ in ("", "string"):
        return fmt if formats.is_known(fmt) else ""
    allowed = _NUMBER_FORMATS.get(type_)
    return fmt if allowed and fmt in allowed else ""


def compile_node(raw: Any, *, nested: bool = False) -> Node:
    """Compile one schema dict (and everything under it). `nested` marks allOf/anyOf/oneOf/not members."""
    node = Node()
    if not isinstance(raw, dict):
        return node
    _generic(node, raw)
    _value_validation(node, raw)
    _structure(node, raw)
    _summaries(node)
    return node


def _generic(node: Node, raw: dict[str, Any]) -> None:
    node.type = raw.get("type") or ""
    if not isinstance(node.type, str):
        node.type = ""
    node.nullable = raw.get("nullable") is True
    node.int_or_string = raw.get("x-kubernetes-int-or-string") is True
    node.preserve_unknown = raw.get("x-kubernetes-preserve-unknown-fields") is True
    node.embedded = raw.get("x-kubernetes-embedded-resource") is True
    if node.int_or_string:
        node.types = ("integer", "string")
    elif node.type:
        node.types = (node.type,)
    fmt = raw.get("format")
    node.format = supported_format(node.type if len(node.types) <= 1 else "", fmt if isinstance(fmt, str) else "")
    if "default" in raw:
        node.default = raw["default"]
    list_type = raw.get("x-kubernetes-list-type")
    node.list_type = list_type if isinstance(list_type, str) else ""
    keys = raw.get("x-kubernetes-list-map-keys")
    node.map_keys = tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
    map_type = raw.get("x-kubernetes-map-type")
    node.map_type = map_type if isinstance(map_type, str) else ""
    rules = raw.get("x-kubernetes-validations")
    node.rules = [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []


def _value_validation(node: Node, raw: dict[str, Any]) -> None:
    req = raw.get("required")
    node.required = tuple(r for r in req if isinstance(r, str)) if isinstance(req, list) else ()
    enum = raw.get("enum")
    node.enum = list(enum) if isinstance(enum, list) and enum else None
    node.min_length, node.max_length = _whole(raw.get("minLength")), _whole(raw.get("maxLength"))
    pattern = raw.get("pattern")
    node.pattern = pattern if isinstance(pattern, str) and pattern else None
    node.min_items, node.max_items = _whole(raw.get("minItems")), _whole(raw.get("maxItems"))
    node.unique_items = raw.get("uniqueItems") is True
    node.min_props, node.max_props = _whole(raw.get("minProperties")), _whole(raw.get("maxProperties"))
    node.maximum, node.minimum = _number(raw.get("maximum")), _number(raw.get("minimum"))
    node.excl_max = raw.get("exclusiveMaximum") is True
    node.excl_min = raw.get("exclusiveMinimum") is True
    node.multiple_of = _number(raw.get("multipleOf"))
    for key, attr in (("allOf", "all_of"), ("anyOf", "any_of"), ("oneOf", "one_of")):
        members = raw.get(key)
        if isinstance(members, list):
            setattr(node, attr, tuple(compile_node(m, nested=True) for m in members))
    if isinstance(raw.get("not"), dict):
        node.not_ = compile_node(raw["not"], nested=True)


def _structure(node: Node, raw: dict[str, Any]) -> None:
    props = raw.get("properties")
    if isinstance(props, dict):
        node.properties = {k: compile_node(v) for k, v in props.items()}
    additional = raw.get("additionalProperties")
    if isinstance(additional, dict):
        node.additional = compile_node(additional)
    elif isinstance(additional, bool):  # any key stays, its contents are pruned (under a nil schema upstream)
        node.additional = Node()
        node.additional_false = additional is False
    items = raw.get("items")
    if isinstance(items, dict):
        node.items = compile_node(items)
    if node.properties:
        node.defaults = tuple((k, p.default, p.nullable) for k, p in node.properties.items() if p.default is not UNSET)


def _children(node: Node) -> list[Node]:
    out = list(node.properties.values()) if node.properties else []
    if node.additional is not None:
        out.append(node.additional)
    if node.items is not None:
        out.append(node.items)
    return out


def _summaries(node: Node) -> None:
    kids = _children(node)
    node.needs_default = bool(node.defaults) or any(k.needs_default or k.default is not UNSET for k in kids)
    node.needs_listtype = node.list_type in ("set", "map") or any(k.needs_listtype for k in kids)
    node.needs_embedded = node.embedded or any(k.needs_embedded for k in kids)
    node.needs_rules = bool(node.rules) or any(k.needs_rules for k in kids)
    props = node.properties or {}
    node.default_kids = tuple((k, p) for k, p in props.items() if p.needs_default)
    node.listtype_kids = tuple((k, p) for k, p in props.items() if p.needs_listtype)
    for member in (*node.all_of, *node.any_of, *node.one_of):
        node.needs_rules = node.needs_rules or member.needs_rules


def walk(node: Node) -> list[Node]:
    """Every node of the structural tree (not the allOf/anyOf/oneOf/not members), parents first."""
    out = [node]
    for kid in _children(node):
        out += walk(kid)
    return out
