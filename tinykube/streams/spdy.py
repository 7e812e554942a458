"""SPDY/3.1 as kubectl speaks it: the framing, the zlib-compressed header blocks, and an asyncio session.

kubectl (client-go over `moby/spdystream`) falls back to SPDY for exec and attach when the WebSocket upgrade fails,
and tunnels SPDY inside a WebSocket (`SPDY/3.1+portforward.k8s.io`) for port-forward. What it uses of SPDY is
small: the client opens every stream (SYN_STREAM, odd ids) with its headers, the server answers each with an empty
SYN_REPLY, both sides send data frames and half-close with FIN, either side resets a stream (RST_STREAM) or ends the
session (GOAWAY), and the client pings (PING, every few seconds).

Frames (all integers big-endian)::

    control:  1 | version (15) | type (16) | flags (8) | length (24) | payload
    data:     0 | stream id (31)           | flags (8) | length (24) | payload

A header block is `count (32)` then `count` times `name length (32) | name | value length (32) | value` (names
lower case, several values of one name joined by NUL), compressed with zlib over the SPDY/3 dictionary; one
compression context per direction for the whole connection, each block ended by a sync flush.

As spdystream, this implementation does not enforce flow-control windows in either direction (spdystream neither
sends nor honours WINDOW_UPDATE): backpressure is the transport's. A session bounds what a peer can make it hold:
frame sizes, the decompressed size of a header block, the number of open streams, and the data buffered for
streams whose readers are slow (the session stops reading from the transport until they catch up).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import zlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger(__name__)

VERSION = 3

# control frame types
SYN_STREAM = 1
SYN_REPLY = 2
RST_STREAM = 3
SETTINGS = 4
PING = 6
GOAWAY = 7
HEADERS = 8
WINDOW_UPDATE = 9

FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02
FLAG_CLEAR_SETTINGS = 0x01

# RST_STREAM status codes
PROTOCOL_ERROR = 1
INVALID_STREAM = 2
REFUSED_STREAM = 3
UNSUPPORTED_VERSION = 4
CANCEL = 5
INTERNAL_ERROR = 6
FLOW_CONTROL_ERROR = 7
STREAM_IN_USE = 8
STREAM_ALREADY_CLOSED = 9
FRAME_TOO_LARGE = 11

# GOAWAY status codes
GOAWAY_OK = 0
GOAWAY_PROTOCOL_ERROR = 1
GOAWAY_INTERNAL_ERROR = 11

MAX_STREAM_ID = 0x7FFFFFFF
MAX_LENGTH = 0xFFFFFF  # what a frame's 24-bit length can say


def _dictionary() -> bytes:
    """The SPDY/3 header compression dictionary (draft 3, section 2.6.10.1): length-prefixed words, then text."""
    head = (
        "options head post put delete trace accept accept-charset accept-encoding accept-language accept-ranges "
        "age allow authorization cache-control connection content-base content-encoding content-language "
        "content-length content-location content-md5 content-range content-type date etag expect expires from "
        "host if-match if-modified-since if-none-match if-range if-unmodified-since last-modified location "
        "max-forwards pragma proxy-authenticate proxy-authorization range referer retry-after server te trailer "
        "transfer-encoding upgrade user-agent vary via warning www-authenticate method get status"
    )
    words = [*head.split(" "), "200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]
    tail = (
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
        "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
        "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
        "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
        "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
        "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
    )
    out = bytearray()
    for word in words:
        out += struct.pack(">I", len(word)) + word.encode("ascii")
    return bytes(out) + tail.encode("ascii")


DICTIONARY = _dictionary()
DICTIONARY_ID = 0xE3C6A7C2  # its Adler-32, which a compressed block's zlib header names


class ProtocolError(Exception):
    """The peer broke the protocol: the session ends (GOAWAY with `status`)."""

    def __init__(self, message: str, status: int = GOAWAY_PROTOCOL_ERROR) -> None:
        super().__init__(message)
        self.status = status


class StreamError(Exception):
    """A frame that is wrong for one stream only: the stream is reset with `status`."""

    def __init__(self, stream_id: int, status: int, message: str) -> None:
        super().__init__(message)
        self.stream_id = stream_id
        self.status = status


class StreamReset(ConnectionResetError):
    """Writing to a stream that was reset, or whose session has ended."""


@dataclass(frozen=True, slots=True)
class Limits:
    max_data_frame: int = 1 << 20  # payload of one data frame a peer may send
    max_control_frame: int = 64 << 10  # payload of one control frame (compressed headers included)
    max_header_block: int = 64 << 10  # a header block once decompressed
    max_streams: int = 1000  # streams open at once; more are refused (REFUSED_STREAM)
    max_buffered: int = 1 << 20  # data received and not yet read, over all streams, before reading pauses
    idle_timeout: float | None = 4 * 3600.0  # the kubelet's streamingConnectionIdleTimeout (reads only)
    write_chunk: int = 32 << 10  # the largest data frame this side sends


DEFAULT_LIMITS = Limits()

# ---- frames --------------------------------------------------------------------------------------------------------

Headers = dict[str, list[str]]  # names lower case; a name's values in order


@dataclass(frozen=True, slots=True)
class DataFrame:
    stream_id: int
    data: bytes
    fin: bool = False


@dataclass(frozen=True, slots=True)
class SynStream:
    stream_id: int
    headers: Headers
    associated_id: int = 0
    priority: int = 0
    slot: int = 0
    fin: bool = False
    unidirectional: bool = False


@dataclass(frozen=True, slots=True)
class SynReply:
    stream_id: int
    headers: Headers
    fin: bool = False


@dataclass(frozen=True, slots=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True, slots=True)
class Settings:
    entries: tuple[tuple[int, int, int], ...]  # (flags, id, value)
    clear: bool = False


@dataclass(frozen=True, slots=True)
class Ping:
    ping_id: int


@dataclass(frozen=True, slots=True)
class GoAway:
    last_good_stream_id: int
    status: int = GOAWAY_OK


@dataclass(frozen=True, slots=True)
class HeadersFrame:
    stream_id: int
    headers: Headers
    fin: bool = False


@dataclass(frozen=True, slots=True)
class WindowUpdate:
    stream_id: int
    delta: int


@dataclass(frozen=True, slots=True)
class UnknownControl:
    """A control frame of a type SPDY/3.1 does not define: ignored, as the spec asks."""

    frame_type: int


Frame = (
    DataFrame
    | SynStream
    | SynReply
    | RstStream
    | Settings
    | Ping
    | GoAway
    | HeadersFrame
    | WindowUpdate
    | UnknownControl
)


class HeaderCompressor:
    """One direction's compression context."""

    def __init__(self) -> None:
        self._z = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)

    def compress(self, headers: Headers) -> bytes:
        return self._z.compress(encode_header_block(headers)) + self._z.flush(zlib.Z_SYNC_FLUSH)


