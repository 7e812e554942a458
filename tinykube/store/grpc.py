"""A minimal gRPC client over HTTP/2 on asyncio: unary calls and one-way server streams, enough for etcd's KV and
Watch services.

Why not grpcio: its asyncio client costs ~150-450 µs of CPU per call here (call objects, a completion queue polled
by threads that contend for the GIL), about a third of the apiserver's CPU per write. This client is one asyncio
protocol: request headers are constant per method and pre-encoded, frames written in one event-loop iteration go
out in one system call (so concurrent writes reach etcd together and share its fsync), and responses are parsed
straight from the socket buffer.

HTTP/2 as RFC 9113 asks of a client: flow control both ways, SETTINGS and PING acknowledged, GOAWAY and RST_STREAM
honoured, response headers decoded with `hpack` (the server's header table is stateful).

One `Channel` is one connection to one server; failing over between the members of an etcd cluster, and deciding
what may be retried, is `tinykube.store.members`' job. For that a `GrpcError` says whether the request certainly
never reached the server (`unsent`: the connection could not be made, or the server's GOAWAY named the stream as
unprocessed), as opposed to a failure after it was sent, whose outcome is unknown.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import unquote

import hpack

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _PRIORITY, _RST_STREAM, _SETTINGS, _PUSH_PROMISE, _PING, _GOAWAY, _WINDOW_UPDATE, _CONTINUATION = (
    range(10)
)
_END_STREAM = _ACK = 0x1
_END_HEADERS, _PADDED, _PRIORITY_FLAG = 0x4, 0x8, 0x20
_SETTINGS_INITIAL_WINDOW_SIZE, _SETTINGS_MAX_FRAME_SIZE, _SETTINGS_ENABLE_PUSH = 0x4, 0x5, 0x2
_REFUSED_STREAM, _CANCEL = 0x7, 0x8
_CONNECT_TIMEOUT = 3.0  # a member that neither accepts nor refuses (a dead host) must not hold a call for minutes
_DEFAULT_WINDOW = 65_535
# Our receive window, per stream and for the connection: large enough that etcd never waits on us for a normal
# response; replenished once half of it has been consumed.
_RECEIVE_WINDOW = 1 << 24
_MAX_STREAM_ID = (1 << 31) - 1
_FRAME_HEADER = struct.Struct(">IBI")  # length (24 bits) and type, flags, stream

STATUS_NAMES = {
    0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND",
    6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION", 10: "ABORTED",
    11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}  # fmt: skip


class GrpcError(Exception):
    """A call ended with a non-zero grpc-status, or the connection failed under it (UNAVAILABLE). `unsent`: the
    request certainly did not reach the server (nothing was written, or the server said it processed none of it)."""

    def __init__(self, code: int, message: str, *, unsent: bool = False) -> None:
        super().__init__(f"{STATUS_NAMES.get(code, code)}: {message}")
        self.code = code
        self.message = message
        self.unsent = unsent

    @property
    def name(self) -> str:
        return STATUS_NAMES.get(self.code, str(self.code))


def _frame(kind: int, flags: int, stream: int, payload: bytes | memoryview = b"") -> bytes:
    return _FRAME_HEADER.pack(len(payload) << 8 | kind, flags, stream) + payload


def _hpack_int(value: int, prefix_bits: int) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((value,))
    out, value = [limit], value - limit
    while value >= 128:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes((*out, value))


def _literal(name: bytes, value: bytes) -> bytes:
    """A header as 'literal without indexing, new name', no Huffman: the server's table is never touched, so a
    method's header block is the same bytes every time."""
    return b"\0" + _hpack_int(len(name), 7) + name + _hpack_int(len(value), 7) + value


def _message(payload: bytes) -> bytes:
    return b"\0" + len(payload).to_bytes(4, "big") + payload  # uncompressed gRPC length-prefixed message


@dataclass(eq=False)
class _Stream:
    id: int
    send_window: int
    messages: asyncio.Queue[bytes | GrpcError | None] | None = None  # server streams: messages, then an error or None
    result: asyncio.Future[bytes] | None = None  # unary calls
    buffer: bytearray = field(default_factory=bytearray)  # a gRPC message split over DATA frames
    reply: bytes = b""
    headers_seen: bool = False
    status: int | None = None
    status_message: str = ""
    unacked: int = 0

    def deliver(self, message: bytes) -> None:
        if self.messages is not None:
            self.messages.put_nowait(message)
        else:
            self.reply = message

    def finish(self, error: GrpcError | None) -> None:
        if self.messages is not None:
            self.messages.put_nowait(error)
        elif self.result is not None and not self.result.done():
            if error:
                self.result.set_exception(error)
            else:
                self.result.set_result(self.reply)


