"""A WebSocket over an asyncio stream pair, in either role: the node agent's server (which is not an ASGI one)
accepts them, the apiserver opens them to the node agent. `websockets`' sans-I/O protocol does the framing, this
module the I/O. Messages are whole (fragments joined); pings are answered by the protocol.

Kubernetes' subprotocol names are not all RFC 6455 tokens (`SPDY/3.1+portforward.k8s.io`, kubectl's port-forward
tunnel), and Go's WebSocket code does not check: the `Lenient*Protocol`s split the header on commas as it does,
where `websockets` would refuse the handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from websockets.client import ClientProtocol
from websockets.datastructures import Headers
from websockets.exceptions import InvalidState, NegotiationError
from websockets.frames import Frame, Opcode
from websockets.http11 import Request as HandshakeRequest
from websockets.http11 import Response as HandshakeResponse
from websockets.protocol import Protocol
from websockets.server import ServerProtocol
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from tinykube.web import Request

MAX_MESSAGE = 16 << 20  # what one message may hold; a stream's data comes in far smaller pieces
HANDSHAKE_LIMIT = 64 << 10


def offered_subprotocols(headers: Headers) -> list[str]:
    return [p.strip() for value in headers.get_all("Sec-WebSocket-Protocol") for p in value.split(",") if p.strip()]


def choose_subprotocol(request: Request, supported: Sequence[str]) -> str | None:
    """The first protocol the client offers that is supported (the client lists them by preference)."""
    offered = [p.strip() for p in request.headers.get("sec-websocket-protocol", "").split(",")]
    return next((p for p in offered if p in supported), None)


class LenientServerProtocol(ServerProtocol):
    def process_subprotocol(self, headers: Headers) -> Subprotocol | None:
        return self.select_subprotocol([Subprotocol(p) for p in offered_subprotocols(headers)])


class LenientClientProtocol(ClientProtocol):
    def __init__(self, *args: object, offered: Sequence[str] = (), **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.offered = list(offered)

    def process_subprotocol(self, headers: Headers) -> Subprotocol | None:
        chosen = offered_subprotocols(headers)
        if len(chosen) > 1 or (chosen and chosen[0] not in self.offered):
            raise NegotiationError(f"the server chose a subprotocol not offered: {chosen}")
        return Subprotocol(chosen[0]) if chosen else None


class HandshakeRefused(Exception):
    """The server answered the handshake with something other than 101: its status and body."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"WebSocket handshake refused: {status}")
        self.status = status
        self.body = body


class StreamWebSocket:
    def __init__(
        self, protocol: Protocol, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, subprotocol: str
    ) -> None:
        self._protocol = protocol
        self.reader = reader
        self.writer = writer
        self.subprotocol = subprotocol
        self._fragments: list[bytes] = []
        self._pending: list[bytes] = []
        self._send_lock = asyncio.Lock()

    @classmethod
    async def accept(
        cls, request: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, subprotocol: str
    ) -> StreamWebSocket:
        """Answer the handshake (101), speaking `subprotocol` from here."""
        protocol = LenientServerProtocol(
            select_subprotocol=lambda _protocol, _offered: Subprotocol(subprotocol) if subprotocol else None,
            max_size=MAX_MESSAGE,
        )
        head = f"GET {request.target} HTTP/1.1\r\n"  # the protocol parses the handshake itself: given again
        head += "".join(f"{name}: {value}\r\n" for name, value in request.headers.items()) + "\r\n"
        protocol.receive_data(head.encode("latin-1"))
        handshake = next(e for e in protocol.events_received() if isinstance(e, HandshakeRequest))
        response = protocol.accept(handshake)
        protocol.send_response(response)
        ws = cls(protocol, reader, writer, subprotocol)
        await ws._flush()
        if response.status_code != 101:
            raise ConnectionError(f"WebSocket handshake refused: {response.status_code}")
        return ws

    @classmethod
    async def connect(
        cls, host: str, port: int, target: str, offered: Sequence[str], timeout: float = 10.0
    ) -> StreamWebSocket:
        """Open a WebSocket to `ws://host:port/target` offering `offered`; HandshakeRefused, OSError or
        TimeoutError if it cannot be had."""
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        protocol = LenientClientProtocol(parse_uri(f"ws://{netloc}{target}"), offered=offered, max_size=MAX_MESSAGE)
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, limit=HANDSHAKE_LIMIT)
            try:
                request = protocol.connect()
                if offered:
                    request.headers["Sec-WebSocket-Protocol"] = ", ".join(offered)
                protocol.send_request(request)
                ws = cls(protocol, reader, writer, "")
                await ws._flush()
                response = None
                while response is None:
                    data = await reader.read(65536)
                    if data:
                        protocol.receive_data(data)
                    else:
                        protocol.receive_eof()
                    events = protocol.events_received()
                    response = next((e for e in events if isinstance(e, HandshakeResponse)), None)
                    ws._take([e for e in events if isinstance(e, Frame)])
                    if response is None and not data:
                        raise ConnectionError("the server closed the connection during the WebSocket handshake")
                if response.status_code != 101 or protocol.handshake_exc is not None:
                    raise HandshakeRefused(response.status_code, bytes(response.body or b""))
            except BaseException:
                writer.close()
                raise
        ws.subprotocol = response.headers.get("Sec-WebSocket-Protocol", "")
        return ws

    async def recv(self) -> bytes | None:
        """The next data message (binary, or text as UTF-8), None once the connection is closed."""
        while not self._pending:
            try:
                data = await self.reader.read(65536)
            except ConnectionError:
                data = b""
            if data:
                self._protocol.receive_data(data)
            else:
                self._protocol.receive_eof()
            self._take([e for e in self._protocol.events_received() if isinstance(e, Frame)])
            with contextlib.suppress(ConnectionError):
                await self._flush()  # pongs, the close handshake
            if not data or self._protocol.close_code is not None:
                if not self._pending:
                    return None
                break
        return self._pending.pop(0)

    def _take(self, frames: list[Frame]) -> None:
        for frame in frames:
            if frame.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
                self._fragments.append(bytes(frame.data))
                if frame.fin:
                    self._pending.append(b"".join(self._fragments))
                    self._fragments.clear()

    async def send(self, data: bytes) -> None:
        """One binary message."""
        async with self._send_lock:
            try:
                self._protocol.send_binary(data)
            except InvalidState:
                raise ConnectionResetError("the WebSocket is closed") from None
            await self._flush()

    async def close(self, code: int = 1000) -> None:
        async with self._send_lock:
            with contextlib.suppress(InvalidState):
                self._protocol.send_close(code)
            with contextlib.suppress(ConnectionError):
                await self._flush()

    def abort(self) -> None:
        self.writer.close()

    async def _flush(self) -> None:
        for chunk in self._protocol.data_to_send():
            if chunk:
                self.writer.write(chunk)
            else:  # the protocol's signal to close the TCP connection
                self.writer.close()
                return
        await self.writer.drain()
