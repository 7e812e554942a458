"""Reading decoded JSON whose shape a client chose: each accessor gives the type the caller expects, or its empty
value when the field holds something else (validation reports the wrong type elsewhere; readers must not crash).
One home for what used to be a `_dict()` in every module."""

from __future__ import annotations

from typing import Any


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: Any) -> int | None:
    """An integer, or None; a bool is not one (JSON's `true` is not 1)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a list; other entries are skipped."""
    return [item for item in as_list(value) if isinstance(item, dict)]


def indexed_dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """The objects of a list with their indexes (for field paths such as `spec.ports[2]`); other entries skipped."""
    return [(i, item) for i, item in enumerate(as_list(value)) if isinstance(item, dict)]


def strings(value: Any) -> list[str]:
    """The strings of a list; other entries are skipped."""
    return [item for item in as_list(value) if isinstance(item, str)]
