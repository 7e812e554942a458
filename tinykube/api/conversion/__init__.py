"""Conversion between a stored version and the other versions it is served in (`ResourceInfo.view_of`).

Objects are converted as JSON dicts, both ways, per (served group-version, kind): `to_view` turns the stored form
into the served version's, `to_storage` the reverse. A view without a conversion here cannot be served.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from tinykube.api.conversion import autoscaling, events
from tinykube.api.resources import ResourceInfo

Converter = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Conversion:
    to_view: Converter
    to_storage: Converter


CONVERSIONS: dict[tuple[str, str], Conversion] = {
    ("autoscaling/v1", "HorizontalPodAutoscaler"): Conversion(autoscaling.v2_to_v1, autoscaling.v1_to_v2),
    ("events.k8s.io/v1", "Event"): Conversion(events.core_to_events, events.events_to_core),
}


class Converted:
    """Both directions for one served view, each on a copy (the cache's objects are shared and never changed)."""

    def __init__(self, conversion: Conversion) -> None:
        self.conversion = conversion

    def out(self, stored: dict[str, Any]) -> dict[str, Any]:
        return self.conversion.to_view(orjson.loads(orjson.dumps(stored)))

    def into(self, served: dict[str, Any]) -> dict[str, Any]:
        return self.conversion.to_storage(served)


def converter(resource: ResourceInfo) -> Converted | None:
    """How objects of a view are converted to and from its stored version; None for a stored resource."""
    return Converted(CONVERSIONS[(resource.group_version, resource.kind)]) if resource.view_of else None
