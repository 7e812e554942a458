"""A server-side WebSocket over an asyncio stream pair, for the node agent's server (which is not an ASGI one):
`websockets`' sans-I/O protocol does the framing, this module the I/O. Messages are whole (fragments joined);
pings are answered by the protocol."""

from __future__ import annotations

import asyncio
import contextlib

from websockets.exceptions import InvalidState
from websockets.frames import Frame, Opcode
from websockets.http11 import Request as HandshakeRequest
from websockets.server import ServerProtocol
from websockets.typing import Subprotocol

from tinykube.web import Request

MAX_MESSAGE = 16 << 20  # what one message may hold; a stream's data comes in far smaller pieces


def choose_subprotocol(request: Request, supported: tuple[str, ...]) -> str | None:
    """The first protocol the client offers that is supported (the client lists them by preference)."""
    offered = [p.strip() for p in request.headers.get("sec-websocket-protocol", "").split(",")]
    return next((p for p in offered if p in supported), None)


class ServerWebSocket:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, subprotocol: str) -> None:
        self.reader = reader
        self.writer = writer
        self.subprotocol = subprotocol
        self._protocol = ServerProtocol(
            select_subprotocol=lambda _protocol, _offered: Subprotocol(subprotocol) if subprotocol else None,
            max_size=MAX_MESSAGE,
        )
        self._fragments: list[bytes] = []
        self._pending: list[bytes] = []
        self._send_lock = asyncio.Lock()

    @classmethod
    async def accept(
        cls, request: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, subprotocol: str
    ) -> ServerWebSocket:
        """Answer the handshake (101), speaking `subprotocol` from here."""
        ws = cls(reader, writer, subprotocol)
        head = f"GET {request.target} HTTP/1.1\r\n"  # the protocol parses the handshake itself: given again
        head += "".join(f"{name}: {value}\r\n" for name, value in request.headers.items()) + "\r\n"
        ws._protocol.receive_data(head.encode("latin-1"))
        handshake = next(e for e in ws._protocol.events_received() if isinstance(e, HandshakeRequest))
        response = ws._protocol.accept(handshake)
        ws._protocol.send_response(response)
        await ws._flush()
        if response.status_code != 101:
            raise ConnectionError(f"WebSocket handshake refused: {response.status_code}")
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
            for frame in self._protocol.events_received():
                if isinstance(frame, Frame) and frame.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
                    self._fragments.append(bytes(frame.data))
                    if frame.fin:
                        self._pending.append(b"".join(self._fragments))
                        self._fragments.clear()
            with contextlib.suppress(ConnectionError):
                await self._flush()  # pongs, the close handshake
            if not data or self._protocol.close_code is not None:
                if not self._pending:
                    return None
                break
        return self._pending.pop(0)

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

    async def _flush(self) -> None:
        for chunk in self._protocol.data_to_send():
            if chunk:
                self.writer.write(chunk)
            else:  # the protocol's signal to close the TCP connection
                self.writer.close()
                return
        await self.writer.drain()
