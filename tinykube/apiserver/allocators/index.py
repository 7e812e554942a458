"""Which allocation keys exist in etcd, kept current by one watch, so allocators can pick a free value without a
read per request. The index only guides the choice: etcd's compare-and-swap on key absence is what guarantees
uniqueness, so a stale index costs a retry, never a duplicate.

Storage layout: one key per allocated value, `allocations/<pool>/<value>` (e.g. `allocations/clusterips/10.96.0.1`,
`allocations/nodeports/30080`), whose value names the holder. Writing one small key per allocation keeps the write
cost and the contention independent of the range size (a /12 would make upstream's bitmap a 128 KiB value
rewritten on every allocation), and lets an allocation commit in the same transaction as its Service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

import orjson

from tinykube.store.errors import Compacted, StoreError
from tinykube.store.etcd import EtcdStore, Progress, WatchEvent

log = logging.getLogger(__name__)

PREFIX = "allocations/"


@dataclass(frozen=True, slots=True)
class Holder:
    """What holds an allocated value: a Service, by namespace, name and uid."""

    namespace: str
    name: str
    uid: str = ""
    kind: str = "Service"

    def encode(self) -> bytes:
        return orjson.dumps({"kind": self.kind, "namespace": self.namespace, "name": self.name, "uid": self.uid})

    @classmethod
    def decode(cls, raw: bytes) -> Holder:
        try:
            data: Any = orjson.loads(raw)
            return cls(str(data["namespace"]), str(data["name"]), str(data.get("uid", "")), str(data.get("kind", "")))
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return cls("", "", "", "?")  # not ours: still taken, and the repair loop will report it


@dataclass(frozen=True, slots=True)
class Entry:
    holder: Holder
    revision: int


class AllocationIndex:
    def __init__(self, store: EtcdStore) -> None:
        self.store = store
        self.entries: dict[str, Entry] = {}  # store key (`allocations/…`) -> holder and mod revision
        self._deleted_at: dict[str, int] = {}  # key -> revision of its last delete, to ignore late older events
        self.revision = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._relist()
        self._task = asyncio.create_task(self._run(), name="allocation-index")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def get(self, key: str) -> Entry | None:
        return self.entries.get(key)

    def keys(self, pool: str) -> list[str]:
        """The allocated values of one pool (the part after `<pool>/`)."""
        start = f"{PREFIX}{pool}/"
        return [k[len(start) :] for k in self.entries if k.startswith(start)]

    def note_committed(self, taken: dict[str, bytes], released: tuple[str, ...], revision: int) -> None:
        """Record our own committed claims and releases at once: the next request to this apiserver sees them
        without waiting for the watch (a released value is re-allocatable immediately, as upstream's is)."""
        for key, holder in taken.items():
            self._put(key, Entry(Holder.decode(holder), revision))
        for key in released:
            self._delete(key, revision)

    async def _relist(self) -> None:
        listed = await self.store.scan(PREFIX)
        self.entries = {kv.key: Entry(Holder.decode(kv.value), kv.mod_revision) for kv in listed.items}
        self._deleted_at.clear()
        self.revision = listed.revision

    async def _run(self) -> None:
        backoff = 0.1
        while True:
            try:
                async for batch in self.store.watch(PREFIX, self.revision + 1):
                    if isinstance(batch, Progress):
                        continue  # no one waits on this index for a revision
                    for change in batch:
                        self._apply(change)
                    self.revision = max(self.revision, batch[-1].revision)
                    backoff = 0.1
            except Compacted:
                with contextlib.suppress(StoreError):
                    await self._relist()
            except StoreError as err:
                log.warning("allocation index lost etcd (%s); retrying", err)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    def _apply(self, change: WatchEvent) -> None:
        key = change.key
        if change.type == "DELETE":
            self._delete(key, change.revision)
        else:
            self._put(key, Entry(Holder.decode(change.value), change.revision))

    def _delete(self, key: str, revision: int) -> None:
        current = self.entries.get(key)
        if current is None or current.revision < revision:
            self.entries.pop(key, None)
            self._deleted_at[key] = max(revision, self._deleted_at.get(key, 0))

    def _put(self, key: str, entry: Entry) -> None:
        current = self.entries.get(key)
        if current is not None and current.revision > entry.revision:
            return
        if self._deleted_at.get(key, 0) > entry.revision:
            return
        self.entries[key] = entry
