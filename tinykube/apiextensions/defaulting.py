"""Structural defaulting, as upstream's `defaulting.Default` applies a schema's `default`s.

A property's default is set when its parent object exists and the property is absent, or null while the schema
is not nullable; then the object's fields are defaulted in turn (a default value is itself defaulted). Items of
an array and values of an additionalProperties map that are null where the schema is not nullable take the
items'/values' default. Nothing else is created: a missing parent object is not conjured up to hold a default.

Upstream runs this when a request body is decoded and again when an object is read from storage; the subtree
flag `needs_default` lets both skip every part of an object whose schema has no default below it.
"""

from __future__ import annotations

from typing import Any

from tinykube.apiextensions.node import UNSET, Node


def deep_copy(value: Any) -> Any:
    if type(value) is dict:
        return {k: deep_copy(v) for k, v in value.items()}
    if type(value) is list:
        return [deep_copy(v) for v in value]
    return value


def default(node: Node, value: Any) -> None:
    """Apply `node`'s defaults inside `value`, in place."""
    if not node.needs_default:
        return
    if type(value) is dict:
        _default_map(node, value)
    elif type(value) is list:
        _default_list(node, value)


def _default_map(node: Node, value: dict[str, Any]) -> None:
    for key, dflt, nullable in node.defaults:
        if key not in value or (value[key] is None and not nullable):
            value[key] = deep_copy(dflt)
    for key, child in node.default_kids:
        item = value.get(key)
        if type(item) is dict or type(item) is list:
            default(child, item)
    additional = node.additional
    if additional is None or not (additional.needs_default or additional.default is not UNSET):
        return
    props = node.properties
    for key, item in value.items():
        if props is not None and key in props:
            continue
        if item is None and not additional.nullable and additional.default is not UNSET:
            item = value[key] = deep_copy(additional.default)
        if additional.needs_default and (type(item) is dict or type(item) is list):
            default(additional, item)


def _default_list(node: Node, value: list[Any]) -> None:
    items = node.items
    if items is None:
        return
    for i, item in enumerate(value):
        if item is None and not items.nullable and items.default is not UNSET:
            item = value[i] = deep_copy(items.default)
        if items.needs_default and (type(item) is dict or type(item) is list):
            default(items, item)
