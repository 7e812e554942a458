"""Properties of the engine over generated schemas and objects (Hypothesis).

- a value generated to satisfy a schema prunes to nothing and validates with no errors, also after defaulting;
- pruning is idempotent, and defaulting twice is defaulting once;
- no input makes prune/default/validate raise (arbitrary JSON against arbitrary schemas, with rules).
"""

from __future__ import annotations

import copy
import string
from datetime import date, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinykube.apiextensions.schema import Schema

NAMES = st.sampled_from(["a", "b", "name", "spec", "port", "x-y", "namespace", "if"])
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def scalar_schemas(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["string", "integer", "number", "boolean", "int-or-string", "enum", "date"]))
    if kind == "string":
        schema: dict[str, Any] = {"type": "string"}
        if draw(st.booleans()):
            schema["maxLength"] = draw(st.integers(0, 8))
        if draw(st.booleans()):
            schema["pattern"] = "^[a-z]*$"
    elif kind == "integer":
        schema = {"type": "integer"}
        low = draw(st.integers(-50, 50))
        if draw(st.booleans()):
            schema["minimum"] = low
        if draw(st.booleans()):
            schema["maximum"] = low + draw(st.integers(0, 100))
    elif kind == "number":
        schema = {"type": "number", "minimum": -1000.0, "maximum": 1000.0}
    elif kind == "boolean":
        schema = {"type": "boolean"}
    elif kind == "int-or-string":
        schema = {"x-kubernetes-int-or-string": True}
    elif kind == "enum":
        schema = {"type": "string", "enum": draw(st.lists(st.sampled_from("abcde"), min_size=1, unique=True))}
    else:
        schema = {"type": "string", "format": draw(st.sampled_from(["date", "date-time", "duration"]))}
    if draw(st.integers(0, 5)) == 0:
        schema["nullable"] = True
    return schema


def schemas() -> st.SearchStrategy[dict[str, Any]]:
    def extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        objects = st.builds(
            lambda props, req: {"type": "object", "properties": props, "required": [k for k in props if k in req]},
            st.dictionaries(NAMES, children, max_size=4),
            st.sets(NAMES),
        )
        maps = st.builds(lambda v: {"type": "object", "additionalProperties": v}, children)
        arrays = st.builds(
            lambda item, most: {"type": "array", "items": item, **({"maxItems": most} if most is not None else {})},
            children,
            st.none() | st.integers(0, 4),
        )
        sets = st.builds(lambda: {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}})
        keyed = st.builds(
            lambda props: {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {**props, "name": {"type": "string"}}},
            },
            st.dictionaries(NAMES.filter(lambda n: n != "name"), children, max_size=2),
        )
        return objects | maps | arrays | sets | keyed

    return st.recursive(scalar_schemas(), extend, max_leaves=8)


@st.composite
def root_schemas(draw: st.DrawFn) -> dict[str, Any]:
    spec = draw(schemas())
    return {"type": "object", "properties": {"spec": spec}}


def values_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that satisfy `schema` (as generated above)."""
    strategy = _values_for(schema)
    if schema.get("nullable") and "enum" not in schema:  # upstream: null never passes an enum
        return st.none() | strategy
    return strategy


def _values_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if schema.get("x-kubernetes-int-or-string"):
        return st.integers(-5, 5) | st.text(string.ascii_lowercase, max_size=5)
    kind = schema.get("type")
    if kind == "string":
        fmt = schema.get("format")
        if fmt == "date":
            return st.dates(min_value=date(1000, 1, 1)).map(lambda d: d.isoformat())
        if fmt == "date-time":
            return st.datetimes(min_value=datetime(1000, 1, 1)).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))
        if fmt == "duration":
            return st.integers(0, 10_000).map(lambda n: f"{n}s")
        alphabet = string.ascii_lowercase if "pattern" in schema else string.printable
        return st.text(alphabet, max_size=schema.get("maxLength", 10))
    if kind == "integer":
        return st.integers(schema.get("minimum", -(2**40)), schema.get("maximum", 2**40))
    if kind == "number":
        return st.floats(-1000.0, 1000.0, allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        items = schema["items"]
        if schema.get("x-kubernetes-list-type") == "set":
            return st.lists(st.text(string.ascii_lowercase, max_size=3), max_size=4, unique=True)
        if schema.get("x-kubernetes-list-type") == "map":
            return st.lists(
                values_for(items).filter(lambda v: v is not None), max_size=3, unique_by=lambda v: v["name"]
            )
        return st.lists(values_for(items), max_size=schema.get("maxItems", 3))
    if "additionalProperties" in schema:
        return st.dictionaries(
            st.text(string.ascii_lowercase, min_size=1, max_size=3),
            values_for(schema["additionalProperties"]),
            max_size=3,
        )
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {k: values_for(v) for k, v in props.items() if k in required},
        optional={k: values_for(v) for k, v in props.items() if k not in required},
    )


@st.composite
def schema_and_value(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = draw(root_schemas())
    spec = draw(values_for(schema["properties"]["spec"]).filter(lambda v: v is not None))
    return schema, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


def json_values() -> st.SearchStrategy[Any]:
    """What a decoded body can hold: JSON and YAML numbers beyond int64 are floats by then (limits.load_yaml)."""
    int64 = st.integers(-(2**63), 2**63 - 1)
    scalars = st.none() | st.booleans() | int64 | st.floats(allow_nan=False, allow_infinity=False) | st.text()
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(NAMES | st.text(max_size=3), inner, max_size=4),
    )


@SETTINGS
@given(schema_and_value())
def test_conforming_values_prune_to_nothing_and_validate(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    raw, obj = case
    schema = Schema.compile(raw)
    assert schema.prune(obj) == []
    assert schema.validate(obj) == []
    schema.default(obj)
    assert schema.validate(obj) == []
    assert schema.validate(obj, copy.deepcopy(obj)) == []


@SETTINGS
@given(root_schemas(), json_values())
def test_prune_is_idempotent_and_defaulting_is_stable(raw: dict[str, Any], spec: Any) -> None:
    schema = Schema.compile(raw)
    obj = {"metadata": {"name": "w", "extra": 1}, "spec": spec, "unknown": True}
    schema.prune(obj)
    once = copy.deepcopy(obj)
    assert schema.prune(obj) == []
    assert obj == once
    schema.default(obj)
    defaulted = copy.deepcopy(obj)
    schema.default(obj)
    assert obj == defaulted


RULES = [
    "self.spec == self.spec",
    "has(self.spec)",
    "size(self.metadata.name) < 100",
    "!has(self.spec) || self.spec != oldSelf.spec || true",
    "self.kind.startsWith('W') || true",
]


@SETTINGS
@given(root_schemas(), json_values(), json_values(), st.sampled_from(RULES))
def test_nothing_raises_on_arbitrary_json(raw: dict[str, Any], spec: Any, old_spec: Any, rule: str) -> None:
    schema = Schema.compile({**raw, "x-kubernetes-validations": [{"rule": rule}]})
    obj = {"kind": "Widget", "metadata": {"name": "w"}, "spec": spec}
    old = {"kind": "Widget", "metadata": {"name": "w"}, "spec": old_spec}
    schema.prune(obj)
    schema.default(obj)
    for errs in (schema.validate(obj), schema.validate(obj, old), schema.validate_status(obj, old)):
        assert all(e.field for e in errs)
    raw_obj = {"spec": spec, "status": old_spec}
    assert isinstance(schema.validate(raw_obj, raw_obj), list)
