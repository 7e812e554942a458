"""What the registry does with an object of a kind, without the registry: for the per-family strategy tests
(test_kinds_*.py). Bodies are copied, so a test's own object is left as it wrote it."""

from __future__ import annotations

import copy
from typing import Any

from tinykube.api.resources import STORED
from tinykube.apiserver.kinds.strategies import KIND_STRATEGIES
from tinykube.apiserver.registry import Strategy


def strategy(plural: str) -> Strategy:
    resource = next(r for r in STORED if r.plural == plural)
    return KIND_STRATEGIES[plural](resource)


def created(plural: str, body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The object as a create prepares it, and its validation errors as upstream renders them."""
    body = copy.deepcopy(body)
    body.setdefault("metadata", {"name": "x"})
    chosen = strategy(plural)
    chosen.prepare_create(body)
    return body, [str(err) for err in chosen.validate(body, None)]


def updated(plural: str, new: dict[str, Any], old: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The object as an update prepares it over `old`, and its validation errors."""
    new = copy.deepcopy(new)
    chosen = strategy(plural)
    chosen.prepare_update(new, old)
    return new, [str(err) for err in chosen.validate(new, old)]
