"""`endpoints.kubernetes.io/last-change-trigger-time`: when the change behind an Endpoints or EndpointSlice write
happened (upstream's TriggerTimeTracker), shared by both controllers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tinykube.api.meta import parse_time

TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"

Object = dict[str, Any]


def rfc3339nano(moment: datetime) -> str:
    """Go's RFC3339Nano in UTC: fractional seconds without trailing zeros, none at all when whole."""
    moment = moment.astimezone(UTC)
    fraction = f".{moment.microsecond:06d}".rstrip("0") if moment.microsecond else ""
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def ready_since(pod: Object) -> datetime | None:
    conditions = (pod.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    return parse_time(ready.get("lastTransitionTime")) if ready else None


@dataclass(slots=True)
class _Seen:
    service: datetime | None
    pods: dict[str, datetime] = field(default_factory=dict)


class TriggerTimes:
    """A Service seen for the first time → its creation; later, the earliest Ready transition (or Service
    creation) newer than what the last sync saw."""

    def __init__(self) -> None:
        self._seen: dict[str, _Seen] = {}

    def observe(self, key: str, svc: Object, pods: Iterable[Object]) -> datetime | None:
        created = parse_time(svc["metadata"].get("creationTimestamp"))
        now = _Seen(created, {p["metadata"]["name"]: t for p in pods if (t := ready_since(p)) is not None})
        last, self._seen[key] = self._seen.get(key), now
        if last is None:
            return created
        changed = [t for name, t in now.pods.items() if name not in last.pods or t > last.pods[name]]
        if created is not None and (last.service is None or created > last.service):
            changed.append(created)
        return min(changed, default=None)

    def forget(self, key: str) -> None:
        self._seen.pop(key, None)
