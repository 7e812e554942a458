"""Sets of field paths, as structured-merge-diff keeps them for server-side apply (`metadata.managedFields`).

A set is kept in exactly the shape of its wire form, `fieldsV1`: a dict from path elements to nodes, each node
itself such a dict. A node that is `{}` is a member (the path is in the set) with nothing under it; a node with
other keys holds deeper paths, and is a member too when it has the `"."` key. So decoding a stored entry is free,
and set operations work on the JSON as stored. Path elements are strings, as upstream serialises them:

    f:<name>                  a field of a struct or a key of a map       (`.name` when printed)
    k:{"name":"c","port":80}  a list item by its map keys, sorted          (`[name="c",port=80]`)
    v:"value"                 an item of a set, by its value               (`[="value"]`)
    i:3                       a list item by its index (lists that have no keys; rarely owned)

The operations mirror upstream's `fieldpath.Set` (union, non-recursive difference and intersection, recursive
difference), so ownership moves between managers exactly as there. Sets are values: operations never change their
arguments, and may return them (or parts of them) unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, Final

import orjson

FieldSet = dict[str, Any]  # {path element: FieldSet}, recursively; see the module docstring
Path = tuple[str, ...]

SELF: Final = "."
EMPTY: Final[FieldSet] = {}

# ---- path elements -------------------------------------------------------------------------------------------


def go_json(value: Any) -> str:
    """A JSON value as Go's encoder writes it (what upstream's path elements hold): compact, map keys sorted, `<`,
    `>` and `&` escaped, integral floats without a fraction."""
    if isinstance(value, str):
        return _go_string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_go_string(k)}:{go_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    return _go_string(str(value))


def _go_string(text: str) -> str:
    encoded: str = orjson.dumps(text).decode()  # JSON's own escapes, as Go's; then Go's HTML-safe ones
    if "<" in text or ">" in text or "&" in text or "\u2028" in text or "\u2029" in text:
        for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028")):
            encoded = encoded.replace(raw, escaped)
        encoded = encoded.replace("\u2029", "\\u2029")
    return encoded


def field(name: str) -> str:
    return "f:" + name


def key(fields: dict[str, Any]) -> str:
    """The element of an associative list item whose keys have these values (sorted by name, as upstream)."""
    return "k:{" + ",".join(f"{_go_string(k)}:{go_json(fields[k])}" for k in sorted(fields)) + "}"


def value(item: Any) -> str:
    return "v:" + go_json(item)


def index(i: int) -> str:
    return f"i:{i}"


class PathError(ValueError):
    """A path element (or a whole fieldsV1 document) that does not parse."""


def parse(element: str) -> tuple[str, Any]:
    """(`f`|`k`|`v`|`i`, payload) of one element; raises PathError as upstream's deserializer refuses it."""
    kind, colon, rest = element.partition(":")
    if not colon or kind not in ("f", "k", "v", "i"):
        raise PathError(f"unknown path element type: {element!r}")
    if kind == "f":
        return kind, rest
    if kind == "i":
        if not rest.lstrip("-").isdigit():
            raise PathError(f"invalid index {rest!r}")
        return kind, int(rest)
    try:
        payload = orjson.loads(rest)
    except orjson.JSONDecodeError as err:
        raise PathError(f"parsing JSON: {err}") from None
    if kind == "k" and not isinstance(payload, dict):
        raise PathError("key must be an object")
    return kind, payload


def canonical(element: str) -> str:
    """The element as upstream writes it (clients may send `k:{ "name": "c" }`)."""
    kind, payload = parse(element)
    if kind == "k":
        return key(payload)
    if kind == "v":
        return value(payload)
    return element if kind == "f" else index(payload)


def _value_order(item: Any) -> tuple[Any, ...]:
    """upstream's value.Compare: numbers, then strings, booleans, lists, maps, null."""
    if isinstance(item, bool):
        return (2, item)
    if isinstance(item, int | float):
        return (0, item)
    if isinstance(item, str):
        return (1, item)
    if isinstance(item, list):
        return (3, tuple(_value_order(v) for v in item))
    if isinstance(item, dict):
        return (4, tuple((k, _value_order(item[k])) for k in sorted(item)))
    return (5,)


def order(element: str) -> tuple[Any, ...]:
    """Sort key of an element, as upstream's PathElement.Compare: fields, then keys, values, indices."""
    if element.startswith("f:"):
        return (0, element[2:])
    try:
        kind, payload = parse(element)
    except PathError:
        return (4, element)
    if kind == "k":
        return (1, tuple((name, _value_order(payload[name])) for name in sorted(payload)))
    if kind == "v":
        return (2, _value_order(payload))
    return (3, payload)


def _go_text(item: Any) -> str:
    """upstream's value.ToString, used when a path is printed."""
    if isinstance(item, str):
        return json.dumps(item, ensure_ascii=False)
    if isinstance(item, list):
        return "[" + ",".join(_go_text(v) for v in item) + "]"
    if isinstance(item, dict):
        return "".join(f"{k}={_go_text(v)}" for k, v in item.items())
    return go_json(item)


def element_text(element: str) -> str:
    """`.name`, `[name="c"]`, `[="v"]`, `[3]`: how upstream prints an element in messages."""
    if element.startswith("f:"):
        return "." + element[2:]
    try:
        kind, payload = parse(element)
    except PathError:
        return "{{invalid path element}}"
    if kind == "k":
        return "[" + ",".join(f"{name}={_go_text(payload[name])}" for name in sorted(payload)) + "]"
    if kind == "v":
        return f"[={_go_text(payload)}]"
    return f"[{payload}]"


