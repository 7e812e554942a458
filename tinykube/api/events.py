"""core/v1 Events as upstream's recorders write them. The name is derived from the object, reason and message, so
a repeat of the same event finds the first one and bumps its count, as upstream's recorder aggregates."""

from __future__ import annotations

import hashlib
from typing import Any

from tinykube.api.meta import now
from tinykube.api.shapes import ObjectMeta


def new_event(
    obj: dict[str, Any],
    type_: str,
    reason: str,
    message: str,
    component: str,
    action: str = "",
    host: str = "",
    series: str | None = None,
) -> dict[str, Any]:
    """`series` names what repeats of this event have in common, if not its message (an aggregated event's
    message changes with every similar event it stands for)."""
    meta: ObjectMeta = obj["metadata"]
    same = message if series is None else series
    digest = hashlib.sha256(f"{meta.get('uid')}/{reason}/{same}".encode()).hexdigest()[:16]
    stamp = now()
    event: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{digest}", "namespace": meta.get("namespace") or "default"},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion", "v1"),
            "kind": obj.get("kind", ""),
            "namespace": meta.get("namespace"),
            "name": meta["name"],
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "reason": reason,
        "message": message,
        "type": type_,
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": component, **({"host": host} if host else {})},
        "reportingComponent": component,
        "reportingInstance": "",
    }
    if action:
        event["action"] = action
    return event


def repeated(existing: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    """The stored event counted once more, with the newest message (an aggregated event's changes)."""
    count = int(existing.get("count") or 1) + 1
    return {**existing, "count": count, "message": event["message"], "lastTimestamp": event["lastTimestamp"]}
