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

    def unchanged(self, stored: dict[str, Any]) -> bool:
        """Whether `out` would give `stored` as it is (so its cached encoding can be sent)."""
        return False


class CustomVersion(Converted):
    """A custom resource read in one of its CRD's versions: with `conversion: None` only apiVersion changes. A
    write keeps the version it is made in (it is validated in it); the registry stores it in the storage one."""

    def __init__(self, api_version: str) -> None:
        self.api_version = api_version

    def out(self, stored: dict[str, Any]) -> dict[str, Any]:
        return stored if self.unchanged(stored) else {**stored, "apiVersion": self.api_version}

    def into(self, served: dict[str, Any]) -> dict[str, Any]:
        return served

    def unchanged(self, stored: dict[str, Any]) -> bool:
        return stored.get("apiVersion") == self.api_version


def converter(resource: ResourceInfo) -> Converted | None:
    """How objects of a view are converted to and from its stored version; None for a stored resource."""
    if resource.custom is not None:
        return CustomVersion(resource.api_version)
    return Converted(CONVERSIONS[(resource.group_version, resource.kind)]) if resource.view_of else None
