"""Consistent reads: a GET or LIST without a resourceVersion sees every write acknowledged before it arrived.

As upstream's ConsistentListFromCache: read etcd's current revision (one linearizable range request for a single
key, count only), wait for the watch cache to reach it, then serve from the cache. While etcd is unreachable such
a read fails (503), as upstream's does; `resourceVersion=0` still reads whatever the cache has.

Concurrent readers share revision reads: a reader may use any read that *started after it arrived* (an earlier
one could miss a write acknowledged before the reader came), so at most two reads are ever in flight and a burst
of N readers costs about two etcd round trips, not N.
"""

from __future__ import annotations

import asyncio
import contextlib

from tinykube.api import errors
from tinykube.apiserver.storage.watchcache import WatchCache
from tinykube.store.errors import StoreError, StoreUnavailable
from tinykube.store.etcd import EtcdStore

REVISION_TIMEOUT = 5.0  # a revision read that takes longer than this answers 504, as a slow etcd does upstream


class RevisionReader:
    def __init__(self, store: EtcdStore) -> None:
        self.store = store
        self._task: asyncio.Task[int] | None = None
        self._sent = False  # whether `_task` has sent its request (a reader arriving later may not use it)
        self.reads = 0  # etcd round trips made, for tests and metrics

    async def current(self) -> int:
        """etcd's current revision, read by a request sent after this call began."""
        while True:
            task = self._task
            if task is None or task.done():
                self._sent = False
                self.reads += 1
                task = self._task = asyncio.ensure_future(self._read())
            if not self._sent:
                return await _answer(task)
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.shield(task)  # sent before we arrived: wait for it, then share the next one

    async def _read(self) -> int:
        self._sent = True
        async with asyncio.timeout(REVISION_TIMEOUT):
            return await self.store.revision()


async def _answer(task: asyncio.Task[int]) -> int:
    try:
        return await asyncio.shield(task)
    except TimeoutError:
        raise errors.Timeout("Timeout: Too large resource version: etcd did not answer in time") from None
    except StoreUnavailable as err:
        raise errors.ServiceUnavailable(f"etcd is unavailable: {err}") from err
    except StoreError as err:
        raise errors.ServiceUnavailable(f"etcd is unavailable: {err}") from err


def parse_revision(text: str) -> int:
    """A resourceVersion as sent (decimal digits only, as upstream's ParseUint)."""
    if not (text.isascii() and text.isdigit()):
        raise errors.BadRequest(f"invalid resource version: {text!r}")
    return int(text)


async def reach(cache: WatchCache, reader: RevisionReader, wanted: str) -> None:
    """Bring the cache to what a read with `resourceVersion=wanted` must see: "" → consistent with etcd now,
    "0" → anything, N → at least N (504 "Too large resource version" when etcd has not reached N yet, or the
    cache did not catch up in time)."""
    if wanted == "0":
        return
    if wanted == "":
        revision = await reader.current()
    else:
        revision = parse_revision(wanted)
        if revision <= cache.revision:
            return
        await check_not_future(reader, revision, cache)
    if not await cache.wait_for(revision):
        raise errors.too_large_resource_version(revision, cache.revision)


async def check_not_future(reader: RevisionReader, revision: int, cache: WatchCache | None = None) -> None:
    """A revision etcd has not reached yet cannot be read from anywhere: upstream's 504 "Too large resource
    version" at once (no client holds such a resourceVersion, so waiting would only delay the answer)."""
    current = await reader.current()
    if revision > current:
        raise errors.too_large_resource_version(revision, cache.revision if cache is not None else current)
