"""Events recorded by controllers through the API (best effort: reporting never fails the work it reports on)."""

from __future__ import annotations

import logging
from typing import Any

from tinykube.api import errors
from tinykube.api.events import new_event, repeated
from tinykube.api.resources import by_path
from tinykube.client.rest import RestClient

log = logging.getLogger(__name__)

EVENTS = by_path("", "v1", "events")


async def record_event(
    client: RestClient,
    obj: dict[str, Any],
    *,
    type_: str,
    reason: str,
    message: str,
    component: str,
    host: str = "",
    series: str | None = None,
) -> None:
    assert EVENTS is not None
    event = new_event(obj, type_, reason, message, component, host=host, series=series)
    namespace, name = event["metadata"]["namespace"], event["metadata"]["name"]
    try:
        try:
            await client.create(EVENTS, namespace, event)
        except errors.AlreadyExists:
            await client.update(EVENTS, namespace, repeated(await client.get(EVENTS, namespace, name), event))
    except Exception as err:
        log.debug("event %s/%s not recorded: %s", namespace, reason, err)