class HeaderDecompressor:
    """One direction's decompression context, with a bound on what one block may inflate to."""

    def __init__(self, limit: int = DEFAULT_LIMITS.max_header_block) -> None:
        self._z = zlib.decompressobj(15, zdict=DICTIONARY)
        self.limit = limit

    def decompress(self, data: bytes) -> bytes:
        try:
            out = self._z.decompress(data, self.limit + 1)
        except zlib.error as err:
            raise ProtocolError(f"bad compressed header block: {err}") from None
        if len(out) > self.limit or self._z.unconsumed_tail:
            raise ProtocolError(f"header block larger than {self.limit} bytes")
        if self._z.eof:
            raise ProtocolError("the header compression stream ended")
        return out


def encode_header_block(headers: Headers) -> bytes:
    out = bytearray(struct.pack(">I", len(headers)))
    for name, values in headers.items():
        raw_name = name.lower().encode("latin-1")
        raw_value = "\0".join(values).encode("latin-1")
        out += struct.pack(">I", len(raw_name)) + raw_name + struct.pack(">I", len(raw_value)) + raw_value
    return bytes(out)


def decode_header_block(block: bytes, stream_id: int) -> Headers:
    """A decompressed header block. Wrong ones reset the stream (the compression context is still good)."""

    def bad(why: str) -> StreamError:
        return StreamError(stream_id, PROTOCOL_ERROR, f"bad header block: {why}")

    if len(block) < 4:
        raise bad("truncated")
    (count,) = struct.unpack_from(">I", block)
    if count > (len(block) - 4) // 8:  # each pair takes at least 8 bytes
        raise bad(f"{count} pairs cannot fit in {len(block)} bytes")
    headers: Headers = {}
    pos = 4
    for _ in range(count):
        fields = []
        for _part in ("name", "value"):
            if pos + 4 > len(block):
                raise bad("truncated")
            (length,) = struct.unpack_from(">I", block, pos)
            pos += 4
            if length > len(block) - pos:
                raise bad("truncated")
            fields.append(block[pos : pos + length].decode("latin-1"))
            pos += length
        name, value = fields
        if not name:
            raise bad("empty header name")
        name = name.lower()
        if name in headers:
            raise bad(f"duplicate header {name!r}")
        headers[name] = value.split("\0")
    if pos != len(block):
        raise bad("trailing bytes")
    return headers


