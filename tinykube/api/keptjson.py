"""JSON encoded to be kept: orjson's output, right-sized.

orjson (3.12 and later) hands back its working buffer as the `bytes` it returns: at least 4 KB, 16 KB once the
output passes 1 KB, whatever the length of the JSON in it. For a value encoded, sent and dropped that costs
nothing; for one a cache keeps (each object of a watch cache, 10,000s of them) it was three quarters of the
cache's memory (10,000 two-port Services held ~200 MB of buffers for ~25 MB of JSON). Home Assistant met the same
(home-assistant/core#181513) and trims the same way: a copy of the exact length, ~0.1 µs per object.
"""

from __future__ import annotations

from typing import Any

import orjson


def dumps_kept(value: Any, option: int = 0) -> bytes:
    """`orjson.dumps(value, option=option)` in a `bytes` of its own length, for results that are kept."""
    return b"".join((orjson.dumps(value, option=option), b""))
