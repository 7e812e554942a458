"""Field sets in their wire form (fieldsV1): path elements, set algebra, upstream's order, decoding."""

from __future__ import annotations

from typing import Any

import pytest

from tinykube.api import fieldpath as fp
from tinykube.api.fieldpath import SELF


def paths(*items: tuple[str, ...]) -> dict[str, Any]:
    return fp.from_paths(list(items))


@pytest.mark.parametrize(
    ("element", "text"),
    [
        pytest.param(fp.field("replicas"), ".replicas", id="field"),
        pytest.param(fp.key({"name": "c"}), '[name="c"]', id="key"),
        pytest.param(fp.key({"protocol": "TCP", "containerPort": 80}), '[containerPort=80,protocol="TCP"]', id="keys"),
        pytest.param(fp.value("example.com/f"), '[="example.com/f"]', id="set-value"),
        pytest.param(fp.value(3), "[=3]", id="set-number"),
        pytest.param(fp.index(2), "[2]", id="index"),
    ],
)
def test_elements_print_as_upstream(element: str, text: str) -> None:
    assert fp.element_text(element) == text


def test_key_elements_sort_their_fields_and_write_json_as_go() -> None:
    assert fp.key({"protocol": "TCP", "containerPort": 80}) == 'k:{"containerPort":80,"protocol":"TCP"}'
    assert fp.value("a<b&c>") == 'v:"a\\u003cb\\u0026c\\u003e"'  # Go's encoder escapes HTML characters
    assert fp.key({"name": "é"}) == 'k:{"name":"é"}'
    assert fp.go_json(1.0) == "1" and fp.go_json(1.5) == "1.5" and fp.go_json(None) == "null"


def test_path_text() -> None:
    path = ("f:spec", "f:template", "f:spec", "f:containers", fp.key({"name": "c"}), "f:image")
    assert fp.path_text(path) == '.spec.template.spec.containers[name="c"].image'


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param({"f:a": {}}, {"f:b": {}}, {"f:a": {}, "f:b": {}}, id="disjoint"),
        pytest.param({"f:a": {"f:x": {}}}, {"f:a": {}}, {"f:a": {SELF: {}, "f:x": {}}}, id="member-and-children"),
        pytest.param({"f:a": {SELF: {}, "f:x": {}}}, {"f:a": {"f:y": {}}}, {"f:a": {SELF: {}, "f:x": {}, "f:y": {}}}),
    ],
)
def test_union(a: dict[str, Any], b: dict[str, Any], expected: dict[str, Any]) -> None:
    assert fp.union(a, b) == expected
    assert fp.union(b, a) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param({"f:a": {}, "f:b": {}}, {"f:a": {}}, {"f:b": {}}, id="leaf"),
        # a member removed leaves what is under it (upstream's Difference is not recursive)
        pytest.param({"f:a": {SELF: {}, "f:x": {}}}, {"f:a": {}}, {"f:a": {"f:x": {}}}, id="not-recursive"),
        pytest.param({"f:a": {"f:x": {}, "f:y": {}}}, {"f:a": {"f:x": {}}}, {"f:a": {"f:y": {}}}, id="deep"),
        pytest.param({"f:a": {"f:x": {}}}, {"f:a": {"f:x": {}}}, {}, id="all"),
    ],
)
def test_difference(a: dict[str, Any], b: dict[str, Any], expected: dict[str, Any]) -> None:
    assert fp.difference(a, b) == expected


def test_recursive_difference_removes_what_is_under_a_member() -> None:
    a = {"f:status": {"f:phase": {}}, "f:spec": {"f:x": {}}}
    assert fp.recursive_difference(a, {"f:status": {}}) == {"f:spec": {"f:x": {}}}
    assert fp.difference(a, {"f:status": {}}) == a


def test_intersection_is_of_members_at_the_same_paths() -> None:
    a = {"f:spec": {"f:replicas": {}, "f:template": {}}, "f:metadata": {"f:labels": {"f:a": {}}}}
    b = {"f:spec": {"f:replicas": {}}, "f:metadata": {"f:labels": {}}}
    assert fp.intersection(a, b) == {"f:spec": {"f:replicas": {}}}


def test_has_and_members_in_upstream_order() -> None:
    fields = {"f:spec": {"f:template": {"f:x": {}}, "f:replicas": {}}, "f:metadata": {"f:labels": {SELF: {}}}}
    assert fp.has(fields, ("f:spec", "f:replicas"))
    assert not fp.has(fields, ("f:spec",))
    assert fp.has(fields, ("f:metadata", "f:labels"))
    # a node's members first, then its children, each in upstream's order
    assert list(fp.members(fields)) == [
        ("f:metadata", "f:labels"),
        ("f:spec", "f:replicas"),
        ("f:spec", "f:template", "f:x"),
    ]


def test_wire_order_is_upstream_order() -> None:
    fields = {
        "f:ports": {
            fp.key({"port": 10}): {},
            fp.key({"port": 9}): {},
            SELF: {},
        },
        "f:b": {},
        "f:a": {},
        "f:set": {fp.value("b"): {}, fp.value(10): {}, fp.value(True): {}, fp.value("a"): {}},
    }
    wire = fp.to_wire(fields)
    assert list(wire) == ["f:a", "f:b", "f:ports", "f:set"]
    assert list(wire["f:ports"]) == [SELF, 'k:{"port":9}', 'k:{"port":10}']  # numbers by value, not text
    assert list(wire["f:set"]) == ["v:10", 'v:"a"', 'v:"b"', "v:true"]  # numbers, strings, booleans


def test_from_wire_checks_and_canonicalises() -> None:
    assert fp.from_wire({"f:a": {".": {}}, 'k:{ "name" : "c" }': {"f:x": {}}}) == {
        "f:a": {},
        'k:{"name":"c"}': {"f:x": {}},
    }
    for bad in ([], {"x:y": {}}, {"f:a": []}, {".": {"f:a": {}}}, {"k:[1]": {}}, {"k:{": {}}):
        with pytest.raises(fp.PathError):
            fp.from_wire(bad)
