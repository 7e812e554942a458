"""WATCH: stream `{"type": ..., "object": ...}` lines from the watch cache.

Resume semantics as upstream: no resourceVersion → synthetic ADDED for every current object, then changes;
`resourceVersion=N` → every change after N (410 Expired when N is older than the cache's window);
bookmarks when asked; the stream ends after `timeoutSeconds`. A client in this process that offers the
`tinykube.api.inprocess` extension gets the events as the cache's decoded objects, not as JSON lines.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import orjson
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.types import Send

from tinykube.api import errors
from tinykube.api.conversion import Converted
from tinykube.api.inprocess import EVENTS_MESSAGE, EXTENSION
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.http.negotiation import Rendering, partial_metadata
from tinykube.apiserver.kinds.printers import table
from tinykube.apiserver.listing import object_filter, watch_trigger
from tinykube.apiserver.registry import Registry
from tinykube.apiserver.storage.watchcache import CachedObject, CacheEvent, Watcher
from tinykube.store.errors import Compacted

BOOKMARK_INTERVAL = 10.0  # upstream sends one about every minute; sooner keeps informers' RVs fresh
DISCONNECT_CHECK = 5.0  # seconds between checks that an HTTP client is still there while nothing is sent


def _timeout(request: Request) -> float:
    text = request.query_params.get("timeoutSeconds")
    if text:
        try:
            return max(float(text), 0.0)
        except ValueError as err:
            raise errors.BadRequest(f"invalid timeoutSeconds {text!r}") from err
    return random.uniform(1800, 3600)  # upstream: between min-request-timeout and twice that


Event = dict[str, Any]
Chunk = bytes | list[Event]  # JSON lines, or (for an in-process client) decoded events


class _Encoder:
    """Events as JSON lines, the cached bytes themselves where the client reads the stored form."""

    def __init__(self, resource: ResourceInfo, view: Rendering, converted: Converted | None) -> None:
        self.resource = resource
        self.view = view
        self.converted = converted

    def rendered(self, obj: CachedObject) -> Any | None:
        """What the client reads of `obj` where that is not the stored form itself (None)."""
        if self.view.table:
            return table(self.resource, [obj.full()], include_object=self.view.include_object)
        if self.view.metadata_only:
            return partial_metadata(obj.full())
        converted = self.converted
        if converted and not converted.unchanged(obj.obj):
            return converted.out(obj.full())
        return None

    def event(self, kind: str, obj: CachedObject) -> Any:
        body = self.rendered(obj)
        if body is None:
            return b'{"type":"' + kind.encode() + b'","object":' + obj.raw + b"}\n"
        return orjson.dumps({"type": kind, "object": body}) + b"\n"

    def bookmark(self, revision: int, initial_end: bool = False) -> Any:
        return orjson.dumps(self.bookmark_event(revision, initial_end)) + b"\n"

    def bookmark_event(self, revision: int, initial_end: bool) -> Event:
        meta: dict[str, Any] = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": self.resource.kind, "apiVersion": self.resource.api_version, "metadata": meta}
        return {"type": "BOOKMARK", "object": obj}

    def join(self, events: list[Any]) -> Chunk:
        return b"".join(events)


class _SharedEncoder(_Encoder):
    """Events as dicts holding the cache's own decoded objects (read-only to their receivers)."""

    def event(self, kind: str, obj: CachedObject) -> Any:
        body = self.rendered(obj)
        return {"type": kind, "object": obj.obj if body is None else body}

    def bookmark(self, revision: int, initial_end: bool = False) -> Any:
        return [self.bookmark_event(revision, initial_end)]

    def join(self, events: list[Any]) -> Chunk:
        return events


