"""The static cost of CRD rules as upstream estimates it (cel-go's coster, apiextensions' sizes).

The expected numbers are upstream's own (apiextensions-apiserver's cost estimation table, Kubernetes 1.32): each
schema once without bounds (sizes from the 3 MiB request limit) and once with `maxItems`/`maxProperties`/
`maxLength` set at its top level.
"""

from __future__ import annotations

from typing import Any

import pytest

from tinykube.apiextensions import celcost
from tinykube.apiextensions.node import compile_node

Schema = dict[str, Any]


def _scalar(kind: str) -> Schema:
    if kind == "int-or-string":
        return {"x-kubernetes-int-or-string": True}
    if kind in ("duration", "date", "date-time"):
        return {"type": "string", "format": kind}
    return {"type": kind}


def _bound(schema: Schema, key: str, limit: int | None) -> Schema:
    return schema if limit is None else {**schema, key: limit}


def array(kind: str) -> Any:
    return lambda n: _bound({"type": "array", "items": _scalar(kind)}, "maxItems", n)


def array_of_arrays(kind: str) -> Any:
    return lambda n: _bound({"type": "array", "items": {"type": "array", "items": {"type": kind}}}, "maxItems", n)


_OBJECT = {
    "type": "object",
    "required": ["required"],
    "properties": {"required": {"type": "string"}, "optional": {"type": "string"}},
}


def object_array() -> Any:
    return lambda n: _bound({"type": "array", "items": _OBJECT}, "maxItems", n)


def map_array(kind: str) -> Any:
    item = {"type": "object", "additionalProperties": {"type": kind}}
    return lambda n: _bound({"type": "array", "items": item}, "maxItems", n)


def map_of(kind: str | Schema) -> Any:
    value = _scalar(kind) if isinstance(kind, str) else kind
    return lambda n: _bound({"type": "object", "additionalProperties": value}, "maxProperties", n)


def string(**extra: Any) -> Any:
    return lambda n: _bound({"type": "string", **extra}, "maxLength", n)


def nested_spec() -> Any:
    return lambda n: _bound(
        {"type": "object", "additionalProperties": _bound({"type": "string"}, "maxLength", n)}, "maxProperties", n
    )


def nested_maps(*, all_bounded: bool) -> Any:
    def make(n: int | None) -> Schema:
        inner = _bound(_OBJECT, "maxProperties", n) if all_bounded else _OBJECT
        item = _bound({"type": "object", "additionalProperties": inner}, "maxProperties", n)
        top = {"type": "array", "items": item}
        return _bound(top, "maxItems", n) if all_bounded else top

    return make


def strings_array() -> Any:
    return lambda n: _bound({"type": "array", "items": _bound({"type": "string"}, "maxLength", n)}, "maxItems", n)


def replace_object() -> Any:
    return lambda n: {
        "type": "object",
        "properties": {
            "str": _bound({"type": "string"}, "maxLength", n),
            "before": {"type": "string", "maxLength": 2},
            "after": {"type": "string", "maxLength": 4},
        },
    }


def split_object() -> Any:
    text = lambda n: _bound({"type": "string"}, "maxLength", n)  # noqa: E731
    return lambda n: {"type": "object", "properties": {"str": text(n), "separator": text(n)}}


_MAP_OBJECT = _OBJECT
_MAP_ARRAY = {"type": "array", "items": {"type": "number"}}
_MAP_MAP = {"type": "object", "additionalProperties": {"type": "number"}}
OVER = celcost.U64  # "exceeds the per-expression limit" in upstream's table