class HeaderDecoder:
    """HPACK header blocks decoded in order (the table is stateful). A block of one-byte indexed fields only (after
    the first answers, etcd's `:status 200`, content-type, `grpc-status: 0`) leaves the table as it is: the same
    bytes mean the same headers until a block that may change the table comes, which empties the memo. hpack took
    ~20 µs per block, two per call."""

    MEMO = 64  # etcd sends a handful of shapes; more is not worth keeping

    def __init__(self) -> None:
        self.hpack = hpack.Decoder()
        self.indexed: dict[bytes, dict[bytes, bytes]] = {}

    def decode(self, block: bytes) -> dict[bytes, bytes]:
        if all(0x80 < byte < 0xFF for byte in block):
            known = self.indexed.get(block)
            if known is None:
                if len(self.indexed) >= self.MEMO:
                    self.indexed.clear()
                known = self.indexed[block] = dict(self.hpack.decode(block, raw=True))
            return known
        self.indexed.clear()
        return dict(self.hpack.decode(block, raw=True))


class _Protocol(asyncio.Protocol):
    def __init__(self, authority: str, metadata: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        self.authority = authority.encode()
        self.metadata = metadata
        self.transport: asyncio.Transport | None = None
        self.streams: dict[int, _Stream] = {}
        self.next_id = 1
        self.closed: GrpcError | None = None
        self.send_window = _DEFAULT_WINDOW
        self.peer_initial_window = _DEFAULT_WINDOW
        self.peer_max_frame = 16_384
        self.window_opened = asyncio.Event()
        self.unacked = 0
        self.decoder = HeaderDecoder()
        self.inbox = bytearray()
        self.header_block: tuple[int, int, bytearray] | None = None  # (stream, flags, fragments) until END_HEADERS
        self.outbox: list[bytes] = []
        self.request_headers: dict[str, bytes] = {}
        self.sending: set[asyncio.Task[None]] = set()

    @property
    def usable(self) -> bool:
        """Open, with stream ids left for new calls (31 bits, odd ones ours: ~1e9 calls, days at full speed)."""
        return self.closed is None and self.next_id < _MAX_STREAM_ID

    # Writing: frames queued in one loop iteration leave in one write.

    def _send(self, data: bytes) -> None:
        if not self.outbox:
            asyncio.get_running_loop().call_soon(self._flush)
        self.outbox.append(data)

    def _flush(self) -> None:
        if self.outbox and self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(self.outbox))
        self.outbox.clear()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        settings = struct.pack(
            ">HIHI", _SETTINGS_ENABLE_PUSH, 0, _SETTINGS_INITIAL_WINDOW_SIZE, _RECEIVE_WINDOW
        )  # fmt: skip
        grow = struct.pack(">I", _RECEIVE_WINDOW - _DEFAULT_WINDOW)
        transport.write(_PREFACE + _frame(_SETTINGS, 0, 0, settings) + _frame(_WINDOW_UPDATE, 0, 0, grow))

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail_all(GrpcError(14, f"connection to etcd lost: {exc or 'closed'}"))

    def _fail_all(self, error: GrpcError) -> None:
        self.closed = self.closed or error
        for stream in list(self.streams.values()):
            stream.finish(error)
        self.streams.clear()
        self.window_opened.set()  # senders waiting for a window see `closed`

    # Calls.

    def _headers(self, path: str) -> bytes:
        block = self.request_headers.get(path)
        if block is None:
            block = b"".join(
                _literal(name, value)
                for name, value in (
                    (b":method", b"POST"),
                    (b":scheme", b"http"),
                    (b":path", path.encode()),
                    (b":authority", self.authority),
                    (b"content-type", b"application/grpc"),
                    (b"te", b"trailers"),
                    *self.metadata,
                )
            )
            self.request_headers[path] = block
        return block

    def open(self, path: str, request: bytes, *, streaming: bool) -> _Stream:
        if self.closed:
            raise GrpcError(self.closed.code, self.closed.message, unsent=True)
        stream = _Stream(self.next_id, self.peer_initial_window)
        self.next_id += 2
        if streaming:
            stream.messages = asyncio.Queue()
        else:
            stream.result = asyncio.get_running_loop().create_future()
        self.streams[stream.id] = stream
        self._send(_frame(_HEADERS, _END_HEADERS, stream.id, self._headers(path)))
        # A streaming call keeps its request side open (etcd's watch expects it), for more messages.
        self.send_data(stream, _message(request), end=not streaming)
        return stream

    def send_data(self, stream: _Stream, body: bytes, *, end: bool = False) -> None:
        """A request message on the stream. (One larger than the flow-control windows goes out from a task: the
        calls here send one small message at a time, so nothing overtakes it.)"""
        flags = _END_STREAM if end else 0
        if len(body) <= min(self.send_window, stream.send_window, self.peer_max_frame):
            self.send_window -= len(body)
            stream.send_window -= len(body)
            self._send(_frame(_DATA, flags, stream.id, body))
        else:
            task = asyncio.get_running_loop().create_task(self._send_large(stream, body, flags))
            self.sending.add(task)  # referenced until done: the loop keeps only weak references to tasks
            task.add_done_callback(self.sending.discard)

    async def _send_large(self, stream: _Stream, body: bytes, end: int) -> None:
        view = memoryview(body)
        while view and not self.closed and stream.id in self.streams:
            size = min(len(view), self.send_window, stream.send_window, self.peer_max_frame)
            if size <= 0:
                self.window_opened.clear()
                await self.window_opened.wait()
                continue
            self.send_window -= size
            stream.send_window -= size
            chunk, view = view[:size], view[size:]
            self._send(_frame(_DATA, 0 if view else end, stream.id, bytes(chunk)))

    def cancel(self, stream: _Stream) -> None:
        if self.streams.pop(stream.id, None) is not None and not self.closed:
            self._send(_frame(_RST_STREAM, 0, stream.id, _CANCEL.to_bytes(4, "big")))

    # Reading.

    def data_received(self, data: bytes) -> None:
        inbox = self.inbox
        inbox += data
        offset, end = 0, len(inbox)
        while end - offset >= 9:
            length = int.from_bytes(inbox[offset : offset + 3], "big")
            if end - offset - 9 < length:
                break
            kind, flags = inbox[offset + 3], inbox[offset + 4]
            stream = int.from_bytes(inbox[offset + 5 : offset + 9], "big") & 0x7FFFFFFF
            payload = bytes(inbox[offset + 9 : offset + 9 + length])
            offset += 9 + length
            try:
                self._frame_received(kind, flags, stream, payload)
            except (hpack.HPACKError, ValueError, struct.error) as err:
                self._fail_all(GrpcError(13, f"malformed HTTP/2 from etcd: {err}"))
                if self.transport:
                    self.transport.close()
                return
        del inbox[:offset]

    def _frame_received(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if self.header_block is not None and kind != _CONTINUATION:
            raise ValueError("a header block was interrupted")
        if kind == _DATA:
            self._data(flags, stream_id, payload)
        elif kind == _HEADERS:
            if flags & _PADDED:
                payload = payload[1 : len(payload) - payload[0]]
            if flags & _PRIORITY_FLAG:
                payload = payload[5:]
            self.header_block = (stream_id, flags, bytearray(payload))
            if flags & _END_HEADERS:
                self._headers_complete()
        elif kind == _CONTINUATION:
            if self.header_block is None or self.header_block[0] != stream_id:
                raise ValueError("CONTINUATION without its HEADERS")
            self.header_block[2].extend(payload)
            if flags & _END_HEADERS:
                self._headers_complete()
        elif kind == _SETTINGS:
            if not flags & _ACK:
                self._settings(payload)
        elif kind == _PING:
            if not flags & _ACK:
                self._send(_frame(_PING, _ACK, 0, payload))
        elif kind == _WINDOW_UPDATE:
            increment = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
            if stream_id == 0:
                self.send_window += increment
            elif (stream := self.streams.get(stream_id)) is not None:
                stream.send_window += increment
            self.window_opened.set()
        elif kind == _RST_STREAM:
            if (stream := self.streams.pop(stream_id, None)) is not None:
                code = int.from_bytes(payload[:4], "big")
                if code == _REFUSED_STREAM:  # processed in no part (RFC 9113 8.7): as if never sent
                    stream.finish(GrpcError(14, "etcd refused the stream", unsent=True))
                else:
                    stream.finish(GrpcError(1 if code == _CANCEL else 13, f"etcd reset the stream (error code {code})"))
        elif kind == _GOAWAY:
            self._going_away(int.from_bytes(payload[:4], "big") & 0x7FFFFFFF, int.from_bytes(payload[4:8], "big"))
        # PRIORITY and unknown frame types are ignored, as RFC 9113 requires; PUSH_PROMISE is disabled.

    def _going_away(self, last_stream: int, code: int) -> None:
        """No new calls here; the streams above `last_stream` were not processed (RFC 9113 6.8) and can go elsewhere
        as never sent; the others may still finish (a graceful shutdown), or fail when the connection closes."""
        self.closed = self.closed or GrpcError(14, f"etcd is going away (GOAWAY, error code {code})", unsent=True)
        unprocessed = GrpcError(14, "etcd is going away and did not process the call", unsent=True)
        for stream_id in [s for s in self.streams if s > last_stream]:
            self.streams.pop(stream_id).finish(unprocessed)
        if not self.streams and self.transport:
            self.transport.close()

    def _settings(self, payload: bytes) -> None:
        for offset in range(0, len(payload) - 5, 6):
            key, value = struct.unpack_from(">HI", payload, offset)
            if key == _SETTINGS_INITIAL_WINDOW_SIZE:
                delta, self.peer_initial_window = value - self.peer_initial_window, value
                for stream in self.streams.values():
                    stream.send_window += delta
                self.window_opened.set()
            elif key == _SETTINGS_MAX_FRAME_SIZE:
                self.peer_max_frame = value
        self._send(_frame(_SETTINGS, _ACK, 0))

    def _data(self, flags: int, stream_id: int, payload: bytes) -> None:
        size = len(payload)
        self.unacked += size
        if self.unacked >= _RECEIVE_WINDOW // 2:
            self._send(_frame(_WINDOW_UPDATE, 0, 0, self.unacked.to_bytes(4, "big")))
            self.unacked = 0
        stream = self.streams.get(stream_id)
        if stream is None:
            return  # cancelled by us: its bytes still count for the connection's window
        if flags & _PADDED:
            payload = payload[1 : len(payload) - payload[0]]
        buffer = stream.buffer
        if not buffer and len(payload) >= 5 and int.from_bytes(payload[1:5], "big") == len(payload) - 5:
            stream.deliver(payload[5:])  # the usual case: exactly one whole message in the frame
        else:
            buffer += payload
            while len(buffer) >= 5 and len(buffer) - 5 >= (length := int.from_bytes(buffer[1:5], "big")):
                stream.deliver(bytes(buffer[5 : 5 + length]))
                del buffer[: 5 + length]
        if flags & _END_STREAM:
            self._end(stream)
        else:  # a list of 100,000 pods is larger than the window
            stream.unacked += size
            if stream.unacked >= _RECEIVE_WINDOW // 2:
                self._send(_frame(_WINDOW_UPDATE, 0, stream_id, stream.unacked.to_bytes(4, "big")))
                stream.unacked = 0

    def _headers_complete(self) -> None:
        assert self.header_block is not None
        stream_id, flags, block = self.header_block
        self.header_block = None
        headers = self.decoder.decode(bytes(block))
        stream = self.streams.get(stream_id)
        if stream is None:
            return
        if not stream.headers_seen:
            stream.headers_seen = True
            status = headers.get(b":status", b"")
            if status != b"200":
                stream.status, stream.status_message = 13, f"HTTP status {status.decode(errors='replace')}"
        if b"grpc-status" in headers and stream.status is None:
            stream.status = int(headers[b"grpc-status"])
            stream.status_message = unquote(headers.get(b"grpc-message", b"").decode(errors="replace"))
        if flags & _END_STREAM:
            self._end(stream)

    def _end(self, stream: _Stream) -> None:
        self.streams.pop(stream.id, None)
        if self.closed is not None and not self.streams and self.transport is not None:
            self.transport.close()  # after a GOAWAY, once its last call has ended
        if stream.status is None:
            stream.status, stream.status_message = 13, "the stream ended without a grpc-status"
        stream.finish(GrpcError(stream.status, stream.status_message) if stream.status else None)


class Call:
    """An open streaming call. Iterating it yields the server's messages until the server ends the call (or raises
    GrpcError); `cancel()` ends it from this side, and leaving an `async for` early does too."""

    def __init__(self, protocol: _Protocol, stream: _Stream) -> None:
        self._protocol = protocol
        self._stream = stream

    def send(self, request: bytes) -> None:
        """One more request message on the call (etcd: a watch progress request)."""
        if self._stream.id in self._protocol.streams:
            self._protocol.send_data(self._stream, _message(request))

    def cancel(self) -> None:
        self._protocol.cancel(self._stream)

    def fail(self, error: GrpcError) -> None:
        """End the call from this side with `error` (its reader gets it), as if the server had."""
        if self._stream.id in self._protocol.streams:
            self._protocol.cancel(self._stream)
            self._stream.finish(error)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert self._stream.messages is not None
        try:
            while True:
                message = await self._stream.messages.get()
                if isinstance(message, GrpcError):
                    raise message
                if message is None:
                    return  # the call ended with status OK
                yield message
        finally:
            self.cancel()


class UnaryCall:
    """A unary call in flight: `result` resolves to the reply (or raises GrpcError); `fail()` ends it early from
    this side (a stall detected elsewhere), `cancel()` abandons it."""

    __slots__ = ("_protocol", "_stream", "result")

    def __init__(self, protocol: _Protocol, stream: _Stream) -> None:
        assert stream.result is not None
        self._protocol = protocol
        self._stream = stream
        self.result: asyncio.Future[bytes] = stream.result

    def fail(self, error: GrpcError) -> None:
        if not self.result.done():
            self.result.set_exception(error)
        self._protocol.cancel(self._stream)

    def cancel(self) -> None:
        if not self.result.done():
            self.result.cancel()
        self._protocol.cancel(self._stream)


class Channel:
    """One HTTP/2 connection to `host:port`, opened on first use and again after it fails. `metadata`: headers sent
    with every call (etcd's `hasleader`)."""

    def __init__(self, host: str, port: int, metadata: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        self.host, self.port = host, port
        self.metadata = metadata
        self._protocol: _Protocol | None = None
        self._retired: list[_Protocol] = []
        self._connecting: asyncio.Lock | None = None

    async def _connection(self) -> _Protocol:
        protocol = self._protocol
        if protocol is not None and protocol.usable:
            return protocol
        self._connecting = self._connecting or asyncio.Lock()
        async with self._connecting:
            if self._protocol is None or not self._protocol.usable:
                old = self._protocol
                if old is not None and old.transport is not None and not old.transport.is_closing():
                    self._retired.append(old)  # out of stream ids, or going away: its open calls go on there
                self._retired = [p for p in self._retired if p.transport is not None and not p.transport.is_closing()]
                loop = asyncio.get_running_loop()
                authority = f"{self.host}:{self.port}"
                try:
                    async with asyncio.timeout(_CONNECT_TIMEOUT):
                        _, made = await loop.create_connection(
                            lambda: _Protocol(authority, self.metadata), self.host, self.port
                        )
                except (OSError, TimeoutError) as err:
                    reason = err if isinstance(err, OSError) else f"no answer within {_CONNECT_TIMEOUT:g} s"
                    raise GrpcError(14, f"cannot connect to etcd at {authority}: {reason}", unsent=True) from err
                self._protocol = made
            return self._protocol

    async def open_unary(self, path: str, request: bytes) -> UnaryCall:
        """Send a unary call; await `.result` of what is returned for the reply."""
        protocol = await self._connection()
        return UnaryCall(protocol, protocol.open(path, request, streaming=False))

    async def unary(self, path: str, request: bytes, timeout: float) -> bytes:
        call = await self.open_unary(path, request)
        try:
            async with asyncio.timeout(timeout):
                return await call.result
        except TimeoutError:
            raise GrpcError(4, f"no answer from etcd within {timeout:g} s") from None
        finally:
            call.cancel()  # a no-op once answered; else RST_STREAM (a timeout has cancelled `result` already)

    async def stream(self, path: str, request: bytes) -> Call:
        """A bidirectional call opened with `request`: iterate it for the server's messages, `send()` more."""
        protocol = await self._connection()
        return Call(protocol, protocol.open(path, request, streaming=True))

    async def close(self) -> None:
        for protocol in [*self._retired, *([self._protocol] if self._protocol else [])]:
            if protocol.transport is not None:
                protocol._flush()
                protocol.transport.close()
        self._protocol, self._retired = None, []
