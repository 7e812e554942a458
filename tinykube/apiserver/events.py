"""Events the apiserver itself reports (repair loops, the built-in load balancer), written through its registry."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from tinykube.api import errors
from tinykube.api.events import new_event, repeated
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
        task = asyncio.get_running_loop().create_task(
            self.record(new_event(obj, "Warning", reason, message, component, action))
        )
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def record(self, event: dict[str, Any]) -> None:
        assert EVENTS is not None
        request = Request(EVENTS, event["metadata"]["namespace"], event["metadata"]["name"])
        try:
            try:
                await self.registry.create(request, event)
            except errors.AlreadyExists:
                await self.registry.update(request, repeated(self.registry.get(request).obj, event))
        except errors.ApiError as err:  # e.g. the namespace is going away: nothing to report on
            log.debug("event %s not recorded: %s", event["reason"], err)
