"""Requests to upgrade the connection (WebSocket, SPDY), answered as kube-apiserver answers them.

kube-apiserver looks at `Upgrade` only in the handlers that stream: a watch is served over a WebSocket (one text
message per event; `handlers/watch.go`), so is a pod's log (`wsstream`: binary messages, or base64 text for the
`base64.binary.k8s.io` subprotocol), and the connect subresources (exec, attach, portforward) pass the upgrade on
to the kubelet. Every other handler ignores the header: an upgrade request gets the answer a plain request gets —
the object or list, or the `Status` of the error (404 "the server could not find the requested resource" for a
path that is not served) — and the client reports the failed handshake with that status and body.

uvicorn gives a WebSocket handshake to the application as a `websocket` scope, and a Starlette application with no
WebSocket route closes it unanswered: uvicorn then sends a bare 403 with an empty body, which the Python client
reports as "Handshake status 403 Forbidden" (it reads as an authorization failure). `WebSocketAsHttp` runs the
request through the ordinary HTTP application instead, as the GET it is, so authentication, errors and metrics are
the HTTP ones: a complete response goes back as the handshake's HTTP answer (ASGI's `websocket.http.response`
extension, which uvicorn offers), and a streamed 200 (a watch, a log) accepts the WebSocket and sends the stream
as messages.

SPDY (`Upgrade: SPDY/3.1`, kubectl's fallback) needs nothing here: uvicorn upgrades only to WebSocket and passes
any other upgrade request to the application as an ordinary HTTP request, which gets the ordinary answer.
`HttpProtocol` and `WebSocketProtocol` are uvicorn's, less two false alarms on the terminal (see each).

A handler that speaks a WebSocket protocol itself (exec, attach and portforward, relayed to the node agent by
`connect`) gets the request as every other does, so authentication, authorization and limits apply alike, and
takes the WebSocket over from the request's `WEBSOCKET_EXTENSION` (`_Exchange.take_over`).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from tinykube.streams.websocket import LenientServerProtocol

BASE64_PROTOCOL = "base64.binary.k8s.io"  # wsstream's subprotocols for a streamed log
BINARY_PROTOCOL = "binary.k8s.io"
WEBSOCKET_EXTENSION = "tinykube.websocket"  # in an upgraded request's scope["extensions"]: its `_Exchange`


class WebSocketAsHttp:
    """ASGI middleware: `websocket` scopes are served by the HTTP application `app`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket" or "websocket.http.response" not in (scope.get("extensions") or {}):
            await self.app(scope, receive, send)
            return
        exchange = _Exchange(scope, receive, send)
        scheme = "https" if scope.get("scheme") == "wss" else "http"
        extensions = {**scope["extensions"], WEBSOCKET_EXTENSION: exchange}
        http_scope = {**scope, "type": "http", "method": "GET", "scheme": scheme, "extensions": extensions}
        await self.app(http_scope, exchange.receive, exchange.send)


class _Exchange:
    """The HTTP side of one WebSocket handshake: an empty GET in, a response or a message stream out."""

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scope = scope
        self.ws_receive = receive
        self.ws_send = send
        self.request_given = False
        self.disconnected = False
        self.start: Message | None = None
        self.body: list[bytes] = []
        self.frame: Callable[[bytes], list[Message]] | None = None  # set once the WebSocket is accepted

    def take_over(self) -> tuple[Receive, Send]:
        """The WebSocket itself, for a handler that relays it (nothing else is sent through this exchange)."""
        self.disconnected = True
        return self.ws_receive, self.ws_send

    async def receive(self) -> Message:
        if not self.request_given:
            self.request_given = True
            return {"type": "http.request", "body": b"", "more_body": False}
        while not self.disconnected:  # what the client sends on a watch or log is ignored, as upstream does
            if (await self.ws_receive())["type"] == "websocket.disconnect":
                self.disconnected = True
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = {name.lower(): value for name, value in message.get("headers", [])}
            if message["status"] == 200 and b"content-length" not in headers:  # streamed: a watch or a log
                await self._accept(headers.get(b"content-type", b"").decode("latin-1"))
            else:
                self.start = message
            return
        if message["type"] != "http.response.body":
            return
        body: bytes = message.get("body", b"")
        more = message.get("more_body", False)
        if self.frame is None:
            self.body.append(body)
            if not more:
                assert self.start is not None
                status, headers = self.start["status"], self.start.get("headers", [])
                await self._send({"type": "websocket.http.response.start", "status": status, "headers": headers})
                await self._send({"type": "websocket.http.response.body", "body": b"".join(self.body)})
            return
        if body:
            for frame in self.frame(body):
                await self._send(frame)
        if not more:
            await self._send({"type": "websocket.close", "code": 1000})

    async def _accept(self, content_type: str) -> None:
        offered: list[str] = list(self.scope.get("subprotocols", []))
        if content_type.startswith("application/json"):
            # golang.org/x/net/websocket (upstream's watch) answers with the protocol the client asked for
            subprotocol = offered[0] if offered else None
            self.frame = _json_lines
        else:
            subprotocol = next((p for p in offered if p in (BASE64_PROTOCOL, BINARY_PROTOCOL)), None)
            self.frame = _base64 if subprotocol == BASE64_PROTOCOL else _binary
        accept: Message = {"type": "websocket.accept", "headers": [(b"content-type", content_type.encode("latin-1"))]}
        if subprotocol:
            accept["subprotocol"] = subprotocol
        await self._send(accept)

    async def _send(self, message: Message) -> None:
        """As uvicorn's HTTP side does, nothing is sent once the client has gone (its WebSocket side raises)."""
        if self.disconnected:
            return
        try:
            await self.ws_send(message)
        except OSError:  # uvicorn's ClientDisconnected
            self.disconnected = True


