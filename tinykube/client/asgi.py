"""A `RestClient` transport to an ASGI application in the same process: `tinykube up`'s own components (controllers,
scheduler, node agents, DNS, proxies) call the apiserver's application directly, as uvicorn would deliver their
requests, without TLS, HTTP framing and sockets on either side (which took half of `up`'s CPU per pod).

Each request is what the server would hand the application: method, path, query, headers (the client's token and
user agent included, so authentication, authorization, admission, limits, metrics and audit see the same request),
body, and `http.disconnect` once the client has gone. The application runs in a task of its own, as uvicorn runs
it: a caller cancelled mid-request leaves the request to finish, as a client that hangs up leaves the server's
handler running. A stream's chunks pass through a bounded queue: a reader that falls behind holds the handler's
writes back, as a full socket buffer would.

An application that fails before it answers gives a 500, as uvicorn answers it; one that never answers (etcd gone,
say) is given up after `READ_TIMEOUT`, the HTTP transport's read timeout, with a `TransportError`.

Watches take the `tinykube.api.inprocess` extension: their events arrive as the watch cache's decoded objects,
shared with every other in-process informer (read-only), not as JSON lines to parse again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

from tinykube.api.inprocess import EVENTS_MESSAGE, EXTENSION
from tinykube.client.kubeconfig import Credentials
from tinykube.client.rest import READ_TIMEOUT, USER_AGENT, Answer, StreamChunk, TransportError, retry_after

log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

# Requests under way at once, the HTTP transport's pool (aiohttp's 100 connections): a process of many components
# stays below the apiserver's in-flight limits (200 writes) as it did over HTTP; streams are not counted.
CONCURRENT_REQUESTS = 100
STREAM_CHUNKS = 64  # a stream's chunks written and not yet read, before the handler's next write waits
_END = b""  # a stream's end in its queue (the application never writes an empty chunk: it is dropped)
_INTERNAL_ERROR = (500, b"Internal Server Error")


class AsgiTransport:
    def __init__(self, app: App, creds: Credentials, concurrent: int | None = None) -> None:
        """`concurrent`: requests under way at once, as the connections of an HTTP client's pool (None:
        CONCURRENT_REQUESTS)."""
        self.app = app
        url = urlsplit(creds.server)
        self.scheme = url.scheme or "https"
        self.server = (url.hostname or "127.0.0.1", url.port or (443 if self.scheme == "https" else 80))
        self.headers = [(b"host", url.netloc.encode()), (b"user-agent", USER_AGENT.encode())]
        if creds.token:
            self.headers.append((b"authorization", f"Bearer {creds.token}".encode()))
        self.running: set[asyncio.Task[None]] = set()
        self.slots = asyncio.Semaphore(concurrent or CONCURRENT_REQUESTS)

    async def close(self) -> None:
        """Requests still being handled are cancelled (the server's connections are closed)."""
        for task in list(self.running):
            task.cancel()
        await asyncio.gather(*self.running, return_exceptions=True)

    def _scope(self, method: str, path: str, query: dict[str, str] | None, headers: list[tuple[bytes, bytes]]) -> Any:
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1",
            "method": method,
            "scheme": self.scheme,
            "path": unquote(path),
            "raw_path": path.encode(),
            "query_string": urlencode(query).encode() if query else b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 0),
            "server": self.server,
            "extensions": {EXTENSION: {}},
        }

    def _start(self, exchange: _Exchange) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(exchange.run(self.app))
        self.running.add(task)
        task.add_done_callback(self.running.discard)
        return task

    async def call(
        self, method: str, path: str, query: dict[str, str] | None, content: bytes | None, content_type: str
    ) -> Answer:
        headers = self.headers
        if content:
            headers = [*headers, (b"content-type", content_type.encode()), (b"content-length", b"%d" % len(content))]
        async with self.slots:
            exchange = _Exchange(self._scope(method, path, query, headers), content or b"", None)
            self._start(exchange)
            # A timeout scope, not a loop timer (`call_later`) per request: tried, 10,000 starting pods took twice
            # the time and 200 MB more, as if each cancelled timer kept its exchange until it would have fired.
            try:
                async with asyncio.timeout(READ_TIMEOUT):
                    return await asyncio.shield(exchange.answered)
            except TimeoutError:
                exchange.hang_up()
                raise TransportError(f"no answer to {method} {path} in {READ_TIMEOUT:g} s") from None

    @contextlib.asynccontextmanager
    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[tuple[int, AsyncIterator[StreamChunk]]]:
        exchange = _Exchange(self._scope("GET", path, query, self.headers), b"", asyncio.Queue(STREAM_CHUNKS))
        task = self._start(exchange)
        try:
            try:
                async with asyncio.timeout(READ_TIMEOUT):
                    status = (await asyncio.shield(exchange.answered)).status
            except TimeoutError:
                raise TransportError(f"no answer to GET {path} in {READ_TIMEOUT:g} s") from None
            yield status, exchange.chunks()
        finally:
            exchange.hang_up()
            task.cancel()  # a watch's handler waits for its next event; nothing of it is left to finish


