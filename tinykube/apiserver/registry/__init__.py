"""Per-resource storage strategies (defaulting, validation, allocation) behind one generic, HTTP-free registry."""

from __future__ import annotations

from tinykube.api.resources import RESOURCES
from tinykube.apiserver.registry.core import STRATEGIES
from tinykube.apiserver.registry.generic import Registry, Request, Strategy

__all__ = ["Registry", "Request", "Strategy", "strategies"]


def strategies() -> dict[str, Strategy]:
    return {r.plural: STRATEGIES.get(r.plural, Strategy)(r) for r in RESOURCES}
