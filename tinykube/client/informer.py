"""Informers: a local, indexed cache of one resource, kept current by list/watch, with event handlers.

Every tinykube component follows the API the way client-go's reflector does:

    list ──▶ watch from the list's resourceVersion ──▶ stream ends: watch again from the last version seen
     ▲                                                   │
     └──────────── 410 Gone ("too old resource version") ◀┘

Bookmarks keep the resourceVersion fresh while nothing in view changes, so a reconnect rarely needs a relist.
While the apiserver is away, attempts back off exponentially (0.1 s doubling to 5 s). A relist is compared with the
cache and only the difference reaches handlers — objects deleted while the informer was disconnected produce
`on_delete`, unchanged ones nothing — so handlers always see one consistent sequence of states.

Handlers run one at a time, in event order, inside the informer's task: keep them quick (typically they add a key to
a `WorkQueue`). They get the cached objects themselves, which must be treated as read-only: in `tinykube up` they
are the apiserver's own (`tinykube.api.inprocess`). Cached objects carry no `metadata.managedFields`, as upstream's
controller manager drops them from its informers: no component reads them, and they were half of each object.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import random
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

from tinykube.api import errors
from tinykube.api.resources import ResourceInfo
from tinykube.client.rest import RestClient, TransportError

log = logging.getLogger(__name__)

Object = dict[str, Any]
IndexFunc = Callable[[Object], list[str]]
ObjectHandler = Callable[[Object], Awaitable[None] | None]
UpdateHandler = Callable[[Object, Object], Awaitable[None] | None]

BACKOFF_INITIAL = 0.1
BACKOFF_CAP = 5.0
WATCH_TIMEOUT = (300, 600)  # seconds; randomised, as upstream, so reconnects of many clients spread out


def object_key(obj: Object) -> str:
    """ "namespace/name", or "name" for a cluster-scoped object."""
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])


def _trimmed(obj: Object) -> Object:
    """`obj` without its managedFields (an object shared with the apiserver's cache has none: left unchanged)."""
    obj["metadata"].pop("managedFields", None)
    return obj


def namespace_index(obj: Object) -> list[str]:
    return [obj["metadata"].get("namespace", "")]


# An index's keys for one value: the key itself while it is the only one, else a set. Most values index one object
# (an owner's UID, a Service's selector, the Service of a slice): a set per value was ~650 bytes per Service.
Keys = str | set[str]


def _keys(held: Keys | None) -> tuple[str, ...] | set[str]:
    if held is None:
        return ()
    return (held,) if isinstance(held, str) else held


class Store:
    """Objects by key, plus secondary indexes: index name → indexed value → keys."""

    def __init__(self) -> None:
        self._objects: dict[str, Object] = {}
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indexes: dict[str, dict[str, Keys]] = {}
        self.add_index("namespace", namespace_index)

    def __len__(self) -> int:
        return len(self._objects)

    def add_index(self, name: str, fn: IndexFunc) -> None:
        """Index objects by the values `fn(obj)` returns; objects already stored are indexed at once. Adding the
        same index again does nothing (a controller restarted on shared informers adds its indexes again)."""
        if self._index_funcs.get(name) is fn:
            return
        if name in self._index_funcs:
            raise ValueError(f"index {name!r} already exists")
        self._index_funcs[name] = fn
        self._indexes[name] = {}
        for key, obj in self._objects.items():
            self._index(name, key, obj)

    def get(self, key: str) -> Object | None:
        return self._objects.get(key)

    def keys(self) -> set[str]:
        return set(self._objects)

    def by_index(self, name: str, value: str) -> list[Object]:
        """Objects whose index function returned `value`, in key order. KeyError for an unknown index."""
        return [self._objects[key] for key in sorted(_keys(self._indexes[name].get(value)))]

    def count(self, name: str, value: str) -> int:
        """How many objects `by_index(name, value)` would return, without building the list."""
        return len(_keys(self._indexes[name].get(value)))

    def put(self, obj: Object) -> Object | None:
        """Store `obj`, returning the object it replaced."""
        key = object_key(obj)
        old = self.delete(key)
        self._objects[key] = obj
        for name in self._index_funcs:
            self._index(name, key, obj)
        return old

    def delete(self, key: str) -> Object | None:
        old = self._objects.pop(key, None)
        if old is not None:
            for name, fn in self._index_funcs.items():
                index = self._indexes[name]
                for value in fn(old):
                    held = index.get(value)
                    if held == key:
                        del index[value]
                    elif isinstance(held, set):
                        held.discard(key)
                        if len(held) == 1:
                            index[value] = held.pop()
        return old

    def _index(self, name: str, key: str, obj: Object) -> None:
        index = self._indexes[name]
        for value in self._index_funcs[name](obj):
            held = index.get(value)
            if held is None:
                index[value] = key
            elif isinstance(held, str):
                if held != key:
                    index[value] = {held, key}
            else:
                held.add(key)

    def list(self) -> list[Object]:  # last: a method named `list` shadows the builtin in annotations below it
        return list(self._objects.values())


@dataclass(eq=False)
class HandlerScope:
    """The handlers that tasks started inside `with scope:` add, removed from every informer by `close()`.

    Components that stop while the informers they shared run on (the controllers of a leader that stepped down)
    must take their handlers with them, or a second term would see every event twice.
    """

    closed: bool = False
    _informers: set[Informer] = field(default_factory=set)
    _token: contextvars.Token[HandlerScope | None] | None = None

    def __enter__(self) -> HandlerScope:
        self._token = _SCOPE.set(self)
        return self

    def __exit__(self, *_exc: object) -> None:
        assert self._token is not None
        _SCOPE.reset(self._token)

    def close(self) -> None:
        self.closed = True
        for informer in self._informers:
            informer.remove_handlers(self)


_SCOPE: contextvars.ContextVar[HandlerScope | None] = contextvars.ContextVar("informer_handler_scope", default=None)


@dataclass(frozen=True, slots=True)
class _Handlers:
    on_add: ObjectHandler | None
    on_update: UpdateHandler | None
    on_delete: ObjectHandler | None
    scope: HandlerScope | None = None

    @property
    def dropped(self) -> bool:
        return self.scope is not None and self.scope.closed


async def _call(fn: Callable[..., Awaitable[None] | None] | None, *args: Object) -> None:
    if fn is None:
        return
    try:
        result = fn(*args)
        if result is not None:
            await result
    except Exception:
        log.exception("informer event handler %r failed", fn)


@dataclass(slots=True)
class _Backoff:
    delay: float = BACKOFF_INITIAL

    def reset(self) -> None:
        self.delay = BACKOFF_INITIAL

    def next(self) -> float:
        delay, self.delay = self.delay, min(self.delay * 2, BACKOFF_CAP)
        return delay


def _status_error(status: Object) -> errors.ApiError:
    """The error an ERROR watch event carries (its object is a Status)."""
    message = str(status.get("message", "watch error"))
    if status.get("code") == 410 or status.get("reason") in ("Expired", "Gone"):
        return errors.Expired(message)
    return errors.ApiError(message)


class Informer:
    def __init__(
        self,
        client: RestClient,
        resource: ResourceInfo,
        *,
        namespace: str = "",
        label_selector: str = "",
        field_selector: str = "",
        resync_period: float | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace if resource.namespaced else ""
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync_period = resync_period
        self.store = Store()
        self.synced = asyncio.Event()  # set once the first list is in the store; stays set
        self.resource_version = ""  # the last one seen; "" makes the next round start with a list
        self._handlers: list[_Handlers] = []
        self._lock = asyncio.Lock()  # held while the store changes and handlers run, so they see one sequence
        self._tasks: list[asyncio.Task[None]] = []
        self._late: set[asyncio.Task[None]] = set()

    @property
    def name(self) -> str:
        parts = [self.resource.plural, self.namespace, self.label_selector, self.field_selector]
        return " ".join(part for part in parts if part)

    def __repr__(self) -> str:
        return f"<Informer {self.name}>"

    def add_handler(
        self,
        *,
        on_add: ObjectHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: ObjectHandler | None = None,
    ) -> None:
        """Register handlers (plain functions or coroutine functions).

        A handler added once the store has objects first gets `on_add` for each of them, then events from there.
        """
        scope = _SCOPE.get()
        if scope is not None:
            scope._informers.add(self)
        handlers = _Handlers(on_add, on_update, on_delete, scope)
        if not self.store and not self._lock.locked():
            self._handlers.append(handlers)
            return
        task = asyncio.create_task(self._join_late(handlers))
        self._late.add(task)
        task.add_done_callback(self._late.discard)

    def remove_handlers(self, scope: HandlerScope) -> None:
        """Drop the handlers added inside `scope` (an event being delivered may still reach them)."""
        self._handlers = [h for h in self._handlers if h.scope is not scope]

    async def _join_late(self, handlers: _Handlers) -> None:
        async with self._lock:
            for obj in self.store.list():
                if handlers.dropped:
                    return
                await _call(handlers.on_add, obj)
            if not handlers.dropped:  # its scope may have closed while it caught up
                self._handlers.append(handlers)

    async def wait_synced(self) -> None:
        await self.synced.wait()

    async def run(self) -> None:
        """List and watch until `stop()`. Run again after a stop, it resumes from the last resourceVersion."""
        if self._tasks:
            raise RuntimeError(f"{self!r} is already running")
        self._tasks = [asyncio.create_task(self._list_and_watch(), name=f"informer {self.name}")]
        if self.resync_period:
            self._tasks.append(asyncio.create_task(self._resync(self.resync_period)))
        try:
            done, _ = await asyncio.wait(self._tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            tasks, self._tasks = self._tasks, []
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for task in done:
            if not task.cancelled() and (err := task.exception()) is not None:
                raise err

    def stop(self) -> None:
        """Make a running `run()` return (handlers get nothing more until it is run again)."""
        for task in self._tasks:
            task.cancel()

    async def _list_and_watch(self) -> None:
        backoff = _Backoff()
        while True:
            try:
                if not self.resource_version:
                    await self._relist()
                    backoff.reset()
                if await self._watch(backoff):
                    continue  # a stream that served events ended (its timeout): watch on at once
                log.debug("%r: watch ended without events", self)
            except errors.Expired as err:
                log.info("%r: %s; relisting", self, err)
                self.resource_version = ""
            except errors.NotFound as err:  # a custom resource whose CRD is going: its owner stops this informer
                log.info("%r: list/watch failed (%r); retrying in %.1f s", self, err, backoff.delay)
            except (TransportError, errors.ApiError) as err:
                log.warning("%r: list/watch failed (%r); retrying in %.1f s", self, err, backoff.delay)
            except Exception:
                log.exception("%r: list/watch failed; retrying in %.1f s", self, backoff.delay)
            await asyncio.sleep(backoff.next())

    async def _relist(self) -> None:
        listing = await self.client.list(self.resource, self.namespace, **self._selectors())
        fresh = {object_key(obj): self._complete(obj) for obj in listing["items"]}
        async with self._lock:
            await self._replace(fresh)
        self.resource_version = listing["metadata"]["resourceVersion"]
        self.synced.set()

    def _complete(self, obj: Object) -> Object:
        """List items come without kind and apiVersion; watch events have them. Make the cache uniform."""
        obj.setdefault("kind", self.resource.kind)
        obj.setdefault("apiVersion", self.resource.api_version)
        return _trimmed(obj)

    async def _replace(self, fresh: dict[str, Object]) -> None:
        """Make the store equal `fresh`, telling handlers only what changed."""
        for key in sorted(self.store.keys() - fresh.keys()):
            gone = self.store.delete(key)
            assert gone is not None
            await self._notify("on_delete", gone)
        for key, obj in fresh.items():
            old = self.store.get(key)
            if old is None:
                self.store.put(obj)
                await self._notify("on_add", obj)
            elif old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                self.store.put(obj)
                await self._notify("on_update", old, obj)

    async def _watch(self, backoff: _Backoff) -> bool:
        """Follow one watch stream from `resource_version`; True if it delivered any event."""
        params = {
            **self._selectors(),
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(random.randint(*WATCH_TIMEOUT)),
        }
        seen = False
        stream = cast(AsyncGenerator[Object, None], self.client.watch(self.resource, self.namespace, **params))
        async with contextlib.aclosing(stream) as events:  # ends the HTTP stream at once on ERROR or cancel
            async for event in events:
                await self._on_event(event["type"], event["object"])
                seen = True
                backoff.reset()
        return seen

    async def _on_event(self, kind: str, obj: Object) -> None:
        if kind == "ERROR":
            raise _status_error(obj)
        if kind != "BOOKMARK":
            async with self._lock:
                await self._apply(kind, _trimmed(obj))
        self.resource_version = obj["metadata"]["resourceVersion"]

    async def _apply(self, kind: str, obj: Object) -> None:
        if kind == "DELETED":
            self.store.delete(object_key(obj))
            await self._notify("on_delete", obj)
            return
        old = self.store.put(obj)
        if old is None:
            await self._notify("on_add", obj)
        else:
            await self._notify("on_update", old, obj)

    async def _resync(self, period: float) -> None:
        """Every `period`, `on_update(obj, obj)` for every cached object: level-triggered handlers catch up."""
        while True:
            await asyncio.sleep(period)
            if not self.synced.is_set():
                continue
            async with self._lock:
                for obj in self.store.list():
                    await self._notify("on_update", obj, obj)

    async def _notify(self, event: str, *args: Object) -> None:
        for handlers in list(self._handlers):
            await _call(getattr(handlers, event), *args)

    def _selectors(self) -> dict[str, str]:
        params = {"labelSelector": self.label_selector, "fieldSelector": self.field_selector}
        return {name: value for name, value in params.items() if value}


class SharedInformers:
    """One informer per (resource, namespace, label selector, field selector), shared by every component.

    Ask for informers and add handlers, then `start()`; `await wait_synced()` before acting on the caches.
    """

    def __init__(self, client: RestClient, *, resync_period: float | None = None) -> None:
        self.client = client
        self.resync_period = resync_period
        self._informers: dict[tuple[ResourceInfo, str, str, str], Informer] = {}
        self._tasks: dict[Informer, asyncio.Task[None]] = {}

    def informer(
        self, resource: ResourceInfo, *, namespace: str = "", label_selector: str = "", field_selector: str = ""
    ) -> Informer:
        key = (resource, namespace if resource.namespaced else "", label_selector, field_selector)
        if key not in self._informers:
            self._informers[key] = Informer(
                self.client,
                resource,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                resync_period=self.resync_period,
            )
        return self._informers[key]

    def start(self) -> None:
        """Run every informer that is not running yet (call again after asking for more)."""
        for informer in self._informers.values():
            if informer not in self._tasks:
                self._tasks[informer] = asyncio.create_task(informer.run(), name=f"informer {informer.name}")

    async def wait_synced(self) -> None:
        await asyncio.gather(*(informer.wait_synced() for informer in self._informers.values()))

    async def stop(self) -> None:
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
