"""Structured merge by schema (field sets of values, compare, merge, remove) over a small hand-made schema.

The schema is a pod in miniature, with one field of each merge kind: a granular map (`labels`), a set
(`finalizers`), an associative list keyed by one field (`containers`) and by two with a default (`ports`), an
atomic list (`args`) and an atomic map (`selector`).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st_

from tinykube.api import fieldpath as fp
from tinykube.api import structured as st
from tinykube.api.fieldpath import SELF

STRING = st.Node(st.SCALAR, scalar="string")
NUMBER = st.Node(st.SCALAR, scalar="numeric")


def struct(fields: dict[str, st.Node], *, atomic: bool = False) -> st.Node:
    return st.Node(st.STRUCT, atomic=atomic, resolve_fields=lambda: fields)


PORT = struct({"containerPort": NUMBER, "protocol": STRING, "name": STRING})
PORTS = st.Node(st.LIST, list_type=st.KEYED, keys=("containerPort", "protocol"), key_defaults={"protocol": "TCP"})
PORTS.elem = PORT
CONTAINER = struct(
    {
        "name": STRING,
        "image": STRING,
        "args": st.Node(st.LIST, elem=STRING),
        "ports": PORTS,
        "resources": struct({"limits": st.Node(st.MAP, elem=STRING)}),
    }
)
POD = struct(
    {
        "metadata": struct(
            {
                "name": STRING,
                "labels": st.Node(st.MAP, elem=STRING),
                "finalizers": st.Node(st.LIST, list_type=st.SET, elem=STRING),
            }
        ),
        "spec": struct(
            {
                "containers": st.Node(st.LIST, list_type=st.KEYED, keys=("name",), elem=CONTAINER),
                "selector": st.Node(st.MAP, atomic=True, elem=STRING),
                "replicas": NUMBER,
            }
        ),
        "status": st.DEDUCED_NODE,
    }
)

C = fp.key({"name": "c"})
P80 = fp.key({"containerPort": 80, "protocol": "TCP"})


def pod(*containers: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", **meta}, "spec": {"containers": list(containers)}}


# ---- field sets ------------------------------------------------------------------------------------------------


def test_field_set_of_an_object() -> None:
    obj = pod(
        {"name": "c", "image": "x", "args": ["a"], "ports": [{"containerPort": 80}], "resources": {}},
        labels={"app": "web"},
        finalizers=["f"],
    )
    obj["spec"]["selector"] = {"app": "web"}
    assert st.field_set(obj, POD) == {
        "f:metadata": {
            "f:name": {},
            "f:labels": {"f:app": {}},  # a map's keys are members; the struct field holding them is not
            "f:finalizers": {fp.value("f"): {}},
        },
        "f:spec": {
            "f:containers": {
                C: {  # list items are members themselves
                    SELF: {},
                    "f:name": {},
                    "f:image": {},
                    "f:args": {},  # atomic: a leaf
                    "f:ports": {P80: {SELF: {}, "f:containerPort": {}}},  # the key's default named the item
                    "f:resources": {},  # an empty struct is a leaf
                }
            },
            "f:selector": {},
        },
    }


def test_field_set_of_unknown_fields_is_deduced() -> None:
    obj = {"status": {"a": {"b": 1}, "list": [1, 2]}}
    assert st.field_set(obj, POD) == {
        "f:status": {"f:a": {SELF: {}, "f:b": {}}, "f:list": {}}  # deduced maps own their keys, lists are atomic
    }


# ---- compare ---------------------------------------------------------------------------------------------------


def test_compare_of_a_create_marks_new_granular_nodes() -> None:
    new = pod({"name": "c", "image": "x"}, labels={"app": "web"})
    found = st.compare({"metadata": {}, "spec": {}}, new, POD)
    assert found.added == {
        "f:metadata": {"f:name": {}, "f:labels": {SELF: {}, "f:app": {}}},
        "f:spec": {"f:containers": {SELF: {}, C: {SELF: {}, "f:name": {}, "f:image": {}}}},
    }
    assert not found.modified and not found.removed
    # with the zero value saying `containers` is always there (as null), it is not added itself
    zero = {"metadata": {}, "spec": {"containers": None}}
    assert st.compare({"metadata": {}, "spec": {}}, new, POD, zero).added["f:spec"] == {
        "f:containers": {C: {SELF: {}, "f:name": {}, "f:image": {}}}
    }
    assert st.created(new, POD, zero) == st.compare(zero, new, POD, zero).changed()


def test_compare_modified_and_removed() -> None:
    old = pod({"name": "c", "image": "x", "args": ["1"]}, {"name": "d", "image": "y"}, labels={"a": "1", "b": "2"})
    new = pod({"name": "c", "image": "z", "args": ["1", "2"]}, labels={"a": "1"})
    found = st.compare(old, new, POD)
    assert found.modified == {"f:spec": {"f:containers": {C: {"f:image": {}, "f:args": {}}}}}
    assert found.removed == {
        "f:metadata": {"f:labels": {"f:b": {}}},
        "f:spec": {"f:containers": {fp.key({"name": "d"}): {SELF: {}, "f:name": {}, "f:image": {}}}},
    }
    assert not found.added
    assert st.compare(old, old, POD).empty()


def test_compare_keeps_empty_and_null_apart() -> None:
    assert st.compare({"spec": {}}, {"spec": {"selector": {}}}, POD).added == {"f:spec": {"f:selector": {}}}
    assert st.compare({"metadata": {"labels": {}}}, {"metadata": {"labels": None}}, POD).modified == {
        "f:metadata": {"f:labels": {}}
    }


def test_compare_of_duplicate_items() -> None:
    dup = [{"name": "c", "image": "a"}, {"name": "c", "image": "b"}]
    found = st.compare(pod(), {**pod(), "spec": {"containers": dup}}, POD)
    assert found.added == {"f:spec": {"f:containers": {C: {}}}}  # owned whole, as upstream


# ---- merge -----------------------------------------------------------------------------------------------------


def names(obj: Any) -> list[str]:
    return [c["name"] for c in obj["spec"]["containers"]]


@pytest.mark.parametrize(
    ("live", "config", "merged"),
    [
        pytest.param("acb", "cd", "acbd", id="new-items-after-the-shared-one"),
        pytest.param("ab", "ba", "ba", id="config-order-for-its-items"),
        pytest.param("abc", "ca", "bca", id="unnamed-items-keep-their-place"),
        pytest.param("", "xy", "xy", id="empty-live"),
    ],
)
def test_merge_orders_associative_lists_as_upstream(live: str, config: str, merged: str) -> None:
    left = pod(*({"name": n} for n in live))
    right = pod(*({"name": n, "image": "i"} for n in config))
    assert names(st.merge(left, right, POD)) == list(merged)


def test_merge_is_by_kind_of_field() -> None:
    live = pod(
        {"name": "c", "image": "x", "args": ["1", "2"], "ports": [{"containerPort": 80, "protocol": "TCP"}]},
        labels={"a": "1"},
        finalizers=["x"],
    )
    live["spec"]["selector"] = {"a": "1", "b": "2"}
    config = pod(
        {"name": "c", "args": ["3"], "ports": [{"containerPort": 80, "name": "http"}]},
        labels={"b": "2"},
        finalizers=["y"],
    )
    config["spec"]["selector"] = {"c": "3"}
    merged = st.merge(live, config, POD)
    assert merged["metadata"]["labels"] == {"a": "1", "b": "2"}  # granular map
    assert merged["metadata"]["finalizers"] == ["x", "y"]  # set
    assert merged["spec"]["selector"] == {"c": "3"}  # atomic map: replaced
    container = merged["spec"]["containers"][0]
    assert container["args"] == ["3"]  # atomic list: replaced
    assert container["image"] == "x"  # kept
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP", "name": "http"}]  # same key by default
    assert live["spec"]["containers"][0]["args"] == ["1", "2"]  # arguments unchanged


# ---- remove ------------------------------------------------------------------------------------------------------


def test_remove_items_and_fields() -> None:
    obj = pod({"name": "c", "image": "x"}, {"name": "d"}, labels={"a": "1", "b": "2"})
    gone = {
        "f:metadata": {"f:labels": {"f:a": {}}},
        "f:spec": {"f:containers": {fp.key({"name": "d"}): {}, C: {"f:image": {}}}},
    }
    assert st.remove(obj, gone, POD) == pod({"name": "c"}, labels={"b": "2"})
    assert st.remove(obj, {"f:metadata": {"f:labels": {"f:a": {}, "f:b": {}}}}, POD)["metadata"]["labels"] is None


def test_ensure_named_members() -> None:
    fields = {"f:spec": {"f:containers": {C: {"f:image": {}}}}, "f:metadata": {"f:labels": {"f:a": {}}}}
    assert st.ensure_named_members(fields, POD) == {
        "f:spec": {SELF: {}, "f:containers": {SELF: {}, C: {"f:image": {}}}},
        "f:metadata": {SELF: {}, "f:labels": {SELF: {}, "f:a": {}}},  # a map's entries do not become members
    }


# ---- checking applied configurations ---------------------------------------------------------------------------


def test_check_reports_what_upstream_refuses() -> None:
    config = pod({"name": "c", "bogus": 1}, {"name": "c"}, {"image": "x"})
    config["spec"]["replicas"] = "three"
    assert st.check(config, POD) == [
        '.spec.containers[name="c"].bogus: field not declared in schema',
        '.spec.containers: duplicate entries for key [name="c"]',
        '.spec.containers: element 2: associative list with keys has an element that omits key field "name" '
        "(and doesn't have default value)",
        ".spec.replicas: expected numeric (int or float), got string",
    ]
    assert st.check(pod({"name": "c", "ports": [{"containerPort": 80}]}), POD) == []


# ---- properties --------------------------------------------------------------------------------------------------

_names = st_.sampled_from("abcd")
_ports = st_.lists(
    st_.fixed_dictionaries(
        {"containerPort": st_.sampled_from([80, 443])}, optional={"protocol": st_.sampled_from(["TCP", "UDP"])}
    ),
    max_size=3,
    unique_by=lambda p: (p["containerPort"], p.get("protocol", "TCP")),
)
_containers = st_.lists(
    st_.fixed_dictionaries(
        {"name": _names},
        optional={
            "image": st_.sampled_from(["x", "y"]),
            "args": st_.lists(st_.sampled_from("12"), max_size=2),
            "ports": _ports,
        },
    ),
    max_size=3,
    unique_by=lambda c: c["name"],
)
_labels = st_.dictionaries(_names, st_.sampled_from("12"), max_size=3)
pods = st_.fixed_dictionaries(
    {},
    optional={
        "metadata": st_.fixed_dictionaries(
            {}, optional={"labels": _labels, "finalizers": st_.lists(_names, unique=True, max_size=3)}
        ),
        "spec": st_.fixed_dictionaries(
            {}, optional={"containers": _containers, "selector": _labels, "replicas": st_.integers(0, 3)}
        ),
    },
)


@settings(max_examples=300, deadline=None)
@given(pods, pods)
def test_merging_a_configuration_twice_is_merging_it_once(live: dict[str, Any], config: dict[str, Any]) -> None:
    before = copy.deepcopy((live, config))
    once = st.merge(live, config, POD)
    assert st.merge(once, config, POD) == once
    assert (live, config) == before  # nothing changed in place


def _as_sets(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with its set-typed list (finalizers) in a fixed order: the order of a set is no field of it."""
    meta = obj.get("metadata") or {}
    if "finalizers" not in meta:
        return obj
    return {**obj, "metadata": {**meta, "finalizers": sorted(meta["finalizers"])}}


