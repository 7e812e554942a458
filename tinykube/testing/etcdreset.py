"""`Cluster.reset()` at the etcd level: remember every key after start-up, later delete the keys created since and
write back the initial objects a test changed or deleted — a few etcd transactions instead of one API call per
object and a wait for the namespace controller (see bench/fixture.py for the time it takes).

The apiserver's watch cache, the controllers, DNS and the node agent all see these writes as ordinary watch
events (as if someone force-deleted the objects), so every component follows without being told.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from dataclasses import dataclass
from typing import Any

from tinykube.api.resources import RESOURCES, ResourceInfo

PREFIX = b"/registry/"
MAX_TXN_OPS = 128  # etcd's default --max-txn-ops
# Kept as the cluster's own components left them: node heartbeats and leases change all the time, and a Node's
# status written back from start-up would lie until the next heartbeat.
LIVE = (b"/registry/minions/", b"/registry/leases/")  # minions: Nodes, as upstream stores them

Keys = dict[bytes, bytes]  # key -> value


@dataclass(frozen=True, slots=True)
class Plan:
    delete: list[bytes]
    restore: Keys

    def __bool__(self) -> bool:
        return bool(self.delete or self.restore)


def _live(key: bytes) -> bool:
    return key.startswith(LIVE)


def plan_reset(initial: Keys, now: Keys) -> Plan:
    """What turns `now` back into `initial`; a pure function (tested without etcd)."""
    delete = [key for key in now if key not in initial and not key.startswith(b"/registry/leases/")]
    restore = {key: value for key, value in initial.items() if now.get(key) != value and not _live(key)}
    return Plan(sorted(delete), restore)


def touched(plan: Plan) -> list[ResourceInfo]:
    """The API resources whose objects the plan writes (their watch caches must catch up)."""
    keys = [*plan.delete, *plan.restore]
    return [r for r in RESOURCES if any(k.startswith(PREFIX + f"{r.storage_segment}/".encode()) for k in keys)]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _prefix_end(prefix: bytes) -> bytes:
    return prefix[:-1] + bytes([prefix[-1] + 1])


def _operations(plan: Plan) -> list[dict[str, Any]]:
    deletes = [{"request_delete_range": {"key": _b64(key)}} for key in plan.delete]
    puts = [{"request_put": {"key": _b64(key), "value": _b64(value)}} for key, value in plan.restore.items()]
    return deletes + puts


class Etcd:
    """The few etcd calls reset needs, through etcd's JSON gateway (`/v3/kv/*`): plain HTTP on loopback, so
    urllib does (no asyncio in the test's thread, no client to keep)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            reply: dict[str, Any] = json.loads(response.read())
        return reply

    def keys(self) -> Keys:
        reply = self._post("/v3/kv/range", {"key": _b64(PREFIX), "range_end": _b64(_prefix_end(PREFIX))})
        return {base64.b64decode(kv["key"]): base64.b64decode(kv.get("value", "")) for kv in reply.get("kvs", [])}

    def apply(self, plan: Plan) -> int:
        """In transactions of at most MAX_TXN_OPS operations (one for a test's worth of objects); the revision of
        the last one."""
        operations, revision = _operations(plan), 0
        for start in range(0, len(operations), MAX_TXN_OPS):
            reply = self._post("/v3/kv/txn", {"success": operations[start : start + MAX_TXN_OPS]})
            revision = int(reply["header"]["revision"])
        return revision
