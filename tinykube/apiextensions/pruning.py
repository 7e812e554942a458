"""Dropping what a structural schema does not know, as the apiserver does when it decodes a custom resource.

Three steps, in upstream's order (`unstructuredSchemaCoercer.apply`):

1. the root `metadata` is read into an ObjectMeta: unknown fields go (`metadata.foo`);
2. structural pruning: fields no schema describes go (`spec.foo`, `spec.items[0].bar`, `spec.map.key.x` — keys
   joined with dots, as `UnknownFieldPathOptions` joins them), except under `x-kubernetes-preserve-unknown-fields`
   and the `apiVersion`/`kind`/`metadata` of the root and of embedded resources; then `null`s are dropped where
   the schema is not nullable and has no default;
3. embedded resources' `metadata` is read into an ObjectMeta as well (`spec.template.metadata.foo`, field-path
   style).

The returned paths are what upstream puts inside `unknown field "…"` for fieldValidation=Strict/Warn.
"""

from __future__ import annotations

from typing import Any

from tinykube.apiextensions import objectmeta
from tinykube.apiextensions.node import UNSET, Node

_META = frozenset(("apiVersion", "kind", "metadata"))


def prune(root: Node, obj: dict[str, Any], *, drop_invalid_metadata: bool = False) -> list[str]:
    """Prune `obj` (a whole custom resource) in place; the dropped fields' paths in upstream's order."""
    unknown: list[str] = []
    if "metadata" in obj:
        meta_unknown, _ = objectmeta.coerce(
            obj["metadata"], path="metadata", drop_invalid=drop_invalid_metadata, normalize=False
        )
        unknown += meta_unknown
    unknown += prune_fields(root, obj, resource_root=True)
    if root.needs_embedded:
        coerced: list[str] = []
        _coerce(obj, root, None, coerced, drop_invalid_metadata)
        unknown += sorted(coerced)
    return unknown


def prune_fields(node: Node, value: Any, *, resource_root: bool) -> list[str]:
    """Structural pruning alone (upstream's PruneWithOptions), sorted paths of what went. Non-nullable nulls
    without a default go too (upstream's PruneNonNullableNullsWithoutDefaults, which always follows it)."""
    out: list[str] = []
    if type(value) is dict:
        if node.preserve_unknown:
            _skip_map(value, node, "", out, embedded=resource_root or node.embedded)
        else:
            _prune_map(value, node, "", out, embedded=resource_root or node.embedded)
    elif type(value) is list:
        _prune(value, node, "", out)
    return sorted(out)


def prune_value(node: Node, value: Any) -> None:
    """Prune a value relative to its own schema (defaults are pruned this way when a CRD is loaded)."""
    if isinstance(value, dict):
        _prune_map(value, node, "", [], embedded=node.embedded)
    elif isinstance(value, list):
        _prune_list(value, node, "", [])


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _prune(value: Any, node: Node | None, path: str, out: list[str]) -> None:
    if type(value) is dict:
        if node is None:
            out.extend(_join(path, k) for k in value)
            value.clear()
        elif node.preserve_unknown:
            _skip_map(value, node, path, out, embedded=node.embedded)
        else:
            _prune_map(value, node, path, out, embedded=node.embedded)
    elif type(value) is list:
        if node is not None and node.preserve_unknown:
            _skip_list(value, node, path, out)
        else:
            _prune_list(value, node, path, out)


def _prune_list(value: list[Any], node: Node | None, path: str, out: list[str]) -> None:
    items = node.items if node is not None else None
    for i, item in enumerate(value):
        if type(item) is dict or type(item) is list:
            _prune(item, items, f"{path}[{i}]", out)