class _EventsResponse(StreamingResponse):
    """A watch's response: its chunks of decoded events go out as `EVENTS_MESSAGE`s."""

    def __init__(self, chunks: AsyncIterator[Chunk], media_type: str) -> None:
        # Starlette types a stream as text or bytes; `stream_response` below sends the other chunks itself
        super().__init__(cast(AsyncIterator[bytes], chunks), media_type=media_type)
        self.headers["Transfer-Encoding"] = "chunked"

    async def stream_response(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        async for chunk in self.body_iterator:
            if isinstance(chunk, list):
                await send({"type": EVENTS_MESSAGE, "events": chunk})
            else:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def watch_response(
    request: Request,
    registry: Registry,
    resource: ResourceInfo,
    namespace: str,
    view: Rendering,
    name: str = "",
    converted: Converted | None = None,
) -> StreamingResponse:
    params = request.query_params
    keep = object_filter(resource, params)
    if name:
        base = keep
        keep = lambda o: o.obj["metadata"].get("name") == name and base(o)  # noqa: E731
    if namespace:
        scoped = keep
        keep = lambda o: o.namespace == namespace and scoped(o)  # noqa: E731
    cache = registry.cache(resource)
    watcher = Watcher(keep, watch_trigger(resource, params, namespace, name))
    wanted = params.get("resourceVersion", "")
    initial: list[CachedObject] = []
    send_initial = params.get("sendInitialEvents") == "true" or wanted in ("", "0")
    if send_initial:
        since = cache.revision
        initial = [obj for _, obj in cache.items(namespace) if keep(obj)]
    else:
        since = _parse_revision(wanted)
        await cache.wait_for(since)
    try:
        cache.subscribe(watcher, since)
    except Compacted as err:
        raise errors.Expired(f"too old resource version: {since} ({err.compact_revision})") from None
    shared = EXTENSION in (request.scope.get("extensions") or {})
    encoder = (_SharedEncoder if shared else _Encoder)(resource, view, converted)
    bookmarks = params.get("allowWatchBookmarks") == "true"
    end_marker = params.get("sendInitialEvents") == "true" and bookmarks
    stream = _stream(
        request,
        cache.unsubscribe,
        watcher,
        encoder,
        initial,
        since,
        _timeout(request),
        bookmarks,
        end_marker,
        # an in-process client that leaves cancels the handler itself: nothing to poll (thousands of node agents)
        float("inf") if shared else DISCONNECT_CHECK,
    )
    media = "application/json" if not view.table else "application/json;as=Table;v=v1;g=meta.k8s.io"
    return _EventsResponse(stream, media)


def _parse_revision(text: str) -> int:
    try:
        return int(text)
    except ValueError as err:
        raise errors.BadRequest(f"invalid resource version: {text}") from err


async def _stream(
    request: Request,
    unsubscribe: Any,
    watcher: Watcher,
    encoder: _Encoder,
    initial: list[CachedObject],
    since: int,
    timeout: float,
    bookmarks: bool,
    end_marker: bool,
    disconnect_check: float,
) -> AsyncIterator[Chunk]:
    deadline = time.monotonic() + timeout
    last = since
    try:
        if initial:
            yield encoder.join([encoder.event("ADDED", obj) for obj in initial])
        if end_marker:
            yield encoder.bookmark(since, initial_end=True)
        # Without bookmarks there is never one due: the wait is bounded by the disconnect check, else the deadline.
        next_bookmark = time.monotonic() + BOOKMARK_INTERVAL if bookmarks else float("inf")
        while (left := deadline - time.monotonic()) > 0:
            wait = min(left, disconnect_check, max(next_bookmark - time.monotonic(), 0.01))
            try:
                # `asyncio.timeout`, not `wait_for`: no task per wait, and an event is fanned out to every watcher
                event = await _next(watcher, wait)
            except TimeoutError:
                if await request.is_disconnected():
                    return
                if bookmarks and time.monotonic() >= next_bookmark:
                    yield encoder.bookmark(last)
                    next_bookmark = time.monotonic() + BOOKMARK_INTERVAL
                continue
            if event is None:
                return
            chunk, last = _drain(encoder, watcher, event)
            yield chunk
        if bookmarks:
            yield encoder.bookmark(last)
    finally:
        unsubscribe(watcher)


async def _next(watcher: Watcher, wait: float) -> CacheEvent | None:
    if not watcher.queue.empty():
        return watcher.queue.get_nowait()
    async with asyncio.timeout(wait):
        return await watcher.queue.get()


def _drain(encoder: _Encoder, watcher: Watcher, first: CacheEvent) -> tuple[Chunk, int]:
    """The event plus whatever else is already queued, in one write, and the last revision written."""
    chunks = [encoder.event(first.type, first.current)]
    last = first.revision
    while not watcher.queue.empty():
        event = watcher.queue.get_nowait()
        if event is None:
            watcher.queue.put_nowait(None)
            break
        chunks.append(encoder.event(event.type, event.current))
        last = event.revision
    return encoder.join(chunks), last
