"""A deep copy of decoded JSON: an orjson round trip, several times faster than `copy.deepcopy` on API objects.
Values orjson cannot encode (integers beyond 64 bits, which Python's decoder accepts) fall back to `deepcopy`."""

from __future__ import annotations

import copy
from typing import TypeVar

import orjson

T = TypeVar("T")


def json_copy(value: T) -> T:
    try:
        copied: T = orjson.loads(orjson.dumps(value))
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return copy.deepcopy(value)
    return copied