def encode_frame(frame: Frame, compressor: HeaderCompressor | None = None) -> bytes:
    """The wire form of a frame (header blocks need the connection's compressor, in sending order)."""

    def control(frame_type: int, flags: int, payload: bytes) -> bytes:
        if len(payload) > MAX_LENGTH:
            raise ValueError("control frame too large")
        return struct.pack(">HHI", 0x8000 | VERSION, frame_type, (flags << 24) | len(payload)) + payload

    def headers_of(headers: Headers) -> bytes:
        if compressor is None:
            raise ValueError("a header block needs the connection's compressor")
        return compressor.compress(headers)

    match frame:
        case DataFrame(stream_id, data, fin):
            if not 0 < stream_id <= MAX_STREAM_ID or len(data) > MAX_LENGTH:
                raise ValueError("bad data frame")
            return struct.pack(">II", stream_id, ((FLAG_FIN if fin else 0) << 24) | len(data)) + data
        case SynStream(stream_id, headers, associated, priority, slot, fin, unidirectional):
            flags = (FLAG_FIN if fin else 0) | (FLAG_UNIDIRECTIONAL if unidirectional else 0)
            head = struct.pack(">IIBB", stream_id, associated, (priority & 7) << 5, slot)
            return control(SYN_STREAM, flags, head + headers_of(headers))
        case SynReply(stream_id, headers, fin):
            return control(SYN_REPLY, FLAG_FIN if fin else 0, struct.pack(">I", stream_id) + headers_of(headers))
        case HeadersFrame(stream_id, headers, fin):
            return control(HEADERS, FLAG_FIN if fin else 0, struct.pack(">I", stream_id) + headers_of(headers))
        case RstStream(stream_id, status):
            return control(RST_STREAM, 0, struct.pack(">II", stream_id, status))
        case Settings(entries, clear):
            body = struct.pack(">I", len(entries)) + b"".join(
                struct.pack(">II", (flags << 24) | ident, value) for flags, ident, value in entries
            )
            return control(SETTINGS, FLAG_CLEAR_SETTINGS if clear else 0, body)
        case Ping(ping_id):
            return control(PING, 0, struct.pack(">I", ping_id))
        case GoAway(last_good, status):
            return control(GOAWAY, 0, struct.pack(">II", last_good, status))
        case WindowUpdate(stream_id, delta):
            return control(WINDOW_UPDATE, 0, struct.pack(">II", stream_id, delta))
    raise ValueError(f"cannot encode {frame!r}")


class ByteSource(Protocol):
    async def readexactly(self, n: int) -> bytes: ...