def path_text(path: Sequence[str]) -> str:
    return "".join(element_text(e) for e in path)


# ---- nodes ---------------------------------------------------------------------------------------------------


def is_member(node: FieldSet) -> bool:
    return not node or SELF in node


def children(node: FieldSet) -> FieldSet:
    if SELF not in node:
        return node
    return {k: v for k, v in node.items() if k != SELF}


def make_node(member: bool, below: FieldSet) -> FieldSet | None:
    """The node for a path that is (or is not) a member and has `below` under it; None when it would be empty."""
    if not below:
        return {} if member else None
    return {SELF: {}, **below} if member else below


def put_element(out: FieldSet, element: str, member: bool, below: FieldSet) -> None:
    """Set `out[element]` to the node for (`member`, `below`); an empty node is left out."""
    node = make_node(member, below)
    if node is not None:
        out[element] = node


# ---- set operations (upstream's fieldpath.Set) -----------------------------------------------------------------


def union(a: FieldSet, b: FieldSet) -> FieldSet:
    if not a:
        return b
    if not b:
        return a
    out = dict(a)
    for element, node in b.items():
        mine = out.get(element)
        if mine is None:
            out[element] = node
        elif mine is not node:
            put_element(out, element, is_member(mine) or is_member(node), union(children(mine), children(node)))
    return out


def difference(a: FieldSet, b: FieldSet) -> FieldSet:
    """Members of `a` that are not members of `b`; what lies under a removed member stays (upstream's Difference)."""
    if not a or not b:
        return a
    out: FieldSet = {}
    for element, node in a.items():
        other = b.get(element)
        if other is None:
            out[element] = node
            continue
        put_element(out, element, is_member(node) and not is_member(other), difference(children(node), children(other)))
    return out


def recursive_difference(a: FieldSet, b: FieldSet) -> FieldSet:
    """`a` without the members of `b` and everything under them."""
    if not a or not b:
        return a
    out: FieldSet = {}
    for element, node in a.items():
        other = b.get(element)
        if other is None:
            out[element] = node
        elif not is_member(other):
            put_element(out, element, is_member(node), recursive_difference(children(node), other))
    return out


def intersection(a: FieldSet, b: FieldSet) -> FieldSet:
    if not a or not b:
        return EMPTY
    out: FieldSet = {}
    for element, node in a.items():
        other = b.get(element)
        if other is not None:
            put_element(
                out, element, is_member(node) and is_member(other), intersection(children(node), children(other))
            )
    return out


def has(fields: FieldSet, path: Sequence[str]) -> bool:
    node: FieldSet | None = None
    current = fields
    for element in path:
        node = current.get(element)
        if node is None:
            return False
        current = children(node)
    return node is not None and is_member(node)


def with_prefix(fields: FieldSet, element: str) -> FieldSet:
    node = fields.get(element)
    return EMPTY if node is None else children(node)


def from_paths(paths: Sequence[Path]) -> FieldSet:
    out: FieldSet = {}
    for path in paths:
        out = union(out, _single(path))
    return out


def _single(path: Path) -> FieldSet:
    node: FieldSet = {}
    for element in reversed(path):
        node = {element: node}
    return node


def members(fields: FieldSet, prefix: Path = ()) -> Iterator[Path]:
    """Every path in the set, as upstream's Set.Iterate visits them: a node's members first, then its children."""
    ordered = sorted(fields, key=order)
    for element in ordered:
        if element != SELF and is_member(fields[element]):
            yield (*prefix, element)
    for element in ordered:
        below = children(fields[element]) if element != SELF else EMPTY
        if below:
            yield from members(below, (*prefix, element))


# ---- wire form -----------------------------------------------------------------------------------------------


def to_wire(fields: FieldSet) -> FieldSet:
    """The set as upstream serialises it: elements in upstream's order, `.` first (a copy; `fields` is unchanged)."""
    return {element: to_wire(node) if node else {} for element, node in _ordered(fields)}


def _ordered(fields: FieldSet) -> list[tuple[str, FieldSet]]:
    items = sorted(fields.items())  # `.` and `f:` elements sort as upstream orders them by their text alone
    if len(items) > 1 and items[-1][0][0] not in "f.":
        first = items[:1] if items[0][0] == SELF else []
        rest = items[len(first) :]
        if len(rest) > 1:
            rest.sort(key=lambda item: order(item[0]))
        items = first + rest
    return items


def from_wire(document: Any) -> FieldSet:
    """A fieldsV1 document as a set, checked as upstream's decoder checks it (raises PathError), with elements in
    their canonical spelling."""
    if not isinstance(document, dict):
        raise PathError("expected an object")
    out: FieldSet = {}
    for element, node in document.items():
        if not isinstance(element, str):
            raise PathError("expected a string key")
        if element == SELF:
            if node != {}:
                raise PathError("expected {} for '.'")
            continue
        below = from_wire(node)
        name = element if element.startswith("f:") else canonical(element)
        member = not node or SELF in node
        if name in out:  # two spellings of one element
            below = union(children(out[name]), below)
            member = member or is_member(out[name])
        put_element(out, name, member, below)
    return out
