"""How deeply a decoded document may nest: Go's encoding/json stops at 10,000 levels; a Python server walks
objects recursively in many places (deep copies, encoders, validation), so tinykube stops at `MAX_DEPTH`, far
below the interpreter's recursion limit and far above what any served kind nests."""

from __future__ import annotations

from typing import Any, Final

from tinykube.api.errors import BadRequest

MAX_DEPTH: Final = 100


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Refuse a decoded document nested deeper than `limit` (400), without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise BadRequest(f"the request body is nested too deeply: exceeded max depth of {limit}")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, dict | list))
