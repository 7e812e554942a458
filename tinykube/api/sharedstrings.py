"""One string object for each repeated value of the objects a cache keeps.

orjson shares the keys it decodes but makes a new `str` for every value, so each cached Service, EndpointSlice and
Endpoints carried its own "v1", "TCP", "ClusterIP", "IPv4", namespace, port names, managed-by label and
creation second: half the bytes of a cached object's strings (a census of `up` with 5,000 Services: 13.1 MB of
value strings, 3.5 MB of them distinct). `StringPool.share` swaps each value for the pool's copy.

The pool is bounded and starts over when full, so values that never repeat (UIDs, names, addresses) cost nothing
lasting: after a restart a repeated value is pooled again at its next sighting, and each restart leaves at most
one more copy of it in memory.
"""

from __future__ import annotations

from typing import Any

POOL_SIZE = 16_384  # distinct values held before the pool starts over
LONGEST = 64  # longer values (messages, certificates, JSON in annotations) seldom repeat
UNIQUE_KEYS = frozenset({"uid", "resourceVersion"})  # values never shared between objects: not worth a lookup


class StringPool:
    def __init__(self, size: int = POOL_SIZE) -> None:
        self.size = size
        self.values: dict[str, str] = {}

    def share(self, value: Any) -> None:
        """Replace, in place, every short string value inside `value` (dicts and lists, to any depth) by the
        pool's equal string. `value` must not be shared with readers yet: its containers are written."""
        values = self.values
        if len(values) >= self.size:
            values.clear()  # checked per object, not per string: the pool may pass its size by one object's values
        pooled = values.setdefault
        # A stack, not recursion: custom resources nest deeper than a call stack should (and it is faster).
        pending: list[Any] = [value]
        while pending:
            container = pending.pop()
            if type(container) is dict:
                for key, item in container.items():
                    kind = type(item)
                    if kind is str:
                        if len(item) <= LONGEST and key not in UNIQUE_KEYS:
                            container[key] = pooled(item, item)
                    elif kind is dict or kind is list:
                        pending.append(item)
            elif type(container) is list:
                for index, item in enumerate(container):
                    kind = type(item)
                    if kind is str:
                        if len(item) <= LONGEST:
                            container[index] = pooled(item, item)
                    elif kind is dict or kind is list:
                        pending.append(item)