class _Exchange:
    """One request to the application: its `receive` and `send`, and the answer (status, and the whole body or,
    for a stream, its chunks as they are sent)."""

    def __init__(self, scope: Any, body: bytes, queue: asyncio.Queue[StreamChunk] | None) -> None:
        self.scope = scope
        self.body: bytes | None = body
        self.queue = queue  # a stream's; None: the body is answered whole
        self.answered: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        # retrieved even when its caller has gone (cancelled, or timed out), so no "never retrieved" warning
        self.answered.add_done_callback(lambda future: future.cancelled() or future.exception())
        self.gone = asyncio.Event()  # the client hung up, or has its whole answer: `receive` says disconnected
        self.hung_up = False
        self.ended = False  # a stream's handler has ended (its end queued, if there was room)
        self.status = 0
        self.retry_after: float | None = None
        self.parts: list[bytes] = []

    async def run(self, app: App) -> None:
        try:
            await app(self.scope, self.receive, self.send)
        except asyncio.CancelledError:
            self._fail(TransportError("Server disconnected"))  # the server's connection closed under the request
            raise
        except Exception:
            if not self.hung_up:  # a write to a client that has gone fails, as it does on a server: not news
                log.exception("Exception in ASGI application")
            self._answer(*_INTERNAL_ERROR)
        finally:
            self._end()
        self._answer(*_INTERNAL_ERROR)  # an application that returned without answering, as uvicorn answers it

    def _end(self) -> None:
        """A stream's end, however the handler ended (cancelled too): its reader stops once it has read the rest."""
        if self.queue is None or self.ended:
            return
        self.ended = True
        with contextlib.suppress(asyncio.QueueFull):  # full: the reader finds it empty and ended after the rest
            self.queue.put_nowait(_END)

    async def receive(self) -> Message:
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self.hung_up:
            raise OSError("the client has gone")  # what a server's send raises then (ASGI 2.4)
        kind = message["type"]
        if kind == "http.response.start":
            self.status = message["status"]
            found = [value for name, value in message.get("headers") or () if name.lower() == b"retry-after"]
            self.retry_after = retry_after(found[0]) if found else None
            if self.queue is not None:
                self._answer(self.status, b"")
        elif kind == EVENTS_MESSAGE:  # a stream's, by the extension this transport offers
            assert self.queue is not None
            await self.queue.put(message["events"])
        elif kind == "http.response.body":
            chunk = message.get("body", b"")
            more = message.get("more_body", False)
            if self.queue is None:
                self.parts.append(chunk)
                if not more:
                    self._answer(self.status, b"".join(self.parts))
                    self.gone.set()
                return
            if chunk:
                await self.queue.put(chunk)
            if not more:
                self._end()

    def _answer(self, status: int, body: bytes) -> None:
        if not self.answered.done():
            self.answered.set_result(Answer(status, body, self.retry_after))

    def _fail(self, err: Exception) -> None:
        if not self.answered.done():
            self.answered.set_exception(err)

    def hang_up(self) -> None:
        self.hung_up = True
        self.gone.set()

    async def chunks(self) -> AsyncIterator[StreamChunk]:
        assert self.queue is not None
        while not (self.ended and self.queue.empty()):
            chunk = await self.queue.get()
            if chunk == _END:
                return
            yield chunk