async def read_frame(
    source: ByteSource, decompressor: HeaderDecompressor, limits: Limits = DEFAULT_LIMITS
) -> Frame | None:
    """The next frame; None at a clean end of the transport (between frames). Raises ProtocolError for a frame the
    session cannot go on from, StreamError for one that only its stream cannot, IncompleteReadError for a cut."""
    try:
        head = await source.readexactly(8)
    except asyncio.IncompleteReadError as err:
        if not err.partial:
            return None
        raise
    first, second = struct.unpack(">II", head)
    flags, length = second >> 24, second & MAX_LENGTH
    if not first & 0x80000000:
        if length > limits.max_data_frame:
            raise ProtocolError(f"data frame of {length} bytes (at most {limits.max_data_frame})")
        stream_id = first & MAX_STREAM_ID
        data = await source.readexactly(length) if length else b""
        if stream_id == 0:
            raise ProtocolError("data frame for stream 0")
        return DataFrame(stream_id, data, bool(flags & FLAG_FIN))
    version, frame_type = (first >> 16) & 0x7FFF, first & 0xFFFF
    if length > limits.max_control_frame:
        raise ProtocolError(f"control frame of {length} bytes (at most {limits.max_control_frame})")
    payload = await source.readexactly(length) if length else b""
    if version != VERSION:
        raise ProtocolError(f"SPDY version {version}", GOAWAY_PROTOCOL_ERROR)
    return parse_control(frame_type, flags, payload, decompressor)


