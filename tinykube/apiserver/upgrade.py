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

Handlers that speak a WebSocket protocol themselves (exec, attach and portforward's `v5.channel.k8s.io`) belong in
front of this bridge: they take the `websocket` scope of their paths, and everything else comes through here.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

BASE64_PROTOCOL = "base64.binary.k8s.io"  # wsstream's subprotocols for a streamed log
BINARY_PROTOCOL = "binary.k8s.io"


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
        await self.app({**scope, "type": "http", "method": "GET", "scheme": scheme}, exchange.receive, exchange.send)


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
    """uvicorn's httptools protocol without its "Unsupported upgrade request." warning: an SPDY upgrade request is
    served as a plain request on purpose (see the module's docstring)."""

    def _unsupported_upgrade_warning(self) -> None:
        pass


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, which logs "ASGI callable returned without completing handshake." at ERROR after
    every handshake answered with `websocket.http.response` (it forgets to mark the handshake done; uvicorn's
    pull request #3138): marked done here once the answer has gone."""

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            self.handshake_complete = True
