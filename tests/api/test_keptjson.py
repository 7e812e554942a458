"""`dumps_kept`: orjson's encoding in a buffer of its own length (orjson's own result keeps its whole working
buffer: 4-16 KB for a small object, the bulk of a watch cache's memory)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import orjson
from hypothesis import given
from hypothesis import strategies as st

from tinykube.api.keptjson import dumps_kept

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=30,
)


@given(JSON)
def test_the_same_bytes_as_orjson(value: object) -> None:
    assert dumps_kept(value) == orjson.dumps(value)
    assert dumps_kept(value, orjson.OPT_SORT_KEYS) == orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def traced_bytes_per_result(encode: Callable[[object], bytes], value: object, count: int = 200) -> float:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [encode(value) for _ in range(count)]
        size = (tracemalloc.get_traced_memory()[0] - before) / count
    finally:
        tracemalloc.stop()
    assert len(kept) == count
    return size


def test_a_kept_encoding_costs_its_length_not_orjsons_buffer() -> None:
    ports = [{"port": port, "name": f"p{port}", "protocol": "TCP"} for port in range(30)]
    value = {"kind": "Service", "metadata": {"name": "s", "labels": {"app": "a"}}, "spec": {"ports": ports}}
    length = len(orjson.dumps(value))
    kept = traced_bytes_per_result(dumps_kept, value)
    assert kept < length + 100, (kept, length)  # the bytes object's header and the list's slot, no more