def parse_control(frame_type: int, flags: int, payload: bytes, decompressor: HeaderDecompressor) -> Frame:
    def fixed(size: int) -> tuple[int, ...]:
        if len(payload) != size:
            raise ProtocolError(f"control frame {frame_type} of {len(payload)} bytes (must be {size})")
        return struct.unpack(">" + "I" * (size // 4), payload)

    def stream_of(value: int) -> int:
        stream_id = value & MAX_STREAM_ID
        if stream_id == 0:
            raise ProtocolError(f"control frame {frame_type} for stream 0")
        return stream_id

    fin = bool(flags & FLAG_FIN)
    if frame_type in (SYN_STREAM, SYN_REPLY, HEADERS):
        fixed_size = 10 if frame_type == SYN_STREAM else 4
        if len(payload) < fixed_size:
            raise ProtocolError(f"control frame {frame_type} too short")
        stream_id = stream_of(struct.unpack_from(">I", payload)[0])
        # The block goes through the shared context even when the stream is refused, or the context would drift.
        block = decompressor.decompress(payload[fixed_size:])
        headers = decode_header_block(block, stream_id)
        if frame_type == SYN_STREAM:
            associated, priority, slot = struct.unpack_from(">IBB", payload, 4)
            unidirectional = bool(flags & FLAG_UNIDIRECTIONAL)
            return SynStream(stream_id, headers, associated & MAX_STREAM_ID, priority >> 5, slot, fin, unidirectional)
        if frame_type == SYN_REPLY:
            return SynReply(stream_id, headers, fin)
        return HeadersFrame(stream_id, headers, fin)
    if frame_type == RST_STREAM:
        stream_id, status = fixed(8)
        return RstStream(stream_of(stream_id), status)
    if frame_type == SETTINGS:
        if len(payload) < 4:
            raise ProtocolError("SETTINGS too short")
        (count,) = struct.unpack_from(">I", payload)
        if len(payload) != 4 + 8 * count:
            raise ProtocolError("SETTINGS of the wrong length")
        entries = tuple((word >> 24, word & 0xFFFFFF, value) for word, value in struct.iter_unpack(">II", payload[4:]))
        return Settings(entries, bool(flags & FLAG_CLEAR_SETTINGS))
    if frame_type == PING:
        return Ping(fixed(4)[0])
    if frame_type == GOAWAY:
        last_good, status = fixed(8)
        return GoAway(last_good & MAX_STREAM_ID, status)
    if frame_type == WINDOW_UPDATE:
        stream_id, delta = fixed(8)
        return WindowUpdate(stream_id & MAX_STREAM_ID, delta & MAX_STREAM_ID)
    return UnknownControl(frame_type)


# ---- transports ----------------------------------------------------------------------------------------------------


class Transport(Protocol):
    """A byte stream under a session."""

    async def readexactly(self, n: int) -> bytes: ...  # raises IncompleteReadError at the end

    async def write(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


class StreamTransport:
    """An asyncio stream pair (a TCP connection, a hijacked HTTP connection)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def readexactly(self, n: int) -> bytes:
        return await self.reader.readexactly(n)

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            self.writer.close()


class MessageChannel(Protocol):
    """What a WebSocket offers (`tinykube.streams.websocket.StreamWebSocket`)."""

    async def recv(self) -> bytes | None: ...

    async def send(self, data: bytes) -> None: ...

    async def close(self, code: int = 1000) -> None: ...


class MessageTransport:
    """SPDY carried in a WebSocket's binary messages, as client-go's tunneling connection does: the messages are
    cut anywhere (spdystream writes a frame in several pieces, each a message), so they are joined into one byte
    stream; each frame this side sends goes as one message."""

    def __init__(self, channel: MessageChannel) -> None:
        self.channel = channel
        self._buffer = bytearray()
        self._eof = False

    async def readexactly(self, n: int) -> bytes:
        while len(self._buffer) < n:
            message = None if self._eof else await self.channel.recv()
            if message is None:
                self._eof = True
                partial = bytes(self._buffer)
                self._buffer.clear()
                raise asyncio.IncompleteReadError(partial, n)
            self._buffer += message
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        return data

    async def write(self, data: bytes) -> None:
        await self.channel.send(data)

    async def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            await self.channel.close()


# ---- the session ---------------------------------------------------------------------------------------------------


class Stream:
    """One SPDY stream of a session: the peer's headers, data in both directions, half-close, reset."""

    def __init__(self, session: Session, stream_id: int, headers: Headers) -> None:
        self.session = session
        self.id = stream_id
        self.headers = headers
        self.replied = asyncio.Event()  # the SYN_REPLY has gone (ours) or come (theirs)
        self.reset_status: int | None = None  # set once the stream is reset, by either side
        self.remote_closed = False  # FIN (or reset) from the peer
        self.local_closed = False  # FIN (or reset) from this side
        self.ended = asyncio.Event()  # reset by either side, or its session is over: no more data either way
        self._inbound: deque[bytes] = deque()
        self._readable = asyncio.Event()

    def header(self, name: str, default: str = "") -> str:
        """The first value of a header, as Go's `Header.Get`."""
        values = self.headers.get(name.lower())
        return values[0] if values else default

    async def read(self) -> bytes:
        """The next piece of data; b"" once the peer has half-closed or the stream was reset."""
        while not self._inbound:
            if self.remote_closed:
                return b""
            self._readable.clear()
            await self._readable.wait()
        data = self._inbound.popleft()
        self.session._consumed(len(data))
        return data

    async def write(self, data: bytes) -> None:
        if self.local_closed:
            raise StreamReset(f"stream {self.id} is closed")
        chunk = self.session.limits.write_chunk
        for start in range(0, len(data), chunk):
            await self.session._send(DataFrame(self.id, data[start : start + chunk]))

    async def close(self) -> None:
        """Half-close: FIN (an empty data frame with the flag) unless this side is done already."""
        if self.local_closed:
            return
        self.local_closed = True
        with contextlib.suppress(ConnectionError):
            await self.session._send(DataFrame(self.id, b"", fin=True))
        self.session._maybe_forget(self)

    async def reset(self, status: int = CANCEL) -> None:
        if self.reset_status is not None:
            return
        self._mark_reset(status)
        with contextlib.suppress(ConnectionError):
            await self.session._send(RstStream(self.id, status))

    def _deliver(self, data: bytes) -> None:
        if data:
            self._inbound.append(data)
            self.session._buffered += len(data)
        self._readable.set()

    def _remote_fin(self) -> None:
        self.remote_closed = True
        self._readable.set()
        self.session._maybe_forget(self)

    def _mark_reset(self, status: int) -> None:
        self.reset_status = status
        self.remote_closed = self.local_closed = True
        self.session._consumed(sum(len(d) for d in self._inbound))
        self._inbound.clear()
        self._readable.set()
        self.replied.set()
        self.ended.set()
        self.session._maybe_forget(self)


# Decides on a stream the peer opened: True accepts it (an empty SYN_REPLY goes back at once), False resets it.
StreamHandler = Callable[[Stream], Awaitable[bool]]


class Session:
    """A SPDY/3.1 session over a transport. `run()` reads frames until the connection ends; the server role hands
    each stream the client opens to `on_stream`; the client role opens streams with `open_stream`."""

    def __init__(
        self,
        transport: Transport,
        *,
        server: bool,
        on_stream: StreamHandler | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.transport = transport
        self.server = server
        self.on_stream = on_stream
        self.limits = limits
        self.streams: dict[int, Stream] = {}
        self.closed = asyncio.Event()  # set once the session is over (transport gone, GOAWAY both ways, error)
        self.goaway_received = False
        self.goaway_sent = False
        self.error: str | None = None
        self._compressor = HeaderCompressor()
        self._decompressor = HeaderDecompressor(limits.max_header_block)
        self._write_lock = asyncio.Lock()
        self._next_stream_id = 2 if server else 1
        self._last_peer_stream_id = 0
        self._next_ping_id = 2 if server else 1
        self._pings: dict[int, asyncio.Future[None]] = {}
        self._buffered = 0
        self._room = asyncio.Event()
        self._room.set()
        self._reader: asyncio.Task[None] | None = None  # the task in run()
        self._closing = False

    # -- reading

    async def run(self) -> None:
        """Serve the session until the transport ends, the peer misbehaves or `close()` is called. Never raises for
        anything the peer does."""
        self._reader = asyncio.current_task()
        try:
            while not self.closed.is_set():
                if self._buffered > self.limits.max_buffered:  # slow readers: stop reading the peer for a while
                    self._room.clear()
                    await self._room.wait()
                try:
                    async with asyncio.timeout(self.limits.idle_timeout):
                        frame = await read_frame(self.transport, self._decompressor, self.limits)
                except StreamError as err:
                    await self._reset_quietly(err.stream_id, err.status)
                    continue
                if frame is None:
                    break
                await self._dispatch(frame)
        except ProtocolError as err:
            self.error = str(err)
            log.debug("SPDY session ends: %s", err)
            await self._goaway(err.status)
        except TimeoutError:
            self.error = "idle timeout"
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as err:
            self.error = f"connection lost: {err}"
        except asyncio.CancelledError:
            if not self._closing:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()  # close() stopped the reading: a normal end
        finally:
            self._end()

    async def _dispatch(self, frame: Frame) -> None:
        match frame:
            case DataFrame(stream_id, data, fin):
                stream = self.streams.get(stream_id)
                if stream is None or stream.remote_closed:
                    return  # late data for a stream that is gone (as spdystream, dropped)
                stream._deliver(data)
                if fin:
                    stream._remote_fin()
            case SynStream():
                await self._on_syn_stream(frame)
            case SynReply(stream_id, _headers, fin):
                stream = self.streams.get(stream_id)
                if stream is not None and not stream.replied.is_set():
                    stream.replied.set()
                    if fin:
                        stream._remote_fin()
            case HeadersFrame(stream_id, _headers, fin):
                stream = self.streams.get(stream_id)
                if stream is not None and fin:
                    stream._remote_fin()
            case RstStream(stream_id, status):
                stream = self.streams.get(stream_id)
                if stream is not None:
                    stream._mark_reset(status)
            case Ping(ping_id):
                if ping_id % 2 == self._next_ping_id % 2:  # the answer to one of ours
                    waiter = self._pings.pop(ping_id, None)
                    if waiter is not None and not waiter.done():
                        waiter.set_result(None)
                else:
                    await self._send(frame)
            case GoAway():
                self.goaway_received = True
                if not self.streams:
                    self.closed.set()
            case Settings() | WindowUpdate() | UnknownControl():
                pass

    async def _on_syn_stream(self, frame: SynStream) -> None:
        stream_id = frame.stream_id
        if stream_id % 2 == self._next_stream_id % 2 or stream_id <= self._last_peer_stream_id:
            raise ProtocolError(f"stream id {stream_id} out of order")
        self._last_peer_stream_id = stream_id
        if self.goaway_sent or self.goaway_received or self.on_stream is None:
            await self._reset_quietly(stream_id, REFUSED_STREAM)
            return
        if len(self.streams) >= self.limits.max_streams:
            await self._reset_quietly(stream_id, REFUSED_STREAM)
            return
        stream = Stream(self, stream_id, frame.headers)
        self.streams[stream_id] = stream
        if frame.fin or frame.unidirectional:
            stream.remote_closed = True
        if frame.unidirectional:
            stream.local_closed = True
        if not await self.on_stream(stream):
            await stream.reset(CANCEL)
            return
        await self._send(SynReply(stream_id, {}))
        stream.replied.set()

    async def _reset_quietly(self, stream_id: int, status: int) -> None:
        stream = self.streams.get(stream_id)
        if stream is not None:
            await stream.reset(status)
            return
        with contextlib.suppress(ConnectionError):
            await self._send(RstStream(stream_id, status))

    # -- writing

    async def _send(self, frame: Frame) -> None:
        if self.closed.is_set() and not isinstance(frame, GoAway):
            raise StreamReset("the SPDY session is closed")
        async with self._write_lock:  # header blocks are compressed in the order they go out
            try:
                await self.transport.write(encode_frame(frame, self._compressor))
            except (ConnectionError, OSError) as err:
                self._end()
                raise StreamReset(f"the SPDY session is closed: {err}") from None

    async def open_stream(self, headers: Headers, fin: bool = False, timeout: float = 30.0) -> Stream:
        """(Client role.) A new stream; returns once the peer has replied. Raises StreamReset if it refused."""
        if self.goaway_received or self.goaway_sent:
            raise StreamReset("the SPDY session is going away")
        async with self._write_lock:
            stream_id = self._next_stream_id
            if stream_id > MAX_STREAM_ID:
                raise StreamReset("no stream ids left")
            self._next_stream_id += 2
            stream = Stream(self, stream_id, headers)
            stream.local_closed = fin
            self.streams[stream_id] = stream
            frame = SynStream(stream_id, headers, fin=fin)
            try:
                await self.transport.write(encode_frame(frame, self._compressor))
            except (ConnectionError, OSError) as err:
                self._end()
                raise StreamReset(str(err)) from None
        async with asyncio.timeout(timeout):
            await stream.replied.wait()
        if stream.reset_status is not None:
            raise StreamReset(f"stream {stream_id} refused (status {stream.reset_status})")
        return stream

    async def ping(self, timeout: float = 10.0) -> None:
        ping_id = self._next_ping_id
        self._next_ping_id = (self._next_ping_id + 2) & 0x7FFFFFFF or (2 if self.server else 1)
        waiter = asyncio.get_running_loop().create_future()
        self._pings[ping_id] = waiter
        try:
            await self._send(Ping(ping_id))
            async with asyncio.timeout(timeout):
                await waiter
        finally:
            self._pings.pop(ping_id, None)

    async def _goaway(self, status: int = GOAWAY_OK) -> None:
        if self.goaway_sent:
            return
        self.goaway_sent = True
        with contextlib.suppress(ConnectionError, OSError):
            await asyncio.wait_for(self._send(GoAway(self._last_peer_stream_id, status)), 5)

    async def close(self, linger: float = 0.0) -> None:
        """End the session: reset what is still open, GOAWAY, then (after up to `linger` seconds for the peer to
        close its end, so that what was sent is read before the connection goes) close the transport."""
        for stream in list(self.streams.values()):
            if not stream.local_closed:
                await stream.reset(CANCEL)
        await self._goaway()
        if linger > 0 and not self.closed.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(linger):
                    await self.closed.wait()
        self._closing = True
        self._end()
        await self.transport.close()
        if self._reader is not None and self._reader is not asyncio.current_task() and not self._reader.done():
            self._reader.cancel()

    # -- bookkeeping

    def _consumed(self, size: int) -> None:
        self._buffered -= size
        if self._buffered <= self.limits.max_buffered:
            self._room.set()

    def _maybe_forget(self, stream: Stream) -> None:
        if stream.local_closed and stream.remote_closed:
            self.streams.pop(stream.id, None)
            if self.goaway_received and not self.streams:
                self.closed.set()

    def _end(self) -> None:
        if self.closed.is_set() and not self.streams:
            return
        self.closed.set()
        self._room.set()
        for stream in list(self.streams.values()):
            if stream.reset_status is None and not stream.replied.is_set():
                stream.reset_status = CANCEL  # never answered: open_stream fails
            stream.remote_closed = stream.local_closed = True
            stream._readable.set()
            stream.replied.set()
            stream.ended.set()
        self.streams.clear()
        for waiter in self._pings.values():
            if not waiter.done():
                waiter.set_exception(StreamReset("the SPDY session is closed"))
        self._pings.clear()
