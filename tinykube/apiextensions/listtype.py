"""The invariants of `x-kubernetes-list-type: set` and `map` lists (upstream's `listtype.ValidateListSetsAndMaps`).

A set's items are unique; a map list's items are objects (or null) whose `x-kubernetes-list-map-keys` values are
unique. Each item that repeats an earlier one is reported once, at its second appearance, as
`Duplicate value: <item>` (for map lists: the item's keys, e.g. `{"name":"a"}`). Scalars compare as Go compares
interface values (`1` and `1.0` differ, as do `1` and `true`); objects and arrays compare by their JSON.

Paths are field paths (`spec.ports[2]`, `spec.map[key].list[0]`).
"""

from __future__ import annotations

from typing import Any

import orjson

from tinykube.api.errors import ErrorType, FieldError, invalid
from tinykube.apiextensions.node import Node

_UNSPECIFIED = object()  # a map-list item without the key (or a null item)


def validate(node: Node, value: Any, path: str | None, errs: list[FieldError]) -> None:
    """Check every set/map list under `value` (an object: the root, or `status` for status updates)."""
    if type(value) is dict and node.needs_listtype:
        _object(node, value, path, errs)


def _child(path: str | None, key: str) -> str:
    return f"{path}.{key}" if path else key


def _object(node: Node, value: dict[str, Any], path: str | None, errs: list[FieldError]) -> None:
    additional = node.additional
    if additional is not None and additional.needs_listtype:
        for key, item in value.items():
            _any(additional, item, f"{path or ''}[{key}]", errs)
    for key, child in node.listtype_kids:
        if key in value:
            _any(child, value[key], _child(path, key), errs)


def _any(node: Node, value: Any, path: str, errs: list[FieldError]) -> None:
    if type(value) is list:
        _array(node, value, path, errs)
    elif type(value) is dict:
        _object(node, value, path, errs)


def _array(node: Node, value: list[Any], path: str, errs: list[FieldError]) -> None:
    if node.list_type == "set":
        for i in _repeats([_key(x) for x in value]):
            errs.append(FieldError(ErrorType.DUPLICATE, f"{path}[{i}]", value[i]))
    elif node.list_type == "map":
        errs += _map_list(node, value, path)
    items = node.items
    if items is not None and items.needs_listtype:
        for i, item in enumerate(value):
            _any(items, item, f"{path}[{i}]", errs)


def _key(value: Any) -> Any:
    """A hashable identity with Go's comparison: typed scalars, JSON text for compounds."""
    if type(value) is dict or type(value) is list:
        return ("json", orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    return (type(value), value)


def _repeats(keys: list[Any]) -> list[int]:
    """The index of each key's second appearance, in order."""
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, key in enumerate(keys):
        times = seen.get(key, 0)
        if times == 1:
            out.append(i)
        seen[key] = times + 1
    return out


def _map_list(node: Node, value: list[Any], path: str) -> list[FieldError]:
    for i, item in enumerate(value):
        if item is not None and type(item) is not dict:
            return [invalid(f"{path}[{i}]", item, "must be an object for an array of list-type map")]
    if len(value) <= 1:
        return []
    keys = node.map_keys
    if len(keys) == 1:
        (name,) = keys
        values = [item.get(name, _UNSPECIFIED) if item is not None else _UNSPECIFIED for item in value]
        errs = []
        for i in _repeats([("unspecified",) if v is _UNSPECIFIED else _key(v) for v in values]):
            shown = {} if values[i] is _UNSPECIFIED else {name: values[i]}
            errs.append(FieldError(ErrorType.DUPLICATE, f"{path}[{i}]", shown))
        return errs
    composite = [{k: item[k] for k in keys if k in item} if item is not None else {} for item in value]
    return [FieldError(ErrorType.DUPLICATE, f"{path}[{i}]", composite[i]) for i in _repeats(list(map(_key, composite)))]
