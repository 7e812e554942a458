"""Structured merge of JSON objects by schema: what server-side apply merges, compares and owns.

This is structured-merge-diff's model (`typed` in sigs.k8s.io/structured-merge-diff) reimplemented over plain JSON:

* A `Node` says how a value is merged. Structs and maps are granular (each field or key on its own) unless marked
  atomic; lists are `atomic` (replaced whole), `set` (scalars, by value) or `map` (objects, by their
  `x-kubernetes-list-map-keys`). Whatever the schema does not describe is *deduced*: maps granular, lists atomic.
* `field_set(obj)` is the set of paths an object sets (what an applier owns), `compare(old, new)` the paths added,
  modified and removed by a write (what an updater owns, and what others lose), `merge(live, config)` an applied
  configuration over the live object, `remove(obj, paths)` an object without some paths (pruning).

Values are JSON as decoded (dicts, lists, scalars); a field set is a `fieldpath.FieldSet`. Nothing here changes
its arguments: results share unchanged parts with them, so a caller that mutates a result copies it first.

Deliberate leniency: a value whose shape does not match its schema (a list where a struct is declared) is compared
and merged as a leaf instead of failing; `check(config)` reports such problems where upstream refuses an applied
configuration ("failed to create typed patch object").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from tinykube.api import fieldpath as fp
from tinykube.api.fieldpath import FieldSet

SCALAR, STRUCT, MAP, LIST, DEDUCED = range(5)
ATOMIC, SET, KEYED = "atomic", "set", "map"


class _Absent:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Final = _Absent()  # a field that is not there at all (JSON null is a value)


@dataclass(eq=False, slots=True)
class Node:
    """How values at one place of a schema are merged. Structs resolve their fields lazily (schemas recurse)."""

    kind: int
    atomic: bool = False
    list_type: str = ATOMIC
    keys: tuple[str, ...] = ()
    key_defaults: dict[str, Any] = field(default_factory=dict)
    scalar: str = "untyped"  # string | numeric | boolean | untyped
    elem: Node | None = None  # list items, map values, a struct's undeclared keys (None: not allowed)
    resolve_fields: Callable[[], dict[str, Node]] | None = None
    _fields: dict[str, Node] | None = None

    @property
    def fields(self) -> dict[str, Node]:
        if self._fields is None:
            self._fields = self.resolve_fields() if self.resolve_fields else {}
        return self._fields

    def child(self, name: str) -> Node:
        if self.kind == STRUCT:
            found = self.fields.get(name)
            if found is not None:
                return found
        return self.elem or DEDUCED_NODE

    def declares(self, name: str) -> bool:
        return self.kind == STRUCT and name in self.fields


DEDUCED_NODE: Final = Node(DEDUCED)
SCALAR_NODE: Final = Node(SCALAR)


class Duplicate(ValueError):
    """An associative list holds two items with one key (allowed in live objects, never in an applied one)."""


class ItemError(ValueError):
    """A list item that cannot be named: a missing map key, a map in a set, null."""


# ---- list items -----------------------------------------------------------------------------------------------


def _associative(node: Node, value: Any) -> bool:
    return node.kind == LIST and node.list_type != ATOMIC and isinstance(value, list)


def item_element(node: Node, i: int, item: Any) -> str:
    """The path element of a list item (raises ItemError as upstream's listItemToPathElement refuses it)."""
    if node.list_type == KEYED:
        if not isinstance(item, dict):
            raise ItemError(
                "associative list with keys may not have a null element"
                if item is None
                else "associative list with keys may not have non-map elements"
            )
        fields: dict[str, Any] = {}
        for name in node.keys:
            if name in item:
                fields[name] = item[name]
            elif name in node.key_defaults:
                fields[name] = node.key_defaults[name]
            else:
                raise ItemError(
                    f'associative list with keys has an element that omits key field "{name}" '
                    "(and doesn't have default value)"
                )
        return fp.key(fields)
    if node.list_type == SET:
        if isinstance(item, dict):
            raise ItemError("associative list without keys has an element that's a map type")
        if isinstance(item, list):
            raise ItemError("not supported: associative list with lists as elements")
        if item is None:
            raise ItemError("associative list without keys has an element that's an explicit null")
        return fp.value(item)
    return fp.index(i)


def _elements(node: Node, items: list[Any]) -> Iterator[tuple[str | None, Any]]:
    for i, item in enumerate(items):
        try:
            yield item_element(node, i, item), item
        except ItemError:
            yield None, item  # unnameable: kept, never owned (upstream fails the write here)


# ---- field sets of values -------------------------------------------------------------------------------------


def _shape(value: Any, node: Node) -> int:
    """How a value is walked here: MAP (granular keys), LIST (associative items), or SCALAR (a leaf)."""
    if isinstance(value, dict):
        if node.kind in (STRUCT, MAP, DEDUCED) and not node.atomic:
            return MAP
    elif isinstance(value, list) and _associative(node, value):
        return LIST
    return SCALAR


def field_set(obj: Any, node: Node) -> FieldSet:
    """The paths `obj` sets (upstream's ToFieldSet): scalars, atomic values and list items are members; a struct
    field is not, unless it is null or `{}`; a map's keys (labels) always are."""
    out: FieldSet = {}
    _fill(out, obj, node)
    return out


def _fill(out: FieldSet, value: Any, node: Node) -> None:
    shape = _shape(value, node)
    if shape == MAP:
        for name, item in value.items():
            below: FieldSet = {}
            child = node.child(name)
            leaf = _shape(item, child) == SCALAR
            if not leaf:
                _fill(below, item, child)
            member = leaf or item is None or item == {} or not node.declares(name)
            fp.put_element(out, fp.field(name), member, below)
    elif shape == LIST:
        elem = node.elem or DEDUCED_NODE
        for element, item in _elements(node, value):
            if element is None:
                continue
            below = {}
            if _shape(item, elem) != SCALAR:
                _fill(below, item, elem)
            existing = out.get(element)
            below = below if existing is None else fp.union(fp.children(existing), below)
            fp.put_element(out, element, True, below)


# ---- compare ---------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Comparison:
    added: FieldSet
    modified: FieldSet
    removed: FieldSet

    def changed(self) -> FieldSet:
        return fp.union(self.modified, self.added)

    def empty(self) -> bool:
        return not (self.added or self.modified or self.removed)


def compare(old: Any, new: Any, node: Node, zero: Any = None) -> Comparison:
    """The paths a write from `old` to `new` added, modified and removed (upstream's TypedValue.Compare).

    A granular map or list item that appears is added itself as well as what is in it (`.` in fieldsV1), one that
    goes away is removed likewise. `zero` is the kind's zero value (upstream compares typed objects, where structs
    that are not pointers are always there): its fields count as present, empty, on either side."""
    added: FieldSet = {}
    modified: FieldSet = {}
    removed: FieldSet = {}
    if old != new:
        _compare_maps(old, new, node, zero, added, modified, removed)
    return Comparison(added, modified, removed)


def _compare_maps(
    old: dict[str, Any], new: dict[str, Any], node: Node, zero: Any, a: FieldSet, m: FieldSet, r: FieldSet
) -> None:
    zeros = zero if type(zero) is dict else _NO_ZEROS
    fields = node.fields if node.kind == STRUCT else _NO_FIELDS
    elem = node.elem or DEDUCED_NODE
    for name, n in new.items():
        o = old.get(name, ABSENT)
        below = zeros.get(name, ABSENT)
        if o is ABSENT and below is not ABSENT:
            o = below
        if o == n:
            continue
        _compare(o, n, fields.get(name, elem), below, "f:" + name, a, m, r)
    for name, o in old.items():
        if name in new:
            continue
        below = zeros.get(name, ABSENT)
        if o == below:
            continue
        _compare(o, below, fields.get(name, elem), below, "f:" + name, a, m, r)


_NO_ZEROS: Final[dict[str, Any]] = {}
_NO_FIELDS: Final[dict[str, Node]] = {}


def _union_keys(old: dict[str, Any], new: dict[str, Any]) -> Iterator[str]:
    yield from old
    for name in new:
        if name not in old:
            yield name


def _walk_shape(o: Any, n: Any, node: Node) -> int:
    """MAP or LIST when both sides (absent or null counting as empty) can be walked granularly, else SCALAR (a
    leaf). Both empty is a leaf too: upstream keeps empty and null apart so."""
    kind = node.kind
    if kind == SCALAR or node.atomic:
        return SCALAR
    if kind == LIST:
        if node.list_type == ATOMIC:
            return SCALAR
        want: type = list
    else:
        want = dict
    if not (o is ABSENT or o is None or type(o) is want) or not (n is ABSENT or n is None or type(n) is want):
        return SCALAR
    if not o and not n:
        return SCALAR
    return MAP if want is dict else LIST


def _compare(o: Any, n: Any, node: Node, zero: Any, element: str, a: FieldSet, m: FieldSet, r: FieldSet) -> None:
    shape = _walk_shape(o, n, node)
    if shape == SCALAR:
        target = a if o is ABSENT else r if n is ABSENT else m
        target[element] = {}
        return
    ba: FieldSet = {}
    bm: FieldSet = {}
    br: FieldSet = {}
    if shape == MAP:
        _compare_maps(o or _NO_ZEROS, n or _NO_ZEROS, node, zero, ba, bm, br)
    else:
        _compare_lists(o or [], n or [], node, ba, bm, br)
    if ba or o is ABSENT:
        a[element] = {fp.SELF: {}, **ba} if o is ABSENT and ba else ba
    if bm:
        m[element] = bm
    if br or n is ABSENT:
        r[element] = {fp.SELF: {}, **br} if n is ABSENT and br else br


def created(new: dict[str, Any], node: Node, zero: Any = None) -> FieldSet:
    """What a create of `new` changes: `compare(zero, new).changed()`, in one walk and already in upstream's order
    (the create path runs on every POST, so it has a walker of its own)."""
    out: FieldSet = {}
    _created_map(new, node, zero, out)
    return out


def _created_map(obj: dict[str, Any], node: Node, zero: Any, out: FieldSet) -> None:
    zeros = zero if type(zero) is dict else _NO_ZEROS
    fields = node.fields if node.kind == STRUCT else _NO_FIELDS
    elem = node.elem or DEDUCED_NODE
    for name in sorted(obj):
        value, below = obj[name], zeros.get(name, ABSENT)
        if value != below:
            _created_value(value, fields.get(name, elem), below, "f:" + name, out)


def _created_value(value: Any, node: Node, below: Any, element: str, out: FieldSet) -> None:
    shape = _walk_shape(below, value, node)
    if shape == SCALAR:
        out[element] = {}
        return
    sub: FieldSet = {fp.SELF: {}} if below is ABSENT else {}
    if shape == MAP:
        _created_map(value, node, below, sub)
    else:
        _created_list(value, node, sub)
    if below is ABSENT:
        out[element] = sub if len(sub) > 1 else {}
    elif sub:
        out[element] = sub


def _created_list(items: list[Any], node: Node, out: FieldSet) -> None:
    elem = node.elem or DEDUCED_NODE
    found: dict[str, list[Any]] = {}
    for element, item in _elements(node, items):
        if element is not None:
            found.setdefault(element, []).append(item)
    for element in sorted(found, key=fp.order) if len(found) > 1 else found:
        same = found[element]
        if len(same) > 1:
            out[element] = {}  # duplicates are owned whole
        else:
            _created_value(same[0], elem, ABSENT, element, out)


def _index(node: Node, items: list[Any]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for element, item in _elements(node, items):
        if element is not None:
            found.setdefault(element, []).append(item)
    return found


def _compare_lists(old: list[Any], new: list[Any], node: Node, a: FieldSet, m: FieldSet, r: FieldSet) -> None:
    before, after = _index(node, old), _index(node, new)
    elem = node.elem or DEDUCED_NODE
    for element in _union_keys(before, after):
        left, right = before.get(element, []), after.get(element, [])
        if len(left) <= 1 and len(right) <= 1:
            o = left[0] if left else ABSENT
            n = right[0] if right else ABSENT
            if o is ABSENT or n is ABSENT or o != n:
                _compare(o, n, elem, None, element, a, m, r)
        elif len(left) >= 2 and len(right) >= 2:
            if left != right:
                m[element] = {}
        elif len(left) >= 2:  # duplicates went away
            if right:
                _compare(ABSENT, right[0], elem, None, element, a, m, r)
            r[element] = {}
        else:  # duplicates appeared
            if left:
                _compare(left[0], ABSENT, elem, None, element, a, m, r)
            a[element] = {}


# ---- merge -----------------------------------------------------------------------------------------------------


def merge(live: Any, config: Any, node: Node) -> Any:
    """`config` applied over `live` (upstream's TypedValue.Merge): maps field by field, associative lists item by
    item (the config's order for its items, live items it does not name kept in place), the rest replaced.
    Nulls in the config are kept (as upstream, where a null resets the field and is owned)."""
    return _merge(live, config, node)


def _merge(live: Any, config: Any, node: Node) -> Any:
    if config is ABSENT:
        return live
    if live is ABSENT:
        return config
    shape = _walk_shape(live, config, node)
    if shape == SCALAR:
        return config
    if shape == MAP:
        return _merge_maps(live if isinstance(live, dict) else {}, config if isinstance(config, dict) else {}, node)
    return _merge_lists(live if isinstance(live, list) else [], config if isinstance(config, list) else [], node)


def _merge_maps(live: dict[str, Any], config: dict[str, Any], node: Node) -> Any:
    out = dict(live)
    for name, item in config.items():
        out[name] = _merge(live.get(name, ABSENT), item, node.child(name))
    return out if out else None


def _named(node: Node, items: list[Any]) -> list[tuple[str, Any]]:
    return [(e, item) for e, item in _elements(node, items) if e is not None]


def _merge_lists(live: list[Any], config: list[Any], node: Node) -> Any:
    """Upstream's ordering: items in the config's order; live items the config does not name stay where they were,
    relative to the shared items around them."""
    elem = node.elem or DEDUCED_NODE
    left, right = _named(node, live), _named(node, config)
    observed_left: dict[str, Any] = {}
    for element, item in left:
        observed_left[element] = None if element in observed_left else item  # duplicates merge with nothing
    observed_right = dict(right)
    shared = [e for e, _ in right if e in observed_left]
    next_shared = shared.pop(0) if shared else None
    merged: set[str] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(left) or ri < len(right):
        if li < len(left) and ri < len(right):
            element = left[li][0]
            if element == right[ri][0]:
                merged.add(element)
                out.append(_merge(_or_absent(observed_left[element]), observed_right[element], elem))
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if element in observed_right and next_shared is not None and next_shared != element:
                li += 1  # a shared item, but not the one due in this round
                continue
        if li < len(left):
            element, item = left[li]
            if element not in observed_right:
                out.append(item)
                li += 1
                continue
            if element in merged:
                li += 1
                continue
        if ri < len(right):
            element = right[ri][0]
            merged.add(element)
            out.append(_merge(_or_absent(observed_left.get(element, ABSENT)), observed_right[element], elem))
            ri += 1
            if next_shared is not None and next_shared == element:
                next_shared = shared.pop(0) if shared else None
    return out if out else None


def _or_absent(item: Any) -> Any:
    return ABSENT if item is None else item


# ---- remove ----------------------------------------------------------------------------------------------------


def remove(obj: Any, paths: FieldSet, node: Node) -> Any:
    """`obj` without the members of `paths` (fields, map keys, list items) and what is under them; a map or list
    left empty becomes null (upstream's RemoveItems)."""
    if not paths:
        return obj
    shape = _shape(obj, node)
    if shape == MAP:
        out: dict[str, Any] = {}
        for name, item in obj.items():
            element = fp.field(name)
            found = paths.get(element)
            if found is None:
                out[name] = item
            elif not fp.is_member(found):
                out[name] = remove(item, found, node.child(name))
        return out if out else None
    if shape == LIST:
        elem = node.elem or DEDUCED_NODE
        items: list[Any] = []
        for named, item in _elements(node, obj):
            below = paths.get(named) if named is not None else None
            if below is None:
                items.append(item)
            elif not fp.is_member(below):
                items.append(remove(item, below, elem))
        return items if items else None
    return obj


def ensure_named_members(paths: FieldSet, node: Node) -> FieldSet:
    """`paths` with every struct field that has something under it made a member itself (upstream's
    EnsureNamedFieldsAreMembers), so that removing it removes the whole field."""
    out: FieldSet = {}
    for element, found in paths.items():
        if element == fp.SELF:
            continue
        below = fp.children(found)
        if node.kind == STRUCT and element.startswith("f:"):
            child = node.child(element[2:])
            member = fp.is_member(found) or node.declares(element[2:])
        elif node.kind == LIST:
            child, member = node.elem or DEDUCED_NODE, fp.is_member(found)
        else:
            child, member = node.child(element[2:]) if element.startswith("f:") else DEDUCED_NODE, fp.is_member(found)
        fp.put_element(out, element, member, ensure_named_members(below, child) if below else below)
    return out


def drop_nulls(obj: Any) -> Any:
    """What a null leaves behind once stored: nothing (upstream decodes null into an unset field)."""
    if isinstance(obj, dict):
        return {k: drop_nulls(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [drop_nulls(v) for v in obj]
    return obj


# ---- checking an applied configuration ------------------------------------------------------------------------


def check(config: Any, node: Node) -> list[str]:
    """What upstream's typed conversion refuses in an applied configuration, as `<path>: <problem>` lines: fields
    the schema does not declare, duplicate or unnameable list items, scalars of the wrong type."""
    problems: list[str] = []
    _check(config, node, "", problems)
    return problems


_SCALAR_NAMES: Final = {"string": "string", "numeric": "numeric (int or float)", "boolean": "boolean"}


def _check(value: Any, node: Node, path: str, problems: list[str]) -> None:
    if value is None:
        return
    if node.kind == SCALAR:
        _check_scalar(value, node, path, problems)
    elif node.kind in (STRUCT, MAP) and isinstance(value, dict):
        for name, item in value.items():
            child = f"{path}.{name}"
            if node.kind == STRUCT and name not in node.fields and node.elem is None:
                problems.append(f"{child}: field not declared in schema")
            else:
                _check(item, node.child(name), child, problems)
    elif node.kind in (STRUCT, MAP) and not node.atomic:
        problems.append(f"{path}: expected map, got {_type_name(value)}")
    elif node.kind == LIST and isinstance(value, list):
        _check_list(value, node, path, problems)
    elif node.kind == LIST:
        problems.append(f"{path}: expected list, got {_type_name(value)}")


def _check_scalar(value: Any, node: Node, path: str, problems: list[str]) -> None:
    wanted = node.scalar
    ok = {
        "string": isinstance(value, str),
        "numeric": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
    }.get(wanted, not isinstance(value, dict | list))
    if not ok:
        expected = _SCALAR_NAMES.get(wanted, "any scalar")
        problems.append(f"{path}: expected {expected}, got {_type_name(value)}")


def _check_list(items: list[Any], node: Node, path: str, problems: list[str]) -> None:
    elem = node.elem or DEDUCED_NODE
    if node.list_type == ATOMIC:
        for i, item in enumerate(items):
            _check(item, elem, f"{path}[{i}]", problems)
        return
    seen: set[str] = set()
    for i, item in enumerate(items):
        try:
            element = item_element(node, i, item)
        except ItemError as err:
            problems.append(f"{path}: element {i}: {err}")
            continue
        text = fp.element_text(element)
        if element in seen:
            problems.append(f"{path}: duplicate entries for key {text}")
            continue
        seen.add(element)
        _check(item, elem, f"{path}{text}", problems)


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else "null"
