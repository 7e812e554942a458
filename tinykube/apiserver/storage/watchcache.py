"""One etcd watch per resource, fanned out to every client watch; GET and LIST are answered from it.

The cache holds every object of one resource (parsed and pre-serialised with its resourceVersion) and a bounded
window of recent events, so a watch can resume from a recent resourceVersion and a write is serialised once no
matter how many watchers receive it. Writers wait for `wait_for(revision)` before answering, so a client reads
its own writes from the cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from tinykube.api.inprocess import CHECK_ENV
from tinykube.api.keptjson import dumps_kept
from tinykube.api.resources import ResourceInfo
from tinykube.api.sharedstrings import StringPool
from tinykube.store.errors import Compacted, StoreError
from tinykube.store.etcd import EtcdStore, Progress, WatchEvent

log = logging.getLogger(__name__)

EVENT_WINDOW = 10_000  # events kept per resource for resuming watches
PROGRESS_RESEND = 0.25  # seconds after which an unanswered progress request is sent again
WATCHER_BACKLOG = 10_000  # a watcher further behind than this is closed, as upstream closes slow watchers
# In-process informers share the decoded objects (tinykube.api.inprocess): the tests' clusters check they leave
# them as they were, writing the changed ones here.
SHARED_CHECK_FILE = os.environ.get(CHECK_ENV, "")
STRINGS = StringPool()  # the decoded objects' repeated values, one string each across every cache of the process


class CachedObject:
    """One version of an object as the cache holds it: encoded (`raw`, stamped and normalized: what reads and
    watches send) and decoded without its managedFields (`obj`: what filters, printers and the in-process informers
    read; upstream's controller manager drops them from its informers too, and they were half of a decoded object).
    `full()` decodes the whole object for the few answers that carry managedFields from the decoded form.

    A version superseded by a newer one lets its decoded form go (`release`) and decodes it again only if asked for:
    the window of past events is most of a busy cache's memory (3 of 5 decoded pods at 5,000 pods), and only a
    watch resuming from the past reads it."""

    __slots__ = ("_obj", "raw", "revision")

    def __init__(self, obj: dict[str, Any], raw: bytes, revision: int) -> None:
        """`obj`: the decoded form of `raw`, which is made lean here (it must not be shared yet)."""
        obj["metadata"].pop("managedFields", None)
        STRINGS.share(obj)
        self._obj: dict[str, Any] | None = obj
        self.raw = raw
        self.revision = revision

    @property
    def obj(self) -> dict[str, Any]:
        obj = self._obj
        if obj is None:
            obj = self.full()
            obj["metadata"].pop("managedFields", None)
            STRINGS.share(obj)
            self._obj = obj
        return obj

    def full(self) -> dict[str, Any]:
        """The whole object, managedFields too: a fresh decoding, the caller's own."""
        decoded: dict[str, Any] = orjson.loads(self.raw)
        return decoded

    def release(self) -> None:
        if SHARED_CHECK_FILE and self._obj is not None and self._changed(self._obj):
            _report_changed(self._obj)
        self._obj = None

    def _changed(self, obj: dict[str, Any]) -> bool:
        whole = self.full()
        whole["metadata"].pop("managedFields", None)
        return whole != obj

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace", ""))

    @property
    def labels(self) -> Mapping[str, str]:
        labels: Mapping[str, str] = self.obj["metadata"].get("labels") or {}
        return labels


def _report_changed(obj: dict[str, Any]) -> None:
    meta = obj.get("metadata") or {}
    line = f"{obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name')} {meta.get('resourceVersion')}\n"
    log.error("a shared cached object was changed by its receiver: %s", line.strip())
    with open(SHARED_CHECK_FILE, "a") as out:
        out.write(line)


@dataclass(frozen=True, slots=True)
class CacheEvent:
    type: str  # ADDED, MODIFIED, DELETED
    revision: int
    current: CachedObject
    previous: CachedObject | None


Normalize = Callable[[dict[str, Any]], None]


def decode(value: bytes, revision: int, normalize: Normalize | None = None) -> CachedObject:
    obj = orjson.loads(value)
    obj["metadata"]["resourceVersion"] = str(revision)
    if normalize is not None:
        normalize(obj)
    return CachedObject(obj, dumps_kept(obj), revision)


def stamped(full: dict[str, Any], revision: int) -> CachedObject:
    """An object's whole state (`CachedObject.full`, its own) at another revision."""
    full["metadata"]["resourceVersion"] = str(revision)
    return CachedObject(full, dumps_kept(full), revision)


# A watcher's trigger: (field, value) that every object it can match has, so that the cache offers an event only
# to the watchers of the values its object had and has (upstream's cacher "indexed triggers": each node's kubelet
# watches the pods of its node, and a pod's change must not cost one selector test per node).
Trigger = tuple[str, str]
NAMESPACE = "metadata.namespace"
NAME = "metadata.name"  # a watch of one object (a kubelet's of its Node, an informer's of one ConfigMap)
NODE_NAME = "spec.nodeName"
TRIGGER_FIELDS = {("", "pods"): NODE_NAME}  # resource (group, plural) -> its indexed field, beside the namespace


def trigger_value(field: str, cached: CachedObject) -> str:
    if field == NAMESPACE:
        return cached.namespace
    if field == NAME:
        return str(cached.obj["metadata"].get("name", ""))
    return str((cached.obj.get("spec") or {}).get("nodeName") or "")  # NODE_NAME, the one other


class Watcher:
    """A client watch: the cache pushes matching events into its queue; None marks the end (closed or too slow).
    `trigger`, if given, is a (field, value) every object `matches` accepts has."""

    def __init__(self, matches: Callable[[CachedObject], bool], trigger: Trigger | None = None) -> None:
        self.matches = matches
        self.trigger = trigger
        self.queue: asyncio.Queue[CacheEvent | None] = asyncio.Queue()

    def offer(self, event: CacheEvent) -> None:
        if self.queue.qsize() > WATCHER_BACKLOG:
            self.queue.put_nowait(None)
            return
        new = self.matches(event.current)
        old = event.previous is not None and self.matches(event.previous)
        if event.type == "DELETED":
            if new:
                self.queue.put_nowait(event)
        elif new and old:
            self.queue.put_nowait(event)
        elif new:
            self.queue.put_nowait(CacheEvent("ADDED", event.revision, event.current, event.previous))
        elif old:
            self.queue.put_nowait(CacheEvent("DELETED", event.revision, event.current, event.previous))


class WatchCache:
    def __init__(self, store: EtcdStore, resource: ResourceInfo, normalize: Normalize | None = None) -> None:
        self.store = store
        self.resource = resource
        self.normalize = normalize  # applied to each object read from etcd (custom resources: defaults, pruning)
        self.prefix = resource.storage_segment + "/"
        self.objects: dict[str, CachedObject] = {}
        # the keys by the value of the resource's indexed field (pods: by node), for a list pinned to one value
        # (each kubelet's), which would otherwise read every object: upstream's cacher indexes it too
        self.index_field = TRIGGER_FIELDS.get((resource.group, resource.plural)) if resource.custom is None else None
        self._indexed: dict[str, set[str]] = {}
        self.revision = 0  # reached by events or by etcd's progress reports: what readers may rely on
        # Reached by the events themselves (or a list). etcd before 3.4.25/3.5.8 may send a progress report ahead
        # of events it has yet to deliver (etcd#15220), so a writer waits for its own event, and the watch resumes
        # after the last event, never after a report.
        self.applied = 0
        self.oldest = 0  # watches may resume from any revision >= oldest
        self.events: deque[CacheEvent] = deque(maxlen=EVENT_WINDOW)
        self.watchers: set[Watcher] = set()
        self._untriggered: set[Watcher] = set()
        self._triggered: dict[str, dict[str, set[Watcher]]] = {}  # field -> value -> the watchers of that value
        # (revision, tiebreak, future) for writers waiting to see their own write: woken in revision order
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._writers: list[tuple[int, int, asyncio.Future[None]]] = []  # the same, woken by events only
        self._tiebreak = itertools.count()
        self._task: asyncio.Task[None] | None = None
        self._progress_asked: float | None = None  # when the progress request in flight was sent
        self.ready = asyncio.Event()

    async def start(self) -> None:
        await self._relist()
        self._task = asyncio.create_task(self._run(), name=f"watchcache-{self.resource.plural}")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for watcher in self.watchers:
            watcher.queue.put_nowait(None)

    async def _relist(self) -> None:
        listed = await self.store.scan(self.prefix)
        self.objects = {
            kv.key[len(self.prefix) :]: decode(kv.value, kv.mod_revision, self.normalize) for kv in listed.items
        }
        self._indexed = {}
        if self.index_field is not None:
            for key, cached in self.objects.items():
                self._indexed.setdefault(trigger_value(self.index_field, cached), set()).add(key)
        self.events.clear()
        self.revision = self.applied = self.oldest = listed.revision
        self._progressed(listed.revision, applied=True)
        for watcher in self.watchers:  # their view is no longer continuous: make them reconnect
            watcher.queue.put_nowait(None)
        self.watchers.clear()
        self.ready.set()

    async def _run(self) -> None:
        backoff = 0.1
        while True:
            try:
                async for batch in self.store.watch(self.prefix, self.applied + 1):
                    if isinstance(batch, Progress):
                        self._progress_asked = None
                        self._progressed(batch.revision)
                        if self._waiters:  # readers of a revision this report did not reach: ask again
                            self._ask_progress()
                    else:
                        self._apply(batch)
                    backoff = 0.1
            except Compacted:
                log.warning("watch cache for %s fell behind compaction; relisting", self.resource.plural)
                await self._relist_quietly()
            except StoreError as err:
                log.warning("watch cache for %s lost etcd (%s); retrying", self.resource.plural, err)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    async def _relist_quietly(self) -> None:
        with contextlib.suppress(StoreError):
            await self._relist()

    def _apply(self, batch: list[WatchEvent]) -> None:
        for change in batch:
            self._apply_one(change)
        self._progressed(batch[-1].revision, applied=True)

    def _progressed(self, revision: int, *, applied: bool = False) -> None:
        """Everything under the prefix up to `revision` is applied (or reported so): wake who waits for it."""
        self.revision = max(self.revision, revision)
        _wake(self._waiters, self.revision)
        if applied:
            self.applied = max(self.applied, revision)
            _wake(self._writers, self.applied)

    def _apply_one(self, change: WatchEvent) -> None:
        name = change.key[len(self.prefix) :]
        previous = self.objects.get(name)
        if change.type == "DELETE":
            if previous is None and change.prev_value is None:
                return
            last = previous.full() if previous else orjson.loads(change.prev_value or b"{}")
            current = stamped(last, change.revision)  # upstream: the last state, at the deletion's revision
            self.objects.pop(name, None)
            event = CacheEvent("DELETED", change.revision, current, previous)
        else:
            current = decode(change.value, change.revision, self.normalize)
            self.objects[name] = current
            event = CacheEvent("MODIFIED" if previous else "ADDED", change.revision, current, previous)
        if self.index_field is not None:
            self._reindex(name, previous, None if event.type == "DELETED" else current)
        if len(self.events) == self.events.maxlen:
            self.oldest = self.events[0].revision
        self.events.append(event)
        for watcher in self.receivers(event):
            watcher.offer(event)
        if previous is not None:  # offered (watchers filter on it as it is offered): only the window holds it now
            previous.release()

    def receivers(self, event: CacheEvent) -> list[Watcher]:
        """The watchers that may match `event`: the untriggered ones and those of its object's trigger values."""
        found = list(self._untriggered)
        for field, by_value in self._triggered.items():
            for value in _trigger_values(field, event):
                found += by_value.get(value, ())
        return found

    async def wait_for(self, revision: int, timeout: float = 3.0, *, own_write: bool = False) -> bool:
        """Wait until the cache has seen `revision`; False if it did not within `timeout`. A writer waiting for its
        own write (`own_write`) knows an event will come, and waits for it; any other reader's revision may be
        another resource's, and only etcd's progress report moves this cache there."""
        if (self.applied if own_write else self.revision) >= revision:
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._writers if own_write else self._waiters, (revision, next(self._tiebreak), waiter))
        if not own_write:
            self._ask_progress()
        try:
            async with asyncio.timeout(timeout):  # cheaper than wait_for; every write waits here once
                await waiter
        except TimeoutError:
            return False
        return True

    def _ask_progress(self) -> None:
        """One progress request in flight per cache, however many readers wait (every consistent read waits here
        when the last write was another resource's); re-sent if its answer seems lost."""
        now = time.monotonic()
        if self._progress_asked is None or now - self._progress_asked > PROGRESS_RESEND:
            self._progress_asked = now
            self.store.request_progress(self.prefix)

    def get(self, key: str) -> CachedObject | None:
        return self.objects.get(key)

    def _reindex(self, key: str, before: CachedObject | None, after: CachedObject | None) -> None:
        assert self.index_field is not None
        if before is not None:
            value = trigger_value(self.index_field, before)
            keys = self._indexed.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._indexed[value]
        if after is not None:
            self._indexed.setdefault(trigger_value(self.index_field, after), set()).add(key)

    def indexed_items(self, field: str, value: str, namespace: str = "") -> Iterator[tuple[str, CachedObject]] | None:
        """(key, object) in key order of the objects whose `field` is `value` (only `namespace` when given); None
        if the cache does not index `field`."""
        if field != self.index_field:
            return None
        keys = sorted(self._indexed.get(value, ()))
        start = namespace + "/" if namespace else ""
        return ((key, self.objects[key]) for key in keys if key.startswith(start))

    def items(self, namespace: str = "") -> Iterator[tuple[str, CachedObject]]:
        """(key, object) in key order, only `namespace` when given."""
        if namespace:
            start = namespace + "/"
            return iter(sorted((k, v) for k, v in self.objects.items() if k.startswith(start)))
        return iter(sorted(self.objects.items()))

    def subscribe(self, watcher: Watcher, since: int) -> None:
        """Register `watcher`, first replaying the events after `since`. Raises Compacted if `since` is too old.
        The replay costs what is newer than `since` (the window is read from its end), and a triggered watcher is
        offered only the events of its trigger's value: 5,000 kubelets starting their watches each scanned and
        filtered the whole window, and that was all the CPU `up` had."""
        if since < self.oldest:
            raise Compacted(self.oldest)
        newer = []
        for event in reversed(self.events):
            if event.revision <= since:
                break
            newer.append(event)
        for event in reversed(newer):
            if watcher.trigger is None or watcher.trigger[1] in _trigger_values(watcher.trigger[0], event):
                watcher.offer(event)
        self.watchers.add(watcher)
        if watcher.trigger is None:
            self._untriggered.add(watcher)
        else:
            field, value = watcher.trigger
            self._triggered.setdefault(field, {}).setdefault(value, set()).add(watcher)

    def unsubscribe(self, watcher: Watcher) -> None:
        self.watchers.discard(watcher)
        if watcher.trigger is None:
            self._untriggered.discard(watcher)
            return
        field, value = watcher.trigger
        by_value = self._triggered.get(field, {})
        watchers = by_value.get(value, set())
        watchers.discard(watcher)
        if not watchers:
            by_value.pop(value, None)
        if not by_value:
            self._triggered.pop(field, None)


def _trigger_values(field: str, event: CacheEvent) -> tuple[str, ...]:
    """The values of `field` the event's object has and had: its watchers are those of either."""
    value = trigger_value(field, event.current)
    if event.previous is None or (before := trigger_value(field, event.previous)) == value:
        return (value,)
    return value, before


def _wake(waiters: list[tuple[int, int, asyncio.Future[None]]], revision: int) -> None:
    while waiters and waiters[0][0] <= revision:
        _, _, waiter = heapq.heappop(waiters)
        if not waiter.done():
            waiter.set_result(None)