@settings(max_examples=300, deadline=None)
@given(pods, pods)
@example({"metadata": {"finalizers": ["a", "c", "d"]}}, {"metadata": {"finalizers": ["a", "d", "c"]}})  # found by CI
def test_compare_finds_a_change_exactly_when_there_is_one(a: dict[str, Any], b: dict[str, Any]) -> None:
    found = st.compare(a, b, POD)
    assert found.empty() == (_as_sets(a) == _as_sets(b))
    # what is added or modified is set by `b`, what is removed was set by `a`
    assert not fp.difference(fp.union(found.added, found.modified), _every_path(b, POD))
    assert not fp.difference(found.removed, _every_path(a, POD))


@settings(max_examples=300, deadline=None)
@given(pods, pods)
def test_a_merged_configuration_shows_every_value_it_set(live: dict[str, Any], config: dict[str, Any]) -> None:
    merged = st.merge(live, config, POD)
    assert st.compare(config, merged, POD).modified == {}  # nothing the config set has another value


def _every_path(value: Any, node: st.Node) -> dict[str, Any]:
    """Every path an object has, each a member: fields and keys, list items, whatever their value."""
    out: dict[str, Any] = {}
    if isinstance(value, dict) and node.kind != st.SCALAR and not node.atomic:
        for name, item in value.items():
            out[fp.field(name)] = {SELF: {}, **_every_path(item, node.child(name))}
    elif isinstance(value, list) and node.kind == st.LIST and node.list_type != st.ATOMIC:
        for i, item in enumerate(value):
            out[st.item_element(node, i, item)] = {SELF: {}, **_every_path(item, node.elem or st.DEDUCED_NODE)}
    return out


@settings(max_examples=300, deadline=None)
@given(pods)
def test_the_create_walker_is_compare_from_the_zero_value(new: dict[str, Any]) -> None:
    zero = {"metadata": {}, "spec": {"containers": None, "selector": {}}}
    made = st.created(new, POD, zero)
    assert made == st.compare(zero, new, POD, zero).changed()
    assert json.dumps(made) == json.dumps(fp.to_wire(made))  # and already in upstream's order, all through