def _prune_map(value: dict[str, Any], node: Node, path: str, out: list[str], *, embedded: bool) -> None:
    props, additional = node.properties, node.additional
    if additional is None:
        unknown = value.keys() - props.keys() if props is not None else set(value)
        if embedded:
            unknown -= _META
        if unknown:
            for key in [k for k in value if k in unknown]:  # in the object's order
                if key not in _META or path:
                    out.append(_join(path, key))
                del value[key]
    nulls: list[str] | None = None
    for key, item in value.items():
        kind = type(item)
        if kind is not dict and kind is not list and item is not None:
            continue
        child = props.get(key) if props is not None else None
        if child is None:
            child = additional
        if embedded and key in _META:
            if item is None:
                if _drop_null(child):
                    nulls = [*(nulls or ()), key]
            elif child is not None and kind is dict:
                _drop_nulls(item, child)
            continue
        if child is None:
            continue
        if item is None:
            if not child.nullable and child.default is UNSET:
                nulls = [*(nulls or ()), key]
        else:
            _prune(item, child, _join(path, key), out)
    for key in nulls or ():
        del value[key]


def _drop_null(child: Node | None) -> bool:
    return child is not None and not child.nullable and child.default is UNSET


def _skip_map(value: dict[str, Any], node: Node, path: str, out: list[str], *, embedded: bool) -> None:
    """Under x-kubernetes-preserve-unknown-fields: unknown fields stay, known ones are pruned by their schema."""
    props, additional = node.properties, node.additional
    nulls: list[str] | None = None
    for key, item in value.items():
        if embedded and key in _META:
            continue
        child = props.get(key) if props is not None else None
        if child is None:
            child = additional
            if child is None:
                continue
        if type(item) is dict or type(item) is list:
            _prune(item, child, _join(path, key), out)
        elif item is None and _drop_null(child):
            nulls = [*(nulls or ()), key]
    for key in nulls or ():
        del value[key]


def _skip_list(value: list[Any], node: Node, path: str, out: list[str]) -> None:
    items = node.items
    if items is None:
        return
    for i, item in enumerate(value):
        if type(item) is dict:
            _skip_map(item, items, f"{path}[{i}]", out, embedded=items.embedded)
        elif type(item) is list:
            _skip_list(item, items, f"{path}[{i}]", out)


def _drop_nulls(value: Any, node: Node | None) -> None:
    """Upstream's PruneNonNullableNullsWithoutDefaults: a null where the schema is neither nullable nor defaulted."""
    if type(value) is dict:
        doomed = None
        for key, item in value.items():
            child = node.child(key) if node is not None else None
            if item is None:
                if child is not None and not child.nullable and child.default is UNSET:
                    doomed = [*(doomed or ()), key]
            elif type(item) is dict or type(item) is list:
                _drop_nulls(item, child)
        for key in doomed or ():
            del value[key]
    elif type(value) is list:
        items = node.items if node is not None else None
        for item in value:
            if type(item) is dict or type(item) is list:
                _drop_nulls(item, items)


def _field_path(parent: str | None, key: str, *, index: bool = False) -> str:
    if index:
        return f"{parent or ''}[{key}]"
    return f"{parent}.{key}" if parent else key


def _coerce(value: Any, node: Node | None, path: str | None, out: list[str], drop: bool) -> None:
    """objectmeta.Coerce below the root: type-check embedded TypeMeta, read embedded metadata into ObjectMeta."""
    if node is None or not node.needs_embedded:
        return
    if type(value) is dict:
        if node.embedded:
            _coerce_embedded(value, path, out, drop)
        props = node.properties
        for key, item in value.items():
            if props is not None and key in props:
                _coerce(item, props[key], _field_path(path, key), out, drop)
            elif node.additional is not None:
                _coerce(item, node.additional, _field_path(path, key, index=True), out, drop)
    elif type(value) is list:
        for i, item in enumerate(value):
            _coerce(item, node.items, _field_path(path, str(i), index=True), out, drop)


def _coerce_embedded(value: dict[str, Any], path: str | None, out: list[str], drop: bool) -> None:
    for key in ("apiVersion", "kind"):
        if key in value and not isinstance(value[key], str) and drop:
            del value[key]
    if "metadata" not in value:
        return
    prefix = _field_path(path, "metadata")
    unknown, _ = objectmeta.coerce(value["metadata"], path=prefix, drop_invalid=drop, normalize=True)
    out += unknown  # a zero creationTimestamp goes with the other empty fields (normalize)
