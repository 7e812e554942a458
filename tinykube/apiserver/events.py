"""Events the apiserver itself reports (repair loops, the built-in load balancer), as core/v1 Events.

A repeated event (same object, reason and message) is counted on one Event, as upstream's recorder aggregates.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now
from tinykube.api.resources import by_path
from tinykube.apiserver.registry import Registry, Request

log = logging.getLogger(__name__)

EVENTS = by_path("", "v1", "events")


class EventRecorder:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.tasks: set[asyncio.Task[None]] = set()

    def warn(self, obj: dict[str, Any], reason: str, message: str, component: str, action: str = "") -> None:
        """Record without waiting (callers are in the middle of a write or a repair pass)."""
        recording = self.record(obj, "Warning", reason, message, component, action)
        task = asyncio.get_running_loop().create_task(recording)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def record(
        self, obj: dict[str, Any], type_: str, reason: str, message: str, component: str, action: str = ""
    ) -> None:
        assert EVENTS is not None
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        digest = hashlib.sha256(f"{meta.get('uid')}/{reason}/{message}".encode()).hexdigest()[:16]
        name = f"{meta['name']}.{digest}"
        stamp = now()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", "v1"),
                "kind": obj.get("kind", "Service"),
                "namespace": meta.get("namespace"),
                "name": meta["name"],
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "action": action,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": "",
        }
        request = Request(EVENTS, namespace, name)
        try:
            try:
                await self.registry.create(request, event)
            except errors.AlreadyExists:
                existing = self.registry.get(request).obj
                bumped = {**existing, "count": int(existing.get("count") or 1) + 1, "lastTimestamp": stamp}
                await self.registry.update(request, bumped)
        except errors.ApiError as err:  # e.g. the namespace is going away: nothing to report on
            log.debug("event %s/%s not recorded: %s", namespace, reason, err)