CASES = [
    ("number array all", array("number"), "self.all(x, true)", 4718591, 10, 32),
    ("string array all", array("string"), "self.all(x, true)", 3145727, 20, 62),
    ("boolean array all", array("boolean"), "self.all(x, true)", 1887437, 5, 17),
    ("array of arrays all", array_of_arrays("number"), "self.all(x, true)", 3145727, 100, 302),
    ("object array all", object_array(), "self.all(x, true)", 555128, 50, 152),
    ("number map all", map_of("number"), "self.all(x, true)", 1348169, 10, 32),
    ("string map all", map_of("string"), "self.all(x, true)", 1179647, 3, 11),
    ("boolean map all", map_of("boolean"), "self.all(x, true)", 943718, 100, 302),
    ("string contains", string(), "self.contains('test')", 314574, 10, 5),
    ("string startsWith", string(), "self.startsWith('test')", 2, 15, 2),
    ("string endsWith", string(), "self.endsWith('test')", 2, 30, 2),
    ("concatenation size", string(), 'size(self + "hello") > size("hello")', 314578, 4, 7),
    ("index number array", array("number"), "self[1] == 0.0", 2, 5000, 2),
    ("index string array", array("string"), "self[1] == self[1]", 314577, 8, 314577),
    ("nested all", array("number"), "self.all(x, self.all(y, true))", OVER, 10, 352),
    ("twice nested all", array("number"), "self.all(x, self.all(y, self.all(z, true)))", OVER, 10, 3552),
    ("matches", string(), 'self.matches("x")', 314574, 50, 22),
    ("matches on a literal", string(), '"".matches("(((((((((())))))))))[0-9]")', 7, 10, 7),
    ("matches empty pattern", string(), 'self.matches("")', 1, 100, 1),
    ("map keys contain values", nested_spec(), "self.all(x, x.contains(self[x]))", 2752507, 10, 72),
    ("index of an empty array", array("number"), "self[3] == 0.0", 2, 0, 2),
    ("key of an empty map", map_of("number"), 'self["x"] == 0.0', 2, 0, 2),
    ("string equality", string(), 'self == "x"', 2, 0, 1),
    ("bytes equality", string(format="byte"), 'self == b"x"', 2, 0, 1),
    ("all equal", array("number"), "self.all(x, x == 0.0)", 6291454, 3 * 1024 * 2048, 25165826),
    ("nested maps bounded", nested_maps(all_bounded=True), 'self.all(x, x["y"].required == "z")', 7340027, 10, 72),
    (
        "nested maps one bound",
        nested_maps(all_bounded=False),
        'self.all(x, x["y"].required == "z")',
        7340027,
        10,
        7340027,
    ),
    ("int-or-string array all", array("int-or-string"), "self.all(x, true)", 4718591, 10, 32),
    ("int-or-string index", array("int-or-string"), "self[0] == 5", 3, 10, 3),
    ("boolean index", array("boolean"), "self[0] == false", 2, 25, 2),
    ("object index null", object_array(), "self[0] == null", 2, 422, 2),
    ("array of arrays index", array_of_arrays("number"), "self[0][0] == -1.0", 3, 51, 3),
    ("array of maps all", map_array("number"), "self.all(x, x.y == 25.2)", 6291452, 12, 74),
    ("array of maps index", map_array("number"), "self[0].x > 2.0", 4, 3000, 4),
    ("duration array all", array("duration"), "self.all(x, true)", 2359295, 5, 17),
    ("duration index", array("duration"), "self[0].getHours() == 2", 4, 525, 4),
    ("date array all", array("date"), "self.all(x, true)", 725936, 15, 47),
    ("date index", array("date"), "self[2].getDayOfMonth() == 13", 4, 42, 4),
    ("date-time array all", array("date-time"), "self.all(x, true)", 428963, 25, 77),
    ("date-time index", array("date-time"), "self[2].getMinutes() == 45", 4, 99, 4),
    ("int-or-string map all", map_of("int-or-string"), "self.all(x, true)", 1348169, 15, 47),
    ("object map all", map_of(_MAP_OBJECT), "self.all(x, true)", 428963, 20, 62),
    ("map of maps all", map_of(_MAP_MAP), "self.all(x, true)", 1179647, 10, 32),
    ("map of arrays all", map_of(_MAP_ARRAY), "self.all(x, true)", 1179647, 25, 77),
    ("duration map all", map_of("duration"), "self.all(x, true)", 1048577, 5, 17),
    ("date map all", map_of("date"), "self.all(x, true)", 524288, 10, 32),
    ("date-time map all", map_of("date-time"), "self.all(x, true)", 349526, 25, 77),
    ("find", string(), "self.find('[0-9]+') == ''", 629147, 10, 11),
    ("join", strings_array(), "self.join(' ') == 'aa bb'", 329853068905, 10, 43),
    ("isSorted", strings_array(), "self.isSorted() == true", 329854432052, 10, 52),
    ("replace", replace_object(), "self.str.replace(self.before, self.after) == 'does not matter'", 629154, 4, 12),
    ("split", split_object(), "self.str.split(self.separator) == []", 629160, 10, 22),
    ("lowerAscii", string(), "self.lowerAscii() == 'lower!'", 314575, 10, 6),
    ("size calls", map_of("integer"), "oldSelf.size() == self.size()", 5, 10, 5),
    ("timestamp equality", map_of("date-time"), 'self["a"] == self["b"]', 8, 7, 8),
    ("duration equality", map_of("duration"), 'self["c"] == self["d"]', 8, 42, 8),
    ("enum contains", string(enum=["A", "B", "C", "LongValue"]), "self.contains('A')", 2, 1000, 401),
]


@pytest.mark.parametrize(
    ("make", "rule", "unbounded", "limit", "bounded"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rule_cost_is_upstreams_estimate(make: Any, rule: str, unbounded: int, limit: int, bounded: int) -> None:
    for schema, expected in ((make(None), unbounded), (make(limit), bounded)):
        cost = celcost.estimate(rule, compile_node(schema), resource=False)
        if expected == OVER:
            assert cost > 10_000_000
        else:
            assert cost == expected, schema