def _json_lines(chunk: bytes) -> list[Message]:
    """One text message per watch event, each with the newline that ends it, as upstream's encoder writes it."""
    lines = chunk.split(b"\n")
    messages: list[Message] = [{"type": "websocket.send", "text": (line + b"\n").decode()} for line in lines[:-1]]
    if lines[-1]:
        messages.append({"type": "websocket.send", "text": lines[-1].decode()})
    return messages


def _binary(chunk: bytes) -> list[Message]:
    return [{"type": "websocket.send", "bytes": chunk}]


def _base64(chunk: bytes) -> list[Message]:
    return [{"type": "websocket.send", "text": base64.b64encode(chunk).decode("ascii")}]


class HttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with the raw connection of a non-WebSocket upgrade request (SPDY) on offer.

    uvicorn serves such a request as a plain one (and warns "Unsupported upgrade request.": not here, it is on
    purpose). Its scope gets `rawupgrade.HIJACK_EXTENSION`, whose `take_over()` gives the application the
    connection as an asyncio stream pair: the transport moves to a plain stream protocol, the request counts as
    answered (uvicorn sends nothing, logs nothing, keeps no keep-alive timer), and what the client sent after the
    request head is the stream's first bytes. Until then reading is paused (httptools would take those bytes for a
    malformed next request and uvicorn would answer 400), and a request not taken over closes the connection after
    its answer."""

    _upgrade_tail: bytearray | None = None  # after a non-WebSocket upgrade request's head: the bytes that followed
    _received = b""
    _taken_over = False
    MAX_UPGRADE_TAIL = 64 << 10

    def data_received(self, data: bytes) -> None:
        if self._upgrade_tail is not None:  # reading is paused: only what was under way arrives
            self._upgrade_tail += data
            if len(self._upgrade_tail) > self.MAX_UPGRADE_TAIL:
                self.transport.close()
            return
        self._received = data
        super().data_received(data)
        self._received = b""

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        if not self.parser.should_upgrade() or self._should_upgrade():  # not an upgrade, or a WebSocket one
            return
        cycle = self.cycle
        if cycle is None or cycle.scope is not self.scope:
            return
        from tinykube.apiserver.http.rawupgrade import HIJACK_EXTENSION

        async def take_over() -> Any:
            return await self._take_over(cycle)

        scope: dict[str, Any] = self.scope  # type: ignore[assignment]
        scope["extensions"] = {**(scope.get("extensions") or {}), HIJACK_EXTENSION: {"take_over": take_over}}

    def _unsupported_upgrade_warning(self) -> None:
        # Called by uvicorn while it handles httptools' HttpParserUpgrade for a request that is not a WebSocket one;
        # the exception's argument is where the request head ended in the data being parsed.
        import sys

        exc = sys.exc_info()[1]
        offset = exc.args[0] if exc is not None and exc.args and isinstance(exc.args[0], int) else len(self._received)
        self._upgrade_tail = bytearray(self._received[offset:])
        self.transport.pause_reading()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False  # the parser cannot go on: the answer, if not a take-over, ends it

    async def _take_over(self, cycle: Any) -> Any:
        import asyncio
        import functools

        from tinykube.apiserver.http.rawupgrade import TakenOverProtocol

        if self._taken_over or cycle is not self.cycle or cycle.response_started:
            raise RuntimeError("the connection cannot be taken over: the request has been answered")
        if cycle.disconnected or self.transport.is_closing():
            raise ConnectionResetError("the client has closed the connection")
        self._taken_over = True
        cycle.response_started = cycle.response_complete = True
        cycle.keep_alive = False
        cycle.on_response = lambda: None
        cycle.message_event.set()
        self._unset_keepalive_if_required()
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 16, loop=loop)
        protocol = TakenOverProtocol(reader, functools.partial(self.connections.discard, self))
        self.transport.set_protocol(protocol)
        protocol.connection_made(self.transport)
        if self._upgrade_tail:
            reader.feed_data(bytes(self._upgrade_tail))
        self._upgrade_tail = bytearray()
        self.transport.resume_reading()
        return reader, asyncio.StreamWriter(self.transport, protocol, reader, loop)

    def shutdown(self) -> None:
        if self._taken_over:  # the server is stopping: a relayed connection goes with it
            self.transport.close()
            return
        super().shutdown()


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, which logs "ASGI callable returned without completing handshake." at ERROR after
    every handshake answered with `websocket.http.response` (it forgets to mark the handshake done; uvicorn's
    pull request #3138): marked done here once the answer has gone. Its handshake also takes Kubernetes'
    subprotocol names that are not tokens (kubectl's `SPDY/3.1+portforward.k8s.io`), which `websockets` refuses."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn.__class__ = LenientServerProtocol  # the same protocol, with only the subprotocol parsing changed

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            self.handshake_complete = True
