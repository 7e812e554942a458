"""The JSON accessors give the expected type or its empty value, never a wrong type."""

from __future__ import annotations

from typing import Any

import pytest

from tinykube.api.jsonshape import as_dict, as_int, as_list, as_str, dicts, indexed_dicts, strings


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param({"a": 1}, ({"a": 1}, [], "", None), id="dict"),
        pytest.param([1], ({}, [1], "", None), id="list"),
        pytest.param("x", ({}, [], "x", None), id="str"),
        pytest.param(3, ({}, [], "", 3), id="int"),
        pytest.param(True, ({}, [], "", None), id="bool-is-not-int"),
        pytest.param(None, ({}, [], "", None), id="null"),
    ],
)
def test_accessors(value: Any, expected: tuple[Any, ...]) -> None:
    assert (as_dict(value), as_list(value), as_str(value), as_int(value)) == expected


def test_list_readers_skip_other_entries() -> None:
    mixed = [{"name": "a"}, "b", 3, {"name": "c"}, None]
    assert dicts(mixed) == [{"name": "a"}, {"name": "c"}]
    assert indexed_dicts(mixed) == [(0, {"name": "a"}), (3, {"name": "c"})]
    assert strings(mixed) == ["b"]
    assert dicts("not a list") == [] and indexed_dicts(None) == [] and strings({}) == []
