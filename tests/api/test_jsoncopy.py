"""json_copy: the same value as `copy.deepcopy` for any decoded JSON, sharing nothing with the original."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tinykube.api.jsoncopy import json_copy

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)


@given(json_values)
def test_a_copy_is_equal_to_a_deep_copy(value: Any) -> None:
    copied = json_copy(value)
    assert copied == copy.deepcopy(value)
    assert type(copied) is type(value)


def test_a_copy_shares_nothing() -> None:
    original = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "ports": [{"p": 1}]}]}}
    kept = copy.deepcopy(original)
    copied = json_copy(original)
    copied["metadata"]["labels"]["a"] = "changed"
    copied["spec"]["containers"][0]["ports"].append({"p": 2})
    assert original == kept


def test_integers_beyond_64_bits_are_copied_too() -> None:
    """Python's decoder accepts them and orjson cannot encode them: the copy falls back to deepcopy."""
    value = {"n": 2**70, "m": [-(2**65)]}
    assert json_copy(value) == value
