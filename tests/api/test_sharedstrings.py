"""The string pool of the watch cache: an object keeps its value, and equal short values become one string."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from tinykube.api.sharedstrings import LONGEST, StringPool

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(max_size=80),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)


def strings(value: Any) -> list[tuple[str | None, str]]:
    """Every string value in `value` with the key it sits under (None in a list)."""
    found: list[tuple[str | None, str]] = []
    pending: list[tuple[str | None, Any]] = [(None, value)]
    while pending:
        key, item = pending.pop()
        if isinstance(item, str):
            found.append((key, item))
        elif isinstance(item, dict):
            pending.extend(item.items())
        elif isinstance(item, list):
            pending.extend((None, element) for element in item)
    return found


@settings(max_examples=300)
@given(json_values)
def test_sharing_leaves_every_value_as_it_was(value: Any) -> None:
    decoded = orjson.loads(orjson.dumps(value))
    StringPool().share(decoded)
    assert decoded == value


@settings(max_examples=200)
@given(json_values)
def test_equal_short_values_of_two_objects_become_one_string(value: Any) -> None:
    pool = StringPool()
    raw = orjson.dumps({"value": value})  # a container: a lone string has nowhere to be replaced
    first, second = orjson.loads(raw), orjson.loads(raw)
    pool.share(first)
    pool.share(second)
    for (key, a), (_, b) in zip(strings(first), strings(second), strict=True):
        if len(a) <= LONGEST and key not in ("uid", "resourceVersion"):
            assert a is b


def test_uids_resource_versions_and_long_values_are_left_alone() -> None:
    pool = StringPool()
    long_value = "x" * (LONGEST + 1)
    raw = orjson.dumps({"metadata": {"uid": "u-1", "resourceVersion": "7"}, "data": long_value})
    first, second = orjson.loads(raw), orjson.loads(raw)
    pool.share(first)
    pool.share(second)
    assert first["metadata"]["uid"] is not second["metadata"]["uid"]
    assert first["metadata"]["resourceVersion"] is not second["metadata"]["resourceVersion"]
    assert first["data"] is not second["data"]
    assert set(pool.values) == set()


def test_a_full_pool_starts_over_and_stays_bounded() -> None:
    pool = StringPool(size=10)
    for number in range(100):
        pool.share({"name": f"name-{number}", "kind": "Pod"})
        assert len(pool.values) <= 10 + 2  # one object's values may pass the size before the next check
    shared = orjson.loads(b'{"kind": "Pod"}')
    pool.share(shared)
    assert shared["kind"] is pool.values["Pod"]


def test_deep_nesting_needs_no_call_stack() -> None:
    value: Any = "leaf"
    for _ in range(5_000):
        value = {"a": [value]}
    pool = StringPool()
    pool.share(value)
    assert "leaf" in pool.values
